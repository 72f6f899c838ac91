//! The result shapes the JS API resolves to (docs/sdk.md, "Results and errors"). Failures are values, not rejections.
//! Each renders itself as JSON with `to_value`, so the facade converts one type only.

use serde_json::{Map, Value};

use super::codes;
use super::json;
use super::ports::{HttpResponse, TransportError};

/// `{success: true, user}` or `{success: false, error, code, status}` (status 0 = no HTTP answer).
#[derive(Debug, Clone, PartialEq)]
pub enum LoginResult {
    /// Logged in.
    Success {
        /// The new token's claims.
        user: Value,
    },
    /// Not logged in; nothing stored changed.
    Failure {
        /// What went wrong, for people.
        error: String,
        /// What went wrong, for programs: the server's code, else one of [`codes`].
        code: String,
        /// The HTTP status, 0 when no answer came.
        status: u16,
    },
}

/// `{success: true, data, status}` or `{success: false, error, code, status}` of register,
/// create, status and management calls.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// Whether the call succeeded (2xx).
    pub success: bool,
    /// The answer's body, when there was one.
    pub data: Option<Value>,
    /// What went wrong, for people.
    pub error: Option<String>,
    /// What went wrong, for programs: the server's code as sent, else one of [`codes`] (one this
    /// SDK does not know is `unknown_code` in JS, see [`CallResult::to_value`]).
    pub code: Option<String>,
    /// The HTTP status (0 when no answer came).
    pub status: u16,
}

/// `{success: true, deviceId}` or a failure.
#[derive(Debug, Clone, PartialEq)]
pub enum DeviceResult {
    /// Registered.
    Success {
        /// The id the server assigned (stored), or the one the device had when the answer named
        /// none (`None`: it has none yet).
        device_id: Option<String>,
    },
    /// Not registered.
    Failure(CallResult),
}

/// A failed answer's `(code, words)`: the server's error body when it sent one,
/// else `http_error` and the status. The code is kept as sent: `to_value` types one this SDK
/// does not know.
pub fn failure_of(response: &HttpResponse) -> (String, String) {
    let body = json::parse(&response.body);
    let field = |k| body.as_ref().and_then(|b| json::str_field(b, k)).filter(|m| !m.is_empty()).map(str::to_owned);
    let code = field("error");
    let message = field("message").or_else(|| code.clone());
    match (code, message) {
        (Some(code), Some(message)) => (code, message),
        (code, _) => (
            code.unwrap_or_else(|| codes::HTTP_ERROR.to_owned()),
            ["The server answered HTTP ", &super::codec::decimal(response.status), " without saying why."].concat(),
        ),
    }
}

/// A failed answer's words (for logs).
pub fn failure_message(response: &HttpResponse) -> String {
    failure_of(response).1
}

/// `(code, words)` of a request that got no answer.
pub fn transport_failure(e: &TransportError) -> (&'static str, String) {
    match e {
        TransportError::Network(m) => (
            codes::NETWORK,
            ["The server could not be reached (", m, "). Check the connection and the server's address."].concat(),
        ),
        TransportError::Timeout => (codes::TIMEOUT, "The server did not answer in time.".to_owned()),
    }
}

impl CallResult {
    /// A failure with this code and these words.
    pub fn failure(code: &str, error: impl Into<String>, status: u16) -> Self {
        CallResult { success: false, data: None, error: Some(error.into()), code: Some(code.to_owned()), status }
    }

    /// A failure with no HTTP answer (status 0).
    pub fn from_transport_error(e: &TransportError) -> Self {
        let (code, error) = transport_failure(e);
        CallResult::failure(code, error, 0)
    }

    /// 2xx → `{success: true, data, status}`; anything else → the server's code and words.
    pub fn from_response(response: &HttpResponse) -> Self {
        if (200..300).contains(&response.status) {
            let data = if response.body.trim().is_empty() {
                None
            } else {
                Some(json::parse(&response.body).unwrap_or_else(|| Value::String(response.body.clone())))
            };
            CallResult { success: true, data, error: None, code: None, status: response.status }
        } else {
            let (code, error) = failure_of(response);
            CallResult::failure(&code, error, response.status)
        }
    }

    /// The JS shape.
    pub fn to_value(&self) -> Value {
        let mut out = Map::new();
        out.insert("success".into(), Value::Bool(self.success));
        if let Some(data) = &self.data {
            out.insert("data".into(), data.clone());
        }
        if let Some(error) = &self.error {
            out.insert("error".into(), Value::String(error.clone()));
        }
        if let Some(code) = &self.code {
            // A code this SDK does not know (a newer server's) is `unknown_code` in JS, so the
            // `ErrorCode` union stays closed; the code as sent is `serverCode`.
            if super::hashes::is_known_code(code) {
                out.insert("code".into(), code.as_str().into());
            } else {
                out.insert("code".into(), codes::UNKNOWN_CODE.into());
                out.insert("serverCode".into(), code.as_str().into());
            }
        }
        out.insert("status".into(), self.status.into());
        Value::Object(out)
    }
}

impl LoginResult {
    /// A failure with this code and these words.
    pub fn failure(code: &str, error: impl Into<String>, status: u16) -> Self {
        LoginResult::Failure { error: error.into(), code: code.to_owned(), status }
    }

    /// Whether the login succeeded.
    pub fn is_success(&self) -> bool {
        matches!(self, LoginResult::Success { .. })
    }

    /// The JS shape.
    pub fn to_value(&self) -> Value {
        match self {
            LoginResult::Success { user } => json::object([("success", true.into()), ("user", user.clone())]),
            // A call's failure has the same shape.
            LoginResult::Failure { error, code, status } => {
                CallResult::failure(code, error.as_str(), *status).to_value()
            }
        }
    }
}

impl DeviceResult {
    /// The JS shape.
    pub fn to_value(&self) -> Value {
        match self {
            DeviceResult::Success { device_id } => {
                json::object([("success", true.into()), ("deviceId", device_id.clone().into())])
            }
            DeviceResult::Failure(f) => f.to_value(),
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_are_documented_with_a_code_on_every_failure() {
        let ok = LoginResult::Success { user: json!({"userId": "u"}) };
        assert_eq!(ok.to_value(), json!({"success": true, "user": {"userId": "u"}}));
        assert_eq!(
            LoginResult::failure("invalid_credentials", "nope", 401).to_value(),
            json!({"success": false, "error": "nope", "code": "invalid_credentials", "status": 401})
        );
        assert_eq!(
            DeviceResult::Success { device_id: Some("d1".into()) }.to_value(),
            json!({"success": true, "deviceId": "d1"})
        );
        assert_eq!(DeviceResult::Success { device_id: None }.to_value(), json!({"success": true, "deviceId": null}));
        assert_eq!(
            CallResult::failure(codes::NOT_SIGNED_IN, "x", 0).to_value(),
            json!({"success": false, "error": "x", "code": "not_signed_in", "status": 0})
        );
    }

    #[test]
    fn a_code_this_sdk_does_not_know_is_unknown_code_with_the_code_as_sent() {
        let r = HttpResponse {
            status: 409,
            body: r#"{"error":"quota_exceeded","message":"Too many tills"}"#.into(),
            retry_after: 0,
        };
        let call = CallResult::from_response(&r);
        assert_eq!(call.code.as_deref(), Some("quota_exceeded"), "kept as sent");
        assert_eq!(
            call.to_value(),
            json!({"success": false, "error": "Too many tills", "code": "unknown_code", "status": 409,
                   "serverCode": "quota_exceeded"})
        );
        let (code, error) = failure_of(&r);
        assert_eq!(LoginResult::failure(&code, error, 409).to_value(), call.to_value(), "a login's has the same shape");
        let known = CallResult::from_response(&HttpResponse {
            status: 401,
            body: r#"{"error":"invalid_credentials","message":"no"}"#.into(),
            retry_after: 0,
        });
        assert_eq!(
            known.to_value(),
            json!({"success": false, "error": "no", "code": "invalid_credentials", "status": 401})
        );
    }

    #[test]
    fn the_servers_code_and_words_come_through_and_anything_else_gets_ours() {
        let r = HttpResponse {
            status: 401,
            body: r#"{"error":"invalid_credentials","message":"Wrong password"}"#.into(),
            retry_after: 0,
        };
        assert_eq!(failure_of(&r), ("invalid_credentials".into(), "Wrong password".into()));
        let r = HttpResponse {
            status: 401,
            body: r#"{"error":"invalid_credentials","message":""}"#.into(),
            retry_after: 0,
        };
        assert_eq!(failure_of(&r), ("invalid_credentials".into(), "invalid_credentials".into()));
        let r = HttpResponse { status: 502, body: "<html>".into(), retry_after: 0 };
        assert_eq!(failure_of(&r), ("http_error".into(), "The server answered HTTP 502 without saying why.".into()));
        let r = HttpResponse { status: 500, body: r#"{"error":"<script>","message":"x"}"#.into(), retry_after: 0 };
        let junk = CallResult::from_response(&r).to_value();
        assert_eq!((&junk["code"], &junk["serverCode"]), (&json!("unknown_code"), &json!("<script>")), "kept as sent");
        let c = CallResult::from_response(&HttpResponse { status: 502, body: "<html>".into(), retry_after: 0 });
        assert_eq!((c.status, c.success, c.code.as_deref()), (502, false, Some("http_error")));
        let ok =
            CallResult::from_response(&HttpResponse { status: 201, body: r#"{"user":{}}"#.into(), retry_after: 0 });
        assert_eq!(ok.to_value(), json!({"success": true, "data": {"user": {}}, "status": 201}));
        let offline = CallResult::from_transport_error(&TransportError::Network("TypeError: Failed to fetch".into()));
        assert_eq!(offline.code.as_deref(), Some("network"));
        assert!(offline.error.unwrap().starts_with("The server could not be reached"));
    }
}

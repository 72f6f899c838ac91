//! The result shapes the JS API resolves to (CONTRACT §3). Failures are values, not rejections.
//! Each renders itself as JSON with `to_value`, so the facade converts one type only.

use serde_json::{json, Map, Value};

use super::json;
use super::ports::{HttpResponse, TransportError};

/// `{success: true, user}` or `{success: false, error, status}` (status 0 = no HTTP answer).
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
        /// The HTTP status, 0 when no answer came.
        status: u16,
    },
}

/// `{success, data?, error?, status?}` of register, create, status and management calls.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// Whether the call succeeded (2xx).
    pub success: bool,
    /// The answer's body, when there was one.
    pub data: Option<Value>,
    /// What went wrong, for people.
    pub error: Option<String>,
    /// The HTTP status (0 when no answer came).
    pub status: Option<u16>,
}

/// `{success: true, deviceId}` or a failure.
#[derive(Debug, Clone, PartialEq)]
pub enum DeviceResult {
    /// Registered.
    Success {
        /// The id the server assigned (stored).
        device_id: String,
    },
    /// Not registered.
    Failure(CallResult),
}

/// A failed call's words: the server's `message` when it sent the contract's error body.
pub fn failure_message(response: &HttpResponse) -> String {
    let body = json::parse(&response.body);
    let field = |k| body.as_ref().and_then(|b| json::str_field(b, k)).filter(|m| !m.is_empty()).map(str::to_owned);
    field("message").or_else(|| field("error")).unwrap_or_else(|| ["the server answered HTTP ", &response.status.to_string()].concat())
}

impl CallResult {
    /// A failure with these words.
    pub fn failure(error: impl Into<String>, status: Option<u16>) -> Self {
        CallResult { success: false, data: None, error: Some(error.into()), status }
    }

    /// A failure with no HTTP answer (status 0).
    pub fn from_transport_error(e: &TransportError) -> Self {
        CallResult::failure(e.to_string(), Some(0))
    }

    /// 2xx → `{success: true, data, status}`; anything else → the server's message.
    pub fn from_response(response: &HttpResponse) -> Self {
        if (200..300).contains(&response.status) {
            let data = if response.body.trim().is_empty() { None } else { Some(json::parse(&response.body).unwrap_or_else(|| Value::String(response.body.clone()))) };
            CallResult { success: true, data, error: None, status: Some(response.status) }
        } else {
            CallResult::failure(failure_message(response), Some(response.status))
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
        if let Some(status) = self.status {
            out.insert("status".into(), status.into());
        }
        Value::Object(out)
    }
}

impl LoginResult {
    /// A failure with these words.
    pub fn failure(error: impl Into<String>, status: u16) -> Self {
        LoginResult::Failure { error: error.into(), status }
    }

    /// Whether the login succeeded.
    pub fn is_success(&self) -> bool {
        matches!(self, LoginResult::Success { .. })
    }

    /// The JS shape.
    pub fn to_value(&self) -> Value {
        match self {
            LoginResult::Success { user } => json!({ "success": true, "user": user }),
            LoginResult::Failure { error, status } => json!({ "success": false, "error": error, "status": status }),
        }
    }
}

impl DeviceResult {
    /// The JS shape.
    pub fn to_value(&self) -> Value {
        match self {
            DeviceResult::Success { device_id } => json!({ "success": true, "deviceId": device_id }),
            DeviceResult::Failure(f) => f.to_value(),
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_the_contract() {
        let ok = LoginResult::Success { user: json!({"userId": "u"}) };
        assert_eq!(ok.to_value(), json!({"success": true, "user": {"userId": "u"}}));
        assert_eq!(LoginResult::failure("nope", 401).to_value(), json!({"success": false, "error": "nope", "status": 401}));
        assert_eq!(DeviceResult::Success { device_id: "d1".into() }.to_value(), json!({"success": true, "deviceId": "d1"}));
        assert_eq!(CallResult::failure("x", None).to_value(), json!({"success": false, "error": "x"}));
    }

    #[test]
    fn failure_message_prefers_the_error_body() {
        let r = HttpResponse { status: 401, body: r#"{"error":"invalid_credentials","message":"Wrong password"}"#.into() };
        assert_eq!(failure_message(&r), "Wrong password");
        let r = HttpResponse { status: 401, body: r#"{"error":"invalid_credentials","message":""}"#.into() };
        assert_eq!(failure_message(&r), "invalid_credentials");
        let r = HttpResponse { status: 502, body: "<html>".into() };
        assert_eq!(failure_message(&r), "the server answered HTTP 502");
        let c = CallResult::from_response(&r);
        assert_eq!((c.status, c.success), (Some(502), false));
        let ok = CallResult::from_response(&HttpResponse { status: 201, body: r#"{"user":{}}"#.into() });
        assert_eq!(ok.to_value(), json!({"success": true, "data": {"user": {}}, "status": 201}));
    }
}

//! The result shapes the JS API resolves to (CONTRACT §3). Failures are values, not rejections.

use serde::Serialize;
use serde_json::Value;

use super::ports::{HttpResponse, TransportError};
use crate::protocol::ErrorBody;

/// `{success: true, user}` or `{success: false, error, status}` (status 0 = no HTTP answer).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum LoginResult {
    Success { success: True, user: Value },
    Failure { success: False, error: String, status: u16 },
}

/// `{success, data?, error?, status?}` of register, create, status and management calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallResult {
    pub success: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

/// `{success: true, deviceId}` or a failure.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum DeviceResult {
    Success {
        success: True,
        #[serde(rename = "deviceId")]
        device_id: String,
    },
    Failure(CallResult),
}

/// Serialises as `true`, so a success can never be built with `success: false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct True;
impl Serialize for True {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(true)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct False;
impl Serialize for False {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(false)
    }
}

/// A failed call's words: the server's `message` when it sent the contract's error body.
pub fn failure_message(response: &HttpResponse) -> String {
    match serde_json::from_str::<ErrorBody>(&response.body) {
        Ok(body) if !body.message.is_empty() => body.message,
        Ok(body) => body.error,
        Err(_) => format!("the server answered HTTP {}", response.status),
    }
}

impl CallResult {
    pub fn failure(error: impl Into<String>, status: Option<u16>) -> Self {
        CallResult { success: false, data: None, error: Some(error.into()), status }
    }

    pub fn from_transport_error(e: &TransportError) -> Self {
        CallResult::failure(e.to_string(), Some(0))
    }

    /// 2xx → `{success: true, data, status}`; anything else → the server's message.
    pub fn from_response(response: &HttpResponse) -> Self {
        if (200..300).contains(&response.status) {
            let data = if response.body.trim().is_empty() {
                None
            } else {
                Some(serde_json::from_str(&response.body).unwrap_or(Value::String(response.body.clone())))
            };
            CallResult { success: true, data, error: None, status: Some(response.status) }
        } else {
            CallResult::failure(failure_message(response), Some(response.status))
        }
    }
}

impl LoginResult {
    pub fn failure(error: impl Into<String>, status: u16) -> Self {
        LoginResult::Failure { success: False, error: error.into(), status }
    }

    pub fn is_success(&self) -> bool {
        matches!(self, LoginResult::Success { .. })
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_match_the_contract() {
        let ok = LoginResult::Success { success: True, user: json!({"userId": "u"}) };
        assert_eq!(serde_json::to_value(ok).unwrap(), json!({"success": true, "user": {"userId": "u"}}));
        let bad = LoginResult::failure("nope", 401);
        assert_eq!(serde_json::to_value(bad).unwrap(), json!({"success": false, "error": "nope", "status": 401}));
        let dev = DeviceResult::Success { success: True, device_id: "d1".into() };
        assert_eq!(serde_json::to_value(dev).unwrap(), json!({"success": true, "deviceId": "d1"}));
    }

    #[test]
    fn failure_message_prefers_the_error_body() {
        let r = HttpResponse { status: 401, body: r#"{"error":"invalid_credentials","message":"Wrong password"}"#.into() };
        assert_eq!(failure_message(&r), "Wrong password");
        let r = HttpResponse { status: 502, body: "<html>".into() };
        assert_eq!(failure_message(&r), "the server answered HTTP 502");
        let c = CallResult::from_response(&r);
        assert_eq!(c.status, Some(502));
        assert!(!c.success);
    }
}

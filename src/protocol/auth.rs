//! The session and device bodies (CONTRACT §4) and the JWT claims.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Header name → string value, as stored under `X-Docdb-Headers-*`. A JSON map (rather than a
/// map of strings) so the SDK's wasm module carries one map type only.
pub type HeaderSet = Map<String, Value>;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LoginRequest {
    pub username: String,
    pub password: String,
    #[serde(default)]
    pub device_info: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GoogleLoginRequest {
    pub credential: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RefreshRequest {
    pub refresh_token: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct DocdbHeaders {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<HeaderSet>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<HeaderSet>,
}

/// Body of a successful `/auth`, `/auth/google` and `/auth/refresh` (durations in seconds).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthResponse {
    pub token: String,
    pub expires_in: u64,
    pub refresh_token: String,
    pub refresh_expires_in: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docdb_headers: Option<DocdbHeaders>,
}

impl AuthResponse {
    /// Reads the answer from parsed JSON (the SDK's path: one JSON parser instance for every
    /// shape keeps the wasm module small). `None` when a required field is missing or mistyped.
    pub fn from_json(value: &Value) -> Option<AuthResponse> {
        use crate::core::json::{str_field, string_map, u64_field};
        let headers = match value.get("docdbHeaders") {
            None | Some(Value::Null) => None,
            Some(h) => {
                let set = |k: &str| -> Option<Option<HeaderSet>> {
                    match h.get(k) {
                        None | Some(Value::Null) => Some(None),
                        Some(v) => string_map(v).map(Some),
                    }
                };
                Some(DocdbHeaders { remote: set("Remote")?, local: set("Local")? })
            }
        };
        Some(AuthResponse {
            token: str_field(value, "token")?.to_owned(),
            expires_in: u64_field(value, "expiresIn")?,
            refresh_token: str_field(value, "refreshToken")?.to_owned(),
            refresh_expires_in: u64_field(value, "refreshExpiresIn")?,
            docdb_headers: headers,
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConnectResponse {
    pub device_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatusRequest {
    pub is_online: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LogoutRequest {
    pub device_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OkBody {
    pub ok: bool,
}

/// The one error body every server route answers with.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorBody {
    pub error: String,
    pub message: String,
}

/// JWT claims the server issues (HS256). Unknown claims are ignored by the server and kept by the SDK.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JwtClaims {
    pub sub: String,
    pub user_id: String,
    pub company_id: String,
    pub roles: Vec<String>,
    pub iat: i64,
    pub exp: i64,
    /// Session (refresh family) id, so a logout can revoke exactly its own refresh tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sid: Option<String>,
    /// Unique per token: two tokens issued in the same second still differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn from_json_agrees_with_the_serde_shape() {
        let wire = AuthResponse {
            token: "t".into(),
            expires_in: 900,
            refresh_token: "r".into(),
            refresh_expires_in: 60,
            docdb_headers: Some(DocdbHeaders { remote: Some(json!({"X-A": "1"}).as_object().unwrap().clone()), local: None }),
        };
        let value = serde_json::to_value(&wire).unwrap();
        assert_eq!(AuthResponse::from_json(&value), Some(wire));
        assert_eq!(AuthResponse::from_json(&json!({"token": "t", "expiresIn": "900", "refreshToken": "r", "refreshExpiresIn": 1})), None);
        assert_eq!(AuthResponse::from_json(&json!({"token": "t", "expiresIn": 1, "refreshToken": "r", "refreshExpiresIn": 1, "docdbHeaders": {"Remote": {"a": 1}}})), None);
    }

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(value: T, wire: Value) {
        assert_eq!(serde_json::to_value(&value).unwrap(), wire, "serialises in the contract's shape");
        assert_eq!(serde_json::from_value::<T>(wire).unwrap(), value, "and reads back");
    }

    #[test]
    fn every_body_round_trips_in_the_contracts_shape() {
        let info = json!({"sdkVersion": "1.4.17"}).as_object().unwrap().clone();
        round_trip(LoginRequest { username: "u".into(), password: "p".into(), device_info: info }, json!({"username": "u", "password": "p", "deviceInfo": {"sdkVersion": "1.4.17"}}));
        round_trip(GoogleLoginRequest { credential: "c".into() }, json!({"credential": "c"}));
        round_trip(RefreshRequest { refresh_token: "r".into() }, json!({"refreshToken": "r"}));
        let headers = DocdbHeaders { remote: Some(json!({"X-A": "1"}).as_object().unwrap().clone()), local: None };
        round_trip(headers.clone(), json!({"Remote": {"X-A": "1"}}));
        round_trip(
            AuthResponse { token: "t".into(), expires_in: 900, refresh_token: "r".into(), refresh_expires_in: 60, docdb_headers: Some(headers) },
            json!({"token": "t", "expiresIn": 900, "refreshToken": "r", "refreshExpiresIn": 60, "docdbHeaders": {"Remote": {"X-A": "1"}}}),
        );
        round_trip(ConnectResponse { device_id: "d".into() }, json!({"deviceId": "d"}));
        round_trip(StatusRequest { is_online: true }, json!({"isOnline": true}));
        round_trip(LogoutRequest { device_id: None }, json!({"deviceId": null}));
        round_trip(OkBody { ok: true }, json!({"ok": true}));
        round_trip(ErrorBody { error: "invalid_token".into(), message: "m".into() }, json!({"error": "invalid_token", "message": "m"}));
        let claims = JwtClaims { sub: "u".into(), user_id: "u".into(), company_id: "acme".into(), roles: vec!["cashier".into()], iat: 1, exp: 2, sid: Some("s".into()), jti: None };
        round_trip(claims, json!({"sub": "u", "userId": "u", "companyId": "acme", "roles": ["cashier"], "iat": 1, "exp": 2, "sid": "s"}));
    }

    #[test]
    fn every_error_code_is_snake_case_and_listed_once() {
        let mut seen = std::collections::BTreeSet::new();
        for code in crate::protocol::errors::ALL {
            assert!(code.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{code}");
            assert!(seen.insert(code), "{code} listed twice");
        }
    }
}

//! The session and device bodies (docs/server.md, its route table) and the JWT claims.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::json::object;

/// Header name → string value, as stored under `X-Docdb-Headers-*`. A JSON map (rather than a
/// map of strings) so the SDK's wasm module carries one map type only.
pub type HeaderSet = Map<String, Value>;

/// Body of `POST /auth`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LoginRequest {
    /// The account's username.
    pub username: String,
    /// The account's password (checked with argon2 on the server).
    pub password: String,
    /// What the SDK reports of itself (`sdkVersion`, user agent, …); kept on the device row.
    #[serde(default)]
    pub device_info: Map<String, Value>,
    /// Proof that the request comes from the device `deviceInfo.id` names (its key's signature):
    /// only then is that device spared the account's sign-in throttle. The SDK's transport adds
    /// it to the body its builder wrote (`HttpRequest::prove`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_proof: Option<DeviceProof>,
}

/// A device's proof that it holds its key: a nonce of `POST /auth/device-nonce`, signed by the
/// device's ECDSA P-256 key (SHA-256) over [`device_proof_message`]; the signature is `r‖s`
/// (64 bytes, WebCrypto's form), in hex. A nonce proves once, and for a short while.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceProof {
    /// The server's nonce.
    pub nonce: String,
    /// The signature, hex.
    pub signature: String,
}

/// What a device proof signs: the route it is sent to (the protocol's method and path, wherever
/// the request is actually sent) and the nonce.
pub fn device_proof_message(method: &str, path: &str, nonce: &str) -> String {
    [method, " ", path, "\n", nonce].concat()
}

/// `POST /auth/device-nonce`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceNonce {
    /// Signed within [`DEVICE_NONCE_TTL_SECS`], once.
    pub nonce: String,
}

/// How long a device nonce may be signed and presented.
pub const DEVICE_NONCE_TTL_SECS: u64 = 120;

/// What `logout({scope})` ends: this session (`local`), the user's other sessions (`others`), or
/// all of them (`global`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogoutScope {
    /// This session only.
    #[default]
    Local,
    /// Every other session of the user; this one goes on.
    Others,
    /// Every session of the user, this one too.
    Global,
}

impl LogoutScope {
    /// The scope's wire name, if it is one.
    pub fn parse(name: &str) -> Option<LogoutScope> {
        [("local", LogoutScope::Local), ("others", LogoutScope::Others), ("global", LogoutScope::Global)]
            .into_iter()
            .find_map(|(n, s)| (n == name).then_some(s))
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LogoutScope::Local => "local",
            LogoutScope::Others => "others",
            LogoutScope::Global => "global",
        }
    }
}

/// The request bodies as the SDK writes them: built on its one JSON value type (the wasm module
/// carries no serde serialiser), read by the server through the structs beside them. A test
/// holds each builder and its struct to the same JSON, so neither side can rename a field alone.
impl LoginRequest {
    /// The body of `POST /auth`.
    pub fn body(username: &str, password: &str, device_info: Map<String, Value>) -> Value {
        object([
            ("username", username.into()),
            ("password", password.into()),
            ("deviceInfo", Value::Object(device_info)),
        ])
    }
}

impl GoogleLoginRequest {
    /// The body of `POST /auth/google`.
    pub fn body(credential: &str, device_info: Map<String, Value>) -> Value {
        object([("credential", credential.into()), ("deviceInfo", Value::Object(device_info))])
    }
}

impl RefreshRequest {
    /// The body of `POST /auth/refresh`.
    pub fn body(refresh_token: &str) -> Value {
        object([("refreshToken", refresh_token.into())])
    }
}

impl StatusRequest {
    /// The body of `PUT /auth/status` for the device the token's user was last seen on.
    pub fn body(is_online: bool) -> Value {
        object([("isOnline", is_online.into())])
    }
}

impl LogoutRequest {
    /// The body of `POST /auth/logout`: the first call starts the sign-out, the second
    /// (`complete`) says its handlers have run.
    pub fn body(device_id: Option<String>, complete: bool, scope: LogoutScope) -> Value {
        object([("deviceId", device_id.into()), ("complete", complete.into()), ("scope", scope.as_str().into())])
    }
}

impl ConnectResponse {
    /// The device id in an answer of `POST /auth/connect`.
    pub fn device_id_of(answer: &Value) -> Option<&str> {
        super::json::str_field(answer, "deviceId")
    }
}

/// Body of `POST /auth/google`: as `POST /auth`'s, the device and its proof beside the
/// identity provider's credential (a session on a keyed device is bound to its key whichever way
/// it signed in).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GoogleLoginRequest {
    /// The identity provider's credential.
    pub credential: String,
    /// What the SDK reports of itself, as in [`LoginRequest::device_info`].
    #[serde(default)]
    pub device_info: Map<String, Value>,
    /// Proof from the key of the device `deviceInfo.id` names, as in [`LoginRequest::device_proof`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_proof: Option<DeviceProof>,
}

/// Body of `POST /auth/refresh`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RefreshRequest {
    /// The refresh token to spend (single use).
    pub refresh_token: String,
    /// Proof from the key of the device the session runs on: required when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_proof: Option<DeviceProof>,
}

/// The docdb headers of a session (`X-Docdb-Headers-Remote` / `-Local` in storage).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct DocdbHeaders {
    /// Headers for the remote (server) databases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<HeaderSet>,
    /// Headers for the local (browser) databases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<HeaderSet>,
}

/// Body of a successful `/auth`, `/auth/google` and `/auth/refresh` (durations in seconds).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthResponse {
    /// The access token (a JWT).
    pub token: String,
    /// Seconds until the access token expires.
    pub expires_in: u64,
    /// The refresh token (opaque, single use).
    pub refresh_token: String,
    /// Seconds until the refresh token expires.
    pub refresh_expires_in: u64,
    /// The session's docdb headers, when the server issues them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docdb_headers: Option<DocdbHeaders>,
}

impl AuthResponse {
    /// Reads the answer from parsed JSON (the SDK's path: one JSON parser instance for every
    /// shape keeps the wasm module small). `None` when a required field is missing or mistyped.
    pub fn from_json(value: &Value) -> Option<AuthResponse> {
        use super::json::{str_field, string_map, u64_field};
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

/// Body of a successful `POST /auth/connect`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConnectResponse {
    /// The device id to keep and present from now on.
    pub device_id: String,
}

/// Body of `POST /auth/status`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatusRequest {
    /// Whether the device is online.
    pub is_online: bool,
    /// The device; absent, the one the token's user was last seen on in its company.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_id: Option<String>,
}

/// `POST /auth/status`'s answer: the status recorded, and on which device (`null`: none registered yet).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct StatusRecorded {
    /// Always `true` on success.
    pub ok: bool,
    /// The device the status was recorded on.
    pub device_id: Option<String>,
    /// The status recorded.
    pub is_online: bool,
}

/// `POST /auth/company`'s body and answer (a mock-only route): the company the next refresh carries.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ActiveCompany {
    /// The company.
    pub company_id: String,
}

/// Body of `POST /auth/logout`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LogoutRequest {
    /// The device to sign out with the session, when it registered one.
    pub device_id: Option<String>,
    /// The sign-out's handlers have run (its final replication is done): the session's document
    /// headers stop working now rather than at the end of the server's sign-out window.
    #[serde(default)]
    pub complete: bool,
    /// Which sessions end (`local` when absent).
    #[serde(default)]
    pub scope: LogoutScope,
    /// Proof from the key of the device the session runs on: required when it has one, so a
    /// copy of the session's tokens cannot end it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_proof: Option<DeviceProof>,
}

/// The `{ok: true}` body of routes that answer nothing else.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct OkBody {
    /// Always `true` on success.
    pub ok: bool,
}

/// The one error body every server route answers with.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorBody {
    /// The snake_case code (one of [`super::errors::ALL`]).
    pub error: String,
    /// What went wrong, in English, for people.
    pub message: String,
    /// A refused flag's failing preflight checks (`{check, ok, detail, runbookStep, code}`), absent
    /// elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<Value>,
}

/// JWT claims the server issues (HS256). Unknown claims are ignored by the server and kept by the SDK.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JwtClaims {
    /// Subject: the user id.
    pub sub: String,
    /// The user id (the claim's wire name).
    pub user_id: String,
    /// The user's company (tenant).
    pub company_id: String,
    /// The user's roles (`sys_admin`, `key_manager`, `manager`, `cashier`, …).
    pub roles: Vec<String>,
    /// Issued at (seconds since the epoch).
    pub iat: i64,
    /// Expires at (seconds since the epoch).
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
    use serde::de::DeserializeOwned;
    use serde_json::json;

    /// The builder's JSON reads back into the struct, and the struct writes that same JSON.
    fn agrees<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(body: Value, expected: T) {
        let read: T = serde_json::from_value(body.clone())
            .unwrap_or_else(|e| panic!("{body} does not read as the server's struct: {e}"));
        assert_eq!(read, expected);
        assert_eq!(serde_json::to_value(&read).unwrap(), body, "the struct writes other names than the SDK");
    }

    #[test]
    fn the_sdk_bodies_are_the_servers_structs() {
        let mut info = Map::new();
        info.insert("sdkVersion".into(), "1.4.17".into());
        agrees(
            LoginRequest::body("alice", "pw", info.clone()),
            LoginRequest {
                username: "alice".into(),
                password: "pw".into(),
                device_info: info.clone(),
                device_proof: None,
            },
        );
        agrees(
            GoogleLoginRequest::body("mock-google:bob", info.clone()),
            GoogleLoginRequest { credential: "mock-google:bob".into(), device_info: info, device_proof: None },
        );
        agrees(RefreshRequest::body("r1"), RefreshRequest { refresh_token: "r1".into(), device_proof: None });
        agrees(StatusRequest::body(true), StatusRequest { is_online: true, device_id: None });
        agrees(
            LogoutRequest::body(Some("d1".into()), false, LogoutScope::Local),
            LogoutRequest {
                device_id: Some("d1".into()),
                complete: false,
                scope: LogoutScope::Local,
                device_proof: None,
            },
        );
        agrees(
            LogoutRequest::body(None, true, LogoutScope::Global),
            LogoutRequest { device_id: None, complete: true, scope: LogoutScope::Global, device_proof: None },
        );
        agrees(
            LogoutRequest::body(None, false, LogoutScope::Others),
            LogoutRequest { device_id: None, complete: false, scope: LogoutScope::Others, device_proof: None },
        );
        for scope in [LogoutScope::Local, LogoutScope::Others, LogoutScope::Global] {
            assert_eq!(LogoutScope::parse(scope.as_str()), Some(scope));
        }
        assert_eq!(LogoutScope::parse("everywhere"), None);
        let answer = serde_json::to_value(ConnectResponse { device_id: "d9".into() }).unwrap();
        assert_eq!(ConnectResponse::device_id_of(&answer), Some("d9"));
    }

    #[test]
    fn from_json_agrees_with_the_serde_shape() {
        let wire = AuthResponse {
            token: "t".into(),
            expires_in: 900,
            refresh_token: "r".into(),
            refresh_expires_in: 60,
            docdb_headers: Some(DocdbHeaders {
                remote: Some(json!({"X-A": "1"}).as_object().unwrap().clone()),
                local: None,
            }),
        };
        let value = serde_json::to_value(&wire).unwrap();
        assert_eq!(AuthResponse::from_json(&value), Some(wire));
        assert_eq!(
            AuthResponse::from_json(
                &json!({"token": "t", "expiresIn": "900", "refreshToken": "r", "refreshExpiresIn": 1})
            ),
            None
        );
        assert_eq!(
            AuthResponse::from_json(
                &json!({"token": "t", "expiresIn": 1, "refreshToken": "r", "refreshExpiresIn": 1, "docdbHeaders": {"Remote": {"a": 1}}})
            ),
            None
        );
    }

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(value: T, wire: Value) {
        assert_eq!(serde_json::to_value(&value).unwrap(), wire, "serialises in the wire's shape");
        assert_eq!(serde_json::from_value::<T>(wire).unwrap(), value, "and reads back");
    }

    #[test]
    fn every_body_round_trips_in_its_wire_shape() {
        let info = json!({"sdkVersion": "1.4.17"}).as_object().unwrap().clone();
        round_trip(
            LoginRequest { username: "u".into(), password: "p".into(), device_info: info, device_proof: None },
            json!({"username": "u", "password": "p", "deviceInfo": {"sdkVersion": "1.4.17"}}),
        );
        round_trip(
            GoogleLoginRequest { credential: "c".into(), device_info: Map::new(), device_proof: None },
            json!({"credential": "c", "deviceInfo": {}}),
        );
        round_trip(RefreshRequest { refresh_token: "r".into(), device_proof: None }, json!({"refreshToken": "r"}));
        round_trip(
            RefreshRequest {
                refresh_token: "r".into(),
                device_proof: Some(DeviceProof { nonce: "n".into(), signature: "ab".into() }),
            },
            json!({"refreshToken": "r", "deviceProof": {"nonce": "n", "signature": "ab"}}),
        );
        let headers = DocdbHeaders { remote: Some(json!({"X-A": "1"}).as_object().unwrap().clone()), local: None };
        round_trip(headers.clone(), json!({"Remote": {"X-A": "1"}}));
        round_trip(
            AuthResponse {
                token: "t".into(),
                expires_in: 900,
                refresh_token: "r".into(),
                refresh_expires_in: 60,
                docdb_headers: Some(headers),
            },
            json!({"token": "t", "expiresIn": 900, "refreshToken": "r", "refreshExpiresIn": 60, "docdbHeaders": {"Remote": {"X-A": "1"}}}),
        );
        round_trip(ConnectResponse { device_id: "d".into() }, json!({"deviceId": "d"}));
        round_trip(StatusRequest { is_online: true, device_id: None }, json!({"isOnline": true}));
        round_trip(
            LogoutRequest { device_id: None, complete: false, scope: LogoutScope::Local, device_proof: None },
            json!({"deviceId": null, "complete": false, "scope": "local"}),
        );
        round_trip(
            LogoutRequest { device_id: None, complete: false, scope: LogoutScope::Global, device_proof: None },
            json!({"deviceId": null, "complete": false, "scope": "global"}),
        );
        round_trip(OkBody { ok: true }, json!({"ok": true}));
        round_trip(
            ErrorBody { error: "invalid_token".into(), message: "m".into(), checks: None },
            json!({"error": "invalid_token", "message": "m"}),
        );
        round_trip(
            ErrorBody {
                error: "no_headroom".into(),
                message: "m".into(),
                checks: Some(json!([{"check": "headroom", "ok": false}])),
            },
            json!({"error": "no_headroom", "message": "m", "checks": [{"check": "headroom", "ok": false}]}),
        );
        let claims = JwtClaims {
            sub: "u".into(),
            user_id: "u".into(),
            company_id: "acme".into(),
            roles: vec!["cashier".into()],
            iat: 1,
            exp: 2,
            sid: Some("s".into()),
            jti: None,
        };
        round_trip(
            claims,
            json!({"sub": "u", "userId": "u", "companyId": "acme", "roles": ["cashier"], "iat": 1, "exp": 2, "sid": "s"}),
        );
    }
}

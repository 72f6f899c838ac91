//! The realtime protocol (CONTRACT §7): `GET /realtime`, JSON text frames `{type, payload}`.

use serde::{Deserialize, Serialize};

/// The server invalidated the tenant: reconnect (with backoff) and meet the invalidation.
pub const CLOSE_INVALIDATED: u16 = 4000;
/// The first frame was not a well-formed `sdk:init`.
pub const CLOSE_BAD_REQUEST: u16 = 4400;
/// The token was refused.
pub const CLOSE_UNAUTHORIZED: u16 = 4401;

/// A close the device must not retry after: the server refused it.
pub fn is_refusal(code: u16) -> bool {
    code == CLOSE_UNAUTHORIZED || code == CLOSE_BAD_REQUEST
}

/// What a device sends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", content = "payload")]
pub enum ClientFrame {
    /// `sdk:init`: the first frame, carrying the token.
    #[serde(rename = "sdk:init")]
    SdkInit(SdkInit),
    /// `ping`: keeps the socket alive; answered with `pong`.
    #[serde(rename = "ping")]
    Ping,
}

/// Payload of `sdk:init`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SdkInit {
    /// The access token.
    pub token: String,
    /// The device id from `/auth/connect`, when registered.
    #[serde(default)]
    pub device_id: Option<String>,
    /// The SDK's version (routing needs the cutover switch).
    #[serde(default)]
    pub sdk_version: Option<String>,
    /// The last `invalidatedAt` this device obeyed.
    #[serde(default)]
    pub last_invalidation: Option<i64>,
}

/// What the server sends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", content = "payload")]
pub enum ServerFrame {
    /// `invalidate-local`: destroy the local databases.
    #[serde(rename = "invalidate-local")]
    InvalidateLocal(InvalidateLocal),
    /// `ready`: where to route, after `sdk:init`.
    #[serde(rename = "ready")]
    Ready(Ready),
    /// `error`: the server refused; a close follows.
    #[serde(rename = "error")]
    Error(FrameError),
    /// `pong`: the answer to `ping`.
    #[serde(rename = "pong")]
    Pong(Empty),
}

impl ServerFrame {
    /// Reads a frame from JSON already parsed: the tag picks the payload's type. The same
    /// mapping as the derive (the round-trip test holds them together), without serde's content
    /// buffering for adjacently tagged enums, which would add ~25 KB to the SDK's wasm module.
    pub fn from_json(frame: serde_json::Value) -> Option<ServerFrame> {
        let serde_json::Value::Object(mut frame) = frame else { return None };
        let payload = frame.remove("payload").unwrap_or(serde_json::Value::Null);
        Some(match frame.get("type")?.as_str()? {
            "invalidate-local" => ServerFrame::InvalidateLocal(serde_json::from_value(payload).ok()?),
            "ready" => ServerFrame::Ready(serde_json::from_value(payload).ok()?),
            "error" => ServerFrame::Error(serde_json::from_value(payload).ok()?),
            "pong" => ServerFrame::Pong(Empty {}),
            _ => return None,
        })
    }
}

/// Destroy the local databases, then remember `invalidatedAt` as obeyed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InvalidateLocal {
    /// The tenant invalidated.
    pub company_id: String,
    /// The invalidation's time (ms since the epoch): the device remembers it as obeyed.
    pub invalidated_at: i64,
    /// Why (one of the `REASON_*` constants of `ops`).
    pub reason: String,
}

/// Where the device routes: `core` only for a rolling tenant and an SDK with the cutover switch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Ready {
    /// The tenant.
    pub company_id: String,
    /// Which catalogue to read.
    pub database: Routing,
    /// The static (catalogue) database to bootstrap.
    pub static_db: String,
    /// The dynamic (today's) database.
    pub dynamic_db: String,
    /// The tenant's latest invalidation, if any.
    pub invalidated_at: Option<i64>,
}

/// Which catalogue a device reads: the rolling database's CORE, or the legacy one.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Routing {
    /// The rolling database's CORE.
    Core,
    /// The legacy catalogue.
    Legacy,
}

impl Routing {
    /// The wire name (`"core"` / `"legacy"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Routing::Core => "core",
            Routing::Legacy => "legacy",
        }
    }
}

/// Payload of an `error` frame.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FrameError {
    /// The snake_case code (as in the error body).
    pub code: String,
    /// What went wrong, for people.
    pub message: String,
}

/// An empty payload (`{}`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Empty {}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug + 'static>(value: T, wire: serde_json::Value) {
        assert_eq!(serde_json::to_value(&value).unwrap(), wire);
        // The SDK's reader agrees with the derive, frame by frame.
        if let Some(frame) = (&value as &dyn std::any::Any).downcast_ref::<ServerFrame>() {
            assert_eq!(ServerFrame::from_json(wire.clone()).as_ref(), Some(frame));
        }
        assert_eq!(serde_json::from_value::<T>(wire).unwrap(), value);
    }

    #[test]
    fn every_frame_round_trips_in_the_contracts_shape() {
        let init = SdkInit { token: "t".into(), device_id: Some("d".into()), sdk_version: Some("1.4.17".into()), last_invalidation: None };
        round_trip(ClientFrame::SdkInit(init), json!({"type": "sdk:init", "payload": {"token": "t", "deviceId": "d", "sdkVersion": "1.4.17", "lastInvalidation": null}}));
        round_trip(ClientFrame::Ping, json!({"type": "ping"}));
        round_trip(
            ServerFrame::InvalidateLocal(InvalidateLocal { company_id: "acme".into(), invalidated_at: 5, reason: "operator".into() }),
            json!({"type": "invalidate-local", "payload": {"companyId": "acme", "invalidatedAt": 5, "reason": "operator"}}),
        );
        let ready = Ready { company_id: "acme".into(), database: Routing::Core, static_db: "s".into(), dynamic_db: "d".into(), invalidated_at: Some(1) };
        round_trip(ServerFrame::Ready(ready), json!({"type": "ready", "payload": {"companyId": "acme", "database": "core", "staticDb": "s", "dynamicDb": "d", "invalidatedAt": 1}}));
        round_trip(ServerFrame::Error(FrameError { code: "invalid_token".into(), message: "m".into() }), json!({"type": "error", "payload": {"code": "invalid_token", "message": "m"}}));
        round_trip(ServerFrame::Pong(Empty {}), json!({"type": "pong", "payload": {}}));
        // The minimal init of the contract: only the token.
        assert!(matches!(serde_json::from_value::<ClientFrame>(json!({"type": "sdk:init", "payload": {"token": "t"}})), Ok(ClientFrame::SdkInit(_))));
        assert!(serde_json::from_value::<ClientFrame>(json!({"type": "hello"})).is_err());
        assert_eq!(ServerFrame::from_json(json!({"type": "ready", "payload": {"companyId": 1}})), None, "a malformed payload is no frame");
        assert_eq!(ServerFrame::from_json(json!({"type": "hello"})), None);
    }
}

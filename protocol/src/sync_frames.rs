//! The sync socket's wire (docs/sdk.md, "Realtime: `SyncSession`"): `GET /realtime`, JSON text frames
//! `{type, payload}`, the close codes, and the routing and bootstrap bodies the handshake hands on.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::json::{object, str_field};

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
    /// Reads a frame from JSON already parsed: the tag picks the payload's reader. The same
    /// mapping as the derive (the round-trip tests hold them together), read by hand: serde's
    /// derived readers and their error formatting would weigh more in the SDK's wasm module than
    /// the whole realtime session.
    pub fn from_json(frame: Value) -> Option<ServerFrame> {
        let payload = frame.get("payload").unwrap_or(&Value::Null);
        Some(match frame.get("type")?.as_str()? {
            "invalidate-local" => ServerFrame::InvalidateLocal(InvalidateLocal::from_json(payload)?),
            "ready" => ServerFrame::Ready(Ready::from_json(payload)?),
            "error" => ServerFrame::Error(FrameError {
                code: str_field(payload, "code")?.to_owned(),
                message: str_field(payload, "message")?.to_owned(),
            }),
            "pong" => ServerFrame::Pong(Empty {}),
            _ => return None,
        })
    }
}

impl ClientFrame {
    /// The frame as JSON, in the derive's shape (absent options as `null`).
    pub fn to_json(&self) -> Value {
        match self {
            ClientFrame::SdkInit(init) => object([
                ("type", "sdk:init".into()),
                (
                    "payload",
                    object([
                        ("token", init.token.as_str().into()),
                        ("deviceId", init.device_id.clone().into()),
                        ("sdkVersion", init.sdk_version.clone().into()),
                        ("lastInvalidation", init.last_invalidation.into()),
                    ]),
                ),
            ]),
            ClientFrame::Ping => object([("type", "ping".into())]),
        }
    }
}

/// An optional integer field: absent or `null` is `None`; anything but an integer is refused.
fn optional_i64(value: &Value, key: &str) -> Option<Option<i64>> {
    match value.get(key) {
        None | Some(Value::Null) => Some(None),
        Some(v) => v.as_i64().map(Some),
    }
}

/// Destroy the local databases, then remember `invalidatedAt` as obeyed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct InvalidateLocal {
    /// The tenant invalidated.
    pub company_id: String,
    /// The invalidation's time (ms since the epoch): the device remembers it as obeyed.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub invalidated_at: i64,
    /// Why: `rolling-db-cutover`, `operator`, `invalidate_daily` or `rewarm` (the `REASON_*` constants).
    pub reason: String,
}

/// Where the device routes: `core` only for a rolling tenant and an SDK with the cutover switch.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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
    #[cfg_attr(feature = "ts", ts(type = "number | null"))]
    pub invalidated_at: Option<i64>,
}

/// `GET /bootstrap`'s answer: the catalogue's static documents, with the sequence they were read at.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub struct Bootstrap {
    /// Which catalogue was read.
    pub database: Routing,
    /// The database it lives in.
    pub db: String,
    /// The database's update sequence when the documents were read.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub update_seq: u64,
    /// The documents, each with its `_id` and `_rev`.
    #[cfg_attr(feature = "ts", ts(type = "Array<Record<string, unknown>>"))]
    pub docs: Vec<Value>,
}

impl InvalidateLocal {
    /// Reads the payload (see [`ServerFrame::from_json`]).
    pub fn from_json(value: &Value) -> Option<Self> {
        Some(InvalidateLocal {
            company_id: str_field(value, "companyId")?.to_owned(),
            invalidated_at: value.get("invalidatedAt")?.as_i64()?,
            reason: str_field(value, "reason")?.to_owned(),
        })
    }

    /// The payload as JSON, in the derive's shape.
    pub fn to_json(&self) -> Value {
        object([
            ("companyId", self.company_id.as_str().into()),
            ("invalidatedAt", self.invalidated_at.into()),
            ("reason", self.reason.as_str().into()),
        ])
    }
}

impl Ready {
    /// Reads the payload (see [`ServerFrame::from_json`]).
    pub fn from_json(value: &Value) -> Option<Self> {
        Some(Ready {
            company_id: str_field(value, "companyId")?.to_owned(),
            database: Routing::parse(str_field(value, "database")?)?,
            static_db: str_field(value, "staticDb")?.to_owned(),
            dynamic_db: str_field(value, "dynamicDb")?.to_owned(),
            invalidated_at: optional_i64(value, "invalidatedAt")?,
        })
    }

    /// The payload as JSON, in the derive's shape.
    pub fn to_json(&self) -> Value {
        object([
            ("companyId", self.company_id.as_str().into()),
            ("database", self.database.as_str().into()),
            ("staticDb", self.static_db.as_str().into()),
            ("dynamicDb", self.dynamic_db.as_str().into()),
            ("invalidatedAt", self.invalidated_at.into()),
        ])
    }
}

/// Which catalogue a device reads: the rolling database's CORE, or the legacy one.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
pub enum Routing {
    /// The rolling database's CORE.
    Core,
    /// The legacy catalogue.
    Legacy,
}

impl Routing {
    /// From the wire name.
    pub fn parse(name: &str) -> Option<Routing> {
        match name {
            "core" => Some(Routing::Core),
            "legacy" => Some(Routing::Legacy),
            _ => None,
        }
    }

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

    fn round_trip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug + 'static>(
        value: T,
        wire: serde_json::Value,
    ) {
        assert_eq!(serde_json::to_value(&value).unwrap(), wire);
        // The SDK's reader agrees with the derive, frame by frame.
        let any = &value as &dyn std::any::Any;
        if let Some(frame) = any.downcast_ref::<ServerFrame>() {
            assert_eq!(ServerFrame::from_json(wire.clone()).as_ref(), Some(frame));
            match frame {
                ServerFrame::InvalidateLocal(p) => assert_eq!(p.to_json(), wire["payload"]),
                ServerFrame::Ready(p) => assert_eq!(p.to_json(), wire["payload"]),
                _ => {}
            }
        }
        // And the SDK's writer.
        if let Some(frame) = any.downcast_ref::<ClientFrame>() {
            assert_eq!(frame.to_json(), wire);
        }
        assert_eq!(serde_json::from_value::<T>(wire).unwrap(), value);
    }

    #[test]
    fn every_frame_round_trips_in_its_wire_shape() {
        let init = SdkInit {
            token: "t".into(),
            device_id: Some("d".into()),
            sdk_version: Some("1.4.17".into()),
            last_invalidation: None,
        };
        round_trip(
            ClientFrame::SdkInit(init),
            json!({"type": "sdk:init", "payload": {"token": "t", "deviceId": "d", "sdkVersion": "1.4.17", "lastInvalidation": null}}),
        );
        round_trip(ClientFrame::Ping, json!({"type": "ping"}));
        round_trip(
            ServerFrame::InvalidateLocal(InvalidateLocal {
                company_id: "acme".into(),
                invalidated_at: 5,
                reason: "operator".into(),
            }),
            json!({"type": "invalidate-local", "payload": {"companyId": "acme", "invalidatedAt": 5, "reason": "operator"}}),
        );
        let ready = Ready {
            company_id: "acme".into(),
            database: Routing::Core,
            static_db: "s".into(),
            dynamic_db: "d".into(),
            invalidated_at: Some(1),
        };
        round_trip(
            ServerFrame::Ready(ready),
            json!({"type": "ready", "payload": {"companyId": "acme", "database": "core", "staticDb": "s", "dynamicDb": "d", "invalidatedAt": 1}}),
        );
        round_trip(
            ServerFrame::Error(FrameError { code: "invalid_token".into(), message: "m".into() }),
            json!({"type": "error", "payload": {"code": "invalid_token", "message": "m"}}),
        );
        round_trip(ServerFrame::Pong(Empty {}), json!({"type": "pong", "payload": {}}));
        // The minimal init: only the token.
        assert!(matches!(
            serde_json::from_value::<ClientFrame>(json!({"type": "sdk:init", "payload": {"token": "t"}})),
            Ok(ClientFrame::SdkInit(_))
        ));
        assert!(serde_json::from_value::<ClientFrame>(json!({"type": "hello"})).is_err());
        assert_eq!(
            ServerFrame::from_json(json!({"type": "ready", "payload": {"companyId": 1}})),
            None,
            "a malformed payload is no frame"
        );
        assert_eq!(ServerFrame::from_json(json!({"type": "hello"})), None);
        let minimal = json!({"type": "ready", "payload": {"companyId": "a", "database": "legacy", "staticDb": "s", "dynamicDb": "d"}});
        assert!(
            matches!(ServerFrame::from_json(minimal), Some(ServerFrame::Ready(Ready { invalidated_at: None, .. }))),
            "an absent option is None"
        );
        let fractional =
            json!({"type": "invalidate-local", "payload": {"companyId": "a", "invalidatedAt": 1.5, "reason": "r"}});
        assert_eq!(ServerFrame::from_json(fractional), None, "a time is an integer");
    }
}

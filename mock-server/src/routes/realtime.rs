//! `GET /realtime`: the WebSocket of CONTRACT §7. The device says `sdk:init`; the server answers
//! `invalidate-local` when due, then `ready`; a tenant invalidation closes the socket with 4000
//! so the device reconnects and meets it. A bad token gets an `error` frame and close 4401.

use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use session_broker::protocol::{ClientHello, SdkInit};

use crate::error::AppError;
use crate::realtime::CLOSE_INVALIDATED;
use crate::rolling::handshake::{self, Hello};
use crate::rolling::RollingSettings;
use crate::state::AppState;

pub const CLOSE_BAD_REQUEST: u16 = 4400;
pub const CLOSE_UNAUTHORIZED: u16 = 4401;
/// How long a socket may stay silent before it says `sdk:init`.
const INIT_TIMEOUT: Duration = Duration::from_secs(10);

pub fn router() -> Router<AppState> {
    Router::new().route("/realtime", get(upgrade))
}

/// The protocol's frames are small (`sdk:init` carries a JWT and three short fields; the server
/// expects nothing else but pings), so a socket may not send more than this in one message or
/// frame: nothing large is buffered or parsed before the token is checked.
pub const MAX_CLIENT_MESSAGE: usize = 8 * 1024;

async fn upgrade(ws: WebSocketUpgrade, State(state): State<AppState>) -> Response {
    ws.max_message_size(MAX_CLIENT_MESSAGE).max_frame_size(MAX_CLIENT_MESSAGE).on_upgrade(move |socket| session(socket, state))
}

fn frame(kind: &str, payload: Value) -> Message {
    Message::Text(json!({ "type": kind, "payload": payload }).to_string().into())
}

async fn refuse(mut socket: WebSocket, close: u16, code: &str, message: &str) {
    let _ = socket.send(frame("error", json!({ "code": code, "message": message }))).await;
    let _ = socket.send(Message::Close(Some(CloseFrame { code: close, reason: code.to_owned().into() }))).await;
}

/// The `sdk:init` frame, typed: anything else is refused with the shape it must have.
fn read_init(text: &str) -> Result<SdkInit, String> {
    match serde_json::from_str::<ClientHello>(text) {
        Ok(ClientHello::SdkInit(init)) if !init.token.is_empty() => Ok(init),
        Ok(_) => Err("payload.token must be the session JWT".into()),
        Err(e) => Err(["the first frame must be {type: \"sdk:init\", payload: {token, deviceId?, sdkVersion?, lastInvalidation?}}: ", &e.to_string()].concat()),
    }
}

async fn session(mut socket: WebSocket, state: AppState) {
    let first = match tokio::time::timeout(INIT_TIMEOUT, socket.recv()).await {
        Ok(Some(Ok(Message::Text(text)))) => text,
        Ok(Some(Ok(_))) => return refuse(socket, CLOSE_BAD_REQUEST, "bad_request", "the first frame must be sdk:init as JSON text").await,
        _ => return,
    };
    let SdkInit { token, device_id, sdk_version, last_invalidation } = match read_init(&first) {
        Ok(init) => init,
        Err(why) => return refuse(socket, CLOSE_BAD_REQUEST, "bad_request", &why).await,
    };
    let claims = match state.tokens.verify(&token, state.clock.now_secs(), true) {
        Ok(c) => c,
        Err(e) => {
            let body = e.body();
            return refuse(socket, CLOSE_UNAUTHORIZED, &body.error, &body.message).await;
        }
    };
    // Subscribe before answering, so an invalidation during the handshake is not missed.
    let mut invalidations = state.realtime.subscribe(&claims.company_id);
    invalidations.borrow_and_update();
    let hello = Hello { user_id: claims.user_id.clone(), company_id: claims.company_id.clone(), device_id, sdk_version, last_invalidation };
    let settings = RollingSettings::from(&*state.settings);
    let now = state.clock.now_ms();
    let answer = match state.store.tx(|tx| handshake::answer(tx, &settings, &hello, now).map_err(AppError::from)) {
        Ok(a) => a,
        Err(e) => {
            let body = e.body();
            return refuse(socket, CLOSE_BAD_REQUEST, &body.error, &body.message).await;
        }
    };
    if let Some(payload) = answer.invalidate {
        if socket.send(frame("invalidate-local", payload)).await.is_err() {
            return;
        }
    }
    if socket.send(frame("ready", answer.ready)).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            changed = invalidations.changed() => {
                if changed.is_ok() {
                    let _ = socket.send(Message::Close(Some(CloseFrame { code: CLOSE_INVALIDATED, reason: "invalidated".into() }))).await;
                }
                return;
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) if serde_json::from_str::<Value>(&text).is_ok_and(|v| v["type"] == "ping") => {
                    if socket.send(frame("pong", json!({}))).await.is_err() {
                        return;
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
}

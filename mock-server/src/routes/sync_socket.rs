//! `GET /realtime`: the WebSocket (docs/sdk.md, "Realtime: `SyncSession`"). The device says `sdk:init`; the server answers
//! `invalidate-local` when due, then `ready`; a tenant invalidation closes the socket with 4000
//! so the device reconnects and meets it. A bad token gets an `error` frame and close 4401.

use protocol::routes;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::State;
use axum::response::Response;
use axum::Router;
use protocol::sync_frames::{
    ClientFrame, Empty, FrameError, SdkInit, ServerFrame, CLOSE_BAD_REQUEST, CLOSE_INVALIDATED, CLOSE_UNAUTHORIZED,
};

use protocol::errors as code;

use crate::error::AppError;
use crate::rolling::handshake::{self, Hello};
use crate::rolling::RollingSettings;
use crate::routes::table::Rows;
use crate::state::AppState;

/// How long a socket may stay silent before it says `sdk:init`.
const INIT_TIMEOUT: Duration = Duration::from_secs(10);

pub fn router() -> Router<AppState> {
    Router::new().row(routes::REALTIME, upgrade)
}

/// The protocol's frames are small (`sdk:init` carries a JWT and three short fields; the server
/// expects nothing else but pings), so a socket may not send more than this in one message or
/// frame: nothing large is buffered or parsed before the token is checked.
pub const MAX_CLIENT_MESSAGE: usize = 8 * 1024;

/// Read and write buffers per socket: tungstenite's defaults (128 KiB read, zero-filled) are
/// made for large messages; these frames are a few hundred bytes, and a fleet keeps thousands
/// of sockets open.
const SOCKET_BUFFER: usize = 4 * 1024;

async fn upgrade(ws: WebSocketUpgrade, State(state): State<AppState>) -> Response {
    ws.max_message_size(MAX_CLIENT_MESSAGE)
        .max_frame_size(MAX_CLIENT_MESSAGE)
        .read_buffer_size(SOCKET_BUFFER)
        .write_buffer_size(SOCKET_BUFFER)
        .on_upgrade(move |socket| session(socket, state))
}

fn frame(frame: ServerFrame) -> Message {
    // Serialising the protocol's own types cannot fail.
    Message::Text(serde_json::to_string(&frame).unwrap_or_default().into())
}

/// A handshake refused: the error frame, then the close.
async fn refuse(mut socket: WebSocket, close: u16, code: &str, message: &str) {
    crate::recorded::handshake(code);
    let _ = socket.send(frame(ServerFrame::Error(FrameError { code: code.into(), message: message.into() }))).await;
    let _ = socket.send(Message::Close(Some(CloseFrame { code: close, reason: code.to_owned().into() }))).await;
}

/// The `sdk:init` frame, typed: anything else is refused with the shape it must have.
fn read_init(text: &str) -> Result<SdkInit, String> {
    match serde_json::from_str::<ClientFrame>(text) {
        Ok(ClientFrame::SdkInit(init)) if !init.token.is_empty() => Ok(init),
        Ok(ClientFrame::SdkInit(_)) => Err("payload.token must be the session JWT".into()),
        Ok(ClientFrame::Ping) => Err("the first frame must be sdk:init, not ping".into()),
        Err(e) => Err(["the first frame must be {type: \"sdk:init\", payload: {token, deviceId?, sdkVersion?, lastInvalidation?}}: ", &e.to_string()].concat()),
    }
}

async fn session(mut socket: WebSocket, state: AppState) {
    let first = match tokio::time::timeout(INIT_TIMEOUT, socket.recv()).await {
        Ok(Some(Ok(Message::Text(text)))) => text,
        Ok(Some(Ok(_))) => {
            return refuse(
                socket,
                CLOSE_BAD_REQUEST,
                code::BAD_REQUEST,
                "the first frame must be sdk:init as JSON text",
            )
            .await
        }
        _ => return,
    };
    let SdkInit { token, device_id, sdk_version, last_invalidation } = match read_init(&first) {
        Ok(init) => init,
        Err(why) => return refuse(socket, CLOSE_BAD_REQUEST, code::BAD_REQUEST, &why).await,
    };
    let claims = match crate::extract::verify_access(&state, &token) {
        // A signing-out session's sockets were cut at its logout; a new one would outlive its window.
        Ok(access) if access.signing_out => {
            return refuse(
                socket,
                CLOSE_UNAUTHORIZED,
                code::SESSION_ENDED,
                "this session is signing out: it may finish its work, not open a realtime socket",
            )
            .await
        }
        Ok(access) => access.claims,
        Err(e) => {
            let body = e.body();
            return refuse(socket, CLOSE_UNAUTHORIZED, &body.error, &body.message).await;
        }
    };
    // The socket is its session's: cut when the session ends.
    let Some(mut held) = state.sessions.sockets.hold(claims.sid.as_deref().unwrap_or_default(), usize::MAX) else {
        return;
    };
    // Subscribe before answering, so an invalidation during the handshake is not missed.
    let mut subscription = state.tenant_sockets.subscribe(&claims.company_id);
    subscription.invalidations.borrow_and_update();
    let hello = Hello {
        user_id: claims.user_id.clone(),
        session_id: claims.sid.clone(),
        company_id: claims.company_id.clone(),
        device_id,
        sdk_version,
        last_invalidation,
    };
    let settings = RollingSettings::from(&*state.settings);
    let now = state.clock.now_ms();
    let answer = match state.store.shared_tx(|tx| handshake::answer(tx, &settings, &hello, now).map_err(AppError::from))
    {
        Ok(a) => a,
        Err(e) => {
            let body = e.body();
            return refuse(socket, CLOSE_BAD_REQUEST, &body.error, &body.message).await;
        }
    };
    if let Some(payload) = answer.invalidate {
        let sent = socket.send(frame(ServerFrame::InvalidateLocal(payload))).await;
        if sent.is_ok() {
            crate::recorded::invalidate_local_delivered();
        }
        if sent.is_err() {
            return;
        }
    }
    if socket.send(frame(ServerFrame::Ready(answer.ready))).await.is_err() {
        return;
    }
    crate::recorded::handshake("ok");
    loop {
        tokio::select! {
            changed = subscription.invalidations.changed() => {
                if changed.is_ok() {
                    let invalidated = *subscription.invalidations.borrow_and_update();
                    tokio::time::sleep(subscription.wave_delay(invalidated, state.settings.invalidation_waves())).await;
                    let _ = socket.send(Message::Close(Some(CloseFrame { code: CLOSE_INVALIDATED, reason: "invalidated".into() }))).await;
                }
                return;
            }
            () = held.cut() => {
                let _ = socket.send(Message::Close(Some(CloseFrame { code: CLOSE_UNAUTHORIZED, reason: "session ended".into() }))).await;
                return;
            }
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(text))) if matches!(serde_json::from_str::<ClientFrame>(&text), Ok(ClientFrame::Ping)) => {
                    if socket.send(frame(ServerFrame::Pong(Empty {}))).await.is_err() {
                        return;
                    }
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
}

//! A device's realtime socket against a test server: open, `sdk:init`, the frames up to `ready`,
//! the close code.

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

use super::Server;

pub type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub async fn open(s: &Server) -> Socket {
    let url = format!("{}/realtime", s.base.replace("http://", "ws://"));
    tokio_tungstenite::connect_async(url).await.expect("websocket opens").0
}

pub async fn hello(
    s: &Server,
    token: &str,
    device: Option<&str>,
    sdk: &str,
    last: Option<i64>,
) -> (Socket, Vec<Value>) {
    let mut ws = open(s).await;
    let init = json!({"type": "sdk:init", "payload": {"token": token, "deviceId": device, "sdkVersion": sdk, "lastInvalidation": last}});
    ws.send(Message::Text(init.to_string().into())).await.unwrap();
    let mut frames = Vec::new();
    while let Some(Ok(Message::Text(t))) = ws.next().await {
        let v: Value = serde_json::from_str(&t).unwrap();
        let done = v["type"] == "ready";
        frames.push(v);
        if done {
            break;
        }
    }
    (ws, frames)
}

pub async fn close_code(ws: &mut Socket) -> Option<CloseCode> {
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(5), ws.next()).await.expect("closed in time") {
            Some(Ok(Message::Close(frame))) => return frame.map(|f| f.code),
            Some(Ok(_)) => continue,
            _ => return None,
        }
    }
}

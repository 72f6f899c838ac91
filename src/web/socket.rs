//! WebSocket through gloo-net, split so the reader and the writer never wait on each other.

use std::rc::Rc;

use futures_util::lock::Mutex;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use gloo_net::websocket::futures::WebSocket;
use gloo_net::websocket::{Message, WebSocketError};

use crate::core::ports::LocalBoxFuture;
use crate::core::realtime::{Incoming, Socket};

/// Close code for a socket that dropped without one.
const ABNORMAL: u16 = 1006;

pub struct BrowserSocket {
    sink: Rc<Mutex<SplitSink<WebSocket, Message>>>,
    stream: Rc<Mutex<SplitStream<WebSocket>>>,
}

pub fn connect(url: &str) -> LocalBoxFuture<'static, Result<Rc<dyn Socket>, String>> {
    let opened = WebSocket::open(url).map_err(|e| e.to_string());
    Box::pin(async move {
        let (sink, stream) = opened?.split();
        Ok(Rc::new(BrowserSocket { sink: Rc::new(Mutex::new(sink)), stream: Rc::new(Mutex::new(stream)) }) as Rc<dyn Socket>)
    })
}

impl Socket for BrowserSocket {
    fn send(&self, text: String) -> LocalBoxFuture<'static, Result<(), String>> {
        let sink = self.sink.clone();
        Box::pin(async move { sink.lock().await.send(Message::Text(text)).await.map_err(|e| e.to_string()) })
    }

    fn recv(&self) -> LocalBoxFuture<'static, Incoming> {
        let stream = self.stream.clone();
        Box::pin(async move {
            let mut stream = stream.lock().await;
            loop {
                return match stream.next().await {
                    Some(Ok(Message::Text(text))) => Incoming::Text(text),
                    Some(Ok(Message::Bytes(_))) => continue,
                    Some(Err(WebSocketError::ConnectionClose(event))) => Incoming::Closed(event.code),
                    Some(Err(_)) | None => Incoming::Closed(ABNORMAL),
                };
            }
        })
    }

    fn close(&self) {
        let sink = self.sink.clone();
        wasm_bindgen_futures::spawn_local(async move {
            let _ = sink.lock().await.close().await;
        });
    }
}

//! WebSocket through gloo-net, split so the reader and the writer never wait on each other.

use std::rc::Rc;

use futures_util::lock::Mutex;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use gloo_net::websocket::futures::WebSocket;
use gloo_events::EventListener;
use gloo_net::websocket::{Message, WebSocketError};
use wasm_bindgen::JsValue;

use crate::core::ports::LocalBoxFuture;
use crate::core::realtime::{Incoming, Socket};

/// Close code for a socket that dropped without one.
const ABNORMAL: u16 = 1006;

pub struct BrowserSocket {
    sink: Rc<Mutex<SplitSink<WebSocket, Message>>>,
    stream: Rc<Mutex<SplitStream<WebSocket>>>,
    /// The same socket, for its `readyState`: gloo's sink sends into a socket that closed before
    /// it opened, and the browser logs a warning for each such send (every reconnect attempt
    /// while the server is down).
    raw: web_sys::WebSocket,
}

pub fn connect(url: &str) -> LocalBoxFuture<'static, Result<Rc<dyn Socket>, String>> {
    let opened = web_sys::WebSocket::new(url).map_err(|e| crate::web::describe(&e));
    Box::pin(async move {
        let raw = opened?;
        let (sink, stream) = WebSocket::try_from(raw.clone()).map_err(|e| [e.name, e.message].join(": "))?.split();
        Ok(Rc::new(BrowserSocket { sink: Rc::new(Mutex::new(sink)), stream: Rc::new(Mutex::new(stream)), raw }) as Rc<dyn Socket>)
    })
}

impl Socket for BrowserSocket {
    fn send(&self, text: String) -> LocalBoxFuture<'static, Result<(), String>> {
        let (sink, raw) = (self.sink.clone(), self.raw.clone());
        Box::pin(async move {
            let mut sink = sink.lock().await;
            if !opened(&raw).await {
                return Err("the connection closed before it opened".into());
            }
            sink.send(Message::Text(text)).await.map_err(|e| match e {
                WebSocketError::MessageSendError(js) => [js.name, js.message].join(": "),
                WebSocketError::ConnectionClose(_) => String::from("the connection closed"),
                _ => String::from("the connection failed"),
            })
        })
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

/// Waits until the socket leaves CONNECTING (its `open` or `close` event); answers whether it opened.
async fn opened(raw: &web_sys::WebSocket) -> bool {
    if raw.ready_state() == web_sys::WebSocket::CONNECTING {
        let (promise, resolve, _) = crate::web::settled_by();
        let target: &web_sys::EventTarget = raw.as_ref();
        let on_close = resolve.clone();
        // Removed when this returns, whichever came (gloo's listeners are RAII).
        let _open = EventListener::once(target, "open", move |_| {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        });
        let _close = EventListener::once(target, "close", move |_| {
            let _ = on_close.call0(&JsValue::UNDEFINED);
        });
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    }
    raw.ready_state() == web_sys::WebSocket::OPEN
}

//! The browser's WebSocket behind the core's `Socket` port. The frames wait in a JS queue
//! (src/web/browser.js): the browser already buffers and orders them, so the module needs no channel,
//! split halves or async locks of its own (with gloo-net's futures adapter
//! they cost about 7 KB of the package).

use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::core::ports::{LocalBoxFuture, SocketError};
use crate::core::sync_session::{Incoming, Socket};

/// Close code for a socket that dropped without one.
const ABNORMAL: u16 = 1006;

// `recv()` resolves to a text frame (a string) or, once closed, the close code (a number);
// `send()` waits for the socket to leave CONNECTING (src/web/browser.js).
#[wasm_bindgen(module = "/src/web/browser.js")]
extern "C" {
    type JsSocket;
    #[wasm_bindgen(catch, js_name = sbSocket)]
    fn open(url: &str) -> Result<JsSocket, JsValue>;
    #[wasm_bindgen(method, structural)]
    fn recv(this: &JsSocket) -> Promise;
    #[wasm_bindgen(method, structural)]
    fn send(this: &JsSocket, text: &str) -> Promise;
    #[wasm_bindgen(method, structural)]
    fn close(this: &JsSocket);
}

pub struct BrowserSocket(JsSocket);

pub fn connect(url: &str) -> LocalBoxFuture<'static, Result<Rc<dyn Socket>, SocketError>> {
    let opened = open(url).map_err(|e| SocketError(crate::web::describe(&e)));
    Box::pin(async move { Ok(Rc::new(BrowserSocket(opened?)) as Rc<dyn Socket>) })
}

impl Socket for BrowserSocket {
    fn send(&self, text: String) -> LocalBoxFuture<'static, Result<(), SocketError>> {
        let sent = JsFuture::from(self.0.send(&text));
        Box::pin(async move { sent.await.map(drop).map_err(|e| SocketError(crate::web::describe(&e))) })
    }

    fn recv(&self) -> LocalBoxFuture<'static, Incoming> {
        let next = JsFuture::from(self.0.recv());
        Box::pin(async move {
            match next.await {
                Ok(frame) => match frame.as_string() {
                    Some(text) => Incoming::Text(text),
                    None => Incoming::Closed(frame.as_f64().map_or(ABNORMAL, |code| code as u16)),
                },
                Err(_) => Incoming::Closed(ABNORMAL),
            }
        })
    }

    fn close(&self) {
        self.0.close();
    }
}

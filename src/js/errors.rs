//! `SessionBrokerError`: an exported JS class extending `Error`, with `name === "SessionBrokerError"`
//! and a `code` from the one list of codes (`core::codes`, `protocol::errors`).

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsValue;

use crate::core::codes;

#[wasm_bindgen(module = "/src/js/error_class.js")]
extern "C" {
    /// The JS class (`src/js/error_class.js`), a real `Error` subclass.
    #[wasm_bindgen(js_name = SessionBrokerError)]
    type JsSessionBrokerError;

    #[wasm_bindgen(constructor, js_class = "SessionBrokerError")]
    fn new(code: &str, message: &str) -> JsSessionBrokerError;
}

/// A `SessionBrokerError` with one of the SDK's codes (`core::codes`).
pub fn error(code: &str, message: &str) -> JsValue {
    JsSessionBrokerError::new(code, message).into()
}

/// A `SessionBrokerError` with code `invalid_argument`.
pub fn invalid(message: impl AsRef<str>) -> JsValue {
    error(codes::INVALID_ARGUMENT, message.as_ref())
}

pub use crate::web::describe;

//! Serde ⇄ JS conversions through the browser's JSON: serde_json is already in the module for
//! the core, so this costs no second serde backend (a large saving in size); output is plain
//! objects and arrays.

use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::JsValue;

use super::errors::invalid;

pub fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    // Our result types are plain data: serialising them and parsing JSON we wrote cannot fail.
    serde_json::to_string(value).ok().and_then(|s| js_sys::JSON::parse(&s).ok()).unwrap_or(JsValue::NULL)
}

/// Reads a JS argument into `T`, naming the argument in the error.
pub fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, JsValue> {
    let text = if value.is_undefined() { None } else { js_sys::JSON::stringify(&value).ok().and_then(|s| s.as_string()) };
    let text = text.ok_or_else(|| invalid(format!("{what}: a JSON-compatible value is required")))?;
    serde_json::from_str(&text).map_err(|e| invalid(format!("{what}: {e}")))
}

/// A string argument; anything else is an `INVALID_ARGUMENT`.
pub fn string_arg(value: &JsValue, what: &str) -> Result<String, JsValue> {
    value.as_string().ok_or_else(|| invalid(format!("{what} must be a string")))
}

/// A promise resolving to the serialised output of `future`.
pub fn promise<T: Serialize + 'static>(future: impl std::future::Future<Output = T> + 'static) -> js_sys::Promise {
    spawn(Box::pin(async move { to_js(&future.await) }))
}

/// One non-generic instance of the executor glue for every method (a large saving in size).
fn spawn(future: crate::core::ports::LocalBoxFuture<'static, JsValue>) -> js_sys::Promise {
    wasm_bindgen_futures::future_to_promise(async move { Ok(future.await) })
}

//! Serde ⇄ JS conversions. JSON-compatible output: plain objects, never `Map`s.

use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::JsValue;

use super::errors::invalid;

pub fn to_js<T: Serialize + ?Sized>(value: &T) -> JsValue {
    let serializer = serde_wasm_bindgen::Serializer::json_compatible();
    // Our result types are plain data; serialisation into JS cannot fail for them.
    value.serialize(&serializer).unwrap_or(JsValue::NULL)
}

/// Reads a JS argument into `T`, naming the argument in the error.
pub fn from_js<T: DeserializeOwned>(value: JsValue, what: &str) -> Result<T, JsValue> {
    serde_wasm_bindgen::from_value(value).map_err(|e| invalid(format!("{what}: {e}")))
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

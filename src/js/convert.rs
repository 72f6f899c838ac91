//! JS ⇄ JSON conversions: values cross by a walk (`web::codec`), never through JSON text.
//! Output is plain objects and arrays.

use serde_json::Value;
use wasm_bindgen::JsValue;

use super::errors::invalid;
use crate::core::calls::{segment, Route, Segment};
use crate::core::ports::LocalBoxFuture;
use crate::core::session::Session;

/// A JSON value as a plain JS value.
pub fn to_js(value: &Value) -> JsValue {
    crate::web::codec::to_js(value)
}

/// A JS argument as JSON; `undefined`, functions and cycles are refused, naming the argument.
/// `JSON.stringify` first, as JSON itself would: it drops functions and `undefined` inside
/// objects, calls `toJSON` (dates), and throws on cycles.
pub fn from_js(value: &JsValue, what: &str) -> Result<Value, JsValue> {
    let text =
        if value.is_undefined() { None } else { js_sys::JSON::stringify(value).ok().and_then(|s| s.as_string()) };
    text.and_then(|t| crate::core::json::parse(&t))
        .ok_or_else(|| invalid([what, " must be a JSON-compatible value"].concat()))
}

/// A JS argument that must be a plain object.
pub fn object_arg(value: &JsValue, what: &str) -> Result<serde_json::Map<String, Value>, JsValue> {
    match from_js(value, what)? {
        Value::Object(map) => Ok(map),
        _ => Err(invalid([what, " must be an object"].concat())),
    }
}

/// A string argument; anything else is an `INVALID_ARGUMENT`.
pub fn string_arg(value: &JsValue, what: &str) -> Result<String, JsValue> {
    value.as_string().ok_or_else(|| invalid([what, " must be a string"].concat()))
}

/// An id argument that is one plain path segment; anything else is an `INVALID_ARGUMENT`, thrown
/// before any request is made.
pub fn id_arg(value: &JsValue, what: &str) -> Result<Segment, JsValue> {
    segment(what, &string_arg(value, what)?).map_err(invalid)
}

/// A promise of `route`'s `{success, data?, error?, status?}`, sent with `session`.
pub fn send(session: &Session, route: Route) -> js_sys::Promise {
    let session = session.clone();
    promise(async move { session.send_route(route).await.to_value() })
}

/// A function argument (a handler); anything else is an `INVALID_ARGUMENT`.
pub fn function_arg(value: JsValue) -> Result<js_sys::Function, JsValue> {
    use wasm_bindgen::JsCast;
    value.dyn_into::<js_sys::Function>().map_err(|_| invalid("the handler must be a function"))
}

/// A promise resolving to the JSON `future` produces.
pub fn promise(future: impl std::future::Future<Output = Value> + 'static) -> js_sys::Promise {
    spawn(Box::pin(future))
}

/// One non-generic instance of the executor glue serves every method.
fn spawn(future: LocalBoxFuture<'static, Value>) -> js_sys::Promise {
    wasm_bindgen_futures::future_to_promise(async move { Ok(to_js(&future.await)) })
}

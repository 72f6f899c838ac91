//! The browser's `JSON` as the SDK's JSON codec (`core::json::install`): text is parsed by
//! `JSON.parse` and written by `JSON.stringify`, and values cross between JS and `Value` by a
//! walk, so the wasm module needs neither serde_json's parser nor its printer.

use js_sys::{Array, Object, Reflect, JSON};
use serde_json::{Map, Number, Value};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::json::{self, Codec};

/// Nesting deeper than this is refused, as serde_json refuses it: a hostile document must not
/// exhaust the module's stack.
const MAX_DEPTH: u32 = 128;

/// Installs the codec (idempotent); the facade's constructors call it first.
pub fn install() {
    json::install(Codec { parse, stringify });
}

fn parse(text: &str) -> Option<Value> {
    from_js(&JSON::parse(text).ok()?, 0)
}

fn stringify(value: &Value) -> String {
    JSON::stringify(&to_js(value)).ok().and_then(|s| s.as_string()).unwrap_or_else(|| String::from("null"))
}

/// A JS value made of JSON's types as a `Value`; `None` for anything else (a function, a
/// symbol, `undefined`, a non-finite number) or nesting beyond [`MAX_DEPTH`].
pub fn from_js(value: &JsValue, depth: u32) -> Option<Value> {
    if depth > MAX_DEPTH {
        return None;
    }
    if value.is_null() {
        return Some(Value::Null);
    }
    if let Some(b) = value.as_bool() {
        return Some(Value::Bool(b));
    }
    if let Some(n) = value.as_f64() {
        return number(n).map(Value::Number);
    }
    if let Some(s) = value.as_string() {
        return Some(Value::String(s));
    }
    if Array::is_array(value) {
        let array: &Array = value.unchecked_ref();
        return array.iter().map(|item| from_js(&item, depth + 1)).collect::<Option<Vec<_>>>().map(Value::Array);
    }
    if value.is_object() && !value.is_function() {
        let mut map = Map::new();
        for entry in Object::entries(value.unchecked_ref()).iter() {
            let entry: Array = entry.unchecked_into();
            map.insert(entry.get(0).as_string()?, from_js(&entry.get(1), depth + 1)?);
        }
        return Some(Value::Object(map));
    }
    None
}

/// Integers stay integers (as serde_json reads `3`), so `as_u64`/`as_i64` answer the same.
fn number(n: f64) -> Option<Number> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: every integer below is exact in an f64
    if n.fract() == 0.0 && n.abs() < EXACT {
        return Some(if n >= 0.0 { Number::from(n as u64) } else { Number::from(n as i64) });
    }
    Number::from_f64(n)
}

/// A `Value` as a plain JS value.
pub fn to_js(value: &Value) -> JsValue {
    match value {
        Value::Null => JsValue::NULL,
        Value::Bool(b) => JsValue::from_bool(*b),
        Value::Number(n) => n.as_f64().map_or(JsValue::NULL, JsValue::from_f64),
        Value::String(s) => JsValue::from_str(s),
        Value::Array(items) => items.iter().map(to_js).collect::<Array>().into(),
        Value::Object(map) => {
            let object = Object::new();
            for (k, v) in map {
                // Defining a property on a fresh plain object cannot throw.
                let _ = Reflect::set(&object, &JsValue::from_str(k), &to_js(v));
            }
            object.into()
        }
    }
}

//! The browser's codecs as the SDK's (`core::codec::install`): JSON text is parsed by
//! `JSON.parse` and written by `JSON.stringify`, values cross between JS and `Value` by a walk,
//! and base64url is decoded by `atob`, so the wasm module needs neither serde_json's parser and
//! printer nor a base64 decoder.

use js_sys::{Array, Object, Reflect, JSON};
use serde_json::{Map, Number, Value};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::codec::{self, Codec};

/// Nesting deeper than this is refused, as serde_json refuses it: a hostile document must not
/// exhaust the module's stack.
const MAX_DEPTH: u32 = 128;

/// Installs the codecs (idempotent); the facade's constructors call it first.
pub fn install() {
    codec::install(Codec { parse, stringify, base64url });
}

fn parse(text: &str) -> Option<Value> {
    from_js(&JSON::parse(text).ok()?, 0)
}

fn stringify(value: &Value) -> String {
    JSON::stringify(&to_js(value)).ok().and_then(|s| s.as_string()).unwrap_or_else(|| String::from("null"))
}

/// base64url, padded or not, as the base64 crate accepts it natively: its alphabet only (`atob`
/// alone would also take `+`, `/` and spaces) and no more padding than the length needs.
fn base64url(text: &str) -> Option<Vec<u8>> {
    let body = text.trim_end_matches('=');
    let padding = text.len() - body.len();
    let alphabet = body.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let length = body.len() % 4 != 1 && (padding == 0 || (text.len().is_multiple_of(4) && padding <= 2));
    if !alphabet || !length {
        return None;
    }
    let standard: String = body
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    // atob answers one char per byte (0–255).
    let bytes = web_sys::window()?.atob(&standard).ok()?;
    bytes.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect()
}

/// A JS value made of JSON's types as a `Value`; `None` for anything else (a function, a
/// symbol, `undefined`, a non-finite number) or nesting beyond [`MAX_DEPTH`].
fn from_js(value: &JsValue, depth: u32) -> Option<Value> {
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
                set(&object, k, &to_js(v));
            }
            object.into()
        }
    }
}

/// Sets a property of a plain object the module just created.
pub fn set(object: &Object, key: &str, value: &JsValue) {
    // Defining a property on a fresh plain object cannot throw.
    let _ = Reflect::set(object, &JsValue::from_str(key), value);
}

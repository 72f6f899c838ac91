//! Reading JSON answers and stored values as `serde_json::Value`.
//! One deserializer instance serves every shape the SDK reads, which keeps the wasm module small
//! (each derived `Deserialize` would add its own copy of the parser's visitor code).

use serde_json::{Map, Value};

/// Parses JSON text; `None` when it is not JSON.
pub fn parse(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

/// A string field of an object.
pub fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key)?.as_str()
}

/// A non-negative integer field of an object.
pub fn u64_field(value: &Value, key: &str) -> Option<u64> {
    value.get(key)?.as_u64()
}

/// An object whose values are all strings (a header set).
pub fn string_map(value: &Value) -> Option<Map<String, Value>> {
    let map = value.as_object()?;
    map.values().all(Value::is_string).then(|| map.clone())
}

/// An array of strings.
pub fn string_list(value: &Value) -> Option<Vec<String>> {
    value.as_array()?.iter().map(|v| v.as_str().map(str::to_owned)).collect()
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accessors() {
        let v = json!({"a": "x", "n": 3, "h": {"k": "v"}, "bad": {"k": 1}, "l": ["a", "b"], "m": ["a", 1]});
        assert_eq!(str_field(&v, "a"), Some("x"));
        assert_eq!(str_field(&v, "n"), None);
        assert_eq!(u64_field(&v, "n"), Some(3));
        assert!(string_map(&v["h"]).is_some());
        assert!(string_map(&v["bad"]).is_none());
        assert_eq!(string_list(&v["l"]), Some(vec!["a".into(), "b".into()]));
        assert_eq!(string_list(&v["m"]), None);
        assert_eq!(parse("{"), None);
    }
}

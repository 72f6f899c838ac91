//! JSON in the SDK: one value type (`serde_json::Value`) for every shape it reads and writes,
//! text through the platform's codec ([`crate::core::codec`]). The core only ever calls
//! [`parse`] and [`stringify`].

use serde_json::{Map, Value};

use super::codec::codec;

/// Parses JSON text; `None` when it is not JSON.
pub fn parse(text: &str) -> Option<Value> {
    (codec().parse)(text)
}

/// Writes a value as JSON text.
pub fn stringify(value: &Value) -> String {
    (codec().stringify)(value)
}

/// An object from its fields, in order (what `json!` would build, without its serializer and
/// its `unwrap`).
pub fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    // Inserted one by one: collecting into the map would sort first, one sort per caller type.
    let mut map = Map::new();
    for (k, v) in fields {
        map.insert(k.to_owned(), v);
    }
    Value::Object(map)
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
        assert_eq!(
            object([("a", "x".into()), ("n", 3.into()), ("l", vec!["a", "b"].into())]),
            json!({"a": "x", "n": 3, "l": ["a", "b"]})
        );
        assert_eq!(stringify(&json!({"b": 1, "a": [true, null]})), r#"{"a":[true,null],"b":1}"#);
    }
}

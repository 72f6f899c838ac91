//! Reading and building the JSON values the wire carries (`serde_json::Value`), without a
//! serializer: the SDK carries none.

use serde_json::{Map, Value};

/// An object from its fields, in order (what `json!` would build, without its serializer and
/// its `unwrap`).
pub fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    object_of(Vec::from(fields))
}

/// [`object`]'s body, one instance for every number of fields (only the move into a `Vec` is
/// per size).
fn object_of(fields: Vec<(&str, Value)>) -> Value {
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

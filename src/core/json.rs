//! JSON in the SDK: one value type (`serde_json::Value`) for every shape it reads and writes,
//! text through the platform's codec ([`crate::core::codec`]). The core only ever calls
//! [`parse`] and [`stringify`].

use serde_json::Value;

pub use crate::protocol::json::{object, str_field, string_list, string_map, u64_field};

use super::codec::codec;

/// Parses JSON text; `None` when it is not JSON.
pub fn parse(text: &str) -> Option<Value> {
    (codec().parse)(text)
}

/// Writes a value as JSON text.
pub fn stringify(value: &Value) -> String {
    (codec().stringify)(value)
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

//! JSON read one way only: a body whose meaning could differ between two parsers is refused.
//! An object with the same key twice is the case that matters (one parser keeps the first, another
//! the last, so the proxy and the engine could judge different documents); serde_json already
//! refuses invalid UTF-8, lone surrogates, trailing data, comments and non-finite numbers. A body
//! nested deeper than `MAX_DEPTH` is refused too: the changes hub reads each document again one
//! level deeper (inside its `_changes` row), with serde_json's own limit of 127 levels, and a
//! document it could not read would reach none of the devices listening.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The most arrays and objects a body may nest.
pub const MAX_DEPTH: usize = 100;

/// Parses `bytes` as JSON, refusing an object that repeats a key (at any depth) and a body
/// nested deeper than `MAX_DEPTH`.
pub fn parse(bytes: &[u8]) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Strict { depth: 0 }.deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// A value inside `depth` arrays and objects.
#[derive(Clone, Copy)]
struct Strict {
    depth: usize,
}

impl Strict {
    fn inner<E: de::Error>(self) -> Result<Strict, E> {
        match self.depth + 1 {
            depth if depth > MAX_DEPTH => Err(E::custom(format!("nested deeper than {MAX_DEPTH} levels"))),
            depth => Ok(Strict { depth }),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(v).map(Value::Number).ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.inner()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.inner()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format!("the key {key:?} appears twice in one object")));
            }
            let value = map.next_value_seed(inner)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::{parse, MAX_DEPTH};

    #[test]
    fn one_reading_or_none() {
        assert_eq!(
            parse(br#"{"a":[1,{"b":null}],"c":"\u005fid"}"#).unwrap(),
            serde_json::json!({"a": [1, {"b": null}], "c": "_id"})
        );
        for bad in [
            &br#"{"_id":"a","_id":"_design/x"}"#[..],
            br#"{"docs":[{"x":1,"x":2}]}"#,
            br#"{"_id":"a","\u005fid":"b"}"#,
            b"{\"_id\":\"\xff\"}",
            br#"{"a":"\ud800"}"#,
            br#"{"a":1} {"a":2}"#,
            b"",
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn nested_as_deep_as_the_limit_and_no_deeper() {
        let nested = |levels: usize| format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
        assert!(parse(nested(MAX_DEPTH).as_bytes()).is_ok());
        assert!(parse(nested(MAX_DEPTH + 1).as_bytes()).is_err());
        let objects = |levels: usize| format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels));
        assert!(parse(objects(MAX_DEPTH).as_bytes()).is_ok());
        assert!(parse(objects(MAX_DEPTH + 1).as_bytes()).is_err());
    }
}

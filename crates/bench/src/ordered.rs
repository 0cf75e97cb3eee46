//! A JSON tree that keeps object keys in their recorded order.
//!
//! `serde_json::Value` sorts object keys (the workspace does not enable
//! `preserve_order`, and turning it on here would change every crate of the
//! bench build). The real CLIs print `type` first; the workloads should too,
//! so they are built on this tree instead.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// A JSON value; objects keep their key order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// An object, keys in order.
    Obj(Vec<(String, Json)>),
    /// An array.
    Arr(Vec<Json>),
    /// A null, boolean, number or string.
    Leaf(Value),
}

impl Json {
    /// The value at a JSON pointer (`/a/0/b`).
    pub fn pointer(&self, pointer: &str) -> Option<&Json> {
        let mut cur = self;
        for token in pointer.split('/').skip(1) {
            cur = match cur {
                Json::Obj(fields) => fields.iter().find(|(k, _)| k == token).map(|(_, v)| v)?,
                Json::Arr(items) => items.get(token.parse::<usize>().ok()?)?,
                Json::Leaf(_) => return None,
            };
        }
        Some(cur)
    }

    /// The value at a JSON pointer, mutably.
    pub fn pointer_mut(&mut self, pointer: &str) -> Option<&mut Json> {
        let mut cur = self;
        for token in pointer.split('/').skip(1) {
            cur = match cur {
                Json::Obj(fields) => fields
                    .iter_mut()
                    .find(|(k, _)| k == token)
                    .map(|(_, v)| v)?,
                Json::Arr(items) => items.get_mut(token.parse::<usize>().ok()?)?,
                Json::Leaf(_) => return None,
            };
        }
        Some(cur)
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Leaf(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// An object of `fields`, in this order.
    pub fn object<const N: usize>(fields: [(&str, Json); N]) -> Json {
        Json::Obj(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Leaf(Value::String(s.to_owned()))
    }
}

impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Leaf(Value::String(s))
    }
}

impl From<u64> for Json {
    fn from(n: u64) -> Json {
        Json::Leaf(Value::from(n))
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Json {
        Json::Leaf(Value::Bool(b))
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Obj(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            Json::Arr(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for v in items {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Json::Leaf(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Leaf(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Leaf(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Leaf(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Leaf(Value::from(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::from(v))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::from(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Leaf(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Leaf(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element()? {
            items.push(v);
        }
        Ok(Json::Arr(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut fields = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            fields.push((k, v));
        }
        Ok(Json::Obj(fields))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn round_trips_in_recorded_key_order() {
        let text = r#"{"type":"x","b":[1,{"z":null,"a":true}],"a":"s","n":-1.5}"#;
        let mut v: Json = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&v).unwrap(), text);
        assert_eq!(v.pointer("/b/1/a"), Some(&Json::from(true)));
        *v.pointer_mut("/a").unwrap() = Json::from("t");
        assert!(
            serde_json::to_string(&v)
                .unwrap()
                .contains(r#""a":"t","n""#)
        );
        assert!(v.pointer("/b/7").is_none() && v.pointer("/a/x").is_none());
    }
}

//! Internally tagged enums (`{"type": "...", ...}`) without serde's
//! buffering: `#[serde(tag = "type")]` first copies the whole object into an
//! intermediate tree, then deserializes the variant from it — on every line,
//! at every nesting level. Here the tag is read as the object is read; the
//! fields after it go straight into the variant, and only the (few, small)
//! fields before it are held as values and replayed.
//!
//! Behaviour matches the derived form: an unknown tag is the enum's catch-all
//! variant (its fields skipped, but still checked to be JSON), a missing tag
//! is the error "missing field `type`", and unknown fields are ignored.
//! Deliberately not kept: serde also accepted an array whose first element
//! is the tag (`["system", ...]`) and a number as the tag (taken as the
//! variant's index); no CLI prints those, and here they are malformed.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

/// The name of the tag field.
const TAG: &str = "type";

/// An enum tagged by its `type` field.
pub(crate) trait Tagged<'de>: Sized {
    /// What a value of this enum is, for error messages.
    const EXPECTING: &'static str;

    /// The variant `tag` names, from the object's other fields.
    fn variant<F: Fields<'de>>(tag: &str, fields: F) -> Result<Self, F::Error>;
}

/// The fields of a tagged object other than its tag.
pub(crate) trait Fields<'de> {
    /// The deserializer's error.
    type Error: de::Error;

    /// Deserialize them as a struct (unknown fields ignored).
    fn read<T: Deserialize<'de>>(self) -> Result<T, Self::Error>;

    /// Skip them (still checking they are well-formed).
    fn skip(self) -> Result<(), Self::Error>
    where
        Self: Sized,
    {
        self.read::<IgnoredAny>().map(|_| ())
    }
}

/// Deserialize the tagged enum `T`.
pub(crate) fn deserialize<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Tagged<'de>,
{
    d.deserialize_any(TaggedVisitor(PhantomData))
}

struct TaggedVisitor<T>(PhantomData<T>);

impl<'de, T: Tagged<'de>> Visitor<'de> for TaggedVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let mut before = Vec::new();
        while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
            if key == TAG {
                let Str(tag) = map.next_value::<Str<'de>>()?;
                return T::variant(&tag, Rest { before, map });
            }
            let value: Value = map.next_value()?;
            before.push((key.into_owned(), value));
        }
        Err(de::Error::missing_field(TAG))
    }
}

/// A string, borrowed from the input when it has no escapes.
struct Str<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// The fields after the tag (still in the input), and those before it.
struct Rest<A> {
    before: Vec<(String, Value)>,
    map: A,
}

impl<'de, A: MapAccess<'de>> Fields<'de> for Rest<A> {
    type Error = A::Error;

    fn read<T: Deserialize<'de>>(self) -> Result<T, A::Error> {
        if self.before.is_empty() {
            return T::deserialize(MapAccessDeserializer::new(self.map));
        }
        T::deserialize(MapAccessDeserializer::new(Replay {
            before: self.before.into_iter(),
            value: None,
            map: self.map,
        }))
    }
}

/// The fields read before the tag, then the rest of the object.
struct Replay<A> {
    before: std::vec::IntoIter<(String, Value)>,
    value: Option<Value>,
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Replay<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.before.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(StringDeserializer::<A::Error>::new(key))
                    .map(Some)
            }
            None => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(value).map_err(de::Error::custom),
            None => self.map.next_value_seed(seed),
        }
    }
}

/// `impl Deserialize` through [`deserialize`] (tag first) for each listed
/// type that implements [`Tagged`].
macro_rules! deserialize_tagged {
    ($($ty:ty),+ $(,)?) => {$(
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::tagged::deserialize(d)
            }
        }
    )+};
}
pub(crate) use deserialize_tagged;

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, PartialEq)]
    enum Shape {
        Circle { r: u32 },
        Square { side: u32, label: String },
        Dot,
        Other,
    }

    impl<'de> Deserialize<'de> for Shape {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            deserialize(d)
        }
    }

    impl<'de> Tagged<'de> for Shape {
        const EXPECTING: &'static str = "a shape";

        fn variant<F: Fields<'de>>(tag: &str, fields: F) -> Result<Self, F::Error> {
            #[derive(Deserialize)]
            struct Circle {
                r: u32,
            }
            #[derive(Deserialize)]
            struct Square {
                side: u32,
                #[serde(default)]
                label: String,
            }
            Ok(match tag {
                "circle" => Shape::Circle {
                    r: fields.read::<Circle>()?.r,
                },
                "square" => {
                    let s: Square = fields.read()?;
                    Shape::Square {
                        side: s.side,
                        label: s.label,
                    }
                }
                "dot" => {
                    fields.skip()?;
                    Shape::Dot
                }
                _ => {
                    fields.skip()?;
                    Shape::Other
                }
            })
        }
    }

    /// The same enum, derived: the reference behaviour.
    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Derived {
        Circle {
            r: u32,
        },
        Square {
            side: u32,
            #[serde(default)]
            label: String,
        },
        Dot,
        #[serde(other)]
        Other,
    }

    fn same(d: Derived) -> Shape {
        match d {
            Derived::Circle { r } => Shape::Circle { r },
            Derived::Square { side, label } => Shape::Square { side, label },
            Derived::Dot => Shape::Dot,
            Derived::Other => Shape::Other,
        }
    }

    #[test]
    fn agrees_with_the_derived_form() {
        let cases = [
            r#"{"type":"circle","r":3}"#,
            r#"{"r":3,"type":"circle"}"#,
            r#"{"r":3,"extra":{"deep":[1,2,{"x":null}]},"type":"circle","more":true}"#,
            r#"{"type":"square","side":2}"#,
            r#"{"side":2,"label":"a\"b","type":"square"}"#,
            r#"{"type":"sq\u0075are","side":2}"#,
            r#"{"type":"dot"}"#,
            r#"{"type":"dot","r":"anything"}"#,
            r#"{"type":"hexagon","sides":6}"#,
            r#"{"type":""}"#,
            r#"{"type":"circle"}"#,
            r#"{"type":"circle","r":"three"}"#,
            r#"{"type":"circle","r":-1}"#,
            r#"{"r":3}"#,
            r#"{}"#,
            r#"{"type":null}"#,
            r#"{"type":"circle","r":3"#,
            r#"{"type":"hexagon","sides":[1,2}"#,
            r#"{"type":"circle","r":3} trailing"#,
            r#"[]"#,
            r#""circle""#,
            r#"null"#,
            r#"42"#,
            "",
        ];
        for case in cases {
            let ours = serde_json::from_str::<Shape>(case);
            let reference = serde_json::from_str::<Derived>(case).map(same);
            match (&ours, &reference) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{case}"),
                (Err(_), Err(_)) => {}
                _ => panic!("{case}: ours {ours:?}, derived {reference:?}"),
            }
        }
    }

    #[test]
    fn reads_from_values_too() {
        let v = serde_json::json!({"label": "x", "side": 4, "type": "square"});
        assert_eq!(
            serde_json::from_value::<Shape>(v).unwrap(),
            Shape::Square {
                side: 4,
                label: "x".into()
            }
        );
    }

    #[test]
    fn the_tag_must_be_a_string_in_an_object() {
        for case in [r#"{"type":1,"side":2}"#, r#"["square",2]"#, r#"[1,2]"#] {
            assert!(serde_json::from_str::<Shape>(case).is_err(), "{case}");
        }
    }

    #[test]
    fn a_missing_tag_is_named() {
        let e = serde_json::from_str::<Shape>(r#"{"r":1}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `type`"), "{e}");
    }
}

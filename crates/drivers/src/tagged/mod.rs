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
use serde::de::value::{
    BorrowedStrDeserializer, MapAccessDeserializer, SeqAccessDeserializer, StringDeserializer,
};
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

    /// Deserialize them as a struct, the string field `id` taken out first
    /// (`""` when absent): the common field of a tagged object whose
    /// variants do not declare it. Nothing is buffered; the other keys go
    /// straight to `T`.
    #[cfg_attr(not(feature = "codex"), allow(dead_code))] // Only Codex items have an `id`.
    fn read_with_id<T: Deserialize<'de>>(self) -> Result<(String, T), Self::Error>;

    /// Skip them (still checking they are well-formed).
    fn skip(self) -> Result<(), Self::Error>
    where
        Self: Sized,
    {
        self.read::<IgnoredAny>().map(|_| ())
    }
}

/// The variant of `T` that `tag` names, read from `fields` with their `id`
/// taken out (see [`Fields::read_with_id`]): a struct made of a common `id`
/// and a tagged enum, decoded in one pass.
#[cfg_attr(not(feature = "codex"), allow(dead_code))] // Only Codex items have an `id`.
pub(crate) fn variant_with_id<'de, T, F>(tag: &str, fields: F) -> Result<(String, T), F::Error>
where
    T: Tagged<'de>,
    F: Fields<'de>,
{
    let mut id = String::new();
    let value = T::variant(
        tag,
        WithId {
            fields,
            id: &mut id,
        },
    )?;
    Ok((id, value))
}

/// Fields whose `id` is taken out into `id` whatever the variant reads.
#[cfg_attr(not(feature = "codex"), allow(dead_code))] // Only Codex items have an `id`.
struct WithId<'a, F> {
    fields: F,
    id: &'a mut String,
}

impl<'de, F: Fields<'de>> Fields<'de> for WithId<'_, F> {
    type Error = F::Error;

    fn read<T: Deserialize<'de>>(self) -> Result<T, F::Error> {
        let (id, value) = self.fields.read_with_id()?;
        *self.id = id;
        Ok(value)
    }

    fn read_with_id<T: Deserialize<'de>>(self) -> Result<(String, T), F::Error> {
        // The `id` is already taken out: the variant sees none.
        Ok((String::new(), self.read()?))
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
        let mut before = Before::default();
        while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
            if key == TAG {
                let Str(tag) = map.next_value::<Str<'de>>()?;
                return T::variant(&tag, Rest { before, map });
            }
            before.push(key, map.next_value()?);
        }
        Err(de::Error::missing_field(TAG))
    }
}

/// The fields read before the tag, in order. The first is held inline and
/// keys and string values borrow from the input where they can, so the
/// common case — one field, such as an item's `id`, ahead of `type` —
/// allocates nothing.
#[derive(Default)]
struct Before<'de> {
    first: Option<(Cow<'de, str>, Held<'de>)>,
    more: Vec<(Cow<'de, str>, Held<'de>)>,
}

impl<'de> Before<'de> {
    fn push(&mut self, key: Cow<'de, str>, value: Held<'de>) {
        if self.first.is_none() {
            self.first = Some((key, value));
        } else {
            self.more.push((key, value));
        }
    }

    fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    fn into_iter(self) -> impl Iterator<Item = (Cow<'de, str>, Held<'de>)> {
        self.first.into_iter().chain(self.more)
    }
}

/// A value read before the tag: a string as read (borrowed when it has no
/// escapes), anything else as a [`Value`].
enum Held<'de> {
    Str(Cow<'de, str>),
    Value(Value),
}

impl<'de> Deserialize<'de> for Held<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Held<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Held<'de>, E> {
                Ok(Held::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Held<'de>, E> {
                Ok(Held::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Held<'de>, E> {
                Ok(Held::Str(Cow::Owned(v)))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Held<'de>, E> {
                Ok(Held::Value(Value::Bool(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Held<'de>, E> {
                Ok(Held::Value(Value::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Held<'de>, E> {
                Ok(Held::Value(Value::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Held<'de>, E> {
                Ok(Held::Value(Value::from(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Held<'de>, E> {
                Ok(Held::Value(Value::Null))
            }
            fn visit_none<E: de::Error>(self) -> Result<Held<'de>, E> {
                Ok(Held::Value(Value::Null))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Held<'de>, D::Error> {
                Held::deserialize(d)
            }
            fn visit_seq<S: de::SeqAccess<'de>>(self, seq: S) -> Result<Held<'de>, S::Error> {
                Value::deserialize(SeqAccessDeserializer::new(seq)).map(Held::Value)
            }
            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<Held<'de>, M::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(Held::Value)
            }
        }
        d.deserialize_any(V)
    }
}

/// A string, borrowed from the input when it has no escapes.
struct Str<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Held::deserialize(d)? {
            Held::Str(s) => Ok(Str(s)),
            Held::Value(v) => {
                let unexpected = match &v {
                    Value::Null => de::Unexpected::Unit,
                    Value::Bool(b) => de::Unexpected::Bool(*b),
                    Value::Number(_) => de::Unexpected::Other("number"),
                    Value::String(s) => de::Unexpected::Str(s),
                    Value::Array(_) => de::Unexpected::Seq,
                    Value::Object(_) => de::Unexpected::Map,
                };
                Err(de::Error::invalid_type(unexpected, &"a string"))
            }
        }
    }
}

/// The fields after the tag (still in the input), and those before it.
struct Rest<'de, A> {
    before: Before<'de>,
    map: A,
}

impl<'de, A: MapAccess<'de>> Fields<'de> for Rest<'de, A> {
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

    fn read_with_id<T: Deserialize<'de>>(self) -> Result<(String, T), A::Error> {
        fn read<'de, T: Deserialize<'de>, M: MapAccess<'de>>(
            map: M,
        ) -> Result<(String, T), M::Error> {
            let mut map = TakeId { map, id: None };
            let value = T::deserialize(MapAccessDeserializer::new(&mut map))?;
            Ok((map.id.unwrap_or_default(), value))
        }
        if self.before.is_empty() {
            return read(self.map);
        }
        read(Replay {
            before: self.before.into_iter(),
            value: None,
            map: self.map,
        })
    }
}

/// The name of the field [`Fields::read_with_id`] takes out.
#[cfg_attr(not(feature = "codex"), allow(dead_code))] // Only Codex items have an `id`.
const ID: &str = "id";

/// A map without its `id` field, which is kept aside.
#[cfg_attr(not(feature = "codex"), allow(dead_code))] // Only Codex items have an `id`.
struct TakeId<A> {
    map: A,
    id: Option<String>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for TakeId<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(Str(key)) = self.map.next_key::<Str<'de>>()? else {
                return Ok(None);
            };
            if key != ID {
                return give_key(seed, key).map(Some);
            }
            if self.id.is_some() {
                return Err(de::Error::duplicate_field(ID));
            }
            self.id = Some(self.map.next_value()?);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// The fields read before the tag, then the rest of the object.
struct Replay<'de, I, A> {
    before: I,
    value: Option<Held<'de>>,
    map: A,
}

impl<'de, I, A> MapAccess<'de> for Replay<'de, I, A>
where
    I: Iterator<Item = (Cow<'de, str>, Held<'de>)>,
    A: MapAccess<'de>,
{
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.before.next() {
            Some((key, value)) => {
                self.value = Some(value);
                give_key(seed, key).map(Some)
            }
            None => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.value.take() {
            Some(Held::Str(s)) => seed.deserialize(HeldStr(s, PhantomData)),
            Some(Held::Value(value)) => seed.deserialize(value).map_err(de::Error::custom),
            None => self.map.next_value_seed(seed),
        }
    }
}

/// A key already read, handed to `seed` as the input would have: borrowed
/// when it borrows from the input.
fn give_key<'de, K, E>(seed: K, key: Cow<'de, str>) -> Result<K::Value, E>
where
    K: DeserializeSeed<'de>,
    E: de::Error,
{
    match key {
        Cow::Borrowed(k) => seed.deserialize(BorrowedStrDeserializer::new(k)),
        Cow::Owned(k) => seed.deserialize(StringDeserializer::new(k)),
    }
}

/// A string read before the tag, replayed as a JSON string value would
/// be: borrowed when it borrows from the input, `Some` for an `Option`,
/// a unit variant for an enum, the inner value of a newtype.
struct HeldStr<'de, E>(Cow<'de, str>, PhantomData<E>);

impl<'de, E: de::Error> Deserializer<'de> for HeldStr<'de, E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        match self.0 {
            Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
            Cow::Owned(s) => visitor.visit_string(s),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, E> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, E> {
        match self.0 {
            Cow::Borrowed(s) => {
                BorrowedStrDeserializer::new(s).deserialize_enum(name, variants, visitor)
            }
            Cow::Owned(s) => StringDeserializer::new(s).deserialize_enum(name, variants, visitor),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

/// Declares an enum tagged by its `type` field together with its tag
/// table, once: each variant is a tag and a struct (read with
/// [`Fields::read`]) or a unit (its fields skipped); the last is `_`, the
/// unit catch-all for any other tag. Emits the enum, its [`Tagged`] impl
/// (`EXPECTING` is "internally tagged enum <Name>", as serde's derive
/// says) and its `Deserialize` (tag first, through [`deserialize`]).
///
/// ```ignore
/// tagged_enum! {
///     /// A content block.
///     #[derive(Debug, Clone)]
///     pub enum Block {
///         /// Text.
///         "text" => Text(TextBlock),
///         /// Redacted reasoning.
///         "redacted_thinking" => RedactedThinking,
///         /// Any other block type.
///         _ => Other,
///     }
/// }
/// ```
///
/// Under `cfg(test)` it also emits `derived_debug`, the same enum decoded
/// by serde's own `#[serde(tag = "type")]` derive and printed with `Debug`:
/// the reference the tag-first decoding is tested against.
macro_rules! tagged_enum {
    (
        $(#[$attr:meta])*
        $vis:vis enum $name:ident { $($body:tt)* }
    ) => {
        $crate::tagged::tagged_enum!(@enum [$(#[$attr])* $vis enum $name] $($body)*);

        #[cfg(test)]
        impl $name {
            /// `json` decoded by serde's derive (the reference), as `Debug`.
            #[allow(dead_code)]
            pub(crate) fn derived_debug(json: &str) -> Result<String, serde_json::Error> {
                $crate::tagged::tagged_enum!(@derived $name [] $($body)*);
                serde_json::from_str::<$name>(json).map(|v| format!("{v:?}"))
            }
        }
    };
    (
        @enum [$(#[$attr:meta])* $vis:vis enum $name:ident]
        $($(#[$vattr:meta])* $tag:pat => $variant:ident $(($ty:ty))?,)+
    ) => {
        $(#[$attr])*
        $vis enum $name {
            $($(#[$vattr])* $variant $(($ty))?,)+
        }

        impl<'de> $crate::tagged::Tagged<'de> for $name {
            const EXPECTING: &'static str = concat!("internally tagged enum ", stringify!($name));

            fn variant<F: $crate::tagged::Fields<'de>>(
                tag: &str,
                f: F,
            ) -> Result<Self, F::Error> {
                Ok(match tag {
                    $($tag => $crate::tagged::tagged_enum!(@read f, $name, $variant $(($ty))?),)+
                })
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $crate::tagged::deserialize(d)
            }
        }
    };
    (@read $f:ident, $name:ident, $variant:ident ($ty:ty)) => {
        $name::$variant($f.read::<$ty>()?)
    };
    (@read $f:ident, $name:ident, $variant:ident) => {{
        $f.skip()?;
        $name::$variant
    }};
    (@derived $name:ident [$($done:tt)*]) => {
        #[derive(Debug, serde::Deserialize)]
        #[serde(tag = "type")]
        enum $name {
            $($done)*
        }
    };
    (
        @derived $name:ident [$($done:tt)*]
        $(#[$vattr:meta])* _ => $variant:ident, $($rest:tt)*
    ) => {
        $crate::tagged::tagged_enum!(@derived $name [$($done)* #[serde(other)] $variant,] $($rest)*);
    };
    (
        @derived $name:ident [$($done:tt)*]
        $(#[$vattr:meta])* $tag:literal => $variant:ident $(($ty:ty))?, $($rest:tt)*
    ) => {
        $crate::tagged::tagged_enum!(
            @derived $name [$($done)* #[serde(rename = $tag)] $variant $(($ty))?,] $($rest)*
        );
    };
}
pub(crate) use tagged_enum;

/// Asserts that `ours` decodes each of `cases` as `reference` does: to the
/// same value, or both to an error.
#[cfg(test)]
pub(crate) fn assert_agree<T, E1, E2>(
    cases: &[&str],
    ours: impl Fn(&str) -> Result<T, E1>,
    reference: impl Fn(&str) -> Result<T, E2>,
) where
    T: fmt::Debug + PartialEq,
    E1: fmt::Debug,
    E2: fmt::Debug,
{
    for case in cases {
        let (a, b) = (ours(case), reference(case));
        match (&a, &b) {
            (Ok(x), Ok(y)) => assert_eq!(x, y, "{case}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{case}: ours {a:?}, derived {b:?}"),
        }
    }
}

#[cfg(test)]
mod tests;

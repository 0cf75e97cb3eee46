//! [`FieldsInto`]: an event's own fields, serialized straight into the map
//! of its JSON line (no intermediate `Value`).
//!
//! Every [`Event`](agent_adaptor_core::Event) variant is a struct, and the
//! enum is internally tagged: serializing it calls `serialize_struct` and
//! then `serialize_field` once per field, the tag (`type`) among them. This
//! serializer accepts exactly that shape (or a map) and writes each field
//! as an entry of the map `M`, leaving out `type` and `meta` (the line
//! writes its own) and giving `bytes` as lossy UTF-8 text. Any other shape
//! is an error.

use serde::Serialize;
use serde::ser::{self, Impossible, SerializeMap, SerializeStruct, Serializer};

/// The envelope keys a line writes from the event's meta, unless one of the
/// event's own fields has the same name (then the field wins, as one JSON
/// object holds each key once).
pub const ENVELOPE: [&str; 5] = ["sequence", "run_id", "time", "thread_key", "source"];

/// Writes the fields of one event struct into `map`.
pub struct FieldsInto<'m, M> {
    /// The line's map.
    pub map: &'m mut M,
    /// The raw bytes of a `process.*` event, written as text instead of the
    /// `bytes` field's own form (a list of numbers).
    pub bytes: Option<&'m [u8]>,
    /// Which [`ENVELOPE`] keys the fields wrote (bit `i` for `ENVELOPE[i]`).
    pub seen: &'m mut u8,
}

impl<M: SerializeMap> FieldsInto<'_, M> {
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), M::Error> {
        if key == "type" || key == "meta" {
            return Ok(());
        }
        if let Some(i) = ENVELOPE.iter().position(|k| *k == key) {
            *self.seen |= 1 << i;
        }
        match self.bytes {
            Some(bytes) if key == "bytes" => self
                .map
                .serialize_entry(key, &*String::from_utf8_lossy(bytes)),
            _ => self.map.serialize_entry(key, value),
        }
    }
}

impl<M: SerializeMap> SerializeStruct for FieldsInto<'_, M> {
    type Ok = ();
    type Error = M::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        self.field(key, value)
    }

    fn end(self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A map (a struct with a flattened field) given as entries: the key is
/// captured as text first.
impl<M: SerializeMap> SerializeMap for FieldsInto<'_, M> {
    type Ok = ();
    type Error = M::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, _key: &T) -> Result<(), Self::Error> {
        Err(ser::Error::custom(
            "event fields: keys come with their values",
        ))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, _value: &T) -> Result<(), Self::Error> {
        Err(ser::Error::custom(
            "event fields: values come with their keys",
        ))
    }

    fn serialize_entry<K: Serialize + ?Sized, V: Serialize + ?Sized>(
        &mut self,
        key: &K,
        value: &V,
    ) -> Result<(), Self::Error> {
        let key = serde_json::to_value(key).map_err(ser::Error::custom)?;
        match key.as_str() {
            Some(key) => self.field(key, value),
            None => Err(ser::Error::custom("event fields: a key that is not text")),
        }
    }

    fn end(self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Any shape other than a struct or a map.
fn refuse<E: ser::Error>() -> Result<(), E> {
    Err(E::custom("event fields: not a struct"))
}

impl<'m, M: SerializeMap> Serializer for FieldsInto<'m, M> {
    type Ok = ();
    type Error = M::Error;
    type SerializeSeq = Impossible<(), M::Error>;
    type SerializeTuple = Impossible<(), M::Error>;
    type SerializeTupleStruct = Impossible<(), M::Error>;
    type SerializeTupleVariant = Impossible<(), M::Error>;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), M::Error>;

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, Self::Error> {
        Ok(self)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self, Self::Error> {
        Ok(self)
    }

    fn serialize_bool(self, _: bool) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_i8(self, _: i8) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_i16(self, _: i16) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_i32(self, _: i32) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_i64(self, _: i64) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_u8(self, _: u8) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_u16(self, _: u16) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_u32(self, _: u32) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_u64(self, _: u64) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_f32(self, _: f32) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_f64(self, _: f64) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_char(self, _: char) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_str(self, _: &str) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_none(self) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Self::Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Self::Error> {
        refuse()
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        Err(ser::Error::custom("event fields: not a struct"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Self::Error> {
        Err(ser::Error::custom("event fields: not a struct"))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Self::Error> {
        Err(ser::Error::custom("event fields: not a struct"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Self::Error> {
        Err(ser::Error::custom("event fields: not a struct"))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Self::Error> {
        Err(ser::Error::custom("event fields: not a struct"))
    }
}

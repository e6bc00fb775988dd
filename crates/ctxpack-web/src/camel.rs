//! Writes the core's values as JSON with camelCase keys directly: a serde
//! serializer over serde_json's that renames each struct field and each
//! variant written as a key (`{"duplicateOf": …}`) as it goes, so the
//! outcome is never written in kebab-case and rewritten. A unit variant
//! is a value (`"over-budget"`) and keeps its name, as in
//! [`crate::spelling`], which this must agree with (a test checks the
//! whole corpus both ways).

use serde::ser::{
    self, Serialize, SerializeMap, SerializeSeq, SerializeStruct, SerializeStructVariant,
    SerializeTuple, SerializeTupleStruct, SerializeTupleVariant, Serializer,
};
use std::cell::RefCell;
use std::collections::HashMap;

thread_local! {
    /// Whether [`to_string_apart`] still waits for its `snapshot` field.
    static ARMED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The text of the `snapshot` field written apart.
    static APART: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Each name's camelCase spelling, made once: the names are the core's
    /// field and variant names, a few hundred, and live as long as the
    /// program (serde_json wants `&'static str` keys).
    static NAMES: RefCell<HashMap<&'static str, &'static str>> = RefCell::new(HashMap::new());
}

fn name(kebab: &'static str) -> &'static str {
    if !kebab.contains('-') {
        return kebab;
    }
    NAMES.with(|names| {
        *names
            .borrow_mut()
            .entry(kebab)
            .or_insert_with(|| Box::leak(crate::spelling::camel(kebab).into_boxed_str()))
    })
}

/// `value` as JSON text with camelCase keys.
pub fn to_string<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::with_capacity(256);
    value.serialize(Camel(&mut serde_json::Serializer::new(&mut out)))?;
    // serde_json writes only UTF-8.
    String::from_utf8(out).map_err(|e| ser::Error::custom(e.to_string()))
}

/// `value` as JSON text with camelCase keys, the value of its first
/// `snapshot` field (a pack's, a failure's) written apart and `null` in
/// its place: the package reads a snapshot of 10k entries only when it is
/// looked at.
pub fn to_string_apart<T: Serialize + ?Sized>(
    value: &T,
) -> Result<(String, Option<String>), serde_json::Error> {
    ARMED.with(|a| a.set(true));
    let text = to_string(value);
    ARMED.with(|a| a.set(false));
    let apart = APART.with(|a| a.borrow_mut().take());
    Ok((text?, apart))
}

/// The first `snapshot` field while [`to_string_apart`] writes, written
/// apart (once: disarmed before it is written, so nothing inside it and
/// nothing after it is taken).
fn apart(key: &'static str, value: &(impl Serialize + ?Sized)) -> Option<String> {
    if key != "snapshot" || !ARMED.with(|a| a.replace(false)) {
        return None;
    }
    let text = to_string(value).ok()?;
    APART.with(|a| *a.borrow_mut() = Some(text.clone()));
    Some(text)
}

/// A serializer that renames keys, or a compound of one.
struct Camel<S>(S);

/// A value to be written through [`Camel`].
struct Value<'a, T: ?Sized>(&'a T);

impl<T: Serialize + ?Sized> Serialize for Value<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Camel(s))
    }
}

impl<S: Serializer> Serializer for Camel<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Camel<S::SerializeSeq>;
    type SerializeTuple = Camel<S::SerializeTuple>;
    type SerializeTupleStruct = Camel<S::SerializeTupleStruct>;
    type SerializeTupleVariant = Camel<S::SerializeTupleVariant>;
    type SerializeMap = Camel<S::SerializeMap>;
    type SerializeStruct = Camel<S::SerializeStruct>;
    type SerializeStructVariant = Camel<S::SerializeStructVariant>;

    fn serialize_bool(self, v: bool) -> Result<S::Ok, S::Error> {
        self.0.serialize_bool(v)
    }
    fn serialize_i8(self, v: i8) -> Result<S::Ok, S::Error> {
        self.0.serialize_i8(v)
    }
    fn serialize_i16(self, v: i16) -> Result<S::Ok, S::Error> {
        self.0.serialize_i16(v)
    }
    fn serialize_i32(self, v: i32) -> Result<S::Ok, S::Error> {
        self.0.serialize_i32(v)
    }
    fn serialize_i64(self, v: i64) -> Result<S::Ok, S::Error> {
        self.0.serialize_i64(v)
    }
    fn serialize_u8(self, v: u8) -> Result<S::Ok, S::Error> {
        self.0.serialize_u8(v)
    }
    fn serialize_u16(self, v: u16) -> Result<S::Ok, S::Error> {
        self.0.serialize_u16(v)
    }
    fn serialize_u32(self, v: u32) -> Result<S::Ok, S::Error> {
        self.0.serialize_u32(v)
    }
    fn serialize_u64(self, v: u64) -> Result<S::Ok, S::Error> {
        self.0.serialize_u64(v)
    }
    fn serialize_f32(self, v: f32) -> Result<S::Ok, S::Error> {
        self.0.serialize_f32(v)
    }
    fn serialize_f64(self, v: f64) -> Result<S::Ok, S::Error> {
        self.0.serialize_f64(v)
    }
    fn serialize_char(self, v: char) -> Result<S::Ok, S::Error> {
        self.0.serialize_char(v)
    }
    fn serialize_str(self, v: &str) -> Result<S::Ok, S::Error> {
        self.0.serialize_str(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<S::Ok, S::Error> {
        self.0.serialize_bytes(v)
    }
    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_none()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<S::Ok, S::Error> {
        self.0.serialize_some(&Value(v))
    }
    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit()
    }
    fn serialize_unit_struct(self, n: &'static str) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit_struct(n)
    }
    /// A value: keeps its name.
    fn serialize_unit_variant(
        self,
        n: &'static str,
        i: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_unit_variant(n, i, variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        n: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0.serialize_newtype_struct(n, &Value(v))
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        n: &'static str,
        i: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.0
            .serialize_newtype_variant(n, i, name(variant), &Value(v))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        self.0.serialize_seq(len).map(Camel)
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        self.0.serialize_tuple(len).map(Camel)
    }
    fn serialize_tuple_struct(
        self,
        n: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        self.0.serialize_tuple_struct(n, len).map(Camel)
    }
    fn serialize_tuple_variant(
        self,
        n: &'static str,
        i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        self.0
            .serialize_tuple_variant(n, i, name(variant), len)
            .map(Camel)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        self.0.serialize_map(len).map(Camel)
    }
    fn serialize_struct(
        self,
        n: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        self.0.serialize_struct(n, len).map(Camel)
    }
    fn serialize_struct_variant(
        self,
        n: &'static str,
        i: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        self.0
            .serialize_struct_variant(n, i, name(variant), len)
            .map(Camel)
    }
    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

/// The compounds whose elements are values: each passes them on through
/// [`Camel`].
macro_rules! elements {
    ($($trait:ident :: $method:ident),*) => {$(
        impl<S: $trait> $trait for Camel<S> {
            type Ok = S::Ok;
            type Error = S::Error;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), S::Error> {
                self.0.$method(&Value(v))
            }
            fn end(self) -> Result<S::Ok, S::Error> {
                self.0.end()
            }
        }
    )*};
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// The core's types have no maps (the WIT has none); a map's keys, were
/// there one, are data and keep their spelling.
impl<S: SerializeMap> SerializeMap for Camel<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), S::Error> {
        self.0.serialize_key(k)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), S::Error> {
        self.0.serialize_value(&Value(v))
    }
    fn end(self) -> Result<S::Ok, S::Error> {
        self.0.end()
    }
}

/// The compounds with named fields: each field renamed (or, once, the
/// snapshot left out), its value passed on through [`Camel`].
macro_rules! fields {
    ($($trait:ident),*) => {$(
        impl<S: $trait> $trait for Camel<S> {
            type Ok = S::Ok;
            type Error = S::Error;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result<(), S::Error> {
                if apart(key, v).is_some() {
                    return self.0.serialize_field(key, &None::<()>);
                }
                self.0.serialize_field(name(key), &Value(v))
            }
            fn skip_field(&mut self, key: &'static str) -> Result<(), S::Error> {
                self.0.skip_field(name(key))
            }
            fn end(self) -> Result<S::Ok, S::Error> {
                self.0.end()
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::spelling::camel_keys;

    #[test]
    fn every_expected_outcome_is_written_as_the_text_rewrite_spells_it() {
        // Each expected file's reply read into the core's types and
        // written both ways: the serializer and the rewrite agree.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/expected");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            let file: serde_json::Value = serde_json::from_str(&text).unwrap();
            let reply: ctxpack_core::json::Reply =
                serde_json::from_value(file["reply"].clone()).unwrap();
            let kebab = serde_json::to_string(&reply).unwrap();
            assert_eq!(to_string(&reply).unwrap(), camel_keys(&kebab));
            n += 1;
        }
        assert!(n >= 40, "{n} expected files");
    }

    #[test]
    fn a_snapshot_written_apart_is_the_one_written_in_place() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/expected");
        for name in [
            "seed-002-happy-path.json",
            "handle-fallback-rag.json",
            "handle-policy-failure.json",
        ] {
            let text = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
            let file: serde_json::Value = serde_json::from_str(&text).unwrap();
            let reply: ctxpack_core::json::Reply =
                serde_json::from_value(file["reply"].clone()).unwrap();
            let text = to_string(&reply).unwrap();
            let whole: serde_json::Value = serde_json::from_str(&text).unwrap();
            let (head, apart) = to_string_apart(&reply).unwrap();
            let mut head: serde_json::Value = serde_json::from_str(&head).unwrap();
            let apart: serde_json::Value = serde_json::from_str(&apart.unwrap()).unwrap();
            let at = [
                "/pack/snapshot",
                "/handled/dispatch/fallback/pack/snapshot",
                "/failed/snapshot",
            ]
            .into_iter()
            .find(|p| head.pointer(p).is_some())
            .unwrap();
            let slot = head.pointer_mut(at).unwrap();
            assert_eq!(*slot, serde_json::Value::Null, "{name}");
            *slot = apart;
            assert_eq!(head, whole, "{name}");
            // Disarmed after: the next value is written whole.
            assert_eq!(to_string(&reply).unwrap(), text);
        }
    }
}

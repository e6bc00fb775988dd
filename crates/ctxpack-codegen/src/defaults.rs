//! Which fields the core fills in when a caller leaves them out, read from
//! the core's own `Deserialize` implementations, not from its source.
//!
//! A probing deserializer offers each struct the core reads a map of all
//! its fields, a made-up value each, but one: a field is required when its
//! struct says it is missing. Each enum is read once per case, so every
//! case's payload is reached. What is read is thrown away: only the struct
//! names, their fields and the required ones are kept.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A struct of the core as its `Deserialize` reads it.
#[derive(Debug, Default, Clone)]
pub struct Read {
    /// Its fields, as the JSON spells them.
    pub fields: Vec<&'static str>,
    /// The fields it cannot do without.
    pub required: BTreeSet<&'static str>,
    /// Whether it refuses a field it does not know.
    pub closed: bool,
}

/// Every struct reached from the roots, by its Rust name.
pub type Structs = BTreeMap<&'static str, Read>;

/// The structs the core reads from any of the JSON face's inputs and
/// outputs (a caller may hand a pack or a snapshot back).
pub fn core_structs() -> Result<Structs, String> {
    let mut probe = Prober::default();
    probe.root::<ctxpack_core::BuilderConfig>()?;
    probe.root::<ctxpack_core::AssembleRequest>()?;
    probe.root::<ctxpack_core::Candidate>()?;
    probe.root::<ctxpack_core::ContextPack>()?;
    probe.root::<ctxpack_core::Snapshot>()?;
    probe.root::<ctxpack_core::Handling>()?;
    probe.root::<ctxpack_core::SnapshotDiff>()?;
    probe.root::<ctxpack_core::Verdict>()?;
    Ok(probe.state.into_inner().structs)
}

#[derive(Default)]
struct State {
    structs: Structs,
    /// Which case each enum is read as, this round.
    round: usize,
    /// The most cases any enum has.
    most_cases: usize,
    /// The one field left out of its struct, this reading.
    omit: Option<(&'static str, &'static str)>,
    /// The struct offered a field it does not have, this reading.
    extra: Option<&'static str>,
}

/// The field no struct of the core has, offered to find which refuse it.
const UNKNOWN: &str = "ctxpack-codegen-unknown-field";

#[derive(Default)]
struct Prober {
    state: RefCell<State>,
}

impl Prober {
    /// Reads `T` once per enum case with every field given, reaching every
    /// struct; then once per field of each struct reached, that field left
    /// out: it is required if its struct says it is missing.
    fn root<T: for<'de> Deserialize<'de>>(&mut self) -> Result<(), String> {
        let mut rounds = 1;
        let mut round = 0;
        while round < rounds {
            self.read::<T>(round, None)?;
            rounds = self.state.get_mut().most_cases.max(1);
            round += 1;
        }
        let fields: Vec<(&'static str, &'static str)> = self
            .state
            .get_mut()
            .structs
            .iter()
            .flat_map(|(&name, read)| read.fields.iter().map(move |&f| (name, f)))
            .collect();
        for omit in fields {
            for round in 0..rounds {
                if self.read::<T>(round, Some(omit))? {
                    if let Some(read) = self.state.get_mut().structs.get_mut(omit.0) {
                        read.required.insert(omit.1);
                    }
                    break;
                }
            }
        }
        let names: Vec<&'static str> = self.state.get_mut().structs.keys().copied().collect();
        for name in names {
            for round in 0..rounds {
                if self.read_with::<T>(round, None, Some(name))? {
                    if let Some(read) = self.state.get_mut().structs.get_mut(name) {
                        read.closed = true;
                    }
                    break;
                }
            }
        }
        Ok(())
    }

    /// Reads `T` once: whether the field left out was said to be missing.
    fn read<T: for<'de> Deserialize<'de>>(
        &mut self,
        round: usize,
        omit: Option<(&'static str, &'static str)>,
    ) -> Result<bool, String> {
        self.read_with::<T>(round, omit, None)
    }

    /// Reads `T` once, `omit` left out of its struct and the unknown
    /// field offered to `extra`: whether the one was said to be missing or
    /// the other refused.
    fn read_with<T: for<'de> Deserialize<'de>>(
        &mut self,
        round: usize,
        omit: Option<(&'static str, &'static str)>,
        extra: Option<&'static str>,
    ) -> Result<bool, String> {
        let state = self.state.get_mut();
        state.round = round;
        state.omit = omit;
        state.extra = extra;
        match T::deserialize(Probe(&self.state)) {
            Ok(_) => Ok(false),
            Err(Error::Found) => Ok(true),
            Err(e) => Err(format!("{}: {e}", std::any::type_name::<T>())),
        }
    }
}

#[derive(Debug)]
enum Error {
    /// A struct reported this field missing.
    Missing(&'static str),
    /// The field left out was reported missing, or the unknown one
    /// refused.
    Found,
    /// A struct refused a field it does not know.
    Unknown(String),
    Other(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Missing(field) => write!(f, "missing field `{field}`"),
            Error::Found => f.write_str("the field left out is required"),
            Error::Unknown(field) => write!(f, "unknown field `{field}`"),
            Error::Other(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::Other(msg.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        Error::Missing(field)
    }

    fn unknown_field(field: &str, _: &'static [&'static str]) -> Self {
        Error::Unknown(field.to_owned())
    }
}

#[derive(Clone, Copy)]
struct Probe<'a>(&'a RefCell<State>);

macro_rules! zero {
    ($($method:ident => $visit:ident($($value:expr)?)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.$visit($($value)?)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = Error;

    /// A value read by its shape (a chat's messages, JSON text or the
    /// value itself) is offered as the WIT spells it: a string.
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_str("")
    }

    zero! {
        deserialize_bool => visit_bool(false),
        deserialize_i8 => visit_i8(0),
        deserialize_i16 => visit_i16(0),
        deserialize_i32 => visit_i32(0),
        deserialize_i64 => visit_i64(0),
        deserialize_u8 => visit_u8(0),
        deserialize_u16 => visit_u16(0),
        deserialize_u32 => visit_u32(0),
        deserialize_u64 => visit_u64(0),
        deserialize_f32 => visit_f32(0.0),
        deserialize_f64 => visit_f64(0.0),
        deserialize_char => visit_char('a'),
        deserialize_str => visit_str(""),
        deserialize_string => visit_string(String::new()),
        deserialize_bytes => visit_bytes(&[]),
        deserialize_byte_buf => visit_byte_buf(Vec::new()),
        deserialize_unit => visit_unit(),
        deserialize_identifier => visit_str(""),
        deserialize_ignored_any => visit_unit(),
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_seq(One(Some(self)))
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_map(Fields {
            probe: self,
            keys: Vec::new(),
            at: 0,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let keys: Vec<&'static str> = {
            let mut state = self.0.borrow_mut();
            let omit = state.omit;
            let extra = state.extra == Some(name);
            let read = state.structs.entry(name).or_default();
            read.fields = fields.to_vec();
            fields
                .iter()
                .copied()
                .filter(|&f| omit != Some((name, f)))
                .chain(extra.then_some(UNKNOWN))
                .collect()
        };
        match visitor.visit_map(Fields {
            probe: self,
            keys,
            at: 0,
        }) {
            Err(Error::Missing(field)) if self.0.borrow().omit == Some((name, field)) => {
                Err(Error::Found)
            }
            Err(Error::Missing(field)) => Err(Error::Other(format!(
                "{name} reports `{field}` missing though it was given"
            ))),
            Err(Error::Unknown(field))
                if field == UNKNOWN && self.0.borrow().extra == Some(name) =>
            {
                Err(Error::Found)
            }
            other => other,
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let case = {
            let mut state = self.0.borrow_mut();
            state.most_cases = state.most_cases.max(variants.len());
            variants
                .get(state.round % variants.len().max(1))
                .copied()
                .ok_or_else(|| Error::Other("an enum without cases".into()))?
        };
        visitor.visit_enum(Case { probe: self, case })
    }
}

/// A sequence of one probed item.
struct One<'a>(Option<Probe<'a>>);

impl<'de> de::SeqAccess<'de> for One<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0.take().map(|p| seed.deserialize(p)).transpose()
    }
}

/// A struct's fields found required so far, each a probed value.
struct Fields<'a> {
    probe: Probe<'a>,
    keys: Vec<&'static str>,
    at: usize,
}

impl<'de> de::MapAccess<'de> for Fields<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(&key) = self.keys.get(self.at) else {
            return Ok(None);
        };
        self.at += 1;
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        seed.deserialize(self.probe)
    }
}

/// One case of an enum, its payload probed.
struct Case<'a> {
    probe: Probe<'a>,
    case: &'static str,
}

impl<'de, 'a> de::EnumAccess<'de> for Case<'a> {
    type Error = Error;
    type Variant = Probe<'a>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Probe<'a>), Error> {
        let value = seed.deserialize(self.case.into_deserializer())?;
        Ok((value, self.probe))
    }
}

impl<'de> de::VariantAccess<'de> for Probe<'_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_tuple(self, len, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_struct(self, "", fields, visitor)
    }
}

//! The stores' protobuf messages (`proto/ctxpack/stores/v1/stores.proto`,
//! written by `ctxpack-codegen` from the WIT) read and written through the
//! core's own JSON, so no type of the WIT is restated here: a call's JSON
//! becomes its method's request, and a reply becomes the answer's JSON,
//! which the core reads and checks as it reads any host's answer.
//!
//! The mapping is the generator's: a JSON key `token-count` is the field
//! `token_count`; an enum's case `relevant-knowledge` of `section` is
//! `SECTION_RELEVANT_KNOWLEDGE`, and its 0 (`…_UNSPECIFIED`) is refused; a
//! variant is a message with one `oneof kind` (`"allow"` is `allow: Unit`,
//! `{"deny": "why"}` is `deny: "why"`); an unset `optional` field is left
//! out.

use prost_reflect::{
    DescriptorError, DescriptorPool, DynamicMessage, EnumDescriptor, FieldDescriptor, Kind,
    MessageDescriptor, ReflectMessage, Value,
};
use serde_json::{Map, Value as Json};
use std::sync::OnceLock;

/// The compiled `.proto` files of the crate, as the build wrote them.
const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/descriptors.bin"));

/// Why a message cannot be written from JSON or read into it; every case
/// but the first names the path (`request.limit`, `reply.answer[0]`).
#[derive(Debug, thiserror::Error)]
pub enum ProtoJsonError {
    /// The compiled descriptors do not load.
    #[error("{0}")]
    Descriptors(&'static DescriptorError),
    /// A variant's object without a case.
    #[error("{path}: no case")]
    NoCase {
        /// Where.
        path: String,
    },
    /// A variant written as neither a case's name nor an object of one.
    #[error("{path}: not a case of `{of}`: {json}")]
    NotACase {
        /// Where.
        path: String,
        /// The variant.
        of: String,
        /// What was there.
        json: Json,
    },
    /// A name that is none of a variant's or an enum's cases.
    #[error("{path}: `{case}` is not a case of `{of}`")]
    UnknownCase {
        /// Where.
        path: String,
        /// The name given.
        case: String,
        /// The variant or enum.
        of: String,
    },
    /// A case that carries a value, given none.
    #[error("{path}: needs a value")]
    NeedsValue {
        /// Where.
        path: String,
    },
    /// A message's JSON that is not an object.
    #[error("{path}: not an object")]
    NotAnObject {
        /// Where.
        path: String,
    },
    /// A repeated field's JSON that is not a list.
    #[error("{path}: not a list")]
    NotAList {
        /// Where.
        path: String,
    },
    /// A scalar's JSON of the wrong kind.
    #[error("{path}: {json} is not a {kind:?}")]
    WrongKind {
        /// Where.
        path: String,
        /// What was there.
        json: Json,
        /// The field's kind.
        kind: Kind,
    },
    /// A `bytes` field, which the core's JSON never has.
    #[error("{path}: bytes have no JSON spelling here")]
    Bytes {
        /// Where.
        path: String,
    },
    /// A variant's message with no case set.
    #[error("{path}: no case of `{of}` is set")]
    NoCaseSet {
        /// Where.
        path: String,
        /// The variant.
        of: String,
    },
    /// An enum left at its 0 (`…_UNSPECIFIED`).
    #[error("{path}: unspecified (a `{of}` is required)")]
    Unspecified {
        /// Where.
        path: String,
        /// The enum.
        of: String,
    },
    /// A value the core's JSON has no spelling for.
    #[error("{path}: {value:?} has no JSON spelling here")]
    NoSpelling {
        /// Where.
        path: String,
        /// The value.
        value: Value,
    },
}

/// The descriptors of every message the service's `.proto` files define.
pub fn pool() -> Result<&'static DescriptorPool, ProtoJsonError> {
    static POOL: OnceLock<Result<DescriptorPool, DescriptorError>> = OnceLock::new();
    POOL.get_or_init(|| DescriptorPool::decode(DESCRIPTORS))
        .as_ref()
        .map_err(ProtoJsonError::Descriptors)
}

/// `token-count` for `token_count`.
fn kebab(field: &str) -> String {
    field.replace('_', "-")
}

/// A message of the variant shape: one oneof holding every field.
fn is_variant(m: &MessageDescriptor) -> bool {
    // proto3's `optional` makes a synthetic oneof per field: not a case.
    let mut oneofs = m.oneofs().filter(|o| !o.is_synthetic());
    match (oneofs.next(), oneofs.next()) {
        (Some(o), None) => o.fields().count() == m.fields().count(),
        _ => false,
    }
}

fn is_unit(m: &MessageDescriptor) -> bool {
    m.fields().count() == 0
}

/// `TRUST_TIER_` for the enum whose 0 is `TRUST_TIER_UNSPECIFIED`.
fn enum_prefix(e: &EnumDescriptor) -> String {
    e.get_value(0)
        .and_then(|v| v.name().strip_suffix("UNSPECIFIED").map(str::to_owned))
        .unwrap_or_default()
}

/// The message `desc` written from `json`; an error names the path.
pub fn to_message(
    json: &Json,
    desc: &MessageDescriptor,
    path: &str,
) -> Result<DynamicMessage, ProtoJsonError> {
    let mut msg = DynamicMessage::new(desc.clone());
    if is_variant(desc) {
        let (case, payload) = match json {
            Json::String(case) => (case.as_str(), None),
            Json::Object(o) if o.len() == 1 => match o.iter().next() {
                Some((case, payload)) => (case.as_str(), Some(payload)),
                None => return Err(ProtoJsonError::NoCase { path: path.into() }),
            },
            other => {
                return Err(ProtoJsonError::NotACase {
                    path: path.into(),
                    of: desc.name().into(),
                    json: other.clone(),
                });
            }
        };
        let field = desc
            .get_field_by_name(&case.replace('-', "_"))
            .ok_or_else(|| ProtoJsonError::UnknownCase {
                path: path.into(),
                case: case.into(),
                of: desc.name().into(),
            })?;
        let value = match (field.kind(), payload) {
            (Kind::Message(m), None) if is_unit(&m) => Value::Message(DynamicMessage::new(m)),
            (_, Some(p)) => to_value(p, &field, &format!("{path}.{case}"))?,
            (_, None) => {
                return Err(ProtoJsonError::NeedsValue {
                    path: format!("{path}.{case}"),
                });
            }
        };
        msg.set_field(&field, value);
        return Ok(msg);
    }
    let Json::Object(object) = json else {
        return Err(ProtoJsonError::NotAnObject { path: path.into() });
    };
    for field in desc.fields() {
        let key = kebab(field.name());
        match object.get(&key) {
            None | Some(Json::Null) => {}
            Some(v) => msg.set_field(&field, to_value(v, &field, &format!("{path}.{key}"))?),
        }
    }
    Ok(msg)
}

fn to_value(json: &Json, field: &FieldDescriptor, path: &str) -> Result<Value, ProtoJsonError> {
    if field.is_list() {
        let Json::Array(items) = json else {
            return Err(ProtoJsonError::NotAList { path: path.into() });
        };
        return items
            .iter()
            .enumerate()
            .map(|(i, v)| single(v, &field.kind(), &format!("{path}[{i}]")))
            .collect::<Result<_, _>>()
            .map(Value::List);
    }
    single(json, &field.kind(), path)
}

fn single(json: &Json, kind: &Kind, path: &str) -> Result<Value, ProtoJsonError> {
    let bad = || ProtoJsonError::WrongKind {
        path: path.into(),
        json: json.clone(),
        kind: kind.clone(),
    };
    Ok(match kind {
        Kind::Message(m) => Value::Message(to_message(json, m, path)?),
        Kind::Enum(e) => {
            let case = json.as_str().ok_or_else(bad)?;
            let name = format!(
                "{}{}",
                enum_prefix(e),
                case.replace('-', "_").to_uppercase()
            );
            let v = e
                .get_value_by_name(&name)
                .ok_or_else(|| ProtoJsonError::UnknownCase {
                    path: path.into(),
                    case: case.into(),
                    of: e.name().into(),
                })?;
            Value::EnumNumber(v.number())
        }
        Kind::String => Value::String(json.as_str().ok_or_else(bad)?.to_owned()),
        Kind::Bool => Value::Bool(json.as_bool().ok_or_else(bad)?),
        Kind::Double => Value::F64(json.as_f64().ok_or_else(bad)?),
        Kind::Float => Value::F32(json.as_f64().ok_or_else(bad)? as f32),
        Kind::Uint32 | Kind::Fixed32 => Value::U32(
            json.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(bad)?,
        ),
        Kind::Uint64 | Kind::Fixed64 => Value::U64(json.as_u64().ok_or_else(bad)?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => Value::I32(
            json.as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .ok_or_else(bad)?,
        ),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Value::I64(json.as_i64().ok_or_else(bad)?),
        Kind::Bytes => return Err(ProtoJsonError::Bytes { path: path.into() }),
    })
}

/// `msg` as the core's JSON; an error names the path in the message's own
/// (snake_case) spelling.
pub fn from_message(msg: &DynamicMessage, path: &str) -> Result<Json, ProtoJsonError> {
    let desc = msg.descriptor();
    if is_variant(&desc) {
        let Some(field) = desc.fields().find(|f| msg.has_field(f)) else {
            return Err(ProtoJsonError::NoCaseSet {
                path: path.into(),
                of: desc.name().into(),
            });
        };
        let case = kebab(field.name());
        if let Kind::Message(m) = field.kind()
            && is_unit(&m)
        {
            return Ok(Json::String(case));
        }
        let value = from_value(
            &msg.get_field(&field),
            &field.kind(),
            &format!("{path}.{}", field.name()),
        )?;
        let mut o = Map::new();
        o.insert(case, value);
        return Ok(Json::Object(o));
    }
    let mut o = Map::new();
    for field in desc.fields() {
        if field.supports_presence() && !msg.has_field(&field) {
            continue;
        }
        let at = format!("{path}.{}", field.name());
        let value = msg.get_field(&field);
        let json = match value.as_ref() {
            Value::List(items) => Json::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| from_value(v, &field.kind(), &format!("{at}[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            v => from_value(v, &field.kind(), &at)?,
        };
        o.insert(kebab(field.name()), json);
    }
    Ok(Json::Object(o))
}

fn from_value(value: &Value, kind: &Kind, path: &str) -> Result<Json, ProtoJsonError> {
    Ok(match (value, kind) {
        (Value::Message(m), _) => from_message(m, path)?,
        (Value::EnumNumber(n), Kind::Enum(e)) => {
            let v =
                e.get_value(*n)
                    .filter(|_| *n != 0)
                    .ok_or_else(|| ProtoJsonError::Unspecified {
                        path: path.into(),
                        of: e.name().into(),
                    })?;
            let prefix = enum_prefix(e);
            let case = v.name().strip_prefix(&prefix).unwrap_or(v.name());
            Json::String(case.to_lowercase().replace('_', "-"))
        }
        (Value::String(s), _) => Json::String(s.clone()),
        (Value::Bool(b), _) => Json::Bool(*b),
        (Value::F64(f), _) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        (Value::F32(f), _) => {
            serde_json::Number::from_f64(f64::from(*f)).map_or(Json::Null, Json::Number)
        }
        (Value::U32(n), _) => Json::from(*n),
        (Value::U64(n), _) => Json::from(*n),
        (Value::I32(n), _) => Json::from(*n),
        (Value::I64(n), _) => Json::from(*n),
        (other, _) => {
            return Err(ProtoJsonError::NoSpelling {
                path: path.into(),
                value: other.clone(),
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(name: &str) -> MessageDescriptor {
        pool()
            .unwrap()
            .get_message_by_name(&format!("ctxpack.stores.v1.{name}"))
            .unwrap()
    }

    #[test]
    fn a_candidate_goes_there_and_back() {
        let candidate = json!({
            "id": "kb-1", "section": "relevant-knowledge", "text": "Invoices",
            "provenance": {"source-kind": "chunk", "reference": "doc#1", "source-version": "v1"},
            "trust": "trusted", "score": 0.5, "token-count": 3
        });
        let m = to_message(&candidate, &message("Candidate"), "candidate").unwrap();
        assert_eq!(from_message(&m, "candidate").unwrap(), candidate);
        // Unset optional fields stay unset; a string's default is kept.
        let bare = json!({"id": "", "section": "current-task", "text": "", "trust": "system"});
        let m = to_message(&bare, &message("Candidate"), "c").unwrap();
        assert_eq!(from_message(&m, "c").unwrap(), bare);
    }

    #[test]
    fn variants_and_enums_read_as_the_core_writes_them() {
        for verdict in [
            json!("allow"),
            json!({"deny": "secret"}),
            json!({"redact": "[x]"}),
        ] {
            let m = to_message(&verdict, &message("Verdict"), "v").unwrap();
            assert_eq!(from_message(&m, "v").unwrap(), verdict);
        }
        for tokenizer in [
            json!("o200k-base"),
            json!({"chars-per-token": 4}),
            json!({"named": "llama-3"}),
        ] {
            let m = to_message(&tokenizer, &message("Tokenizer"), "t").unwrap();
            assert_eq!(from_message(&m, "t").unwrap(), tokenizer);
        }
        let err = to_message(&json!("maybe"), &message("Verdict"), "v")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`maybe` is not a case of `Verdict`"), "{err}");
    }

    #[test]
    fn an_unset_enum_or_case_is_refused_naming_the_field() {
        let m = DynamicMessage::new(message("Candidate"));
        let err = from_message(&m, "answer[0]").unwrap_err().to_string();
        assert_eq!(
            err,
            "answer[0].section: unspecified (a `Section` is required)"
        );
        let m = DynamicMessage::new(message("Verdict"));
        let err = from_message(&m, "answer[2]").unwrap_err().to_string();
        assert_eq!(err, "answer[2]: no case of `Verdict` is set");
    }
}

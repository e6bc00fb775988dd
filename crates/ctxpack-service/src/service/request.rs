//! Reading and checking what an assembly is given: the ids from the path
//! and headers, the request body (its limits, no NUL in a text, its
//! context bound to the path), and each store's answer.

use super::AssembleError;
use ctxpack_core::text::cut;
use ctxpack_core::{Answer, AssembleRequest, Call, HostError};

/// Checks an id from the path or a header: non-empty, at most 200
/// characters, no control characters.
pub fn check_id(field: &str, v: &str) -> Result<(), AssembleError> {
    match crate::ids::id_error(field, v) {
        Some(e) => Err(AssembleError::Invalid(e)),
        None => Ok(()),
    }
}

/// Reads the request body: the core's assemble request, kebab-case keys,
/// exactly one JSON object (serde would read an array as the fields by
/// position, and stop reading after the object without a look at what
/// follows).
pub fn parse_request(body: &[u8]) -> Result<AssembleRequest, AssembleError> {
    let first = body.iter().find(|b| !b" \t\r\n".contains(b));
    if first != Some(&b'{') {
        let what = match first {
            None => "empty",
            Some(b'[') => "an array",
            Some(_) => "not a JSON object",
        };
        return Err(AssembleError::Invalid(format!(
            "request: the body is {what}; it must be one JSON object"
        )));
    }
    let de = &mut serde_json::Deserializer::from_slice(body);
    let request = match parse_with(de) {
        Err(AssembleError::Invalid(why)) if why.contains("invalid type: floating point") => {
            return integral(body).ok_or(AssembleError::Invalid(why))?;
        }
        other => other?,
    };
    de.end().map_err(|_| {
        AssembleError::Invalid(
            "request: the body holds more than one JSON object (bytes follow the request's closing brace)"
                .to_owned(),
        )
    })?;
    Ok(request)
}

/// The request in `body` read again with every whole number written with
/// a fraction (`8000.0`, `1e3`) as the integer it is — JSON has one kind
/// of number, and the document's integers admit them — but in `chat`,
/// whose messages are sent on as they came. `None` when that changes
/// nothing (the number had a fraction, or was not where an integer goes).
fn integral(body: &[u8]) -> Option<Result<AssembleRequest, AssembleError>> {
    fn whole(v: &mut serde_json::Value) -> bool {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                // 2^64 is the first float past u64; -2^63 is i64's least.
                let fits = f.fract() == 0.0
                    && (-9.223_372_036_854_776e18..1.844_674_407_370_955_2e19).contains(&f);
                if fits {
                    *v = if f >= 0.0 {
                        serde_json::Value::from(f as u64)
                    } else {
                        serde_json::Value::from(f as i64)
                    };
                }
                fits
            }
            serde_json::Value::Array(a) => a.iter_mut().fold(false, |c, v| whole(v) | c),
            serde_json::Value::Object(m) => m.values_mut().fold(false, |c, v| whole(v) | c),
            _ => false,
        }
    }
    // The fields as they came, so `chat` keeps its bytes.
    let fields: std::collections::BTreeMap<String, Box<serde_json::value::RawValue>> =
        serde_json::from_slice(body).ok()?;
    let mut changed = false;
    let mut out = serde_json::Map::new();
    let mut chat = None;
    for (key, raw) in fields {
        if key == "chat" {
            chat = Some(raw);
            continue;
        }
        let mut v: serde_json::Value = serde_json::from_str(raw.get()).ok()?;
        changed |= whole(&mut v);
        out.insert(key, v);
    }
    if !changed {
        return None;
    }
    let mut text = serde_json::to_string(&out).ok()?;
    if let Some(chat) = chat {
        text.pop();
        if !out.is_empty() {
            text.push(',');
        }
        text.push_str("\"chat\":");
        text.push_str(chat.get());
        text.push('}');
    }
    Some(parse_with(&mut serde_json::Deserializer::from_slice(
        text.as_bytes(),
    )))
}

fn parse_with(
    de: &mut serde_json::Deserializer<serde_json::de::SliceRead<'_>>,
) -> Result<AssembleRequest, AssembleError> {
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        // serde_json's position is in text the caller may not have
        // written (a gRPC field's JSON); the path says where.
        let inner = e.into_inner().to_string();
        let mut inner = match inner.rfind(" at line ") {
            Some(at) => cut(&inner, ..at).to_owned(),
            None => inner,
        };
        // serde quotes the value it could not take: a short prefix of it.
        if inner.len() > 200 {
            inner.truncate(inner.floor_char_boundary(200));
            inner.push('…');
        }
        AssembleError::Invalid(if path == "." {
            format!("request: {inner}")
        } else {
            format!("request.{path}: {inner}")
        })
    })
}

/// Where in `v` a text holds a NUL character (`.query`, `[2].text`), if
/// anywhere. PostgreSQL's text cannot hold one, so SQLite must not either,
/// and a model's tokenizer has no use for it.
fn nul_path(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) if s.contains('\0') => Some(String::new()),
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| nul_path(v).map(|p| format!("[{i}]{p}"))),
        serde_json::Value::Object(m) => m
            .iter()
            .find_map(|(k, v)| nul_path(v).map(|p| format!(".{k}{p}"))),
        _ => None,
    }
}

const NUL: &str = "holds a NUL character (U+0000), which no text may";

/// Refuses a NUL character in any text of the request, naming where.
pub fn no_nul(r: &AssembleRequest) -> Result<(), AssembleError> {
    let v = serde_json::to_value(r).map_err(|e| AssembleError::Invalid(e.to_string()))?;
    match nul_path(&v) {
        Some(path) => Err(AssembleError::Invalid(format!("request{path}: {NUL}"))),
        None => Ok(()),
    }
}

/// A store's answer past the limits, or with a NUL in a text, is that
/// store's failure (naming why), as any malformed answer is: the assembly
/// degrades, or fails for the policy.
pub(super) fn checked(call: &Call<'_>, answer: Answer, most: usize) -> Answer {
    let bad = match &answer {
        Answer::Candidates(Ok(c)) if c.len() > most => Some(format!(
            "answered {} candidates, at most {most} (limits.max-candidates)",
            c.len()
        )),
        Answer::Candidates(Ok(c)) => serde_json::to_value(c)
            .ok()
            .and_then(|v| nul_path(&v))
            .map(|p| format!("answer{p}: {NUL}")),
        Answer::Summaries(Ok(s)) => s
            .iter()
            .position(|t| t.contains('\0'))
            .map(|i| format!("answer[{i}]: {NUL}")),
        _ => None,
    };
    match bad {
        Some(message) => call.failed(HostError::new(call.capability(), message)),
        None => answer,
    }
}

/// Sets `field` from the path or header, refusing a body that says
/// otherwise.
pub(super) fn bind(
    slot: &mut Option<String>,
    field: &str,
    from: &str,
    value: &str,
) -> Result<(), AssembleError> {
    match slot {
        Some(given) if given != value => Err(AssembleError::Invalid(format!(
            "request.context.{field}: {} differs from the {from} ({})",
            crate::ids::echo(given),
            crate::ids::echo(value)
        ))),
        _ => {
            *slot = Some(value.to_owned());
            Ok(())
        }
    }
}

//! Reading and checking what an assembly is given: the ids from the path
//! and headers, the request body (its limits, no NUL in a text, its
//! context bound to the path), and each store's answer.

use super::AssembleError;
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
    let request = parse_with(de)?;
    de.end().map_err(|_| {
        AssembleError::Invalid(
            "request: the body holds more than one JSON object (bytes follow the request's closing brace)"
                .to_owned(),
        )
    })?;
    Ok(request)
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
            Some(at) => inner[..at].to_owned(),
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
pub(super) fn no_nul(r: &AssembleRequest) -> Result<(), AssembleError> {
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

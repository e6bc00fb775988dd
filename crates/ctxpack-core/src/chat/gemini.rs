//! Gemini's `contents`: `user` and `model` contents of parts — `text`
//! (a thought's too), `inlineData` and `fileData` images, `functionCall`
//! and `functionResponse` — with the system text apart
//! (`systemInstruction`).
//!
//! A content that holds `functionResponse` parts is a tool turn. A call
//! without an `id` is answered by the next response of its name. Charged:
//! each part's text, a response's response (as JSON) its text; a call's
//! name and arguments (as JSON), a response's name, their ids where
//! given; images by the model's rule. A thought's signature is not
//! counted.

use super::{Msg, Pricing, Shaped, Turn, canonical, images::Image, kind, not_carried};
use crate::error::Error;
use crate::types::Role;
use serde_json::Value;

const CARRIED: &str =
    "text, inlineData and fileData images, functionCall and functionResponse parts";

pub(crate) fn read(msgs: &[Msg], pricing: &mut Pricing) -> Result<Shaped, Error> {
    let mut turns = Vec::with_capacity(msgs.len());
    // Calls made without an id, by name, in order: (name, the id given).
    let mut open: Vec<(String, String)> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = match m.str("role") {
            // A content of function responses is a tool turn (below).
            Some("user" | "function" | "tool") | None => Role::User,
            Some("model") => Role::Assistant,
            Some(other) => {
                return Err(Error::invalid(
                    m.at("role"),
                    format!(
                        "{other:?} is not a role of Gemini's contents (user, model; the system text goes apart, as `systemInstruction`)"
                    ),
                ));
            }
        };
        let Some(Value::Array(parts)) = m.v.get("parts") else {
            return Err(Error::invalid(
                m.at("parts"),
                format!(
                    "expected the content's parts (a list), got {}",
                    m.v.get("parts").map_or("nothing", kind)
                ),
            ));
        };
        let mut turn = Turn {
            role: Some(role),
            first: i,
            end: i + 1,
            ..Turn::default()
        };
        for (j, part) in parts.iter().enumerate() {
            let at = format!("{}.parts[{j}]", m.at);
            let Value::Object(p) = part else {
                return Err(Error::invalid(
                    at,
                    format!("expected a part, got {}", kind(part)),
                ));
            };
            if let Some(Value::String(text)) = p.get("text") {
                match p.get("thought") {
                    Some(Value::Bool(true)) => turn.pieces.push(text.clone()),
                    _ => turn.text.push(text.clone()),
                }
            } else if let Some(data) = p.get("inlineData").or_else(|| p.get("inline_data")) {
                let mime = data
                    .get("mimeType")
                    .or_else(|| data.get("mime_type"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !mime.starts_with("image/") {
                    return Err(not_carried(&at, "inline part", mime, CARRIED));
                }
                let bytes = data.get("data").and_then(Value::as_str).unwrap_or_default();
                pricing.image(&mut turn, Image::inline(bytes, false), &at)?;
            } else if let Some(file) = p.get("fileData").or_else(|| p.get("file_data")) {
                let mime = file
                    .get("mimeType")
                    .or_else(|| file.get("mime_type"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !mime.starts_with("image/") {
                    return Err(not_carried(&at, "file part", mime, CARRIED));
                }
                pricing.image(&mut turn, Image::default(), &at)?;
            } else if let Some(call) = p.get("functionCall").or_else(|| p.get("function_call")) {
                if role != Role::Assistant {
                    return Err(Error::invalid(
                        at,
                        "a functionCall belongs in a model content",
                    ));
                }
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                let args = call.get("args").map(canonical).unwrap_or_default();
                let id = match call.get("id").and_then(Value::as_str) {
                    Some(id) => {
                        turn.pieces.push(id.to_owned());
                        id.to_owned()
                    }
                    None => {
                        let made = format!("{name}@{i}.{j}");
                        open.push((name.to_owned(), made.clone()));
                        made
                    }
                };
                turn.pieces.extend([name.to_owned(), args.clone()]);
                turn.calls.push((id, name.to_owned(), args));
            } else if let Some(response) = p
                .get("functionResponse")
                .or_else(|| p.get("function_response"))
            {
                let name = response
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let id = match response.get("id").and_then(Value::as_str) {
                    Some(id) => {
                        turn.pieces.push(id.to_owned());
                        id.to_owned()
                    }
                    None => match open.iter().position(|(n, _)| n == name) {
                        Some(k) => open.remove(k).1,
                        None => format!("{name}@unanswered"),
                    },
                };
                // The response is what the model reads of the result: its
                // text (as JSON), written into the flat text and cleared
                // by compaction; the name is sent beside it.
                let body = response.get("response").map(canonical).unwrap_or_default();
                turn.text.push(body);
                turn.pieces.push(name.to_owned());
                turn.answers.push(id);
            } else if p.contains_key("thoughtSignature") || p.contains_key("thought_signature") {
                // A signature alone: sent back as given, not counted.
            } else {
                let what = p.keys().next().map_or("empty", String::as_str);
                return Err(not_carried(&at, "part", what, CARRIED));
            }
        }
        if !turn.answers.is_empty() {
            turn.role = Some(Role::Tool);
        }
        turns.push(turn);
    }
    Ok(Shaped {
        turns,
        system: String::new(),
        system_role: None,
    })
}

//! OpenAI's Chat Completions messages: `role` (`system`, `developer`,
//! `user`, `assistant`, `tool`), `content` as a string or parts (`text`,
//! `image_url`, `refusal`), `name`, `tool_calls` (parallel ones) and
//! `tool_call_id`.
//!
//! Charged as OpenAI's count of a message takes it (the cookbook's
//! `num_tokens_from_messages`): every field's value, the role's in the
//! message overhead, `name` with one token more; a value that is not text
//! (`tool_calls`) as its JSON, and each image by the model's rule.

use super::{Msg, Pricing, Shaped, Turn, canonical, images::Image, kind, not_carried};
use crate::error::Error;
use crate::types::Role;
use serde_json::Value;

const CARRIED: &str = "text, image_url and refusal parts";

pub(crate) fn read(msgs: &[Msg], pricing: &mut Pricing) -> Result<Shaped, Error> {
    let mut turns = Vec::with_capacity(msgs.len());
    let (mut system, mut system_role) = (Vec::new(), None);
    for (i, m) in msgs.iter().enumerate() {
        let role_name = m.need("role", "the message's role")?;
        let role = match role_name {
            "system" | "developer" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            "function" => {
                return Err(Error::invalid(
                    m.at("role"),
                    "the `function` role is OpenAI's deprecated one, without a call id to keep it with its call: send `tool` messages",
                ));
            }
            other => {
                return Err(Error::invalid(
                    m.at("role"),
                    format!(
                        "{other:?} is not a role of OpenAI's messages (system, developer, user, assistant, tool)"
                    ),
                ));
            }
        };
        let mut turn = Turn {
            role: Some(role),
            first: i,
            end: i + 1,
            ..Turn::default()
        };
        content(m, &mut turn, pricing)?;
        if role == Role::System && turns.is_empty() {
            // The system messages that lead the list: the system text.
            if turn.fixed > 0 {
                return Err(Error::invalid(
                    m.at("content"),
                    "a system message's parts must be text",
                ));
            }
            system.push(turn.joined());
            system_role.get_or_insert_with(|| role_name.to_owned());
            continue;
        }
        for (key, value) in m.v {
            match key.as_str() {
                "role" | "content" => {}
                "tool_calls" if role == Role::Assistant => {
                    calls(m, value, &mut turn)?;
                    turn.pieces.push(canonical(value));
                }
                "tool_call_id" if role == Role::Tool => {
                    let id = m.need(key, "the id of the call it answers")?;
                    turn.answers.push(id.to_owned());
                    turn.pieces.push(id.to_owned());
                }
                "name" => {
                    turn.pieces.push(m.need(key, "a name")?.to_owned());
                    turn.fixed = turn.fixed.saturating_add(1);
                }
                _ => match value {
                    Value::Null => {}
                    Value::String(s) => turn.pieces.push(s.clone()),
                    other => turn.pieces.push(canonical(other)),
                },
            }
        }
        if role == Role::Tool && turn.answers.is_empty() {
            return Err(Error::invalid(
                m.at("tool_call_id"),
                "a tool message answers a call by its id",
            ));
        }
        turns.push(turn);
    }
    Ok(Shaped {
        turns,
        system: system.join("\n\n"),
        system_role,
    })
}

/// The message's content: its text, and its images priced.
fn content(m: &Msg, turn: &mut Turn, pricing: &mut Pricing) -> Result<(), Error> {
    match m.v.get("content") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) => {
            turn.text.push(s.clone());
            Ok(())
        }
        Some(Value::Array(parts)) => {
            for (j, part) in parts.iter().enumerate() {
                let at = format!("{}.content[{j}]", m.at);
                let kind_of = part.get("type").and_then(Value::as_str);
                match (kind_of, part) {
                    (Some("text"), _) => turn.text.push(text(part, "text", &at)?),
                    (Some("refusal"), _) => turn.text.push(text(part, "refusal", &at)?),
                    (Some("image_url"), _) => {
                        let (url, low) = match part.get("image_url") {
                            Some(Value::String(u)) => (u.as_str(), false),
                            Some(Value::Object(o)) => (
                                o.get("url").and_then(Value::as_str).unwrap_or(""),
                                o.get("detail").and_then(Value::as_str) == Some("low"),
                            ),
                            _ => ("", false),
                        };
                        pricing.image(turn, Image::url(url, low), &at)?;
                    }
                    (Some(other), _) => {
                        return Err(not_carried(&at, "part", other, CARRIED));
                    }
                    (None, Value::String(s)) => turn.text.push(s.clone()),
                    (None, other) => {
                        return Err(Error::invalid(
                            at,
                            format!(
                                "expected a content part with its `type`, got {}",
                                kind(other)
                            ),
                        ));
                    }
                }
            }
            Ok(())
        }
        Some(other) => Err(Error::invalid(
            m.at("content"),
            format!("expected a string or a list of parts, got {}", kind(other)),
        )),
    }
}

/// A part's text at `key`.
fn text(part: &Value, key: &str, at: &str) -> Result<String, Error> {
    match part.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(Error::invalid(
            format!("{at}.{key}"),
            "expected the part's text (a string)",
        )),
    }
}

/// An assistant message's `tool_calls`: each call's id, name and
/// arguments.
fn calls(m: &Msg, value: &Value, turn: &mut Turn) -> Result<(), Error> {
    let Value::Array(calls) = value else {
        return Err(Error::invalid(
            m.at("tool_calls"),
            format!("expected a list of calls, got {}", kind(value)),
        ));
    };
    for (j, call) in calls.iter().enumerate() {
        let at = format!("{}.tool_calls[{j}]", m.at);
        let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
        if id.is_empty() {
            return Err(Error::invalid(
                format!("{at}.id"),
                "a tool call needs its id: its results answer it by the id",
            ));
        }
        let f = call.get("function").or_else(|| call.get("custom"));
        let name = f
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let arguments = match f.and_then(|f| f.get("arguments").or_else(|| f.get("input"))) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => canonical(other),
            None => String::new(),
        };
        turn.calls.push((id.to_owned(), name.to_owned(), arguments));
    }
    Ok(())
}

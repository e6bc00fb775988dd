//! OpenAI's Responses API `input` items: messages (`role`, `content` as a
//! string or `input_text`, `output_text`, `refusal` and `input_image`
//! parts), `function_call`, `function_call_output` and `reasoning`, with
//! the system text apart (`instructions`) or as the system and developer
//! messages that lead the list.
//!
//! The items of one model reply — reasoning, an assistant message, its
//! function calls, in a row — are one turn: the API wants a call's
//! reasoning sent with it. Each `function_call_output` is a tool turn.
//! Charged: each part's text, a call's id, name and arguments, an
//! output's call id, a reasoning item's summary, text and encrypted
//! content; images by the model's rule.

use super::{Msg, Pricing, Shaped, Turn, images::Image, kind, not_carried};
use crate::error::Error;
use crate::types::Role;
use serde_json::Value;

const CARRIED: &str = "messages (input_text, output_text, refusal and input_image parts), function_call, function_call_output and reasoning items";

pub(crate) fn read(msgs: &[Msg], pricing: &mut Pricing) -> Result<Shaped, Error> {
    let mut turns: Vec<Turn> = Vec::with_capacity(msgs.len());
    let (mut system, mut system_role) = (Vec::new(), None);
    for (i, m) in msgs.iter().enumerate() {
        let kind_of = m.str("type").unwrap_or("message");
        // A turn of its own, or the model reply it continues.
        let (role, joins) = match kind_of {
            "message" => match m.need("role", "the message's role")? {
                "system" | "developer" => (Role::System, false),
                "user" => (Role::User, false),
                "assistant" => (Role::Assistant, true),
                other => {
                    return Err(Error::invalid(
                        m.at("role"),
                        format!(
                            "{other:?} is not a role of the Responses API (system, developer, user, assistant)"
                        ),
                    ));
                }
            },
            "function_call" | "reasoning" => (Role::Assistant, true),
            "function_call_output" => (Role::Tool, false),
            other => {
                return Err(not_carried(&m.at("type"), "item", other, CARRIED));
            }
        };
        let continues = joins
            && turns
                .last()
                .is_some_and(|t| t.role == Some(Role::Assistant) && t.end == i);
        if !continues {
            turns.push(Turn {
                role: Some(role),
                first: i,
                end: i,
                ..Turn::default()
            });
        }
        let Some(turn) = turns.last_mut() else {
            continue;
        };
        turn.end = i + 1;
        match kind_of {
            "message" => content(m, m.v.get("content"), "content", turn, pricing)?,
            "function_call" => {
                let id = m.need("call_id", "the call's id")?.to_owned();
                let name = m.need("name", "the function's name")?.to_owned();
                let arguments = m.str("arguments").unwrap_or_default().to_owned();
                turn.pieces
                    .extend([id.clone(), name.clone(), arguments.clone()]);
                turn.calls.push((id, name, arguments));
            }
            "function_call_output" => {
                let id = m
                    .need("call_id", "the id of the call it answers")?
                    .to_owned();
                turn.pieces.push(id.clone());
                turn.answers.push(id);
                content(m, m.v.get("output"), "output", turn, pricing)?;
            }
            _ => {
                // Reasoning: its summary and text, and what it holds
                // encrypted.
                for key in ["summary", "content"] {
                    if let Some(Value::Array(parts)) = m.v.get(key) {
                        for part in parts {
                            if let Some(Value::String(t)) = part.get("text") {
                                turn.pieces.push(t.clone());
                            }
                        }
                    }
                }
                if let Some(Value::String(e)) = m.v.get("encrypted_content") {
                    turn.pieces.push(e.clone());
                    pricing.bounded.push(format!(
                        "{}: encrypted reasoning, charged as its encrypted text",
                        m.at("encrypted_content")
                    ));
                }
            }
        }
        if role == Role::System && turns.len() == 1 {
            // The system messages that lead the list: the system text.
            let Some(lead) = turns.pop() else { continue };
            if lead.fixed > 0 {
                return Err(Error::invalid(
                    m.at("content"),
                    "a system message's parts must be text",
                ));
            }
            system.push(lead.joined());
            system_role.get_or_insert_with(|| m.str("role").unwrap_or("system").to_owned());
        }
    }
    Ok(Shaped {
        turns,
        system: system.join("\n\n"),
        system_role,
    })
}

/// A message's `content` or an output's `output` (`key`): a string, or
/// parts.
fn content(
    m: &Msg,
    value: Option<&Value>,
    key: &str,
    turn: &mut Turn,
    pricing: &mut Pricing,
) -> Result<(), Error> {
    match value {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) => {
            turn.text.push(s.clone());
            Ok(())
        }
        Some(Value::Array(parts)) => {
            for (j, part) in parts.iter().enumerate() {
                let at = format!("{}.{key}[{j}]", m.at);
                match part.get("type").and_then(Value::as_str) {
                    Some("input_text" | "output_text" | "text") => match part.get("text") {
                        Some(Value::String(t)) => turn.text.push(t.clone()),
                        _ => {
                            return Err(Error::invalid(
                                format!("{at}.text"),
                                "expected the part's text (a string)",
                            ));
                        }
                    },
                    Some("refusal") => {
                        if let Some(Value::String(t)) = part.get("refusal") {
                            turn.text.push(t.clone());
                        }
                    }
                    Some("input_image") => {
                        let low = part.get("detail").and_then(Value::as_str) == Some("low");
                        let image = match part.get("image_url").and_then(Value::as_str) {
                            Some(url) => Image::url(url, low),
                            None => Image { size: None, low },
                        };
                        pricing.image(turn, image, &at)?;
                    }
                    Some(other) => {
                        return Err(not_carried(&at, "part", other, CARRIED));
                    }
                    None => {
                        return Err(Error::invalid(
                            at,
                            format!("expected a part with its `type`, got {}", kind(part)),
                        ));
                    }
                }
            }
            Ok(())
        }
        Some(other) => Err(Error::invalid(
            m.at(key),
            format!("expected a string or a list of parts, got {}", kind(other)),
        )),
    }
}

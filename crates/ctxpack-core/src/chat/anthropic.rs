//! Anthropic's Messages: `user` and `assistant` messages whose content is
//! a string or blocks — `text`, `image`, `document` (of text), `tool_use`,
//! `tool_result`, `thinking` and `redacted_thinking` — with the system
//! text apart (`system`).
//!
//! A user message that holds `tool_result` blocks is a tool turn: it
//! answers the calls it names, and goes with them. Charged: each block's
//! text; a call's id, name and input (as JSON); a result's call id; a
//! thinking block's thinking (its signature is not counted); images by
//! the model's rule.

use super::{Msg, Pricing, Shaped, Turn, canonical, images::Image, kind, not_carried};
use crate::error::Error;
use crate::types::Role;
use serde_json::Value;

const CARRIED: &str =
    "text, image, text document, tool_use, tool_result, thinking and redacted_thinking blocks";

pub(crate) fn read(msgs: &[Msg], pricing: &mut Pricing) -> Result<Shaped, Error> {
    let mut turns = Vec::with_capacity(msgs.len());
    for (i, m) in msgs.iter().enumerate() {
        let role = match m.need("role", "the message's role")? {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => {
                return Err(Error::invalid(
                    m.at("role"),
                    format!(
                        "{other:?} is not a role of Anthropic's messages (user, assistant; the system text goes apart, as `system`)"
                    ),
                ));
            }
        };
        if let Some(key) =
            m.v.keys()
                .find(|k| !matches!(k.as_str(), "role" | "content"))
        {
            return Err(Error::invalid(
                m.at(key),
                "an Anthropic message holds only its role and content",
            ));
        }
        let mut turn = Turn {
            role: Some(role),
            first: i,
            end: i + 1,
            ..Turn::default()
        };
        match m.v.get("content") {
            Some(Value::String(s)) => turn.text.push(s.clone()),
            Some(Value::Array(blocks)) => {
                for (j, block) in blocks.iter().enumerate() {
                    let at = format!("{}.content[{j}]", m.at);
                    self::block(block, &at, role, &mut turn, pricing, true)?;
                }
            }
            other => {
                return Err(Error::invalid(
                    m.at("content"),
                    format!(
                        "expected a string or a list of blocks, got {}",
                        other.map_or("nothing", kind)
                    ),
                ));
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

/// One block at `at` of a message of `role`, into `turn`; `top` for a
/// message's own blocks (a result's content holds only text and images).
fn block(
    block: &Value,
    at: &str,
    role: Role,
    turn: &mut Turn,
    pricing: &mut Pricing,
    top: bool,
) -> Result<(), Error> {
    let field = |key: &str| -> Result<&str, Error> {
        block
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| Error::invalid(format!("{at}.{key}"), "expected a string"))
    };
    match block.get("type").and_then(Value::as_str) {
        Some("text") => turn.text.push(field("text")?.to_owned()),
        Some("image") => {
            let source = block.get("source");
            let image = match source.and_then(|s| s.get("type")).and_then(Value::as_str) {
                Some("base64") => Image::inline(
                    source
                        .and_then(|s| s.get("data"))
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                    false,
                ),
                _ => Image::default(),
            };
            pricing.image(turn, image, at)?;
        }
        Some("document") => {
            let source = block.get("source");
            match source.and_then(|s| s.get("type")).and_then(Value::as_str) {
                Some("text") => turn.text.push(
                    source
                        .and_then(|s| s.get("data"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                ),
                Some("content") => {
                    if let Some(Value::Array(inner)) = source.and_then(|s| s.get("content")) {
                        for (k, b) in inner.iter().enumerate() {
                            let at = format!("{at}.source.content[{k}]");
                            self::block(b, &at, role, turn, pricing, false)?;
                        }
                    }
                }
                _ => {
                    return Err(Error::invalid(
                        at,
                        "a PDF or a document by URL is counted only by Anthropic: send its text (a `text` source), or count with the host (`tokenizer: {\"host\": …}`) without it",
                    ));
                }
            }
            for key in ["title", "context"] {
                if let Some(Value::String(s)) = block.get(key) {
                    turn.pieces.push(s.clone());
                }
            }
        }
        Some("tool_use") if top && role == Role::Assistant => {
            let id = field("id")?.to_owned();
            let name = field("name")?.to_owned();
            let input = block.get("input").map(canonical).unwrap_or_default();
            turn.pieces
                .extend([id.clone(), name.clone(), input.clone()]);
            turn.calls.push((id, name, input));
        }
        Some("tool_result") if top && role == Role::User => {
            let id = field("tool_use_id")?.to_owned();
            turn.pieces.push(id.clone());
            turn.answers.push(id);
            match block.get("content") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => turn.text.push(s.clone()),
                Some(Value::Array(inner)) => {
                    for (k, b) in inner.iter().enumerate() {
                        let at = format!("{at}.content[{k}]");
                        self::block(b, &at, role, turn, pricing, false)?;
                    }
                }
                Some(other) => {
                    return Err(Error::invalid(
                        format!("{at}.content"),
                        format!("expected a string or blocks, got {}", kind(other)),
                    ));
                }
            }
        }
        Some("thinking") if top && role == Role::Assistant => {
            turn.pieces.push(field("thinking")?.to_owned());
        }
        Some("redacted_thinking") if top && role == Role::Assistant => {
            turn.pieces.push(field("data")?.to_owned());
            pricing.bounded.push(format!(
                "{at}: redacted thinking, charged as its encrypted text"
            ));
        }
        Some(kind @ ("tool_use" | "thinking" | "redacted_thinking")) => {
            return Err(Error::invalid(
                at,
                format!("a {kind} block belongs in an assistant message"),
            ));
        }
        Some("tool_result") => {
            return Err(Error::invalid(
                at,
                "a tool_result block belongs in a user message",
            ));
        }
        Some(other) => return Err(not_carried(at, "block", other, CARRIED)),
        None => {
            return Err(Error::invalid(
                format!("{at}.type"),
                "missing: the block's type",
            ));
        }
    }
    Ok(())
}

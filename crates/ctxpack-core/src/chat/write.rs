//! A pack given back in its chat's shape: the body of the request to
//! send (see [`ChatRequest`]).
//!
//! The pack's messages, in its layout, become the shape's: its first
//! system message (L0) is the system text where the shape keeps it apart
//! (Anthropic's `system`, Gemini's `systemInstruction`) or a system
//! message; each kept turn is the caller's own messages, as given; the
//! other context is a message of the pack's — a system message for
//! OpenAI's shapes, a user message where the provider takes system text
//! only at the top (Anthropic, Gemini, and a Claude model in OpenAI's
//! shape). A result compaction cleared is sent as the pack charged it
//! (its content the placeholder), and the summary as a message of the
//! pack's.
//!
//! Cache hints: OpenAI's `prompt_cache_key` (the pack's `cache-key`);
//! for Anthropic, `cache_control` on the last block of each prefix the
//! next turn repeats (`stable`, `history`) where it reaches the model's
//! fewest cached tokens, and, where a prefix lies more than 20 blocks
//! past the one before, on blocks every 20 back from it (a breakpoint
//! finds an earlier cache within 20 blocks), at most 4 in all, counting
//! those the caller's messages carry. A block that cannot carry one (a
//! thinking block, an empty text) passes it to the block before.

use super::Read;
use crate::compact::PLACEHOLDER;
use crate::pack::{ChatRequest, Message};
use crate::snapshot::{CacheBoundary, CachePrefix};
use crate::types::{ChatShape, Compaction};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Anthropic's limits: at most 4 breakpoints a request, and a breakpoint
/// finds an earlier turn's cache within 20 blocks before it.
const BREAKPOINTS: usize = 4;
const LOOK_BACK: usize = 20;

/// What the body is made from besides the chat.
pub(crate) struct Pack<'a> {
    /// The pack's messages, in its layout.
    pub messages: &'a [Message],
    /// For each, the conversation's turn it is.
    pub turns: &'a [Option<usize>],
    pub prefixes: &'a [CachePrefix],
    pub cache_key: Option<&'a str>,
    pub compaction: Option<&'a Compaction>,
    /// The model's name, where the request named one.
    pub model: Option<&'a str>,
}

/// One message of the body's list.
struct Elem {
    json: String,
    source: Option<u32>,
}

/// The body of the request to send `pack`, read from `read`.
pub(crate) fn write(read: &Read, pack: &Pack) -> ChatRequest {
    let shape = read.shape;
    let claude = pack
        .model
        .is_some_and(|m| m.to_ascii_lowercase().starts_with("claude"));
    // Where system text goes only at the top, the context is the user's.
    let apart = matches!(shape, ChatShape::Anthropic | ChatShape::Gemini);
    let context_role = if apart || (claude && shape == ChatShape::OpenaiChat) {
        "user"
    } else {
        "system"
    };
    let first_role = match read.system_key.as_deref() {
        Some("developer") => "developer",
        _ => "system",
    };
    let mut system: Option<String> = None;
    let mut elems: Vec<Elem> = Vec::with_capacity(pack.messages.len());
    // For each pack message, the last element it became (none: the
    // system text apart).
    let mut ends: Vec<Option<usize>> = Vec::with_capacity(pack.messages.len());
    let summary_turn = pack
        .compaction
        .and_then(|c| (c.turns as usize).checked_sub(1));
    for (k, (m, turn)) in pack.messages.iter().zip(pack.turns).enumerate() {
        match turn {
            Some(t) if Some(*t) != summary_turn => {
                let Some(chat_turn) = read.turns.get(*t) else {
                    continue;
                };
                let cleared = pack
                    .compaction
                    .is_some_and(|c| crate::compact::is_cleared(*t, m.role, c));
                for i in chat_turn.first..chat_turn.end {
                    let raw = read.items[i].get();
                    let json = match cleared {
                        true => clear(shape, raw),
                        false => raw.to_owned(),
                    };
                    elems.push(Elem {
                        json,
                        source: Some(crate::tokenizer::clamp_len(i)),
                    });
                }
            }
            _ if k == 0
                && turn.is_none()
                && (apart || read.system_key.as_deref() == Some("instructions")) =>
            {
                system = Some(m.content.clone());
                ends.push(None);
                continue;
            }
            _ => {
                // Text of untrusted origin is the user's in every shape.
                let role = match (k, m.role) {
                    (0, _) => first_role,
                    (_, crate::types::Role::User) => "user",
                    _ => context_role,
                };
                elems.push(Elem {
                    json: made(shape, role, &m.content),
                    source: None,
                });
            }
        }
        ends.push(elems.len().checked_sub(1));
    }
    let mut system_json = system.as_ref().map(|s| match shape {
        ChatShape::Anthropic => json!([{"type": "text", "text": s}]).to_string(),
        ChatShape::Gemini => json!({"parts": [{"text": s}]}).to_string(),
        _ => Value::String(s.clone()).to_string(),
    });
    if shape == ChatShape::Anthropic || (claude && shape == ChatShape::OpenaiChat) {
        breakpoints(shape, pack, &ends, &mut system_json, &mut elems);
    }
    let list: Vec<&str> = elems.iter().map(|e| e.json.as_str()).collect();
    let list = format!("[{}]", list.join(","));
    let mut body = String::with_capacity(list.len() + 128);
    body.push('{');
    if let Some(s) = &system_json {
        let key = match shape {
            ChatShape::Anthropic => "system",
            ChatShape::Gemini => match read.system_key.as_deref() {
                Some("system_instruction") => "system_instruction",
                _ => "systemInstruction",
            },
            _ => "instructions",
        };
        body.push_str(&format!("\"{key}\":{s},"));
    }
    body.push_str(&format!("\"{}\":{list}", shape.list_name()));
    let keyed = matches!(shape, ChatShape::OpenaiChat | ChatShape::OpenaiResponses) && !claude;
    if let (true, Some(key)) = (keyed, pack.cache_key) {
        body.push_str(&format!(
            ",\"prompt_cache_key\":{}",
            Value::String(key.to_owned())
        ));
    }
    body.push('}');
    ChatRequest {
        shape,
        body,
        sources: elems.iter().map(|e| e.source).collect(),
    }
}

/// A message the pack made, of `role`, in `shape`.
fn made(shape: ChatShape, role: &str, text: &str) -> String {
    match shape {
        ChatShape::OpenaiChat | ChatShape::OpenaiResponses => {
            json!({"role": role, "content": text}).to_string()
        }
        ChatShape::Anthropic => {
            json!({"role": "user", "content": [{"type": "text", "text": text}]}).to_string()
        }
        ChatShape::Gemini => json!({"role": "user", "parts": [{"text": text}]}).to_string(),
    }
}

/// A tool result as compaction sends it: its result the placeholder.
pub(super) fn clear(shape: ChatShape, raw: &str) -> String {
    let Ok(mut v) = serde_json::from_str::<Value>(raw) else {
        return raw.to_owned();
    };
    let placeholder = Value::String(PLACEHOLDER.to_owned());
    match shape {
        ChatShape::OpenaiChat => {
            v["content"] = placeholder;
        }
        ChatShape::OpenaiResponses => {
            if v.get("output").is_some() {
                v["output"] = placeholder;
            }
        }
        ChatShape::Anthropic => {
            if let Some(Value::Array(blocks)) = v.get_mut("content") {
                for b in blocks.iter_mut() {
                    if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                        b["content"] = placeholder.clone();
                    }
                }
            }
        }
        ChatShape::Gemini => {
            if let Some(Value::Array(parts)) = v.get_mut("parts") {
                for p in parts.iter_mut() {
                    for key in ["functionResponse", "function_response"] {
                        if let Some(r) = p.get_mut(key) {
                            r["response"] = json!({"result": PLACEHOLDER});
                        }
                    }
                }
            }
        }
    }
    v.to_string()
}

/// Each block of an element: whether it can carry a breakpoint, and
/// whether it carries one.
fn blocks(shape: ChatShape, json: &str) -> Vec<(bool, bool)> {
    let Ok(v) = serde_json::from_str::<Value>(json) else {
        return Vec::new();
    };
    match v.get("content") {
        Some(Value::String(s)) => vec![(!s.is_empty(), false)],
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|b| {
                let kind = b.get("type").and_then(Value::as_str);
                let empty = kind == Some("text")
                    && b.get("text")
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty);
                let takes = match shape {
                    ChatShape::Anthropic => {
                        !matches!(kind, Some("thinking" | "redacted_thinking")) && !empty
                    }
                    _ => matches!(kind, Some("text" | "image_url")) && !empty,
                };
                (takes, b.get("cache_control").is_some())
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Marks the blocks that end the prefixes the next turn repeats (see the
/// module's documentation).
fn breakpoints(
    shape: ChatShape,
    pack: &Pack,
    ends: &[Option<usize>],
    system: &mut Option<String>,
    elems: &mut [Elem],
) {
    let mut at: Vec<usize> = pack
        .prefixes
        .iter()
        .filter(|p| p.cacheable)
        .filter(|p| matches!(p.boundary, CacheBoundary::Stable | CacheBoundary::History))
        .map(|p| p.messages as usize)
        .collect();
    at.sort_unstable();
    at.dedup();
    if at.is_empty() {
        return;
    }
    // Every block in order: the system text's, then each element's.
    let head = usize::from(system.is_some());
    let mut table: Vec<(Option<usize>, usize, bool, bool)> = Vec::new();
    if head == 1 {
        table.push((None, 0, true, false));
    }
    let mut last_of: Vec<Option<usize>> = Vec::with_capacity(elems.len());
    for (e, elem) in elems.iter().enumerate() {
        for (b, (takes, has)) in blocks(shape, &elem.json).into_iter().enumerate() {
            table.push((Some(e), b, takes, has));
        }
        last_of.push(table.len().checked_sub(1));
    }
    let taken = table.iter().filter(|t| t.3).count();
    // The block each boundary ends at.
    let boundaries: Vec<usize> = at
        .iter()
        .filter_map(|&n| match ends.get(n.checked_sub(1)?)? {
            None => (head == 1).then_some(0),
            Some(e) => last_of.get(*e).copied().flatten(),
        })
        .collect();
    let mut rungs = Vec::new();
    let mut before: Option<usize> = None;
    for &end in &boundaries {
        let mut rung = end;
        let floor = before.map_or(0, |b| b + 1);
        while rung >= floor + LOOK_BACK && rung - LOOK_BACK >= floor {
            rung -= LOOK_BACK;
            rungs.push(rung);
        }
        before = Some(end);
    }
    let room = BREAKPOINTS.saturating_sub(taken);
    let mut wanted: Vec<usize> = boundaries.iter().rev().copied().collect();
    rungs.sort_unstable_by(|a, b| b.cmp(a));
    wanted.extend(rungs);
    wanted.truncate(room);
    let mut marks: BTreeMap<Option<usize>, Vec<usize>> = BTreeMap::new();
    for k in wanted {
        let Some(at) = (0..=k).rev().find(|&j| table[j].2) else {
            continue;
        };
        let (e, b, _, has) = table[at];
        if !has {
            table[at].3 = true;
            marks.entry(e).or_default().push(b);
        }
    }
    for (e, bs) in marks {
        match e {
            None => {
                if let Some(s) = system.as_mut()
                    && let Some(marked) = mark(s, &bs, true)
                {
                    *s = marked;
                }
            }
            Some(e) => {
                if let Some(marked) = mark(&elems[e].json, &bs, false) {
                    elems[e].json = marked;
                }
            }
        }
    }
}

/// `json` (a message, or with `list` a list of blocks) with
/// `cache_control` on the blocks at `at`: a string content made one text
/// block to carry it. Every other byte of the message stays as given.
fn mark(json: &str, at: &[usize], list: bool) -> Option<String> {
    let ephemeral = r#""cache_control":{"type":"ephemeral"}"#;
    let marked = |blocks: Vec<Box<RawValue>>| -> Option<String> {
        let mut out = Vec::with_capacity(blocks.len());
        for (b, raw) in blocks.iter().enumerate() {
            let text = raw.get().trim();
            if !at.contains(&b) {
                out.push(text.to_owned());
                continue;
            }
            let inner = text.strip_suffix('}')?.trim_end();
            out.push(match inner.ends_with('{') {
                true => format!("{inner}{ephemeral}}}"),
                false => format!("{inner},{ephemeral}}}"),
            });
        }
        Some(format!("[{}]", out.join(",")))
    };
    if list {
        return marked(serde_json::from_str(json).ok()?);
    }
    let mut message: BTreeMap<String, Box<RawValue>> = serde_json::from_str(json).ok()?;
    let content = message.get("content")?.get();
    let new = match serde_json::from_str::<Value>(content).ok()? {
        Value::String(s) => {
            json!([{"type": "text", "text": s, "cache_control": {"type": "ephemeral"}}]).to_string()
        }
        Value::Array(_) => marked(serde_json::from_str(content).ok()?)?,
        _ => return None,
    };
    message.insert("content".to_owned(), RawValue::from_string(new).ok()?);
    serde_json::to_string(&message).ok()
}

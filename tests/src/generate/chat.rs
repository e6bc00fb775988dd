//! A generated conversation given as a chat in a provider's shape: each
//! turn one message in OpenAI's Chat Completions or Responses, Anthropic's
//! or Gemini's form, an assistant's call now and then with a parallel
//! second one, thinking blocks and reasoning items, images inline (a
//! PNG's size) or by URL; the drawn conversation's texts, of any Unicode.

use super::Source;
use ctxpack_core::{Chat, ChatShape, ConversationTurn, Role};
use serde_json::{Value, json};

/// A PNG's first bytes (enough for its size) as base64, `w` × `h`.
fn png(w: u32, h: u32) -> String {
    let mut d = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    d.extend(w.to_be_bytes());
    d.extend(h.to_be_bytes());
    d.extend([8, 2, 0, 0, 0]);
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in d.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..=c.len() {
            s.push(char::from(A[(n >> (18 - 6 * k)) as usize & 63]));
        }
    }
    while !s.len().is_multiple_of(4) {
        s.push('=');
    }
    s
}

/// An image: inline of a drawn size, or by URL (charged the most it can cost).
struct Image {
    data: Option<String>,
    detail: &'static str,
}

fn image(src: &mut Source) -> Image {
    let data = (!src.one_in(3)).then(|| png(1 + src.below(4_000), 1 + src.below(4_000)));
    let detail = src.pick(&["low", "high", "auto"]);
    Image { data, detail }
}

/// `turns` as a chat in a drawn shape.
pub fn chat(src: &mut Source, turns: &[ConversationTurn]) -> Chat {
    let shape = src.pick(&[
        ChatShape::OpenaiChat,
        ChatShape::OpenaiResponses,
        ChatShape::Anthropic,
        ChatShape::Gemini,
    ]);
    let mut list = Vec::with_capacity(turns.len());
    for t in turns {
        let img = (t.attached_tokens.is_some()).then(|| image(src));
        // A parallel second call beside the drawn one, now and then.
        let calls: Vec<String> = match (&t.role, &t.tool_call_id) {
            (Role::Assistant, Some(id)) if src.one_in(3) => vec![id.clone(), format!("{id}b")],
            (Role::Assistant, Some(id)) => vec![id.clone()],
            _ => Vec::new(),
        };
        let thinking = t.role == Role::Assistant && src.one_in(4);
        let message = match shape {
            ChatShape::OpenaiChat => openai(t, &calls, img),
            ChatShape::OpenaiResponses => {
                if thinking {
                    list.push(json!({"type": "reasoning", "id": "rs", "summary": [
                        {"type": "summary_text", "text": t.content}]}));
                }
                responses(t, &calls, img, &mut list)
            }
            ChatShape::Anthropic => anthropic(t, &calls, img, thinking),
            ChatShape::Gemini => gemini(t, &calls, img),
        };
        list.push(message);
    }
    Chat::new(shape, &Value::Array(list))
}

fn openai(t: &ConversationTurn, calls: &[String], img: Option<Image>) -> Value {
    let role = match t.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut m = json!({"role": role, "content": t.content});
    if let Some(i) = img {
        let url = match &i.data {
            Some(d) => format!("data:image/png;base64,{d}"),
            None => "https://example.com/i.png".to_owned(),
        };
        m["content"] = json!([{"type": "text", "text": t.content},
            {"type": "image_url", "image_url": {"url": url, "detail": i.detail}}]);
    }
    if !calls.is_empty() {
        m["tool_calls"] = calls
            .iter()
            .map(|id| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{\"q\": 1}"}}))
            .collect();
    }
    if t.role == Role::Tool {
        m["tool_call_id"] = json!(t.tool_call_id);
    }
    m
}

/// Responses' items for a turn: the message, or its calls as items of
/// their own (pushed to `list`, the last returned).
fn responses(
    t: &ConversationTurn,
    calls: &[String],
    img: Option<Image>,
    list: &mut Vec<Value>,
) -> Value {
    match t.role {
        Role::Tool => json!({"type": "function_call_output",
            "call_id": t.tool_call_id, "output": t.content}),
        Role::Assistant if !calls.is_empty() => {
            for id in &calls[..calls.len() - 1] {
                list.push(
                    json!({"type": "function_call", "call_id": id, "name": "f", "arguments": "{}"}),
                );
            }
            json!({"type": "function_call", "call_id": calls[calls.len() - 1], "name": "f", "arguments": "{}"})
        }
        Role::Assistant => json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": t.content}]}),
        Role::User | Role::System => {
            let role = if t.role == Role::User {
                "user"
            } else {
                "system"
            };
            let mut content = vec![json!({"type": "input_text", "text": t.content})];
            if let Some(i) = img {
                let url = match &i.data {
                    Some(d) => format!("data:image/png;base64,{d}"),
                    None => "https://example.com/i.png".to_owned(),
                };
                content.push(json!({"type": "input_image", "image_url": url, "detail": i.detail}));
            }
            json!({"type": "message", "role": role, "content": content})
        }
    }
}

fn anthropic(t: &ConversationTurn, calls: &[String], img: Option<Image>, thinking: bool) -> Value {
    let mut blocks = Vec::new();
    if thinking {
        blocks.push(json!({"type": "thinking", "thinking": t.content, "signature": "c2ln"}));
    }
    match t.role {
        Role::Tool => blocks.push(json!({"type": "tool_result",
            "tool_use_id": t.tool_call_id, "content": t.content})),
        _ => blocks.push(json!({"type": "text", "text": t.content})),
    }
    for id in calls {
        blocks.push(json!({"type": "tool_use", "id": id, "name": "f", "input": {"q": 1}}));
    }
    if let Some(i) = img {
        blocks.push(match i.data {
            Some(d) => json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": d}}),
            None => json!({"type": "image", "source": {"type": "url", "url": "https://example.com/i.png"}}),
        });
    }
    let role = if t.role == Role::Assistant {
        "assistant"
    } else {
        "user"
    };
    json!({"role": role, "content": blocks})
}

fn gemini(t: &ConversationTurn, calls: &[String], img: Option<Image>) -> Value {
    let mut parts = Vec::new();
    match t.role {
        Role::Tool => parts
            .push(json!({"functionResponse": {"name": "f", "response": {"result": t.content}}})),
        _ => parts.push(json!({"text": t.content})),
    }
    for _ in calls {
        parts.push(json!({"functionCall": {"name": "f", "args": {"q": 1}}}));
    }
    if let Some(Image { data: Some(d), .. }) = img {
        parts.push(json!({"inlineData": {"mimeType": "image/png", "data": d}}));
    }
    let role = if t.role == Role::Assistant {
        "model"
    } else {
        "user"
    };
    json!({"role": role, "parts": parts})
}

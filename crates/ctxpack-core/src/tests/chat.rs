//! Chat messages in each provider's shape: read, charged as sent, and
//! given back as the kept originals in their shape with cache hints.

use super::*;
use serde_json::{Value, json};

fn build() -> Builder {
    Builder::new(BuilderConfig::default()).unwrap()
}

/// A request for `model` (or o200k without one) carrying `messages` in
/// `shape`, within `budget`.
fn chat_request(
    shape: ChatShape,
    messages: Value,
    model: Option<&str>,
    budget: u32,
) -> AssembleRequest {
    let mut r: AssembleRequest = serde_json::from_value(json!({
        "context": {"session-id": "s", "trace-id": "t"},
        "budget": budget,
    }))
    .unwrap();
    r.model = model.map(str::to_owned);
    if model.is_none() {
        r.tokenizer = Some(Tokenizer::O200kBase);
    }
    r.chat = Some(Chat::new(shape, &messages));
    r
}

fn body(p: &ContextPack) -> Value {
    serde_json::from_str(&p.chat.as_ref().unwrap().body).unwrap()
}

fn o200k(text: &str) -> u32 {
    crate::tokenizer::Tokenizers::new()
        .counter(&Tokenizer::O200kBase)
        .unwrap()
        .count(text)
}

/// OpenAI's count of a chat request, as its cookbook writes it: 3 per
/// message and every field's value (a value that is not text as its
/// JSON), one more for a name, and 3 that prime the reply; text parts
/// joined by line breaks, `images` for the image parts.
fn cookbook(messages: &[Value], images: u32) -> u32 {
    let mut n = 3;
    for m in messages {
        n += 3;
        for (k, v) in m.as_object().unwrap() {
            n += match (k.as_str(), v) {
                (_, Value::Null) => 0,
                (_, Value::String(s)) => o200k(s),
                ("content", Value::Array(parts)) => {
                    let texts: Vec<&str> =
                        parts.iter().filter_map(|p| p["text"].as_str()).collect();
                    o200k(&texts.join("\n"))
                }
                (_, other) => o200k(&other.to_string()),
            };
            n += u32::from(k == "name");
        }
    }
    n + images
}

/// A PNG's first bytes, enough for its size, as base64.
fn png(w: u32, h: u32) -> String {
    let mut d = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    d.extend(w.to_be_bytes());
    d.extend(h.to_be_bytes());
    d.extend([8, 2, 0, 0, 0]);
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in d.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for k in 0..4 {
            s.push(if k <= c.len() {
                A[(n >> (18 - 6 * k) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    s
}

fn openai_chat() -> Value {
    json!([
        {"role": "system", "content": "You are a travel agent. Use the tools."},
        {"role": "user", "content": "What's the weather in Paris and Rome?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "call_a", "content": "Paris: 14°C, rain"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Rome: 21°C, sun"},
        {"role": "assistant", "content": "Paris is rainy at 14°C; Rome is sunny at 21°C.", "name": "agent"},
        {"role": "user", "content": [
            {"type": "text", "text": "And what is in this photo?"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", png(800, 600))}}
        ]}
    ])
}

#[test]
fn openai_messages_come_back_as_given_and_are_charged_as_openai_counts_them() {
    let messages = openai_chat();
    let r = chat_request(
        ChatShape::OpenaiChat,
        messages.clone(),
        Some("gpt-4o"),
        2_000,
    );
    let p = build().assemble(&r, &mut NoHost).unwrap();
    let sent = body(&p);
    let list = sent["messages"].as_array().unwrap();
    // Every message, as given; the system message the pack's (L0 is its
    // text).
    assert_eq!(list[1..], messages.as_array().unwrap()[1..]);
    assert_eq!(
        list[0],
        json!({"role": "system", "content": "You are a travel agent. Use the tools."})
    );
    let sources = &p.chat.as_ref().unwrap().sources;
    assert_eq!(
        sources,
        &[None, Some(1), Some(2), Some(3), Some(4), Some(5), Some(6)]
    );
    assert_eq!(
        sent["prompt_cache_key"],
        json!(p.cache_key.clone().unwrap())
    );
    // Charged as OpenAI's count of the request: an 800×600 image is
    // 85 + 170 × 4 at gpt-4o's tiles.
    assert_eq!(p.snapshot.message_tokens, cookbook(list, 765));
    assert_eq!(p.budget_used, p.snapshot.message_tokens);
    let report = p.snapshot.chat.as_ref().unwrap();
    assert_eq!(report.turns, [1, 2, 3, 4, 5, 6]);
    assert!(report.bounded.is_empty());
}

#[test]
fn parallel_calls_and_their_results_are_kept_or_dropped_together() {
    let messages = openai_chat();
    let whole = build()
        .assemble(
            &chat_request(
                ChatShape::OpenaiChat,
                messages.clone(),
                Some("gpt-4o"),
                2_000,
            ),
            &mut NoHost,
        )
        .unwrap();
    // Room for the answer and the photo, not the calls: both calls go
    // with both their results, over the budget alike, and the question
    // before them; the answer, without its question, is not where a
    // kept conversation may begin.
    let budget = whole.snapshot.message_tokens - 20;
    let p = build()
        .assemble(
            &chat_request(ChatShape::OpenaiChat, messages, Some("gpt-4o"), budget),
            &mut NoHost,
        )
        .unwrap();
    let sources = &p.chat.as_ref().unwrap().sources;
    assert_eq!(sources, &[None, Some(6)], "{:?}", p.snapshot.entries);
    let reason = |id: &str| {
        p.snapshot
            .entries
            .iter()
            .find(|e| e.id == id)
            .unwrap()
            .reason
            .clone()
    };
    assert!(matches!(reason("turn-1"), Reason::OverBudget(_)));
    assert_eq!(reason("turn-2"), reason("turn-1"));
    assert_eq!(reason("turn-3"), reason("turn-1"));
    assert_eq!(reason("turn-4"), Reason::BeforeUserTurn);
}

#[test]
fn anthropic_messages_keep_their_blocks_and_get_cache_breakpoints() {
    let system = "You plan trips. ".repeat(300);
    let messages = json!({
        "system": system,
        "messages": [
            {"role": "user", "content": "Book me a train to Lyon."},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Search first.", "signature": "sig"},
                {"type": "text", "text": "Searching."},
                {"type": "tool_use", "id": "tu_1", "name": "trains", "input": {"to": "Lyon", "seats": 1}},
                {"type": "tool_use", "id": "tu_2", "name": "fares", "input": {"to": "Lyon"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "tu_1", "content": "09:12, 11:40"},
                {"type": "tool_result", "tool_use_id": "tu_2", "content": [{"type": "text", "text": "€39"}]}
            ]},
            {"role": "assistant", "content": "The 09:12 is €39."},
            {"role": "user", "content": "Book the 09:12."}
        ]
    });
    let mut r = chat_request(
        ChatShape::Anthropic,
        messages.clone(),
        Some("claude-sonnet-4-5"),
        20_000,
    );
    r.tokenizer = Some(Tokenizer::O200kBase);
    let p = build().assemble(&r, &mut NoHost).unwrap();
    let sent = body(&p);
    // The system text apart, as a block with a breakpoint (it passes
    // the model's fewest cached tokens).
    assert_eq!(sent["system"][0]["text"], json!(system));
    assert_eq!(
        sent["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let given = messages["messages"].as_array().unwrap();
    let list = sent["messages"].as_array().unwrap();
    // The conversation, as given; with no other context after it, the
    // whole of it is the history the next turn repeats: its breakpoint
    // on the newest turn (a string content made a text block to carry
    // it).
    assert_eq!(list.len(), 5);
    assert_eq!(list[..4], given[..4]);
    assert_eq!(
        list[4],
        json!({"role": "user", "content": [{"type": "text", "text": "Book the 09:12.", "cache_control": {"type": "ephemeral"}}]})
    );
    let prefixes: Vec<(CacheBoundary, u32)> = p
        .snapshot
        .cache_prefixes
        .iter()
        .map(|c| (c.boundary, c.messages))
        .collect();
    assert_eq!(
        prefixes,
        [
            (CacheBoundary::Stable, 1),
            (CacheBoundary::History, 6),
            (CacheBoundary::Turn, 6)
        ]
    );
    let report = p.snapshot.chat.as_ref().unwrap();
    assert_eq!(report.turns, [0, 1, 2, 3, 4]);
    // The results answer both calls: one unit with them.
    let roles: Vec<Role> = p.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User
        ]
    );
}

#[test]
fn gemini_calls_without_ids_are_answered_by_name_and_responses_merge_a_reply() {
    let messages = json!({
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Oslo and Bergen?"}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "weather", "args": {"city": "Oslo"}}},
                {"functionCall": {"name": "weather", "args": {"city": "Bergen"}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "weather", "response": {"t": 3}}},
                {"functionResponse": {"name": "weather", "response": {"t": 7}}}
            ]},
            {"role": "user", "parts": [{"text": "Thanks"}]}
        ]
    });
    let p = build()
        .assemble(
            &chat_request(ChatShape::Gemini, messages.clone(), None, 500),
            &mut NoHost,
        )
        .unwrap();
    let sent = body(&p);
    assert_eq!(
        sent["systemInstruction"],
        json!({"parts": [{"text": "Be brief."}]})
    );
    assert_eq!(sent["contents"], messages["contents"]);
    let tool = p.messages.iter().find(|m| m.role == Role::Tool).unwrap();
    let call = p
        .messages
        .iter()
        .find(|m| m.role == Role::Assistant)
        .unwrap();
    assert_eq!(tool.tool_call_id, call.tool_call_id);

    let input = json!([
        {"role": "developer", "content": "Answer from the tools."},
        {"role": "user", "content": "Flights to Oslo?"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Look it up."}]},
        {"type": "function_call", "call_id": "fc_1", "name": "flights", "arguments": "{\"to\":\"OSL\"}"},
        {"type": "function_call_output", "call_id": "fc_1", "output": "SK 4021 at 08:05"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "SK 4021 leaves at 08:05."}]},
        {"role": "user", "content": "Book it."}
    ]);
    let p = build()
        .assemble(
            &chat_request(
                ChatShape::OpenaiResponses,
                input.clone(),
                Some("gpt-4o"),
                500,
            ),
            &mut NoHost,
        )
        .unwrap();
    let sent = body(&p);
    // The reasoning item and its call are one turn, kept together; the
    // developer message is the system text, in its role.
    assert_eq!(p.snapshot.chat.as_ref().unwrap().turns, [1, 2, 4, 5, 6]);
    assert_eq!(
        sent["input"][0],
        json!({"role": "developer", "content": "Answer from the tools."})
    );
    assert_eq!(
        sent["input"].as_array().unwrap()[1..],
        input.as_array().unwrap()[1..]
    );
}

#[test]
fn what_a_chat_cannot_carry_is_refused_naming_its_place() {
    let refused = |shape, messages: Value, model: Option<&str>| match build()
        .assemble(&chat_request(shape, messages, model, 500), &mut NoHost)
    {
        Err(Failure {
            error: Error::InvalidField { field, message },
            ..
        }) => (field, message),
        other => panic!("{other:?}"),
    };
    let (field, message) = refused(
        ChatShape::OpenaiChat,
        json!([{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}]),
        None,
    );
    assert_eq!(field, "request.chat.messages[0].content[0]");
    assert!(
        message.contains("a part of type \"input_audio\" is not carried"),
        "{message}"
    );
    let image = json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}]}]);
    let (field, message) = refused(
        ChatShape::OpenaiChat,
        image.clone(),
        Some("llama-3.1-8b-instruct"),
    );
    assert_eq!(field, "request.chat.messages[0].content[0]");
    assert!(message.contains("what an image costs model"), "{message}");
    let (_, message) = refused(ChatShape::OpenaiChat, image, Some("o3-mini"));
    assert!(message.contains("takes no images"), "{message}");
    let (field, _) = refused(
        ChatShape::Anthropic,
        json!({"messages": [], "tools": []}),
        None,
    );
    assert_eq!(field, "request.chat.messages.tools");
    let (field, message) = refused(
        ChatShape::OpenaiChat,
        json!([
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]}
        ]),
        None,
    );
    assert_eq!(field, "request.chat.messages[1]");
    assert!(
        message.contains("call `c` is made by request.chat.messages[0] already"),
        "{message}"
    );
    let mut r = chat_request(ChatShape::OpenaiChat, json!([]), None, 50);
    r.conversation = vec![turn(Role::User, "hi", None)];
    let error = build().assemble(&r, &mut NoHost).unwrap_err().error;
    assert!(
        matches!(error, Error::InvalidField { ref field, .. } if field == "request.chat"),
        "{error}"
    );
}

#[test]
fn a_chat_sent_as_flat_text_writes_its_calls_and_gives_no_request() {
    let mut r = chat_request(ChatShape::OpenaiChat, openai_chat(), Some("gpt-4o"), 2_000);
    r.form = Some(PackForm::Text);
    // The flat text carries no image: the photo's turn is text alone.
    let p = build().assemble(&r, &mut NoHost).unwrap();
    assert!(p.chat.is_none());
    assert!(p.text.contains("[assistant] [tool call] weather({\"city\":\"Paris\"})\n> [tool call] weather({\"city\":\"Rome\"})"), "{}", p.text);
    assert!(p.snapshot.chat.is_some());
}

#[test]
fn an_image_given_by_url_is_charged_the_most_and_said_so() {
    let messages = json!([{"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    ]}]);
    let p = build()
        .assemble(
            &chat_request(
                ChatShape::OpenaiChat,
                messages,
                Some("gpt-4o-mini"),
                100_000,
            ),
            &mut NoHost,
        )
        .unwrap();
    // GPT-4o mini's tiles: 2,833 and 5,667 for each of the most tiles, 8.
    let attached = p.messages[0].attached_tokens.unwrap();
    assert_eq!(attached, 2_833 + 5_667 * 8);
    let bounded = &p.snapshot.chat.as_ref().unwrap().bounded;
    assert_eq!(bounded.len(), 1);
    assert!(
        bounded[0]
            .starts_with("request.chat.messages[0].content[1]: an image whose size is not known")
    );
}

#[test]
fn a_compacted_chat_sends_its_summary_and_cleared_results_in_its_shape() {
    let mut config = BuilderConfig::default();
    config.plan.compact_share = 0.5;
    config.plan.clear_at_least = 10;
    config.plan.compact_tokens = 0;
    let mut messages = vec![json!({"role": "user", "content": "Find the cheapest fare."})];
    for k in 0..8 {
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{k}"), "type": "function", "function": {"name": "search", "arguments": "{}"}}]}));
        messages.push(
            json!({"role": "tool", "tool_call_id": format!("c{k}"), "content": "fare ".repeat(60)}),
        );
    }
    let r = chat_request(
        ChatShape::OpenaiChat,
        Value::Array(messages.clone()),
        Some("gpt-4o"),
        1_000,
    );
    let p = Builder::new(config.clone())
        .unwrap()
        .assemble(&r, &mut NoHost)
        .unwrap();
    let state = p.compaction.clone().unwrap();
    assert!(state.cleared > 0, "{state:?}");
    let sent = body(&p);
    let list = sent["messages"].as_array().unwrap();
    // Charged as sent: a cleared result still sends its call's id.
    assert_eq!(p.snapshot.message_tokens, cookbook(list, 0));
    let sources = &p.chat.as_ref().unwrap().sources;
    for (m, source) in list.iter().zip(sources) {
        let i = source.unwrap() as usize;
        let turn = p
            .snapshot
            .chat
            .as_ref()
            .unwrap()
            .turns
            .iter()
            .position(|&t| t as usize == i)
            .unwrap();
        if m["role"] == "tool" && turn < state.cleared as usize {
            assert_eq!(m["content"], json!(crate::compact::PLACEHOLDER));
            assert_eq!(m["tool_call_id"], messages[i]["tool_call_id"]);
        } else {
            assert_eq!(m, &messages[i]);
        }
    }

    // Passed back with the next turn's chat, the compaction is checked
    // against the chat's turns, and what it cleared stays as sent.
    let mut next_messages = messages.clone();
    next_messages.push(json!({"role": "assistant", "content": "The cheapest is Friday's."}));
    next_messages.push(json!({"role": "user", "content": "Book it."}));
    let mut next = chat_request(
        ChatShape::OpenaiChat,
        Value::Array(next_messages),
        Some("gpt-4o"),
        1_000,
    );
    next.compaction = Some(state.clone());
    let q = Builder::new(config)
        .unwrap()
        .assemble(&next, &mut NoHost)
        .unwrap();
    let again = body(&q);
    let again = again["messages"].as_array().unwrap();
    assert_eq!(
        again[..list.len()],
        list[..],
        "the compacted prefix changed"
    );
    assert_eq!(again.last().unwrap()["content"], json!("Book it."));
    assert_eq!(q.snapshot.message_tokens, cookbook(again, 0));
    let mut wrong = chat_request(
        ChatShape::OpenaiChat,
        json!([{"role": "user", "content": "hi"}]),
        None,
        1_000,
    );
    wrong.compaction = Some(state);
    let err = build().assemble(&wrong, &mut NoHost).unwrap_err();
    assert!(err.to_string().contains("request.compaction"), "{err}");
}

#[test]
fn a_cleared_anthropic_result_is_charged_as_its_message_is_then_sent() {
    let mut config = BuilderConfig::default();
    config.plan.compact_share = 0.5;
    config.plan.clear_at_least = 10;
    config.plan.compact_tokens = 0;
    let mut messages = vec![json!({"role": "user", "content": "Find the cheapest fare."})];
    for k in 0..8 {
        let id = format!("toolu_{k}");
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": id, "name": "search", "input": {"page": k}}]}));
        // A result, and a note of the user's beside it that clearing
        // leaves as it was.
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": "fare ".repeat(60)},
            {"type": "text", "text": format!("note {k}: keep looking")}]}));
    }
    let r = chat_request(
        ChatShape::Anthropic,
        Value::Array(messages.clone()),
        None,
        1_000,
    );
    let p = Builder::new(config)
        .unwrap()
        .assemble(&r, &mut NoHost)
        .unwrap();
    assert!(p.compaction.as_ref().unwrap().cleared > 0);
    let sent = body(&p);
    let list = sent["messages"].as_array().unwrap();
    let cleared = list
        .iter()
        .filter(|m| m.to_string().contains(crate::compact::PLACEHOLDER))
        .count();
    assert!(cleared > 0, "{sent}");
    assert!(list.iter().any(|m| m.to_string().contains("note 0")));
    // The request sent, counted as a chat of its own, is what the pack
    // charged for it (the cache hints are not counted).
    let counted = build()
        .count(&CountRequest {
            tokenizer: Some(Tokenizer::O200kBase),
            chat: Some(Chat::new(ChatShape::Anthropic, &json!({"messages": list}))),
            ..CountRequest::default()
        })
        .unwrap();
    assert_eq!(u64::from(p.snapshot.message_tokens), counted.total);
}

//! Trimming a chat as LangChain's `trim_messages` does: its own cases,
//! with its counter lent as the host's counter of messages.

use super::*;
use serde_json::{Value, json};

/// LangChain's `dummy_token_counter`: each message 3 + 4 + 3, a list
/// content 4 a block; and every list it was given, to check none is
/// reversed.
#[derive(Default)]
struct Dummy {
    messages: Vec<Value>,
    lists: Vec<Vec<u32>>,
}

impl Dummy {
    fn of(messages: &Value) -> Self {
        Dummy {
            messages: messages.as_array().unwrap().clone(),
            lists: Vec::new(),
        }
    }

    fn count(m: &Value) -> u32 {
        match &m["content"] {
            Value::Array(blocks) => 3 + 4 * blocks.len() as u32 + 3,
            _ => 10,
        }
    }
}

impl Host for Dummy {
    fn count_messages(&mut self, _: &str, lists: &[MessageList]) -> Result<Vec<u32>, HostError> {
        Ok(lists
            .iter()
            .map(|l| {
                assert!(
                    l.messages.windows(2).all(|w| w[0] < w[1]),
                    "out of order: {l:?}"
                );
                let mut order: Vec<u32> = l.messages.clone();
                order.extend(l.cut.as_ref().map(|p| p.message));
                order.sort_unstable();
                order.dedup();
                assert_eq!(
                    order.len(),
                    l.messages.len() + usize::from(l.cut.is_some()),
                    "{l:?}"
                );
                self.lists.push(order);
                let given: u32 = l
                    .messages
                    .iter()
                    .map(|&i| Dummy::count(&self.messages[i as usize]))
                    .sum();
                let cut = l.cut.as_ref().map_or(0, |p| match (&p.blocks, &p.text) {
                    (Some(b), _) => 3 + 4 * b.count + 3,
                    _ => 10,
                });
                given + cut
            })
            .collect())
    }
}

/// LangChain's `_MESSAGES_TO_TRIM`, as OpenAI's messages.
fn to_trim() -> Value {
    json!([
        {"role": "system", "content": "This is a 4 token text."},
        {"role": "user", "content": "This is a 4 token text."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "This is the FIRST 4 token block."},
            {"type": "text", "text": "This is the SECOND 4 token block."}
        ]},
        {"role": "user", "content": "This is a 4 token text."},
        {"role": "assistant", "content": "This is a 4 token text."}
    ])
}

fn request(messages: &Value, max: u32, extra: Value) -> TrimRequest {
    let mut r = json!({
        "chat": {"shape": "openai-chat", "messages": messages},
        "max-tokens": max,
        "tokenizer": {"host": "dummy"},
    });
    for (k, v) in extra.as_object().unwrap() {
        r[k] = v.clone();
    }
    serde_json::from_value(r).unwrap()
}

fn trim(messages: &Value, max: u32, extra: Value) -> Result<(Trimmed, Vec<Vec<u32>>), Error> {
    let builder = Builder::new(BuilderConfig::default()).unwrap();
    let mut host = Dummy::of(messages);
    let r = request(messages, max, extra);
    builder
        .trim(&r, &mut host)
        .map(|t| (t, host.lists))
        .map_err(|f| f.error)
}

#[test]
fn langchains_cases_keep_what_its_trim_keeps() {
    let m = to_trim();
    // test_trim_messages_first_30
    let (t, _) = trim(&m, 30, json!({"strategy": "first"})).unwrap();
    assert_eq!(t.kept, [0, 1]);
    // test_trim_messages_first_30_allow_partial: the first block of the
    // next message.
    let (t, _) = trim(&m, 30, json!({"strategy": "first", "allow-partial": true})).unwrap();
    assert_eq!(t.kept, [0, 1, 2]);
    assert_eq!(
        t.partial,
        Some(Partial {
            message: 2,
            blocks: Some(BlockRange { first: 0, count: 1 }),
            text: None
        })
    );
    let kept: Value = serde_json::from_str(&t.messages).unwrap();
    assert_eq!(
        kept[2]["content"],
        json!([{"type": "text", "text": "This is the FIRST 4 token block."}])
    );
    // …_end_on_human: the cut message goes again.
    let (t, _) = trim(
        &m,
        30,
        json!({"strategy": "first", "allow-partial": true, "end-on": ["user"]}),
    )
    .unwrap();
    assert_eq!(
        (t.kept.as_slice(), t.partial.is_none()),
        (&[0, 1][..], true)
    );
    // test_trim_messages_last_30_include_system
    let (t, lists) = trim(&m, 30, json!({"include-system": true})).unwrap();
    assert_eq!(t.kept, [0, 3, 4]);
    assert_eq!(t.tokens, 30);
    assert!(!lists.is_empty());
    // test_trim_messages_last_40_include_system_allow_partial: the last
    // block of the message before.
    let (t, _) = trim(
        &m,
        40,
        json!({"include-system": true, "allow-partial": true}),
    )
    .unwrap();
    assert_eq!(t.kept, [0, 2, 3, 4]);
    assert_eq!(
        t.partial.unwrap().blocks,
        Some(BlockRange { first: 1, count: 1 })
    );
    // …_start_on_human at 30: the cut AI message cannot begin the run.
    let (t, _) = trim(
        &m,
        30,
        json!({"include-system": true, "allow-partial": true, "start-on": ["user"]}),
    )
    .unwrap();
    assert_eq!(t.kept, [0, 3, 4]);
}

#[test]
fn a_trim_never_parts_a_call_from_its_results_and_says_when_the_newest_cannot_fit() {
    let m = json!([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "w", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "rain"},
        {"role": "tool", "tool_call_id": "b", "content": "sun"},
        {"role": "user", "content": "thanks"}
    ]);
    // Room for two messages: not the call and one result, only the
    // newest message.
    let (t, _) = trim(&m, 25, json!({})).unwrap();
    assert_eq!(t.kept, [4]);
    let (t, _) = trim(&m, 40, json!({})).unwrap();
    assert_eq!(t.kept, [1, 2, 3, 4]);
    match trim(&m, 9, json!({})) {
        Err(Error::InvalidField { field, message }) => {
            assert_eq!(field, "trim.max-tokens");
            assert!(
                message.contains("the newest message counts 10 tokens"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_tokenizer_counts_each_list_as_the_assembly_charges_it() {
    let builder = Builder::new(BuilderConfig::default()).unwrap();
    let m = json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "first question here"},
        {"role": "assistant", "content": "first answer given"},
        {"role": "user", "content": "second question"}
    ]);
    let counted = builder
        .count(
            &serde_json::from_value(
                json!({"model": "gpt-4o", "chat": {"shape": "openai-chat", "messages": m}}),
            )
            .unwrap(),
        )
        .unwrap();
    let total = counted.total;
    let r = |max: u64| -> TrimRequest {
        serde_json::from_value(json!({
            "chat": {"shape": "openai-chat", "messages": m},
            "max-tokens": max, "model": "gpt-4o", "include-system": true,
        }))
        .unwrap()
    };
    // Everything fits its exact count; a token less lets the oldest
    // exchange go, the system message kept.
    let t = builder.trim(&r(total), &mut NoHost).unwrap();
    assert_eq!((t.kept.as_slice(), t.tokens), (&[0, 1, 2, 3][..], total));
    let t = builder.trim(&r(total - 1), &mut NoHost).unwrap();
    assert_eq!(t.kept, [0, 2, 3]);
    assert!(t.tokens < total);
    // Counted as a request: the reply's 3, then each message.
    assert_eq!(
        total,
        3 + u64::from(counted.system) + counted.messages.iter().map(|&n| u64::from(n)).sum::<u64>()
    );
}

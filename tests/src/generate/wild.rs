//! Strings nobody wrote: any Unicode scalar value, in runs and mixes the
//! other generators never draw (controls, NUL, combining marks, right to
//! left, private use, non-characters, the last plane), looking like what
//! the field holds and not (a dated model name in Japanese, an id of a
//! lone `-`), and very long. A drawn scenario has some of its string
//! fields — model and tokenizer names, ids, roles' call ids, references,
//! scopes, stage ids, workflow status, a chat's texts and field names —
//! replaced by them, so that no field of the WIT is only ever ASCII where
//! a host may send anything.

use super::Source;
use ctxpack_core::{AssembleRequest, Candidate, Chat, Tokenizer};
use ctxpack_scenario::Scenario;
use ctxpack_scenario::stores::Answer;
use serde_json::Value;

/// Blocks a character is drawn from: (first, last) scalar values.
const BLOCKS: &[(u32, u32)] = &[
    (0x00, 0x1f),         // controls, NUL among them
    (0x20, 0x7e),         // ASCII
    (0x7f, 0x9f),         // DEL and C1 controls
    (0xa0, 0x2ff),        // Latin-1, extended Latin, spacing modifiers
    (0x300, 0x36f),       // combining marks
    (0x590, 0x6ff),       // Hebrew, Arabic (right to left)
    (0x900, 0xdff),       // Indic scripts, spacing marks
    (0x2000, 0x206f),     // spaces, joiners, bidi controls
    (0x3000, 0x30ff),     // CJK punctuation, kana
    (0x4e00, 0x4eff),     // CJK ideographs
    (0xd7b0, 0xd7ff),     // last before the surrogates
    (0xe000, 0xe0ff),     // private use
    (0xfdd0, 0xfdef),     // non-characters
    (0xfe00, 0xfe0f),     // variation selectors
    (0xfff0, 0xffff),     // specials, U+FFFF
    (0x1f300, 0x1f6ff),   // emoji
    (0x1d100, 0x1d1ff),   // musical symbols
    (0xe0000, 0xe007f),   // tags
    (0x10fff0, 0x10ffff), // the last plane's end
];

/// A character of any block; surrogates are not scalar values.
fn character(src: &mut Source) -> char {
    let (first, last) = src.pick(BLOCKS);
    let c = first + src.below(last - first + 1);
    char::from_u32(c).unwrap_or('\u{fffd}')
}

/// A wild string: empty, a lone separator, a familiar value spelt in
/// other scripts (a model name with a date, a tokenizer's name), a run
/// of any characters, or one that is very long.
pub fn string(src: &mut Source) -> String {
    match src.below(10) {
        0 => String::new(),
        1 => src
            .pick(&[
                "-",
                "--",
                "2024-08-06",
                "-2024-08-06",
                " ",
                "\u{0}",
                "\u{feff}",
            ])
            .to_owned(),
        2 => format!(
            "{}{}",
            src.pick(&["日本語", "õy\u{1f}:", "gpt-4o", "ŝ", "\u{301}", "claude"]),
            src.pick(&[
                "-2024-08-06",
                "-",
                "-日本",
                "-2024-08-0\u{300}6",
                "",
                "-latest"
            ])
        ),
        3 => {
            let c = character(src);
            c.to_string().repeat(1 + src.below(20_000) as usize)
        }
        _ => {
            let n = 1 + src.below(40);
            (0..n).map(|_| character(src)).collect()
        }
    }
}

/// Replaces some of `s`'s string fields with wild strings: each field
/// about once in four times (a scenario is drawn with wild strings about
/// once in eight).
pub fn strings(src: &mut Source, s: &mut Scenario) {
    let r = &mut s.request;
    let maybe = |src: &mut Source, field: &mut String| {
        if src.one_in(4) {
            *field = string(src);
        }
    };
    if src.one_in(4) {
        r.model = Some(string(src));
    }
    if src.one_in(4) {
        let name = string(src);
        r.tokenizer = Some(match src.one_in(2) {
            true => Tokenizer::Named(name),
            false => Tokenizer::Host(name),
        });
    }
    context(src, r);
    if let Some(w) = &mut r.workflow {
        maybe(src, &mut w.status);
        if src.one_in(4) {
            w.stage_id = Some(string(src));
        }
    }
    for stage in &mut r.stage_summaries {
        maybe(src, &mut stage.stage_id);
        maybe(src, &mut stage.outcome);
    }
    // A call id where a turn carries one (a user's turn carrying one is
    // refused whatever it is).
    for id in r
        .conversation
        .iter_mut()
        .filter_map(|t| t.tool_call_id.as_mut())
    {
        maybe(src, id);
    }
    if let Some(c) = &mut r.compaction {
        maybe(src, &mut c.hash);
    }
    // A chat's messages: any of their texts (roles, ids, contents, image
    // addresses, part types) and now and then a field of any name.
    if let Some(chat) = &mut r.chat
        && let Ok(mut messages) = serde_json::from_str::<Value>(&chat.messages)
    {
        json(src, &mut messages);
        *chat = Chat::new(chat.shape, &messages);
    }
    let answers = &mut s.host;
    for answer in [
        &mut answers.retrieve,
        &mut answers.expand_graph,
        &mut answers.recall_memory,
        &mut answers.repository_state,
    ]
    .into_iter()
    .flatten()
    {
        match answer {
            Answer::Items(items) | Answer::AllItems(items) => {
                for c in items {
                    candidate(src, c);
                }
            }
            Answer::Error(message) => maybe(src, message),
        }
    }
}

/// Some of the texts in `v` replaced by wild strings, and now and then a
/// field of a wild name added to an object.
fn json(src: &mut Source, v: &mut Value) {
    match v {
        Value::String(s) if src.one_in(4) => *s = string(src),
        Value::Array(items) => items.iter_mut().for_each(|item| json(src, item)),
        Value::Object(fields) => {
            fields.values_mut().for_each(|field| json(src, field));
            if src.one_in(8) {
                fields.insert(string(src), Value::String(string(src)));
            }
        }
        _ => {}
    }
}

fn context(src: &mut Source, r: &mut AssembleRequest) {
    let c = &mut r.context;
    if src.one_in(4) {
        c.trace_id = string(src);
    }
    for field in [
        &mut c.session_id,
        &mut c.user_id,
        &mut c.tenant_id,
        &mut c.project_id,
        &mut c.run_id,
        &mut c.attempt_id,
    ] {
        if src.one_in(4) {
            *field = Some(string(src));
        }
    }
    if src.one_in(4) {
        c.scopes.push(string(src));
    }
}

fn candidate(src: &mut Source, c: &mut Candidate) {
    if src.one_in(4) {
        c.id = string(src);
    }
    if src.one_in(4) {
        c.scope = Some(string(src));
    }
    if let Some(p) = &mut c.provenance {
        if src.one_in(4) {
            p.source_kind = string(src);
        }
        if src.one_in(4) {
            p.reference = string(src);
        }
        if src.one_in(4) {
            p.source_version = Some(string(src));
        }
        if src.one_in(4) {
            p.index_revision = Some(string(src));
        }
    }
}

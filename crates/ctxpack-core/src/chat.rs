//! Chat is the core's own language: a request's conversation given as a
//! provider's messages ([`Chat`]) is read here into its turns, charged as
//! the provider is sent it, and written back as the request to send
//! ([`ChatRequest`](crate::ChatRequest)) — once, for every host and the service.
//!
//! **In.** Each shape has a reader ([`openai`], [`responses`],
//! [`anthropic`], [`gemini`]) that turns the list into [`Turn`]s: one per
//! message (the Responses API's consecutive items of one model reply —
//! reasoning, a message, function calls — are one turn, as a Chat
//! Completions reply is one message), with its text, every tool call it
//! makes and every call it answers, what it sends beside its text, and
//! its images. A call and its results are one unit of the conversation:
//! kept or dropped together, however many calls a turn makes (see
//! [`derive()`]). A part ctxpack cannot charge (audio, a file, a PDF, a
//! server tool's block) is refused, naming its place. The system text —
//! given apart, or the system messages that lead the list — is the
//! request's system prompt (after the request's own).
//!
//! **Charged as sent.** A turn sent as a message costs the model's
//! message overhead (its role's header; OpenAI's 3 and the role's token),
//! its text (text parts joined by line breaks), and, beside its text,
//! each other field it sends counted as a text — a tool call's name and
//! arguments (Chat Completions' `tool_calls` as their JSON, as OpenAI's
//! count of a message takes every field), a result's call id, a name (and
//! OpenAI's one token for it), a thinking block — and its images by the
//! model's [`ImageRule`]. A pack sent as messages is charged the model's
//! reply overhead once. Where a charge is an upper bound (an image whose
//! size is not known, encrypted reasoning), the snapshot's
//! [`ChatReport::bounded`](crate::snapshot::ChatReport::bounded) names it.
//!
//! **Out.** [`write()`] gives the pack back in the chat's shape: the system
//! text where the shape keeps it, each kept turn as the caller's own
//! messages, unchanged (but for a cache hint, or a result compaction
//! cleared), in the pack's layout, the other context as a message of the
//! pack's, and the provider's cache hints.

mod anthropic;
mod gemini;
pub(crate) mod images;
mod openai;
mod responses;
mod write;

pub(crate) use write::{Pack, write};

use crate::error::Error;
use crate::tokenizer::Meter;
use crate::types::{AssembleRequest, Chat, ChatShape, ConversationTurn, ImageRule, PackForm, Role};
use images::Image;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// The request field a chat is read from.
const ROOT: &str = "request.chat.messages";

/// A chat as read: its messages as given, its system text, and its turns.
pub(crate) struct Read {
    pub shape: ChatShape,
    /// Each message's JSON text, as given.
    pub items: Vec<Box<RawValue>>,
    /// The system text: given apart, then the leading system messages'.
    pub system: String,
    /// The role of the system message that led the list (`system`,
    /// `developer`), or the key the system text was given under.
    pub system_key: Option<String>,
    /// The turns, in order.
    pub turns: Vec<Turn>,
    /// Where a charge is an upper bound, and why.
    pub bounded: Vec<String>,
    /// The image rule and model it was priced by.
    pub images: Option<ImageRule>,
    pub model: Option<String>,
}

/// One turn of a chat: a message (or a reply's items), as charged.
#[derive(Debug, Default)]
pub(crate) struct Turn {
    pub role: Option<Role>,
    /// The text the model reads, its parts joined by line breaks.
    pub text: Vec<String>,
    /// The calls it makes: id, name, arguments (JSON text).
    pub calls: Vec<(String, String, String)>,
    /// The calls it answers, by id.
    pub answers: Vec<String>,
    /// What it sends beside its text, each counted as a text.
    pub pieces: Vec<String>,
    /// Tokens beside its text not counted from a text: its images', and
    /// OpenAI's token for a name.
    pub fixed: u32,
    /// Its messages in the list: the first, and one past the last.
    pub first: usize,
    pub end: usize,
}

impl Turn {
    fn role(&self) -> Role {
        self.role.unwrap_or(Role::User)
    }

    /// Its text as charged and rendered.
    fn joined(&self) -> String {
        self.text.join("\n")
    }
}

/// What a reader is given: the model's image rule, for the images it
/// meets, and the bounds it finds.
pub(crate) struct Pricing<'a> {
    pub images: Option<&'a ImageRule>,
    pub model: Option<&'a str>,
    pub bounded: Vec<String>,
}

impl Pricing<'_> {
    /// Charges `image`, found at `at`, to `turn`.
    fn image(&mut self, turn: &mut Turn, image: Image, at: &str) -> Result<(), Error> {
        let model = self.model.map_or_else(
            || "a request that names no model".to_owned(),
            |m| format!("model {m:?}"),
        );
        let Some(rule) = self.images else {
            return Err(Error::invalid(
                at,
                format!(
                    "what an image costs {model} is not known (its profile gives no `images`): name a model whose profile prices images, or give a profile of your own in the builder's `models`"
                ),
            ));
        };
        let Some(tokens) = images::price(rule, image) else {
            return Err(Error::invalid(at, format!("{model} takes no images")));
        };
        if image.size.is_none() && !(image.low && matches!(rule, ImageRule::Tiles(_))) {
            self.bounded.push(format!(
                "{at}: an image whose size is not known (given by URL or in a format not read), charged the most one can cost ({tokens})"
            ));
        }
        turn.fixed = turn.fixed.saturating_add(tokens);
        Ok(())
    }
}

/// A message as a reader sees it: its fields and its place.
pub(crate) struct Msg<'a> {
    pub v: &'a Map<String, Value>,
    pub at: String,
}

impl<'a> Msg<'a> {
    /// The string at `key`, if it is one.
    fn str(&self, key: &str) -> Option<&'a str> {
        self.v.get(key).and_then(Value::as_str)
    }

    /// The string at `key`, required.
    fn need(&self, key: &str, what: &str) -> Result<&'a str, Error> {
        match self.v.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(Error::invalid(
                format!("{}.{key}", self.at),
                format!("expected {what} (a string), got {}", kind(other)),
            )),
            None => Err(Error::invalid(
                format!("{}.{key}", self.at),
                format!("missing: {what}"),
            )),
        }
    }

    /// The place of `key` in it.
    fn at(&self, key: &str) -> String {
        format!("{}.{key}", self.at)
    }
}

/// What a JSON value is, for a refusal.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `v` as JSON text: no whitespace, keys sorted, non-ASCII as it is — as
/// a piece sent beside a message's text is counted.
pub(crate) fn canonical(v: &Value) -> String {
    v.to_string()
}

/// Reads `chat`, its images priced by `images` (the model's rule).
pub(crate) fn read(
    chat: &Chat,
    images: Option<&ImageRule>,
    model: Option<&str>,
) -> Result<Read, Error> {
    let shape = chat.shape;
    let text = chat.messages.trim_start();
    let list_name = shape.list_name();
    let (list, at, mut system, mut system_key) = match text.as_bytes().first() {
        Some(b'[') => (text.to_owned(), ROOT.to_owned(), String::new(), None),
        Some(b'{') => {
            let object: std::collections::BTreeMap<String, Box<RawValue>> =
                serde_json::from_str(text).map_err(|e| Error::invalid(ROOT, e.to_string()))?;
            let system_names = system_keys(shape);
            let mut list = None;
            let (mut system, mut system_key) = (String::new(), None);
            for (key, value) in &object {
                if key == list_name {
                    list = Some(value.get().to_owned());
                } else if system_names.contains(&key.as_str()) {
                    let at = format!("{ROOT}.{key}");
                    system = system_text(shape, value.get(), &at)?;
                    system_key = Some(key.clone());
                } else {
                    return Err(Error::invalid(
                        format!("{ROOT}.{key}"),
                        format!(
                            "only the messages (`{list_name}`) and the system text (`{}`) are read: send the model, tools and options beside the pack's request",
                            system_names[0]
                        ),
                    ));
                }
            }
            let Some(list) = list else {
                return Err(Error::invalid(
                    format!("{ROOT}.{list_name}"),
                    "missing: the list of messages",
                ));
            };
            (list, format!("{ROOT}.{list_name}"), system, system_key)
        }
        _ => {
            return Err(Error::invalid(
                ROOT,
                format!(
                    "expected JSON text of a list of messages, or of an object holding one under `{list_name}`"
                ),
            ));
        }
    };
    let items: Vec<Box<RawValue>> = match (shape, list.trim_start().as_bytes().first()) {
        // The Responses API takes a string for one user message.
        (ChatShape::OpenaiResponses, Some(b'"')) => {
            let one = format!("{{\"content\":{},\"role\":\"user\"}}", list.trim());
            vec![RawValue::from_string(one).map_err(|e| Error::invalid(&at, e.to_string()))?]
        }
        _ => serde_json::from_str(&list).map_err(|e| Error::invalid(&at, e.to_string()))?,
    };
    let values: Vec<Value> = items
        .iter()
        .enumerate()
        .map(|(i, raw)| {
            serde_json::from_str::<Value>(raw.get())
                .map_err(|e| Error::invalid(format!("{at}[{i}]"), e.to_string()))
        })
        .collect::<Result<_, _>>()?;
    let mut msgs = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        let Value::Object(map) = v else {
            return Err(Error::invalid(
                format!("{at}[{i}]"),
                format!("expected a message (an object), got {}", kind(v)),
            ));
        };
        msgs.push(Msg {
            v: map,
            at: format!("{at}[{i}]"),
        });
    }
    let mut pricing = Pricing {
        images,
        model,
        bounded: Vec::new(),
    };
    let shaped = match shape {
        ChatShape::OpenaiChat => openai::read(&msgs, &mut pricing)?,
        ChatShape::OpenaiResponses => responses::read(&msgs, &mut pricing)?,
        ChatShape::Anthropic => anthropic::read(&msgs, &mut pricing)?,
        ChatShape::Gemini => gemini::read(&msgs, &mut pricing)?,
    };
    if !shaped.system.is_empty() {
        if !system.is_empty() {
            system.push_str("\n\n");
        }
        system.push_str(&shaped.system);
        system_key = system_key.or(shaped.system_role);
    }
    unique_calls(&shaped.turns, &msgs)?;
    Ok(Read {
        shape,
        items,
        system,
        system_key,
        turns: shaped.turns,
        bounded: pricing.bounded,
        images: images.cloned(),
        model: model.map(str::to_owned),
    })
}

/// What a shape's reader gives.
pub(crate) struct Shaped {
    pub turns: Vec<Turn>,
    /// The text of the system messages that lead the list.
    pub system: String,
    /// The role the first of them had.
    pub system_role: Option<String>,
}

/// The keys a shape's object form gives its system text under.
fn system_keys(shape: ChatShape) -> &'static [&'static str] {
    match shape {
        ChatShape::OpenaiChat => &["system"],
        ChatShape::OpenaiResponses => &["instructions"],
        ChatShape::Anthropic => &["system"],
        ChatShape::Gemini => &["systemInstruction", "system_instruction"],
    }
}

/// The system text given apart at `at`: a string, a list of text blocks
/// (Anthropic's), or a content of text parts (Gemini's).
fn system_text(shape: ChatShape, raw: &str, at: &str) -> Result<String, Error> {
    let v: Value = serde_json::from_str(raw).map_err(|e| Error::invalid(at, e.to_string()))?;
    let texts = |blocks: &[Value], key: &str| -> Result<Vec<String>, Error> {
        blocks
            .iter()
            .enumerate()
            .map(|(j, b)| match b.get("text").and_then(Value::as_str) {
                Some(t) => Ok(t.to_owned()),
                None => Err(Error::invalid(
                    format!("{at}{key}[{j}]"),
                    "a system text's part must be text",
                )),
            })
            .collect()
    };
    match (&v, shape) {
        (Value::String(s), _) => Ok(s.clone()),
        (Value::Array(blocks), ChatShape::Anthropic) => Ok(texts(blocks, "")?.join("\n")),
        (Value::Object(o), ChatShape::Gemini) => match o.get("parts") {
            Some(Value::Array(parts)) => Ok(texts(parts, ".parts")?.join("\n")),
            _ => Err(Error::invalid(
                format!("{at}.parts"),
                "expected the system instruction's text parts",
            )),
        },
        _ => Err(Error::invalid(
            at,
            format!("expected the system text, got {}", kind(&v)),
        )),
    }
}

/// Refuses a call id made twice: its results would answer either.
fn unique_calls(turns: &[Turn], msgs: &[Msg]) -> Result<(), Error> {
    let mut made: HashMap<&str, usize> = HashMap::new();
    for t in turns {
        for (id, _, _) in &t.calls {
            if id.is_empty() {
                return Err(Error::invalid(
                    &msgs[t.first].at,
                    "a tool call needs its id: its results answer it by the id",
                ));
            }
            if let Some(before) = made.insert(id, t.first) {
                return Err(Error::invalid(
                    &msgs[t.first].at,
                    format!(
                        "call `{id}` is made by {} already: each call's id is its own",
                        msgs[before].at
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The conversation the pipeline assembles from `read`: one turn per
/// chat turn, charged as `form` sends it. A call and its results share
/// the first call id of the turn that makes it, so a turn of parallel
/// calls and all their results are one unit; sent as messages, each
/// turn's text is as given (the caller's own is sent) and what it sends
/// beside its text is counted by `meter` into its attached tokens; sent
/// as flat text, its calls are written into its text.
pub(crate) fn derive(read: &Read, meter: &Meter, form: PackForm) -> Vec<ConversationTurn> {
    let mut out = derive_roles(read);
    for (t, turn) in read.turns.iter().zip(out.iter_mut()) {
        let mut content = t.joined();
        let attached = match form {
            PackForm::Text => {
                for (_, name, arguments) in &t.calls {
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(&format!("[tool call] {name}({arguments})"));
                }
                None
            }
            PackForm::Messages => {
                let beside = t
                    .pieces
                    .iter()
                    .fold(t.fixed, |n, p| n.saturating_add(meter.count(p)));
                (beside > 0).then_some(beside)
            }
        };
        turn.content = content;
        turn.attached_tokens = attached;
    }
    out
}

/// The turns of `read` with their roles and the call ids that make units
/// of them (see [`derive()`]), their contents not yet written.
pub(crate) fn derive_roles(read: &Read) -> Vec<ConversationTurn> {
    let mut group: HashMap<&str, &str> = HashMap::new();
    let mut out = Vec::with_capacity(read.turns.len());
    for t in &read.turns {
        let role = t.role();
        let tool_call_id = match role {
            Role::Assistant => t.calls.first().map(|(id, _, _)| {
                for (other, _, _) in &t.calls {
                    group.insert(other, id);
                }
                id.clone()
            }),
            Role::Tool => t
                .answers
                .first()
                .map(|a| group.get(a.as_str()).copied().unwrap_or(a).to_owned()),
            _ => None,
        };
        out.push(ConversationTurn {
            role,
            content: String::new(),
            tool_call_id,
            attached_tokens: None,
        });
    }
    out
}

/// `request` as the pipeline assembles it: its chat's turns as its
/// conversation (see [`derive()`]), the chat's system text after its own
/// system prompt, sent as messages unless it asks for the flat text.
pub(crate) fn request(request: &AssembleRequest, read: &Read, meter: &Meter) -> AssembleRequest {
    let form = request.form.unwrap_or(PackForm::Messages);
    let system_prompt = match (request.system_prompt.is_empty(), read.system.is_empty()) {
        (_, true) => request.system_prompt.clone(),
        (true, false) => read.system.clone(),
        (false, false) => format!("{}\n\n{}", request.system_prompt, read.system),
    };
    AssembleRequest {
        context: request.context.clone(),
        query: request.query.clone(),
        model: request.model.clone(),
        tokenizer: request.tokenizer.clone(),
        budget: request.budget,
        entry_overhead: request.entry_overhead,
        reply_overhead: request.reply_overhead,
        system_prompt,
        workflow: request.workflow.clone(),
        instructions: request.instructions.clone(),
        current_task: request.current_task.clone(),
        conversation: derive(read, meter, form),
        chat: None,
        keep_last: request.keep_last,
        conversation_start: request.conversation_start,
        form: Some(form),
        layout: request.layout,
        stage_summaries: request.stage_summaries.clone(),
        compaction: request.compaction.clone(),
    }
}

/// Charges the tool turns of `request` (derived from `read`, sent as
/// messages) that `state` clears as they are then sent: each message of
/// the turn with its results the placeholder (see [`write::clear`]),
/// read again, so that what is charged is what is sent — the call ids,
/// names and other blocks a cleared message still carries included.
pub(crate) fn charge_cleared(
    read: &Read,
    request: &mut AssembleRequest,
    state: &crate::types::Compaction,
    meter: &Meter,
) {
    for (t, (turn, chat_turn)) in request.conversation.iter_mut().zip(&read.turns).enumerate() {
        if !crate::compact::is_cleared(t, turn.role, state) {
            continue;
        }
        if let Some(sent) = cleared(read, chat_turn) {
            let beside = sent
                .pieces
                .iter()
                .fold(sent.fixed, |n, p| n.saturating_add(meter.count(p)));
            turn.content = sent.joined();
            turn.attached_tokens = (beside > 0).then_some(beside);
        }
    }
}

/// `turn` of `read` as compaction sends it, its results cleared: its
/// messages written so and read again by the shape's reader, as one turn.
/// None where they do not read (a message the writer left as it was).
fn cleared(read: &Read, turn: &Turn) -> Option<Turn> {
    let values: Vec<Value> = read
        .items
        .get(turn.first..turn.end)?
        .iter()
        .map(|raw| serde_json::from_str(&write::clear(read.shape, raw.get())))
        .collect::<Result<_, _>>()
        .ok()?;
    let msgs: Vec<Msg> = values
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            v.as_object().map(|map| Msg {
                v: map,
                at: format!("{ROOT}[{}]", turn.first + i),
            })
        })
        .collect();
    // Images are priced again by the rule they were read with; what is
    // left of them is what is sent (a result's own are cleared).
    let mut pricing = Pricing {
        images: read.images.as_ref(),
        model: read.model.as_deref(),
        bounded: Vec::new(),
    };
    let shaped = match read.shape {
        ChatShape::OpenaiChat => openai::read(&msgs, &mut pricing),
        ChatShape::OpenaiResponses => responses::read(&msgs, &mut pricing),
        ChatShape::Anthropic => anthropic::read(&msgs, &mut pricing),
        ChatShape::Gemini => gemini::read(&msgs, &mut pricing),
    }
    .ok()?;
    let mut out = Turn::default();
    for t in shaped.turns {
        out.text.extend(t.text);
        out.pieces.extend(t.pieces);
        out.fixed = out.fixed.saturating_add(t.fixed);
    }
    Some(out)
}

/// The snapshot's account of how `read` was read.
pub(crate) fn report(read: &Read) -> crate::snapshot::ChatReport {
    crate::snapshot::ChatReport {
        shape: read.shape,
        turns: read
            .turns
            .iter()
            .map(|t| crate::tokenizer::clamp_len(t.first))
            .collect(),
        bounded: read.bounded.clone(),
    }
}

/// A part of a message's content (or an item) of a kind this reader does
/// not carry, refused: `what` is `part`, `block` or `item`.
fn not_carried(at: &str, what: &str, kind: &str, carried: &str) -> Error {
    Error::invalid(
        at,
        format!("a {what} of type {kind:?} is not carried: ctxpack charges and sends {carried}"),
    )
}

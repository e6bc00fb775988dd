//! Trimming a chat to a budget, as LangChain's `trim_messages` trims it:
//! one operation of the core, for every host's drop-in.
//!
//! The chat is read as an assembly reads it (see [`crate::chat`]): its
//! system messages that lead it, then its turns, a tool call and its
//! results one unit, kept or dropped whole; a result without its call is
//! never kept. Then, as LangChain's strategies do:
//!
//! - `last`: the trailing messages not of `end-on`'s roles are let go;
//!   the newest units that fit are kept (the leading system messages
//!   with them, with `include-system`); with `allow-partial`, the newest
//!   end of the next older message is kept in the room left — the last
//!   blocks of a list content that fit, else the last splits of its last
//!   block's text —; and the kept messages then begin with one of
//!   `start-on`'s roles. The newest message is never silently lost:
//!   where nothing of the conversation would be kept, the trim fails
//!   saying why (LangChain's returns nothing).
//! - `first`: the oldest units that fit, the start of the next one with
//!   `allow-partial`, and then the kept messages end with one of
//!   `end-on`'s roles.
//!
//! A list of messages counts as a request of them counts: with a
//! tokenizer, the reply's priming and each message as an assembly
//! charges it (see [`crate::chat`]); with a host's counter
//! (`Tokenizer::Host`), as that counter counts the list, asked through
//! `counter.count-messages` in rounds of at most 16 lists, each the
//! chat's messages in their order (never reversed). The search assumes
//! a longer list never counts less, as LangChain's binary search does.

use crate::assembly::{Assembly, Channel};
use crate::builder::Builder;
use crate::capability::Capability;
use crate::chat;
use crate::error::{Error, Failure};
use crate::host::Host;
use crate::tokenizer::{CountCache, Meter, TokenCounter};
use crate::types::{
    AgentContext, AssembleRequest, BlockRange, Chat, ChatShape, MessageList, PackForm, Partial,
    Role, TextSplit, Tokenizer, TrimRequest, TrimStrategy, Trimmed,
};
use serde_json::Value;

impl Builder {
    /// Trims `request`'s chat, asking `host` for what it lends (its
    /// counter of messages, its splitter): [`Builder::trim_start`] driven
    /// to its end.
    pub fn trim(&self, request: &TrimRequest, host: &mut dyn Host) -> Result<Trimmed, Failure> {
        self.trim_start(request)
            .drive(host, &AgentContext::default())
    }

    /// Starts trimming `request`'s chat, for a host that answers step by
    /// step (see [`Assembly`]): its calls are only `count-messages` and
    /// `split-text`.
    pub fn trim_start<'a>(&'a self, request: &'a TrimRequest) -> Assembly<'a, Trimmed> {
        Assembly::new(move |channel| async move {
            trim(self, request, &channel).await.map_err(Failure::from)
        })
    }

    /// As [`Builder::trim_start`], owning what it needs.
    pub fn trim_start_owned<B>(builder: B, request: TrimRequest) -> Assembly<'static, Trimmed>
    where
        B: std::ops::Deref<Target = Builder> + 'static,
    {
        Assembly::new(move |channel| async move {
            trim(&builder, &request, &channel)
                .await
                .map_err(Failure::from)
        })
    }
}

/// One element a trim keeps or lets go: a leading system message, or a
/// turn (its messages, one past the last).
struct Element {
    items: std::ops::Range<usize>,
    role: Role,
    /// Its unit: elements of one unit go together.
    unit: usize,
    /// Whether it may be cut: one message, no call, no result.
    cuttable: bool,
}

/// How lists are counted.
enum Counting<'b> {
    /// With a tokenizer: each message's charge (a turn's on its first
    /// message), and the reply's priming once.
    Tokens {
        counter: Box<dyn TokenCounter + 'b>,
        tokenizer: Tokenizer,
        overhead: u32,
        reply: u64,
        charges: Vec<u64>,
    },
    /// With the host's counter of messages, by this name.
    Host(String),
}

struct Trim<'r, 'b> {
    request: &'r TrimRequest,
    read: chat::Read,
    elements: Vec<Element>,
    counting: Counting<'b>,
    channel: &'r Channel,
}

async fn trim(
    builder: &Builder,
    request: &TrimRequest,
    channel: &Channel,
) -> Result<Trimmed, Error> {
    if request.strategy == TrimStrategy::First {
        let refused = match (request.include_system, request.start_on.is_empty()) {
            (true, _) => Some("include-system"),
            (_, false) => Some("start-on"),
            _ => None,
        };
        if let Some(field) = refused {
            return Err(Error::invalid(
                format!("trim.{field}"),
                "only valid with the strategy `last`, as LangChain's trim_messages says",
            ));
        }
    }
    let asked = AssembleRequest {
        model: request.model.clone(),
        tokenizer: request.tokenizer.clone(),
        entry_overhead: request.entry_overhead,
        reply_overhead: request.reply_overhead,
        form: Some(PackForm::Messages),
        ..AssembleRequest::default()
    };
    crate::validate::request(&asked).map_err(renamed)?;
    let settled = builder.models.settle(&asked).map_err(renamed)?;
    let images = settled
        .model
        .as_ref()
        .and_then(|m| m.profile.images.as_ref());
    let read = chat::read(&request.chat, images, request.model.as_deref()).map_err(renamed)?;
    let elements = elements(&read);
    let counting = match &settled.tokenizer {
        Tokenizer::Host(name) => Counting::Host(name.clone()),
        tokenizer => {
            let counter = match (builder.counter(tokenizer), &settled.model) {
                (Ok(c), _) => c,
                (Err(e), Some(model)) => return Err(crate::model::missing_file(model, e)),
                (Err(e), None) => return Err(e),
            };
            let mut held = builder.counts();
            let meter = Meter::new(counter.as_ref(), tokenizer, held.cache());
            let charges = charges(&read, &elements, &meter, settled.overhead).map_err(renamed)?;
            Counting::Tokens {
                counter,
                tokenizer: tokenizer.clone(),
                overhead: settled.overhead,
                reply: u64::from(settled.reply),
                charges,
            }
        }
    };
    let t = Trim {
        request,
        read,
        elements,
        counting,
        channel,
    };
    match request.strategy {
        TrimStrategy::Last => t.last().await,
        TrimStrategy::First => t.first().await,
    }
}

/// `error` with its field named under `trim` rather than `request`.
fn renamed(error: Error) -> Error {
    match error {
        Error::InvalidField { field, message } => Error::InvalidField {
            field: match field.strip_prefix("request") {
                Some(rest) => format!("trim{rest}"),
                None => field,
            },
            message,
        },
        other => other,
    }
}

/// The chat's elements in order: each leading system message, then each
/// turn, with its unit (a result without its call has none: it is never
/// kept).
fn elements(read: &chat::Read) -> Vec<Element> {
    let first_turn = read.turns.first().map_or(read.items.len(), |t| t.first);
    let mut out: Vec<Element> = (0..first_turn)
        .map(|i| Element {
            items: i..i + 1,
            role: Role::System,
            unit: i,
            cuttable: true,
        })
        .collect();
    let turns = chat::derive_roles(read);
    let units = crate::conversation::units(&turns);
    let mut unit_of = vec![None; turns.len()];
    for (u, unit) in units.iter().enumerate() {
        for &m in unit.members.iter() {
            unit_of[m] = Some(first_turn + u);
        }
    }
    for (k, (t, turn)) in read.turns.iter().zip(&turns).enumerate() {
        let Some(unit) = unit_of[k] else { continue };
        out.push(Element {
            items: t.first..t.end,
            role: turn.role,
            unit,
            cuttable: t.end == t.first + 1 && t.calls.is_empty() && t.answers.is_empty(),
        });
    }
    out
}

/// Each message's charge as an assembly charges it: a leading system
/// message's, a turn's on its first message.
fn charges(
    read: &chat::Read,
    elements: &[Element],
    meter: &Meter,
    overhead: u32,
) -> Result<Vec<u64>, Error> {
    let derived = chat::derive(read, meter, PackForm::Messages);
    let mut charges = vec![0u64; read.items.len()];
    let mut by_first = std::collections::HashMap::new();
    for (t, turn) in read.turns.iter().zip(&derived) {
        let n = u64::from(overhead)
            + u64::from(meter.count(&turn.content))
            + u64::from(turn.attached_tokens.unwrap_or(0));
        by_first.insert(t.first, n);
    }
    for e in elements {
        let i = e.items.start;
        charges[i] = match by_first.get(&i) {
            Some(&n) => n,
            None => u64::from(overhead) + u64::from(meter.count(&message_text(&read.items[i])?)),
        };
    }
    Ok(charges)
}

/// A system message's text, as a reader reads it.
fn message_text(raw: &serde_json::value::RawValue) -> Result<String, Error> {
    let v: Value =
        serde_json::from_str(raw.get()).map_err(|e| Error::invalid("trim.chat", e.to_string()))?;
    Ok(match v.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    })
}

/// The most probes a round of the host's counts asks.
const PROBES: usize = 16;

impl Trim<'_, '_> {
    /// The list of elements `which` (in order) and a cut message.
    fn list(&self, which: &[usize], cut: Option<&Partial>) -> MessageList {
        let messages = which
            .iter()
            .flat_map(|&e| self.elements[e].items.clone())
            .map(crate::tokenizer::clamp_len)
            .collect();
        MessageList {
            messages,
            cut: cut.cloned(),
        }
    }

    /// What each list counts as a request of it.
    async fn costs(&self, lists: Vec<MessageList>) -> Result<Vec<u64>, Error> {
        match &self.counting {
            Counting::Tokens { reply, charges, .. } => lists
                .iter()
                .map(|list| {
                    let given: u64 = list.messages.iter().map(|&i| charges[i as usize]).sum();
                    let cut = match &list.cut {
                        Some(p) => self.cut_charge(p)?,
                        None => 0,
                    };
                    Ok(reply + given + cut)
                })
                .collect(),
            Counting::Host(name) => {
                let asked = lists.len();
                let counts = self
                    .channel
                    .count_messages(name, lists)
                    .await
                    .map_err(|e| not_lent(e, name))?;
                if counts.len() != asked {
                    return Err(Error::HostFailed {
                        capability: Capability::CountMessages.name().into(),
                        message: format!("answered {} counts for {asked} lists", counts.len()),
                    });
                }
                Ok(counts.into_iter().map(u64::from).collect())
            }
        }
    }

    /// A cut message's charge, as an assembly charges the message it is.
    fn cut_charge(&self, p: &Partial) -> Result<u64, Error> {
        let Counting::Tokens {
            counter,
            tokenizer,
            overhead,
            ..
        } = &self.counting
        else {
            return Ok(0);
        };
        let json = cut_message(self.read.shape, &self.read.items[p.message as usize], p)?;
        let chat = Chat {
            shape: self.read.shape,
            messages: format!("[{json}]"),
        };
        let read = chat::read(&chat, None, None).map_err(renamed)?;
        let mut none = CountCache::new(0);
        let meter = Meter::new(counter.as_ref(), tokenizer, &mut none);
        let turns = chat::derive(&read, &meter, PackForm::Messages);
        let (text, beside) = match turns.first() {
            Some(t) => (t.content.as_str(), t.attached_tokens.unwrap_or(0)),
            None => (read.system.as_str(), 0),
        };
        Ok(u64::from(*overhead) + u64::from(counter.count(text)) + u64::from(beside))
    }

    /// The largest of `count` options (longer lists, in order; `option(k)`
    /// makes the `k`-th, only for those asked) whose list fits
    /// `max-tokens`, and its count; asked in rounds of at most
    /// [`PROBES`], each narrowing where the largest lies.
    async fn largest(
        &self,
        count: usize,
        option: &dyn Fn(usize) -> MessageList,
    ) -> Result<Option<(usize, u64)>, Error> {
        let max = u64::from(self.request.max_tokens);
        // options[..=fits] are known to fit up to `fits`; from `over` on not.
        let (mut fits, mut over): (Option<(usize, u64)>, usize) = (None, count);
        loop {
            let from = fits.map_or(0, |(k, _)| k + 1);
            if from >= over {
                return Ok(fits);
            }
            let span = over - from;
            let probes: Vec<usize> = match span <= PROBES {
                true => (from..over).collect(),
                false => {
                    let mut p: Vec<usize> = (0..PROBES).map(|j| from + span * j / PROBES).collect();
                    p.push(over - 1);
                    p.dedup();
                    p
                }
            };
            let counts = self
                .costs(probes.iter().map(|&k| option(k)).collect())
                .await?;
            for (&k, &n) in probes.iter().zip(&counts) {
                if n <= max {
                    if fits.is_none_or(|(f, _)| k > f) && k < over {
                        fits = Some((k, n));
                    }
                } else {
                    over = over.min(k);
                }
            }
            // A count that grows back under the budget past one over it
            // is not believed: nothing past the first over is kept.
            if fits.is_some_and(|(k, _)| k >= over) {
                fits = None;
                for (&k, &n) in probes.iter().zip(&counts) {
                    if k < over && n <= max {
                        fits = Some((k, n));
                    }
                }
            }
            if span <= PROBES {
                return Ok(fits);
            }
        }
    }

    /// The splits of `text`: at line breaks, or the host's.
    async fn splits(&self, text: &str) -> Result<Vec<String>, Error> {
        match self.request.split {
            TextSplit::Lines => Ok(text.split_inclusive('\n').map(str::to_owned).collect()),
            TextSplit::Host => {
                let mut split = self
                    .channel
                    .split_text(vec![text.to_owned()])
                    .await
                    .map_err(Error::from)?;
                match split.len() {
                    1 => Ok(split.remove(0).pieces),
                    n => Err(Error::HostFailed {
                        capability: Capability::SplitText.name().into(),
                        message: format!("answered {n} splits for 1 text"),
                    }),
                }
            }
        }
    }

    /// The most of element `e` that fits beside `whole` (elements kept),
    /// as LangChain cuts it: whole blocks of a list content (the last
    /// ones with `keep_end`), else the splits of its last (first) block's
    /// text, as many as fit.
    async fn partial(
        &self,
        e: usize,
        whole: &[usize],
        keep_end: bool,
    ) -> Result<Option<(Partial, u64)>, Error> {
        let element = &self.elements[e];
        if !element.cuttable {
            return Ok(None);
        }
        let message = crate::tokenizer::clamp_len(element.items.start);
        let v: Value = serde_json::from_str(self.read.items[element.items.start].get())
            .map_err(|err| Error::invalid("trim.chat", err.to_string()))?;
        let key = content_key(self.read.shape);
        let with = |p: &Partial| self.list(whole, Some(p));
        let mut text = v.get(key).and_then(Value::as_str).map(str::to_owned);
        if let Some(Value::Array(blocks)) = v.get(key) {
            let n = blocks.len();
            // Keeping fewer blocks counts less: the most that fit.
            let option = |j: usize| Partial {
                message,
                blocks: Some(BlockRange {
                    first: crate::tokenizer::clamp_len(if keep_end { n - (j + 1) } else { 0 }),
                    count: crate::tokenizer::clamp_len(j + 1),
                }),
                text: None,
            };
            let found = self
                .largest(n.saturating_sub(1), &|j| with(&option(j)))
                .await?;
            if let Some((j, tokens)) = found {
                return Ok(Some((option(j), tokens)));
            }
            let block = if keep_end {
                blocks.last()
            } else {
                blocks.first()
            };
            text = block.and_then(|b| match b {
                Value::String(s) => Some(s.clone()),
                b if b.get("type").and_then(Value::as_str) == Some("text") => {
                    b.get("text").and_then(Value::as_str).map(str::to_owned)
                }
                _ => None,
            });
        }
        let Some(text) = text.filter(|t| !t.is_empty()) else {
            return Ok(None);
        };
        let splits = self.splits(&text).await?;
        let n = splits.len();
        let option = |j: usize| Partial {
            message,
            blocks: None,
            text: Some(match keep_end {
                true => splits[n - (j + 1)..].concat(),
                false => splits[..=j].concat(),
            }),
        };
        let found = self.largest(n, &|j| with(&option(j))).await?;
        Ok(found.map(|(j, tokens)| (option(j), tokens)))
    }

    /// LangChain's `last`.
    async fn last(&self) -> Result<Trimmed, Error> {
        let all: Vec<usize> = (0..self.elements.len()).collect();
        let is =
            |e: usize, roles: &[Role]| roles.is_empty() || roles.contains(&self.elements[e].role);
        // Trailing messages not of `end-on`'s roles go first.
        let mut end = all.len();
        while end > 0 && !is(all[end - 1], &self.request.end_on) {
            end -= 1;
        }
        let leading = self
            .elements
            .iter()
            .take_while(|e| e.role == Role::System && e.items.start < self.first_turn())
            .count();
        let (system, rest): (Vec<usize>, Vec<usize>) = match self.request.include_system {
            true => (
                all[..leading.min(end)].to_vec(),
                all[leading.min(end)..end].to_vec(),
            ),
            false => (Vec::new(), all[..end].to_vec()),
        };
        if !system.is_empty() {
            let alone = self.costs(vec![self.list(&system, None)]).await?[0];
            if alone > u64::from(self.request.max_tokens) {
                return Err(Error::invalid(
                    "trim.max-tokens",
                    format!(
                        "the system message alone counts {alone} tokens, over max-tokens ({}): raise it, or leave include-system off (LangChain's trim_messages keeps it all the same)",
                        self.request.max_tokens
                    ),
                ));
            }
        }
        // Where the kept run may begin: a unit's first element.
        let starts: Vec<usize> = (0..rest.len())
            .rev()
            .filter(|&k| k == 0 || self.elements[rest[k]].unit != self.elements[rest[k - 1]].unit)
            .collect();
        let option = |j: usize| self.list(&[&system[..], &rest[starts[j]..]].concat(), None);
        let found = self.largest(starts.len(), &option).await?;
        let from = found.map_or(rest.len(), |(j, _)| starts[j]);
        let mut kept: Vec<usize> = rest[from..].to_vec();
        let mut tokens = found.map(|(_, n)| n);
        let mut partial = None;
        if self.request.allow_partial && from > 0 {
            let whole = [&system[..], &kept[..]].concat();
            if let Some((p, n)) = self.partial(rest[from - 1], &whole, true).await? {
                kept.insert(0, rest[from - 1]);
                partial = Some(p);
                tokens = Some(n);
            }
        }
        let newest_fits = !kept.is_empty();
        // The kept run begins with one of `start-on`'s roles.
        while let Some(&e) = kept.first() {
            if is(e, &self.request.start_on) {
                break;
            }
            self.drop_unit(&mut kept, &mut partial, e);
            tokens = None;
        }
        if kept.is_empty() && !rest.is_empty() {
            let newest = &rest[*starts.first().unwrap_or(&0)..];
            let needed = self
                .costs(vec![self.list(&[&system[..], newest].concat(), None)])
                .await?[0];
            let message = match newest_fits {
                false => format!(
                    "the newest message counts {needed} tokens{}, over max-tokens ({}): nothing of the conversation would be kept (raise it, or allow-partial)",
                    if system.is_empty() {
                        ""
                    } else {
                        " with the system message"
                    },
                    self.request.max_tokens
                ),
                true => format!(
                    "no message of start-on's roles ({}) is among the newest that fit max-tokens ({}): nothing of the conversation would be kept",
                    self.request
                        .start_on
                        .iter()
                        .map(|r| r.name())
                        .collect::<Vec<_>>()
                        .join(", "),
                    self.request.max_tokens
                ),
            };
            let field = if newest_fits {
                "trim.start-on"
            } else {
                "trim.max-tokens"
            };
            return Err(Error::invalid(field, message));
        }
        let kept = [&system[..], &kept[..]].concat();
        self.done(kept, partial, tokens).await
    }

    /// LangChain's `first`.
    async fn first(&self) -> Result<Trimmed, Error> {
        let all: Vec<usize> = (0..self.elements.len()).collect();
        // Where the kept run may end: after a unit's last element.
        let ends: Vec<usize> = (1..=all.len())
            .filter(|&k| {
                k == all.len() || self.elements[all[k]].unit != self.elements[all[k - 1]].unit
            })
            .collect();
        let option = |j: usize| self.list(&all[..ends[j]], None);
        let found = self.largest(ends.len(), &option).await?;
        let to = found.map_or(0, |(j, _)| ends[j]);
        let mut kept: Vec<usize> = all[..to].to_vec();
        let mut tokens = found.map(|(_, n)| n);
        let mut partial = None;
        if self.request.allow_partial
            && to < all.len()
            && let Some((p, n)) = self.partial(all[to], &kept, false).await?
        {
            kept.push(all[to]);
            partial = Some(p);
            tokens = Some(n);
        }
        let is = |e: usize| {
            self.request.end_on.is_empty() || self.request.end_on.contains(&self.elements[e].role)
        };
        while let Some(&e) = kept.last() {
            if is(e) {
                break;
            }
            self.drop_unit(&mut kept, &mut partial, e);
            tokens = None;
        }
        self.done(kept, partial, tokens).await
    }

    fn first_turn(&self) -> usize {
        self.read
            .turns
            .first()
            .map_or(self.read.items.len(), |t| t.first)
    }

    /// Leaves out of `kept` element `e`'s whole unit (a call is never kept
    /// apart from its results), and the cut if it was `e`'s message.
    fn drop_unit(&self, kept: &mut Vec<usize>, partial: &mut Option<Partial>, e: usize) {
        let unit = self.elements[e].unit;
        kept.retain(|&k| self.elements[k].unit != unit);
        if partial
            .as_ref()
            .is_some_and(|p| p.message as usize == self.elements[e].items.start)
        {
            *partial = None;
        }
    }

    /// The outcome: the kept elements' messages, the cut one cut, and
    /// their count (counted again where the kept run changed after it).
    async fn done(
        &self,
        kept: Vec<usize>,
        partial: Option<Partial>,
        tokens: Option<u64>,
    ) -> Result<Trimmed, Error> {
        let whole: Vec<usize> = kept
            .iter()
            .copied()
            .filter(|&e| {
                partial
                    .as_ref()
                    .is_none_or(|p| p.message as usize != self.elements[e].items.start)
            })
            .collect();
        let list = self.list(&whole, partial.as_ref());
        let tokens = match tokens {
            Some(n) => n,
            None => self.costs(vec![list.clone()]).await?[0],
        };
        let mut order: Vec<(u32, Option<&Partial>)> =
            list.messages.iter().map(|&i| (i, None)).collect();
        if let Some(p) = &list.cut {
            order.push((p.message, Some(p)));
        }
        order.sort_by_key(|&(i, _)| i);
        let mut json = Vec::with_capacity(order.len());
        let mut indices = Vec::with_capacity(order.len());
        for (i, cut) in order {
            let raw = &self.read.items[i as usize];
            json.push(match cut {
                Some(p) => cut_message(self.read.shape, raw, p)?,
                None => raw.get().to_owned(),
            });
            indices.push(i);
        }
        Ok(Trimmed {
            kept: indices,
            partial,
            messages: format!("[{}]", json.join(",")),
            tokens,
        })
    }
}

/// Where a shape's message holds its content.
fn content_key(shape: ChatShape) -> &'static str {
    match shape {
        ChatShape::Gemini => "parts",
        _ => "content",
    }
}

/// Message `raw` cut as `p` says, as JSON text.
pub(crate) fn cut_message(
    shape: ChatShape,
    raw: &serde_json::value::RawValue,
    p: &Partial,
) -> Result<String, Error> {
    let mut v: Value =
        serde_json::from_str(raw.get()).map_err(|e| Error::invalid("trim.chat", e.to_string()))?;
    let key = content_key(shape);
    let cut = match (&p.blocks, &p.text, v.get(key)) {
        (Some(r), _, Some(Value::Array(blocks))) => {
            let first = r.first as usize;
            Value::Array(
                blocks
                    .iter()
                    .skip(first)
                    .take(r.count as usize)
                    .cloned()
                    .collect(),
            )
        }
        (_, Some(text), _) if shape == ChatShape::Gemini => serde_json::json!([{ "text": text }]),
        (_, Some(text), _) => Value::String(text.clone()),
        _ => {
            return Err(Error::invalid(
                format!("trim.chat.messages[{}]", p.message),
                "a cut names blocks of a content that is not a list",
            ));
        }
    };
    if let Some(o) = v.as_object_mut() {
        o.insert(key.to_owned(), cut);
    }
    Ok(v.to_string())
}

/// The host's failure to count messages, saying what is wanted where it
/// lent no counter.
fn not_lent(e: crate::error::HostError, name: &str) -> Error {
    if e.message == crate::NOT_PROVIDED {
        return Error::HostFailed {
            capability: e.capability,
            message: format!(
                "{}: the trim counts with the host's counter of messages, as {name:?}; lend it (Python: a token_counter function or chat model, JavaScript: tokenCounter, Rust: Host::count_messages)",
                crate::NOT_PROVIDED
            ),
        };
    }
    Error::from(e)
}

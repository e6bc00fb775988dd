//! Counting, as the budget counts: texts, and a chat's messages as they
//! are sent — one call in every host ([`Builder::count`]).

use crate::builder::Builder;
use crate::chat;
use crate::error::Error;
use crate::tokenizer::Meter;
use crate::types::{AssembleRequest, Chat, ModelUse, PackForm, Tokenizer};
use serde::{Deserialize, Serialize};

/// What to count, and with what.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct CountRequest {
    /// The model whose tokenizer and chat format count (see
    /// [`AssembleRequest::model`]).
    #[serde(default)]
    pub model: Option<String>,
    /// The tokenizer; the model's when left out (one of the two is
    /// required). A host's counter (`host`) counts for itself: it is
    /// refused here.
    #[serde(default)]
    pub tokenizer: Option<Tokenizer>,
    /// Tokens of each message's framing; the model's when left out, else 0.
    #[serde(default)]
    pub entry_overhead: Option<u32>,
    /// Tokens that prime the reply, once for a chat; the model's when left
    /// out, else 0.
    #[serde(default)]
    pub reply_overhead: Option<u32>,
    /// Texts, each counted alone.
    #[serde(default)]
    pub texts: Vec<String>,
    /// A chat, counted as a request sends it (see [`crate::Chat`]).
    #[serde(default)]
    pub chat: Option<Chat>,
}

/// What [`Builder::count`] counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct TokenCounts {
    /// The tokenizer counted with.
    pub tokenizer: Option<Tokenizer>,
    /// The model named, and what was taken from its profile. Not written
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelUse>,
    /// Each text's tokens, in order.
    pub texts: Vec<u32>,
    /// The chat's system text as its message costs it, overhead included
    /// (0 without one).
    pub system: u32,
    /// Each turn of the chat as sent (overhead, text, what it sends
    /// beside its text), in order.
    pub messages: Vec<u32>,
    /// For each turn, the index in the chat's messages of its first.
    pub turns: Vec<u32>,
    /// The chat as one request: its system message, its turns and the
    /// reply's priming.
    pub total: u64,
}

impl Builder {
    /// Counts `request`'s texts, and its chat as a request sends it, as
    /// an assembly charges them: the same numbers in every host.
    pub fn count(&self, request: &CountRequest) -> Result<TokenCounts, Error> {
        self.count_with(request, &request.texts)
    }

    /// Counts `texts` as [`Builder::count`] counts a request's texts,
    /// with the model or tokenizer `request` names: the texts given
    /// apart, as they are (a host that would otherwise write a megabyte
    /// into JSON, and the core read it back). `request` carries no texts
    /// or chat of its own.
    pub fn count_texts(
        &self,
        request: &CountRequest,
        texts: &[impl AsRef<str>],
    ) -> Result<Vec<u32>, Error> {
        if !request.texts.is_empty() || request.chat.is_some() {
            let field = match request.chat.is_some() {
                true => "count.chat",
                false => "count.texts",
            };
            return Err(Error::invalid(
                field,
                "the texts are given apart here: this request only names what counts (model, tokenizer); count texts and chats with `count`",
            ));
        }
        Ok(self.count_with(request, texts)?.texts)
    }

    /// `request` as the pipeline assembles it: a chat's messages read into
    /// its conversation (each turn's text as given, what it sends beside
    /// its text — calls, results, images — counted as its attached
    /// tokens, a call and its results sharing the first call's id), the
    /// chat's system text after the request's system prompt. A request
    /// without a chat is returned as it is. For a caller that checks a
    /// pack against the turns it was made from; a chat counted by the
    /// host's own counter is refused, as `count` refuses it.
    pub fn read_chat(&self, request: &AssembleRequest) -> Result<AssembleRequest, Error> {
        let Some(given) = &request.chat else {
            return Ok(request.clone());
        };
        crate::validate::request(request)?;
        let settled = self.models.settle(request)?;
        if let Tokenizer::Host(_) = &settled.tokenizer {
            return Err(Error::invalid(
                "request.tokenizer",
                "a chat counted by your own counter (`host`) is read by an assembly, which asks it",
            ));
        }
        let counter = self.counter(&settled.tokenizer)?;
        let mut held = self.counts();
        let meter = Meter::new(counter.as_ref(), &settled.tokenizer, held.cache());
        let images = settled
            .model
            .as_ref()
            .and_then(|m| m.profile.images.as_ref());
        let read = chat::read(given, images, request.model.as_deref())?;
        Ok(chat::request(request, &read, &meter))
    }

    fn count_with(
        &self,
        request: &CountRequest,
        texts: &[impl AsRef<str>],
    ) -> Result<TokenCounts, Error> {
        let asked = AssembleRequest {
            model: request.model.clone(),
            tokenizer: request.tokenizer.clone(),
            entry_overhead: request.entry_overhead,
            reply_overhead: request.reply_overhead,
            form: Some(PackForm::Messages),
            ..AssembleRequest::default()
        };
        crate::validate::request(&asked).map_err(|e| renamed(e, "count"))?;
        let settled = self
            .models
            .settle(&asked)
            .map_err(|e| renamed(e, "count"))?;
        if let Tokenizer::Host(name) = &settled.tokenizer {
            return Err(Error::invalid(
                "count.tokenizer",
                format!(
                    "{} is counted by your own counter (`host`): count with it, as the assembly asks it to",
                    crate::near::shown(name)
                ),
            ));
        }
        let counter = match (self.counter(&settled.tokenizer), &settled.model) {
            (Ok(counter), _) => counter,
            (Err(error), Some(model)) => return Err(crate::model::missing_file(model, error)),
            (Err(error), None) => return Err(error),
        };
        let mut held = self.counts();
        let meter = Meter::new(counter.as_ref(), &settled.tokenizer, held.cache());
        let texts = texts.iter().map(|t| meter.count(t.as_ref())).collect();
        let mut counted = TokenCounts {
            tokenizer: Some(settled.tokenizer.clone()),
            model: settled.model.clone(),
            texts,
            ..TokenCounts::default()
        };
        let Some(given) = &request.chat else {
            return Ok(counted);
        };
        let images = settled
            .model
            .as_ref()
            .and_then(|m| m.profile.images.as_ref());
        let read =
            chat::read(given, images, request.model.as_deref()).map_err(|e| renamed(e, "count"))?;
        let overhead = settled.overhead;
        if !read.system.is_empty() {
            counted.system = overhead.saturating_add(meter.count(&read.system));
        }
        for turn in chat::derive(&read, &meter, PackForm::Messages) {
            let beside = turn.attached_tokens.unwrap_or(0);
            counted.messages.push(
                overhead
                    .saturating_add(meter.count(&turn.content))
                    .saturating_add(beside),
            );
        }
        counted.turns = chat::report(&read).turns;
        counted.total = u64::from(settled.reply)
            + u64::from(counted.system)
            + counted.messages.iter().map(|&n| u64::from(n)).sum::<u64>();
        Ok(counted)
    }
}

/// `error` with its field, and the fields its message quotes, named
/// under `root` rather than `request`.
fn renamed(error: Error, root: &str) -> Error {
    match error {
        Error::InvalidField { field, message } => Error::InvalidField {
            field: match field.strip_prefix("request") {
                Some(rest) => format!("{root}{rest}"),
                None => field,
            },
            message: message.replace("`request.", &format!("`{root}.")),
        },
        other => other,
    }
}

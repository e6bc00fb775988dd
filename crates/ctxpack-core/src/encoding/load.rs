//! Reading a tokenizer file the host hands over as bytes into an
//! encoding's tokens, pattern and special tokens. Three kinds of file are
//! read, told apart by their content:
//!
//! - a tiktoken rank file (`<base64 bytes> <rank>` per line: OpenAI's,
//!   Llama 3's and 4's, Qwen's), which names no pattern: the host names
//!   one ([`Pattern::NAMED`]) or gives its regular expression;
//! - Mistral's `tekken.json`: its ordinary tokens (the first
//!   `default_vocab_size - default_num_special_tokens`) by rank, and its
//!   pattern;
//! - a Hugging Face `tokenizer.json` with a byte-level BPE model (Llama
//!   3.x, Qwen 2.5 and 3, Phi-4, …): the vocabulary through GPT-2's byte
//!   alphabet, a `Split` pattern, and the added tokens, which are matched
//!   in the text as the `tokenizers` library matches them.
//!
//! ctxpack merges by rank, as tiktoken does. A Hugging Face file merges
//! by its list of merges, so it is read only if that list orders the
//! merges as the ranks do and lists every merge ranking would make: then
//! both merge alike. Anything the counting does not follow (another
//! model, a normalizer, byte fallback, another pre-tokenizer or pattern,
//! an added token that strips spaces) is refused, naming it.

use super::Rank;
use super::pattern::Pattern;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Deserialize;
use serde::de::IgnoredAny;

/// A tokenizer file, read.
pub(crate) struct Read {
    /// What kind of file it was: `tiktoken`, `tekken` or `tokenizer.json`.
    pub(crate) kind: &'static str,
    /// The ordinary tokens' bytes and ranks.
    pub(crate) tokens: Vec<(Vec<u8>, Rank)>,
    pub(crate) pattern: Pattern,
    /// Texts counted as one token wherever they occur (the added tokens
    /// of a Hugging Face file).
    pub(crate) specials: Vec<String>,
}

/// Reads `file`; `pattern` names the pattern (or spells its regular
/// expression) of a tiktoken rank file, and must be absent for the
/// others, which carry their own.
pub(crate) fn read(file: &[u8], pattern: Option<&str>) -> Result<Read, String> {
    let first = file.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        let pattern = pattern.ok_or_else(|| {
            format!(
                "a tiktoken rank file names no pattern: give one (one of {}, or its regular expression)",
                Pattern::names()
            )
        })?;
        let pattern = Pattern::named(pattern)
            .or_else(|| Pattern::recognise(pattern))
            .ok_or_else(|| unknown_pattern("the pattern given", pattern))?;
        return Ok(Read {
            kind: "tiktoken",
            tokens: tiktoken(file)?,
            pattern,
            specials: Vec::new(),
        });
    }
    if let Some(given) = pattern {
        return Err(format!(
            "the file carries its own pattern: give none (was given {given:?})"
        ));
    }
    let text = std::str::from_utf8(file).map_err(|e| format!("not UTF-8: {e}"))?;
    let kind: Kind = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    match kind {
        Kind { model: Some(_), .. } => hugging_face(text),
        Kind {
            config: Some(_), ..
        } => tekken(text),
        _ => Err("neither a tokenizer.json (no `model`) nor a tekken.json (no `config`)".into()),
    }
}

/// The fields that tell the JSON files apart.
#[derive(Deserialize)]
struct Kind {
    model: Option<IgnoredAny>,
    config: Option<IgnoredAny>,
}

fn unknown_pattern(what: &str, regex: &str) -> String {
    let shown: String = regex.chars().take(200).collect();
    format!(
        "{what} is not one ctxpack splits text by ({shown:?}); it knows {}",
        Pattern::names()
    )
}

/// A tiktoken rank file: `<base64> <rank>` per line.
fn tiktoken(file: &[u8]) -> Result<Vec<(Vec<u8>, Rank)>, String> {
    let text = std::str::from_utf8(file).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut tokens = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |what: &str| format!("line {}: {what}", n + 1);
        let (bytes, rank) = line
            .split_once(' ')
            .ok_or_else(|| at("expected `<base64 bytes> <rank>`"))?;
        let bytes = base64(bytes).ok_or_else(|| at("the bytes are not base64"))?;
        let rank = rank
            .trim()
            .parse::<Rank>()
            .map_err(|_| at("the rank is not a whole number"))?;
        tokens.push((bytes, rank));
    }
    Ok(tokens)
}

/// Mistral's `tekken.json`.
#[derive(Deserialize)]
struct Tekken {
    config: TekkenConfig,
    vocab: Vec<TekkenToken>,
}

#[derive(Deserialize)]
struct TekkenConfig {
    pattern: String,
    default_vocab_size: usize,
    default_num_special_tokens: usize,
}

#[derive(Deserialize)]
struct TekkenToken {
    rank: Rank,
    token_bytes: String,
}

fn tekken(text: &str) -> Result<Read, String> {
    let file: Tekken = serde_json::from_str(text).map_err(|e| format!("tekken.json: {e}"))?;
    let config = &file.config;
    let pattern = Pattern::recognise(&config.pattern)
        .ok_or_else(|| unknown_pattern("config.pattern", &config.pattern))?;
    let ordinary = config
        .default_vocab_size
        .checked_sub(config.default_num_special_tokens)
        .ok_or("config.default_num_special_tokens is more than config.default_vocab_size")?;
    let tokens = file
        .vocab
        .iter()
        .take(ordinary)
        .map(|t| {
            let bytes = base64(&t.token_bytes)
                .ok_or_else(|| format!("vocab rank {}: token_bytes is not base64", t.rank))?;
            Ok((bytes, t.rank))
        })
        .collect::<Result<_, String>>()?;
    Ok(Read {
        kind: "tekken",
        tokens,
        pattern,
        specials: Vec::new(),
    })
}

/// The parts of a Hugging Face `tokenizer.json` the counting follows.
#[derive(Deserialize)]
struct HuggingFace {
    normalizer: Option<serde_json::Value>,
    pre_tokenizer: Option<serde_json::Value>,
    model: Model,
    #[serde(default)]
    added_tokens: Vec<Added>,
}

#[derive(Deserialize)]
struct Model {
    #[serde(default)]
    byte_fallback: bool,
    dropout: Option<f64>,
    continuing_subword_prefix: Option<String>,
    end_of_word_suffix: Option<String>,
    vocab: FxHashMap<String, Rank>,
    #[serde(default)]
    merges: Vec<Merge>,
}

/// A merge, as older files write it (`"a b"`) or newer ones (`["a", "b"]`).
#[derive(Deserialize)]
#[serde(untagged)]
enum Merge {
    Joined(String),
    Pair(String, String),
}

#[derive(Deserialize)]
struct Added {
    id: Rank,
    content: String,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
}

/// A `tokenizer.json`'s model, by its type alone.
#[derive(Deserialize)]
struct ModelKind {
    model: Typed,
}

#[derive(Deserialize)]
struct Typed {
    #[serde(rename = "type")]
    kind: Option<String>,
}

fn hugging_face(text: &str) -> Result<Read, String> {
    let head: ModelKind = serde_json::from_str(text).map_err(|e| format!("tokenizer.json: {e}"))?;
    if let Some(kind) = head.model.kind.filter(|k| k != "BPE") {
        return Err(format!(
            "model.type {kind:?}: ctxpack counts BPE models only"
        ));
    }
    let file: HuggingFace =
        serde_json::from_str(text).map_err(|e| format!("tokenizer.json: {e}"))?;
    let model = &file.model;
    let refuse = |field: &str, what: &str| Err(format!("{field}: {what} is not supported"));
    if model.byte_fallback {
        return refuse(
            "model.byte_fallback",
            "byte fallback (a SentencePiece-style BPE)",
        );
    }
    if model.dropout.is_some_and(|d| d > 0.0) {
        return refuse("model.dropout", "dropout");
    }
    if model.continuing_subword_prefix.is_some() || model.end_of_word_suffix.is_some() {
        return refuse("model", "a subword prefix or suffix");
    }
    match &file.normalizer {
        None | Some(serde_json::Value::Null) => {}
        Some(n) if is_empty_sequence(n, "normalizers") => {}
        Some(n) => return refuse("normalizer", &describe(n)),
    }
    let pattern = split_pattern(file.pre_tokenizer.as_ref())?;
    let added: FxHashSet<&str> = file
        .added_tokens
        .iter()
        .map(|a| a.content.as_str())
        .collect();
    for a in &file.added_tokens {
        if a.lstrip || a.rstrip || a.single_word {
            return refuse(
                &format!("added_tokens (id {})", a.id),
                "an added token that strips spaces or matches whole words only",
            );
        }
    }
    let bytes_of = byte_alphabet();
    let mut tokens = Vec::with_capacity(model.vocab.len());
    for (token, &rank) in &model.vocab {
        if added.contains(token.as_str()) {
            continue;
        }
        let bytes = token
            .chars()
            .map(|c| bytes_of.get(&c).copied())
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| format!("model.vocab: {token:?} is not in the byte-level alphabet"))?;
        tokens.push((bytes, rank));
    }
    check_merges(model)?;
    Ok(Read {
        kind: "tokenizer.json",
        tokens,
        pattern,
        specials: file.added_tokens.into_iter().map(|a| a.content).collect(),
    })
}

/// Whether `value` is a `Sequence` with nothing in its `field`.
fn is_empty_sequence(value: &serde_json::Value, field: &str) -> bool {
    value["type"] == "Sequence" && value[field].as_array().is_some_and(Vec::is_empty)
}

/// A component of a file, by its type, for a refusal.
fn describe(value: &serde_json::Value) -> String {
    match value["type"].as_str() {
        Some(kind) => format!("a {kind}"),
        None => "this".to_owned(),
    }
}

/// The pattern of a `Sequence` of one `Split` (isolating what its regular
/// expression matches) and a `ByteLevel` that does not split again.
fn split_pattern(pre: Option<&serde_json::Value>) -> Result<Pattern, String> {
    let pre = pre.ok_or("pre_tokenizer: a byte-level BPE without one is not supported")?;
    let parts = match pre["type"].as_str() {
        Some("Sequence") => pre["pretokenizers"].as_array().cloned().unwrap_or_default(),
        _ => vec![pre.clone()],
    };
    let [split, byte_level] = parts.as_slice() else {
        return Err(format!(
            "pre_tokenizer: {} is not supported: ctxpack reads a Sequence of one Split and a ByteLevel",
            describe_all(&parts)
        ));
    };
    if split["type"] != "Split" || byte_level["type"] != "ByteLevel" {
        return Err(format!(
            "pre_tokenizer: {} is not supported: ctxpack reads a Sequence of one Split and a ByteLevel",
            describe_all(&parts)
        ));
    }
    if byte_level["use_regex"] == true {
        return Err(
            "pre_tokenizer: a ByteLevel that splits again (use_regex) is not supported".into(),
        );
    }
    if byte_level["add_prefix_space"] == true {
        return Err("pre_tokenizer: a ByteLevel that adds a prefix space is not supported".into());
    }
    if split["behavior"] != "Isolated" || split["invert"] == true {
        return Err(
            "pre_tokenizer: a Split that does not isolate its matches is not supported".into(),
        );
    }
    let regex = split["pattern"]["Regex"].as_str().ok_or(
        "pre_tokenizer: a Split on a string rather than a regular expression is not supported",
    )?;
    Pattern::recognise(regex).ok_or_else(|| unknown_pattern("pre_tokenizer's Split pattern", regex))
}

fn describe_all(parts: &[serde_json::Value]) -> String {
    let kinds: Vec<String> = parts
        .iter()
        .map(|p| p["type"].as_str().unwrap_or("?").to_owned())
        .collect();
    format!("[{}]", kinds.join(", "))
}

/// Checks that merging by rank merges as `model`'s list of merges does:
/// the list is in the order of the ranks of what each merge makes, every
/// token of more than one character is made by a merge, and no token can
/// be made of two tokens ranked before it by a merge the list leaves out.
fn check_merges(model: &Model) -> Result<(), String> {
    let vocab = &model.vocab;
    let mut made: FxHashSet<(&str, &str)> = FxHashSet::default();
    let mut results: FxHashSet<Rank> = FxHashSet::default();
    let mut last = 0;
    let mut joined = String::new();
    for (n, merge) in model.merges.iter().enumerate() {
        let (a, b) = match merge {
            Merge::Joined(s) => s
                .split_once(' ')
                .ok_or_else(|| format!("model.merges[{n}]: expected two tokens"))?,
            Merge::Pair(a, b) => (a.as_str(), b.as_str()),
        };
        joined.clear();
        joined.push_str(a);
        joined.push_str(b);
        let rank = *vocab
            .get(joined.as_str())
            .ok_or_else(|| format!("model.merges[{n}]: makes a token not in model.vocab"))?;
        if rank < last {
            return Err(not_by_rank(n));
        }
        last = rank;
        made.insert((a, b));
        results.insert(rank);
    }
    for (token, &rank) in vocab {
        let mut cuts = token.char_indices().map(|(i, _)| i).skip(1).peekable();
        if cuts.peek().is_some() && !results.contains(&rank) {
            return Err(format!(
                "model.merges: no merge makes {token:?}, which merging by rank would make"
            ));
        }
        for cut in cuts {
            let (a, b) = token.split_at(cut);
            let before = |t: &str| vocab.get(t).is_some_and(|&r| r < rank);
            if before(a) && before(b) && !made.contains(&(a, b)) {
                return Err(format!(
                    "model.merges: {a:?} and {b:?} are not merged, which merging by rank would do"
                ));
            }
        }
    }
    Ok(())
}

fn not_by_rank(n: usize) -> String {
    format!(
        "model.merges[{n}]: the merges are not in the order of the ranks they make, which ctxpack merges by"
    )
}

/// GPT-2's byte-level alphabet, reversed: the character that stands for
/// each byte in a byte-level vocabulary, mapped back to the byte. The
/// printable bytes stand for themselves; the others, in order, for the
/// characters from U+0100 up.
fn byte_alphabet() -> FxHashMap<char, u8> {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut map = FxHashMap::default();
    let mut next = 0x100u32;
    for b in 0..=255u8 {
        let c = if printable(b) {
            char::from(b)
        } else {
            let c = char::from_u32(next).unwrap_or(char::REPLACEMENT_CHARACTER);
            next += 1;
            c
        };
        map.insert(c, b);
    }
    map
}

/// Standard base64 (with or without padding), or `None`.
fn base64(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let text = text.trim_end_matches('=').as_bytes();
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= value(c)? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_reads_what_tiktoken_files_hold() {
        assert_eq!(base64("IQ=="), Some(b"!".to_vec()));
        assert_eq!(base64("IHRoZQ=="), Some(b" the".to_vec()));
        assert_eq!(base64("aGVsbG8"), Some(b"hello".to_vec()));
        assert_eq!(base64(""), Some(Vec::new()));
        assert_eq!(base64("a"), None);
        assert_eq!(base64("a$=="), None);
    }

    #[test]
    fn the_byte_alphabet_is_gpt2s() {
        let map = byte_alphabet();
        assert_eq!(map.len(), 256);
        assert_eq!(map[&'Ġ'], b' ');
        assert_eq!(map[&'Ċ'], b'\n');
        assert_eq!(map[&'a'], b'a');
        assert_eq!(map[&'Ā'], 0);
    }
}

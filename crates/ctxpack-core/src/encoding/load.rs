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
//!   3.x, Qwen 2.5 and 3, DeepSeek V3, Phi-4, …): the vocabulary through
//!   GPT-2's byte alphabet, a `Split` pattern (or DeepSeek's three), and
//!   the added tokens, which are matched in the text as the `tokenizers`
//!   library matches them; or with a SentencePiece-style BPE (Gemma 3:
//!   byte fallback, spaces written `▁`, no split).
//!
//! ctxpack merges by rank, as tiktoken does. A Hugging Face file merges
//! by its list of merges: where that list orders the merges as the ranks
//! do and lists every merge ranking would make, both merge alike and the
//! rank tables count it; otherwise (DeepSeek V3's) the list itself is
//! kept and merged by ([`super::pairs`]). Anything the counting does not
//! follow (another model, a normalizer but NFC, byte fallback, another
//! pre-tokenizer or pattern, an added token that strips spaces) is
//! refused, naming it.

use super::Rank;
use super::file_json::Json;
use super::pattern::Pattern;
use rustc_hash::FxHashMap;

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
    /// The added tokens a Hugging Face file marks `special`: the model's
    /// control tokens.
    pub(crate) controls: Vec<String>,
    /// A Hugging Face file's merges, in its order — each the ranks of its
    /// two tokens and of the token it makes —, where merging by rank
    /// would merge otherwise: the text is then merged by this list
    /// ([`super::pairs`]).
    pub(crate) merges: Option<Merges>,
    /// Whether the text is put in Normalization Form C before it is
    /// split (a Hugging Face file's `NFC` normalizer: Qwen 3's).
    pub(crate) nfc: bool,
}

/// A Hugging Face file's list of merges (see [`Read::merges`]).
pub(crate) struct Merges {
    pub(crate) list: Vec<(Rank, Rank, Rank)>,
    /// `ignore_merges`: a piece that is a token is that token, merged or
    /// not (Llama 3's files say so).
    pub(crate) whole_first: bool,
    /// A SentencePiece-style BPE's characters. `None`: a byte-level BPE,
    /// which starts from the bytes.
    pub(crate) chars: Option<SentencePiece>,
}

/// What a SentencePiece-style BPE merges from.
pub(crate) struct SentencePiece {
    /// Its tokens of one character (a space is `▁`): a piece starts as
    /// these, and as its bytes' `<0xNN>` tokens where a character has
    /// none.
    pub(crate) chars: FxHashMap<char, Rank>,
    /// The characters a merge may join a following `▁` onto (sorted).
    pub(crate) joins_space: Vec<char>,
    /// Whether a merge may join a `<0xNN>` token to a following `▁`.
    pub(crate) fallback_joins_space: bool,
}

impl SentencePiece {
    /// Whether a space (or a written `▁`) after `before` may be merged
    /// onto it, so that the text cannot be cut before the space.
    pub(crate) fn may_join_space(&self, before: char) -> bool {
        let before = if before == ' ' { '\u{2581}' } else { before };
        self.joins_space.binary_search(&before).is_ok()
            || (self.fallback_joins_space && !self.chars.contains_key(&before))
    }
}

/// Why a file was not read: the pattern given for it (or its absence),
/// or the file itself. Either way, what is not followed is named.
#[derive(Debug)]
pub(crate) enum Unread {
    /// The pattern given, or not given.
    Pattern(String),
    /// The file.
    File(String),
}

impl From<String> for Unread {
    fn from(message: String) -> Self {
        Unread::File(message)
    }
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unread::Pattern(m) | Unread::File(m) => f.write_str(m),
        }
    }
}

/// Reads `file`; `pattern` names the pattern (or spells its regular
/// expression) of a tiktoken rank file, and must be absent for the
/// others, which carry their own.
pub(crate) fn read(file: &[u8], pattern: Option<&str>) -> Result<Read, Unread> {
    let first = file.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'{') {
        let pattern = pattern.ok_or_else(|| {
            Unread::Pattern(format!(
                "a tiktoken rank file names no pattern: give one (one of {}, or its regular expression)",
                Pattern::names()
            ))
        })?;
        let pattern = Pattern::named(pattern)
            .or_else(|| Pattern::recognise(pattern))
            .ok_or_else(|| Unread::Pattern(unknown_given(pattern)))?;
        return Ok(Read {
            kind: "tiktoken",
            tokens: tiktoken(file)?,
            pattern,
            specials: Vec::new(),
            controls: Vec::new(),
            merges: None,
            nfc: false,
        });
    }
    if let Some(given) = pattern {
        return Err(Unread::Pattern(format!(
            "the file carries its own pattern: give none (was given {given:?})"
        )));
    }
    // One reading of the JSON, walked by hand (see [`Json`]).
    let text = std::str::from_utf8(file).map_err(|e| format!("not UTF-8: {e}"))?;
    let json = Json::read(text)?;
    if !json.get("model").is_null() {
        Ok(hugging_face(&json)?)
    } else if !json.get("config").is_null() {
        Ok(tekken(&json)?)
    } else {
        Err(
            "neither a tokenizer.json (no `model`) nor a tekken.json (no `config`)"
                .to_owned()
                .into(),
        )
    }
}

/// The refusal of a pattern given by a name (or a regular expression) no
/// pattern has: a name is answered with the nearest.
fn unknown_given(given: &str) -> String {
    let regex = given.contains(['\\', '(', '[', '|', '?', '+', '*']);
    if regex {
        return unknown_pattern("the pattern given", given);
    }
    let names: Vec<&str> = Pattern::NAMED.iter().map(|(n, _)| *n).collect();
    let shown: String = given.chars().take(40).collect();
    format!(
        "{shown:?} names no pattern ctxpack splits text by; nearest: {} (of {})",
        crate::near::nearest(&given.to_ascii_lowercase(), &names).join(", "),
        Pattern::names()
    )
}

/// `value` as a string, or the error naming `field` (written only then:
/// these are asked once per token).
fn string<'a>(value: &'a Json, field: std::fmt::Arguments) -> Result<&'a str, String> {
    value
        .as_str()
        .ok_or_else(|| format!("{field}: expected a string"))
}

/// `value` as a whole number that fits `T`, or the error naming `field`.
fn number<T: TryFrom<u64>>(value: &Json, field: std::fmt::Arguments) -> Result<T, String> {
    value
        .as_u64()
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| format!("{field}: expected a whole number"))
}

/// `value` as an array, or the error naming `field`.
fn array<'a, 'j>(
    value: &'a Json<'j>,
    field: std::fmt::Arguments,
) -> Result<&'a [Json<'j>], String> {
    value
        .as_array()
        .ok_or_else(|| format!("{field}: expected a list"))
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

/// Mistral's `tekken.json`: `config` (`pattern`, `default_vocab_size`,
/// `default_num_special_tokens`) and `vocab` (`rank`, `token_bytes`).
fn tekken(json: &Json) -> Result<Read, String> {
    let config = json.get("config");
    let regex = string(config.get("pattern"), format_args!("config.pattern"))?;
    let pattern =
        Pattern::recognise(regex).ok_or_else(|| unknown_pattern("config.pattern", regex))?;
    let size: usize = number(
        config.get("default_vocab_size"),
        format_args!("config.default_vocab_size"),
    )?;
    let special: usize = number(
        config.get("default_num_special_tokens"),
        format_args!("config.default_num_special_tokens"),
    )?;
    let ordinary = size
        .checked_sub(special)
        .ok_or("config.default_num_special_tokens is more than config.default_vocab_size")?;
    let tokens = array(json.get("vocab"), format_args!("vocab"))?
        .iter()
        .take(ordinary)
        .enumerate()
        .map(|(i, t)| {
            let rank = number(t.get("rank"), format_args!("vocab[{i}].rank"))?;
            let bytes = base64(string(
                t.get("token_bytes"),
                format_args!("vocab[{i}].token_bytes"),
            )?)
            .ok_or_else(|| format!("vocab[{i}].token_bytes: not base64"))?;
            Ok((bytes, rank))
        })
        .collect::<Result<_, String>>()?;
    Ok(Read {
        kind: "tekken",
        tokens,
        pattern,
        specials: Vec::new(),
        controls: Vec::new(),
        merges: None,
        nfc: false,
    })
}

/// A Hugging Face `tokenizer.json`: its `model` (a BPE with `vocab` and
/// `merges`), `normalizer`, `pre_tokenizer` and `added_tokens`.
fn hugging_face(json: &Json) -> Result<Read, String> {
    let model = json.get("model");
    if let Some(kind) = model.get("type").as_str().filter(|&k| k != "BPE") {
        return Err(format!(
            "model.type {kind:?}: ctxpack counts BPE models only"
        ));
    }
    let refuse = |field: &str, what: &str| Err(format!("{field}: {what} is not supported"));
    if model.get("byte_fallback").is_true() {
        return sentence_piece(json);
    }
    merging_as_read(model)?;
    let nfc = match json.get("normalizer") {
        Json::Null => false,
        n if is_empty_sequence(n, "normalizers") => false,
        n if n.get("type").as_str() == Some("NFC") => true,
        n => return refuse("normalizer", &describe(n)),
    };
    let pattern = split_pattern(json.get("pre_tokenizer"))?;
    let added = match json.get("added_tokens") {
        Json::Null => &[][..],
        a => array(a, format_args!("added_tokens"))?,
    };
    let mut specials = Vec::with_capacity(added.len());
    let mut controls = Vec::new();
    for (i, a) in added.iter().enumerate() {
        if a.get("lstrip").is_true() || a.get("rstrip").is_true() || a.get("single_word").is_true()
        {
            return refuse(
                &format!("added_tokens[{i}]"),
                "an added token that strips spaces or matches whole words only",
            );
        }
        let content = string(a.get("content"), format_args!("added_tokens[{i}].content"))?;
        if a.get("special").is_true() {
            controls.push(content.to_owned());
        }
        specials.push(content.to_owned());
    }
    let vocab = model
        .get("vocab")
        .as_object()
        .ok_or("model.vocab: expected a map of tokens to ranks")?;
    let mut special: Vec<&str> = specials.iter().map(String::as_str).collect();
    special.sort_unstable();
    let mut ranks: FxHashMap<&str, Rank> = FxHashMap::default();
    ranks.reserve(vocab.len());
    let bytes_of = byte_alphabet();
    let mut tokens = Vec::with_capacity(vocab.len());
    for (token, rank) in vocab {
        let rank: Rank = number(rank, format_args!("model.vocab[{token:?}]"))?;
        ranks.insert(token, rank);
        if special.binary_search(&token.as_ref()).is_ok() {
            continue;
        }
        let bytes = token
            .chars()
            .map(|c| bytes_of.get(&c).copied())
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| format!("model.vocab: {token:?} is not in the byte-level alphabet"))?;
        tokens.push((bytes, rank));
    }
    let merges = match model.get("merges") {
        Json::Null => &[][..],
        m => array(m, format_args!("model.merges"))?,
    };
    let list = read_merges(&ranks, merges)?;
    let merges = (!merged_by_rank(&ranks, &list)?).then(|| Merges {
        list,
        whole_first: model.get("ignore_merges").is_true(),
        chars: None,
    });
    Ok(Read {
        kind: "tokenizer.json",
        tokens,
        pattern,
        specials,
        controls,
        merges,
        nfc,
    })
}

/// Whether `value` is a `Sequence` with nothing in its `field`.
fn is_empty_sequence(value: &Json, field: &str) -> bool {
    value.get("type").as_str() == Some("Sequence")
        && value.get(field).as_array().is_some_and(<[Json]>::is_empty)
}

/// A component of a file, by its type, for a refusal.
fn describe(value: &Json) -> String {
    match value.get("type").as_str() {
        Some(kind) => format!("a {kind}"),
        None => "this".to_owned(),
    }
}

/// The pattern of a `Sequence` of `Split`s (each isolating what its
/// regular expression matches) and a `ByteLevel` that does not split
/// again: one Split of a known pattern, or DeepSeek V3's three.
fn split_pattern(pre: &Json) -> Result<Pattern, String> {
    if pre.is_null() {
        return Err("pre_tokenizer: a byte-level BPE without one is not supported".into());
    }
    let parts: Vec<&Json> = match pre.get("type").as_str() {
        Some("Sequence") => pre
            .get("pretokenizers")
            .as_array()
            .unwrap_or_default()
            .iter()
            .collect(),
        _ => vec![pre],
    };
    let unsupported = || {
        format!(
            "pre_tokenizer: {} is not supported: ctxpack reads a Sequence of one Split (or DeepSeek V3's three) and a ByteLevel",
            describe_all(&parts)
        )
    };
    let Some((&byte_level, splits)) = parts.split_last() else {
        return Err(unsupported());
    };
    if splits.is_empty()
        || byte_level.get("type").as_str() != Some("ByteLevel")
        || splits
            .iter()
            .any(|s| s.get("type").as_str() != Some("Split"))
    {
        return Err(unsupported());
    }
    if byte_level.get("use_regex").is_true() {
        return Err(
            "pre_tokenizer: a ByteLevel that splits again (use_regex) is not supported".into(),
        );
    }
    if byte_level.get("add_prefix_space").is_true() {
        return Err("pre_tokenizer: a ByteLevel that adds a prefix space is not supported".into());
    }
    let mut regexes = Vec::with_capacity(splits.len());
    for split in splits {
        // Its matches kept as pieces: isolated, or the text between them
        // removed (`Removed`, inverted: the gpt-4o and gpt-3.5
        // conversions'), which is the same for the patterns read here —
        // each matches every character, so there is nothing between.
        let behaviour = (
            split.get("behavior").as_str(),
            split.get("invert").is_true(),
        );
        if !matches!(
            behaviour,
            (Some("Isolated"), false) | (Some("Removed"), true)
        ) {
            return Err(
                "pre_tokenizer: a Split that does not keep its matches as pieces is not supported"
                    .into(),
            );
        }
        regexes.push(split.get("pattern").get("Regex").as_str().ok_or(
            "pre_tokenizer: a Split on a string rather than a regular expression is not supported",
        )?);
    }
    match regexes.as_slice() {
        &[regex] => Pattern::recognise(regex)
            .ok_or_else(|| unknown_pattern("pre_tokenizer's Split pattern", regex)),
        several if several == Pattern::DEEPSEEK_SPLITS => Ok(Pattern::DEEPSEEK),
        several => Err(format!(
            "pre_tokenizer: {} Splits in a row are supported only as DeepSeek V3 spells them; these split by {}",
            several.len(),
            several
                .iter()
                .map(|r| format!("{:?}", r.chars().take(60).collect::<String>()))
                .collect::<Vec<_>>()
                .join(", then ")
        )),
    }
}

fn describe_all(parts: &[&Json]) -> String {
    let kinds: Vec<String> = parts
        .iter()
        .map(|p| p.get("type").as_str().unwrap_or("?").to_owned())
        .collect();
    format!("[{}]", kinds.join(", "))
}

/// Refuses a BPE `model` that merges otherwise than its tokens and list
/// say: with dropout, or a subword prefix or suffix. An empty prefix or
/// suffix (Qwen 3's file, the gpt-4o and gpt-3.5 conversions write `""`)
/// adds nothing, and merges as none does.
fn merging_as_read(model: &Json) -> Result<(), String> {
    if model.get("dropout").is_nonzero() {
        return Err("model.dropout: dropout is not supported".into());
    }
    for field in ["continuing_subword_prefix", "end_of_word_suffix"] {
        if model.get(field).as_str().is_some_and(|s| !s.is_empty()) {
            return Err(format!(
                "model.{field}: a subword prefix or suffix is not supported"
            ));
        }
    }
    Ok(())
}

/// A SentencePiece-style BPE in a Hugging Face file (Gemma 2 and 3):
/// spaces written `▁` (its normalizer's one `Replace`), no split (a
/// `Split` on spaces after they are gone splits nothing), the text merged
/// from its characters by the list of merges, a character without a token
/// as its bytes' `<0xNN>` tokens. Added tokens are matched in the text
/// first, as for a byte-level file.
fn sentence_piece(json: &Json) -> Result<Read, String> {
    let model = json.get("model");
    let refuse = |field: &str, what: &str| Err(format!("{field}: {what} is not supported"));
    merging_as_read(model)?;
    if model.get("ignore_merges").is_true() {
        return refuse("model.ignore_merges", "ignore_merges with byte fallback");
    }
    let normalizer = json.get("normalizer");
    let replaces_spaces = normalizer.get("type").as_str() == Some("Replace")
        && normalizer.get("pattern").get("String").as_str() == Some(" ")
        && normalizer.get("content").as_str() == Some("\u{2581}");
    if !replaces_spaces {
        return refuse(
            "normalizer",
            &format!(
                "{} with byte fallback (ctxpack reads a Replace of \" \" by \"\u{2581}\", as Gemma's files have)",
                describe(normalizer)
            ),
        );
    }
    let pre = json.get("pre_tokenizer");
    let splits_nothing = pre.is_null()
        || (pre.get("type").as_str() == Some("Split")
            && pre.get("pattern").get("String").as_str() == Some(" "));
    if !splits_nothing {
        return refuse(
            "pre_tokenizer",
            &format!("{} with byte fallback", describe(pre)),
        );
    }
    let mut specials = Vec::new();
    let mut controls = Vec::new();
    if let Json::Array(added) = json.get("added_tokens") {
        for (i, a) in added.iter().enumerate() {
            if a.get("lstrip").is_true()
                || a.get("rstrip").is_true()
                || a.get("single_word").is_true()
                || a.get("normalized").is_true()
            {
                return refuse(
                    &format!("added_tokens[{i}]"),
                    "an added token that strips spaces, matches whole words only or is matched after normalizing",
                );
            }
            let content = string(a.get("content"), format_args!("added_tokens[{i}].content"))?;
            if a.get("special").is_true() {
                controls.push(content.to_owned());
            }
            specials.push(content.to_owned());
        }
    }
    let vocab = model
        .get("vocab")
        .as_object()
        .ok_or("model.vocab: expected a map of tokens to ranks")?;
    let mut ranks: FxHashMap<&str, Rank> = FxHashMap::default();
    ranks.reserve(vocab.len());
    let mut chars: FxHashMap<char, Rank> = FxHashMap::default();
    let mut tokens = Vec::with_capacity(256);
    for (token, rank) in vocab {
        let rank: Rank = number(rank, format_args!("model.vocab[{token:?}]"))?;
        ranks.insert(token, rank);
        let mut cs = token.chars();
        if let (Some(c), None) = (cs.next(), cs.next()) {
            chars.insert(c, rank);
        }
        // `<0xNN>`: the byte a character without a token of its own
        // falls back to.
        if let Some(hex) = token.strip_prefix("<0x").and_then(|t| t.strip_suffix('>'))
            && hex.len() == 2
            && let Ok(b) = u8::from_str_radix(hex, 16)
            && hex
                .bytes()
                .all(|h| h.is_ascii_digit() || h.is_ascii_uppercase())
        {
            tokens.push((vec![b], rank));
        }
    }
    if !chars.contains_key(&'\u{2581}') {
        return Err("model.vocab: no token \"\u{2581}\" for a space".into());
    }
    let merges = match model.get("merges") {
        Json::Null => &[][..],
        m => array(m, format_args!("model.merges"))?,
    };
    let list = read_merges(&ranks, merges)?;
    // What a space may be merged onto: the last character of every token
    // a merge joins to one that starts with `▁` (a `<0xNN>` token standing
    // for any character that has no token of its own). Before a space
    // after anything else, no merge reaches across: the text is cut there
    // into pieces counted apart (and remembered), as exact as whole.
    let mut joins_space = Vec::new();
    let mut fallback_joins_space = false;
    for (a, b) in merges.iter().filter_map(pair) {
        if !b.starts_with('\u{2581}') {
            continue;
        }
        if a.starts_with("<0x") && a.len() == 6 {
            fallback_joins_space = true;
        } else if let Some(c) = a.chars().next_back() {
            joins_space.push(c);
        }
    }
    joins_space.sort_unstable();
    joins_space.dedup();
    Ok(Read {
        kind: "tokenizer.json",
        tokens,
        pattern: Pattern::WHOLE,
        specials,
        controls,
        merges: Some(Merges {
            list,
            whole_first: false,
            chars: Some(SentencePiece {
                chars,
                joins_space,
                fallback_joins_space,
            }),
        }),
        nfc: false,
    })
}

/// A merge's two tokens: `"a b"`, or `["a", "b"]`.
fn pair<'j>(merge: &'j Json) -> Option<(&'j str, &'j str)> {
    match merge {
        Json::String(s) => s.split_once(' '),
        Json::Array(pair) => match pair.as_slice() {
            [Json::String(a), Json::String(b)] => Some((a.as_ref(), b.as_ref())),
            _ => None,
        },
        _ => None,
    }
}

/// `model.merges`, as the ranks of each merge's two tokens and of the
/// token it makes, in the file's order.
fn read_merges(
    vocab: &FxHashMap<&str, Rank>,
    merges: &[Json],
) -> Result<Vec<(Rank, Rank, Rank)>, String> {
    let rank_of = |t: &str, n: usize| {
        vocab
            .get(t)
            .copied()
            .ok_or_else(|| format!("model.merges[{n}]: {t:?} is not in model.vocab"))
    };
    let mut list = Vec::with_capacity(merges.len());
    let mut joined = String::new();
    for (n, merge) in merges.iter().enumerate() {
        let (a, b) =
            pair(merge).ok_or_else(|| format!("model.merges[{n}]: expected two tokens"))?;
        joined.clear();
        joined.push_str(a);
        joined.push_str(b);
        list.push((rank_of(a, n)?, rank_of(b, n)?, rank_of(&joined, n)?));
    }
    Ok(list)
}

/// Whether merging by rank merges as the list of merges does (so that the
/// faster tables count the file): the list is in the order of the ranks
/// of what each merge makes, every token of more than one character is
/// made by a merge, and no token can be made of two tokens ranked before
/// it by a merge the list leaves out.
fn merged_by_rank(
    vocab: &FxHashMap<&str, Rank>,
    list: &[(Rank, Rank, Rank)],
) -> Result<bool, String> {
    let most = vocab.values().max().map_or(0, |&r| r as usize + 1);
    let mut is_made = vec![false; most];
    let mut last = 0;
    for &(_, _, rank) in list {
        if rank < last {
            return Ok(false);
        }
        last = rank;
        *is_made
            .get_mut(rank as usize)
            .ok_or("model.merges: a merge makes a token past the vocabulary")? = true;
    }
    let mut made: Vec<u64> = list
        .iter()
        .map(|&(a, b, _)| u64::from(a) << 32 | u64::from(b))
        .collect();
    made.sort_unstable();
    for (&token, &rank) in vocab {
        let mut cuts = token.char_indices().map(|(i, _)| i).skip(1).peekable();
        if cuts.peek().is_some() && !is_made[rank as usize] {
            return Ok(false);
        }
        for cut in cuts {
            let (a, b) = token.split_at(cut);
            let before = |t: &str| vocab.get(t).copied().filter(|&r| r < rank);
            if let (Some(ra), Some(rb)) = (before(a), before(b))
                && made
                    .binary_search(&(u64::from(ra) << 32 | u64::from(rb)))
                    .is_err()
            {
                return Ok(false);
            }
        }
    }
    Ok(true)
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

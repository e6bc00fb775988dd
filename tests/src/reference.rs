//! The tokenizer files users have, as their reference implementations
//! count — tiktoken's algorithm and fancy-regex's split (tiktoken-rs),
//! with each file read here apart from ctxpack's reader: the ranks of a
//! rank file or `tekken.json`, a byte-level `tokenizer.json`'s vocabulary
//! through GPT-2's byte alphabet and its added tokens as special tokens,
//! and each file's pattern as its package or the file itself spells it;
//! a file that merges by its list of merges, by that list ([`ByList`]).
//!
//! The files and the reference counts come from `tests/tokenizers/fetch`
//! (`CTXPACK_TOKENIZERS`); the tests that use them check them against the
//! counts of HF `tokenizers` and `tiktoken` themselves first.

// Test support: a broken file is a failed test, so it panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ctxpack_core::TokenizerFile;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use tiktoken_rs::CoreBPE;

/// One tokenizer file with its independent counter, and the corpus texts
/// with the counts the reference implementation gave them.
pub struct Reference {
    pub file: TokenizerFile,
    pub counter: Arc<Counter>,
    pub cases: Vec<(String, u64)>,
}

/// A file's counter: tiktoken-rs's encoder over its ranks and pattern,
/// matching its special tokens if it has any; or, for a file that merges
/// by its list of merges (DeepSeek V3's, Gemma 3's), [`ByList`].
pub enum Counter {
    Ranks {
        bpe: CoreBPE,
        specials: bool,
    },
    ByList(ByList),
    /// A file whose normalizer is NFC (Qwen 3's tokenizer.json): the text
    /// in Normalization Form C, then counted.
    Nfc(Box<Counter>),
}

impl Counter {
    pub fn count(&self, text: &str) -> u64 {
        match self {
            Counter::Nfc(inner) => {
                use unicode_normalization::UnicodeNormalization;
                inner.count(&text.nfc().collect::<String>())
            }
            Counter::Ranks { bpe, specials } => {
                let tokens = match specials {
                    true => bpe.encode_with_special_tokens(text),
                    false => bpe.encode_ordinary(text),
                };
                tokens.len() as u64
            }
            Counter::ByList(by_list) => by_list.count(text),
        }
    }
}

/// Hugging Face's BPE as its documentation tells it, in the plainest
/// way: the added tokens found first (the longest leftmost); the rest
/// split by each `Split` in turn (fancy-regex, each match and each gap
/// between matches a piece) and written in GPT-2's byte alphabet — or,
/// SentencePiece-style, not split, spaces written `▁`, a character not
/// in the vocabulary as its bytes' `<0xNN>` tokens —; then, over and
/// over, the adjacent pair listed first among the merges (the leftmost of
/// equals) joined, by string, until none is listed.
pub struct ByList {
    added: Option<aho_corasick::AhoCorasick>,
    splits: Vec<fancy_regex::Regex>,
    /// `None`: SentencePiece-style.
    byte_alphabet: Option<HashMap<u8, char>>,
    vocab: HashMap<String, u32>,
    /// Each merge's place in the list, by its left and then right token.
    merges: HashMap<String, HashMap<String, usize>>,
}

impl ByList {
    fn count(&self, text: &str) -> u64 {
        let mut total = 0;
        let mut from = 0;
        if let Some(added) = &self.added {
            for m in added.find_iter(text) {
                total += self.count_between(&text[from..m.start()]) + 1;
                from = m.end();
            }
        }
        total + self.count_between(&text[from..])
    }

    fn count_between(&self, text: &str) -> u64 {
        if text.is_empty() {
            return 0;
        }
        let Some(alphabet) = &self.byte_alphabet else {
            let mut symbols = Vec::new();
            for c in text.replace(' ', "\u{2581}").chars() {
                let c = c.to_string();
                if self.vocab.contains_key(&c) {
                    symbols.push(c);
                } else {
                    symbols.extend(c.bytes().map(|b| format!("<0x{b:02X}>")));
                }
            }
            return self.merged(symbols);
        };
        let mut pieces = vec![text.to_owned()];
        for split in &self.splits {
            let mut next = Vec::new();
            for piece in &pieces {
                let mut at = 0;
                for m in split.find_iter(piece) {
                    let m = m.unwrap();
                    if m.start() > at {
                        next.push(piece[at..m.start()].to_owned());
                    }
                    next.push(m.as_str().to_owned());
                    at = m.end();
                }
                if at < piece.len() {
                    next.push(piece[at..].to_owned());
                }
            }
            pieces = next;
        }
        pieces
            .iter()
            .map(|p| self.merged(p.bytes().map(|b| alphabet[&b].to_string()).collect()))
            .sum()
    }

    /// How many tokens `symbols` are once merged.
    fn merged(&self, mut symbols: Vec<String>) -> u64 {
        let place = |a: &str, b: &str| self.merges.get(a).and_then(|m| m.get(b)).copied();
        let mut pairs: Vec<Option<usize>> =
            symbols.windows(2).map(|w| place(&w[0], &w[1])).collect();
        loop {
            let mut best: Option<(usize, usize)> = None;
            for (i, p) in pairs.iter().enumerate() {
                if let Some(p) = *p
                    && best.is_none_or(|(b, _)| p < b)
                {
                    best = Some((p, i));
                }
            }
            let Some((_, i)) = best else {
                return symbols.len() as u64;
            };
            let right = symbols.remove(i + 1);
            symbols[i].push_str(&right);
            pairs.remove(i);
            if i > 0 {
                pairs[i - 1] = place(&symbols[i - 1], &symbols[i]);
            }
            if i < pairs.len() {
                pairs[i] = place(&symbols[i], &symbols[i + 1]);
            }
        }
    }
}

/// The counters [`crate::invariants::recount`] counts a named tokenizer
/// with, by name.
fn registry() -> &'static Mutex<HashMap<String, Arc<Counter>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<String, Arc<Counter>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// The counter registered under `name`.
pub fn registered(name: &str) -> Option<Arc<Counter>> {
    registry().lock().unwrap().get(name).cloned()
}

/// Every reference file `tests/tokenizers/fetch` wrote, read, and each
/// counter registered under its file's name; `None` without them (which
/// fails under `CTXPACK_REQUIRE_TOKENIZERS=1`).
pub fn all() -> Option<Vec<Reference>> {
    let Some(dir) = std::env::var_os("CTXPACK_TOKENIZERS") else {
        assert!(
            std::env::var_os("CTXPACK_REQUIRE_TOKENIZERS").is_none(),
            "CTXPACK_TOKENIZERS is not set: run tests/tokenizers/fetch"
        );
        eprintln!("no tokenizer files: run tests/tokenizers/fetch and set CTXPACK_TOKENIZERS");
        return None;
    };
    let mut paths: Vec<_> = std::fs::read_dir(Path::new(&dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let references: Vec<Reference> = paths.iter().map(|p| read(p)).collect();
    let mut registry = registry().lock().unwrap();
    for r in &references {
        registry.insert(r.file.name.clone(), r.counter.clone());
    }
    Some(references)
}

/// One record of `fetch`: the file, the pattern given with it, the
/// pattern's regular expression, and the cases.
fn read(record_path: &Path) -> Reference {
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(record_path).unwrap()).unwrap();
    let name = record_path
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let text = std::fs::read_to_string(record["file"].as_str().unwrap()).unwrap();
    let pattern = record["pattern"].as_str().map(str::to_owned);
    let counter = match &pattern {
        Some(_) => rank_file(&text, record["regex"].as_str().expect("the record's regex")),
        None => {
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            if json.get("model").is_some() {
                hugging_face(&json)
            } else {
                tekken(&json)
            }
        }
    };
    let cases = record["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let text = c["text"].as_str().unwrap().to_owned();
            (text, c["tokens"].as_u64().unwrap())
        })
        .collect();
    Reference {
        file: TokenizerFile {
            name,
            text,
            pattern,
        },
        counter: Arc::new(counter),
        cases,
    }
}

fn counter(ranks: HashMap<Vec<u8>, u32>, specials: HashMap<String, u32>, regex: &str) -> Counter {
    let has_specials = !specials.is_empty();
    let bpe = CoreBPE::new(
        ranks.into_iter().collect(),
        specials.into_iter().collect(),
        regex,
    )
    .unwrap();
    Counter::Ranks {
        bpe,
        specials: has_specials,
    }
}

fn base64(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

fn rank_file(text: &str, regex: &str) -> Counter {
    let ranks = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (bytes, rank) = l.split_once(' ').unwrap();
            (base64(bytes), rank.trim().parse().unwrap())
        })
        .collect();
    counter(ranks, HashMap::new(), regex)
}

fn tekken(json: &serde_json::Value) -> Counter {
    let config = &json["config"];
    let ordinary = config["default_vocab_size"].as_u64().unwrap()
        - config["default_num_special_tokens"].as_u64().unwrap();
    let ranks = json["vocab"].as_array().unwrap()[..ordinary as usize]
        .iter()
        .map(|t| {
            let rank = t["rank"].as_u64().unwrap() as u32;
            (base64(t["token_bytes"].as_str().unwrap()), rank)
        })
        .collect();
    counter(ranks, HashMap::new(), config["pattern"].as_str().unwrap())
}

/// GPT-2's byte alphabet: the character each byte is written as.
fn byte_of() -> HashMap<char, u8> {
    let mut printable: Vec<u8> = (b'!'..=b'~')
        .chain(0xA1..=0xAC)
        .chain(0xAE..=0xFF)
        .collect();
    let mut chars: Vec<char> = printable.iter().map(|&b| char::from(b)).collect();
    let mut n = 0;
    for b in 0..=255u8 {
        if !printable.contains(&b) {
            printable.push(b);
            chars.push(char::from_u32(256 + n).unwrap());
            n += 1;
        }
    }
    chars.into_iter().zip(printable).collect()
}

/// A Hugging Face file by its list of merges (see [`ByList`]): one with
/// byte fallback, or split by more than one `Split`.
fn by_list(json: &serde_json::Value) -> Counter {
    let model = &json["model"];
    let added: Vec<&str> = json["added_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["content"].as_str().unwrap())
        .collect();
    let added = (!added.is_empty()).then(|| {
        aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(&added)
            .unwrap()
    });
    let sentence_piece = model["byte_fallback"].as_bool() == Some(true);
    let splits = match sentence_piece {
        true => Vec::new(),
        false => json["pre_tokenizer"]["pretokenizers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["type"] == "Split")
            .map(|p| fancy_regex::Regex::new(p["pattern"]["Regex"].as_str().unwrap()).unwrap())
            .collect(),
    };
    let byte_alphabet =
        (!sentence_piece).then(|| byte_of().into_iter().map(|(c, b)| (b, c)).collect());
    let vocab = model["vocab"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(t, r)| (t.clone(), r.as_u64().unwrap() as u32))
        .collect();
    let mut merges: HashMap<String, HashMap<String, usize>> = HashMap::new();
    for (n, m) in model["merges"].as_array().unwrap().iter().enumerate() {
        let (a, b) = match m {
            serde_json::Value::String(s) => {
                let (a, b) = s.split_once(' ').unwrap();
                (a.to_owned(), b.to_owned())
            }
            pair => (
                pair[0].as_str().unwrap().to_owned(),
                pair[1].as_str().unwrap().to_owned(),
            ),
        };
        // A pair listed twice merges where it is listed last.
        merges.entry(a).or_default().insert(b, n);
    }
    Counter::ByList(ByList {
        added,
        splits,
        byte_alphabet,
        vocab,
        merges,
    })
}

fn hugging_face(json: &serde_json::Value) -> Counter {
    if json["normalizer"]["type"] == "NFC" {
        let mut plain = json.clone();
        plain["normalizer"] = serde_json::Value::Null;
        return Counter::Nfc(Box::new(hugging_face(&plain)));
    }
    let splits = json["pre_tokenizer"]["pretokenizers"]
        .as_array()
        .map_or(0, |p| p.iter().filter(|p| p["type"] == "Split").count());
    if json["model"]["byte_fallback"].as_bool() == Some(true) || splits > 1 {
        return by_list(json);
    }
    let byte_of = byte_of();
    let added: HashMap<String, u32> = json["added_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let id = a["id"].as_u64().unwrap() as u32;
            (a["content"].as_str().unwrap().to_owned(), id)
        })
        .collect();
    let ranks = json["model"]["vocab"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(token, _)| !added.contains_key(*token))
        .map(|(token, rank)| {
            let bytes = token.chars().map(|c| byte_of[&c]).collect();
            (bytes, rank.as_u64().unwrap() as u32)
        })
        .collect();
    let pre = &json["pre_tokenizer"]["pretokenizers"][0];
    let regex = pre["pattern"]["Regex"].as_str().unwrap();
    counter(ranks, added, regex)
}

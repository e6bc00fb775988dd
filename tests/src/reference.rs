//! The tokenizer files users have, as their reference implementations
//! count — tiktoken's algorithm and fancy-regex's split (tiktoken-rs),
//! with each file read here apart from ctxpack's reader: the ranks of a
//! rank file or `tekken.json`, a byte-level `tokenizer.json`'s vocabulary
//! through GPT-2's byte alphabet and its added tokens as special tokens,
//! and each file's pattern as its package or the file itself spells it.
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
/// matching its special tokens if it has any.
pub struct Counter {
    bpe: CoreBPE,
    specials: bool,
}

impl Counter {
    pub fn count(&self, text: &str) -> u64 {
        let tokens = match self.specials {
            true => self.bpe.encode_with_special_tokens(text),
            false => self.bpe.encode_ordinary(text),
        };
        tokens.len() as u64
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
    Counter {
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

fn hugging_face(json: &serde_json::Value) -> Counter {
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

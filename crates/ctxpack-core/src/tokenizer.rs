//! Token counting behind one trait.
//!
//! The exact encodings count with tiktoken's tables; the estimator is the
//! cheap characters-per-token rule. Tables are expensive to build (100–250 ms
//! natively), so a [`Tokenizers`] builds each at most once and keeps it.

use crate::error::Error;
use crate::types::Tokenizer;
use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

/// Counts the tokens of a text.
pub trait TokenCounter {
    /// Tokens in `text`.
    fn count(&self, text: &str) -> u32;

    /// The longest prefix of `text` that ends on a token boundary (and a
    /// character boundary) and counts at most `max` tokens.
    fn truncate(&self, text: &str, max: u32) -> String;
}

/// Exact counts with a tiktoken encoding. Special-token markers in the text
/// (such as `<|endoftext|>`) count as ordinary text: content is never allowed
/// to smuggle control tokens in.
pub struct Exact<'a>(&'a CoreBPE);

impl TokenCounter for Exact<'_> {
    fn count(&self, text: &str) -> u32 {
        saturate(self.0.encode_ordinary(text).len())
    }

    fn truncate(&self, text: &str, max: u32) -> String {
        let tokens = self.0.encode_ordinary(text);
        let mut n = tokens.len().min(max as usize);
        if n == tokens.len() {
            return text.to_owned();
        }
        loop {
            // The tokens segment the text's bytes, so their first `n`
            // decode to a byte prefix of it; cut back to a character.
            let bytes = self.0.decode_bytes(&tokens[..n]).unwrap_or_default();
            let valid = match std::str::from_utf8(&bytes) {
                Ok(s) => s.len(),
                Err(e) => e.valid_up_to(),
            };
            let prefix = text.get(..valid).unwrap_or("");
            // Re-encoding a prefix can merge differently at its end: keep
            // the count exact by checking it.
            if n == 0 || self.count(prefix) <= max {
                return prefix.to_owned();
            }
            n -= 1;
        }
    }
}

/// One token per `n` characters (Unicode scalar values), rounded up.
///
/// Seed 002 divides the length by two and rounds down; rounding up keeps the
/// estimate from charging nothing for a one-character entry, which would let
/// any number of them into any budget.
pub struct CharsPerToken(u32);

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
        saturate(text.chars().count().div_ceil(self.0 as usize))
    }

    fn truncate(&self, text: &str, max: u32) -> String {
        let keep = (max as usize).saturating_mul(self.0 as usize);
        match text.char_indices().nth(keep) {
            Some((at, _)) => text[..at].to_owned(),
            None => text.to_owned(),
        }
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The tokenizers of one builder, each built on first use or at preload.
#[derive(Default)]
pub struct Tokenizers {
    o200k: OnceLock<Result<CoreBPE, String>>,
    cl100k: OnceLock<Result<CoreBPE, String>>,
}

impl Tokenizers {
    /// A counter for `tokenizer`, building its tables if this is the first use.
    pub fn counter(&self, tokenizer: Tokenizer) -> Result<Box<dyn TokenCounter + '_>, Error> {
        let (cell, build, name): (_, fn() -> _, _) = match tokenizer {
            Tokenizer::O200kBase => (&self.o200k, tiktoken_rs::o200k_base, "o200k-base"),
            Tokenizer::Cl100kBase => (&self.cl100k, tiktoken_rs::cl100k_base, "cl100k-base"),
            Tokenizer::CharsPerToken(n) => return Ok(Box::new(CharsPerToken::new(n)?)),
        };
        match cell.get_or_init(|| build().map_err(|e| e.to_string())) {
            Ok(bpe) => Ok(Box::new(Exact(bpe))),
            Err(e) => Err(Error::TokenizerUnavailable(format!("{name}: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimator_rounds_up_and_counts_scalar_values() {
        let c = CharsPerToken::new(2).unwrap();
        assert_eq!(c.count(""), 0);
        assert_eq!(c.count("a"), 1);
        assert_eq!(c.count("ab"), 1);
        assert_eq!(c.count("abc"), 2);
        // four scalar values, twelve bytes
        assert_eq!(c.count("日本語だ"), 2);
    }

    #[test]
    fn truncation_keeps_whole_tokens_and_characters() {
        let t = Tokenizers::default();
        for tok in [
            Tokenizer::O200kBase,
            Tokenizer::Cl100kBase,
            Tokenizer::CharsPerToken(3),
        ] {
            let c = t.counter(tok).unwrap();
            let text = "Naïve café owners in 東京 sell ümlauts — 12,400 of them! 🙂🙂🙂 done.";
            for max in 0..c.count(text) + 2 {
                let cut = c.truncate(text, max);
                assert!(text.starts_with(&cut), "{tok:?} {max}");
                assert!(c.count(&cut) <= max, "{tok:?} {max}: {cut:?}");
            }
            assert_eq!(c.truncate(text, c.count(text)), text);
            assert!(
                c.count(&c.truncate(text, 10)) >= 8,
                "{tok:?}: cut far below the limit"
            );
        }
    }

    #[test]
    fn estimator_rejects_zero_naming_the_field() {
        let err = CharsPerToken::new(0).err().unwrap();
        assert!(
            err.to_string().contains("tokenizer.chars-per-token"),
            "{err}"
        );
    }

    #[test]
    fn exact_encodings_differ_and_match_known_counts() {
        let t = Tokenizers::default();
        let o = t.counter(Tokenizer::O200kBase).unwrap();
        let c = t.counter(Tokenizer::Cl100kBase).unwrap();
        assert_eq!(o.count("hello world"), 2);
        assert_eq!(c.count("hello world"), 2);
        // Special markers are ordinary text, never one control token.
        assert!(o.count("<|endoftext|>") > 1);
        let text = "Wie geht's? 你好，世界！ naïve café — ∑ x² ";
        assert_ne!(o.count(text), c.count(text));
    }
}

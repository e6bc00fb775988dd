//! The pre-tokenising patterns: the regular expressions byte-level BPE
//! tokenizers split text with before merging, as the few choices in which
//! the supported ones differ, and the byte scanner that splits ASCII text
//! by them (other text goes to [`super::unicode`]).
//!
//! Every supported pattern is one of two shapes, with its alternatives in
//! this order:
//!
//! ```text
//! cased (o200k, Tekken):
//!   [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+C?
//!   |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*C?
//!   |\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//! letters (cl100k, Llama 3, Qwen):
//!   C|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,D}| ?[^\s\p{L}\p{N}]+[\r\n]*
//!   |\s++$|\s*[\r\n]|\s+(?!\S)|\s
//! ```
//!
//! where `C` is the contractions `(?i:'s|'t|'re|'ve|'m|'ll|'d)` (Tekken
//! has none), `D` is 3 or 1, `\s++$` is cl100k's alone (tiktoken's newer
//! spelling of it; Llama 3 and Qwen keep the older one without it), and
//! Qwen 3.5's words take marks (`[\p{L}\p{M}]+`, and its symbols do not).
//! A pattern is recognised by its exact text ([`Pattern::recognise`]); any
//! other is refused, naming the ones that are known.

/// A pre-tokenising pattern (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Pattern {
    /// Words as o200k splits them (capitals, then small letters), rather
    /// than as runs of letters.
    pub(crate) cased: bool,
    /// Contractions are split off (after a cased word, or as pieces of
    /// their own).
    pub(crate) contractions: bool,
    /// Marks are letters in a run of letters, and not symbols.
    pub(crate) marks_in_words: bool,
    /// The most digits in a number piece.
    pub(crate) digits: usize,
    /// `/` joins the line breaks after a run of symbols.
    pub(crate) slash: bool,
    /// `\s++$`: whitespace that reaches the end of the text is one piece.
    pub(crate) trailing_whole: bool,
    /// DeepSeek V3's three Splits in a row: numbers (three digits at
    /// most) and runs of CJK split off first, then the rest by its own
    /// expression ([`super::unicode::split_first_piece`]); the other
    /// fields do not apply.
    pub(crate) split_first: bool,
    /// No split at all: the text between added tokens is one piece (a
    /// SentencePiece-style BPE's, whose merges may cross a space); the
    /// other fields do not apply.
    pub(crate) whole: bool,
}

impl Pattern {
    /// o200k's (`o200k_base`, and Llama 4's and gpt-oss's files).
    pub(crate) const O200K: Pattern = Pattern {
        cased: true,
        contractions: true,
        marks_in_words: false,
        digits: 3,
        slash: true,
        trailing_whole: false,
        split_first: false,
        whole: false,
    };
    /// cl100k's, as tiktoken spells it now.
    pub(crate) const CL100K: Pattern = Pattern {
        cased: false,
        contractions: true,
        marks_in_words: false,
        digits: 3,
        slash: false,
        trailing_whole: true,
        split_first: false,
        whole: false,
    };
    /// Llama 3's: cl100k's older spelling.
    pub(crate) const LLAMA3: Pattern = Pattern {
        trailing_whole: false,
        ..Pattern::CL100K
    };
    /// Qwen 2 to 3's: Llama 3's with one digit per number.
    pub(crate) const QWEN: Pattern = Pattern {
        digits: 1,
        ..Pattern::LLAMA3
    };
    /// Qwen 3.5's: Qwen's with marks in words.
    pub(crate) const QWEN35: Pattern = Pattern {
        marks_in_words: true,
        ..Pattern::QWEN
    };
    /// Mistral's Tekken: o200k's without contractions, one digit per
    /// number.
    pub(crate) const TEKKEN: Pattern = Pattern {
        contractions: false,
        digits: 1,
        ..Pattern::O200K
    };

    /// DeepSeek V3's (and R1's): see [`Pattern::split_first`]. Its
    /// tokenizer.json spells it as three Splits ([`Pattern::DEEPSEEK_SPLITS`]),
    /// so it is recognised there only, never as one expression.
    pub(crate) const DEEPSEEK: Pattern = Pattern {
        split_first: true,
        ..Pattern::LLAMA3
    };

    /// A SentencePiece-style BPE's (Gemma's): see [`Pattern::whole`].
    pub(crate) const WHOLE: Pattern = Pattern {
        whole: true,
        ..Pattern::LLAMA3
    };

    /// DeepSeek V3's Splits, as its tokenizer.json spells them.
    pub(crate) const DEEPSEEK_SPLITS: [&'static str; 3] = [
        r"\p{N}{1,3}",
        "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+",
        "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
    ];

    /// The patterns by name, as a tiktoken rank file is loaded with one.
    pub(crate) const NAMED: [(&'static str, Pattern); 6] = [
        ("o200k", Pattern::O200K),
        ("cl100k", Pattern::CL100K),
        ("llama3", Pattern::LLAMA3),
        ("qwen", Pattern::QWEN),
        ("qwen3.5", Pattern::QWEN35),
        ("tekken", Pattern::TEKKEN),
    ];

    /// The pattern `name` names, if it is one of [`Pattern::NAMED`].
    pub(crate) fn named(name: &str) -> Option<Pattern> {
        Pattern::NAMED
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, p)| p)
    }

    /// This pattern's name in [`Pattern::NAMED`] (or `deepseek-v3`, or
    /// `sentencepiece` for no split).
    pub(crate) fn name(self) -> &'static str {
        if self.split_first {
            return "deepseek-v3";
        }
        if self.whole {
            return "sentencepiece";
        }
        Pattern::NAMED
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("?", |(n, _)| n)
    }

    /// The names of the known patterns, for a refusal.
    pub(crate) fn names() -> String {
        let names: Vec<&str> = Pattern::NAMED.iter().map(|(n, _)| *n).collect();
        names.join(", ")
    }

    /// The pattern a regular expression spells, if it is one of the known
    /// spellings (tiktoken's, Hugging Face's and Mistral's files').
    pub(crate) fn recognise(regex: &str) -> Option<Pattern> {
        Pattern::spellings()
            .into_iter()
            .find(|(spelt, _)| spelt == regex)
            .map(|(_, p)| p)
    }

    /// The regular expression the files spell this pattern with.
    #[cfg(test)]
    pub(crate) fn spelling(self) -> String {
        let spelt = Pattern::spellings().into_iter().find(|&(_, p)| p == self);
        spelt.map(|(s, _)| s).unwrap_or_default()
    }

    /// Each known pattern's regular expression, as the files spell it.
    fn spellings() -> [(String, Pattern); 6] {
        const CONTRACTIONS: &str = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
        const UPPER: &str = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]";
        const LOWER: &str = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]";
        const LEAD: &str = r"[^\r\n\p{L}\p{N}]?";
        const SPACES: &str = r"\s*[\r\n]+|\s+(?!\S)|\s+";
        let cased = |c: &str, digits: &str| {
            format!(
                r"{LEAD}{UPPER}*{LOWER}+{c}|{LEAD}{UPPER}+{LOWER}*{c}|{digits}| ?[^\s\p{{L}}\p{{N}}]+[\r\n/]*|{SPACES}"
            )
        };
        let letters = |digits: &str| {
            format!(
                r"{CONTRACTIONS}|{LEAD}\p{{L}}+|{digits}| ?[^\s\p{{L}}\p{{N}}]+[\r\n]*|{SPACES}"
            )
        };
        [
            (cased(&format!("{CONTRACTIONS}?"), r"\p{N}{1,3}"), Pattern::O200K),
            (cased("", r"\p{N}"), Pattern::TEKKEN),
            (
                r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"
                    .to_owned(),
                Pattern::CL100K,
            ),
            (letters(r"\p{N}{1,3}"), Pattern::LLAMA3),
            (letters(r"\p{N}"), Pattern::QWEN),
            (
                format!(
                    r"{CONTRACTIONS}|{LEAD}[\p{{L}}\p{{M}}]+|\p{{N}}| ?[^\s\p{{L}}\p{{M}}\p{{N}}]+[\r\n]*|{SPACES}"
                ),
                Pattern::QWEN35,
            ),
        ]
    }

    /// The end of the piece that starts at `at` in ASCII `text`.
    pub(crate) fn ascii_piece(self, text: &[u8], at: usize) -> usize {
        let c = text[at];
        let next = text.get(at + 1).copied();
        if self.contractions
            && !self.cased
            && let Some(end) = contraction(text, at)
        {
            return end;
        }
        // A word: an optional lead, then letters. Cased, the capitals and
        // then the small letters: the first alternative needs a small
        // letter; when it fails the second takes the capitals alone, so
        // both end after the small letters.
        let word = if is_letter(c) {
            Some(at)
        } else if is_lead(c) && next.is_some_and(is_letter) {
            Some(at + 1)
        } else {
            None
        };
        if let Some(from) = word {
            if !self.cased {
                return run(text, from, is_letter);
            }
            let end = run(text, run(text, from, |b| b.is_ascii_uppercase()), |b| {
                b.is_ascii_lowercase()
            });
            return match self.contractions {
                true => contraction(text, end).unwrap_or(end),
                false => end,
            };
        }
        if c.is_ascii_digit() {
            return run(text, at, |b| b.is_ascii_digit()).min(at + self.digits);
        }
        if let Some(end) = self.symbols(text, at) {
            return end;
        }
        // Whitespace. A run that reaches the end is one piece where
        // `\s++$` says so, and else unless a newline in it is claimed
        // first by `\s*[\r\n]+` (`\s+(?!\S)` takes the rest whole).
        let end_of_run = run(text, at, is_space);
        if end_of_run == text.len()
            && (self.trailing_whole || !text[at..].iter().any(|&b| is_newline(b)))
        {
            return end_of_run;
        }
        whitespace(text, at, end_of_run)
    }

    /// ` ?[^\s\p{L}\p{N}]+` at `at`, then the line breaks (and slashes,
    /// where the pattern says) after it.
    fn symbols(self, text: &[u8], at: usize) -> Option<usize> {
        let c = text[at];
        let from = if is_symbol(c) {
            at
        } else if c == b' ' && text.get(at + 1).copied().is_some_and(is_symbol) {
            at + 1
        } else {
            return None;
        };
        let slash = self.slash;
        Some(run(text, run(text, from, is_symbol), |b| {
            is_newline(b) || (slash && b == b'/')
        }))
    }
}

fn is_letter(b: u8) -> bool {
    b.is_ascii_alphabetic()
}

/// `\s` on ASCII: tab, newline, vertical tab, form feed, return, space.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

fn is_newline(b: u8) -> bool {
    b == b'\r' || b == b'\n'
}

/// `[^\r\n\p{L}\p{N}]`: may lead a word.
fn is_lead(b: u8) -> bool {
    !is_newline(b) && !b.is_ascii_alphanumeric()
}

/// `[^\s\p{L}\p{N}]`: punctuation and other symbols.
fn is_symbol(b: u8) -> bool {
    !is_space(b) && !b.is_ascii_alphanumeric()
}

fn run(text: &[u8], from: usize, class: impl Fn(u8) -> bool) -> usize {
    from + text[from..].iter().take_while(|&&b| class(b)).count()
}

/// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `at`: where it ends, if it matches.
fn contraction(text: &[u8], at: usize) -> Option<usize> {
    if text.get(at) != Some(&b'\'') {
        return None;
    }
    let one = text.get(at + 1).map(u8::to_ascii_lowercase);
    if matches!(one, Some(b's' | b't' | b'm' | b'd')) {
        return Some(at + 2);
    }
    let two = text.get(at + 2).map(u8::to_ascii_lowercase);
    match (one, two) {
        (Some(b'r'), Some(b'e')) | (Some(b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => {
            Some(at + 3)
        }
        _ => None,
    }
}

/// The end of the whitespace piece at `at`, once a run through the end of
/// the text has been dealt with: `\s*[\r\n]+` (or `\s*[\r\n]`) takes the
/// run up to its last newline; `\s+(?!\S)` takes all but its last
/// character; a lone whitespace character is a piece of its own.
fn whitespace(text: &[u8], at: usize, end_of_run: usize) -> usize {
    if let Some(nl) = text[at..end_of_run].iter().rposition(|&b| is_newline(b)) {
        return at + nl + 1;
    }
    if end_of_run - at >= 2 {
        end_of_run - 1
    } else {
        end_of_run
    }
}

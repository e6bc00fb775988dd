use super::*;
use tiktoken_rs::CoreBPE;

/// The encodings this build has, each with tiktoken-rs's own.
fn both() -> Vec<(&'static Encoding, &'static CoreBPE)> {
    vec![
        #[cfg(feature = "o200k")]
        (&O200K, tiktoken_rs::o200k_base_singleton()),
        #[cfg(feature = "cl100k")]
        (&CL100K, tiktoken_rs::cl100k_base_singleton()),
    ]
}

/// The tokens of `text` by our pieces, merges and tables.
fn tokens(e: &Encoding, text: &str) -> Vec<Rank> {
    let mut at = 0;
    e.token_ends(text)
        .into_iter()
        .map(|end| {
            let rank = e.table.rank(&text.as_bytes()[at..end]);
            at = end;
            rank.unwrap_or_else(|| panic!("no token for {:?}", &text[..end]))
        })
        .collect()
}

/// Counts and token sequences equal tiktoken's for every text.
fn agree(texts: &[String]) {
    for (e, bpe) in both() {
        for (i, text) in texts.iter().enumerate() {
            let want = bpe.encode_ordinary(text);
            assert_eq!(tokens(e, text), want, "{:?} #{i} {text:?}", e.pattern);
            assert_eq!(e.count(text), want.len(), "{:?} #{i} {text:?}", e.pattern);
        }
    }
}

/// A xorshift generator for test inputs.
pub(super) struct Rng(pub(super) u64);
impl Rng {
    pub(super) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Texts of runs drawn from `classes`: words, digit groups, symbol
/// runs and whitespace runs of every kind appear.
fn texts(classes: &[&[char]], n: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| {
            let len = 1 + rng.below(40);
            let mut s = String::new();
            for _ in 0..len {
                let class = classes[rng.below(classes.len())];
                for _ in 0..1 + rng.below(4) {
                    s.push(class[rng.below(class.len())]);
                }
            }
            s
        })
        .collect()
}

fn chars(s: &str) -> Vec<char> {
    s.chars().collect()
}

/// Every ASCII byte, weighted towards the characters the patterns
/// treat specially.
fn ascii_classes() -> Vec<Vec<char>> {
    [
        "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "0123456789",
        " ",
        "\t\n\r\x0b\x0c  \n",
        "'",
        "sStTdDmMlLeErRvV",
        "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~/",
        "\x00\x01\x07\x1b\x1c\x1f\x7f",
    ]
    .iter()
    .map(|s| chars(s))
    .collect()
}

#[test]
fn ascii_pieces_give_tiktokens_tokens() {
    let classes = ascii_classes();
    let classes: Vec<&[char]> = classes.iter().map(Vec::as_slice).collect();
    agree(&texts(&classes, 20_000, 0x9e37_79b9_7f4a_7c15));
}

/// Characters of every class the patterns tell apart, and the ones
/// their rules single out: capitals, title case, modifier and other
/// letters, combining, spacing and enclosing marks, digits, letter and
/// other numbers, every kind of whitespace, the long s and the Kelvin
/// sign (which fold to ASCII letters), symbols, emoji and joiners.
#[test]
fn unicode_pieces_give_tiktokens_tokens() {
    let classes = ascii_classes();
    let mut classes: Vec<&[char]> = classes.iter().map(Vec::as_slice).collect();
    let unicode = [
        chars("ÀÉÎÕÜĀŁΣДЖԱ"),
        chars("ǅǈǋǲᾈᾙ"),
        chars("àéîõüāłσдժßŉ"),
        chars("ʰʲˆˈᵃᵇ々ゝ"),
        chars("東京日本語中文한국어אבגعربيةทไ"),
        chars("\u{300}\u{301}\u{308}\u{327}\u{903}\u{94d}\u{20dd}\u{fe0f}"),
        chars("٠١٢३४ⅧⅫ²³½①"),
        chars("\u{a0}\u{85}\u{1680}\u{2000}\u{2003}\u{2028}\u{2029}\u{202f}\u{3000}"),
        chars("ſſ\u{212a}'"),
        chars("€£¥©®™°±×÷—–…‘’“”«»·•†"),
        chars("🙂👍🏽\u{200d}\u{200b}\u{feff}🇯🇵"),
    ];
    classes.extend(unicode.iter().map(Vec::as_slice));
    agree(&texts(&classes, 20_000, 0x2545_f491_4f6c_dd1d));
}

#[test]
fn mixed_and_long_texts_count_as_tiktoken_counts_them() {
    let long_word = "x".repeat(300);
    let long_symbols = "=-".repeat(200);
    let newlines = " \n".repeat(80);
    let mut rng = Rng(7);
    let letters: String = (0..5000)
        .map(|_| char::from(b'a' + rng.below(26) as u8))
        .collect();
    let texts = [
        "plain ASCII, then naïve café — and back to ASCII again.".to_owned(),
        "東京 and 日本語 with words between, 🙂 and more words".into(),
        "é".into(),
        " é ".into(),
        "word é".into(),
        "é word".into(),
        "a\u{a0}b c\u{a0} d".into(),
        "tab\u{2003}em space \u{2003} here".into(),
        format!("before {long_word} after"),
        format!("{long_symbols}\n{long_word}"),
        newlines,
        "ſ's 'ſ café's".into(),
        letters.clone(),
        format!("ünïcödé{letters}"),
        "東".repeat(200),
    ];
    agree(&texts);
    // Again with the counts remembered, and without the memory.
    agree(&texts);
    let held: Vec<_> = both().iter().map(|(e, _)| e.memory.lock()).collect();
    agree(&texts);
    drop(held);
}

/// With the index built (as it is once an encoding has merged enough),
/// counts and tokens are tiktoken's still: texts over every ASCII byte
/// and Unicode class, and long pieces — words of random letters and
/// bytes, runs of one character, of spaces, CJK — that the linear
/// encoder takes.
#[test]
fn counts_are_tiktokens_once_the_index_is_built() {
    for (e, _) in both() {
        e.index.get_or_init(|| Index::build(&e.table));
    }
    let classes = ascii_classes();
    let classes: Vec<&[char]> = classes.iter().map(Vec::as_slice).collect();
    agree(&texts(&classes, 5_000, 0x1de7));
    let mut rng = Rng(0x10_c5);
    let mut long = Vec::new();
    for len in [99, 100, 150, 1_000, 20_000] {
        let word: String = (0..len)
            .map(|_| char::from(b'a' + rng.below(26) as u8))
            .collect();
        let mixed: String = (0..len / 2)
            .map(|_| ['a', 'é', 'ж', '東', 'ß', 'Z', 'q', 'x'][rng.below(8)])
            .collect();
        long.extend([
            format!("before {word} after"),
            word.to_uppercase(),
            "a".repeat(len),
            format!("x{}y", " ".repeat(len)),
            "=-".repeat(len / 2),
            "東京".repeat(len / 6),
            mixed,
            "1".repeat(len),
        ]);
    }
    agree(&long);
}

/// A long run of mixed spaces is one piece. tiktoken-rs's expression
/// engine runs out of stack on it somewhere between 300,000 and a
/// million `" \u{a0}"` pairs (and panics); the scanner counts any
/// length, as tiktoken counts the shorter runs: a token per four pairs.
#[test]
fn a_whitespace_run_past_tiktokens_regex_stack_counts_as_shorter_ones_do() {
    for (e, bpe) in both() {
        for pairs in [1_000, 300_000] {
            let text = " \u{a0}".repeat(pairs);
            let want = bpe.encode_ordinary(&text).len();
            assert_eq!(e.count(&text), want, "{:?} {pairs}", e.pattern);
            assert_eq!(want, pairs / 4);
        }
        let pairs = 1_200_000;
        assert_eq!(e.count(&" \u{a0}".repeat(pairs)), pairs / 4);
    }
}

#[test]
fn short_keys_tell_every_short_piece_apart() {
    let pieces: [&[u8]; 7] = [b"", b"\0", b"\0\0", b"a", b"a\0", b"\0a", b"abcdefg"];
    let keys: std::collections::HashSet<u64> = pieces.iter().filter_map(|p| short_key(p)).collect();
    assert_eq!(keys.len(), pieces.len());
    assert_eq!(
        short_key(b"abcdefgh"),
        None,
        "eight bytes are looked up by bytes"
    );
}

/// Every ordinary token of tiktoken's copy is found with its rank, and
/// nothing else: each token with a byte changed or added is either
/// another token or none.
#[test]
fn every_token_is_found_with_its_rank() {
    for (e, bpe) in both() {
        let mut found = 0;
        for rank in 0..e.table.tokens as Rank + 1024 {
            let Ok(bytes) = bpe.decode_bytes(&[rank]) else {
                continue;
            };
            if std::str::from_utf8(&bytes).is_ok_and(|s| bpe.special_tokens().contains(s)) {
                assert_eq!(e.table.rank(&bytes), None, "special {rank}");
                continue;
            }
            assert_eq!(
                e.table.rank(&bytes),
                Some(rank),
                "{:?} {bytes:?}",
                e.pattern
            );
            found += 1;
            for changed in [
                [bytes.as_slice(), b"\x00"].concat(),
                [&bytes[..bytes.len() - 1], &[bytes[bytes.len() - 1] ^ 1]].concat(),
            ] {
                if let Some(r) = e.table.rank(&changed) {
                    assert_eq!(bpe.decode_bytes(&[r]).unwrap(), changed);
                }
            }
        }
        // o200k has 199,998 ordinary tokens, cl100k 100,256.
        let expected = if e.pattern == Pattern::O200K {
            199_998
        } else {
            100_256
        };
        assert_eq!((found, e.table.tokens), (expected, expected));
    }
}

/// The class table agrees with the regex crate's Unicode classes on
/// every code point.
#[test]
fn every_character_has_the_class_regex_gives_it() {
    use unicode::Class;
    let classes = [
        (Class::Upper, r"^[\p{Lu}\p{Lt}]$"),
        (Class::Lower, r"^\p{Ll}$"),
        (Class::Letter, r"^[\p{Lm}\p{Lo}]$"),
        (Class::Mark, r"^\p{M}$"),
        (Class::Number, r"^\p{N}$"),
        (Class::Newline, r"^[\r\n]$"),
        (Class::Space, r"^[\s&&[^\r\n]]$"),
        (Class::Punct, r"^[\p{P}\p{S}]$"),
    ]
    .map(|(c, p)| (c, regex::Regex::new(p).unwrap()));
    let mut buf = [0; 4];
    for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
        let s = c.encode_utf8(&mut buf);
        let want = classes
            .iter()
            .find(|(_, re)| re.is_match(s))
            .map_or(Class::Other, |(class, _)| *class);
        assert_eq!(unicode::class(c), want, "U+{:04X}", c as u32);
    }
}

mod loaded;

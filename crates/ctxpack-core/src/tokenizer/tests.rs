static BUILT_IN: Tokenizers = Tokenizers::new();

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
    let t = Tokenizers::new();
    for tok in [
        Tokenizer::O200kBase,
        Tokenizer::Cl100kBase,
        Tokenizer::CharsPerToken(3),
    ] {
        let c = t.counter(&tok).unwrap();
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
    let t = Tokenizers::new();
    let o = t.counter(&Tokenizer::O200kBase).unwrap();
    let c = t.counter(&Tokenizer::Cl100kBase).unwrap();
    assert_eq!(o.count("hello world"), 2);
    assert_eq!(c.count("hello world"), 2);
    // Special markers are ordinary text, never one control token.
    assert!(o.count("<|endoftext|>") > 1);
    let text = "Wie geht's? 你好，世界！ naïve café — ∑ x² ";
    assert_ne!(o.count(text), c.count(text));
}

/// Texts that stress the pre-tokenising patterns: words with
/// contractions, digit runs, punctuation with slashes and newlines,
/// runs of spaces, tabs and newlines, CJK and emoji.
fn awkward_texts() -> Vec<String> {
    let parts = [
        "the",
        " quick",
        "Brown",
        "fox's",
        " don't",
        "123456",
        " 42",
        "  ",
        "   ",
        "\n",
        "\n\n",
        " \n ",
        "\t",
        "\r\n",
        "!!",
        " ?!",
        "/",
        "]/",
        "//x",
        "(",
        ")",
        "東京",
        " 日本語",
        "🙂",
        " 🙂🙂",
        "naïve",
        " café",
        "'s",
        "'LL",
        "x²",
        " ",
        "-",
        "—",
        "<|endoftext|>",
        "a",
        "Z",
        "0",
        " 7",
    ];
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    (0..400)
        .map(|_| {
            let len = 1 + next(60);
            (0..len).map(|_| parts[next(parts.len())]).collect()
        })
        .collect()
}

#[test]
fn counting_in_chunks_is_exact_wherever_the_chunks_end() {
    for bpe in [tiktoken_rs::o200k_base(), tiktoken_rs::cl100k_base()] {
        let bpe = bpe.unwrap();
        let tok = "o200k/cl100k";
        for text in awkward_texts() {
            let whole = bpe.encode_ordinary(&text).len();
            for min_chunk in [1, 2, 3, 5, 8, 13] {
                let got = count_in_chunks(&text, u32::MAX, (min_chunk, 0), |c| {
                    bpe.encode_ordinary(c).len()
                });
                assert_eq!(
                    got,
                    Count::Exact(whole as u32),
                    "{tok:?} {min_chunk} {text:?}"
                );
                // Stopping early says over exactly when it is.
                for limit in [0, whole.saturating_sub(1), whole, whole + 1] {
                    let limit = limit as u32;
                    let got = count_in_chunks(&text, limit, (min_chunk, 0), |c| {
                        bpe.encode_ordinary(c).len()
                    });
                    let whole = whole as u32;
                    assert_eq!(
                        got.within(limit),
                        (whole <= limit).then_some(whole),
                        "{tok:?} {min_chunk} {limit} {text:?}"
                    );
                    match got {
                        Count::Exact(n) => assert_eq!(n, whole),
                        Count::Over(n) => assert!(n >= limit && n < whole),
                    }
                }
            }
        }
    }
}

#[test]
fn the_cheap_lower_bound_never_passes_the_count() {
    let t = Tokenizers::new();
    for tok in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
        let c = t.counter(&tok).unwrap();
        for text in awkward_texts() {
            let (floor, n) = (c.at_least(&text), c.count(&text));
            assert!(floor <= n, "{tok:?} {floor} > {n}: {text:?}");
        }
        // Useful, not vacuous: close to the count on prose.
        let prose = "The deploy failed because the cache was cold, and the build timed out twice.";
        let (floor, n) = (c.at_least(prose), c.count(prose));
        assert!(floor * 10 >= n * 7, "{tok:?}: {floor} of {n}");
    }
}

/// Whitespace alone between spaces is one piece: `\n \n` is a single
/// token, and the floor must not count two (found by the `count` fuzz
/// target).
#[test]
fn runs_of_whitespace_alone_are_not_counted() {
    for tok in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
        let c = BUILT_IN.counter(&tok).unwrap();
        for text in [
            "\n \n",
            "\r\n \r\n \r\n",
            " \n \n ",
            "\u{a0} \u{a0}",
            "\u{3000} \u{3000}",
            "x\n \ny",
            "\n\t\n\t\n",
            "\u{2003} a \u{2003}",
        ] {
            assert!(
                c.at_least(text) <= c.count(text),
                "{tok:?}: {} > {} for {text:?}",
                c.at_least(text),
                c.count(text)
            );
        }
        // Still a floor worth having on prose, in any script.
        assert_eq!(c.at_least("café au lait, 東京 and Ωmega"), 6);
    }
}

/// The floor is the number of runs between spaces and tabs that start
/// with a character sure not to be whitespace, whatever the length
/// (the count goes 64 byte pairs at a time) and wherever the runs
/// start and end.
#[test]
fn the_lower_bound_counts_the_runs_between_spaces() {
    let t = Tokenizers::new();
    let c = t.counter(&Tokenizer::O200kBase).unwrap();
    let mut x = 3u64;
    for len in 0..300 {
        for _ in 0..4 {
            let text: String = (0..len)
                .map(|_| {
                    x = crate::digest::mix(x);
                    [' ', '\t', 'a', 'é', '\n', ' '][(x % 6) as usize]
                })
                .collect();
            let runs = text
                .split([' ', '\t'])
                .filter(|r| r.starts_with(['a', 'é']))
                .count();
            assert_eq!(c.at_least(&text) as usize, runs, "{text:?}");
        }
    }
}

#[test]
fn counting_up_to_a_limit_stops_early_on_long_text() {
    let t = Tokenizers::new();
    let c = t.counter(&Tokenizer::O200kBase).unwrap();
    let text = "word ".repeat(200_000);
    let calls = std::cell::Cell::new(0usize);
    let got = count_in_chunks(&text, 10, (MIN_CHUNK, BYTES_PER_TOKEN), |chunk| {
        calls.set(calls.get() + chunk.len());
        c.count(chunk) as usize
    });
    assert!(matches!(got, Count::Over(n) if n >= 10), "{got:?}");
    assert!(calls.get() < 1_000, "counted {} bytes", calls.get());
    assert_eq!(c.count_up_to(&text, u32::MAX), Count::Exact(c.count(&text)));
    let cut = c.truncate(&text, 10);
    assert!(text.starts_with(&cut));
    assert_eq!(c.count(&cut), 10, "{cut:?}");
    for text in awkward_texts() {
        for max in [0, 1, 3, 7, 20] {
            let cut = c.truncate(&text, max);
            let n = c.count(&cut);
            assert!(text.starts_with(&cut) && n <= max, "{max} {text:?}");
            // Never cut short when more would fit.
            assert!(
                n == c.count(&text) || n + 2 >= max.min(c.count(&text)),
                "{max} {n} {text:?}"
            );
        }
    }
}

/// A tally of parts, some with their counts given, is the count of
/// the parts joined, whatever the parts: joins inside words, runs of
/// spaces and newlines, punctuation that takes the newlines after it.
#[test]
fn a_tally_counts_the_joined_text_exactly() {
    let texts = awkward_texts();
    for tok in [
        Tokenizer::O200kBase,
        Tokenizer::Cl100kBase,
        Tokenizer::CharsPerToken(3),
    ] {
        let c = BUILT_IN.counter(&tok).unwrap();
        let mut cache = CountCache::new(0);
        let meter = Meter::new(c.as_ref(), &tok, &mut cache);
        let mut x = 7u64;
        for k in 0..300 {
            let n = 1 + k % 7;
            let parts: Vec<&str> = (0..n)
                .map(|_| {
                    x = crate::digest::mix(x);
                    match x % 5 {
                        0 => "\n\n",
                        1 => "",
                        _ => texts[(x >> 8) as usize % texts.len()].as_str(),
                    }
                })
                .collect();
            let mut tally = Tally::new(&meter);
            for (i, p) in parts.iter().enumerate() {
                let known = (i % 2 == 0).then(|| c.count(p));
                tally.push(p, known);
            }
            let joined = parts.concat();
            assert_eq!(
                tally.finish(),
                u64::from(c.count(&joined)),
                "{tok:?} {parts:?}"
            );
        }
    }
}

#[test]
fn empty_text_truncates_and_splits_without_panicking() {
    assert_eq!(split_after("", 0), 0);
    assert_eq!(split_after("", 5), 0);
    assert_eq!(split_after("ab", 9), 2);
    for tok in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
        let c = BUILT_IN.counter(&tok).unwrap();
        for max in [0, 1, 5] {
            assert_eq!(c.truncate("", max), "");
        }
    }
}

#[test]
fn the_cache_answers_repeats_and_stays_bounded() {
    let t = Tokenizers::new();
    let c = t.counter(&Tokenizer::O200kBase).unwrap();
    let mut cache = CountCache::new(10);
    {
        let m = Meter::new(c.as_ref(), &Tokenizer::O200kBase, &mut cache);
        assert_eq!(m.count("hello world"), 2);
        // Two words are more than one token, without encoding.
        assert_eq!(m.count_up_to("hello world", 1), Count::Over(1));
        assert_eq!(m.count_up_to("hello world", 5), Count::Exact(2));
        for i in 0..100 {
            m.count(&format!("text number {i}"));
        }
    }
    assert!(cache.len() <= 10, "{}", cache.len());
    let mut none = CountCache::new(0);
    {
        let m = Meter::new(c.as_ref(), &Tokenizer::O200kBase, &mut none);
        assert_eq!(m.count("hello world"), 2);
    }
    assert_eq!(none.len(), 0);
}

/// A counter that says how often it encoded a text.
struct Counting<'a>(&'a dyn TokenCounter, std::cell::Cell<u32>);

impl TokenCounter for Counting<'_> {
    fn count(&self, text: &str) -> u32 {
        self.1.set(self.1.get() + 1);
        self.0.count(text)
    }
    fn truncate(&self, text: &str, max: u32) -> String {
        self.0.truncate(text, max)
    }
}

#[test]
fn without_a_cache_an_assembly_counts_a_long_text_once() {
    let c = BUILT_IN.counter(&Tokenizer::O200kBase).unwrap();
    let counting = Counting(c.as_ref(), std::cell::Cell::new(0));
    let long = "a long text, counted once per assembly. ".repeat(200);
    let short = "short";
    let mut none = CountCache::new(0);
    let m = Meter::new(&counting, &Tokenizer::O200kBase, &mut none);
    let n = c.count(&long);
    for _ in 0..5 {
        assert_eq!(m.count(&long), n);
        assert_eq!(m.count(short), 1);
    }
    // The long text once; the short one is cheaper to count again
    // than to remember.
    assert_eq!(counting.1.get(), 1 + 5);
    // A second long text is remembered beside the first.
    let other = format!("{long}!");
    assert_eq!(m.count(&other), c.count(&other));
    assert_eq!(m.count(&other), c.count(&other));
    assert_eq!(m.count(&long), n);
    assert_eq!(counting.1.get(), 7);
    // And nothing outlives the assembly.
    drop(m);
    assert_eq!(none.len(), 0);
}

use super::*;

#[test]
fn similarity_is_exact_for_short_texts() {
    assert_eq!(similarity(&[1, 2, 3], &[1, 2, 3]), 1.0);
    assert_eq!(similarity(&[1, 2, 3], &[1, 2, 3, 4, 5, 6]), 0.5);
    assert_eq!(similarity(&[4, 5, 6], &[1, 2, 3, 4, 5, 6]), 0.5);
    assert_eq!(similarity(&[1, 3], &[2, 4]), 0.0);
    assert_eq!(similarity(&[], &[]), 0.0);
    let sketch = |text: &str| {
        let (mut words, mut out) = (Vec::new(), Vec::new());
        digest(text, &mut words);
        sketch_into(&words, &mut out);
        out
    };
    let a = sketch("The quick brown fox jumps over the lazy dog.");
    let b = sketch("the quick brown fox jumps over the lazy cat");
    // Seven shingles each, six shared: 6 / 8.
    assert_eq!(similarity(&a, &b), 0.75);
}

/// A deterministic generator, so the corpus is the same on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A vocabulary with a Zipf-like skew: distinct chunks share their
/// common words, as real prose on one topic does.
fn vocabulary() -> Vec<String> {
    let common = [
        "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "with", "was", "on",
        "be", "by", "this", "are", "from", "or", "invoice", "customer", "order", "payment",
        "account", "service", "report", "system", "data", "team",
    ];
    let mut v: Vec<String> = common.iter().map(|w| (*w).to_owned()).collect();
    for i in 0..400 {
        v.push(format!("term{i}"));
    }
    v
}

fn chunk(rng: &mut Rng, vocab: &[String], words: usize) -> Vec<String> {
    (0..words)
        .map(|_| {
            // Half the words from the 30 common ones, the rest spread out.
            let i = if rng.below(2) == 0 {
                rng.below(30)
            } else {
                rng.below(vocab.len())
            };
            vocab[i].clone()
        })
        .collect()
}

fn edit(rng: &mut Rng, vocab: &[String], words: &[String], edits: usize) -> Vec<String> {
    let mut out = words.to_vec();
    for _ in 0..edits {
        let at = rng.below(out.len());
        match rng.below(3) {
            0 => out[at] = vocab[rng.below(vocab.len())].clone(),
            1 => out.insert(at, vocab[rng.below(vocab.len())].clone()),
            _ => {
                out.remove(at);
            }
        }
    }
    out
}

#[test]
fn exact_duplicates_ignore_case_and_punctuation() {
    let mut d = Deduper::new(0.8, 0);
    assert_eq!(d.offer(10, "The Rail Pass covers JR trains."), None);
    assert_eq!(d.offer(11, "the rail pass — covers JR trains"), Some(10));
    assert_eq!(d.offer(12, "Something else entirely."), None);
    assert_eq!(d.offer(13, "something else, entirely"), Some(12));
}

#[test]
fn texts_hash_as_their_normalised_words() {
    let texts = [
        "The Rail Pass covers JR trains.",
        "the rail pass covers jr trains",
        "  the\\trail...pass covers JR-trains!!",
        "the rail pass covers jr train",
        "the rail pass covers jr trainss",
        "theraIl pass covers jr trains",
        "Ünïcödé ＦＵＬＬＷＩＤＴＨ words, ß and ﬁ ligatures",
        "ünïcödé fullwidth words ß and fi ligatures",
        "a1b2c3d4e5f6g7h8i9 0123456789012345 x",
        "",
        "!!!",
    ];
    let digest_of = |t: &str| {
        let mut words = Vec::new();
        let h = digest(t, &mut words);
        (h, words)
    };
    let mut seen: HashMap<String, (u64, u64)> = HashMap::new();
    for t in texts {
        let normalized = normalize(t);
        let (h, words) = digest_of(t);
        // The same as hashing the normalised text, word for word.
        assert_eq!(
            (h, &words),
            (digest_of(&normalized).0, &digest_of(&normalized).1),
            "{t:?}"
        );
        assert_eq!(
            words.len(),
            normalized.split(' ').filter(|w| !w.is_empty()).count()
        );
        // Equal exactly when the normalised texts are equal.
        for (other, oh) in &seen {
            assert_eq!(*oh == h, *other == normalized, "{t:?} / {other:?}");
        }
        seen.insert(normalized, h);
    }
    assert_eq!(seen.len(), 8);
}
/// The eight-bytes-at-a-time path hashes exactly as the byte table
/// does, on texts over every ASCII byte, of every length up to 70 and
/// at every offset of the eight-byte loads.
#[test]
fn ascii_words_hash_as_the_byte_table_does() {
    let mut rng = Rng(11);
    let classes: [&[u8]; 5] = [
        b"abcxyzABCXYZ0189",
        b" \t\n.,-_'\"",
        b"@[`{/:\x7f\x00\x01",
        b"eeeeeee",
        b"Z",
    ];
    let (mut fast, mut table) = (Vec::new(), Vec::new());
    for case in 0..20_000 {
        let len = case % 71;
        let text: Vec<u8> = (0..len)
            .map(|_| {
                if rng.below(4) == 0 {
                    rng.below(128) as u8
                } else {
                    let class = classes[rng.below(classes.len())];
                    class[rng.below(class.len())]
                }
            })
            .collect();
        let a = digest_ascii(&text, &mut fast);
        let b = digest_words(&text, &ASCII_WORDS, &mut table);
        assert_eq!(
            (a, &fast),
            (b, &table),
            "{:?}",
            String::from_utf8_lossy(&text)
        );
        fast.clear();
        table.clear();
    }
}

#[test]
fn the_index_keeps_every_bucket_through_growth() {
    // Small hashes, as indexed ones are, and many sharing low bits, so
    // probes run past each other; the table starts at its smallest.
    let mut index = Index::with_capacity(0);
    let hashes: Vec<u64> = (0..5_000u64).map(|i| ((i % 700) << 20) | (i % 7)).collect();
    let mut expected: HashMap<u64, (u32, u32)> = HashMap::new();
    for (i, &h) in hashes.iter().enumerate() {
        index.make_room(1);
        let entry = i as u32 + 1;
        let (head, len) = expected.entry(h).or_insert((0, 0));
        let added = index.add(h, entry);
        if (*len as usize) < BUCKET_CAP {
            assert_eq!(added, Some(*head), "hash {h:#x}");
            (*head, *len) = (entry, *len + 1);
        } else {
            assert_eq!(added, None, "hash {h:#x}: its bucket is full");
        }
    }
    assert!(index.used * 4 <= index.slots.len() * 3);
    assert_eq!(index.used, expected.len());
    for (&h, &(head, len)) in &expected {
        let b = index.get(h);
        assert_eq!((b.hash, b.head, b.len), (h, head, len));
    }
    let absent = index.get(u64::MAX);
    assert_eq!(absent.len, 0, "a hash never added has no bucket");
}

#[test]
fn a_threshold_of_one_finds_exact_duplicates_only() {
    let mut d = Deduper::new(1.0, 0);
    let text = "one two three four five six seven eight nine ten";
    assert_eq!(d.offer(0, text), None);
    assert_eq!(d.offer(1, &text.replace("five", "5")), None);
    assert_eq!(d.offer(2, text), Some(0));
}

/// The measured check: near-copies of 300-token chunks with a few words
/// edited are caught at ≥ 90% recall, with no false positives among
/// distinct chunks on the same skewed vocabulary.
#[test]
fn near_copies_are_caught_and_distinct_chunks_are_not() {
    let vocab = vocabulary();
    let mut rng = Rng(7);
    let originals: Vec<Vec<String>> = (0..200).map(|_| chunk(&mut rng, &vocab, 225)).collect();
    let mut d = Deduper::new(crate::defaults::NEAR_DUPLICATE_THRESHOLD, 0);
    for (i, words) in originals.iter().enumerate() {
        assert_eq!(
            d.offer(i as u32, &words.join(" ")),
            None,
            "distinct chunk orig-{i} was called a duplicate"
        );
    }
    let mut caught = 0;
    let mut wrong = 0;
    for (i, words) in originals.iter().enumerate() {
        let edits = 2 + rng.below(4); // 2 to 5 words edited
        let copy = edit(&mut rng, &vocab, words, edits);
        match d.offer(1000 + i as u32, &copy.join(" ")) {
            Some(of) if of == i as u32 => caught += 1,
            Some(_) => wrong += 1,
            None => {}
        }
    }
    let recall = caught as f64 / originals.len() as f64;
    eprintln!("near-duplicate recall {recall:.3} ({caught}/200), wrong matches {wrong}");
    assert!(recall >= 0.9, "recall {recall}");
    assert_eq!(wrong, 0);
}

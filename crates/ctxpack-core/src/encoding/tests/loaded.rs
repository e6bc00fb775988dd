//! Encodings loaded from tokenizer files: every pattern held to
//! tiktoken-rs's regular expression engine, a rank file to the built-in
//! tables, and the files users have to their reference implementations.

use super::*;
use rustc_hash::FxHashMap as HashMap;

/// The built-in encoding to borrow tokens from.
fn a_table_encoding() -> &'static Encoding {
    both()[0].0
}

/// Its table.
fn a_table() -> &'static Table {
    a_table_encoding().table()
}

#[test]
fn every_pattern_splits_as_tiktokens_regex_engine_does() {
    let file = a_table_encoding().rank_file();
    let mut ranks = HashMap::default();
    a_table().each(|bytes, rank| {
        ranks.insert(bytes.to_vec(), rank);
    });
    let ascii = ascii_classes();
    let mut classes: Vec<&[char]> = ascii.iter().map(Vec::as_slice).collect();
    let unicode = [
        chars("ÀÉΣДǅǈàéσдßʰᵃ々東京日本語한국어عربيةไ"),
        chars("\u{300}\u{301}\u{308}\u{903}\u{94d}\u{20dd}\u{fe0f}"),
        chars("٠١٢३४ⅧⅫ²½①"),
        chars("\u{a0}\u{85}\u{1680}\u{2003}\u{2028}\u{3000}"),
        chars("ſ\u{212a}'"),
        chars("€©™—…«»🙂👍🏽\u{200d}\u{200b}"),
    ];
    classes.extend(unicode.iter().map(Vec::as_slice));
    let texts = texts(&classes, 3_000, 0x5851_f42d_4c95_7f2d);
    for (name, pattern) in Pattern::NAMED {
        let spelt = pattern.spelling();
        assert_eq!(Pattern::recognise(&spelt), Some(pattern), "{name}");
        let bpe = CoreBPE::new(ranks.clone(), HashMap::default(), &spelt).expect(name);
        let loaded = Encoding::load(&file, Some(name)).expect(name).encoding;
        for (i, text) in texts.iter().enumerate() {
            let want = bpe.encode_ordinary(text);
            assert_eq!(tokens(&loaded, text), want, "{name} #{i} {text:?}");
            assert_eq!(loaded.count(text), want.len(), "{name} #{i} {text:?}");
        }
    }
}

#[test]
fn tiktokens_own_spellings_are_recognised() {
    // tiktoken-rs spells cl100k's inline, as tiktoken does.
    let cl100k = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
    assert_eq!(
        Pattern::recognise(tiktoken_rs::O200K_BASE_PAT_STR),
        Some(Pattern::O200K)
    );
    assert_eq!(Pattern::recognise(cl100k), Some(Pattern::CL100K));
}

#[test]
fn a_rank_file_of_a_built_in_encoding_counts_as_it_does() {
    for (builtin, _) in both() {
        let name = if builtin.pattern == Pattern::O200K {
            "o200k"
        } else {
            "cl100k"
        };
        let loaded = Encoding::load(&builtin.rank_file(), Some(name)).unwrap();
        assert_eq!((loaded.kind, loaded.specials), ("tiktoken", 0));
        assert_eq!(loaded.tokens, builtin.table().tokens);
        let classes = ascii_classes();
        let classes: Vec<&[char]> = classes.iter().map(Vec::as_slice).collect();
        for text in texts(&classes, 2_000, 11) {
            assert_eq!(
                loaded.encoding.count(&text),
                builtin.count(&text),
                "{text:?}"
            );
        }
        // Past the index, and on one long word.
        let long = "ab".repeat(40_000);
        assert_eq!(loaded.encoding.count(&long), builtin.count(&long));
    }
}

/// The refusal of `file` (with `pattern`), which must name `names`.
fn refused(file: &str, pattern: Option<&str>, names: &str) {
    match Encoding::load(file.as_bytes(), pattern) {
        Ok(_) => panic!("loaded: {file}"),
        Err(e) => assert!(
            e.to_string().contains(names),
            "{e:?} does not name {names:?}"
        ),
    }
}

#[test]
fn what_is_not_followed_is_refused_naming_it() {
    refused("IQ== 0\n", None, "names no pattern");
    refused("IQ== 0\n", Some("gpt2"), "(of o200k, cl100k, llama3");
    refused(
        "IQ== 0\n",
        Some("Llama-3"),
        "\"Llama-3\" names no pattern ctxpack splits text by; nearest: llama3,",
    );
    refused(
        "IQ== 0\n",
        Some("(?i:'s)|\\p{L}+"),
        "it knows o200k, cl100k, llama3",
    );
    refused(
        "IQ== 0\n!! 1\n",
        Some("o200k"),
        "line 2: the bytes are not base64",
    );
    refused(
        "IQ== zero\n",
        Some("o200k"),
        "line 1: the rank is not a whole number",
    );
    refused("IQ== 0\n", Some("o200k"), "has no token of its own");
    refused("{\"model\": {}}", Some("o200k"), "carries its own pattern");
    refused("{\"vocab\": []}", None, "neither a tokenizer.json");
    let hf = |model: &str, normalizer: &str, pre: &str| {
        format!(
            r#"{{"normalizer": {normalizer}, "pre_tokenizer": {pre}, "model": {model}, "added_tokens": []}}"#
        )
    };
    let bpe = r#"{"type": "BPE", "vocab": {}, "merges": []}"#;
    let split = |regex: &str| {
        format!(
            r#"{{"type": "Sequence", "pretokenizers": [{{"type": "Split", "pattern": {{"Regex": {}}}, "behavior": "Isolated", "invert": false}}, {{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}}]}}"#,
            serde_json::to_string(regex).unwrap()
        )
    };
    let llama = split(&Pattern::LLAMA3.spelling());
    refused(
        &hf(r#"{"type": "Unigram", "vocab": []}"#, "null", &llama),
        None,
        "model.type \"Unigram\"",
    );
    refused(
        &hf(r#"{"type": "WordPiece", "vocab": {}}"#, "null", &llama),
        None,
        "WordPiece",
    );
    refused(
        &hf(
            r#"{"type": "BPE", "byte_fallback": true, "vocab": {}}"#,
            "null",
            &llama,
        ),
        None,
        "normalizer: this with byte fallback",
    );
    refused(
        &hf(bpe, r#"{"type": "NFKC"}"#, &llama),
        None,
        "normalizer: a NFKC",
    );
    refused(
        &hf(bpe, "null", &split(r"\p{N}{1,3}")),
        None,
        "is not one ctxpack splits text by",
    );
    refused(
        &hf(
            bpe,
            "null",
            r#"{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}"#,
        ),
        None,
        "[ByteLevel] is not supported",
    );
    refused(
        &hf(bpe, "null", r#"{"type": "Metaspace"}"#),
        None,
        "[Metaspace] is not supported",
    );
}

#[test]
fn a_hugging_face_file_whose_merges_are_not_by_rank_merges_by_its_list() {
    let pre = format!(
        r#"{{"type": "Sequence", "pretokenizers": [{{"type": "Split", "pattern": {{"Regex": {}}}, "behavior": "Isolated", "invert": false}}, {{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}}]}}"#,
        serde_json::to_string(&Pattern::LLAMA3.spelling()).unwrap()
    );
    // The 256 bytes in GPT-2's alphabet, then "ab" (256) and "bc" (257).
    let mut vocab: Vec<String> = Vec::new();
    let mut next = 0x100;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        let c = if printable {
            char::from(b)
        } else {
            next += 1;
            char::from_u32(next - 1).unwrap()
        };
        vocab.push(format!("{:?}: {b}", c.to_string()));
    }
    let file_with = |merges: &str, extra: &str, whole_first: bool| {
        format!(
            r#"{{"normalizer": null, "pre_tokenizer": {pre}, "model": {{"type": "BPE", "ignore_merges": {whole_first}, "vocab": {{{}, "ab": 256, "bc": 257{extra}}}, "merges": [{merges}]}}, "added_tokens": [{{"id": 300, "content": "<|x|>", "special": true}}]}}"#,
            vocab.join(", ")
        )
    };
    let file = |merges: &str, extra: &str| file_with(merges, extra, false);
    let fine = Encoding::load(file(r#""a b", "b c""#, "").as_bytes(), None).unwrap();
    assert_eq!(
        (fine.kind, fine.tokens, fine.specials),
        ("tokenizer.json", 258, 1)
    );
    assert_eq!(fine.encoding.count("abc<|x|>abc"), 5);
    // Where ranks would merge otherwise, the list is merged by, as the
    // `tokenizers` library merges: the pair listed first, leftmost first.
    let ends = |merges: &str, extra: &str, text: &str| {
        let loaded = Encoding::load(file(merges, extra).as_bytes(), None).unwrap();
        let ends = loaded.encoding.token_ends(text);
        assert_eq!(loaded.encoding.count(text), ends.len(), "{merges} {text}");
        ends
    };
    // Listed out of rank order: "b c" before "a b".
    assert_eq!(ends(r#""b c", "a b""#, "", "abc"), [1, 3]);
    // "bc" is a token no merge makes: it is never made, even whole.
    assert_eq!(ends(r#""a b""#, "", "bc"), [1, 2]);
    assert_eq!(ends(r#""a b""#, "", "abcbc"), [2, 3, 4, 5]);
    // "abc" is a token, but no merge joins "ab" and "c".
    assert_eq!(ends(r#""a b", "b c""#, r#", "abc": 258"#, "abc"), [2, 3]);
    assert_eq!(
        ends(r#""a b", "b c", ["a", "bc"]"#, r#", "abc": 258"#, "abc"),
        [2, 3]
    );
    assert_eq!(
        ends(
            r#""b c", "a b", ["a", "bc"]"#,
            r#", "abc": 258"#,
            "abcabc<|x|>"
        ),
        [3, 6, 11]
    );
    // With `ignore_merges`, a piece that is a token is that token.
    let whole = Encoding::load(file_with(r#""a b""#, "", true).as_bytes(), None).unwrap();
    assert_eq!(whole.encoding.token_ends("bc"), [2]);
    assert_eq!(whole.encoding.count("abcbc"), 4);
    // A byte with no token cannot start a byte-level merge.
    let holed = file(r#""b c", "a b""#, "").replace(r#""!": 33, "#, "");
    refused(&holed, None, "byte 0x21 has no token of its own");
}

#[test]
fn a_sentence_piece_style_file_merges_characters_and_falls_back_to_bytes() {
    let mut vocab = vec![r#""<unk>": 0"#.to_owned()];
    for b in 0..=255u32 {
        vocab.push(format!(r#""<0x{b:02X}>": {}"#, b + 1));
    }
    let file = |normalizer: &str, added: &str| {
        format!(
            r#"{{"normalizer": {normalizer}, "pre_tokenizer": {{"type": "Split", "pattern": {{"String": " "}}, "behavior": "MergedWithPrevious", "invert": false}}, "model": {{"type": "BPE", "byte_fallback": true, "fuse_unk": true, "unk_token": "<unk>", "vocab": {{{}, "▁": 257, "a": 258, "b": 259, "▁a": 260, "ab": 261, "▁ab": 262}}, "merges": [["▁", "a"], ["a", "b"], ["▁a", "b"]]}}, "added_tokens": [{added}]}}"#,
            vocab.join(", ")
        )
    };
    let gemma = r#"{"type": "Replace", "pattern": {"String": " "}, "content": "▁"}"#;
    let special = r#"{"id": 300, "content": "<eot>", "special": true, "normalized": false}"#;
    let loaded = Encoding::load(file(gemma, special).as_bytes(), None).unwrap();
    let ends = |text: &str| loaded.encoding.token_ends(text);
    // A space is `▁`; the merges cross it, listed order first.
    assert_eq!(ends(" ab"), [3]);
    assert_eq!(ends("a b"), [1, 2, 3]);
    // A written `▁` is the same token as a space; its three bytes.
    assert_eq!(ends("▁ab"), [5]);
    // A character with no token of its own is its bytes' tokens.
    assert_eq!(ends("é a"), [1, 2, 4]);
    // Added tokens are matched first, whole.
    assert_eq!(ends(" ab<eot> ab"), [3, 8, 11]);
    assert_eq!(loaded.encoding.count(" ab<eot> ab"), 3);
    assert!(!loaded.encoding.cuts_at_spaces());
    // Other SentencePiece-style shapes are refused, naming what.
    refused(
        &file(
            r#"{"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}"#,
            special,
        ),
        None,
        "normalizer: a Sequence with byte fallback",
    );
    refused(
        &file(
            gemma,
            r#"{"id": 300, "content": "<eot>", "special": true, "normalized": true}"#,
        ),
        None,
        "added_tokens[0]",
    );
}

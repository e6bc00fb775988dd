//! Builds the exact encodings' tables and the Unicode classes their
//! pre-tokenising patterns split text by, as static data the core reads in
//! place: a fresh process or component instance counts at once, with no
//! table to parse, hash or allocate.
//!
//! The tokens come from tiktoken-rs's own copy of the encodings (read back
//! rank by rank from its `CoreBPE`), the character classes from
//! regex-syntax — the crate whose tables tiktoken's expression engine
//! matches with. The core's tests compare every count with tiktoken-rs.
//!
//! An encoding's tables (see `src/encoding/table.rs` for how they are read):
//!
//! - `single`: 256 ranks, the token of each byte;
//! - `pairs`: 65,536 ranks, the token of each two bytes or `u32::MAX`;
//! - for each length from 3 bytes up, the tokens of that length sorted by
//!   their bytes, back to back: first every 16th (the fences), then the
//!   others; and their ranks in the same order, packed into as few bits as
//!   the largest rank needs. A lookup searches the fences, which lie close
//!   together, then the 15 tokens after the fence it lands on.
//!
//! Sorting groups tokens that share their first bytes, so the tables
//! compress well for download (tokens in rank order or in a hash table's
//! order do not), and nothing is hashed at start.

use regex_syntax::hir::{Class, HirKind};
use std::collections::HashSet;
use std::error::Error;
use std::fmt::Write as _;
use std::path::Path;

#[path = "build/fold.rs"]
mod fold;

type Res<T> = Result<T, Box<dyn Error>>;

fn main() -> Res<()> {
    println!("cargo:rerun-if-changed=build.rs");
    let out_dir = std::env::var("OUT_DIR")?;
    let out = Path::new(&out_dir);
    write_classes(out)?;
    fold::write_fold(out)?;
    if std::env::var_os("CARGO_FEATURE_O200K").is_some() {
        write_encoding(out, "o200k", &tiktoken_rs::o200k_base()?, 199_998)?;
    }
    if std::env::var_os("CARGO_FEATURE_CL100K").is_some() {
        write_encoding(out, "cl100k", &tiktoken_rs::cl100k_base()?, 100_256)?;
    }
    Ok(())
}

/// One token in this many of each length is a fence (see `Table::rank`).
const FENCE: usize = 16;

/// Writes `<name>.bin` (the tables) and `<name>.rs` (where each part of
/// them starts), checking the token count against the encoding's own.
fn write_encoding(out: &Path, name: &str, bpe: &tiktoken_rs::CoreBPE, expected: usize) -> Res<()> {
    let tokens = ordinary_tokens(bpe);
    if tokens.len() != expected {
        return Err(format!("{name}: read {} tokens, expected {expected}", tokens.len()).into());
    }
    let unique: HashSet<&[u8]> = tokens.iter().map(|(b, _)| b.as_slice()).collect();
    if unique.len() != tokens.len() {
        return Err(format!("{name}: two ranks share their bytes").into());
    }
    let max_rank = tokens.iter().map(|&(_, r)| r).max().unwrap_or(0);
    let rank_bits = 32 - max_rank.leading_zeros();
    let max_len = tokens.iter().map(|(b, _)| b.len()).max().unwrap_or(0);

    let mut single = vec![u32::MAX; 256];
    let mut pairs = vec![u32::MAX; 1 << 16];
    let mut by_len: Vec<Vec<(&[u8], u32)>> = vec![Vec::new(); max_len + 1];
    for (bytes, rank) in &tokens {
        match bytes.len() {
            1 => single[usize::from(bytes[0])] = *rank,
            2 => pairs[usize::from(bytes[0]) << 8 | usize::from(bytes[1])] = *rank,
            n => by_len[n].push((bytes, *rank)),
        }
    }
    if single.contains(&u32::MAX) {
        return Err(format!("{name}: a byte has no token of its own").into());
    }

    let mut data = Vec::new();
    for r in single.iter().chain(&pairs) {
        data.extend_from_slice(&r.to_le_bytes());
    }
    let records_at = data.len();
    // Per length: where its records start (from `records_at`), how many,
    // and the index of its first rank in the packed ranks.
    let mut classes = vec![(0usize, 0usize, 0usize); max_len + 1];
    let mut ranks = Vec::new();
    for (len, class) in by_len.iter_mut().enumerate().skip(3) {
        class.sort_unstable();
        classes[len] = (data.len() - records_at, class.len(), ranks.len());
        // Every `FENCE`th token first, then the others in the order they
        // came: a search goes through the fences, close together, then
        // the few tokens between two of them.
        let fences = class.iter().step_by(FENCE);
        let between = class
            .iter()
            .enumerate()
            .filter(|(i, _)| i % FENCE != 0)
            .map(|(_, t)| t);
        for (bytes, rank) in fences.chain(between) {
            data.extend_from_slice(bytes);
            ranks.push(*rank);
        }
    }
    // Room to read eight bytes at the last record.
    data.extend_from_slice(&[0; 8]);
    let ranks_at = data.len();
    pack(&mut data, &ranks, rank_bits);
    // Room to read four bytes at the last rank.
    data.extend_from_slice(&[0; 4]);
    std::fs::write(out.join(format!("{name}.bin")), &data)?;
    let table = Table {
        records_at,
        ranks_at,
        rank_bits,
        tokens: tokens.len(),
        lengths: classes,
    };
    std::fs::write(out.join(format!("{name}.rs")), table.source(name)?)?;
    Ok(())
}

/// `ranks`, `bits` each, packed little-endian after `data`.
fn pack(data: &mut Vec<u8>, ranks: &[u32], bits: u32) {
    let mut acc = 0u64;
    let mut held = 0;
    for &r in ranks {
        acc |= u64::from(r) << held;
        held += bits;
        while held >= 8 {
            data.push(acc as u8);
            acc >>= 8;
            held -= 8;
        }
    }
    if held > 0 {
        data.push(acc as u8);
    }
}

/// Where an encoding's parts lie in its data, for the `Table` the core
/// reads.
struct Table {
    records_at: usize,
    ranks_at: usize,
    rank_bits: u32,
    tokens: usize,
    /// Per length: where its records start, how many, its first rank.
    lengths: Vec<(usize, usize, usize)>,
}

impl Table {
    /// The `Table` literal `src/encoding/table.rs` includes.
    fn source(&self, name: &str) -> Res<String> {
        let Table {
            records_at,
            ranks_at,
            rank_bits,
            tokens,
            lengths,
        } = self;
        let mut rs = String::new();
        writeln!(
            rs,
            "// Generated by build.rs from tiktoken-rs's {name}_base."
        )?;
        writeln!(rs, "Table {{")?;
        writeln!(
            rs,
            "    data: include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{name}.bin\")),"
        )?;
        writeln!(rs, "    records_at: {records_at},")?;
        writeln!(rs, "    ranks_at: {ranks_at},")?;
        writeln!(rs, "    rank_bits: {rank_bits},")?;
        writeln!(rs, "    fence: {FENCE},")?;
        writeln!(rs, "    tokens: {tokens},")?;
        writeln!(rs, "    lengths: &[")?;
        for (start, count, first_rank) in lengths {
            writeln!(
                rs,
                "        Length {{ start: {start}, count: {count}, first_rank: {first_rank} }},"
            )?;
        }
        writeln!(rs, "    ],")?;
        writeln!(rs, "}}")?;
        Ok(rs)
    }
}

/// Every ordinary token's bytes and rank. Ranks are dense from 0; the
/// special tokens sit just above the ordinary ones and are left out.
fn ordinary_tokens(bpe: &tiktoken_rs::CoreBPE) -> Vec<(Vec<u8>, u32)> {
    let special = bpe.special_tokens();
    let mut tokens = Vec::new();
    let mut misses = 0;
    let mut rank = 0u32;
    while misses < 4096 {
        match bpe.decode_bytes(&[rank]) {
            Ok(bytes) if !std::str::from_utf8(&bytes).is_ok_and(|s| special.contains(s)) => {
                misses = 0;
                tokens.push((bytes, rank));
            }
            _ => misses += 1,
        }
        rank += 1;
    }
    tokens
}

/// The classes of characters the patterns tell apart, in the order of
/// `Class` in `src/encoding/unicode.rs`; a character in none is `Other`.
const CLASSES: [(&str, &str); 7] = [
    ("Upper", r"[\p{Lu}\p{Lt}]"),
    ("Lower", r"\p{Ll}"),
    ("Letter", r"[\p{Lm}\p{Lo}]"),
    ("Mark", r"\p{M}"),
    ("Number", r"\p{N}"),
    ("Newline", r"[\r\n]"),
    ("Space", r"[\s&&[^\r\n]]"),
];
const OTHER: u8 = CLASSES.len() as u8;

/// Code points a block of the two-level class table covers.
const BLOCK: usize = 128;

/// Writes `classes.rs`: every code point's class in a two-level table
/// (blocks of 128 code points, identical blocks stored once), and the
/// characters each letter of the contractions matches case-insensitively.
fn write_classes(out: &Path) -> Res<()> {
    let mut class = vec![OTHER; 0x11_0000];
    for (i, (name, pattern)) in CLASSES.iter().enumerate() {
        for (start, end) in ranges(pattern)? {
            for c in start..=end {
                if class[c as usize] != OTHER {
                    return Err(format!("U+{c:04X} is in {name} and another class").into());
                }
                class[c as usize] = i as u8;
            }
        }
    }
    let mut blocks: Vec<&[u8]> = Vec::new();
    let mut index = Vec::new();
    for block in class.chunks(BLOCK) {
        let at = match blocks.iter().position(|b| *b == block) {
            Some(at) => at,
            None => {
                blocks.push(block);
                blocks.len() - 1
            }
        };
        index.push(u16::try_from(at)?);
    }
    let mut rs = String::new();
    writeln!(
        rs,
        "// Generated by build.rs from regex-syntax's Unicode tables."
    )?;
    writeln!(rs, "const BLOCK: usize = {BLOCK};")?;
    writeln!(rs, "static BLOCK_OF: [u16; {}] = {index:?};", index.len())?;
    let flat: Vec<u8> = blocks.concat();
    writeln!(
        rs,
        "static CLASS_IN_BLOCK: [u8; {}] = {flat:?};",
        flat.len()
    )?;
    // `(?i:'s|'t|'re|'ve|'m|'ll|'d)`: besides both cases of each ASCII
    // letter, case folding lets in characters such as U+017F (ſ) for s.
    for letter in ['s', 't', 'r', 'e', 'v', 'm', 'l', 'd'] {
        let mut chars = Vec::new();
        for (start, end) in ranges(&format!("(?i:{letter})"))? {
            chars.extend((start..=end).filter_map(char::from_u32));
        }
        let upper = letter.to_ascii_uppercase();
        writeln!(rs, "const FOLDS_{upper}: &[char] = &{chars:?};")?;
    }
    std::fs::write(out.join("classes.rs"), rs)?;
    Ok(())
}

/// The code point ranges of a character class as regex-syntax parses it.
fn ranges(pattern: &str) -> Res<Vec<(u32, u32)>> {
    let hir = regex_syntax::Parser::new().parse(pattern)?;
    match hir.kind() {
        HirKind::Class(Class::Unicode(c)) => Ok(c
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect()),
        HirKind::Literal(lit) => {
            let c = std::str::from_utf8(&lit.0)?
                .chars()
                .next()
                .ok_or("empty literal")?;
            Ok(vec![(u32::from(c), u32::from(c))])
        }
        _ => Err(format!("`{pattern}` is not a character class").into()),
    }
}

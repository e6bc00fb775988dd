//! What quoting untrusted text costs (`ctxpack-bench quoting`): the texts
//! of this repository, cut into retrieval-sized chunks by kind — prose
//! one paragraph a line, prose wrapped at 72 columns, code, tables —, are
//! packed as `untrusted` candidates, and each fenced entry the pack sends
//! is counted as sent and with the quote taken off every line, both in
//! o200k and cl100k.

use ctxpack_bench::{Chunk, pack};
use ctxpack_core::{Builder, CountRequest, Tokenizer, TrustTier};
use ctxpack_scenario::stores::{Answer, InMemoryHost};

/// Bytes of a chunk at most: a retrieval's chunk.
const CHUNK: usize = 1_500;

/// The kinds measured and where their texts come from.
fn kinds() -> Result<Vec<(&'static str, Vec<String>)>, String> {
    let read = |path: &str| std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"));
    let book = [
        "docs/src/guarantees.md",
        "docs/src/pipeline.md",
        "docs/src/chat.md",
        "docs/src/models.md",
        "docs/src/introduction.md",
    ];
    let mut wrapped = Vec::new();
    let mut paragraphs = Vec::new();
    let mut tables = Vec::new();
    for path in
        book.iter()
            .copied()
            .chain(["README.md", "tests/scenarios/README.md", "bench/README.md"])
    {
        let text = read(path)?;
        let mut para: Vec<&str> = Vec::new();
        for line in text.lines().chain([""]) {
            if line.starts_with('|') {
                tables.push(line.to_owned());
                continue;
            }
            let prose = !line.is_empty()
                && !line.starts_with(['#', '-', '*', '`', ' ', '>', '|'])
                && !line.chars().next().is_some_and(|c| c.is_ascii_digit());
            if prose && book.contains(&path) {
                para.push(line);
            } else if !para.is_empty() {
                if para.len() >= 3 {
                    wrapped.push(para.join("\n"));
                    paragraphs.push(para.join(" "));
                }
                para.clear();
            }
        }
    }
    let mut code = Vec::new();
    for path in [
        "crates/ctxpack-core/src/budget.rs",
        "crates/ctxpack-core/src/compress.rs",
        "crates/ctxpack-core/src/dedup.rs",
    ] {
        code.extend(read(path)?.lines().map(str::to_owned));
    }
    Ok(vec![
        ("prose, a paragraph a line", paragraphs),
        ("prose, wrapped at 72", wrapped),
        ("code (Rust)", code),
        ("tables (Markdown)", tables),
    ])
}

/// `pieces` joined by line breaks into chunks of at most [`CHUNK`] bytes
/// (a piece longer than that is a chunk of its own).
fn chunked(pieces: &[String], blank: bool) -> Vec<String> {
    let join = if blank { "\n\n" } else { "\n" };
    let mut out: Vec<String> = Vec::new();
    let mut now = String::new();
    for p in pieces {
        if !now.is_empty() && now.len() + p.len() > CHUNK {
            out.push(std::mem::take(&mut now));
        }
        if !now.is_empty() {
            now.push_str(join);
        }
        now.push_str(p);
    }
    if !now.is_empty() {
        out.push(now);
    }
    out
}

/// Prints the table of `bench/README.md`'s "Quoting".
pub fn run() -> Result<(), String> {
    println!(
        "| texts | chunks | lines | o200k sent | o200k unquoted | cost | cl100k sent | cl100k unquoted | cost |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (kind, pieces) in kinds()? {
        let prose = kind.starts_with("prose");
        let texts = chunked(&pieces, prose);
        let chunks: Vec<Chunk> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| Chunk {
                id: format!("doc-{i}"),
                text: t.clone(),
                score: 1.0,
            })
            .collect();
        let mut w = pack(&chunks, 4_000_000);
        if let Some(Answer::Items(items)) = &mut w.host.retrieve {
            for c in items {
                c.trust = TrustTier::Untrusted;
            }
        }
        let builder = Builder::new(w.config.clone()).map_err(|e| e.to_string())?;
        let mut host = InMemoryHost::new(w.host.clone());
        let p = builder
            .assemble(&w.request, &mut host)
            .map_err(|e| e.error.to_string())?;
        let sent: Vec<String> = p
            .entries
            .iter()
            .filter(|e| e.trust == TrustTier::Untrusted)
            .map(|e| e.text.clone())
            .collect();
        if sent.len() != chunks.len() {
            return Err(format!(
                "{kind}: {} of {} chunks packed",
                sent.len(),
                chunks.len()
            ));
        }
        // Each quote follows a line break; the first follows the marker's.
        let unquoted: Vec<String> = sent.iter().map(|t| t.replace("\n> ", "\n")).collect();
        let lines: usize = texts.iter().map(|t| t.lines().count()).sum();
        let mut row = format!("| {kind} | {} | {lines} |", chunks.len());
        for tokenizer in [Tokenizer::O200kBase, Tokenizer::Cl100kBase] {
            let count = |texts: &[String]| -> Result<u64, String> {
                let request = CountRequest {
                    tokenizer: Some(tokenizer.clone()),
                    texts: texts.to_vec(),
                    ..CountRequest::default()
                };
                let counts = builder.count(&request).map_err(|e| e.to_string())?;
                Ok(counts.texts.iter().map(|&n| u64::from(n)).sum())
            };
            let (with, without) = (count(&sent)?, count(&unquoted)?);
            let cost = 100.0 * (with as f64 - without as f64) / without as f64;
            row.push_str(&format!(" {with} | {without} | {cost:.1}% |"));
        }
        println!("{row}");
    }
    Ok(())
}

//! The embedded document index: what `ctxpack serve` retrieves from when
//! no retrieval upstream is configured, in the store's own database —
//! SQLite's FTS5 ranked by BM25, or PostgreSQL's full-text search — filled
//! by `ctxpack ingest PATH…`.
//!
//! A file is cut into chunks at Markdown headings and blank lines, each
//! at most [`CHUNK_CHARS`] characters (a longer paragraph is cut between
//! words). A chunk is a candidate for `relevant-knowledge` with the id and
//! reference `PATH#N` (its place in the file, from 1), the source version
//! `sha256:…` of the file's content, trust `unverified` (of known origin,
//! unreviewed) and the engine's relevance as its score. Ingesting a file
//! again replaces its chunks, in one transaction; an unchanged file is
//! left as it is.

use crate::snapshots::{Stmt, Store, StoreError, Value, now_rfc3339};
use ctxpack_core::text::cut;
use ctxpack_core::{Candidate, Provenance, Section, TrustTier};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The most characters of a chunk.
pub const CHUNK_CHARS: usize = 1200;

/// The extensions a directory's files are ingested by.
pub const EXTENSIONS: [&str; 4] = ["md", "markdown", "txt", "text"];

/// What ingesting one file did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ingested {
    /// Its chunks were written (replacing any it had).
    Written(usize),
    /// Its content was already indexed.
    Unchanged,
}

/// `text` cut into chunks (see the module's docs).
pub fn chunks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let flush = |current: &mut String, out: &mut Vec<String>| {
        let t = current.trim();
        if !t.is_empty() {
            out.push(t.to_owned());
        }
        current.clear();
    };
    for paragraph in paragraphs(text) {
        let heading = paragraph.starts_with('#');
        if heading || current.chars().count() + paragraph.chars().count() + 2 > CHUNK_CHARS {
            flush(&mut current, &mut out);
        }
        for piece in pieces(&paragraph) {
            if current.chars().count() + piece.chars().count() + 2 > CHUNK_CHARS {
                flush(&mut current, &mut out);
            }
            if !current.is_empty() {
                current.push_str("\n\n");
            }
            current.push_str(&piece);
        }
    }
    flush(&mut current, &mut out);
    out
}

/// The text's paragraphs: split at blank lines and before each Markdown
/// heading line.
fn paragraphs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for line in text.lines() {
        let blank = line.trim().is_empty();
        if (blank || line.starts_with('#')) && !current.is_empty() {
            out.push(current.join("\n"));
            current.clear();
        }
        if !blank {
            current.push(line.trim_end());
        }
    }
    if !current.is_empty() {
        out.push(current.join("\n"));
    }
    out
}

/// A paragraph in pieces of at most [`CHUNK_CHARS`] characters: cut
/// between lines (a list stays a list), a longer line between words, and
/// a single longer word where it must be.
fn pieces(paragraph: &str) -> Vec<String> {
    if paragraph.chars().count() <= CHUNK_CHARS {
        return vec![paragraph.to_owned()];
    }
    let mut out = Vec::new();
    let mut current = String::new();
    let put = |unit: &str, separator: char, out: &mut Vec<String>, current: &mut String| {
        let need = unit.chars().count() + usize::from(!current.is_empty());
        if current.chars().count() + need > CHUNK_CHARS && !current.is_empty() {
            out.push(std::mem::take(current));
        }
        if !current.is_empty() {
            current.push(separator);
        }
        current.push_str(unit);
    };
    for line in paragraph.lines() {
        if line.chars().count() <= CHUNK_CHARS {
            put(line, '\n', &mut out, &mut current);
            continue;
        }
        for word in line.split_whitespace() {
            let mut word = word;
            while word.chars().count() > CHUNK_CHARS {
                let at = word
                    .char_indices()
                    .nth(CHUNK_CHARS)
                    .map_or(word.len(), |(i, _)| i);
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                out.push(cut(word, ..at).to_owned());
                word = cut(word, at..);
            }
            if !word.is_empty() {
                put(word, ' ', &mut out, &mut current);
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// `sha256:<hex>` of `bytes`.
pub fn version_of(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(71);
    hex.push_str("sha256:");
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

/// The files `paths` name: each file itself, and every file with one of
/// [`EXTENSIONS`] under each directory (hidden ones skipped), sorted.
pub fn files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, FilesError> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| FilesError::at(p, e))?;
        if meta.is_dir() {
            walk(p, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// A file or directory [`files`] cannot read: `PATH: why`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct FilesError {
    /// The file or directory.
    pub path: PathBuf,
    /// Why not.
    pub source: std::io::Error,
}

impl FilesError {
    fn at(path: &Path, source: std::io::Error) -> Self {
        FilesError {
            path: path.to_owned(),
            source,
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), FilesError> {
    let entries = std::fs::read_dir(dir).map_err(|e| FilesError::at(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| FilesError::at(dir, e))?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let kind = entry.file_type().map_err(|e| FilesError::at(&path, e))?;
        if kind.is_dir() {
            walk(&path, out)?;
        } else if path
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| EXTENSIONS.contains(&x.to_ascii_lowercase().as_str()))
        {
            out.push(path);
        }
    }
    Ok(())
}

/// English words too common to say what a text is about (PostgreSQL's
/// `english` configuration drops its own list; FTS5 has none).
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "both", "but", "by", "can", "could", "did", "do", "does", "doing",
    "for", "from", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his",
    "how", "i", "if", "in", "into", "is", "it", "its", "me", "more", "most", "my", "no", "nor",
    "not", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over", "own",
    "same", "she", "should", "so", "some", "such", "than", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up",
    "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why",
    "will", "with", "would", "you", "your", "yours",
];

/// The words of a query worth searching for: letters and digits, two or
/// more, lower-cased, not [`STOP_WORDS`], each once, at most 64.
fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in query.split(|c: char| !c.is_alphanumeric()) {
        let w = w.to_lowercase();
        if w.chars().count() >= 2 && !STOP_WORDS.contains(&w.as_str()) && !out.contains(&w) {
            out.push(w);
        }
        if out.len() == 64 {
            break;
        }
    }
    out
}

impl Store {
    /// Indexes the file `path` names, whose content is `text`.
    pub async fn ingest(&self, path: &str, text: &str) -> Result<Ingested, StoreError> {
        let version = version_of(text.as_bytes());
        let known = self
            .engine()
            .query(
                "SELECT version FROM documents WHERE path = $1",
                vec![Value::Text(path.into())],
            )
            .await?;
        if known.first().and_then(|r| r.first()) == Some(&Value::Text(version.clone())) {
            return Ok(Ingested::Unchanged);
        }
        let chunks = chunks(text);
        let mut stmts = vec![
            Stmt {
                sql: "DELETE FROM document_chunks WHERE path = $1",
                params: vec![Value::Text(path.into())],
                must_change: false,
            },
            Stmt {
                sql: "DELETE FROM documents WHERE path = $1",
                params: vec![Value::Text(path.into())],
                must_change: false,
            },
            Stmt {
                sql: "INSERT INTO documents (path, version, chunks, ingested_at) \
                      VALUES ($1, $2, $3, $4)",
                params: vec![
                    Value::Text(path.into()),
                    Value::Text(version.clone()),
                    Value::Int(chunks.len() as i64),
                    Value::Text(now_rfc3339()),
                ],
                must_change: false,
            },
        ];
        for (i, chunk) in chunks.iter().enumerate() {
            stmts.push(Stmt {
                sql: "INSERT INTO document_chunks (path, chunk, version, text) \
                      VALUES ($1, $2, $3, $4)",
                params: vec![
                    Value::Text(path.into()),
                    Value::Int(i as i64 + 1),
                    Value::Text(version.clone()),
                    Value::Text(chunk.clone()),
                ],
                must_change: false,
            });
        }
        self.engine().transaction(stmts).await?;
        Ok(Ingested::Written(chunks.len()))
    }

    /// How many files and chunks the index holds.
    pub async fn indexed(&self) -> Result<(u64, u64), StoreError> {
        Ok((
            self.count("SELECT COUNT(*) FROM documents", vec![]).await?,
            self.count("SELECT COUNT(*) FROM document_chunks", vec![])
                .await?,
        ))
    }

    /// The `limit` chunks that best match `query`, best first, as
    /// candidates (ties by path and place).
    pub async fn search(&self, query: &str, limit: u32) -> Result<Vec<Candidate>, StoreError> {
        let terms = terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let (sql, q) = if self.engine_name() == "postgres" {
            (
                "SELECT path, chunk, version, text, ts_rank_cd(tsv, q)::float8 AS rank \
                 FROM document_chunks, to_tsquery('english', $1) q WHERE tsv @@ q \
                 ORDER BY rank DESC, path, chunk LIMIT $2",
                terms.join(" | "),
            )
        } else {
            (
                "SELECT path, chunk, version, text, -bm25(document_chunks) AS rank \
                 FROM document_chunks WHERE document_chunks MATCH $1 \
                 ORDER BY rank DESC, path, chunk LIMIT $2",
                terms
                    .iter()
                    .map(|t| format!("\"{t}\""))
                    .collect::<Vec<_>>()
                    .join(" OR "),
            )
        };
        let rows = self
            .engine()
            .query(sql, vec![Value::Text(q), Value::Int(i64::from(limit))])
            .await?;
        rows.into_iter()
            .map(|r| {
                let text = |i: usize| match r.get(i) {
                    Some(Value::Text(s)) => Ok(s.clone()),
                    other => Err(StoreError::Database(format!(
                        "document_chunks: column {i} is {other:?}"
                    ))),
                };
                let chunk = match r.get(1) {
                    Some(Value::Int(n)) => *n,
                    Some(Value::Text(s)) => s.parse().unwrap_or_default(),
                    _ => 0,
                };
                let score = match r.get(4) {
                    Some(Value::Real(f)) => Some(*f),
                    Some(Value::Int(n)) => Some(*n as f64),
                    _ => None,
                };
                let reference = format!("{}#{chunk}", text(0)?);
                Ok(Candidate {
                    id: reference.clone(),
                    section: Section::RelevantKnowledge,
                    text: text(3)?,
                    provenance: Some(Provenance {
                        source_kind: "chunk".into(),
                        reference,
                        source_version: Some(text(2)?),
                        index_revision: None,
                    }),
                    trust: TrustTier::Unverified,
                    score,
                    sequence: None,
                    scope: None,
                    token_count: None,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_start_at_headings_and_stay_within_the_limit() {
        let text = "# Billing\n\nInvoices are due in 30 days.\n\nLate fees apply.\n\n## Refunds\nRefunds take 5 days.\n";
        assert_eq!(
            chunks(text),
            [
                "# Billing\n\nInvoices are due in 30 days.\n\nLate fees apply.",
                "## Refunds\nRefunds take 5 days."
            ]
        );
        let long = "word ".repeat(1000);
        let cut = chunks(&long);
        assert!(cut.len() >= 4, "{}", cut.len());
        assert!(cut.iter().all(|c| c.chars().count() <= CHUNK_CHARS));
        assert_eq!(cut.join(" ").split_whitespace().count(), 1000);
        let list: String = (0..100)
            .map(|i| format!("- item {i} of a long list\n"))
            .collect();
        let cut = chunks(&list);
        assert!(
            cut.len() >= 2 && cut.iter().all(|c| c.starts_with("- item")),
            "{cut:?}"
        );
        assert_eq!(cut.join("\n").lines().count(), 100);
        let one_word = "x".repeat(3000);
        let cut = chunks(&one_word);
        assert_eq!(cut.concat(), one_word);
        assert!(cut.iter().all(|c| c.chars().count() <= CHUNK_CHARS));
        assert!(chunks(" \n\n ").is_empty());
    }

    #[test]
    fn query_terms_are_words_only() {
        assert_eq!(terms("What's \"overdue\" OR NEAR(x)?"), ["overdue", "near"]);
        assert!(terms("? ! -").is_empty());
    }
}

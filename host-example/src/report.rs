//! Human-readable output: the pack and a table of the snapshot.

use crate::scenario::Outcome;
use ctxpack_core::{ContextPack, Reason};
use std::fmt::Write;

/// One reason in words, with its numbers.
pub fn reason_text(reason: &Reason) -> String {
    match reason {
        Reason::Mandatory => "mandatory".into(),
        Reason::WithinBudget => "within budget".into(),
        Reason::KeepLast(n) => format!("keep-last {n}"),
        Reason::OverBudget(s) => format!("over budget: needs {}, {} left", s.needed, s.remaining),
        Reason::EvictedOldest => "evicted oldest".into(),
        Reason::ToolPair(id) => format!("tool pair with {id}"),
        Reason::OrphanToolResult => "orphan tool result".into(),
        Reason::DuplicateOf(id) => format!("duplicate of {id}"),
        Reason::PolicyDenied(why) => format!("policy denied: {why}"),
        Reason::OutOfScope => "out of scope".into(),
        Reason::NoProvenance => "no provenance".into(),
    }
}

fn kebab<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(e) => format!("<{e}>"),
    }
}

/// The pack's text, then the snapshot as a table.
pub fn pack(p: &ContextPack) -> String {
    let mut out = String::new();
    let s = &p.snapshot;
    let _ = writeln!(
        out,
        "pack {}  ({} of {} tokens)",
        p.id, p.budget_used, p.budget_limit
    );
    let _ = writeln!(out, "snapshot {}  status {}", s.id, kebab(&s.status));
    let _ = writeln!(out, "stable prefix {} tokens", s.stable_prefix_tokens);
    let _ = writeln!(out, "\n--- context ---\n{}\n--- end ---\n", p.text);
    let rows: Vec<[String; 6]> = s
        .entries
        .iter()
        .map(|e| {
            [
                e.id.clone(),
                kebab(&e.section),
                kebab(&e.layer).to_uppercase(),
                e.tokens.to_string(),
                if e.included { "included" } else { "dropped" }.into(),
                reason_text(&e.reason),
            ]
        })
        .collect();
    let header = ["id", "section", "layer", "tokens", "", "reason"].map(String::from);
    let mut widths = [0usize; 6];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i == 3 {
                let _ = write!(line, "{cell:>w$}  ");
            } else {
                let _ = write!(line, "{cell:<w$}  ");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let c = &p.compression;
    let _ = writeln!(
        out,
        "\n{} dropped; strategies: {}; layers cut: {}",
        c.entries_dropped,
        c.applied_strategies
            .iter()
            .map(kebab)
            .collect::<Vec<_>>()
            .join(", "),
        if c.truncated_layers.is_empty() {
            "none".into()
        } else {
            c.truncated_layers
                .iter()
                .map(|l| kebab(l).to_uppercase())
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    out
}

/// A pack, or the refusal in words.
pub fn outcome(o: &Outcome) -> String {
    match o {
        Outcome::Pack(p) => pack(p),
        Outcome::Error(e) => format!("assembly refused: {e}\n"),
    }
}

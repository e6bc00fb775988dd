//! Human-readable output: the pack and a table of the snapshot.

use ctxpack_core::{
    ContextPack, Dispatch, Failure, Reason, RoutingDecision, Snapshot, SnapshotDiff, SnapshotStatus,
};
use ctxpack_scenario::{Outcome, Reply};
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
        Reason::SectionNotAllowed => "section not allowed for host items".into(),
        Reason::Summarized(id) => format!("summarised into {id}"),
        Reason::StepCut(n) => format!("step cut (steps of {n})"),
        Reason::BeyondLimit(n) => format!("beyond the source's limit of {n}"),
        Reason::BeforeUserTurn => "before the first user turn kept".into(),
        Reason::AssemblyFailed => "assembly failed".into(),
        Reason::Unreviewed => "unreviewed: the review rounds were spent".into(),
    }
}

fn kebab<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(e) => format!("<{e}>"),
    }
}

/// The snapshot's candidates as a table.
fn entries(s: &Snapshot) -> String {
    let mut out = String::new();
    let rows: Vec<[String; 6]> = s
        .entries
        .iter()
        .map(|e| {
            let id = match &e.run {
                Some(run) => format!("{} … {} ({} in a run)", e.id, run.last_id, run.count),
                None => e.id.clone(),
            };
            [
                id,
                kebab(&e.section),
                kebab(&e.layer).to_uppercase(),
                e.tokens.to_string(),
                if e.included { "included" } else { "dropped" }.into(),
                match (e.compressed, e.included) {
                    (true, true) => format!("{} (compressed)", reason_text(&e.reason)),
                    _ => reason_text(&e.reason),
                },
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
    out
}

/// A failure: why, and the failed snapshot's table if the assembly had
/// begun.
pub fn failure(f: &Failure) -> String {
    let mut out = format!("failed: {}\n", f.error);
    if let Some(s) = &f.snapshot {
        let _ = writeln!(out, "snapshot {}  status {}", s.id, status(&s.status));
        for call in &s.source_calls {
            let _ = writeln!(out, "source {}: {}", call.capability, kebab(&call.outcome));
        }
        out.push('\n');
        out.push_str(&entries(s));
    }
    out
}

/// A status list in words: `degraded, truncated`.
pub fn status(s: &[SnapshotStatus]) -> String {
    s.iter().map(kebab).collect::<Vec<_>>().join(", ")
}

/// The pack's text, then the snapshot as a table.
pub fn pack(p: &ContextPack) -> String {
    let mut out = String::new();
    let s = &p.snapshot;
    let _ = writeln!(
        out,
        "pack {}  ({} of {} tokens; text {}, messages {})",
        p.id, p.budget_used, p.budget_limit, s.text_tokens, s.message_tokens
    );
    let _ = writeln!(out, "snapshot {}  status {}", s.id, status(&s.status));
    let _ = writeln!(
        out,
        "stable prefix {} tokens; profile {}",
        s.stable_prefix_tokens,
        kebab(&s.profile)
    );
    for call in &s.source_calls {
        let _ = writeln!(out, "source {}: {}", call.capability, kebab(&call.outcome));
    }
    match &p.chat {
        // A chat is sent as its provider's request, not as the flat text.
        Some(chat) => {
            let body = serde_json::from_str::<serde_json::Value>(&chat.body)
                .and_then(|v| serde_json::to_string_pretty(&v))
                .unwrap_or_else(|_| chat.body.clone());
            let sources: Vec<String> = chat
                .sources
                .iter()
                .map(|s| s.map_or("pack".to_owned(), |i| i.to_string()))
                .collect();
            let _ = writeln!(
                out,
                "\n--- request to send ({}; each message's source: {}) ---\n{body}\n--- end ---\n",
                kebab(&chat.shape),
                sources.join(" ")
            );
        }
        None => {
            let _ = writeln!(out, "\n--- context ---\n{}\n--- end ---\n", p.text);
        }
    }
    out.push_str(&entries(s));
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

/// A routing decision: the verdict, then every route's rules and what
/// matched.
pub fn decision(d: &RoutingDecision) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "route {}  skill {}  confidence {:.3}  threshold {:.2}  {}",
        d.route.as_deref().unwrap_or("(none)"),
        d.skill.as_deref().unwrap_or("(none)"),
        d.confidence,
        d.threshold,
        if d.low_confidence {
            "LOW CONFIDENCE"
        } else {
            "confident"
        }
    );
    if let Some(cue) = &d.reference_cue {
        let _ = writeln!(out, "reference cue \"{cue}\": goes to the builder");
    }
    for e in &d.matched_entities {
        let _ = writeln!(out, "entity {} = {}", e.name, e.value);
    }
    for s in &d.scores {
        let _ = writeln!(out, "  {:<16} {:.3}", s.route, s.score);
        for r in &s.rules {
            let hit = r
                .matched
                .as_deref()
                .map_or("-".to_owned(), |m| format!("matched \"{m}\""));
            let _ = writeln!(out, "    w={:.2}  {:<44} {}", r.weight, r.rule, hit);
        }
    }
    out
}

/// An outcome in words: the pack, the handling, or the refusal, then the
/// host calls.
pub fn outcome(o: &Outcome) -> String {
    let mut out = match &o.reply {
        Reply::Pack(p) => pack(p),
        Reply::Handled(h) => {
            let mut out = decision(&h.decision);
            match &h.dispatch {
                Dispatch::Skill(s) => {
                    let _ = writeln!(
                        out,
                        "\ndispatch: skill {} with a trivial context (builder not called)",
                        s.skill
                    );
                }
                Dispatch::Fallback(f) => {
                    let _ = writeln!(
                        out,
                        "\ndispatch: fallback skill with {} turns, {} retrieved, {} memory items\n",
                        f.context.conversation_history.len(),
                        f.context.retrieved_context.len(),
                        f.context.memory_items.len()
                    );
                    out.push_str(&pack(&f.pack));
                }
            }
            out
        }
        Reply::Failed(f) => failure(f),
        Reply::Trimmed(t) => format!(
            "kept messages {:?} ({} tokens){}\n",
            t.kept,
            t.tokens,
            match &t.partial {
                Some(p) => format!(", message {} cut", p.message),
                None => String::new(),
            }
        ),
    };
    let calls: Vec<String> = o
        .host_calls
        .iter()
        .map(|(k, v)| format!("{k} x{v}"))
        .collect();
    let _ = writeln!(
        out,
        "host calls: {}",
        if calls.is_empty() {
            "none".into()
        } else {
            calls.join(", ")
        }
    );
    out
}

/// A snapshot diff: one line per changed candidate, with its reason before
/// and after.
pub fn diff(d: &SnapshotDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "snapshot {} -> {}\ntokens {} -> {}, status {} -> {}, {} unchanged",
        short(&d.before_id),
        short(&d.after_id),
        d.tokens_before,
        d.tokens_after,
        status(&d.status_before),
        status(&d.status_after),
        d.unchanged
    );
    for c in &d.changes {
        let state = |s: &Option<ctxpack_core::EntryState>| match s {
            None => "absent".to_owned(),
            Some(s) => format!(
                "{} ({}, {} tokens)",
                if s.included { "included" } else { "dropped" },
                reason_text(&s.reason),
                s.tokens
            ),
        };
        let _ = writeln!(
            out,
            "{:<17} {:<16} {}  ->  {}",
            kebab(&c.kind),
            c.id,
            state(&c.before),
            state(&c.after)
        );
    }
    out
}

fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

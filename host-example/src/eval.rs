//! Router evaluation over a labelled query set.
//!
//! The set is a tab-separated file: `label <TAB> kind <TAB> query`, where
//! `label` is the route the query should be dispatched to, or `none` when it
//! should go to the builder (no route fits, it is ambiguous, or it refers
//! back), and `kind` groups queries for the report (`plain`, `no-route`,
//! `ambiguous`, `misspelled`, `adversarial`, `reference`, ...). Blank lines
//! and lines starting with `#` are skipped.

use ctxpack_core::RoutingDecision;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The label of queries that should go to the builder.
pub const NONE: &str = "none";

/// One labelled query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labelled {
    /// Expected route, or [`NONE`].
    pub label: String,
    /// Group for the report.
    pub kind: String,
    /// The query.
    pub query: String,
}

/// Parses a labelled set; an error names the line.
pub fn parse(text: &str) -> Result<Vec<Labelled>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut parts = line.splitn(3, '\t');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(label), Some(kind), Some(query)) if !label.is_empty() && !query.is_empty() => out
                .push(Labelled {
                    label: label.to_owned(),
                    kind: kind.to_owned(),
                    query: query.to_owned(),
                }),
            _ => {
                return Err(format!(
                    "line {}: expected `label<TAB>kind<TAB>query`",
                    n + 1
                ));
            }
        }
    }
    Ok(out)
}

/// Where a decision dispatches: its route when it goes to the skill,
/// [`NONE`] when it goes to the builder.
pub fn dispatched(d: &RoutingDecision) -> &str {
    match &d.route {
        Some(route) if d.goes_to_skill() => route,
        _ => NONE,
    }
}

#[derive(Default)]
struct Counts {
    tp: u32,
    fp: u32,
    fn_: u32,
}

/// The evaluation report.
pub fn report(set: &[Labelled], decisions: &[RoutingDecision]) -> String {
    let mut out = String::new();
    let total = set.len();
    let correct = set
        .iter()
        .zip(decisions)
        .filter(|(q, d)| dispatched(d) == q.label)
        .count();
    let _ = writeln!(
        out,
        "accuracy {correct}/{total} = {:.1}%  (a query is right when it is dispatched to its label; `none` = the builder)",
        pct(correct, total)
    );

    per_route(&mut out, set, decisions);
    per_kind(&mut out, set, decisions);
    low_confidence(&mut out, set, decisions);
    sweep(&mut out, set, decisions);
    out
}

/// Precision and recall per route.
fn per_route(out: &mut String, set: &[Labelled], decisions: &[RoutingDecision]) {
    let mut per_route: BTreeMap<&str, Counts> = BTreeMap::new();
    for (q, d) in set.iter().zip(decisions) {
        let got = dispatched(d);
        per_route.entry(q.label.as_str()).or_default();
        per_route.entry(got).or_default();
        if got == q.label {
            per_route.entry(got).or_default().tp += 1;
        } else {
            per_route.entry(got).or_default().fp += 1;
            per_route.entry(q.label.as_str()).or_default().fn_ += 1;
        }
    }
    let _ = writeln!(
        out,
        "\n{:<14} {:>9} {:>7} {:>5}",
        "route", "precision", "recall", "n"
    );
    for (route, c) in &per_route {
        let n = c.tp + c.fn_;
        let _ = writeln!(
            out,
            "{route:<14} {:>8.1}% {:>6.1}% {n:>5}",
            pct(c.tp as usize, (c.tp + c.fp) as usize),
            pct(c.tp as usize, n as usize)
        );
    }
}

/// Accuracy per kind of query.
fn per_kind(out: &mut String, set: &[Labelled], decisions: &[RoutingDecision]) {
    let mut kinds: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (q, d) in set.iter().zip(decisions) {
        let e = kinds.entry(q.kind.as_str()).or_default();
        e.1 += 1;
        if dispatched(d) == q.label {
            e.0 += 1;
        }
    }
    let _ = writeln!(out, "\n{:<14} {:>9} {:>5}", "kind", "accuracy", "n");
    for (kind, (ok, n)) in &kinds {
        let _ = writeln!(out, "{kind:<14} {:>8.1}% {n:>5}", pct(*ok, *n));
    }
}

/// Whether low confidence fired where it should.
fn low_confidence(out: &mut String, set: &[Labelled], decisions: &[RoutingDecision]) {
    // Low confidence was right to fire when the best route alone would have
    // dispatched wrongly (another route, or a query that belongs to the
    // builder); wrong when the best route was the label.
    let (mut fired, mut right, mut missed, mut confident) = (0, 0, 0, 0);
    for (q, d) in set.iter().zip(decisions) {
        let top = d.route.as_deref().unwrap_or(NONE);
        if d.low_confidence && d.route.is_some() {
            fired += 1;
            if top != q.label {
                right += 1;
            }
        } else if d.route.is_some() {
            confident += 1;
            if top != q.label && d.reference_cue.is_none() {
                missed += 1;
            }
        }
    }
    let _ = writeln!(
        out,
        "\nlow-confidence fired on {fired} routed queries: right {right} ({:.1}%), wrong {} (the best route was correct)",
        pct(right, fired),
        fired - right
    );
    let _ = writeln!(
        out,
        "confident on {confident} queries: {missed} dispatched to a wrong skill"
    );
}

/// Accuracy at each global threshold.
fn sweep(out: &mut String, set: &[Labelled], decisions: &[RoutingDecision]) {
    let _ = writeln!(out, "\nglobal threshold sweep (route overrides ignored):");
    for t in [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8] {
        let ok = set
            .iter()
            .zip(decisions)
            .filter(|(q, d)| {
                let got = match &d.route {
                    Some(r) if d.confidence >= t && d.reference_cue.is_none() => r.as_str(),
                    _ => NONE,
                };
                got == q.label
            })
            .count();
        let _ = writeln!(
            out,
            "  threshold {t:.1}: accuracy {:.1}%",
            pct(ok, set.len())
        );
    }
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxpack_core::{ConfigFormat, Router};

    #[test]
    fn parse_names_the_bad_line() {
        let set = parse("# c\nweather\tplain\twill it rain\n\nnone\tno-route\thello\n").unwrap();
        assert_eq!(set.len(), 2);
        assert_eq!(set[1].label, "none");
        let e = parse("weather\tplain\tok\nbroken line\n").unwrap_err();
        assert!(e.starts_with("line 2"), "{e}");
    }

    #[test]
    fn report_counts_precision_recall_and_firing() {
        let router = Router::from_text(
            "threshold: 0.5\nroutes:\n  - {name: a, skill: sa, rules: [{keywords: [alpha], weight: 0.9}]}\n  - {name: b, skill: sb, rules: [{keywords: [beta], weight: 0.9}]}\n",
            ConfigFormat::Yaml,
        )
        .unwrap();
        let set = parse(
            "a\tplain\talpha\nb\tplain\tbeta\nnone\tambiguous\talpha beta\nb\tplain\talpha\n",
        )
        .unwrap();
        let decisions: Vec<_> = set.iter().map(|q| router.route(&q.query)).collect();
        let r = report(&set, &decisions);
        assert!(r.contains("accuracy 3/4 = 75.0%"), "{r}");
        // a: one right, one wrong (the 4th query) -> precision 50%
        assert!(r.contains("a                  50.0%  100.0%     1"), "{r}");
        assert!(r.contains("b                 100.0%   50.0%     2"), "{r}");
        assert!(
            r.contains("low-confidence fired on 1 routed queries: right 1"),
            "{r}"
        );
        assert!(
            r.contains("confident on 3 queries: 1 dispatched to a wrong skill"),
            "{r}"
        );
    }
}

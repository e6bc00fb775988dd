//! The seed's four metrics, in Prometheus' text format:
//!
//! | seed                                         | here                                       | labels           |
//! |----------------------------------------------|--------------------------------------------|------------------|
//! | `connectsoft.factory.context.assemblies`     | `ctxpack_context_assemblies_total`         | tenant, status   |
//! | `connectsoft.factory.context.tokens_used`    | `ctxpack_context_tokens_used` (histogram)  | tenant, section  |
//! | `connectsoft.factory.context.assembly_latency` | `ctxpack_context_assembly_latency_seconds` (histogram) | tenant |
//! | `connectsoft.factory.context.dropped_items`  | `ctxpack_context_dropped_items_total`      | tenant, reason   |
//!
//! An assembly's status label is its status list joined by `+`
//! (`degraded+truncated`), so each assembly counts once.
//!
//! The tenant label is bounded: the first [`TENANT_LABELS`] tenants seen
//! are labelled by name, every later one as `_other`, so a service with
//! many tenants cannot grow its metrics without end.
//!
//! Besides the seed's: `ctxpack_responses_total{protocol, route, status}`
//! counts every answer, refusals included.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

const TOKEN_BUCKETS: &[f64] = &[
    0.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0,
];
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0,
];

#[derive(Clone, Debug, Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, buckets: &[f64], v: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; buckets.len()];
        }
        for (i, b) in buckets.iter().enumerate() {
            if v <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }
}

type Labels = Vec<(&'static str, String)>;

/// Most tenants labelled by name.
pub const TENANT_LABELS: usize = 100;

#[derive(Default)]
struct Inner {
    tenants: std::collections::BTreeSet<String>,
    responses: BTreeMap<Labels, u64>,
    assemblies: BTreeMap<Labels, u64>,
    tokens: BTreeMap<Labels, Histogram>,
    latency: BTreeMap<Labels, Histogram>,
    dropped: BTreeMap<Labels, u64>,
}

/// The service's metrics.
#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

/// One recorded assembly, as the metrics see it.
pub struct Observation<'a> {
    /// Tenant.
    pub tenant: &'a str,
    /// Status list joined by `+`.
    pub status: String,
    /// Tokens per section (the section's name).
    pub tokens_per_section: Vec<(String, u32)>,
    /// Dropped candidates per reason.
    pub dropped_by_reason: Vec<(String, u32)>,
    /// Seconds the request took.
    pub latency: f64,
}

impl Metrics {
    /// Records one assembly.
    pub fn record(&self, o: &Observation<'_>) {
        let Ok(mut m) = self.inner.lock() else {
            return;
        };
        let named = m.tenants.contains(o.tenant) || m.tenants.len() < TENANT_LABELS;
        if named {
            m.tenants.insert(o.tenant.to_owned());
        }
        let tenant = ("tenant", if named { o.tenant } else { "_other" }.to_owned());
        *m.assemblies
            .entry(vec![tenant.clone(), ("status", o.status.clone())])
            .or_default() += 1;
        for (section, tokens) in &o.tokens_per_section {
            m.tokens
                .entry(vec![tenant.clone(), ("section", section.clone())])
                .or_default()
                .observe(TOKEN_BUCKETS, f64::from(*tokens));
        }
        m.latency
            .entry(vec![tenant.clone()])
            .or_default()
            .observe(LATENCY_BUCKETS, o.latency);
        for (reason, n) in &o.dropped_by_reason {
            *m.dropped
                .entry(vec![tenant.clone(), ("reason", reason.clone())])
                .or_default() += u64::from(*n);
        }
    }

    /// Counts one answer: `protocol` (`http`, `grpc`), its route (method
    /// and path pattern, or the gRPC method) and its status.
    pub fn response(&self, protocol: &'static str, route: &str, status: &str) {
        if let Ok(mut m) = self.inner.lock() {
            *m.responses
                .entry(vec![
                    ("protocol", protocol.to_owned()),
                    ("route", route.to_owned()),
                    ("status", status.to_owned()),
                ])
                .or_default() += 1;
        }
    }

    /// Everything, in Prometheus' text exposition format.
    pub fn render(&self) -> String {
        let Ok(m) = self.inner.lock() else {
            return String::new();
        };
        let mut out = String::new();
        counter(
            &mut out,
            "ctxpack_context_assemblies_total",
            "Assemblies by status.",
            &m.assemblies,
        );
        histogram(
            &mut out,
            "ctxpack_context_tokens_used",
            "Tokens per section of each assembly (entry overhead included).",
            TOKEN_BUCKETS,
            &m.tokens,
        );
        histogram(
            &mut out,
            "ctxpack_context_assembly_latency_seconds",
            "Time to assemble, from the request read to the snapshot recorded.",
            LATENCY_BUCKETS,
            &m.latency,
        );
        counter(
            &mut out,
            "ctxpack_context_dropped_items_total",
            "Candidates dropped, by reason.",
            &m.dropped,
        );
        counter(
            &mut out,
            "ctxpack_responses_total",
            "Answers, refusals included, by protocol, route and status.",
            &m.responses,
        );
        out
    }
}

impl Metrics {
    /// The metrics one tenant may see: the series labelled with its name
    /// (none of the service-wide ones, nor `_other`, which sums other
    /// tenants), each family's `HELP` and `TYPE` with them.
    pub fn render_for(&self, tenant: &str) -> String {
        let label = format!("{{tenant=\"{}\"", escape(tenant));
        let mut out = String::new();
        let mut head = String::new();
        for line in self.render().lines() {
            if line.starts_with("# HELP") {
                head.clear();
            }
            if line.starts_with('#') {
                head.push_str(line);
                head.push('\n');
            } else if line.contains(&format!("{label},")) || line.contains(&format!("{label}}}")) {
                out.push_str(&head);
                head.clear();
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels(l: &Labels, extra: Option<(&str, String)>) -> String {
    let mut parts: Vec<String> = l
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if let Some((k, v)) = extra {
        parts.push(format!("{k}=\"{v}\""));
    }
    format!("{{{}}}", parts.join(","))
}

fn counter(out: &mut String, name: &str, help: &str, series: &BTreeMap<Labels, u64>) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
    for (l, v) in series {
        let _ = writeln!(out, "{name}{} {v}", labels(l, None));
    }
}

fn histogram(
    out: &mut String,
    name: &str,
    help: &str,
    buckets: &[f64],
    series: &BTreeMap<Labels, Histogram>,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    for (l, h) in series {
        for (b, c) in buckets.iter().zip(&h.counts) {
            let _ = writeln!(
                out,
                "{name}_bucket{} {c}",
                labels(l, Some(("le", b.to_string())))
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{} {}",
            labels(l, Some(("le", "+Inf".into()))),
            h.count
        );
        let _ = writeln!(out, "{name}_sum{} {}", labels(l, None), h.sum);
        let _ = writeln!(out, "{name}_count{} {}", labels(l, None), h.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_four_metrics_with_their_labels() {
        let m = Metrics::default();
        m.record(&Observation {
            tenant: "acme",
            status: "complete".into(),
            tokens_per_section: vec![
                ("system-prompt".into(), 16),
                ("relevant-knowledge".into(), 300),
            ],
            dropped_by_reason: vec![("over-budget".into(), 2)],
            latency: 0.004,
        });
        m.record(&Observation {
            tenant: "acme",
            status: "degraded".into(),
            tokens_per_section: vec![("system-prompt".into(), 16)],
            dropped_by_reason: vec![("over-budget".into(), 1)],
            latency: 3.0,
        });
        for i in 0..TENANT_LABELS + 5 {
            m.record(&Observation {
                tenant: &format!("t{i}"),
                status: "complete".into(),
                tokens_per_section: vec![],
                dropped_by_reason: vec![],
                latency: 0.001,
            });
        }
        let text = m.render();
        let tenants: std::collections::BTreeSet<_> = text
            .lines()
            .filter_map(|l| l.split("tenant=\"").nth(1)?.split('"').next())
            .collect();
        assert_eq!(tenants.len(), TENANT_LABELS + 1, "{tenants:?}");
        assert!(tenants.contains("_other") && tenants.contains("acme"));
        for line in [
            "ctxpack_context_assemblies_total{tenant=\"_other\",status=\"complete\"} 6",
            "ctxpack_context_assemblies_total{tenant=\"acme\",status=\"complete\"} 1",
            "ctxpack_context_assemblies_total{tenant=\"acme\",status=\"degraded\"} 1",
            "ctxpack_context_tokens_used_bucket{tenant=\"acme\",section=\"system-prompt\",le=\"16\"} 2",
            "ctxpack_context_tokens_used_bucket{tenant=\"acme\",section=\"relevant-knowledge\",le=\"256\"} 0",
            "ctxpack_context_tokens_used_sum{tenant=\"acme\",section=\"relevant-knowledge\"} 300",
            "ctxpack_context_assembly_latency_seconds_bucket{tenant=\"acme\",le=\"0.005\"} 1",
            "ctxpack_context_assembly_latency_seconds_bucket{tenant=\"acme\",le=\"+Inf\"} 2",
            "ctxpack_context_assembly_latency_seconds_count{tenant=\"acme\"} 2",
            "ctxpack_context_dropped_items_total{tenant=\"acme\",reason=\"over-budget\"} 3",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
        }
    }
}

//! Scenario files: a request, the builder's configuration and what the
//! host's stores answer, in one JSON document.

use crate::stores::HostAnswers;
use ctxpack_core::text::cut;
use ctxpack_core::{AssembleRequest, BuilderConfig, ConfigFormat, SnapshotStatus};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Scenario {
    /// What the scenario shows.
    pub description: String,
    /// How the builder is constructed.
    #[serde(default)]
    pub config: BuilderConfig,
    /// What is assembled.
    pub request: AssembleRequest,
    /// What the host's stores answer.
    #[serde(default)]
    pub host: HostAnswers,
    /// With a router the scenario runs `handle` (route, then dispatch)
    /// instead of `assemble`.
    #[serde(default)]
    pub router: Option<RouterSpec>,
    /// The facts the scenario exists for, checked on their own by every
    /// engine: a re-blessed expected file cannot silently drop them.
    #[serde(default)]
    pub expect: Option<Expect>,
}

/// Facts about a scenario's outcome, each checked apart from the expected
/// file. Every field left out is not checked.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Expect {
    /// The snapshot's status, a pack's or a failed assembly's.
    #[serde(default)]
    pub status: Option<Vec<SnapshotStatus>>,
    /// Capabilities that must have been called.
    #[serde(default)]
    pub calls: Vec<String>,
    /// Capabilities that must not have been called.
    #[serde(default)]
    pub not_called: Vec<String>,
    /// Candidate id -> the name of the reason it must end with
    /// (`summarized`, `over-budget`, `within-budget`, ...).
    #[serde(default)]
    pub reasons: BTreeMap<String, String>,
    /// Candidates whose text must have been summarised or cut.
    #[serde(default)]
    pub compressed: Vec<String>,
    /// Candidates whose text must be whole.
    #[serde(default)]
    pub whole: Vec<String>,
    /// Candidates that must be in the pack inside a fence of their own:
    /// ctxpack's opening marker first, its closing marker with the same
    /// nonce last, and no other marker (`<untrusted`, `</untrusted`, in any
    /// case) between them. (The conformance tests read every pack's fences
    /// more closely, folding every spelling.)
    #[serde(default)]
    pub fenced: Vec<String>,
    /// Section -> what compression did to it, by the outcome's name
    /// (`summarized`, `cut`, `skipped`, `whole`), as the snapshot's
    /// `compressions` records it.
    #[serde(default)]
    pub compressions: BTreeMap<String, String>,
    /// Strategies the pack's compression metadata must list
    /// (`summarize`, `truncate`, `keep-last`, …).
    #[serde(default)]
    pub strategies: Vec<String>,
    /// The kind of error a failing scenario ends with
    /// (`mandatory-over-budget`, `invalid-field`, `host-failed`, ...).
    #[serde(default)]
    pub error: Option<String>,
    /// For a failing scenario, whether it has a failed snapshot.
    #[serde(default)]
    pub failed_snapshot: Option<bool>,
    /// For `handle`: `skill` or `fallback`.
    #[serde(default)]
    pub dispatch: Option<String>,
    /// The budget the snapshot records.
    #[serde(default)]
    pub token_budget: Option<u32>,
    /// The pack's id.
    #[serde(default)]
    pub pack_id: Option<String>,
    /// The included entries whose text had a spelling of a structure
    /// defused, exactly, as the snapshot's `fence` lists them.
    #[serde(default)]
    pub defused: Option<Vec<String>>,
    /// The included entries whose text lost control or tag characters,
    /// exactly, as the snapshot's `fence` lists them.
    #[serde(default)]
    pub stripped: Option<Vec<String>>,
    /// The role of the message the other context is sent in (`user`
    /// where any of it is of unverified or untrusted origin), as the
    /// snapshot's `fence` says.
    #[serde(default)]
    pub context_role: Option<ctxpack_core::Role>,
    /// Whether the fences' nonce is keyed, as the snapshot says.
    #[serde(default)]
    pub keyed: Option<bool>,
    /// The roles of the pack's messages, in order (`system`, `user`,
    /// `assistant`, `tool`): where the layout puts the context.
    #[serde(default)]
    pub message_roles: Option<Vec<String>>,
    /// The pack's cache prefixes by boundary (`stable`, `history`,
    /// `turn`): how many messages each holds and its tokens, exactly as
    /// the snapshot's `cache-prefixes` records them, in order.
    #[serde(default)]
    pub cache_prefixes: Option<Vec<(String, u32, u32)>>,
    /// The pack's compaction, exactly: the summary, the turns it stands
    /// for, and the turn before which tool results are cleared.
    #[serde(default)]
    pub compaction: Option<ctxpack_core::Compaction>,
    /// For a request with a chat: for each message of the request to send
    /// (`pack.chat`), the index of the chat's message it is, or null for a
    /// message the pack made, exactly.
    #[serde(default)]
    pub chat_sources: Option<Vec<Option<u32>>>,
    /// For a request with a chat: the messages of the request to send
    /// (by their place in its list) that carry a provider's cache hint
    /// (Anthropic's `cache_control`), exactly.
    #[serde(default)]
    pub chat_breakpoints: Option<Vec<usize>>,
}

impl Expect {
    /// Whether it states any fact at all.
    pub fn is_empty(&self) -> bool {
        self == &Expect::default()
    }

    /// The facts `outcome` breaks, one line each.
    pub fn broken(&self, outcome: &Outcome) -> Vec<String> {
        let mut broken = Vec::new();
        self.broken_status(outcome, &mut broken);
        self.broken_entries(outcome, &mut broken);
        self.broken_pack(outcome, &mut broken);
        self.broken_failure(outcome, &mut broken);
        self.broken_fence(outcome, &mut broken);
        self.broken_dispatch(outcome, &mut broken);
        broken
    }

    /// The status and the host calls made and not made.
    fn broken_status(&self, outcome: &Outcome, broken: &mut Vec<String>) {
        let reply = &outcome.reply;
        let snapshot = reply.snapshot();
        if let Some(want) = &self.status {
            let got = snapshot.map(|s| s.status.clone());
            if got.as_ref() != Some(want) {
                broken.push(format!("status: want {want:?}, got {got:?}"));
            }
        }
        for c in &self.calls {
            if !outcome.host_calls.contains_key(c) {
                broken.push(format!("{c} was not called"));
            }
        }
        for c in &self.not_called {
            if outcome.host_calls.contains_key(c) {
                broken.push(format!("{c} was called"));
            }
        }
    }

    /// The snapshot's entries: reasons, compressed or whole, each section's compression.
    fn broken_entries(&self, outcome: &Outcome, broken: &mut Vec<String>) {
        let reply = &outcome.reply;
        let snapshot = reply.snapshot();
        // A host may answer an id twice: a fact about an id holds if it
        // holds for one of its candidates. A run's entry holds for each of
        // its members.
        let entries = |id: &str| -> Vec<&ctxpack_core::SnapshotEntry> {
            snapshot.map_or(Vec::new(), |s| {
                s.entries
                    .iter()
                    .filter(|e| e.id == id || (e.run.is_some() && e.ids().iter().any(|m| m == id)))
                    .collect()
            })
        };
        let entry = |id: &str| entries(id).into_iter().next();
        for (id, want) in &self.reasons {
            let got: Vec<&ctxpack_core::Reason> = entries(id).iter().map(|e| &e.reason).collect();
            if got.is_empty() {
                broken.push(format!("{id}: not in the snapshot"));
            } else if !got.iter().any(|r| r.name() == want) {
                broken.push(format!("{id}: want {want}, got {got:?}"));
            }
        }
        for id in &self.compressed {
            if !entry(id).is_some_and(|e| e.compressed) {
                broken.push(format!("{id}: not compressed"));
            }
        }
        for id in &self.whole {
            if entry(id).is_none_or(|e| e.compressed) {
                broken.push(format!("{id}: not whole"));
            }
        }
        for (section, want) in &self.compressions {
            let got = snapshot.and_then(|s| {
                s.compressions.iter().find(|c| {
                    serde_json::to_value(c.section)
                        .ok()
                        .as_ref()
                        .and_then(|v| v.as_str())
                        == Some(section.as_str())
                })
            });
            let name = got.and_then(|c| match serde_json::to_value(&c.outcome) {
                Ok(serde_json::Value::Object(map)) => map.keys().next().cloned(),
                _ => None,
            });
            if name.as_deref() != Some(want.as_str()) {
                broken.push(format!(
                    "compression of {section}: want {want}, got {:?}",
                    got.map(|c| &c.outcome)
                ));
            }
        }
    }

    /// The pack: the strategies applied and the fenced entries.
    fn broken_pack(&self, outcome: &Outcome, broken: &mut Vec<String>) {
        let reply = &outcome.reply;
        let applied: Vec<String> = reply
            .pack()
            .map(|p| {
                p.compression
                    .applied_strategies
                    .iter()
                    .filter_map(|s| serde_json::to_value(s).ok()?.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        for want in &self.strategies {
            if !applied.contains(want) {
                broken.push(format!("strategy {want} not applied: {applied:?}"));
            }
        }
        if let Some(want) = &self.cache_prefixes {
            let got: Vec<(String, u32, u32)> = reply
                .pack()
                .map(|p| p.snapshot.cache_prefixes.iter())
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    let boundary = serde_json::to_value(c.boundary).ok()?;
                    Some((boundary.as_str()?.to_owned(), c.messages, c.tokens))
                })
                .collect();
            if &got != want {
                broken.push(format!("cache prefixes {got:?}, not {want:?}"));
            }
        }
        if let Some(want) = &self.compaction {
            let got = reply.pack().and_then(|p| p.compaction.clone());
            if got.as_ref() != Some(want) {
                broken.push(format!("compaction {got:?}, not {want:?}"));
            }
        }
        if let Some(want) = &self.message_roles {
            let roles: Vec<String> = reply
                .pack()
                .map(|p| p.messages.iter())
                .into_iter()
                .flatten()
                .filter_map(|m| {
                    serde_json::to_value(m.role)
                        .ok()?
                        .as_str()
                        .map(str::to_owned)
                })
                .collect();
            if &roles != want {
                broken.push(format!("message roles {roles:?}, not {want:?}"));
            }
        }
        let chat = reply.pack().and_then(|p| p.chat.as_ref());
        if let Some(want) = &self.chat_sources {
            let got = chat.map(|c| c.sources.clone());
            if got.as_ref() != Some(want) {
                broken.push(format!("chat sources {got:?}, not {want:?}"));
            }
        }
        if let Some(want) = &self.chat_breakpoints {
            let got = chat.map(breakpoints);
            if got.as_ref() != Some(want) {
                broken.push(format!("chat breakpoints {got:?}, not {want:?}"));
            }
        }
        for id in &self.fenced {
            let text = reply
                .pack()
                .and_then(|p| p.entries.iter().find(|e| &e.id == id))
                .map(|e| e.text.as_str());
            if !text.is_some_and(fenced) {
                broken.push(format!("{id}: not in a fence of its own: {text:?}"));
            }
        }
    }

    /// The failure and the budget.
    fn broken_failure(&self, outcome: &Outcome, broken: &mut Vec<String>) {
        let reply = &outcome.reply;
        let snapshot = reply.snapshot();
        let failure = match reply {
            Reply::Failed(f) => Some(f),
            _ => None,
        };
        if let Some(want) = &self.error {
            let got = failure.map(|f| error_kind(&f.error));
            if got.as_deref() != Some(want.as_str()) {
                broken.push(format!("error: want {want}, got {got:?}"));
            }
        }
        if let Some(want) = self.failed_snapshot {
            let got = failure.map(|f| f.snapshot.is_some());
            if got != Some(want) {
                broken.push(format!("failed snapshot: want {want}, got {got:?}"));
            }
        }
        if let Some(want) = self.token_budget {
            let got = snapshot.map(|s| s.token_budget);
            if got != Some(want) {
                broken.push(format!("token budget: want {want}, got {got:?}"));
            }
        }
    }

    /// The fence's record and the pack's id.
    fn broken_fence(&self, outcome: &Outcome, broken: &mut Vec<String>) {
        let reply = &outcome.reply;
        let fence = reply.pack().map(|p| &p.snapshot.fence);
        for (name, want, got) in [
            ("defused", &self.defused, fence.map(|f| &f.defused)),
            ("stripped", &self.stripped, fence.map(|f| &f.stripped)),
        ] {
            if let Some(want) = want
                && got != Some(want)
            {
                broken.push(format!("{name}: want {want:?}, got {got:?}"));
            }
        }
        if let Some(want) = self.context_role {
            let got = fence.and_then(|f| f.context_role);
            if got != Some(want) {
                broken.push(format!("context role: want {want:?}, got {got:?}"));
            }
        }
        if let Some(want) = self.keyed {
            let got = fence.map(|f| f.keyed);
            if got != Some(want) {
                broken.push(format!("keyed: want {want}, got {got:?}"));
            }
        }
        if let Some(want) = &self.pack_id {
            let got = reply.pack().map(|p| p.id.as_str());
            if got != Some(want.as_str()) {
                broken.push(format!("pack id: want {want}, got {got:?}"));
            }
        }
    }

    /// The dispatch of a handled request.
    fn broken_dispatch(&self, outcome: &Outcome, broken: &mut Vec<String>) {
        let reply = &outcome.reply;
        if let Some(want) = &self.dispatch {
            let got = match reply {
                Reply::Handled(h) => Some(match h.dispatch {
                    ctxpack_core::Dispatch::Skill(_) => "skill",
                    ctxpack_core::Dispatch::Fallback(_) => "fallback",
                }),
                _ => None,
            };
            if got != Some(want.as_str()) {
                broken.push(format!("dispatch: want {want}, got {got:?}"));
            }
        }
    }
}

/// Whether `text` is one untrusted text in its fence (see
/// [`Expect::fenced`]).
fn fenced(text: &str) -> bool {
    let lower = text.to_lowercase();
    let markers: Vec<usize> = lower
        .match_indices('<')
        .filter(|(i, _)| {
            let rest = cut(&lower, i + 1..);
            rest.starts_with("untrusted") || rest.starts_with("/untrusted")
        })
        .map(|(i, _)| i)
        .collect();
    let nonce = |marker: &str| marker.split(['-', ' ', '>']).nth(1).map(str::to_owned);
    match (markers.as_slice(), text.rfind("</untrusted-")) {
        ([0, close], Some(at)) if *close == at && text.ends_with('>') => {
            nonce(cut(text, ..at)).is_some() && nonce(cut(text, ..at)) == nonce(cut(text, at + 1..))
        }
        _ => false,
    }
}

/// An error's case name, as the WIT spells it.
pub fn error_kind(error: &ctxpack_core::Error) -> String {
    match serde_json::to_value(error) {
        Ok(serde_json::Value::Object(map)) => map.keys().next().cloned().unwrap_or_default(),
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// A router config: inline, or a file beside the scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum RouterSpec {
    /// YAML text.
    Yaml(String),
    /// JSON text.
    Json(String),
    /// A `.yaml`, `.yml` or `.json` file, relative to the scenario file.
    File(PathBuf),
}

impl RouterSpec {
    /// The config text and its format; `base` is the scenario's folder.
    pub fn text(&self, base: &Path) -> Result<(String, ConfigFormat), String> {
        match self {
            RouterSpec::Yaml(t) => Ok((t.clone(), ConfigFormat::Yaml)),
            RouterSpec::Json(t) => Ok((t.clone(), ConfigFormat::Json)),
            RouterSpec::File(p) => read_router_file(&base.join(p)),
        }
    }
}

/// Reads a router config file, its format by extension.
pub fn read_router_file(path: &Path) -> Result<(String, ConfigFormat), String> {
    let format = match path.extension().and_then(|e| e.to_str()) {
        Some("yaml" | "yml") => ConfigFormat::Yaml,
        Some("json") => ConfigFormat::Json,
        _ => {
            return Err(format!(
                "{}: a router config must end in .yaml, .yml or .json",
                path.display()
            ));
        }
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((text, format))
}

/// What a scenario came to, and the host calls it took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Outcome {
    /// The answer.
    pub reply: Reply,
    /// Calls to each host capability, by name.
    pub host_calls: BTreeMap<String, u32>,
    /// Every call and its answer, in order, where the stores were
    /// recorded (not part of the expected files: `generated` writes it
    /// apart, for the other hosts to replay).
    #[serde(skip)]
    pub recorded: Vec<crate::Recorded>,
}

/// A pack, a handling, or the core's refusal: the shape the JSON steps
/// end with.
pub use ctxpack_core::json::Reply;

/// Parses a scenario; an error names the offending field's path and the
/// line and column.
pub fn parse(text: &str) -> Result<Scenario, String> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            inner.to_string()
        } else {
            format!("field `{path}`: {inner}")
        }
    })
}

/// Reads and parses a scenario file; a router file it names is read in
/// (and becomes inline text), so the scenario is self-contained afterwards.
pub fn load(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut scenario = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    if let Some(spec @ RouterSpec::File(_)) = &scenario.router {
        let base = path.parent().unwrap_or(Path::new("."));
        let (text, format) = spec.text(base)?;
        scenario.router = Some(match format {
            ConfigFormat::Yaml => RouterSpec::Yaml(text),
            ConfigFormat::Json => RouterSpec::Json(text),
        });
    }
    Ok(scenario)
}

/// The places in a chat request's list of the messages that carry a
/// provider's cache hint (a `cache_control` anywhere in them).
fn breakpoints(chat: &ctxpack_core::ChatRequest) -> Vec<usize> {
    let body: serde_json::Value = serde_json::from_str(&chat.body).unwrap_or_default();
    let list = ["messages", "input", "contents"]
        .iter()
        .find_map(|name| body.get(name).and_then(|v| v.as_array()))
        .cloned()
        .unwrap_or_default();
    list.iter()
        .enumerate()
        .filter(|(_, m)| m.to_string().contains("\"cache_control\""))
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"{
        "description": "d",
        "request": {
            "context": {"trace-id": "t"},
            "query": "q", "tokenizer": "o200k-base", "budget": 10,
            "entry-overhead": 0, "system-prompt": "s", "keep-last": 2,
            "conversation": [{"role": "user", "content": "hi"}]
        }
    }"#;

    #[test]
    fn a_valid_scenario_parses() {
        let s = parse(BASE).unwrap();
        assert_eq!(s.request.budget, Some(10));
    }

    #[test]
    fn errors_name_the_field_path() {
        let bad = BASE.replace(r#""role": "user""#, r#""role": "robot""#);
        let e = parse(&bad).unwrap_err();
        assert!(e.contains("request.conversation[0].role"), "{e}");
        assert!(e.contains("robot"), "{e}");

        let bad = BASE.replace(r#""budget": 10"#, r#""budgett": 10"#);
        let e = parse(&bad).unwrap_err();
        assert!(e.contains("budgett"), "{e}");

        let bad = BASE.replace(r#""budget": 10"#, r#""budget": -1"#);
        let e = parse(&bad).unwrap_err();
        assert!(e.contains("request.budget"), "{e}");
    }
}

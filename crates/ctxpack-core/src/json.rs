//! The builder and the step protocol as JSON text.
//!
//! A host whose every value crossing is costly — a dynamic language over a
//! component runtime converts each record field by field — drives an
//! assembly with one string each way per step instead: [`builder`] reads a
//! configuration, [`JsonAssembly`] takes each answer and gives the next
//! step. The JSON is the WIT's types spelled in kebab-case, exactly as the
//! scenario files and the expected outcomes spell them.
//!
//! Every step but the last is a round of calls: each a [`Call`] as JSON,
//! keyed by the import it stands for, its arguments named as that
//! import's parameters (the context is the request's), e.g.
//! `{"retrieve": {"query": …, "limit": …}}` or
//! `{"review": {"items": [candidate, …]}}`; each is answered with what the
//! import would return. (The book's chapter on steps has every call.)
//!
//! The step is `{"calls": [call, …]}`, answered with one result per call,
//! in order: `[{"ok": …} or {"err": host-error}, …]`. The last step is
//! `{"done": {"pack": …}}`, `{"done": {"handled": …}}` or
//! `{"done": {"failed": {"error": …, "snapshot": …}}}`, given once.
//!
//! A verdict is `"allow"`, `{"redact": "text"}` or `{"deny": "reason"}`; a
//! host error is `{"capability": "sources.retrieve", "message": "…"}`.
//! An answer that does not parse is refused as [`Error::InvalidField`]
//! naming its path (`answer[0].ok[3].section`), and an answer to a step
//! not asked as [`Error::StepMismatch`]; either way nothing changes and
//! the host may answer again.

use crate::assembly::{Assembly, Next};
pub use crate::call::Call;
use crate::call::{Answer, Answers};
use crate::error::{Error, Failure};
use crate::handle::{self, Handling, Routed};
use crate::pack::ContextPack;

use crate::router::{Router, RoutingDecision};
use crate::snapshot::Snapshot;
use crate::types::AssembleRequest;
use crate::{Builder, BuilderConfig};
use serde::de::{DeserializeOwned, DeserializeSeed};
use serde::{Deserialize, Serialize};
use std::ops::Deref;

/// Parses `text` as a `T`; an error names the field under `root`.
pub fn parse<T: DeserializeOwned>(text: &str, root: &str) -> Result<T, Error> {
    let de = &mut serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            root.to_owned()
        } else if path.starts_with('[') {
            format!("{root}{path}")
        } else {
            format!("{root}.{path}")
        };
        let message = e.into_inner().to_string();
        let message = match unknown_tokenizer(&field, &message) {
            Some(hinted) => hinted,
            None => message,
        };
        Error::invalid(field, message)
    })
}

/// The refusal of a tokenizer no case has (`"llama3"`, `"gpt-4o"`),
/// with where a model's own is found: the WIT's words, then the way in.
fn unknown_tokenizer(field: &str, message: &str) -> Option<String> {
    let tokenizer = field.ends_with("tokenizer") || field.contains(".preload[");
    if !tokenizer || !message.starts_with("unknown variant") {
        return None;
    }
    let words = message.split(" at line ").next().unwrap_or(message);
    Some(format!(
        "{words}; a tokenizer file the builder was given is {{\"named\": NAME}}, and a model (\"gpt-4o\", \"qwen3-8b\") is named by the request's `model`"
    ))
}

/// [`parse`] for the text of every call — requests and the host's answers,
/// megabytes of candidates —: read once without tracking where it is, and
/// only text that does not parse read again to name the field. (Not for
/// all: each type read both ways is code the component carries twice.)
fn parse_fast<T: DeserializeOwned>(text: &str, root: &str) -> Result<T, Error> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(_) => parse(text, root),
    }
}

/// A builder from its configuration as JSON (the WIT's `builder-config`;
/// `{}` is every default). An error names the field (`config.plan.…`).
pub fn builder(config: &str) -> Result<Builder, Error> {
    Builder::new(parse::<BuilderConfig>(config, "config")?)
}

/// Counts a [`crate::CountRequest`] given as JSON: its
/// [`crate::TokenCounts`] as JSON. An error names the field (`count.…`).
pub fn count(builder: &Builder, request: &str) -> Result<String, Error> {
    let request = parse_fast::<crate::CountRequest>(request, "count")?;
    to_json(&builder.count(&request)?)
}

/// Counts `texts`, given apart, with what a [`crate::CountRequest`]
/// given as JSON names (see [`Builder::count_texts`]).
pub fn count_texts(builder: &Builder, request: &str, texts: &[String]) -> Result<Vec<u32>, Error> {
    let request = parse_fast::<crate::CountRequest>(request, "count")?;
    builder.count_texts(&request, texts)
}

/// How an assembly or a handling ends: the `done` step's payload, and a
/// scenario's `reply`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reply {
    /// The pack (an assembly).
    Pack(Box<ContextPack>),
    /// The routing decision and its dispatch (a handling).
    Handled(Box<Handling>),
    /// Why there is neither, with the failed snapshot if it had begun.
    Failed(Failure),
    /// What a trim kept.
    Trimmed(Box<crate::Trimmed>),
}

impl Reply {
    /// A refusal without a snapshot (an invalid configuration).
    pub fn refused(error: Error) -> Self {
        Reply::Failed(error.into())
    }

    /// The pack it carries, as an assembly or a fallback dispatch gave it.
    pub fn pack(&self) -> Option<&ContextPack> {
        match self {
            Reply::Pack(p) => Some(p),
            Reply::Handled(h) => match &h.dispatch {
                crate::Dispatch::Fallback(f) => Some(&f.pack),
                crate::Dispatch::Skill(_) => None,
            },
            Reply::Failed(_) | Reply::Trimmed(_) => None,
        }
    }

    /// The snapshot it carries: a pack's, or a failed one.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        match self {
            Reply::Failed(f) => f.snapshot.as_deref(),
            other => other.pack().map(|p| &p.snapshot),
        }
    }
}

impl From<Result<ContextPack, Failure>> for Reply {
    fn from(r: Result<ContextPack, Failure>) -> Self {
        match r {
            Ok(p) => Reply::Pack(Box::new(p)),
            Err(f) => Reply::Failed(f),
        }
    }
}

impl From<Result<Handling, Failure>> for Reply {
    fn from(r: Result<Handling, Failure>) -> Self {
        match r {
            Ok(h) => Reply::Handled(Box::new(h)),
            Err(f) => Reply::Failed(f),
        }
    }
}

/// One step, as [`JsonAssembly::step_with`] hands it to be written (see
/// the module docs for its JSON).
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step<'a> {
    /// A round of calls, answered in order.
    Calls(&'a [Call<'static>]),
    /// The outcome, given once.
    Done(&'a Reply),
}

/// An assembly (or a handling) driven with JSON text, one string each way
/// per step.
pub struct JsonAssembly {
    state: State,
}

enum State {
    /// Under way; a handling keeps its routing decision and request for
    /// the dispatch.
    Running {
        assembly: Runner,
        handling: Option<Box<(RoutingDecision, AssembleRequest)>>,
    },
    /// Over before it began, or just over: the outcome, until given.
    Over(Option<Reply>),
}

/// What runs step by step: an assembly, or a trim.
enum Runner {
    Pack(Box<Assembly<'static>>),
    Trim(Box<Assembly<'static, crate::Trimmed>>),
}

/// A runner's step (its outcome given once, as an assembly's is).
#[allow(clippy::large_enum_variant)]
enum Stepped<'a> {
    Calls(&'a [Call<'static>]),
    Done(Result<Outcome, Failure>),
}

/// A runner's outcome.
#[allow(clippy::large_enum_variant)]
enum Outcome {
    Pack(ContextPack),
    Trimmed(crate::Trimmed),
}

impl Runner {
    fn next(&mut self) -> Stepped<'_> {
        match self {
            Runner::Pack(a) => match a.next() {
                Next::Calls(calls) => Stepped::Calls(calls),
                Next::Done(outcome) => Stepped::Done(outcome.map(Outcome::Pack)),
            },
            Runner::Trim(a) => match a.next() {
                Next::Calls(calls) => Stepped::Calls(calls),
                Next::Done(outcome) => Stepped::Done(outcome.map(Outcome::Trimmed)),
            },
        }
    }

    fn provide(&mut self, call: usize, answer: Answer) -> Result<(), Error> {
        match self {
            Runner::Pack(a) => a.provide(call, answer),
            Runner::Trim(a) => a.provide(call, answer),
        }
    }
}

impl JsonAssembly {
    /// An assembly for `request` (the WIT's `assemble-request` as JSON). A
    /// request that does not parse ends at the first step, refused with
    /// the field's path (`request.…`).
    pub fn start<B>(builder: B, request: &str) -> Self
    where
        B: Deref<Target = Builder> + 'static,
    {
        let state = match parse_fast::<AssembleRequest>(request, "request") {
            Ok(request) => State::Running {
                assembly: Runner::Pack(Box::new(Builder::start_owned(builder, request))),
                handling: None,
            },
            Err(e) => State::Over(Some(Reply::Failed(e.into()))),
        };
        JsonAssembly { state }
    }

    /// A trim of `request` (the WIT's `trim-request` as JSON): its steps
    /// ask only `count-messages` and `split-text`; the last is
    /// `{"done": {"trimmed": …}}`. A request that does not parse ends at
    /// the first step, refused with the field's path (`trim.…`).
    pub fn trim<B>(builder: B, request: &str) -> Self
    where
        B: Deref<Target = Builder> + 'static,
    {
        let state = match parse_fast::<crate::TrimRequest>(request, "trim") {
            Ok(request) => State::Running {
                assembly: Runner::Trim(Box::new(Builder::trim_start_owned(builder, request))),
                handling: None,
            },
            Err(e) => State::Over(Some(Reply::Failed(e.into()))),
        };
        JsonAssembly { state }
    }

    /// A handling of `request`: routed at once; a confident route without
    /// a reference cue is done at the first step without asking anything,
    /// anything else is assembled and dispatched to the fallback, as
    /// [`crate::handle()`] does.
    pub fn handle<B>(router: &Router, builder: B, request: &str) -> Self
    where
        B: Deref<Target = Builder> + 'static,
    {
        let request = match parse_fast::<AssembleRequest>(request, "request") {
            Ok(request) => request,
            Err(e) => return Self::over(Reply::Failed(e.into())),
        };
        match handle::route(router, &request) {
            Routed::Skill(handling) => Self::over(Reply::Handled(Box::new(handling))),
            Routed::Builder(decision) => JsonAssembly {
                state: State::Running {
                    assembly: Runner::Pack(Box::new(Builder::start_owned(
                        builder,
                        request.clone(),
                    ))),
                    handling: Some(Box::new((decision, request))),
                },
            },
        }
    }

    fn over(outcome: Reply) -> Self {
        JsonAssembly {
            state: State::Over(Some(outcome)),
        }
    }

    /// Answers the step asked last with `answer` (JSON, see the module
    /// docs), then gives the next step; with no answer, gives the step
    /// asked (again). A refused answer changes nothing.
    pub fn step(&mut self, answer: Option<&str>) -> Result<String, Error> {
        self.step_with(answer, |step| to_json(step))
    }

    /// [`step`](Self::step), the next step written by `write` instead of
    /// as the module's JSON: a host that spells the names its own way
    /// serialises the [`Step`] itself.
    pub fn step_with<R>(
        &mut self,
        answer: Option<&str>,
        write: impl FnOnce(&Step<'_>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        if let Some(answer) = answer {
            self.provide(answer)?;
        }
        match &mut self.state {
            State::Over(outcome) => match outcome.take() {
                Some(outcome) => write(&Step::Done(&outcome)),
                None => Err(Error::StepMismatch(
                    "the assembly is over and its outcome was given".into(),
                )),
            },
            State::Running { assembly, handling } => match assembly.next() {
                Stepped::Done(outcome) => {
                    let reply = finish(outcome, handling.take());
                    self.state = State::Over(None);
                    write(&Step::Done(&reply))
                }
                Stepped::Calls(calls) => write(&Step::Calls(calls)),
            },
        }
    }

    fn provide(&mut self, answer: &str) -> Result<(), Error> {
        let State::Running { assembly, handling } = &mut self.state else {
            return Err(Error::StepMismatch(
                "answered, but the assembly is over".into(),
            ));
        };
        match assembly.next() {
            Stepped::Calls(calls) => {
                let (answers, held) = read_answers(answer, calls)?;
                if held != calls.len() {
                    return Err(Error::StepMismatch(format!(
                        "answered {held} calls, but the step has {}",
                        calls.len()
                    )));
                }
                answers
                    .into_iter()
                    .enumerate()
                    .try_for_each(|(call, a)| assembly.provide(call, a))
            }
            Stepped::Done(outcome) => {
                // Answered instead of taking the outcome: keep it for the
                // step that follows the refusal.
                let reply = finish(outcome, handling.take());
                self.state = State::Over(Some(reply));
                Err(Error::StepMismatch(
                    "answered, but the assembly is over: take its outcome".into(),
                ))
            }
        }
    }
}

/// A step's answers to `calls` (see [`parse_fast`]), and how many the
/// list held; an error names the field under `answer`.
fn read_answers(text: &str, calls: &[Call<'static>]) -> Result<(Vec<Answer>, usize), Error> {
    let de = &mut serde_json::Deserializer::from_str(text);
    if let Ok(read) = Answers(calls)
        .deserialize(&mut *de)
        .and_then(|r| de.end().map(|()| r))
    {
        return Ok(read);
    }
    tracked(text, Answers(calls))
}

/// The answer to one call, read from JSON as a step's answer list holds
/// it (`{"ok": …}` or `{"err": …}`): for a host that answers each call
/// on its own, as a remote store does. An error names the field under
/// `answer`.
pub fn read_answer(call: &Call<'static>, text: &str) -> Result<Answer, Error> {
    tracked(text, crate::call::Read(call))
}

/// `text` read whole by `seed`, an error naming the field under `answer`
/// (`answer[1].ok[0].section`, `answer.ok[0].section`).
fn tracked<'de, S: DeserializeSeed<'de>>(text: &'de str, seed: S) -> Result<S::Value, Error> {
    let mut track = serde_path_to_error::Track::new();
    let de = &mut serde_json::Deserializer::from_str(text);
    let read = seed
        .deserialize(serde_path_to_error::Deserializer::new(&mut *de, &mut track))
        .and_then(|r| de.end().map(|()| r));
    read.map_err(|e| {
        let path = track.path().to_string();
        let field = match path.as_str() {
            "." => "answer".to_owned(),
            p if p.starts_with('[') => format!("answer{p}"),
            p => format!("answer.{p}"),
        };
        Error::invalid(field, e.to_string())
    })
}

/// An assembly's outcome as its reply: a pack, or — for a handling — the
/// fallback dispatch of the pack.
fn finish(
    outcome: Result<Outcome, Failure>,
    handling: Option<Box<(RoutingDecision, AssembleRequest)>>,
) -> Reply {
    match (outcome, handling) {
        (Err(failure), _) => Reply::Failed(failure),
        (Ok(Outcome::Trimmed(t)), _) => Reply::Trimmed(Box::new(t)),
        (Ok(Outcome::Pack(pack)), None) => Reply::Pack(Box::new(pack)),
        (Ok(Outcome::Pack(pack)), Some(h)) => {
            let (decision, request) = *h;
            Reply::Handled(Box::new(handle::fallback(decision, &request, pack)))
        }
    }
}

/// A value as JSON. Serialising the core's types does not fail (their map
/// keys are strings; a non-finite number becomes `null`); were it to, the
/// caller gets the error instead of a panic.
fn to_json<T: Serialize>(value: &T) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error::invalid("output", e.to_string()))
}

/// The routing decision for `query`, as JSON (the WIT's
/// `routing-decision`).
pub fn route(router: &Router, query: &str) -> Result<String, Error> {
    to_json(&router.route(query))
}

/// What changed between two snapshots given as JSON, as JSON (the WIT's
/// `snapshot-diff`). A snapshot that does not parse is refused naming
/// the field (`before.entries[2].reason`).
pub fn diff(before: &str, after: &str) -> Result<String, Error> {
    let before: Snapshot = parse(before, "before")?;
    let after: Snapshot = parse(after, "after")?;
    to_json(&crate::diff(&before, &after))
}

#[cfg(test)]
mod tests {
    // Test code: a failed unwrap is a failed test.
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::rc::Rc;

    const REQUEST: &str = r#"{"context": {"trace-id": "t"}, "query": "q",
        "tokenizer": "o200k-base", "entry-overhead": 0,
        "system-prompt": "Be brief.", "keep-last": 4}"#;

    const KB: &str = r#"{"id": "kb-1", "section": "relevant-knowledge",
        "text": "Invoices are reconciled monthly.", "trust": "trusted",
        "provenance": {"source-kind": "kb", "reference": "kb-1"}}"#;

    const RAG: &str = r#"{"profile": {"rag": {"retrieve-limit": 10}}}"#;

    fn start() -> JsonAssembly {
        JsonAssembly::start(Rc::new(builder(RAG).unwrap()), REQUEST)
    }

    #[test]
    fn a_tokenizer_no_case_has_is_refused_with_the_way_in() {
        for (text, field) in [
            (r#"{"tokenizer": "llama3"}"#, "request.tokenizer"),
            (
                r#"{"models": [{"tokenizer": "gpt-4o"}]}"#,
                "config.models[0].tokenizer",
            ),
            (r#"{"preload": ["qwen"]}"#, "config.preload[0]"),
        ] {
            let root = field.split('.').next().unwrap();
            let error = if root == "request" {
                parse::<AssembleRequest>(text, root).unwrap_err()
            } else {
                parse::<BuilderConfig>(text, root).unwrap_err()
            };
            let Error::InvalidField {
                field: named,
                message,
            } = error
            else {
                panic!("{text}")
            };
            assert_eq!(named, field);
            assert!(message.starts_with("unknown variant `"), "{message}");
            assert!(
                message.ends_with("is named by the request's `model`"),
                "{message}"
            );
            assert!(!message.contains(" at line "), "{message}");
        }
        // Another field's unknown variant keeps serde's words alone.
        let error = parse::<AssembleRequest>(r#"{"conversation-start": "x"}"#, "request");
        assert!(!error.unwrap_err().to_string().contains("model"));
    }

    fn field(e: Error) -> String {
        match e {
            Error::InvalidField { field, .. } => field,
            other => panic!("not an invalid field: {other:?}"),
        }
    }

    #[test]
    fn an_assembly_goes_step_by_step_to_its_pack() {
        let mut a = start();
        let step = a.step(None).unwrap();
        assert!(
            step.starts_with(r#"{"calls":[{"retrieve":{"query":"q","limit":"#),
            "{step}"
        );
        // Asked again before answering: the same step.
        assert_eq!(a.step(None).unwrap(), step);
        let calls: serde_json::Value = serde_json::from_str(&step).unwrap();
        let n = calls["calls"].as_array().unwrap().len();
        let mut answers = vec![format!(r#"{{"ok": [{KB}]}}"#)];
        answers.extend((1..n).map(|_| r#"{"err": {"capability": "x", "message": "down"}}"#.into()));
        let step = a.step(Some(&format!("[{}]", answers.join(",")))).unwrap();
        assert!(
            step.starts_with(r#"{"calls":[{"review":{"items":[{"id":"kb-1""#),
            "{step}"
        );
        // A step's calls read back as the core wrote them.
        let read: std::collections::HashMap<String, Vec<Call<'static>>> =
            serde_json::from_str(&step).unwrap();
        assert!(matches!(&read["calls"][..], [Call::Review { items }] if items[0].id == "kb-1"));
        assert_eq!(read["calls"][0].capability(), "policy.review");
        let done = a.step(Some(r#"[{"ok": ["allow"]}]"#)).unwrap();
        let outcome: serde_json::Value = serde_json::from_str(&done).unwrap();
        let entries = outcome["done"]["pack"]["entries"].as_array().unwrap();
        assert!(entries.iter().any(|e| e["id"] == "kb-1"));
        // Given once.
        assert!(matches!(a.step(None), Err(Error::StepMismatch(_))));
    }

    #[test]
    fn a_wrong_answer_is_refused_naming_its_field_and_changes_nothing() {
        let mut a = start();
        let step = a.step(None).unwrap();
        let bad =
            r#"[{"ok": [{"id": "a", "section": "nowhere", "text": "t", "trust": "trusted"}]}]"#;
        let e = a.step(Some(bad)).unwrap_err();
        assert_eq!(field(e), "answer[0].ok[0].section");
        // Too few answers for the round, or an answer to another step.
        assert!(matches!(a.step(Some("[]")), Err(Error::StepMismatch(_))));
        let e = a.step(Some(r#"{"ok": ["allow"]}"#)).unwrap_err();
        assert_eq!(field(e), "answer");
        let e = a.step(Some(
            r#"[{"ok": []}, {"ok": []}, {"ok": []}, {"ok": []}, {"ok": []}]"#,
        ));
        assert!(matches!(e, Err(Error::StepMismatch(_))), "{e:?}");
        assert_eq!(a.step(None).unwrap(), step);
    }

    #[test]
    fn a_request_or_a_config_that_does_not_parse_names_the_field() {
        let request = REQUEST.replace(r#""keep-last": 4"#, r#""keep-last": "four""#);
        let mut a = JsonAssembly::start(Rc::new(builder("{}").unwrap()), &request);
        let done: serde_json::Value = serde_json::from_str(&a.step(None).unwrap()).unwrap();
        let error = &done["done"]["failed"]["error"]["invalid-field"];
        assert_eq!(error["field"], "request.keep-last");
        assert!(
            builder(r#"{"plan": {"default-budget": -1}}"#)
                .is_err_and(|e| field(e) == "config.plan.default-budget")
        );
    }

    #[test]
    fn a_handling_routed_to_a_skill_asks_nothing() {
        let router = Router::from_text(
            include_str!("../../../host-example/routes/assistant.yaml"),
            crate::ConfigFormat::Yaml,
        )
        .unwrap();
        let request = REQUEST.replace(
            r#""query": "q""#,
            r#""query": "Will it rain in Porto tomorrow?""#,
        );
        let mut a = JsonAssembly::handle(&router, Rc::new(builder(RAG).unwrap()), &request);
        let done: serde_json::Value = serde_json::from_str(&a.step(None).unwrap()).unwrap();
        assert!(
            done["done"]["handled"]["dispatch"]["skill"].is_object(),
            "{done}"
        );
        assert!(matches!(a.step(None), Err(Error::StepMismatch(_))));
    }

    #[test]
    fn an_answer_where_the_outcome_is_due_is_refused_and_the_outcome_kept() {
        // The default profile asks nothing: the first step is the outcome.
        let mut a = JsonAssembly::start(Rc::new(builder("{}").unwrap()), REQUEST);
        assert!(matches!(a.step(Some("[]")), Err(Error::StepMismatch(_))));
        let done: serde_json::Value = serde_json::from_str(&a.step(None).unwrap()).unwrap();
        assert_eq!(done["done"]["pack"]["trace-id"], "t");
        assert!(matches!(a.step(None), Err(Error::StepMismatch(_))));
    }

    #[test]
    fn a_snapshot_diff_from_json() {
        let e = diff("{}", "{}").unwrap_err();
        assert_eq!(field(e), "before");
    }
}

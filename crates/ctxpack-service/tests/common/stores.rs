//! The test stores the upstream tests call: a store whose behaviour the
//! test sets (answer, fail, hang), served over gRPC (`stores.proto`) or
//! HTTP with JSON, and the service started on them with no fixture.

use super::{get, post};
use ctxpack_core::{AgentContext, Answer, Call, Candidate, HostError, Verdict};
use ctxpack_service::client::Client;
use ctxpack_service::upstream_server::{Answering, Grpc, http};
use ctxpack_service::{Options, Rig, Running};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the test store behaves, per capability.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mode {
    Answer,
    Fail,
    Hang,
    /// An answer over the service's cap on an upstream's answer.
    Huge,
    /// Hangs for this tenant's calls, answers the others'.
    HangFor(&'static str),
}

/// A store whose behaviour the test sets, counting calls and keeping the
/// `authorization` each came with.
#[derive(Default)]
pub struct Behaviour {
    pub modes: Mutex<std::collections::BTreeMap<&'static str, Mode>>,
    pub calls: Mutex<Vec<(&'static str, Option<String>)>>,
}

impl Behaviour {
    pub fn set(&self, capability: &'static str, mode: Mode) {
        self.modes.lock().unwrap().insert(capability, mode);
    }
    pub fn mode(&self, capability: &str) -> Mode {
        *self
            .modes
            .lock()
            .unwrap()
            .get(capability)
            .unwrap_or(&Mode::Answer)
    }
    pub fn calls(&self, capability: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.0 == capability)
            .count()
    }
}

pub fn candidate(id: &str, text: &str) -> Candidate {
    serde_json::from_value(json!({
        "id": id, "section": "relevant-knowledge", "text": text, "trust": "trusted",
        "provenance": {"source-kind": "chunk", "reference": format!("store/{id}"), "source-version": "v7"},
        "score": 0.9
    }))
    .unwrap()
}

pub fn answering(b: Arc<Behaviour>) -> Answering {
    Arc::new(
        move |call: Call<'static>, context: AgentContext, auth: Option<String>| {
            let b = b.clone();
            Box::pin(async move {
                let capability = call.capability();
                b.calls.lock().unwrap().push((capability, auth));
                match b.mode(capability) {
                    Mode::Fail => {
                        return call.failed(HostError::new(capability, "the index is rebuilding"));
                    }
                    Mode::Hang => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                    }
                    Mode::HangFor(tenant) if context.tenant_id.as_deref() == Some(tenant) => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                    }
                    Mode::HangFor(_) => {}
                    Mode::Huge => {
                        let text = "x".repeat(MOST_ANSWER + 1);
                        return Answer::Candidates(Ok(vec![candidate("huge", &text)]));
                    }
                    Mode::Answer => {}
                }
                match &call {
                    Call::Retrieve { .. } => Answer::Candidates(Ok(vec![
                        candidate(
                            "up-1",
                            &"Trailing commas are refused by the strict JSON grammar. ".repeat(12),
                        ),
                        candidate(
                            "up-2",
                            &"The parser's array rule lists values separated by commas. "
                                .repeat(12),
                        ),
                        candidate(
                            "up-3",
                            &"A comma before a closing bracket ends no value, so it is an error. "
                                .repeat(12),
                        ),
                    ])),
                    Call::Review { items } => Answer::Verdicts(Ok(items
                        .iter()
                        .map(|c| {
                            if c.id == "up-2" {
                                Verdict::Deny("internal".into())
                            } else {
                                Verdict::Allow
                            }
                        })
                        .collect())),
                    Call::Summarize { requests, .. } => Answer::Summaries(Ok(requests
                        .iter()
                        .map(|_| "In short: commas.".to_owned())
                        .collect())),
                    other => other.failed(HostError::not_provided(other.capability())),
                }
            })
        },
    )
}

/// A running test store; dropping `stop` shuts it down, closing its
/// connections.
pub struct TestStore {
    pub addr: SocketAddr,
    pub stop: tokio::sync::oneshot::Sender<()>,
    pub task: tokio::task::JoinHandle<()>,
}

impl TestStore {
    pub async fn down(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
    }
}

/// A store answering with `b` over gRPC or HTTP, on `addr` (port 0: any).
pub async fn store(grpc: bool, b: Arc<Behaviour>, addr: SocketAddr) -> TestStore {
    serve_store(grpc, answering(b), addr).await
}

/// A store answering with `answering` over gRPC or HTTP (where `/wrong`
/// answers a wrong shape), on `addr` (port 0: any).
pub async fn serve_store(grpc: bool, answering: Answering, addr: SocketAddr) -> TestStore {
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let stopped = async move {
        let _ = stopped.await;
    };
    let task = if grpc {
        let (sources, policy, summarizer) = Grpc(answering).services();
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(sources)
                .add_service(policy)
                .add_service(summarizer)
                .serve_with_incoming_shutdown(
                    tonic::transport::server::TcpIncoming::from(listener),
                    stopped,
                )
                .await;
        })
    } else {
        let app = http_wrong_shaped().merge(http(answering));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stopped)
                .await;
        })
    };
    TestStore { addr, stop, task }
}

/// Over HTTP, a wrong shape is a candidate without its section.
pub fn http_wrong_shaped() -> axum::Router {
    let many = |n: usize, text: &'static str| {
        let candidates: Vec<Value> = (0..n)
            .map(|i| serde_json::to_value(candidate(&format!("m-{i}"), text)).unwrap())
            .collect();
        json!({ "ok": candidates }).to_string()
    };
    let (too_many, nul) = (many(1001, "many"), many(1, "before\u{0}after"));
    axum::Router::new()
        .route(
            "/wrong",
            axum::routing::post(|| async {
                r#"{"ok": [{"id": "w-1", "text": "x", "trust": "trusted"}]}"#
            }),
        )
        .route(
            "/many",
            axum::routing::post(move || async move { too_many }),
        )
        .route("/nul", axum::routing::post(move || async move { nul }))
}

pub fn config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("ctxpack.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The most bytes a retrieval answer may have in [`upstreams_toml`]:
/// [`Mode::Huge`] answers more.
pub const MOST_ANSWER: usize = 100_000;

pub fn upstreams_toml(grpc: bool, addr: SocketAddr) -> String {
    let (key, url) = if grpc {
        ("grpc", format!("http://{addr}"))
    } else {
        ("http", format!("http://{addr}/stores"))
    };
    format!(
        r#"
[context]
compression-profile = "code-fast"
[context.section-budgets]
relevant-knowledge = 0.1
[builder]
profile = {{ rag = {{ retrieve-limit = 4 }} }}
[upstreams.retrieve]
{key} = "{url}"
timeout-ms = 300
retries = 1
backoff-ms = 10
max-answer-bytes = {MOST_ANSWER}
token-file = "token"
[upstreams.review]
{key} = "{url}"
timeout-ms = 300
retries = 0
token-env = "CTXPACK_TEST_STORE_TOKEN"
[upstreams.summarize]
{key} = "{url}"
timeout-ms = 300
"#
    )
}

/// The service's options for these tests: the settings file `config`
/// (the defaults when none), no fixture: the upstreams answer.
pub fn options(dir: &Path, config: Option<PathBuf>) -> Options {
    Options {
        config,
        ..super::options(dir.join("store.db").display().to_string())
    }
}

/// The service with no fixture behind it, and a client.
pub async fn serve(o: Options) -> (Running, Client) {
    super::serve_on(o, Rig::default()).await
}

pub fn request(budget: u32) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "query": "Why does the parser reject trailing commas?",
        "tokenizer": "o200k-base",
        "budget": budget,
    }))
    .unwrap()
}

/// Assembles attempt `n` and gives the reply and the snapshot's detail.
pub async fn assemble(c: &Client, n: u32, budget: u32) -> (u16, Value, Value) {
    let a = post(
        c,
        &format!("/factory/runs/r/attempts/a-{n}/context"),
        "acme",
        request(budget),
    )
    .await;
    let reply = a.json();
    let id = reply["contextSnapshotId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let detail = get(c, &format!("/factory/context-snapshots/{id}"), "acme")
        .await
        .json();
    (a.status, reply, detail)
}

pub fn call_outcome(detail: &Value, capability: &str) -> Value {
    detail["sourceCalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["capability"] == capability)
        .map(|c| c["outcome"].clone())
        .unwrap_or(Value::Null)
}

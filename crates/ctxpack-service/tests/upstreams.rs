//! The service calling the user's stores, on loopback: upstreams over gRPC
//! (`stores.proto`) and over HTTP with JSON answer, fail, hang past their
//! timeout, go down and come back, each with the seed's outcome — a
//! source or the summariser degrades the assembly, the policy fails it —
//! and an answer of the wrong shape is refused naming its field. Then the
//! embedded index (`ctxpack ingest` + `serve`), and a reload on SIGHUP
//! under load.

// Helpers outside #[test] functions unwrap too: a failure is the test's.
#![allow(clippy::unwrap_used)]

use ctxpack_core::{AgentContext, Answer, Call, Candidate, HostError, Verdict};
use ctxpack_service::client::Client;
use ctxpack_service::upstream_server::{Answering, Grpc, http};
use ctxpack_service::{Options, Rig, Running, start};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod common;

fn tempdir() -> PathBuf {
    common::tempdir("upstreams")
}

/// How the test store behaves, per capability.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Answer,
    Fail,
    Hang,
}

/// A store whose behaviour the test sets, counting calls and keeping the
/// `authorization` each came with.
#[derive(Default)]
struct Behaviour {
    modes: Mutex<std::collections::BTreeMap<&'static str, Mode>>,
    calls: Mutex<Vec<(&'static str, Option<String>)>>,
}

impl Behaviour {
    fn set(&self, capability: &'static str, mode: Mode) {
        self.modes.lock().unwrap().insert(capability, mode);
    }
    fn mode(&self, capability: &str) -> Mode {
        *self
            .modes
            .lock()
            .unwrap()
            .get(capability)
            .unwrap_or(&Mode::Answer)
    }
    fn calls(&self, capability: &str) -> usize {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.0 == capability)
            .count()
    }
}

fn candidate(id: &str, text: &str) -> Candidate {
    serde_json::from_value(json!({
        "id": id, "section": "relevant-knowledge", "text": text, "trust": "trusted",
        "provenance": {"source-kind": "chunk", "reference": format!("store/{id}"), "source-version": "v7"},
        "score": 0.9
    }))
    .unwrap()
}

fn answering(b: Arc<Behaviour>) -> Answering {
    Arc::new(
        move |call: Call<'static>, _context: AgentContext, auth: Option<String>| {
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
struct TestStore {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl TestStore {
    async fn down(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(5), self.task).await;
    }
}

/// A store answering with `b` over gRPC or HTTP, on `addr` (port 0: any).
async fn store(grpc: bool, b: Arc<Behaviour>, addr: SocketAddr) -> TestStore {
    serve_store(grpc, answering(b), addr).await
}

/// A store answering with `answering` over gRPC or HTTP (where `/wrong`
/// answers a wrong shape), on `addr` (port 0: any).
async fn serve_store(grpc: bool, answering: Answering, addr: SocketAddr) -> TestStore {
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
fn http_wrong_shaped() -> axum::Router {
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

fn config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("ctxpack.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn upstreams_toml(grpc: bool, addr: SocketAddr) -> String {
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
fn options(dir: &Path, config: Option<PathBuf>) -> Options {
    Options {
        config,
        ..common::options(dir.join("store.db").display().to_string())
    }
}

/// The service with no fixture behind it, and a client.
async fn serve(o: Options) -> (Running, Client) {
    common::serve_on(o, Rig::default()).await
}

fn request(budget: u32) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "query": "Why does the parser reject trailing commas?",
        "tokenizer": "o200k-base",
        "budget": budget,
    }))
    .unwrap()
}

/// Assembles attempt `n` and gives the reply and the snapshot's detail.
async fn assemble(c: &Client, n: u32, budget: u32) -> (u16, Value, Value) {
    let a = c
        .send(
            "POST",
            &format!("/factory/runs/r/attempts/a-{n}/context"),
            Some("acme"),
            request(budget),
        )
        .await
        .unwrap();
    let reply = a.json();
    let id = reply["contextSnapshotId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let detail = c
        .send(
            "GET",
            &format!("/factory/context-snapshots/{id}"),
            Some("acme"),
            Vec::new(),
        )
        .await
        .unwrap()
        .json();
    (a.status, reply, detail)
}

fn call_outcome(detail: &Value, capability: &str) -> Value {
    detail["sourceCalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["capability"] == capability)
        .map(|c| c["outcome"].clone())
        .unwrap_or(Value::Null)
}

async fn the_seeds_outcomes_over(grpc: bool) {
    let dir = tempdir();
    std::fs::write(dir.join("token"), "s3cret-retrieve\n").unwrap();
    // SAFETY: set once, before any thread of this test reads it; every
    // test in this file that reads it sets the same value.
    unsafe { std::env::set_var("CTXPACK_TEST_STORE_TOKEN", "s3cret-review") };
    let b = Arc::new(Behaviour::default());
    let up = store(grpc, b.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let addr = up.addr;
    let path = config(&dir, &upstreams_toml(grpc, addr));
    let (running, c) = serve(options(&dir, Some(path))).await;
    let what = if grpc { "gRPC" } else { "HTTP" };

    // Answered: the store's candidates, reviewed by its policy.
    let (status, reply, detail) = assemble(&c, 1, 20000).await;
    assert_eq!(status, 201, "{what}: {reply}");
    assert_eq!(reply["status"], json!(["complete"]), "{what}: {detail}");
    let items = detail["items"].as_array().unwrap();
    let up1 = items
        .iter()
        .find(|i| i.to_string().contains("store/up-1"))
        .unwrap();
    assert_eq!(up1["included"], true, "{what}: {up1}");
    let up2 = items
        .iter()
        .find(|i| i.to_string().contains("store/up-2"))
        .unwrap();
    assert_eq!(
        up2["included"], false,
        "{what}: the policy denied it: {up2}"
    );
    assert_eq!(
        call_outcome(&detail, "sources.retrieve"),
        json!({"answered": 3})
    );
    {
        let calls = b.calls.lock().unwrap();
        let auth = |cap: &str| calls.iter().find(|c| c.0 == cap).and_then(|c| c.1.clone());
        assert_eq!(
            auth("sources.retrieve").as_deref(),
            Some("Bearer s3cret-retrieve"),
            "{what}"
        );
        assert_eq!(
            auth("policy.review").as_deref(),
            Some("Bearer s3cret-review"),
            "{what}"
        );
    }

    // Over its share, the section is summarised by the store.
    let (status, _, detail) = assemble(&c, 2, 200).await;
    assert_eq!(status, 201);
    assert_eq!(
        call_outcome(&detail, "summarizer.summarize"),
        json!({"answered": 1}),
        "{what}: {detail}"
    );
    assert!(
        detail["compressions"].to_string().contains("summarized"),
        "{what}: {}",
        detail["compressions"]
    );

    // The summariser fails: the section is cut, the assembly goes on.
    b.set("summarizer.summarize", Mode::Fail);
    let (status, _, detail) = assemble(&c, 3, 200).await;
    assert_eq!(status, 201);
    assert!(
        call_outcome(&detail, "summarizer.summarize")
            .to_string()
            .contains("the index is rebuilding"),
        "{what}: {detail}"
    );
    b.set("summarizer.summarize", Mode::Answer);

    // Retrieval fails: degraded, the store's reason recorded, not retried
    // (the store answered).
    b.set("sources.retrieve", Mode::Fail);
    let before = b.calls("sources.retrieve");
    let (status, reply, detail) = assemble(&c, 4, 20000).await;
    assert_eq!(status, 201, "{what}: {reply}");
    assert_eq!(reply["status"], json!(["degraded"]), "{what}: {reply}");
    let failed = call_outcome(&detail, "sources.retrieve").to_string();
    assert!(
        failed.contains("the index is rebuilding"),
        "{what}: {failed}"
    );
    // Over HTTP the store's `{"err": …}` is its word: not retried. Over
    // gRPC it is an UNAVAILABLE status, which is retried once.
    let attempts = if grpc { 2 } else { 1 };
    assert_eq!(b.calls("sources.retrieve") - before, attempts, "{what}");

    // Retrieval hangs: each attempt is cut at 300 ms, retried once, then
    // degraded — well before the service's deadline.
    b.set("sources.retrieve", Mode::Hang);
    let before = b.calls("sources.retrieve");
    let t = Instant::now();
    let (status, reply, detail) = assemble(&c, 5, 20000).await;
    let took = t.elapsed();
    assert_eq!(status, 201, "{what}: {reply}");
    assert_eq!(reply["status"], json!(["degraded"]));
    let failed = call_outcome(&detail, "sources.retrieve").to_string();
    assert!(
        failed.contains("no answer within 300 ms (after 2 attempts)"),
        "{what}: {failed}"
    );
    assert_eq!(b.calls("sources.retrieve") - before, 2, "{what}");
    assert!(
        took >= Duration::from_millis(600) && took < Duration::from_secs(5),
        "{what}: {took:?}"
    );

    // The policy fails: the assembly fails (nothing unreviewed is ever
    // included), recorded with its reason.
    b.set("sources.retrieve", Mode::Answer);
    b.set("policy.review", Mode::Fail);
    let (status, reply, _) = assemble(&c, 6, 20000).await;
    assert_eq!(status, 422, "{what}: {reply}");
    assert!(
        reply.to_string().contains("the index is rebuilding"),
        "{what}: {reply}"
    );
    b.set("policy.review", Mode::Answer);

    // The store goes down: retried, then degraded; it comes back on the
    // same address and the next assembly is whole again.
    up.down().await;
    let (status, reply, detail) = assemble(&c, 7, 20000).await;
    assert_eq!(status, 201, "{what}: {reply}");
    assert_eq!(
        reply["status"],
        json!(["degraded"]),
        "{what}: nothing retrieved, nothing to review"
    );
    let failed = call_outcome(&detail, "sources.retrieve").to_string();
    assert!(failed.contains("(after 2 attempts)"), "{what}: {failed}");
    let up = store(grpc, b.clone(), addr).await;
    let mut back = false;
    for n in 8..40 {
        let (status, reply, _) = assemble(&c, n, 20000).await;
        if status == 201 && reply["status"] == json!(["complete"]) {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        back,
        "{what}: the store came back but assemblies stayed degraded"
    );
    up.down().await;
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn grpc_upstreams_answer_fail_hang_and_come_back() {
    the_seeds_outcomes_over(true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn http_upstreams_answer_fail_hang_and_come_back() {
    the_seeds_outcomes_over(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_of_the_wrong_shape_degrades_naming_the_field() {
    // HTTP: a candidate without its section.
    let dir = tempdir();
    let b = Arc::new(Behaviour::default());
    let up = store(false, b.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let path = config(
        &dir,
        &format!(
            "[builder]\nprofile = {{ rag = {{ retrieve-limit = 4 }} }}\n[upstreams.retrieve]\nhttp = \"http://{}/wrong\"\n",
            up.addr
        ),
    );
    let (running, c) = serve(options(&dir, Some(path))).await;
    let (status, reply, detail) = assemble(&c, 1, 20000).await;
    assert_eq!(status, 201, "{reply}");
    assert_eq!(reply["status"], json!(["degraded"]));
    let failed = call_outcome(&detail, "sources.retrieve").to_string();
    assert!(
        failed.contains("answer.ok[0]") && failed.contains("section"),
        "{failed}"
    );
    running.shutdown().await.unwrap();

    // Too many candidates, or a NUL in a text: the store's failure, named,
    // on either store engine alike.
    for (path, says) in [
        ("many", "answered 1001 candidates, at most 1000"),
        ("nul", "answer[0].text: holds a NUL character"),
    ] {
        let dir = tempdir();
        let toml = format!(
            "[builder]\nprofile = {{ rag = {{ retrieve-limit = 4 }} }}\n[upstreams.retrieve]\nhttp = \"http://{}/{path}\"\n",
            up.addr
        );
        let (running, c) = serve(options(&dir, Some(config(&dir, &toml)))).await;
        let (status, reply, detail) = assemble(&c, 1, 20000).await;
        assert_eq!(status, 201, "{reply}");
        assert_eq!(reply["status"], json!(["degraded"]), "{path}");
        let failed = call_outcome(&detail, "sources.retrieve").to_string();
        assert!(failed.contains(says), "{path}: {failed}");
        running.shutdown().await.unwrap();
    }
    up.down().await;

    // gRPC: the reply as bytes a store could send: a candidate whose
    // section is left unspecified.
    use ctxpack_service::upstream_server::pb;
    let reply = pb::RetrieveReply {
        answer: vec![pb::Candidate {
            id: "w-1".into(),
            text: "x".into(),
            trust: pb::TrustTier::Trusted as i32,
            ..Default::default()
        }],
    };
    let method = ctxpack_service::upstream::method_of("sources.retrieve").unwrap();
    let dynamic = prost_reflect::DynamicMessage::decode(
        method.output(),
        prost::Message::encode_to_vec(&reply).as_slice(),
    )
    .unwrap();
    let call = Call::Retrieve {
        query: "q".into(),
        limit: 4,
    };
    let err = ctxpack_service::upstream::answer_of_reply(&call, &dynamic)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "reply.answer[0].section: unspecified (a `Section` is required)"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_profile_calling_a_source_nothing_answers_is_refused() {
    let dir = tempdir();
    let path = config(
        &dir,
        "[builder]\nprofile = { rag-memory = { retrieve-limit = 4, memory-limit = 2 } }\n",
    );
    let err = start(options(&dir, Some(path)))
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("`rag-memory` calls `sources.recall-memory`, which nothing answers: configure [upstreams.recall-memory]"),
        "{err}"
    );
}

fn ctxpack() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_ctxpack"))
}

#[tokio::test(flavor = "multi_thread")]
async fn ingested_documents_answer_a_question() {
    let dir = tempdir();
    let docs = dir.join("docs");
    std::fs::create_dir_all(docs.join("billing")).unwrap();
    std::fs::write(
        docs.join("billing/invoices.md"),
        "# Invoices\n\nAn invoice is overdue thirty days after its date.\n\n## Late fees\n\nOverdue invoices carry a late fee of 2% a month.\n",
    )
    .unwrap();
    std::fs::write(docs.join("weather.txt"), "Porto is sunny in June.\n").unwrap();
    std::fs::write(docs.join("image.png"), [0u8, 159, 146, 150]).unwrap();
    let store = dir.join("store.db");
    let out = ctxpack()
        .args(["ingest", "--store"])
        .arg(&store)
        .arg(&docs)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ingested 2 files (3 chunks)"), "{stdout}");
    // Again: nothing changed.
    let out = ctxpack()
        .args(["ingest", "--store"])
        .arg(&store)
        .arg(&docs)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ingested 0 files (0 chunks), 2 unchanged")
    );
    // A file given by name is read whatever its extension; a binary one is
    // refused, naming it.
    let out = ctxpack()
        .args(["ingest", "--store"])
        .arg(&store)
        .arg(docs.join("image.png"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("image.png"));

    let (running, c) = serve(options(&dir, None)).await;
    let a = c
        .send(
            "POST",
            "/factory/runs/r/attempts/a/context",
            Some("acme"),
            serde_json::to_vec(&json!({"query": "When is an invoice overdue, and what does it cost?", "tokenizer": "o200k-base"})).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(a.status, 201, "{}", a.text());
    let id = a.json()["contextSnapshotId"].as_str().unwrap().to_owned();
    let text = c
        .send(
            "GET",
            &format!("/factory/context-snapshots/{id}/content"),
            Some("acme"),
            Vec::new(),
        )
        .await
        .unwrap()
        .text();
    assert!(text.contains("An invoice is overdue thirty days"), "{text}");
    assert!(text.contains("late fee of 2%"), "{text}");
    assert!(!text.contains("Porto"), "{text}");
    let detail = c
        .send(
            "GET",
            &format!("/factory/context-snapshots/{id}"),
            Some("acme"),
            Vec::new(),
        )
        .await
        .unwrap()
        .json();
    let cited = detail["items"].to_string();
    let reference = format!("{}#1", docs.join("billing/invoices.md").display());
    assert!(cited.contains(&reference), "{cited}");
    assert!(
        cited.contains("sha256:"),
        "the source version is the file's hash: {cited}"
    );
    running.shutdown().await.unwrap();
}

/// The service's HTTP address, read from its start-up log.
fn listening(stderr: &mut impl std::io::BufRead, log: &mut String) -> SocketAddr {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the service exited:\n{log}"
        );
        log.push_str(&line);
        if line.contains("\"listening\"") {
            let v: Value = serde_json::from_str(&line).unwrap();
            return v["fields"]["http"].as_str().unwrap().parse().unwrap();
        }
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_the_configuration_without_dropping_a_request() {
    let dir = tempdir();
    std::fs::write(
        dir.join("doc.md"),
        "Trailing commas are refused by the parser's grammar.\n",
    )
    .unwrap();
    let store_db = dir.join("store.db");
    let out = ctxpack()
        .args(["ingest", "--store"])
        .arg(&store_db)
        .arg(dir.join("doc.md"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let b = Arc::new(Behaviour::default());
    let up = store(true, b.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let index_only = format!(
        "[service]\nstore = \"{}\"\nlisten = \"127.0.0.1:0\"\ngrpc = \"off\"\n[builder]\nprofile = {{ rag = {{ retrieve-limit = 4 }} }}\n",
        store_db.display()
    );
    let with_store = format!(
        "{index_only}[upstreams.retrieve]\ngrpc = \"http://{}\"\n",
        up.addr
    );
    let path = config(&dir, &index_only);
    let mut child = ctxpack()
        .args(["serve", "--insecure-dev-no-auth", "--config"])
        .arg(&path)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    let addr = listening(&mut stderr, &mut log);
    let log = Arc::new(Mutex::new(log));
    let reader = {
        let log = log.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while std::io::BufRead::read_line(&mut stderr, &mut line).unwrap_or(0) > 0 {
                log.lock().unwrap().push_str(&line);
                line.clear();
            }
        })
    };
    let c = Client::new(format!("http://{addr}"));
    let hangup = || {
        let ok = std::process::Command::new("kill")
            .args(["-HUP", &child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    };

    // Clients post without pause while the configuration changes under
    // them: every request is answered 201.
    let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let clients: Vec<_> = (0..6)
        .map(|k| {
            let c = c.clone();
            let running = running.clone();
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                let mut n = 0;
                while running.load(Ordering::Relaxed) {
                    let a = c
                        .send(
                            "POST",
                            &format!("/factory/runs/load/attempts/c{k}-{n}/context"),
                            Some("acme"),
                            request(20000),
                        )
                        .await
                        .unwrap();
                    statuses.push(a.status);
                    n += 1;
                }
                statuses
            })
        })
        .collect();

    // The index answers first.
    let (_, reply, detail) = assemble(&c, 1, 20000).await;
    assert!(
        detail["items"].to_string().contains("doc.md#1"),
        "{reply} {detail}"
    );

    // Reloaded with an upstream: the store answers.
    std::fs::write(&path, &with_store).unwrap();
    hangup();
    let mut n = 2;
    let switched = loop {
        let (_, _, detail) = assemble(&c, n, 20000).await;
        n += 1;
        if detail["items"].to_string().contains("store/up-1") {
            break true;
        }
        if n > 100 {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        switched,
        "the reload never took effect:\n{}",
        log.lock().unwrap()
    );
    assert!(log.lock().unwrap().contains("configuration reloaded"));

    // An invalid file is refused, naming the key; the running one stays.
    std::fs::write(&path, format!("{with_store}timeout-ms = 0\n")).unwrap();
    hangup();
    let refused = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        log.lock().unwrap().contains("reload refused")
    });
    assert!(refused, "{}", log.lock().unwrap());
    assert!(
        log.lock()
            .unwrap()
            .contains("upstreams.retrieve.timeout-ms: must be at least 1")
    );
    let (_, _, detail) = assemble(&c, n, 20000).await;
    assert!(
        detail["items"].to_string().contains("store/up-1"),
        "{detail}"
    );

    running.store(false, Ordering::Relaxed);
    let mut answered = 0;
    for client in clients {
        let statuses = client.await.unwrap();
        assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
        answered += statuses.len();
    }
    assert!(answered > 10, "{answered}");
    child.kill().unwrap();
    let _ = child.wait();
    let _ = reader.join();
    up.down().await;
}

/// A CA, a certificate for 127.0.0.1 it signed, and a client certificate
/// it signed: (ca, server cert, server key, client cert, client key), PEM.
fn certificates() -> (String, String, String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let mut server = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    server
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let server_cert = server.signed_by(&server_key, &issuer).unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client = CertificateParams::new(vec!["store-client".to_owned()]).unwrap();
    let client_cert = client.signed_by(&client_key, &issuer).unwrap();
    (
        ca_cert.pem(),
        server_cert.pem(),
        server_key.serialize_pem(),
        client_cert.pem(),
        client_key.serialize_pem(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn upstreams_over_tls_check_the_store_and_show_a_client_certificate() {
    let (ca, server_cert, server_key, client_cert, client_key) = certificates();
    let dir = tempdir();
    for (name, pem) in [
        ("ca.pem", &ca),
        ("client.pem", &client_cert),
        ("client.key", &client_key),
    ] {
        std::fs::write(dir.join(name), pem).unwrap();
    }
    // An impostor's CA, which the store's certificate is not signed by.
    std::fs::write(dir.join("other-ca.pem"), certificates().0).unwrap();
    let b = Arc::new(Behaviour::default());

    // gRPC over TLS, the store requiring a client certificate its CA signed.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let grpc_addr = listener.local_addr().unwrap();
    let (sources, policy, summarizer) = Grpc(answering(b.clone())).services();
    let tls = tonic::transport::ServerTlsConfig::new()
        .identity(tonic::transport::Identity::from_pem(
            &server_cert,
            &server_key,
        ))
        .client_ca_root(tonic::transport::Certificate::from_pem(&ca));
    let grpc_task = tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .tls_config(tls)
            .unwrap()
            .add_service(sources)
            .add_service(policy)
            .add_service(summarizer)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
            .await;
    });

    // HTTPS, the same.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let https_addr = listener.local_addr().unwrap();
    let acceptor = {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
            .unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(server_cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(server_key.as_bytes()).unwrap(),
            )
            .unwrap();
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    };
    let app = http(answering(b.clone()));
    let https_task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service =
                    hyper::service::service_fn(move |r: hyper::Request<hyper::body::Incoming>| {
                        let app = app.clone();
                        async move {
                            use tower::ServiceExt;
                            app.oneshot(r.map(axum::body::Body::new)).await
                        }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });

    // Each upstream's roots and whether it shows the client certificate.
    let toml = |grpc: (&str, bool), https: (&str, bool)| {
        let tls = |(ca, identity): (&str, bool)| {
            let id = if identity {
                "cert-file = \"client.pem\"\nkey-file = \"client.key\"\n"
            } else {
                ""
            };
            format!("retries = 0\nca-file = \"{ca}\"\n{id}")
        };
        format!(
            "[builder]\nprofile = {{ rag = {{ retrieve-limit = 4 }} }}\n\
             [upstreams.retrieve]\ngrpc = \"https://{grpc_addr}\"\n{}\
             [upstreams.review]\nhttp = \"https://{https_addr}/policy\"\n{}",
            tls(grpc),
            tls(https)
        )
    };
    let run = |grpc: (&'static str, bool), https: (&'static str, bool)| {
        let text = toml(grpc, https);
        let dir = dir.clone();
        async move {
            let dir2 = tempdir();
            for f in ["ca.pem", "client.pem", "client.key", "other-ca.pem"] {
                std::fs::copy(dir.join(f), dir2.join(f)).unwrap();
            }
            let (running, c) = serve(options(&dir2, Some(config(&dir2, &text)))).await;
            let out = assemble(&c, 1, 20000).await;
            running.shutdown().await.unwrap();
            out
        }
    };
    let good = ("ca.pem", true);

    // Trusted and identified: answered over both.
    let (status, reply, detail) = run(good, good).await;
    assert_eq!(status, 201, "{reply}");
    assert_eq!(reply["status"], json!(["complete"]), "{detail}");
    assert_eq!(
        call_outcome(&detail, "sources.retrieve"),
        json!({"answered": 3})
    );
    assert_eq!(
        (b.calls("sources.retrieve"), b.calls("policy.review")),
        (1, 1)
    );

    // No client certificate: the store refuses the handshake. Over gRPC
    // retrieval degrades; over HTTPS the policy fails the assembly.
    let (status, reply, detail) = run(("ca.pem", false), good).await;
    assert_eq!(
        (status, &reply["status"]),
        (201, &json!(["degraded"])),
        "{detail}"
    );
    let (status, reply, _) = run(good, ("ca.pem", false)).await;
    assert_eq!(status, 422, "{reply}");

    // A store whose certificate the configured roots did not sign is not
    // trusted, over either protocol.
    let (status, reply, detail) = run(("other-ca.pem", true), good).await;
    assert_eq!(
        (status, &reply["status"]),
        (201, &json!(["degraded"])),
        "{detail}"
    );
    let (status, reply, _) = run(good, ("other-ca.pem", true)).await;
    assert_eq!(status, 422, "{reply}");

    // Only the trusted, identified calls reached the stores' code: the
    // first assembly's two, and the retrievals before the two failed
    // reviews.
    assert_eq!(b.calls("sources.retrieve"), 3);
    assert_eq!(b.calls("policy.review"), 1);
    grpc_task.abort();
    https_task.abort();
}

/// A store answering every source with one candidate of its own, which
/// counts the calls in flight and, when given a barrier, holds each
/// call there until as many have arrived.
fn counting(
    in_flight: Arc<std::sync::atomic::AtomicUsize>,
    most: Arc<std::sync::atomic::AtomicUsize>,
    barrier: Option<Arc<tokio::sync::Barrier>>,
) -> Answering {
    Arc::new(
        move |call: Call<'static>, _: AgentContext, _: Option<String>| {
            let (in_flight, most, barrier) = (in_flight.clone(), most.clone(), barrier.clone());
            Box::pin(async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                match &barrier {
                    Some(b) => {
                        b.wait().await;
                    }
                    None => tokio::time::sleep(Duration::from_millis(50)).await,
                }
                in_flight.fetch_sub(1, Ordering::SeqCst);
                match &call {
                    Call::Review { items } => {
                        Answer::Verdicts(Ok(vec![Verdict::Allow; items.len()]))
                    }
                    Call::Summarize { requests, .. } => {
                        Answer::Summaries(Ok(requests.iter().map(|_| "short".to_owned()).collect()))
                    }
                    source => {
                        let id = source.capability().replace('.', "-");
                        Answer::Candidates(Ok(vec![candidate(&id, "Trailing commas are refused.")]))
                    }
                }
            })
        },
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rounds_source_calls_run_at_once_and_an_upstream_keeps_its_concurrency_limit() {
    use std::sync::atomic::AtomicUsize;
    // The full profile's first round calls retrieval, memory and the
    // repository state: each is held until all three have arrived, which
    // only calls made at once can do.
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let barrier = Arc::new(tokio::sync::Barrier::new(3));
    let up = serve_store(
        true,
        counting(in_flight.clone(), most.clone(), Some(barrier)),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await;
    let addr = up.addr;
    let dir = tempdir();
    let mut text = String::from(
        "[builder]\nprofile = { full = { retrieve-limit = 4, graph-depth = 0, memory-limit = 2, repository-state = true } }\n",
    );
    for cap in [
        "retrieve",
        "recall-memory",
        "repository-state",
        "expand-graph",
    ] {
        text.push_str(&format!(
            "[upstreams.{cap}]\ngrpc = \"http://{addr}\"\ntimeout-ms = 3000\nretries = 0\n"
        ));
    }
    let (running, c) = serve(options(&dir, Some(config(&dir, &text)))).await;
    let a = c
        .send(
            "POST",
            "/factory/runs/r/attempts/a/context",
            Some("acme"),
            serde_json::to_vec(&json!({
                "context": {"user-id": "u-1"},
                "query": "Why are trailing commas refused?",
                "tokenizer": "o200k-base"
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(a.status, 201, "{}", a.text());
    assert_eq!(a.json()["status"], json!(["complete"]), "{}", a.text());
    assert_eq!(most.load(Ordering::SeqCst), 3);
    running.shutdown().await.unwrap();
    up.down().await;

    // An upstream with `concurrency = 2` has at most two calls in flight,
    // however many assemblies want it.
    let (in_flight, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let up = serve_store(
        true,
        counting(in_flight, most.clone(), None),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await;
    let addr = up.addr;
    let dir = tempdir();
    let text = format!(
        "[builder]\nprofile = {{ rag = {{ retrieve-limit = 4 }} }}\n[upstreams.retrieve]\ngrpc = \"http://{addr}\"\nconcurrency = 2\n"
    );
    let mut o = options(&dir, Some(config(&dir, &text)));
    o.instances = 8;
    let (running, c) = serve(o).await;
    let posts: Vec<_> = (0..16)
        .map(|n| {
            let c = c.clone();
            tokio::spawn(async move {
                c.send(
                    "POST",
                    &format!("/factory/runs/r/attempts/c-{n}/context"),
                    Some("acme"),
                    request(20000),
                )
                .await
                .unwrap()
                .status
            })
        })
        .collect();
    for p in posts {
        assert_eq!(p.await.unwrap(), 201);
    }
    assert_eq!(most.load(Ordering::SeqCst), 2);
    running.shutdown().await.unwrap();
    up.down().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_deadline_covers_the_upstreams() {
    // A store that never answers, an upstream timeout longer than the
    // service's deadline: the deadline answers 504, nothing recorded.
    let b = Arc::new(Behaviour::default());
    b.set("sources.retrieve", Mode::Hang);
    let up = store(true, b, "127.0.0.1:0".parse().unwrap()).await;
    let dir = tempdir();
    let text = format!(
        "[builder]\nprofile = {{ rag = {{ retrieve-limit = 4 }} }}\n[upstreams.retrieve]\ngrpc = \"http://{}\"\ntimeout-ms = 20000\n",
        up.addr
    );
    let mut o = options(&dir, Some(config(&dir, &text)));
    o.deadline = Duration::from_millis(500);
    let (running, c) = serve(o).await;
    let a = c
        .send(
            "POST",
            "/factory/runs/r/attempts/d/context",
            Some("acme"),
            request(20000),
        )
        .await
        .unwrap();
    assert_eq!(a.status, 504, "{}", a.text());
    assert_eq!(a.json()["error"]["code"], "deadline-exceeded");
    assert_eq!(running.service.store.census().await.unwrap().snapshots, 0);
    running.shutdown().await.unwrap();
    up.down().await;
}

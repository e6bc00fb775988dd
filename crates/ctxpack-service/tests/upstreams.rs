//! The service calling the user's stores, on loopback: upstreams over gRPC
//! (`stores.proto`) and over HTTP with JSON answer, fail, hang past their
//! timeout, go down and come back, each with the seed's outcome — a
//! source or the summariser degrades the assembly, the policy fails it —
//! and an answer of the wrong shape is refused naming its field; a
//! round's calls run at once within each upstream's concurrency, and the
//! deadline covers them. TLS to an upstream is in `upstream_tls.rs`, the
//! embedded index and reloads in `ingest_and_reload.rs`.

// Helpers outside #[test] functions unwrap too: a failure is the test's.
#![allow(clippy::unwrap_used)]

mod common;

use common::stores::{
    Behaviour, Mode, assemble, call_outcome, candidate, config, options, request, serve,
    serve_store, store, upstreams_toml,
};
use common::{post, post_json};
use ctxpack_core::{AgentContext, Answer, Call, Verdict};
use ctxpack_service::start;
use ctxpack_service::upstream_server::Answering;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

fn tempdir() -> PathBuf {
    common::tempdir("upstreams")
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

    // Retrieval answers over the cap: degraded, and not retried (the
    // answer would be as large again).
    b.set("sources.retrieve", Mode::Huge);
    let before = b.calls("sources.retrieve");
    let (status, reply, detail) = assemble(&c, 45, 20000).await;
    assert_eq!(status, 201, "{what}: {reply}");
    assert_eq!(reply["status"], json!(["degraded"]), "{what}: {reply}");
    let failed = call_outcome(&detail, "sources.retrieve").to_string();
    assert_eq!(
        b.calls("sources.retrieve") - before,
        1,
        "{what}: retried: {failed}"
    );
    assert!(!failed.contains("attempts"), "{what}: {failed}");

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

/// A tenant whose store hangs holds at most all but one of the pool's
/// instances, however many requests it sends: another tenant's assembly
/// still runs at once. (Before, the pool's four instances went to the
/// first tenant's four hanging assemblies, and the other tenant's waited
/// for them.)
#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_whose_store_hangs_leaves_another_tenant_a_seat() {
    let dir = tempdir();
    let b = Arc::new(Behaviour::default());
    b.set("sources.retrieve", Mode::HangFor("noisy"));
    let up = store(false, b.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let path = config(
        &dir,
        &format!(
            "[builder]\nprofile = {{ rag = {{ retrieve-limit = 4 }} }}\n\
             [upstreams.retrieve]\nhttp = \"http://{}/stores\"\ntimeout-ms = 20000\nretries = 0\n",
            up.addr
        ),
    );
    let mut o = options(&dir, Some(path));
    o.instances = 4;
    let (running, c) = serve(o).await;
    let mut noisy = Vec::new();
    for n in 0..8 {
        let c = c.clone();
        noisy.push(tokio::spawn(async move {
            post(
                &c,
                &format!("/factory/runs/r/attempts/n-{n}/context"),
                "noisy",
                request(20000),
            )
            .await
        }));
    }
    // The noisy tenant's assemblies have reached its store and hang there.
    let t = Instant::now();
    while b.calls("sources.retrieve") < 3 && t.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(b.calls("sources.retrieve"), 3, "all but one seat, no more");
    let quiet = tokio::time::timeout(
        Duration::from_secs(10),
        post(
            &c,
            "/factory/runs/r/attempts/q-1/context",
            "quiet",
            request(20000),
        ),
    )
    .await
    .expect("the other tenant's assembly waited behind the hanging ones");
    assert_eq!(quiet.status, 201, "{}", quiet.json());
    assert_eq!(
        quiet.json()["status"],
        json!(["complete"]),
        "{}",
        quiet.json()
    );
    for n in noisy {
        n.abort();
    }
    running.shutdown().await.unwrap();
    up.down().await;
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
    let a = post_json(
        &c,
        "/factory/runs/r/attempts/a/context",
        "acme",
        &json!({
            "context": {"user-id": "u-1"},
            "query": "Why are trailing commas refused?",
            "tokenizer": "o200k-base"
        }),
    )
    .await;
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
                post(
                    &c,
                    &format!("/factory/runs/r/attempts/c-{n}/context"),
                    "acme",
                    request(20000),
                )
                .await
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
    let a = post(
        &c,
        "/factory/runs/r/attempts/d/context",
        "acme",
        request(20000),
    )
    .await;
    assert_eq!(a.status, 504, "{}", a.text());
    assert_eq!(a.json()["error"]["code"], "deadline-exceeded");
    assert_eq!(running.service.store.census().await.unwrap().snapshots, 0);
    running.shutdown().await.unwrap();
    up.down().await;
}

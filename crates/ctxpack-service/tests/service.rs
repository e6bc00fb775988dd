//! `ctxpack serve` end to end on loopback: the seed's endpoints, gRPC with
//! the POST's semantics, tenants kept apart, bad input named, limits,
//! deadlines, metrics, source deletion and graceful shutdown.

// Helpers outside #[test] functions unwrap too: a failure is the test's.
#![allow(clippy::unwrap_used)]

mod common;

use common::{serve, serve_on};
use ctxpack_service::client::Client;
use ctxpack_service::grpc::pb;
use ctxpack_service::{Options, Rig, demo_path};
use serde_json::{Value, json};
use std::time::Duration;

/// The service's options for these tests: a fresh SQLite store, gRPC too.
fn options() -> Options {
    let store = common::tempdir("service").join("store.db");
    Options {
        grpc: Some(common::any_port()),
        ..common::options(store.display().to_string())
    }
}

fn demo() -> Value {
    serde_json::from_str(&std::fs::read_to_string(demo_path("tests/fixture/request.json")).unwrap())
        .unwrap()
}

fn body(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

fn o200k(text: &str) -> usize {
    tiktoken_rs::o200k_base()
        .unwrap()
        .encode_with_special_tokens(text)
        .len()
}

#[tokio::test(flavor = "multi_thread")]
async fn assembles_lists_explains_and_serves_the_content() {
    let (running, c) = serve(options()).await;
    let a = c
        .send(
            "POST",
            "/factory/runs/run-1/attempts/a-1/context",
            Some("acme"),
            body(&demo()),
        )
        .await
        .unwrap();
    assert_eq!(a.status, 201, "{}", a.text());
    let reply = a.json();
    let id = reply["contextSnapshotId"].as_str().unwrap().to_owned();
    assert_eq!(
        a.location.as_deref(),
        Some(format!("/factory/context-snapshots/{id}").as_str())
    );
    assert_eq!(reply["status"], json!(["complete"]));
    assert_eq!(reply["tenantId"], "acme");
    assert!(reply["tokensUsed"].as_u64().unwrap() <= 400);

    // The content, counted again the way the model sees it.
    let text = c
        .send(
            "GET",
            &format!("/factory/context-snapshots/{id}/content"),
            Some("acme"),
            "",
        )
        .await
        .unwrap();
    assert_eq!(text.status, 200);
    let text = text.text();
    assert!(text.contains("[source: docs/grammar.md#arrays]"), "{text}");
    assert_eq!(
        reply["contentRef"],
        format!("sha256:{}", ctxpack_core::text_hash(&text))
    );
    let detail = c
        .send(
            "GET",
            &format!("/factory/context-snapshots/{id}"),
            Some("acme"),
            "",
        )
        .await
        .unwrap()
        .json();
    assert_eq!(
        detail["textTokens"].as_u64().unwrap() as usize,
        o200k(&text)
    );
    assert!(detail["tokensUsed"].as_u64().unwrap() >= detail["textTokens"].as_u64().unwrap());
    assert_eq!(detail["tokenBudget"], 400);
    let items = detail["items"].as_array().unwrap();
    // Why each was taken or dropped: the retrieval answered candidates,
    // some included with their citations, others dropped with reasons.
    let included: Vec<&Value> = items.iter().filter(|i| i["included"] == true).collect();
    let dropped: Vec<&Value> = items.iter().filter(|i| i["included"] == false).collect();
    assert!(!included.is_empty() && !dropped.is_empty());
    for i in &included {
        assert!(i["dropReason"].is_null());
        assert!(i["citation"]["reference"].is_string(), "{i}");
        assert!(
            text.contains(&format!(
                "[source: {}]",
                i["citation"]["reference"].as_str().unwrap()
            )) || i["origin"] != "retrieval"
        );
    }
    for i in &dropped {
        assert!(i["dropReason"].is_string(), "{i}");
    }
    assert!(
        items
            .iter()
            .any(|i| i["origin"] == "retrieval" && i["included"] == true)
    );
    assert!(items.iter().any(|i| i["score"].is_number()));
    assert!(
        detail["sourceCalls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["capability"] == "sources.retrieve")
    );
    assert!(detail["plan"]["shares"].is_array());
    assert!(detail["compression"]["appliedStrategies"].is_array());
    // What compression did to each section over its share, as the
    // snapshot holds it.
    assert!(detail["compressions"].is_array(), "{detail}");

    let list = c
        .send(
            "GET",
            "/factory/runs/run-1/context-snapshots",
            Some("acme"),
            "",
        )
        .await
        .unwrap()
        .json();
    let s = &list["snapshots"][0];
    assert_eq!(list["snapshots"].as_array().unwrap().len(), 1);
    assert_eq!(s["contextSnapshotId"], id.as_str());
    assert_eq!(s["included"].as_u64().unwrap() as usize, included.len());
    assert_eq!(s["tokenBudget"], 400);
    assert_eq!(s["attemptId"], "a-1");
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_is_replayed_and_a_changed_request_conflicts() {
    let (running, c) = serve(options()).await;
    let path = "/factory/runs/run-1/attempts/a-1/context";
    let first = c
        .send("POST", path, Some("acme"), body(&demo()))
        .await
        .unwrap();
    assert_eq!(first.status, 201);
    let again = c
        .send("POST", path, Some("acme"), body(&demo()))
        .await
        .unwrap();
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["replayed"], true);
    assert_eq!(
        again.json()["contextSnapshotId"],
        first.json()["contextSnapshotId"]
    );
    let mut changed = demo();
    changed["budget"] = json!(300);
    let taken = c
        .send("POST", path, Some("acme"), body(&changed))
        .await
        .unwrap();
    assert_eq!(taken.status, 409, "{}", taken.text());
    assert_eq!(taken.json()["error"]["code"], "attempt-taken");
    let c2 = running.service.store.census().await.unwrap();
    assert_eq!((c2.snapshots, c2.events, c2.unmatched), (1, 1, 0));
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_never_sees_another_tenants_snapshots() {
    let (running, c) = serve(options()).await;
    let path = "/factory/runs/run-1/attempts/a-1/context";
    let a = c
        .send("POST", path, Some("acme"), body(&demo()))
        .await
        .unwrap()
        .json();
    let id = a["contextSnapshotId"].as_str().unwrap();
    for p in [
        format!("/factory/context-snapshots/{id}"),
        format!("/factory/context-snapshots/{id}/content"),
    ] {
        let r = c.send("GET", &p, Some("globex"), "").await.unwrap();
        assert_eq!(r.status, 404, "{p}");
        assert_eq!(r.json()["error"]["code"], "not-found");
    }
    let list = c
        .send(
            "GET",
            "/factory/runs/run-1/context-snapshots",
            Some("globex"),
            "",
        )
        .await
        .unwrap()
        .json();
    assert_eq!(list["snapshots"], json!([]));
    // Deleting a source acme's snapshot cites, as globex, marks nothing.
    let r = c
        .send(
            "POST",
            "/factory/sources/docs%2Fgrammar.md%23arrays/deleted",
            Some("globex"),
            "",
        )
        .await
        .unwrap();
    assert_eq!(r.json()["snapshotsMarked"], 0, "{}", r.text());
    // The same run and attempt ids under globex are globex's own.
    let b = c
        .send("POST", path, Some("globex"), body(&demo()))
        .await
        .unwrap();
    assert_eq!(b.status, 201);
    assert_ne!(b.json()["contextSnapshotId"], a["contextSnapshotId"]);
    // A body naming another tenant is refused.
    let mut other = demo();
    other["context"]["tenant-id"] = json!("acme");
    let r = c
        .send(
            "POST",
            "/factory/runs/run-1/attempts/a-2/context",
            Some("globex"),
            body(&other),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("request.context.tenant-id")
    );
    // Every endpoint wants a tenant.
    for (m, p) in [
        ("POST", path.to_owned()),
        ("GET", "/factory/runs/run-1/context-snapshots".to_owned()),
        ("GET", format!("/factory/context-snapshots/{id}")),
        ("POST", "/factory/sources/x/deleted".to_owned()),
    ] {
        let r = c.send(m, &p, None, body(&demo())).await.unwrap();
        assert_eq!(r.status, 400, "{m} {p}");
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("x-tenant-id")
        );
    }
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_refused_naming_the_field_and_oversized_bodies_too() {
    let mut o = options();
    o.max_body = 16 << 10;
    let (running, c) = serve(o).await;
    let path = "/factory/runs/run-1/attempts/a-1/context";
    let cases: Vec<(Value, &str)> = vec![
        (
            {
                let mut v = demo();
                v.as_object_mut().unwrap().remove("tokenizer");
                v
            },
            "request: missing field `tokenizer`",
        ),
        (
            {
                let mut v = demo();
                v["budget"] = json!("lots");
                v
            },
            "request.budget: invalid type: string \"lots\"",
        ),
        (
            {
                let mut v = demo();
                v["tokenizer"] = json!("gpt-9");
                v
            },
            "request.tokenizer: unknown variant `gpt-9`",
        ),
        (
            {
                let mut v = demo();
                v["keep_last"] = json!(2);
                v
            },
            "request.keep_last: unknown field `keep_last`, expected one of",
        ),
        (
            {
                let mut v = demo();
                v["conversation"][0]["role"] = json!("tool");
                v
            },
            "invalid field `request.conversation[0]",
        ),
    ];
    for (v, want) in cases {
        let r = c.send("POST", path, Some("acme"), body(&v)).await.unwrap();
        assert_eq!(r.status, 400, "{want}: {}", r.text());
        let m = r.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(m.starts_with(want), "{m}\nwanted {want}");
        assert!(!m.contains(" at line "), "{m}");
    }
    let r = c
        .send("POST", path, Some("acme"), "{not json")
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    let big = json!({"query": "x".repeat(20 << 10)});
    let r = c
        .send("POST", path, Some("acme"), body(&big))
        .await
        .unwrap();
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], "invalid-request");
    let r = c
        .send(
            "POST",
            "/factory/runs/run-1/attempts/a%0A1/context",
            Some("acme"),
            body(&demo()),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("attemptId")
    );
    // Nothing of it was recorded.
    assert_eq!(running.service.store.census().await.unwrap().snapshots, 0);
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_assembly_is_recorded_with_its_reason() {
    let (running, c) = serve(options()).await;
    let mut v = demo();
    v["budget"] = json!(5);
    let r = c
        .send(
            "POST",
            "/factory/runs/run-1/attempts/a-1/context",
            Some("acme"),
            body(&v),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 422, "{}", r.text());
    let reply = r.json();
    assert_eq!(reply["status"], json!(["failed"]));
    assert_eq!(reply["error"]["code"], "assembly-failed");
    assert!(
        reply["failure"]
            .as_str()
            .unwrap()
            .contains("mandatory layer needs")
    );
    let id = reply["contextSnapshotId"].as_str().unwrap();
    let d = c
        .send(
            "GET",
            &format!("/factory/context-snapshots/{id}"),
            Some("acme"),
            "",
        )
        .await
        .unwrap()
        .json();
    assert_eq!(d["status"], json!(["failed"]));
    assert_eq!(d["failure"], reply["failure"]);
    assert!(
        d["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["included"] == false)
    );
    let census = running.service.store.census().await.unwrap();
    assert_eq!((census.snapshots, census.events), (1, 1));
    let m = c.send("GET", "/metrics", None, "").await.unwrap().text();
    assert!(
        m.contains("ctxpack_context_assemblies_total{tenant=\"acme\",status=\"failed\"} 1"),
        "{m}"
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_source_degrades_the_snapshot() {
    let mut rig = Rig::scenarios();
    rig.faults.fail.insert("sources.retrieve".into(), 1.0);
    let (running, c) = serve_on(options(), rig).await;
    let r = c
        .send(
            "POST",
            "/factory/runs/run-1/attempts/a-1/context",
            Some("acme"),
            body(&demo()),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"], json!(["degraded"]));
    let id = r.json()["contextSnapshotId"].as_str().unwrap().to_owned();
    let d = c
        .send(
            "GET",
            &format!("/factory/context-snapshots/{id}"),
            Some("acme"),
            "",
        )
        .await
        .unwrap()
        .json();
    let call = d["sourceCalls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["capability"] == "sources.retrieve")
        .unwrap()
        .clone();
    assert!(
        call["outcome"]["failed"]
            .as_str()
            .unwrap()
            .contains("injected fault"),
        "{call}"
    );
    assert!(
        d["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["origin"] != "retrieval")
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_source_marks_its_snapshots_without_changing_them() {
    let (running, c) = serve(options()).await;
    let r = c
        .send(
            "POST",
            "/factory/runs/run-1/attempts/a-1/context",
            Some("acme"),
            body(&demo()),
        )
        .await
        .unwrap()
        .json();
    let id = r["contextSnapshotId"].as_str().unwrap();
    let detail = |c: Client| async move {
        c.send(
            "GET",
            &format!("/factory/context-snapshots/{id}"),
            Some("acme"),
            "",
        )
        .await
        .unwrap()
        .json()
    };
    let before = detail(c.clone()).await;
    let r = c
        .send(
            "POST",
            "/factory/sources/docs%2Fgrammar.md%23arrays/deleted",
            Some("acme"),
            "",
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["snapshotsMarked"], 1);
    let r = c
        .send(
            "POST",
            "/factory/sources/not-cited/deleted",
            Some("acme"),
            "",
        )
        .await
        .unwrap();
    assert_eq!(r.json()["snapshotsMarked"], 0);
    let mut after = detail(c.clone()).await;
    let marks = after["deletedCitations"].take();
    assert_eq!(marks.as_array().unwrap().len(), 1);
    assert_eq!(marks[0]["sourceId"], "docs/grammar.md#arrays");
    after["deletedCitations"] = before["deletedCitations"].clone();
    assert_eq!(after, before, "the snapshot itself is unchanged");
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_deadline_interrupts_a_long_assembly_and_the_pool_recovers() {
    let mut o = options();
    o.deadline = Duration::from_millis(50);
    o.max_body = 64 << 20;
    o.request_limits = Some(ctxpack_service::settings::RequestLimits {
        instructions: 5000,
        ..Default::default()
    });
    let (running, c) = serve(o).await;
    // Two thousand instructions of ~4 kB each: L0 is counted exactly,
    // eight megabytes of text, far past 50 ms inside the component.
    let mut v = demo();
    let line = "Keep the parser strict about separators and report the position. ".repeat(60);
    v["instructions"] = json!(vec![line; 2000]);
    v["budget"] = json!(10_000_000);
    let r = c
        .send(
            "POST",
            "/factory/runs/run-1/attempts/a-1/context",
            Some("acme"),
            body(&v),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 504, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], "deadline-exceeded");
    // It was interrupted inside the component (the instance trapped and
    // was dropped), not only abandoned between steps.
    assert_eq!(running.service.live().pool.trapped(), 1);
    assert_eq!(running.service.store.census().await.unwrap().snapshots, 0);
    running.shutdown().await.unwrap();

    // A slow source runs the clock out between steps.
    let mut o = options();
    o.deadline = Duration::from_millis(200);
    let mut rig = Rig::scenarios();
    rig.faults.delay = Some(Duration::from_millis(1_000));
    let (running, c) = serve_on(o, rig).await;
    let r = c
        .send(
            "POST",
            "/factory/runs/run-1/attempts/a-1/context",
            Some("acme"),
            body(&demo()),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 504);
    assert_eq!(running.service.live().pool.trapped(), 0);
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn after_an_interrupted_call_the_next_request_is_served() {
    let mut o = options();
    o.deadline = Duration::from_millis(50);
    o.max_body = 64 << 20;
    o.request_limits = Some(ctxpack_service::settings::RequestLimits {
        instructions: 5000,
        ..Default::default()
    });
    o.instances = 1;
    let (running, c) = serve(o).await;
    let mut v = demo();
    v["instructions"] = json!(vec!["Report positions. ".repeat(250); 2000]);
    v["budget"] = json!(10_000_000);
    let r = c
        .send(
            "POST",
            "/factory/runs/r/attempts/1/context",
            Some("acme"),
            body(&v),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 504);
    let r = c
        .send(
            "POST",
            "/factory/runs/r/attempts/2/context",
            Some("acme"),
            body(&demo()),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_assembly_abandoned_at_its_deadline_leaves_its_instance_usable() {
    // The deadline passes while the stores are still answering: the
    // assembly is abandoned between steps and its resource dropped after
    // its deadline. The one instance must serve the next request.
    let mut o = options();
    o.deadline = Duration::from_millis(100);
    o.instances = 1;
    let mut rig = Rig::scenarios();
    rig.faults.delay = Some(Duration::from_millis(400));
    let (running, c) = serve_on(o, rig).await;
    for attempt in ["1", "2", "3"] {
        let r = c
            .send(
                "POST",
                &format!("/factory/runs/r/attempts/{attempt}/context"),
                Some("acme"),
                body(&demo()),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 504, "{}", r.text());
    }
    assert_eq!(running.service.live().pool.trapped(), 0);
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_carry_the_seeds_four_with_their_dimensions() {
    let (running, c) = serve(options()).await;
    for (tenant, attempt) in [("acme", "1"), ("acme", "2"), ("globex", "1")] {
        let r = c
            .send(
                "POST",
                &format!("/factory/runs/r/attempts/{attempt}/context"),
                Some(tenant),
                body(&demo()),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 201);
    }
    let m = c.send("GET", "/metrics", None, "").await.unwrap().text();
    for want in [
        "# TYPE ctxpack_context_assemblies_total counter",
        "ctxpack_context_assemblies_total{tenant=\"acme\",status=\"complete\"} 2",
        "ctxpack_context_assemblies_total{tenant=\"globex\",status=\"complete\"} 1",
        "# TYPE ctxpack_context_tokens_used histogram",
        "ctxpack_context_tokens_used_count{tenant=\"acme\",section=\"system-prompt\"} 2",
        "# TYPE ctxpack_context_assembly_latency_seconds histogram",
        "ctxpack_context_assembly_latency_seconds_count{tenant=\"acme\"} 2",
        "# TYPE ctxpack_context_dropped_items_total counter",
    ] {
        assert!(m.lines().any(|l| l == want), "missing {want}\n{m}");
    }
    assert!(m.lines().any(|l| l.starts_with("ctxpack_context_dropped_items_total{tenant=\"globex\",reason=")), "{m}");
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_finishes_the_requests_in_flight() {
    let mut rig = Rig::scenarios();
    rig.faults.delay = Some(Duration::from_millis(600));
    let (running, c) = serve_on(options(), rig).await;
    let addr = running.http;
    let pending = tokio::spawn({
        let c = c.clone();
        async move {
            c.send(
                "POST",
                "/factory/runs/r/attempts/1/context",
                Some("acme"),
                body(&demo()),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let store = running.service.store.clone();
    running.shutdown().await.unwrap();
    let r = pending.await.unwrap().unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(store.census().await.unwrap().snapshots, 1);
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still listening"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn grpc_assemble_has_the_posts_semantics() {
    let (running, c) = serve(options()).await;
    let mut grpc = pb::context_assembly_client::ContextAssemblyClient::connect(format!(
        "http://{}",
        running.grpc.unwrap()
    ))
    .await
    .unwrap();
    let call = |run: &str, attempt: &str, json: String, tenant: Option<&str>| {
        let mut r = tonic::Request::new(pb::AssembleRequest {
            run_id: run.into(),
            attempt_id: attempt.into(),
            request_json: json,
        });
        if let Some(t) = tenant {
            r.metadata_mut().insert("x-tenant-id", t.parse().unwrap());
        }
        r
    };
    let text = serde_json::to_string(&demo()).unwrap();
    let reply = grpc
        .assemble(call("run-1", "a-1", text.clone(), Some("acme")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.status, ["complete"]);
    assert!(!reply.replayed);
    assert!(reply.content_ref.starts_with("sha256:"));
    // The same attempt over HTTP is the same snapshot.
    let http = c
        .send(
            "POST",
            "/factory/runs/run-1/attempts/a-1/context",
            Some("acme"),
            text.clone(),
        )
        .await
        .unwrap();
    assert_eq!(http.status, 200);
    assert_eq!(
        http.json()["contextSnapshotId"],
        reply.context_snapshot_id.as_str()
    );
    assert_eq!(http.json()["tokensUsed"], reply.tokens_used);
    // Errors map to codes, the field named.
    let e = grpc
        .assemble(call("run-1", "a-2", text.clone(), None))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("x-tenant-id"));
    let e = grpc
        .assemble(call("run-1", "a-2", "{\"query\": 1}".into(), Some("acme")))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().starts_with("request.query"), "{}", e.message());
    let mut small = demo();
    small["budget"] = json!(5);
    let e = grpc
        .assemble(call("run-1", "a-3", small.to_string(), Some("acme")))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    let failed_id = e
        .metadata()
        .get("x-context-snapshot-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let d = c
        .send(
            "GET",
            &format!("/factory/context-snapshots/{failed_id}"),
            Some("acme"),
            "",
        )
        .await
        .unwrap();
    assert_eq!(d.json()["status"], json!(["failed"]));
    let mut changed = demo();
    changed["budget"] = json!(300);
    let e = grpc
        .assemble(call("run-1", "a-1", changed.to_string(), Some("acme")))
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::AlreadyExists);
    running.shutdown().await.unwrap();
}

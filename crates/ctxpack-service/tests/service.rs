//! `ctxpack serve` end to end on loopback: the seed's endpoints, tenants
//! kept apart, bad input named, failed and degraded assemblies, source
//! deletion, metrics. Deadlines and shutdown are in `deadlines.rs`, gRPC
//! in `grpc.rs`.

// Helpers outside #[test] functions unwrap too: a failure is the test's.
#![allow(clippy::unwrap_used)]

mod common;

use common::grpc_options as options;
use common::{assemble_demo, demo, get, get_with, post, post_json, serve, serve_on};
use ctxpack_service::Rig;
use ctxpack_service::client::{Answer, Client};
use serde_json::{Value, json};

fn body(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

/// The message of the error answer `r`; none fails the test.
fn error_message(r: &Answer) -> String {
    r.json()["error"]["message"].as_str().unwrap().to_owned()
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
    let a = assemble_demo(&c).await;
    assert_eq!(a.status, 201, "{}", a.text());
    let reply = a.json();
    let id = reply["contextSnapshotId"].as_str().unwrap().to_owned();
    assert_eq!(
        a.location.as_deref(),
        Some(format!("/factory/context-snapshots/{id}").as_str())
    );
    assert_eq!(reply["status"], json!(["truncated"]));
    assert_eq!(reply["tenantId"], "acme");
    assert!(reply["tokensUsed"].as_u64().unwrap() <= 400);

    // The content, counted again the way the model sees it.
    let text = get(
        &c,
        &format!("/factory/context-snapshots/{id}/content"),
        "acme",
    )
    .await;
    assert_eq!(text.status, 200);
    let text = text.text();
    assert!(text.contains("[source: docs/grammar.md#arrays]"), "{text}");
    assert_eq!(
        reply["contentRef"],
        format!("sha256:{}", ctxpack_core::text_hash(&text))
    );
    let detail = get(&c, &format!("/factory/context-snapshots/{id}"), "acme")
        .await
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

    let list = get(&c, "/factory/runs/run-1/context-snapshots", "acme")
        .await
        .json();
    let s = &list["snapshots"][0];
    assert_eq!(list["snapshots"].as_array().unwrap().len(), 1);
    assert_eq!(s["contextSnapshotId"], id.as_str());
    assert_eq!(s["included"].as_u64().unwrap() as usize, included.len());
    assert_eq!(s["tokenBudget"], 400);
    assert_eq!(s["attemptId"], "a-1");
    running.shutdown().await.unwrap();
}

/// A chat in a provider's shape is answered with the request to send in
/// that shape — the kept messages the caller's own, byte for byte, with
/// the cache hints; a retry gets it again.
#[tokio::test(flavor = "multi_thread")]
async fn a_chat_is_answered_with_the_request_to_send_in_its_shape() {
    let (running, c) = serve(options()).await;
    let messages = json!([
        {"role": "system", "content": "You answer from the book."},
        {"role": "user", "content": "What is an array?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "find", "arguments": "{\"q\": \"array\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "find", "arguments": "{\"q\": \"list\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "An array holds values in order."},
        {"role": "tool", "tool_call_id": "c2", "content": "A list is an array."},
        {"role": "user", "content": [{"type": "text", "text": "And a table?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/t.png", "detail": "low"}}]}
    ]);
    let mut request = demo();
    request.as_object_mut().unwrap().remove("conversation");
    request.as_object_mut().unwrap().remove("tokenizer");
    for field in [
        "system-prompt",
        "entry-overhead",
        "keep-last",
        "current-task",
    ] {
        request.as_object_mut().unwrap().remove(field);
    }
    request["model"] = json!("gpt-4o");
    request["budget"] = json!(4000);
    request["chat"] = json!({"shape": "openai-chat", "messages": messages});
    let path = "/factory/runs/run-1/attempts/a-chat/context";
    let first = post_json(&c, path, "acme", &request).await;
    assert_eq!(first.status, 201, "{}", first.text());
    let reply = first.json();
    common::openapi::valid_as("AssembleReply", &reply).unwrap();
    let chat = &reply["chat"];
    assert_eq!(chat["shape"], "openai-chat");
    let sent = chat["body"]["messages"].as_array().unwrap();
    // The system text first, the caller's messages as given, the
    // retrieved context (the pack's) before the question, which is last.
    assert_eq!(
        sent[0],
        json!({"role": "system", "content": "You answer from the book."})
    );
    assert_eq!(&sent[1..5], &messages.as_array().unwrap()[1..5]);
    assert_eq!(sent.last().unwrap(), &messages[5]);
    assert_eq!(chat["sources"], json!([null, 1, 2, 3, 4, null, 5]));
    assert!(
        chat["body"]["prompt_cache_key"]
            .as_str()
            .unwrap()
            .starts_with("ctxpack-")
    );
    let again = post_json(&c, path, "acme", &request).await;
    assert_eq!((again.status, &again.json()["chat"]), (200, chat));
    // A request without a chat is answered without one.
    let plain = assemble_demo(&c).await;
    assert!(plain.json().get("chat").is_none(), "{}", plain.text());
    running.shutdown().await.unwrap();
}

/// A compacted conversation's state comes back with the reply, a retry's
/// too, for the next request to pass back; a request without one gets
/// none.
#[tokio::test(flavor = "multi_thread")]
async fn a_compaction_passed_comes_back_for_the_next_turn() {
    let (running, c) = serve(options()).await;
    let mut request = demo();
    request["conversation"] = json!([
        {"role": "user", "content": "What is an array?"},
        {"role": "assistant", "content": "A list of values."},
        {"role": "user", "content": "And a table?"}
    ]);
    let turns: Vec<ctxpack_core::ConversationTurn> =
        serde_json::from_value(request["conversation"].clone()).unwrap();
    let hash = ctxpack_core::compaction_hash(&turns[..2]);
    let state = json!({"summary": "The user asked what an array is.", "turns": 2, "cleared": 2, "hash": hash});
    request["compaction"] = state.clone();
    let path = "/factory/runs/run-1/attempts/a-1/context";
    let first = post_json(&c, path, "acme", &request).await;
    assert_eq!(first.status, 201, "{}", first.text());
    assert_eq!(first.json()["compaction"], state);
    let again = post_json(&c, path, "acme", &request).await;
    assert_eq!((again.status, &again.json()["compaction"]), (200, &state));
    // The summary is sent in the place of the last turn it stands for,
    // as the user's (it summarises what a user wrote: never system
    // authority), its lines after the header quoted in the flat text.
    let id = first.json()["contextSnapshotId"]
        .as_str()
        .unwrap()
        .to_owned();
    let text = get(
        &c,
        &format!("/factory/context-snapshots/{id}/content"),
        "acme",
    )
    .await;
    assert!(
        text.text().contains(
            "[user] Summary of the earlier conversation:\n> The user asked what an array is."
        ),
        "{}",
        text.text()
    );
    let plain = post_json(
        &c,
        "/factory/runs/run-1/attempts/a-2/context",
        "acme",
        &demo(),
    )
    .await;
    assert_eq!(plain.status, 201);
    assert!(plain.json().get("compaction").is_none(), "{}", plain.text());
    // One past the conversation is refused, naming the field.
    request["compaction"]["turns"] = json!(4);
    let bad = post_json(
        &c,
        "/factory/runs/run-1/attempts/a-3/context",
        "acme",
        &request,
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert!(
        error_message(&bad).contains("compaction.turns"),
        "{}",
        bad.text()
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_is_replayed_and_a_changed_request_conflicts() {
    let (running, c) = serve(options()).await;
    let path = "/factory/runs/run-1/attempts/a-1/context";
    let first = post_json(&c, path, "acme", &demo()).await;
    assert_eq!(first.status, 201);
    let again = post_json(&c, path, "acme", &demo()).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["replayed"], true);
    assert_eq!(
        again.json()["contextSnapshotId"],
        first.json()["contextSnapshotId"]
    );
    let mut changed = demo();
    changed["budget"] = json!(300);
    let taken = post_json(&c, path, "acme", &changed).await;
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
    let a = post_json(&c, path, "acme", &demo()).await.json();
    let id = a["contextSnapshotId"].as_str().unwrap();
    for p in [
        format!("/factory/context-snapshots/{id}"),
        format!("/factory/context-snapshots/{id}/content"),
    ] {
        let r = get(&c, &p, "globex").await;
        assert_eq!(r.status, 404, "{p}");
        assert_eq!(r.json()["error"]["code"], "not-found");
    }
    let list = get(&c, "/factory/runs/run-1/context-snapshots", "globex")
        .await
        .json();
    assert_eq!(list["snapshots"], json!([]));
    // Deleting a source acme's snapshot cites, as globex, marks nothing.
    let r = post(
        &c,
        "/factory/sources/docs%2Fgrammar.md%23arrays/deleted",
        "globex",
        "",
    )
    .await;
    assert_eq!(r.json()["snapshotsMarked"], 0, "{}", r.text());
    // The same run and attempt ids under globex are globex's own.
    let b = post_json(&c, path, "globex", &demo()).await;
    assert_eq!(b.status, 201);
    assert_ne!(b.json()["contextSnapshotId"], a["contextSnapshotId"]);
    // A body naming another tenant is refused.
    let mut other = demo();
    other["context"]["tenant-id"] = json!("acme");
    let r = post_json(
        &c,
        "/factory/runs/run-1/attempts/a-2/context",
        "globex",
        &other,
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(error_message(&r).starts_with("request.context.tenant-id"));
    // Every endpoint wants a tenant.
    for (m, p) in [
        ("POST", path.to_owned()),
        ("GET", "/factory/runs/run-1/context-snapshots".to_owned()),
        ("GET", format!("/factory/context-snapshots/{id}")),
        ("POST", "/factory/sources/x/deleted".to_owned()),
    ] {
        let r = c.send(m, &p, None, body(&demo())).await.unwrap();
        assert_eq!(r.status, 400, "{m} {p}");
        assert!(error_message(&r).contains("x-tenant-id"));
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
            "invalid field `request.tokenizer`: is required when the request names no model (`request.model`)",
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
        let r = post_json(&c, path, "acme", &v).await;
        assert_eq!(r.status, 400, "{want}: {}", r.text());
        let m = error_message(&r);
        assert!(m.starts_with(want), "{m}\nwanted {want}");
        assert!(!m.contains(" at line "), "{m}");
    }
    let r = post(&c, path, "acme", "{not json").await;
    assert_eq!(r.status, 400);
    let big = json!({"query": "x".repeat(20 << 10)});
    let r = post_json(&c, path, "acme", &big).await;
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], "invalid-request");
    let r = post_json(
        &c,
        "/factory/runs/run-1/attempts/a%0A1/context",
        "acme",
        &demo(),
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(error_message(&r).starts_with("attemptId"));
    // Nothing of it was recorded.
    assert_eq!(running.service.store.census().await.unwrap().snapshots, 0);
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_assembly_is_recorded_with_its_reason() {
    let (running, c) = serve(options()).await;
    let mut v = demo();
    v["budget"] = json!(5);
    let r = post_json(&c, "/factory/runs/run-1/attempts/a-1/context", "acme", &v).await;
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
    let d = get(&c, &format!("/factory/context-snapshots/{id}"), "acme")
        .await
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
    let m = get_with(&c, "/metrics", &[]).await.text();
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
    let r = assemble_demo(&c).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"], json!(["degraded"]));
    let id = r.json()["contextSnapshotId"].as_str().unwrap().to_owned();
    let d = get(&c, &format!("/factory/context-snapshots/{id}"), "acme")
        .await
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
    let r = assemble_demo(&c).await.json();
    let id = r["contextSnapshotId"].as_str().unwrap();
    let detail = |c: Client| async move {
        get(&c, &format!("/factory/context-snapshots/{id}"), "acme")
            .await
            .json()
    };
    let before = detail(c.clone()).await;
    let r = post(
        &c,
        "/factory/sources/docs%2Fgrammar.md%23arrays/deleted",
        "acme",
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["snapshotsMarked"], 1);
    let r = post(&c, "/factory/sources/not-cited/deleted", "acme", "").await;
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
async fn metrics_carry_the_seeds_four_with_their_dimensions() {
    let (running, c) = serve(options()).await;
    for (tenant, attempt) in [("acme", "1"), ("acme", "2"), ("globex", "1")] {
        let r = post_json(
            &c,
            &format!("/factory/runs/r/attempts/{attempt}/context"),
            tenant,
            &demo(),
        )
        .await;
        assert_eq!(r.status, 201);
    }
    let m = get_with(&c, "/metrics", &[]).await.text();
    for want in [
        "# TYPE ctxpack_context_assemblies_total counter",
        "ctxpack_context_assemblies_total{tenant=\"acme\",status=\"truncated\"} 2",
        "ctxpack_context_assemblies_total{tenant=\"globex\",status=\"truncated\"} 1",
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

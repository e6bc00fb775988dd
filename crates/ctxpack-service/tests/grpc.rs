//! `ContextAssembly.Assemble` over gRPC, end to end on loopback: the
//! POST's semantics (the same snapshot, errors mapped to codes naming the
//! field, a failed assembly's snapshot id, a changed request refused).

// Helpers outside #[test] functions unwrap too: a failure is the test's.
#![allow(clippy::unwrap_used)]

mod common;

use common::grpc_options as options;
use common::{demo, get, post, serve};
use ctxpack_service::grpc::pb;
use serde_json::json;

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
    assert_eq!(reply.status, ["truncated"]);
    assert!(!reply.replayed);
    assert!(reply.content_ref.starts_with("sha256:"));
    // The same attempt over HTTP is the same snapshot.
    let http = post(
        &c,
        "/factory/runs/run-1/attempts/a-1/context",
        "acme",
        text.clone(),
    )
    .await;
    assert_eq!(http.status, 200);
    assert_eq!(
        http.json()["contextSnapshotId"],
        reply.context_snapshot_id.as_str()
    );
    assert_eq!(http.json()["tokensUsed"], reply.tokens_used);
    assert_eq!(reply.chat_json, "", "a request without a chat");
    // A chat is answered with the request to send, as the POST's `chat`.
    let mut chatted = demo();
    chatted.as_object_mut().unwrap().remove("conversation");
    chatted["chat"] = json!({"shape": "anthropic", "messages": [
        {"role": "user", "content": "Why are trailing commas refused?"}]});
    let chat_text = chatted.to_string();
    let reply = grpc
        .assemble(call("run-1", "a-chat", chat_text.clone(), Some("acme")))
        .await
        .unwrap()
        .into_inner();
    let chat: serde_json::Value = serde_json::from_str(&reply.chat_json).unwrap();
    assert_eq!(chat["shape"], "anthropic");
    assert_eq!(
        chat["body"]["messages"].as_array().unwrap().last().unwrap(),
        &json!({"role": "user", "content": "Why are trailing commas refused?"})
    );
    let http = post(
        &c,
        "/factory/runs/run-1/attempts/a-chat/context",
        "acme",
        chat_text,
    )
    .await;
    assert_eq!((http.status, &http.json()["chat"]), (200, &chat));
    // Errors map to codes, the field named.
    // Attempt `attempt` of run-1, sent and refused: the error.
    let refused = |attempt: &str, json: String, tenant: Option<&str>| {
        let mut grpc = grpc.clone();
        let r = call("run-1", attempt, json, tenant);
        async move { grpc.assemble(r).await.unwrap_err() }
    };
    let e = refused("a-2", text.clone(), None).await;
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().contains("x-tenant-id"));
    let e = refused("a-2", "{\"query\": 1}".into(), Some("acme")).await;
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
    assert!(e.message().starts_with("request.query"), "{}", e.message());
    let mut small = demo();
    small["budget"] = json!(5);
    let e = refused("a-3", small.to_string(), Some("acme")).await;
    assert_eq!(e.code(), tonic::Code::FailedPrecondition);
    let failed_id = e
        .metadata()
        .get("x-context-snapshot-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let d = get(
        &c,
        &format!("/factory/context-snapshots/{failed_id}"),
        "acme",
    )
    .await;
    assert_eq!(d.json()["status"], json!(["failed"]));
    let mut changed = demo();
    changed["budget"] = json!(300);
    let e = refused("a-1", changed.to_string(), Some("acme")).await;
    assert_eq!(e.code(), tonic::Code::AlreadyExists);
    running.shutdown().await.unwrap();
}

//! The HTTP API's OpenAPI document: the copy in the repository is the one
//! the service serves; every route is described and every description
//! routed; the request schema, generated from the WIT, takes every request
//! of the scenario corpus and refuses what the core refuses. (Every answer
//! every service test receives is held to the document too: see
//! `common/openapi.rs`.)

#![allow(clippy::unwrap_used)]

mod common;

use common::openapi::{template, valid_as};
use serde_json::{Value, json};
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_document_in_the_repository_is_the_one_served() {
    let file = std::fs::read_to_string(repo().join("openapi.json")).unwrap();
    assert!(
        file == ctxpack_service::openapi::text(),
        "crates/ctxpack-service/openapi.json is stale: \
         cargo run -p ctxpack-service -- openapi > crates/ctxpack-service/openapi.json"
    );
    let doc: Value = serde_json::from_str(&file).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    // Every reference resolves.
    let text = file.as_str();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for r in text.split("\"$ref\": \"#/components/schemas/").skip(1) {
        let name = &r[..r.find('"').unwrap()];
        assert!(
            schemas.contains_key(name),
            "{name} is referred to, not defined"
        );
    }
}

#[test]
fn every_route_is_described_and_every_description_routed() {
    let source = std::fs::read_to_string(repo().join("src/http.rs")).unwrap();
    let routed: std::collections::BTreeSet<String> = source
        .split(".route(")
        .skip(1)
        .map(|r| {
            let r = r.trim_start();
            let quoted = &r[r.find('"').unwrap() + 1..];
            // The router's names of its parameters are its own (the
            // metrics' route label keeps them): compare the shapes.
            quoted[..quoted.find('"').unwrap()]
                .replace("{run_id}", "{runId}")
                .replace("{attempt_id}", "{attemptId}")
        })
        .collect();
    let doc = ctxpack_service::openapi::document();
    let described: std::collections::BTreeSet<String> =
        doc["paths"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(routed, described);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_service_serves_it_to_anyone_and_each_described_operation_is_routed() {
    let (running, c) = common::serve(common::unauthenticated_options("openapi")).await;
    let a = c.send("GET", "/openapi.json", None, "").await.unwrap();
    assert_eq!(a.status, 200);
    assert_eq!(a.text(), ctxpack_service::openapi::text());
    let doc = ctxpack_service::openapi::document();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let concrete = path
                .replace("{runId}", "run-1")
                .replace("{attemptId}", "attempt-1")
                .replace("{id}", "no-such");
            let a = c
                .send(&method.to_uppercase(), &concrete, Some("acme"), "{}")
                .await
                .unwrap();
            // Routed: not the fallback's 404, nor a 405.
            let fallback = a.status == 404 && a.text().contains("no such route");
            assert!(
                !fallback && a.status != 405,
                "{method} {path}: {}",
                a.status
            );
        }
    }
    assert_eq!(
        template("/factory/context-snapshots/x/content"),
        Some("/factory/context-snapshots/{id}/content")
    );
    running.shutdown().await.unwrap();
}

#[test]
fn the_request_schema_takes_every_request_of_the_corpus_and_refuses_what_the_core_refuses() {
    let dir = repo().join("../../tests/scenarios");
    let mut taken = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let scenario: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let request = &scenario["request"];
        let core = serde_json::from_value::<ctxpack_core::AssembleRequest>(request.clone());
        let schema = valid_as("AssembleRequest", request);
        // Scenarios of invalid requests may fail the core's checks after
        // parsing; what the core parses, the schema takes.
        if core.is_ok() {
            assert!(schema.is_ok(), "{}: {:?}", p.display(), schema);
            taken += 1;
        }
    }
    assert!(taken > 50, "{taken} requests");
    let demo: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("demo/request.json")).unwrap())
            .unwrap();
    valid_as("AssembleRequest", &demo).unwrap();
    // What the core does not parse, the schema refuses.
    for (field, value) in [
        ("budget", json!(-1)),
        ("budget", json!("many")),
        ("tokenizer", json!("o300k-base")),
        ("tokenizer", json!({"named": 3})),
        ("conversation", json!([{"role": "robot", "content": "x"}])),
        ("keep-last", json!(1.5)),
    ] {
        let mut r = demo.clone();
        r[field] = value.clone();
        assert!(
            serde_json::from_value::<ctxpack_core::AssembleRequest>(r.clone()).is_err(),
            "the core takes {field}: {value}"
        );
        assert!(
            valid_as("AssembleRequest", &r).is_err(),
            "the schema takes {field}: {value}"
        );
    }
}

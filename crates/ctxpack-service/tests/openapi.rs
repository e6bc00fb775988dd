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
    // Without [auth], the document asks no operation for a token.
    assert_eq!(
        a.text(),
        ctxpack_service::openapi::text_for(ctxpack_service::openapi::Callers::Anyone)
    );
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

/// `request` against the core's own schema (`openapi/core-schemas.json`,
/// as the core reads a request), its references resolved there.
fn core_valid(request: &Value) -> Result<(), String> {
    static V: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
    let v = V.get_or_init(|| {
        let mut schemas: Value = serde_json::from_str(
            &std::fs::read_to_string(repo().join("openapi/core-schemas.json")).unwrap(),
        )
        .unwrap();
        // A chat's messages cross the WIT as JSON text; in JSON the core
        // reads the list or object itself as well.
        schemas["Chat"]["properties"]["messages"]["type"] = json!(["string", "array", "object"]);
        jsonschema::draft202012::new(&json!({
            "$ref": "#/components/schemas/AssembleRequest",
            "components": {"schemas": schemas},
        }))
        .unwrap()
    });
    let errors: Vec<String> = v
        .iter_errors(request)
        .take(3)
        .map(|e| e.to_string())
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Whether the service as built takes `request` (no configuration: no
/// tokenizer files, no counter, no store answering): it parses, and the
/// core assembles it, or fails it with a snapshot (a 422: taken).
fn service_takes(request: &Value) -> Result<(), String> {
    use ctxpack_core::{Builder, BuilderConfig, HostError, Next};
    let r = ctxpack_service::service::parse_request(request.to_string().as_bytes())
        .map_err(|e| e.to_string())?;
    ctxpack_service::settings::RequestLimits::default()
        .check(&r)
        .map_err(|e| e.to_string())?;
    ctxpack_service::service::no_nul(&r).map_err(|e| e.to_string())?;
    let builder = Builder::new(BuilderConfig::default()).unwrap();
    let mut assembly = builder.start(&r);
    loop {
        match assembly.next() {
            Next::Calls(calls) => {
                let answers: Vec<_> = calls
                    .iter()
                    .map(|c| c.failed(HostError::not_provided(c.capability())))
                    .collect();
                for (k, answer) in answers.into_iter().enumerate().rev() {
                    assembly.provide(k, answer).unwrap();
                }
            }
            Next::Done(Ok(_)) => return Ok(()),
            Next::Done(Err(f)) if f.snapshot.is_some() => return Ok(()),
            Next::Done(Err(f)) => return Err(f.error.to_string()),
        }
    }
}

/// Whether `refusal` is by a rule the document lists under the request
/// body's `x-refused-across-fields` (as `contract_hooks.py` reads them).
fn across_fields(refusal: &str) -> bool {
    let doc = ctxpack_service::openapi::document();
    let body =
        &doc["paths"]["/factory/runs/{runId}/attempts/{attemptId}/context"]["post"]["requestBody"];
    body["x-refused-across-fields"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| {
            refusal.contains(r["field"].as_str().unwrap())
                && refusal.contains(r["refused"].as_str().unwrap())
        })
}

#[test]
fn the_request_schemas_take_the_corpus_and_refuse_what_the_core_refuses() {
    let dir = repo().join("../../tests/scenarios");
    let (mut parsed, mut served) = (0, 0);
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let scenario: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let request = &scenario["request"];
        // What the core parses and its checks take, the core's schema takes.
        if serde_json::from_value::<ctxpack_core::AssembleRequest>(request.clone())
            .is_ok_and(|r| ctxpack_core::validate_request(&r).is_ok())
        {
            let schema = core_valid(request);
            assert!(schema.is_ok(), "{}: {:?}", p.display(), schema);
            parsed += 1;
        }
        // What the served document takes, the service takes: nothing it
        // calls valid is refused but by a rule it lists across fields.
        if valid_as("AssembleRequest", request).is_ok() {
            if let Err(why) = service_takes(request) {
                assert!(
                    across_fields(&why),
                    "{}: the document takes it, the service not: {why}",
                    p.display()
                );
            }
            served += 1;
        }
    }
    assert!(parsed > 50, "{parsed} requests the core parses");
    assert!(served > 30, "{served} requests the served document takes");
    let demo: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("demo/request.json")).unwrap())
            .unwrap();
    valid_as("AssembleRequest", &demo).unwrap();
    service_takes(&demo).unwrap();
    // What the service refuses, the document refuses.
    for (field, value) in [
        ("budget", json!(-1)),
        ("budget", json!("many")),
        ("tokenizer", json!("o300k-base")),
        ("tokenizer", json!({"named": 3})),
        ("tokenizer", json!({"chars-per-token": 0})),
        ("conversation", json!([{"role": "robot", "content": "x"}])),
        ("conversation", json!([{"role": "tool", "content": "x"}])),
        (
            "conversation",
            json!([{"role": "user", "content": "x", "tool-call-id": "c"}]),
        ),
        ("keep-last", json!(1.5)),
        ("model", json!("")),
        ("model", json!(" ")),
        ("query", json!("a\u{0}b")),
        ("workflow", json!({"status": ""})),
        ("context", json!({"session-id": ""})),
        ("unknown-field", json!(1)),
        ("instructions", json!(vec!["x"; 257])),
        (
            "chat",
            json!({"shape": "anthropic", "messages": [{"role": "system", "content": "x"}]}),
        ),
    ] {
        let mut r = demo.clone();
        r[field] = value.clone();
        assert!(
            service_takes(&r).is_err(),
            "the service takes {field}: {value}"
        );
        assert!(
            valid_as("AssembleRequest", &r).is_err(),
            "the document takes {field}: {value}"
        );
    }
    // A model the service has no profile of, one whose tokenizer file it
    // does not load, one counted by a counter it does not have.
    for model in [
        "日本語",
        "gpt-4o-日本",
        "llama-3.1-8b-instruct",
        "claude-sonnet-4-5",
    ] {
        let mut r = demo.clone();
        r["model"] = json!(model);
        r["tokenizer"] = Value::Null;
        assert!(service_takes(&r).is_err(), "the service takes {model}");
        assert!(
            valid_as("AssembleRequest", &r).is_err(),
            "the document takes {model}"
        );
    }
    // Across fields: a model or a tokenizer; `chat` or `conversation`.
    for r in [
        json!({}),
        json!({"query": "q"}),
        json!({"tokenizer": "o200k-base", "conversation": [{"role": "user", "content": "x"}],
               "chat": {"shape": "openai-chat", "messages": [{"role": "user", "content": "y"}]}}),
        json!({"tokenizer": "o200k-base", "form": "text", "entry-overhead": 3}),
    ] {
        assert!(service_takes(&r).is_err(), "the service takes {r}");
        assert!(
            valid_as("AssembleRequest", &r).is_err(),
            "the document takes {r}"
        );
    }
    // A whole number written with a fraction is the number.
    for r in [
        json!({"tokenizer": "o200k-base", "budget": 8000.0}),
        json!({"model": "gpt-4o-2024-08-06", "keep-last": 2.0}),
        json!({"model": "gpt-4o", "chat": {"shape": "openai-chat", "messages": [{"role": "user", "content": "y"}]}}),
    ] {
        service_takes(&r).unwrap();
        valid_as("AssembleRequest", &r).unwrap();
    }
}

#[test]
fn a_fraction_in_a_chat_is_sent_on_as_it_came() {
    let body = br#"{"budget": 8000.0, "model": "gpt-4o", "chat": {"shape": "openai-chat", "messages": [{"role": "user", "content": "y", "z-score": 2.0}]}}"#;
    let r = ctxpack_service::service::parse_request(body).unwrap();
    assert_eq!(r.budget, Some(8000));
    let chat = serde_json::to_string(&r.chat).unwrap();
    assert!(chat.contains("2.0"), "{chat}");
    // A fraction where an integer goes is refused, naming the field.
    let e = ctxpack_service::service::parse_request(br#"{"model": "gpt-4o", "budget": 8000.5}"#)
        .unwrap_err()
        .to_string();
    assert!(e.contains("request.budget"), "{e}");
}

#[test]
fn a_development_service_documents_no_tokens() {
    use ctxpack_service::openapi::{Callers, document_for};
    let dev = document_for(Callers::Anyone);
    let prod = document_for(Callers::Tokens);
    for (path, item) in dev["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            assert_eq!(op["security"], json!([]), "{method} {path}");
        }
    }
    let asks = prod["paths"]["/factory/runs/{runId}/context-snapshots"]["get"]["security"].clone();
    assert_eq!(asks, json!([{"bearer": []}]));
}

//! The HTTP API's description: an OpenAPI 3.1 document, served at
//! `GET /openapi.json`, printed by `ctxpack openapi`, and kept in the
//! repository as `crates/ctxpack-service/openapi.json` (a test holds the
//! file to what the service serves, and the service's tests hold every
//! answer they receive to the document).
//!
//! The paths are written here, beside [`crate::http::router`]'s routes (a
//! test checks each route is described, and each description routed); the
//! schemas of the core's types — the request body, and the plan, reasons
//! and model a snapshot's detail carries — are generated from the WIT by
//! `ctxpack-codegen` (`openapi/core-schemas.json`), so they cannot drift
//! from what the core reads and writes.

use crate::pages::{ITEMS_PAGE, LIST_PAGE};
use serde_json::{Map, Value, json};
use std::sync::OnceLock;

/// The core's types as JSON Schemas, written by `ctxpack-codegen`.
const CORE_SCHEMAS: &str = include_str!("../openapi/core-schemas.json");

/// Who may call the service a document describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Callers {
    /// Bearer tokens (`[auth]`): the document kept in the repository.
    Tokens,
    /// `--insecure-dev-no-auth`: no operation asks for a token.
    Anyone,
}

/// The document, as JSON text (built once for each).
pub fn text_for(callers: Callers) -> &'static str {
    static TOKENS: OnceLock<String> = OnceLock::new();
    static ANYONE: OnceLock<String> = OnceLock::new();
    let cell = match callers {
        Callers::Tokens => &TOKENS,
        Callers::Anyone => &ANYONE,
    };
    cell.get_or_init(|| {
        // The document is built from constants: it always serialises.
        serde_json::to_string_pretty(&document_for(callers)).unwrap_or_default() + "\n"
    })
}

/// The document of a service that takes tokens, as JSON text.
pub fn text() -> &'static str {
    text_for(Callers::Tokens)
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn nullable(v: Value) -> Value {
    json!({"anyOf": [v, {"type": "null"}]})
}

fn string() -> Value {
    json!({"type": "string"})
}

fn count() -> Value {
    json!({"type": "integer", "minimum": 0})
}

/// A count a query names: it must fit 64 bits.
fn query_count() -> Value {
    json!({"type": "integer", "minimum": 0, "maximum": u64::MAX})
}

/// An id (`crate::ids::id_error`): 1 to 200 characters, no control
/// character.
fn id() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": crate::ids::ID_CHARS,
           "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"})
}

fn hash_ref() -> Value {
    json!({"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"})
}

/// An object schema: `properties`, of which `required` are.
fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// A JSON answer of schema `name`, described.
fn answer(description: &str, name: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": schema_ref(name)}},
    })
}

/// An error answer: `{"error": {"code", "message"}}`.
fn refused(description: &str) -> Value {
    answer(description, "Error")
}

/// An error answer that says when to come back.
fn come_back(description: &str) -> Value {
    let mut a = refused(description);
    a["headers"] = retry_after();
    a
}

fn path_param(name: &str, description: &str) -> Value {
    json!({
        "name": name, "in": "path", "required": true, "description": description,
        "schema": id(),
    })
}

/// `Retry-After`, in whole seconds.
fn retry_after() -> Value {
    json!({"Retry-After": {"description": "Seconds to wait before trying again.",
                           "schema": {"type": "integer", "minimum": 1}}})
}

fn query_param(name: &str, description: &str, schema: Value) -> Value {
    json!({"name": name, "in": "query", "required": false, "description": description, "schema": schema})
}

/// The answers every `/factory` route may give besides its own.
fn refusals(responses: &mut Map<String, Value>) {
    for (status, what) in [
        ("400", "The request is wrong; the message names the field."),
        (
            "401",
            "No bearer token, or one that is not valid (`WWW-Authenticate` says why).",
        ),
        ("403", "The token's roles or scopes do not allow this."),
        (
            "500",
            "What was written cannot be read back (`store-corrupt`, a lost object): not a passing fault.",
        ),
    ] {
        responses.entry(status).or_insert_with(|| refused(what));
    }
    responses.entry("429").or_insert_with(|| {
        come_back("The tenant is over its rate limit: every `/factory` request counts.")
    });
    responses.entry("503").or_insert_with(|| {
        come_back("The store or the artifact store cannot be reached, or the service is busy.")
    });
}

/// The answers the listener itself may give to any request, before it is
/// routed.
fn listener(responses: &mut Map<String, Value>) {
    responses.entry("421").or_insert_with(|| {
        refused("`--insecure-dev-no-auth` only: the `Host` is not a loopback name.")
    });
    responses
        .entry("503")
        .or_insert_with(|| come_back("The service is busy or stopping."));
}

fn operation(
    id: &str,
    summary: &str,
    params: Vec<Value>,
    mut responses: Map<String, Value>,
) -> Value {
    refusals(&mut responses);
    listener(&mut responses);
    json!({
        "operationId": id,
        "summary": summary,
        "parameters": params,
        "responses": responses,
        "security": [{"bearer": []}],
    })
}

fn responses(pairs: Vec<(&str, Value)>) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

fn text_answer(description: &str, media: &str) -> Value {
    json!({"description": description, "content": {media: {"schema": string()}}})
}

/// The paths, as [`crate::http::router`] routes them.
fn paths() -> Value {
    let run = path_param("runId", "The run.");
    let attempt = path_param(
        "attemptId",
        "The attempt of the run: one snapshot per attempt.",
    );
    let snapshot = path_param("id", "The snapshot's `contextSnapshotId`.");
    let mut created = answer("Assembled and recorded.", "AssembleReply");
    created["headers"] = json!({"Location": {
        "description": "The snapshot: `/factory/context-snapshots/{contextSnapshotId}`.",
        "schema": {"type": "string"},
    }});
    let assemble = {
        let mut op = operation(
            "assemble",
            "Assemble the context for an attempt and record its snapshot",
            vec![run.clone(), attempt],
            responses(vec![
                ("201", created),
                (
                    "200",
                    answer(
                        "The attempt already had this very snapshot (a retry): replayed.",
                        "AssembleReply",
                    ),
                ),
                (
                    "409",
                    refused(
                        "The attempt already has another snapshot: a changed request is a new attempt.",
                    ),
                ),
                ("413", refused("The body is over `max-body-bytes`.")),
                (
                    "415",
                    refused(
                        "The body is not declared `application/json` (`unsupported-media-type`).",
                    ),
                ),
                (
                    "408",
                    refused("The body did not arrive within the body timeout."),
                ),
                (
                    "422",
                    answer(
                        "The assembly failed; its snapshot is recorded, and the error says why.",
                        "FailedAssembly",
                    ),
                ),
                (
                    "500",
                    refused("The component failed, or the store cannot read back what it wrote."),
                ),
                ("504", refused("The deadline passed; nothing recorded.")),
            ]),
        );
        op["requestBody"] = json!({
            "required": true,
            "description": "What to pack: the core's request, kebab-case as the core reads it; exactly one JSON object (bytes after it, or an array, are 400). A whole number may be written with a fraction (`8000.0`). Besides its schema, a request is refused (400) by the rules `x-refused-across-fields` lists, which relate one field to another, or to the path, in ways JSON Schema cannot say.",
            "content": {"application/json": {"schema": schema_ref("AssembleRequest")}},
            "x-refused-across-fields": across_fields(),
        });
        op
    };
    let mut unready = answer(
        "Not ready. On the metrics listener `store` or `artifacts` says why; on the API's listener they say `unavailable` and the log says why.",
        "Readiness",
    );
    unready["headers"] = retry_after();
    let mut paths = json!({
        "/factory/runs/{runId}/attempts/{attemptId}/context": {"post": assemble},
        "/factory/runs/{runId}/context-snapshots": {"get": operation(
            "listSnapshots",
            "A page of a run's snapshots",
            vec![
                run,
                query_param("limit", &format!("Snapshots per page ({} when left out).", LIST_PAGE.0),
                    json!({"type": "integer", "minimum": 1, "maximum": LIST_PAGE.1})),
                query_param("after", "The page after this snapshot id (a page's `nextAfter`).", id()),
            ],
            responses(vec![("200", answer("The page; `nextAfter` names the next, `null` at the end.", "SnapshotList"))]),
        )},
        "/factory/context-snapshots/{id}": {"get": operation(
            "getSnapshot",
            "A snapshot: why each item was selected or dropped, a page of its items",
            vec![
                snapshot.clone(),
                query_param("itemsOffset", "The first item of the page (0 when left out).", query_count()),
                query_param("itemsLimit", &format!("Items per page ({} when left out).", ITEMS_PAGE.0),
                    json!({"type": "integer", "minimum": 1, "maximum": ITEMS_PAGE.1})),
            ],
            responses(vec![
                ("200", answer("The snapshot.", "SnapshotDetail")),
                ("404", refused("No such snapshot for this tenant (another tenant's is not told apart).")),
            ]),
        )},
        "/factory/context-snapshots/{id}/content": {"get": operation(
            "getSnapshotContent",
            "A snapshot's assembled text, as the model was given it",
            vec![snapshot],
            responses(vec![
                ("200", text_answer("The text.", "text/plain")),
                ("404", refused("No such snapshot for this tenant.")),
            ]),
        )},
        "/factory/sources/{id}/deleted": {"post": operation(
            "sourceDeleted",
            "Mark a source deleted in the tenant's snapshots that cite it",
            vec![path_param("id", "The source (a citation's `reference`).")],
            responses(vec![("200", answer("How many snapshots were marked.", "SourceDeleted"))]),
        )},
        "/metrics": {"get": {
            "operationId": "metrics",
            "summary": "The seed's metrics, Prometheus' text format (a tenant's roles see only their tenant's series)",
            "security": [{"bearer": []}],
            "responses": {
                "200": text_answer("The metrics.", "text/plain"),
                "401": refused("No valid token."),
                "403": refused("The token may not read metrics."),
            },
        }},
        "/healthz": {"get": {
            "operationId": "healthz",
            "summary": "Whether the process answers",
            "security": [],
            "responses": {"200": text_answer("`ok`.", "text/plain")},
        }},
        "/readyz": {"get": {
            "operationId": "readyz",
            "summary": "Whether the service takes assemblies (its store takes a write)",
            "security": [],
            "responses": {
                "200": answer("Ready; `degraded` when the broker is away (events wait in the outbox).", "Readiness"),
                "503": unready,
            },
        }},
        "/openapi.json": {"get": {
            "operationId": "openapi",
            "summary": "This document",
            "security": [],
            "responses": {"200": {
                "description": "The OpenAPI 3.1 document.",
                "content": {"application/json": {"schema": {"type": "object"}}},
            }},
        }},
    });
    for op in ["/metrics", "/healthz", "/readyz", "/openapi.json"] {
        if let Some(r) = paths[op]["get"]["responses"].as_object_mut() {
            listener(r);
        }
    }
    paths
}

/// The rules a request is held to that relate fields to each other or to
/// the path, which JSON Schema cannot say: each the field a refusal names
/// and the words it says. The contract test (`contract_hooks.py`) takes a
/// valid request's 400 only when it is one of these.
fn across_fields() -> Value {
    json!([
        {"field": "request.context.tenant-id", "refused": "differs from the", "rule": "When given, the caller's tenant (the token's, or `x-tenant-id`)."},
        {"field": "request.context.run-id", "refused": "differs from the path", "rule": "When given, the path's `runId`."},
        {"field": "request.context.attempt-id", "refused": "differs from the path", "rule": "When given, the path's `attemptId`."},
        {"field": "request.budget", "refused": "is above the model window", "rule": "With a model, at most its window less the plan's safety margin."},
        {"field": "request.conversation[", "refused": "is already made by conversation", "rule": "No two assistant turns make the same call (`tool-call-id`)."},
        {"field": "request.compaction.", "refused": "is past the conversation's", "rule": "A compaction's `turns` and `cleared` are within the conversation."},
        {"field": "request.compaction.summary", "refused": "must not be empty when it stands for", "rule": "A compaction that stands for turns has a summary."},
        {"field": "request.compaction.turns", "refused": "splits a tool call from its result", "rule": "A compaction never ends inside a tool call's run of turns."},
        {"field": "request.compaction.hash", "refused": "are not the ones this compaction was made from", "rule": "A compaction is passed back with the conversation it was made from: its `hash` is theirs."},
    ])
}

/// The service's own answers' schemas (camelCase, the seed's).
fn service_schemas() -> Map<String, Value> {
    let status = json!({"type": "array", "items": schema_ref("SnapshotStatus")});
    let reply = object(
        json!({
            "contextSnapshotId": string(),
            "tenantId": string(),
            "runId": string(),
            "attemptId": string(),
            "status": status,
            "tokensUsed": count(),
            "tokenBudget": count(),
            "contentRef": hash_ref(),
            "failure": string(),
            "replayed": {"type": "boolean"},
            "compaction": {
                "allOf": [schema_ref("Compaction")],
                "description": "The conversation's compaction, kebab-case as the request's `compaction` takes it back.",
            },
            "chat": {
                "type": "object",
                "description": "For a request that carried a `chat`: the request to send, in the chat's shape — `body` is the provider's request body but the model (the kept messages the caller's own, unchanged but for the provider's cache hints, in the pack's layout, with the system text and the retrieved context as the shape places them), `sources[i]` the index in the chat's messages of the body's i-th message, or null for one of the pack's.",
                "properties": {
                    "shape": schema_ref("ChatShape"),
                    "body": {"type": "object", "description": "The provider's request body but the model: `messages` (OpenAI Chat Completions, with `prompt_cache_key`), `input` (OpenAI Responses), `system` and `messages` (Anthropic), `systemInstruction` and `contents` (Gemini)."},
                    "sources": {"type": "array", "items": {"type": ["integer", "null"], "minimum": 0}},
                },
                "required": ["shape", "body", "sources"],
                "additionalProperties": false,
            },
        }),
        &[
            "contextSnapshotId",
            "tenantId",
            "runId",
            "attemptId",
            "status",
            "tokensUsed",
            "tokenBudget",
            "contentRef",
            "replayed",
        ],
    );
    let mut failed = reply.clone();
    failed["properties"]["error"] = schema_ref("ErrorBody");
    if let Some(r) = failed["required"].as_array_mut() {
        r.push("error".into());
        r.push("failure".into());
    }
    let item = object(
        json!({
            "itemId": string(),
            "section": schema_ref("Section"),
            "layer": schema_ref("Layer"),
            "origin": schema_ref("Origin"),
            "citation": nullable(schema_ref("camel.Provenance")),
            "trustTier": schema_ref("TrustTier"),
            "score": nullable(json!({"type": "number"})),
            "tokens": count(),
            "counted": schema_ref("Counted"),
            "included": {"type": "boolean"},
            "dropReason": nullable(string()),
            "reason": schema_ref("camel.Reason"),
            "compressed": {"type": "boolean"},
            "redacted": {"type": "boolean"},
            "run": object(json!({"lastId": string(), "count": count()}), &["lastId", "count"]),
        }),
        &[
            "itemId",
            "section",
            "layer",
            "origin",
            "citation",
            "trustTier",
            "score",
            "tokens",
            "counted",
            "included",
            "dropReason",
            "reason",
            "compressed",
            "redacted",
        ],
    );
    let detail_fields = json!({
        "contextSnapshotId": string(),
        "tenantId": string(),
        "projectId": nullable(string()),
        "runId": string(),
        "attemptId": string(),
        "sessionId": nullable(string()),
        "traceId": nullable(string()),
        "assembledAt": {"type": "string", "format": "date-time"},
        "status": status,
        "failure": nullable(string()),
        "tokenizer": schema_ref("Tokenizer"),
        "model": nullable(schema_ref("camel.ModelUse")),
        "tokenBudget": count(),
        "tokensUsed": count(),
        "textTokens": count(),
        "messageTokens": count(),
        "stablePrefixTokens": count(),
        "cachePrefixes": {"type": "array", "items": schema_ref("camel.CachePrefix")},
        "scopes": {"type": "array", "items": string()},
        "indexRevisions": {"type": "array", "items": string()},
        "memoryItems": {"type": "array", "items": string()},
        "contentRef": hash_ref(),
        "planRef": hash_ref(),
        "plan": schema_ref("camel.Plan"),
        "profile": schema_ref("camel.Profile"),
        "sourceCalls": {"type": "array", "items": schema_ref("camel.SourceCall")},
        "compression": schema_ref("camel.CompressionMetadata"),
        "compressions": {"type": "array", "items": schema_ref("camel.SectionCompression")},
        "fence": schema_ref("camel.FenceReport"),
        "chat": nullable(schema_ref("camel.ChatReport")),
        "deletedCitations": {"type": "array", "items": object(
            json!({"sourceId": string(), "recordedAt": {"type": "string", "format": "date-time"}}),
            &["sourceId", "recordedAt"],
        )},
        "itemsTotal": count(),
        "itemsOffset": count(),
        "nextItemsOffset": nullable(count()),
        "items": {"type": "array", "items": schema_ref("SnapshotItem")},
    });
    let detail_required: Vec<&str> = detail_fields
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let detail = object(detail_fields.clone(), &detail_required);
    let summary = object(
        json!({
            "contextSnapshotId": string(),
            "projectId": nullable(string()),
            "runId": string(),
            "attemptId": string(),
            "status": status,
            "tokenBudget": count(),
            "tokensUsed": count(),
            "included": count(),
            "dropped": count(),
            "contentRef": hash_ref(),
            "assembledAt": {"type": "string", "format": "date-time"},
            "failure": nullable(string()),
        }),
        &[
            "contextSnapshotId",
            "projectId",
            "runId",
            "attemptId",
            "status",
            "tokenBudget",
            "tokensUsed",
            "included",
            "dropped",
            "contentRef",
            "assembledAt",
            "failure",
        ],
    );
    let error_body = object(
        json!({
            "code": {"type": "string", "description": "A short code: `invalid-request`, `unauthorized`, `forbidden`, `not-found`, `attempt-taken`, `rate-limited`, `store-unavailable`, …"},
            "message": {"type": "string", "maxLength": 520, "description": "What is wrong, naming the field."},
        }),
        &["code", "message"],
    );
    [
        ("ErrorBody", error_body),
        (
            "Error",
            object(json!({"error": schema_ref("ErrorBody")}), &["error"]),
        ),
        ("AssembleReply", reply),
        ("FailedAssembly", failed),
        ("SnapshotSummary", summary),
        (
            "SnapshotList",
            object(
                json!({
                    "runId": string(),
                    "snapshots": {"type": "array", "items": schema_ref("SnapshotSummary")},
                    "nextAfter": nullable(string()),
                }),
                &["runId", "snapshots", "nextAfter"],
            ),
        ),
        ("SnapshotItem", item),
        ("SnapshotDetail", detail),
        (
            "SourceDeleted",
            object(
                json!({"sourceId": string(), "snapshotsMarked": count()}),
                &["sourceId", "snapshotsMarked"],
            ),
        ),
        (
            "Readiness",
            object(
                json!({
                    "ok": {"type": "boolean"},
                    "degraded": {"type": "boolean"},
                    "store": string(),
                    "broker": string(),
                }),
                &["ok", "degraded", "store", "broker"],
            ),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The document of a service that takes tokens.
pub fn document() -> Value {
    document_for(Callers::Tokens)
}

/// No text of a request may hold a NUL character
/// (`service::request::no_nul`): PostgreSQL's text cannot.
const NO_NUL: &str = "^[^\\u0000]*$";

/// The schema of any JSON value without a NUL in any text.
const JSON_WITHOUT_NUL: &str = "JsonWithoutNul";

/// Every text `v` describes held to [`NO_NUL`] (a pattern of its own kept
/// beside it).
fn without_nul(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("type") == Some(&json!("string")) && !m.contains_key("enum") {
                if let Some(own) = m.remove("pattern") {
                    m.insert("allOf".into(), json!([{"pattern": own}]));
                }
                m.insert("pattern".into(), json!(NO_NUL));
            }
            for child in m.values_mut() {
                without_nul(child);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(without_nul),
        _ => {}
    }
}

/// A text of a chat message.
fn chat_text() -> Value {
    json!({"type": "string", "pattern": NO_NUL})
}

/// The messages of one chat shape: a list of `message`s.
fn chat_of(shape: &str, list: &str, message: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "shape": {"const": shape},
            "messages": {
                "type": "array",
                "items": message,
                "description": format!("The provider's `{list}`, as JSON. The core also reads them as JSON text, or an object holding the list under `{list}` with the system text beside it; a message or part it does not carry is refused, naming its place. Listed here: what every provider's reader takes; the provider's tool calls and results, images and other parts are read as well (see the book's chapter on chat)."),
            },
        },
        "required": ["shape", "messages"],
        "additionalProperties": false,
    })
}

/// A chat, by its shape: the messages each provider's reader takes.
fn chat() -> Value {
    let any = schema_ref(JSON_WITHOUT_NUL);
    json!({
        "description": "Chat messages as a provider's API takes them: `shape` says which.",
        "oneOf": [
            chat_of("openai-chat", "messages", json!({
                "type": "object",
                "properties": {
                    "role": {"enum": ["system", "developer", "user", "assistant"]},
                    "content": {"anyOf": [chat_text(), {"type": "null"}]},
                    "name": chat_text(),
                },
                "required": ["role"],
                "additionalProperties": any,
            })),
            chat_of("openai-responses", "input", json!({
                "type": "object",
                "properties": {
                    "type": {"const": "message"},
                    "role": {"enum": ["system", "developer", "user", "assistant"]},
                    "content": chat_text(),
                },
                "required": ["role", "content"],
                "additionalProperties": any,
            })),
            chat_of("anthropic", "messages", json!({
                "type": "object",
                "properties": {
                    "role": {"enum": ["user", "assistant"]},
                    "content": chat_text(),
                },
                "required": ["role", "content"],
                "additionalProperties": false,
            })),
            chat_of("gemini", "contents", json!({
                "type": "object",
                "properties": {
                    "role": {"enum": ["user", "model"]},
                    "parts": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"text": chat_text()},
                        "required": ["text"],
                        "additionalProperties": any,
                    }},
                },
                "required": ["parts"],
                "additionalProperties": any,
            })),
        ],
    })
}

/// The model names a request may give the service as it is built (its
/// configuration may add profiles, tokenizer files and a counter): the
/// built-in profiles that count with an encoding, by name or with a date.
fn model_name() -> Value {
    let names: Vec<String> = ctxpack_core::built_in_models()
        .into_iter()
        .filter(|m| {
            matches!(
                m.tokenizer,
                ctxpack_core::Tokenizer::O200kBase | ctxpack_core::Tokenizer::Cl100kBase
            )
        })
        .map(|m| m.name)
        .collect();
    let escaped: Vec<String> = names.iter().map(|n| n.replace('.', "\\.")).collect();
    json!({
        "anyOf": [
            {"enum": names},
            {"type": "string", "pattern": format!(
                "^(?:{})-(?:[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}|[0-9]{{8}}|[0-9]{{4}})$",
                escaped.join("|")
            )},
        ],
    })
}

/// The request as the service takes it: the core's schemas, and what the
/// core refuses across fields, said in JSON Schema where it can be.
fn request_schemas(schemas: &mut Map<String, Value>) {
    for (name, schema) in schemas.iter_mut() {
        if !name.starts_with("camel.") {
            without_nul(schema);
        }
    }
    schemas.insert("Chat".into(), chat());
    schemas.insert(
        JSON_WITHOUT_NUL.into(),
        json!({
            "description": "Any JSON value without a NUL character in its texts.",
            "anyOf": [
                {"type": ["null", "boolean", "number"]},
                chat_text(),
                {"type": "array", "items": schema_ref(JSON_WITHOUT_NUL)},
                {"type": "object", "additionalProperties": schema_ref(JSON_WITHOUT_NUL)},
            ],
        }),
    );
    // The service as built counts with its encodings: a tokenizer file
    // (`named`) or the host's counter (`host`) is there only when its
    // configuration gives one.
    if let Some(mut t) = schemas.get("Tokenizer").cloned() {
        if let Some(cases) = t["oneOf"].as_array_mut() {
            cases.retain(|c| {
                c.pointer("/properties/named").is_none() && c.pointer("/properties/host").is_none()
            });
        }
        t["description"] = json!(
            "How the budget is counted: an encoding, or an estimate. A tokenizer file's name (`{\"named\": …}`) when the service's configuration loads one, and `{\"host\": …}` when it has a counter."
        );
        schemas.insert("ServedTokenizer".into(), t);
    }
    let limits = crate::settings::RequestLimits::default();
    if let Some(c) = schemas.get_mut("AgentContext") {
        c["properties"]["scopes"]["maxItems"] = json!(limits.scopes);
    }
    if let Some(r) = schemas.get_mut("AssembleRequest") {
        // The service's `[limits]`: these are its defaults.
        for (field, most) in [
            ("instructions", limits.instructions),
            ("conversation", limits.conversation_turns),
            ("stage-summaries", limits.stage_summaries),
        ] {
            r["properties"][field]["maxItems"] = json!(most);
        }
        r["properties"]["model"]["anyOf"][0] = model_name();
        r["properties"]["tokenizer"]["anyOf"][0] = schema_ref("ServedTokenizer");
        r["allOf"] = json!([
            {
                "description": "A request names its model, or the tokenizer its budget is counted in, or both.",
                "anyOf": [
                    {"required": ["model"], "properties": {"model": {"type": "string"}}},
                    {"required": ["tokenizer"], "properties": {"tokenizer": {"not": {"type": "null"}}}},
                ],
            },
            {
                "description": "The conversation comes as `conversation` or as `chat`, not both.",
                "not": {
                    "required": ["chat", "conversation"],
                    "properties": {"chat": {"type": "object"}, "conversation": {"minItems": 1}},
                },
            },
            {
                "description": "A pack sent as flat text has no messages: no entry or reply overhead is charged.",
                "if": {"required": ["form"], "properties": {"form": {"const": "text"}}},
                "then": {"properties": {
                    "entry-overhead": {"enum": [0, null]},
                    "reply-overhead": {"enum": [0, null]},
                }},
            },
        ]);
    }
    if let Some(t) = schemas.get_mut("ConversationTurn") {
        t["allOf"] = json!([
            {
                "description": "A tool turn names the call it answers.",
                "if": {"properties": {"role": {"const": "tool"}}},
                "then": {"required": ["tool-call-id"], "properties": {"tool-call-id": {"type": "string"}}},
            },
            {
                "description": "Only assistant and tool turns carry a tool-call id.",
                "if": {"properties": {"role": {"enum": ["user", "system"]}}},
                "then": {"properties": {"tool-call-id": {"type": "null"}}},
            },
        ]);
    }
}

/// The whole document, for a service `callers` may call.
pub fn document_for(callers: Callers) -> Value {
    let mut schemas: Map<String, Value> = serde_json::from_str(CORE_SCHEMAS).unwrap_or_default();
    request_schemas(&mut schemas);
    schemas.extend(service_schemas());
    let mut paths = paths();
    if callers == Callers::Anyone {
        // `--insecure-dev-no-auth`: no operation asks for a token.
        for op in paths
            .as_object_mut()
            .into_iter()
            .flat_map(|p| p.values_mut())
        {
            for method in op.as_object_mut().into_iter().flat_map(|m| m.values_mut()) {
                method["security"] = json!([]);
            }
        }
    }
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "ctxpack serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The context builder's assembly service: assemble the context for an attempt within an exact token budget, record its snapshot (why every candidate was taken or dropped), and read the snapshots back. The request body is the core's request, kebab-case; the service's own answers are camelCase. Errors are `{\"error\": {\"code\", \"message\"}}`, the message naming the field. See crates/ctxpack-service/README.md.",
            "license": {"name": env!("CARGO_PKG_LICENSE")},
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "bearerFormat": "JWT",
                    "description": "An OAuth2 access token (`[auth]`: JWKS, issuer, audience); its tenant is a claim. In `--insecure-dev-no-auth` no token is asked: the tenant is the `x-tenant-id` header.",
                },
            },
        },
    })
}

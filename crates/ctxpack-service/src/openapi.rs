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

/// The document, as JSON text (built once).
pub fn text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        // The document is built from constants: it always serialises.
        serde_json::to_string_pretty(&document()).unwrap_or_default() + "\n"
    })
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
        "schema": {"type": "string", "minLength": 1, "maxLength": crate::ids::ID_CHARS,
                   "pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"},
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
            "description": "What to pack: the core's request, kebab-case as the core reads it; exactly one JSON object (bytes after it, or an array, are 400).",
            "content": {"application/json": {"schema": schema_ref("AssembleRequest")}},
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
                query_param("after", "The page after this snapshot id (a page's `nextAfter`).", string()),
            ],
            responses(vec![("200", answer("The page; `nextAfter` names the next, `null` at the end.", "SnapshotList"))]),
        )},
        "/factory/context-snapshots/{id}": {"get": operation(
            "getSnapshot",
            "A snapshot: why each item was selected or dropped, a page of its items",
            vec![
                snapshot.clone(),
                query_param("itemsOffset", "The first item of the page (0 when left out).", count()),
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

/// The whole document.
pub fn document() -> Value {
    let mut schemas: Map<String, Value> = serde_json::from_str(CORE_SCHEMAS).unwrap_or_default();
    // A chat's messages cross the WIT as JSON text; in a JSON body they
    // may also be the provider's list or object itself (the core reads
    // either).
    if let Some(messages) = schemas
        .get_mut("Chat")
        .and_then(|c| c.pointer_mut("/properties/messages"))
    {
        messages["type"] = json!(["string", "array", "object"]);
        messages["description"] = json!(
            "The provider's messages: the list (`messages`, `input` or `contents`), or an object holding that list under its name with the system text beside it (`system`, `systemInstruction`, `instructions`), as JSON or as JSON text. A message or part the core does not carry is refused, naming its place."
        );
    }
    schemas.extend(service_schemas());
    json!({
        "openapi": "3.1.0",
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": {
            "title": "ctxpack serve",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The context builder's assembly service: assemble the context for an attempt within an exact token budget, record its snapshot (why every candidate was taken or dropped), and read the snapshots back. The request body is the core's request, kebab-case; the service's own answers are camelCase. Errors are `{\"error\": {\"code\", \"message\"}}`, the message naming the field. See crates/ctxpack-service/README.md.",
            "license": {"name": env!("CARGO_PKG_LICENSE")},
        },
        "paths": paths(),
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

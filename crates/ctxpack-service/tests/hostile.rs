//! Clients the service does not control: tokens from a test issuer (keys
//! made here) that are wrong in each way, on HTTP and gRPC; headers sent
//! twice; slow, idle and too many connections; requests too large to
//! record; retries that are not; a store that is not what was expected;
//! bad protobuf; NUL characters. Each answered as `ctxpack serve`'s README
//! says, nothing recorded that was refused.
//!
//! The store-facing cases run on SQLite, and on PostgreSQL too when
//! `CTXPACK_TEST_POSTGRES` names a server (`CTXPACK_REQUIRE_POSTGRES=1`
//! makes its absence a failure).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::serve;
use ctxpack_service::auth::AuthFile;
use ctxpack_service::client::Client;
use ctxpack_service::grpc::pb;
use ctxpack_service::{Options, Rig, demo_path, start_rigged};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ISSUER: &str = "https://issuer.test/";
const AUDIENCE: &str = "ctxpack";

fn b64url(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// A test issuer: a P-256 key made now, published as a JWKS.
struct Issuer {
    key: EncodingKey,
    jwk: Value,
}

impl Issuer {
    fn new(kid: &str) -> Issuer {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let raw = pair.public_key_raw();
        assert_eq!((raw.len(), raw[0]), (65, 4), "an uncompressed P-256 point");
        Issuer {
            key: EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).unwrap(),
            jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
                        "x": b64url(&raw[1..33]), "y": b64url(&raw[33..])}),
        }
    }

    fn sign(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.into());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Claims of a good token for `tenant` with `scope`, changed by `edit`.
fn claims(tenant: &str, scope: &str, edit: impl FnOnce(&mut Value)) -> Value {
    let mut c = json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": "client-1", "tenant_id": tenant,
        "scope": scope, "iat": now(), "exp": now() + 600,
    });
    edit(&mut c);
    c
}

fn auth_file(dir: &Path, issuer: &Issuer) -> AuthFile {
    let jwks = dir.join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [issuer.jwk]}).to_string()).unwrap();
    AuthFile {
        issuer: Some(ISSUER.into()),
        audience: Some(AUDIENCE.into()),
        jwks_file: Some(jwks),
        ..Default::default()
    }
}

/// The service's options for these tests: gRPC and metrics listeners,
/// authentication as each test gives it.
fn options(store: String) -> Options {
    Options {
        grpc: Some(common::any_port()),
        metrics_listen: Some(common::any_port()),
        no_auth: false,
        ..common::options(store)
    }
}

fn demo() -> Value {
    serde_json::from_str(&std::fs::read_to_string(demo_path("tests/fixture/request.json")).unwrap())
        .unwrap()
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

const ASSEMBLE: &str = "factory.context.assemble factory.runs.read";

/// Every way a token can be wrong is refused, on HTTP and on gRPC; a
/// good one works, and only for its own tenant and scopes; the roles grant
/// what the README's table says.
#[tokio::test(flavor = "multi_thread")]
async fn tokens_wrong_in_any_way_are_refused_on_http_and_grpc() {
    let dir = common::tempdir("hostile-auth");
    let issuer = Issuer::new("k1");
    let stranger = Issuer::new("k1");
    let mut o = options(dir.join("store.db").display().to_string());
    o.auth = Some(auth_file(&dir, &issuer));
    let (running, c) = serve(o).await;
    let good = issuer.sign("k1", &claims("acme", ASSEMBLE, |_| {}));
    let body = serde_json::to_vec(&demo()).unwrap();

    let post = |token: Option<String>, attempt: &'static str| {
        let c = c.clone();
        let body = body.clone();
        async move {
            let h = token.as_deref().map(bearer);
            let headers: Vec<(&str, &str)> =
                h.iter().map(|t| ("authorization", t.as_str())).collect();
            c.request(
                "POST",
                &format!("/factory/runs/r/attempts/{attempt}/context"),
                &headers,
                body,
            )
            .await
            .unwrap()
        }
    };
    let r = post(Some(good.clone()), "1").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["contextSnapshotId"].as_str().unwrap().to_owned();
    assert_eq!(r.json()["tenantId"], "acme");

    let wrong: Vec<(&str, Option<String>, u16, &str)> = vec![
        ("no token", None, 401, "authorization: missing"),
        ("not a JWT", Some("abc.def".into()), 401, "not a JWT"),
        (
            "expired",
            Some(issuer.sign(
                "k1",
                &claims("acme", ASSEMBLE, |c| c["exp"] = json!(now() - 3600)),
            )),
            401,
            "expired",
        ),
        (
            "another audience",
            Some(issuer.sign(
                "k1",
                &claims("acme", ASSEMBLE, |c| c["aud"] = json!("billing")),
            )),
            401,
            "audience",
        ),
        (
            "another issuer",
            Some(issuer.sign(
                "k1",
                &claims("acme", ASSEMBLE, |c| c["iss"] = json!("https://evil.test/")),
            )),
            401,
            "issuer",
        ),
        (
            "signed by another key under the same kid",
            Some(stranger.sign("k1", &claims("acme", ASSEMBLE, |_| {}))),
            401,
            "signature",
        ),
        (
            "a kid the issuer does not have",
            Some(issuer.sign("k9", &claims("acme", ASSEMBLE, |_| {}))),
            401,
            "kid",
        ),
        (
            "HS256, not configured",
            Some(
                jsonwebtoken::encode(
                    &Header::new(Algorithm::HS256),
                    &claims("acme", ASSEMBLE, |_| {}),
                    &EncodingKey::from_secret(&[7; 32]),
                )
                .unwrap(),
            ),
            401,
            "HS256",
        ),
        (
            "no tenant",
            Some(issuer.sign(
                "k1",
                &claims("acme", ASSEMBLE, |c| {
                    c.as_object_mut().unwrap().remove("tenant_id");
                }),
            )),
            403,
            "tenant",
        ),
        (
            "only the read scope",
            Some(issuer.sign("k1", &claims("acme", "factory.runs.read", |_| {}))),
            403,
            "factory.context.assemble",
        ),
    ];
    let mut grpc = pb::context_assembly_client::ContextAssemblyClient::connect(format!(
        "http://{}",
        running.grpc.unwrap()
    ))
    .await
    .unwrap();
    let call = |token: Option<&str>| {
        let mut r = tonic::Request::new(pb::AssembleRequest {
            run_id: "r".into(),
            attempt_id: "g".into(),
            request_json: serde_json::to_string(&demo()).unwrap(),
        });
        if let Some(t) = token {
            r.metadata_mut()
                .insert("authorization", bearer(t).parse().unwrap());
        }
        r
    };
    for (what, token, status, says) in &wrong {
        let r = post(token.clone(), "2").await;
        assert_eq!(r.status, *status, "{what}: {}", r.text());
        assert!(r.text().contains(says), "{what}: {}", r.text());
        if *status == 401 {
            assert!(r.headers.contains_key("www-authenticate"), "{what}");
        }
        let e = grpc.assemble(call(token.as_deref())).await.unwrap_err();
        let code = if *status == 401 {
            tonic::Code::Unauthenticated
        } else {
            tonic::Code::PermissionDenied
        };
        assert_eq!(e.code(), code, "{what} over gRPC: {e:?}");
        assert!(e.message().contains(says), "{what} over gRPC: {e:?}");
    }
    // Nothing refused was recorded.
    assert_eq!(running.service.store.census().await.unwrap().snapshots, 1);
    // The good token works over gRPC too, for its own tenant only.
    let reply = grpc.assemble(call(Some(&good))).await.unwrap().into_inner();
    assert_eq!(reply.status, ["complete"]);
    let mut elsewhere = call(Some(&good));
    elsewhere
        .metadata_mut()
        .insert("x-tenant-id", "globex".parse().unwrap());
    let e = grpc.assemble(elsewhere).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("not the token's tenant"), "{e:?}");

    // Another tenant's token: the snapshot does not exist for it, and an
    // x-tenant-id that is not the token's is refused.
    let other = bearer(&issuer.sign("k1", &claims("globex", ASSEMBLE, |_| {})));
    let path = format!("/factory/context-snapshots/{id}");
    let r = c
        .request("GET", &path, &[("authorization", &other)], Vec::new())
        .await
        .unwrap();
    assert_eq!(r.status, 404, "{}", r.text());
    let r = c
        .request(
            "GET",
            &path,
            &[("authorization", &other), ("x-tenant-id", "acme")],
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 403, "{}", r.text());
    let mine = bearer(&good);
    let r = c
        .request("GET", &path, &[("authorization", &mine)], Vec::new())
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    // x-tenant-id twice (a gateway appending its own) is refused.
    let r = c
        .request(
            "GET",
            &path,
            &[
                ("authorization", &mine),
                ("x-tenant-id", "acme"),
                ("x-tenant-id", "globex"),
            ],
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("more than once"), "{}", r.text());

    // Roles: a Reviewer reads but does not assemble or delete; a
    // WorkspaceAdmin deletes; an Observer reads metrics only.
    let role =
        |r: &str| bearer(&issuer.sign("k1", &claims("acme", "", |c| c["roles"] = json!([r]))));
    let as_role = |role: String, method: &'static str, path: String| {
        let c = c.clone();
        async move {
            c.request(method, &path, &[("authorization", &role)], Vec::new())
                .await
                .unwrap()
                .status
        }
    };
    let deleted = "/factory/sources/s1/deleted".to_owned();
    let assemble = "/factory/runs/r/attempts/9/context".to_owned();
    assert_eq!(as_role(role("Reviewer"), "GET", path.clone()).await, 200);
    assert_eq!(
        as_role(role("Reviewer"), "POST", assemble.clone()).await,
        403
    );
    assert_eq!(
        as_role(role("Reviewer"), "POST", deleted.clone()).await,
        403
    );
    assert_eq!(
        as_role(role("Requester"), "POST", deleted.clone()).await,
        403
    );
    assert_eq!(
        as_role(role("WorkspaceAdmin"), "POST", deleted.clone()).await,
        200
    );
    assert_eq!(as_role(role("Observer"), "GET", path.clone()).await, 403);
    assert_eq!(
        as_role(role("Observer"), "GET", "/metrics".into()).await,
        200
    );
    assert_eq!(
        as_role(role("Reviewer"), "GET", "/metrics".into()).await,
        403
    );
    assert_eq!(as_role(role("Nobody"), "GET", path.clone()).await, 403);
    // /metrics on the main listener asks for a token; its own listener
    // does not. Every answer above is counted by route and status.
    let r = c.request("GET", "/metrics", &[], Vec::new()).await.unwrap();
    assert_eq!(r.status, 401);
    let m = Client::new(format!("http://{}", running.metrics.unwrap()))
        .request("GET", "/metrics", &[], Vec::new())
        .await
        .unwrap();
    assert_eq!(m.status, 200);
    let text = m.text();
    for line in [
        "ctxpack_responses_total{protocol=\"http\",route=\"POST /factory/runs/{run_id}/attempts/{attempt_id}/context\",status=\"401\"} 8",
        "ctxpack_responses_total{protocol=\"http\",route=\"GET /metrics\",status=\"401\"} 1",
        "ctxpack_responses_total{protocol=\"grpc\",route=\"ContextAssembly/Assemble\",status=\"Unauthenticated\"} 8",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
    }
    running.shutdown().await.unwrap();
}

/// Without authentication the service listens on loopback only, and says
/// so; with neither it does not start.
#[tokio::test(flavor = "multi_thread")]
async fn no_authentication_is_a_loopback_development_switch() {
    let dir = common::tempdir("hostile-noauth");
    let mut o = options(dir.join("store.db").display().to_string());
    let e = start_rigged(o.clone(), Rig::scenarios())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("--insecure-dev-no-auth") && e.contains("[auth]"),
        "{e}"
    );
    o.no_auth = true;
    o.http = "0.0.0.0:0".parse().unwrap();
    let e = start_rigged(o.clone(), Rig::scenarios())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("loopback"), "{e}");
}

/// The store-facing hostile requests on one store.
async fn requests_on(store: String) {
    let mut o = options(store);
    o.no_auth = true;
    let (running, c) = serve(o).await;
    let send = |tenant: &'static str, attempt: &'static str, body: Vec<u8>| {
        let c = c.clone();
        async move {
            c.send(
                "POST",
                &format!("/factory/runs/r/attempts/{attempt}/context"),
                Some(tenant),
                body,
            )
            .await
            .unwrap()
        }
    };
    // 100k instructions: refused before anything runs or is recorded.
    let mut v = demo();
    v["instructions"] = json!(vec!["x"; 100_000]);
    let r = send("big", "1", serde_json::to_vec(&v).unwrap()).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text()
            .contains("request.instructions: 100000 given, at most 256")
    );
    // A NUL in any text: refused the same way on both stores.
    let mut v = demo();
    v["query"] = json!("before\u{0}after");
    let r = send("nul", "1", serde_json::to_vec(&v).unwrap()).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("request.query"), "{}", r.text());
    // A megabyte of mismatched tenant is not echoed back.
    let mut v = demo();
    v["context"]["tenant-id"] = json!("t".repeat(1 << 20));
    let r = send("echo", "1", serde_json::to_vec(&v).unwrap()).await;
    assert_eq!(r.status, 400);
    assert!(r.body.len() < 1024, "{} bytes", r.body.len());
    assert_eq!(running.service.store.census().await.unwrap().snapshots, 0);

    // The same request replays; any other for the attempt is 409.
    let body = serde_json::to_vec(&demo()).unwrap();
    assert_eq!(send("idem", "1", body.clone()).await.status, 201);
    let r = send("idem", "1", body.clone()).await;
    assert_eq!((r.status, &r.json()["replayed"]), (200, &json!(true)));
    let mut v = demo();
    v["query"] = json!("another question");
    let r = send("idem", "1", serde_json::to_vec(&v).unwrap()).await;
    assert_eq!(r.status, 409, "{}", r.text());
    let mut v = demo();
    v["context"]["user-id"] = json!("mallory");
    let r = send("idem2", "1", serde_json::to_vec(&demo()).unwrap()).await;
    assert_eq!(r.status, 201);
    let r = send("idem2", "1", serde_json::to_vec(&v).unwrap()).await;
    assert_eq!(
        r.status,
        409,
        "another user is another request: {}",
        r.text()
    );

    // Pagination: three snapshots of a run, two at a time.
    for attempt in ["p1", "p2", "p3"] {
        let r = send("pages", attempt, body.clone()).await;
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let page = |q: String| {
        let c = c.clone();
        async move {
            let r = c.send("GET", &q, Some("pages"), Vec::new()).await.unwrap();
            assert_eq!(r.status, 200, "{}", r.text());
            r.json()
        }
    };
    let first = page("/factory/runs/r/context-snapshots?limit=2".into()).await;
    assert_eq!(first["snapshots"].as_array().unwrap().len(), 2);
    let after = first["nextAfter"].as_str().unwrap();
    let second = page(format!(
        "/factory/runs/r/context-snapshots?limit=2&after={after}"
    ))
    .await;
    assert_eq!(second["snapshots"].as_array().unwrap().len(), 1);
    assert_eq!(second["nextAfter"], Value::Null);
    let id = second["snapshots"][0]["contextSnapshotId"]
        .as_str()
        .unwrap();
    let whole = page(format!("/factory/context-snapshots/{id}")).await;
    let total = whole["itemsTotal"].as_u64().unwrap();
    assert!(total >= 3, "{whole}");
    let part = page(format!(
        "/factory/context-snapshots/{id}?itemsOffset=1&itemsLimit=2"
    ))
    .await;
    assert_eq!(part["items"].as_array().unwrap().len(), 2);
    assert_eq!(part["items"][0], whole["items"][1]);
    let next = if total > 3 { json!(3) } else { Value::Null };
    assert_eq!(part["nextItemsOffset"], next);
    // Ids: 200 characters (not bytes) are an id; 201, a control
    // character or bytes that are not UTF-8 are a JSON 400.
    let e200 = "é".repeat(200);
    for (path, status) in [
        (format!("/factory/runs/{e200}/context-snapshots"), 200),
        (format!("/factory/runs/{e200}x/context-snapshots"), 400),
        ("/factory/runs/a%00b/context-snapshots".to_owned(), 400),
        ("/factory/runs/a%ffb/context-snapshots".to_owned(), 400),
        ("/factory/context-snapshots/a%01b".to_owned(), 400),
    ] {
        let r = c.send("GET", &path, Some("ids"), Vec::new()).await.unwrap();
        assert_eq!(r.status, status, "{path}: {}", r.text());
        if status == 400 {
            assert!(
                r.json()["error"]["message"].is_string(),
                "{path}: {}",
                r.text()
            );
            assert!(r.body.len() < 300, "{path}: {}", r.text());
        }
    }
    let r = c
        .send(
            "GET",
            "/factory/runs/r/context-snapshots?limit=100000",
            Some("limits"),
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());

    // Request ids and trace context: echoed or made, and continued.
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let r = c
        .request(
            "GET",
            "/healthz",
            &[
                ("x-request-id", "req-42"),
                ("traceparent", &format!("00-{trace}-00f067aa0ba902b7-01")),
            ],
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.headers["x-request-id"], "req-42");
    let tp = r.headers["traceparent"].to_str().unwrap();
    assert!(
        tp.starts_with(&format!("00-{trace}-")) && !tp.contains("00f067aa0ba902b7"),
        "{tp}"
    );
    let r = c.request("GET", "/healthz", &[], Vec::new()).await.unwrap();
    assert_eq!(r.headers["x-request-id"].len(), 32);

    // Readiness: the store takes a write.
    let r = c.request("GET", "/readyz", &[], Vec::new()).await.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["store"], "ok");
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_requests_on_sqlite() {
    let dir = common::tempdir("hostile-sqlite");
    requests_on(dir.join("store.db").display().to_string()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_requests_on_postgres() {
    let Some((fresh, admin)) = common::fresh_postgres("hostile").await else {
        return;
    };
    let db = fresh.rsplit_once('/').unwrap().1.to_owned();
    requests_on(fresh.clone()).await;

    // A store that turns read-only: not ready, and writes answer 503 with
    // Retry-After; ready again once it takes writes.
    let mut o = options(fresh.clone());
    o.no_auth = true;
    let (running, c) = serve(o).await;
    let read_only = |on: bool| {
        let sql = format!(
            "ALTER DATABASE {db} SET default_transaction_read_only = {on}; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{db}' AND pid <> pg_backend_pid()"
        );
        let admin = &admin;
        async move { admin.batch_execute(&sql).await.unwrap() }
    };
    read_only(true).await;
    let mut r = c.request("GET", "/readyz", &[], Vec::new()).await.unwrap();
    // (A pooled connection the server closed may say so first.)
    for _ in 0..30 {
        if r.status == 503 && r.text().contains("read-only") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        r = c.request("GET", "/readyz", &[], Vec::new()).await.unwrap();
    }
    not_ready(&c, &r, "read-only", "").await;
    read_only(false).await;
    let mut r = c.request("GET", "/readyz", &[], Vec::new()).await.unwrap();
    for _ in 0..30 {
        if r.status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        r = c.request("GET", "/readyz", &[], Vec::new()).await.unwrap();
    }
    assert_eq!(r.status, 200, "{}", r.text());
    running.shutdown().await.unwrap();

    // sslmode as libpq reads it: the test server speaks TLS (its CA is
    // ca.crt in its data directory).
    let ca: String = admin
        .query_one("SELECT pg_read_file('ca.crt')", &[])
        .await
        .unwrap()
        .get(0);
    let dir = common::tempdir("hostile-pg-tls");
    let ca_file = dir.join("ca.crt");
    std::fs::write(&ca_file, ca).unwrap();
    let other_ca = dir.join("other.crt");
    let other = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    std::fs::write(&other_ca, other.cert.pem()).unwrap();
    let open = |query: String| {
        let fresh = fresh.clone();
        async move { ctxpack_service::open_store(&format!("{fresh}?{query}"), 1, None, false).await }
    };
    for query in [
        "sslmode=require".to_owned(),
        format!("sslmode=verify-ca&sslrootcert={}", ca_file.display()),
        format!("sslmode=verify-full&sslrootcert={}", ca_file.display()),
    ] {
        let store = open(query.clone()).await.unwrap();
        let tls = store
            .count(
                "SELECT COUNT(*) FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl",
                vec![],
            )
            .await
            .unwrap();
        assert_eq!(tls, 1, "{query}: the connection is not TLS");
    }
    let e = open(format!(
        "sslmode=verify-full&sslrootcert={}",
        other_ca.display()
    ))
    .await
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.to_lowercase().contains("certificate") || e.contains("TLS"),
        "{e}"
    );
    let e = open("sslmode=sometimes".into())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("sslmode"), "{e}");
    // A password in a URL that does not parse is not printed.
    let e = ctxpack_service::open_store("postgres://u:hunter2@127.0.0.1:x/db", 1, None, false)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(!e.contains("hunter2") && e.contains("u:***@"), "{e}");
}

/// A tenant past its rate gets 429 with Retry-After, on HTTP and gRPC;
/// another tenant is not held back.
#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_past_its_rate_is_answered_429_with_retry_after() {
    let dir = common::tempdir("hostile-rate");
    let mut o = options(dir.join("store.db").display().to_string());
    o.no_auth = true;
    // One request every 5 s after a burst of 3: the burst is spent long
    // before a token comes back, however slow the machine.
    o.request_limits = Some(ctxpack_service::settings::RequestLimits {
        requests_per_second: 0.2,
        burst: 3,
        ..Default::default()
    });
    let (running, c) = serve(o).await;
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let r = c
            .send(
                "GET",
                "/factory/runs/r/context-snapshots",
                Some("rate"),
                Vec::new(),
            )
            .await
            .unwrap();
        if r.status == 429 {
            assert!(r.headers.contains_key("retry-after"));
        }
        statuses.push(r.status);
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    let r = c
        .send(
            "GET",
            "/factory/runs/r/context-snapshots",
            Some("calm"),
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 200);

    let mut grpc = pb::context_assembly_client::ContextAssemblyClient::connect(format!(
        "http://{}",
        running.grpc.unwrap()
    ))
    .await
    .unwrap();
    let mut r = tonic::Request::new(pb::AssembleRequest {
        run_id: "r".into(),
        attempt_id: "1".into(),
        request_json: serde_json::to_string(&demo()).unwrap(),
    });
    r.metadata_mut()
        .insert("x-tenant-id", "rate".parse().unwrap());
    let e = grpc.assemble(r).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
    assert!(e.metadata().get("retry-after").is_some());
    running.shutdown().await.unwrap();
}

/// `/readyz`'s answer `r` is 503 with Retry-After, its store saying
/// `store_says`, and an assembly is 503 with Retry-After, saying
/// `post_says`.
async fn not_ready(
    c: &Client,
    r: &ctxpack_service::client::Answer,
    store_says: &str,
    post_says: &str,
) {
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.headers.contains_key("retry-after"));
    let store = r.json()["store"].as_str().unwrap().to_owned();
    assert!(store.contains(store_says), "{}", r.text());
    let w = c
        .send(
            "POST",
            "/factory/runs/not-ready/attempts/1/context",
            Some("acme"),
            serde_json::to_vec(&demo()).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(w.status, 503, "{}", w.text());
    assert!(w.headers.contains_key("retry-after"));
    assert!(w.text().contains(post_says), "{}", w.text());
}

/// Reads from `s` until it is closed; how long that took.
async fn closed_within(s: &mut tokio::net::TcpStream, most: Duration) -> Duration {
    let t = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(most, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return t.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("still open after {most:?}"),
        }
    }
}

/// Slow and idle clients are cut at the header timeout; past the cap a new
/// connection is closed at once and the open ones are still served; a
/// client stuck mid-header does not hold the shutdown past its deadline.
#[tokio::test(flavor = "multi_thread")]
async fn slow_idle_and_too_many_connections_do_not_hold_the_service() {
    let dir = common::tempdir("hostile-slow");
    let mut o = options(dir.join("store.db").display().to_string());
    o.no_auth = true;
    o.listen_limits = Some(ctxpack_service::listen::Limits {
        max_connections: 4,
        header_timeout: Duration::from_millis(500),
        body_timeout: Duration::from_millis(500),
        shutdown: Duration::from_millis(500),
        send_timeout: Duration::from_millis(500),
        response_bytes: 8 << 20,
    });
    let (running, c) = serve(o).await;
    let addr = running.http;
    // Mid-header and idle connections are closed at the header timeout.
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    closed_within(&mut slow, Duration::from_secs(5)).await;
    closed_within(&mut idle, Duration::from_secs(5)).await;
    // A body that never finishes: 408.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(
        b"POST /factory/runs/r/attempts/1/context HTTP/1.1\r\nHost: x\r\n\
          x-tenant-id: acme\r\ncontent-length: 100\r\n\r\n{\"query\"",
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    // Four open connections fill the cap: a fifth is closed at once,
    // while the four are served.
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(tokio::net::TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut fifth = tokio::net::TcpStream::connect(addr).await.unwrap();
    let took = closed_within(&mut fifth, Duration::from_millis(400)).await;
    assert!(took < Duration::from_millis(400));
    held[0]
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 256];
    let n = held[0].read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    drop(held);
    // Once they are gone, new connections are served again.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        c.send("GET", "/healthz", None, Vec::new())
            .await
            .unwrap()
            .status,
        200
    );
    // gRPC: idle sockets are closed at the header timeout, and past the
    // cap a new one is closed at once.
    let grpc = running.grpc.unwrap();
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(tokio::net::TcpStream::connect(grpc).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut fifth = tokio::net::TcpStream::connect(grpc).await.unwrap();
    assert!(
        closed_within(&mut fifth, Duration::from_millis(400)).await < Duration::from_millis(400)
    );
    // Half a preface, then nothing: closed too.
    idle[0].write_all(b"PRI * HTTP/2.0").await.unwrap();
    for s in &mut idle {
        closed_within(s, Duration::from_secs(5)).await;
    }
    // A client stuck mid-header at shutdown.
    let mut stuck = tokio::net::TcpStream::connect(addr).await.unwrap();
    stuck.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    let t = Instant::now();
    running.shutdown().await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

/// Clients that ask for large answers and do not read them: each is cut
/// at the send timeout, and while they hold the sending budget another
/// large answer is 503 with Retry-After, not more memory.
#[tokio::test(flavor = "multi_thread")]
async fn clients_that_do_not_read_their_answers_hold_bounded_memory() {
    let dir = common::tempdir("hostile-readers");
    let mut o = options(dir.join("store.db").display().to_string());
    o.no_auth = true;
    o.max_body = 32 << 20;
    o.deadline = Duration::from_secs(60);
    o.listen_limits = Some(ctxpack_service::listen::Limits {
        send_timeout: Duration::from_millis(1000),
        response_bytes: 12 << 20,
        ..Default::default()
    });
    let (running, c) = serve(o).await;
    // An 8 MB answer: more than the socket buffers take.
    let mut v = demo();
    v["instructions"] = json!(vec!["Keep separators strict. ".repeat(1400); 250]);
    v["budget"] = json!(100_000_000);
    let r = c
        .send(
            "POST",
            "/factory/runs/r/attempts/big/context",
            Some("acme"),
            serde_json::to_vec(&v).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["contextSnapshotId"].as_str().unwrap().to_owned();
    let get = format!(
        "GET /factory/context-snapshots/{id}/content HTTP/1.1\r\nHost: x\r\nx-tenant-id: acme\r\n\r\n"
    );
    // One client asks and does not read: it holds 8 of the 12 MB.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(running.http).await.unwrap();
    stalled.write_all(get.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let busy = c
        .send(
            "GET",
            &format!("/factory/context-snapshots/{id}/content"),
            Some("acme"),
            Vec::new(),
        )
        .await
        .unwrap();
    assert_eq!(busy.status, 503, "{} bytes", busy.body.len());
    assert!(busy.headers.contains_key("retry-after"));
    // Small answers are not held back.
    assert_eq!(
        c.send("GET", "/healthz", None, Vec::new())
            .await
            .unwrap()
            .status,
        200
    );
    // The stalled client is cut at the send timeout; then the answer goes.
    let t = Instant::now();
    let answered = loop {
        let r = c
            .send(
                "GET",
                &format!("/factory/context-snapshots/{id}/content"),
                Some("acme"),
                Vec::new(),
            )
            .await
            .unwrap();
        if r.status == 200 {
            break r.body.len();
        }
        assert!(t.elapsed() < Duration::from_secs(10), "never freed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(answered > 8_000_000, "{answered}");
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0;
    loop {
        match stalled.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    assert!(
        got < answered,
        "the stalled client was cut: it got {got} of {answered}"
    );
    running.shutdown().await.unwrap();
}

/// A store that turns corrupt while serving (zeroed pages) is found by
/// readiness's quick check: not ready, and it takes no more writes.
#[tokio::test(flavor = "multi_thread")]
async fn a_store_corrupted_while_serving_is_not_ready_and_takes_no_writes() {
    let dir = common::tempdir("hostile-corrupt");
    let path = dir.join("store.db");
    let mut o = options(path.display().to_string());
    o.no_auth = true;
    // No gRPC: its health service would run the quick check (every 30 s)
    // before the pages are zeroed.
    o.grpc = None;
    let (running, c) = serve(o).await;
    let body = serde_json::to_vec(&demo()).unwrap();
    for i in 0..100 {
        let r = c
            .send(
                "POST",
                &format!("/factory/runs/r/attempts/a{i}/context"),
                Some("acme"),
                body.clone(),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 201);
    }
    // Into the main file, then zeros over forty pages of it.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let pages = std::fs::metadata(&path).unwrap().len() / 4096;
    assert!(pages > 100, "{pages} pages");
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.seek(SeekFrom::Start(pages / 3 * 4096)).unwrap();
        f.write_all(&vec![0u8; 40 * 4096]).unwrap();
    }
    let r = c.request("GET", "/readyz", &[], Vec::new()).await.unwrap();
    not_ready(&c, &r, "malformed", "corrupt").await;
    running.shutdown().await.unwrap();
    // And it is refused at the next start.
    let mut o = options(path.display().to_string());
    o.no_auth = true;
    let e = start_rigged(o, Rig::scenarios())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("integrity check"), "{e}");
}

/// A store file that is empty or not a store is refused unless told to
/// initialise; a new path is a new store.
#[tokio::test(flavor = "multi_thread")]
async fn a_store_that_is_not_what_was_expected_is_refused() {
    let dir = common::tempdir("hostile-store");
    let empty = dir.join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let mut o = options(empty.display().to_string());
    o.no_auth = true;
    o.metrics_listen = None;
    let e = start_rigged(o.clone(), Rig::scenarios())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("empty (0 bytes)") && e.contains("--init-store"),
        "{e}"
    );
    let garbage = dir.join("garbage.db");
    std::fs::write(&garbage, vec![0x5a; 8192]).unwrap();
    let mut g = o.clone();
    g.store = garbage.display().to_string();
    let e = start_rigged(g, Rig::scenarios())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("garbage.db"), "{e}");
    let foreign = dir.join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER)")
        .unwrap();
    let mut f = o.clone();
    f.store = foreign.display().to_string();
    let e = start_rigged(f.clone(), Rig::scenarios())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no ctxpack store"), "{e}");
    f.init_store = true;
    start_rigged(f, Rig::scenarios())
        .await
        .unwrap()
        .shutdown()
        .await
        .unwrap();
    o.init_store = true;
    start_rigged(o, Rig::scenarios())
        .await
        .unwrap()
        .shutdown()
        .await
        .unwrap();
}

/// A message that does not decode is the client's error, and gRPC health
/// follows readiness.
#[tokio::test(flavor = "multi_thread")]
async fn grpc_bad_protobuf_is_invalid_argument_and_health_is_served() {
    #[derive(Clone, PartialEq, prost::Message)]
    struct Wrong {
        #[prost(uint64, tag = "1")]
        run_id: u64,
    }
    let dir = common::tempdir("hostile-grpc");
    let mut o = options(dir.join("store.db").display().to_string());
    o.no_auth = true;
    let (running, _) = serve(o).await;
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://{}", running.grpc.unwrap()))
            .unwrap()
            .connect()
            .await
            .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.unwrap();
    let mut req = tonic::Request::new(Wrong { run_id: 7 });
    req.metadata_mut()
        .insert("x-tenant-id", "acme".parse().unwrap());
    let e = grpc
        .unary::<_, pb::AssembleReply, _>(
            req,
            "/ctxpack.assembly.v1.ContextAssembly/Assemble"
                .parse()
                .unwrap(),
            tonic_prost::ProstCodec::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let mut serving = false;
    for _ in 0..50 {
        let r = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "ctxpack.assembly.v1.ContextAssembly".into(),
            })
            .await;
        if let Ok(r) = r
            && r.into_inner().status == 1
        {
            serving = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(serving, "health never said SERVING");
    running.shutdown().await.unwrap();
}

/// With `[tls]`, HTTP is HTTPS and gRPC is over TLS on the same
/// certificate; a plain client gets no answer.
#[tokio::test(flavor = "multi_thread")]
async fn the_listeners_serve_tls() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert_pem, key_pem) = (cert.cert.pem(), cert.signing_key.serialize_pem());
    let dir = common::tempdir("hostile-tls");
    let mut o = options(dir.join("store.db").display().to_string());
    o.no_auth = true;
    o.tls = Some(ctxpack_service::listen::ServerTls {
        cert: cert_pem.clone().into_bytes(),
        key: key_pem.into_bytes(),
    });
    let running = start_rigged(o, Rig::scenarios()).await.unwrap();

    // HTTPS, the certificate checked against itself.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(running.http).await.unwrap();
    let mut tls = connector
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tls.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Plain HTTP to the TLS port: no answer.
    let plain = Client::new(format!("http://{}", running.http))
        .send("GET", "/healthz", None, Vec::new())
        .await;
    assert!(plain.is_err() || plain.unwrap().status != 200);

    // gRPC over TLS: the health service answers.
    let channel =
        tonic::transport::Endpoint::from_shared(format!("https://{}", running.grpc.unwrap()))
            .unwrap()
            .tls_config(
                tonic::transport::ClientTlsConfig::new()
                    .ca_certificate(tonic::transport::Certificate::from_pem(&cert_pem))
                    .domain_name("localhost"),
            )
            .unwrap()
            .connect()
            .await
            .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    health
        .check(tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap();
    running.shutdown().await.unwrap();
}

/// An RS256 issuer, its 2048-bit key made by `openssl` now (ring makes no
/// RSA keys); none without `openssl` on the PATH.
fn rsa_issuer(dir: &Path, kid: &str) -> Option<(EncodingKey, Value)> {
    let key = dir.join(format!("{kid}.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(&key)
        .output()
        .ok()?;
    assert!(made.status.success(), "{made:?}");
    let modulus = std::process::Command::new("openssl")
        .args(["rsa", "-noout", "-modulus", "-in"])
        .arg(&key)
        .output()
        .unwrap();
    let hex = String::from_utf8(modulus.stdout).unwrap();
    let hex = hex.trim().trim_start_matches("Modulus=");
    let n: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let pem = std::fs::read(&key).unwrap();
    Some((
        EncodingKey::from_rsa_pem(&pem).unwrap(),
        json!({"kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig", "n": b64url(&n), "e": "AQAB"}),
    ))
}

/// RS256 tokens verify against an RSA key of the JWKS; one signed by
/// another RSA key under the same kid does not.
#[tokio::test(flavor = "multi_thread")]
async fn rs256_tokens_verify_against_the_issuers_rsa_key() {
    let dir = common::tempdir("hostile-rsa");
    let Some((key, jwk)) = rsa_issuer(&dir, "r1") else {
        eprintln!("openssl is not on the PATH: RS256 not tested");
        return;
    };
    let (other, _) = rsa_issuer(&dir, "r2").unwrap();
    let jwks = dir.join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [jwk]}).to_string()).unwrap();
    let mut o = options(dir.join("store.db").display().to_string());
    o.auth = Some(AuthFile {
        issuer: Some(ISSUER.into()),
        audience: Some(AUDIENCE.into()),
        jwks_file: Some(jwks),
        ..Default::default()
    });
    let (running, c) = serve(o).await;
    let sign = |key: &EncodingKey| {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some("r1".into());
        bearer(
            &jsonwebtoken::encode(&header, &claims("acme", "factory.runs.read", |_| {}), key)
                .unwrap(),
        )
    };
    let read = |token: String| {
        let c = c.clone();
        async move {
            c.request(
                "GET",
                "/factory/runs/r/context-snapshots",
                &[("authorization", &token)],
                Vec::new(),
            )
            .await
            .unwrap()
        }
    };
    assert_eq!(read(sign(&key)).await.status, 200);
    let r = read(sign(&other)).await;
    assert_eq!(r.status, 401);
    assert!(r.text().contains("signature"), "{}", r.text());
    running.shutdown().await.unwrap();
}

/// Keys from a JWKS URL: a key rotated in is found on its first token;
/// HS256 only with a development secret; `[auth]` without its issuer is
/// refused at start.
#[tokio::test(flavor = "multi_thread")]
async fn jwks_from_a_url_follows_rotation_and_hs256_is_for_development() {
    let first = Issuer::new("k1");
    let second = Issuer::new("k2");
    let jwks = std::sync::Arc::new(std::sync::Mutex::new(json!({"keys": [first.jwk]})));
    let served = jwks.clone();
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let served = served.clone();
            async move { served.lock().unwrap().to_string() }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer_addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let dir = common::tempdir("hostile-jwks");
    let secret = dir.join("dev.secret");
    std::fs::write(&secret, [b'k'; 40]).unwrap();
    let mut o = options(dir.join("store.db").display().to_string());
    o.auth = Some(AuthFile {
        issuer: Some(ISSUER.into()),
        audience: Some(AUDIENCE.into()),
        jwks_url: Some(format!("http://{issuer_addr}/jwks.json")),
        hs256_secret_file: Some(secret),
        ..Default::default()
    });
    let (running, c) = serve(o.clone()).await;
    let read = |token: String| {
        let c = c.clone();
        async move {
            c.request(
                "GET",
                "/factory/runs/r/context-snapshots",
                &[("authorization", &bearer(&token))],
                Vec::new(),
            )
            .await
            .unwrap()
        }
    };
    let scope = "factory.runs.read";
    assert_eq!(
        read(first.sign("k1", &claims("acme", scope, |_| {})))
            .await
            .status,
        200
    );
    // The issuer rotates in k2.
    *jwks.lock().unwrap() = json!({"keys": [first.jwk, second.jwk]});
    tokio::time::sleep(ctxpack_service::auth::REFETCH + Duration::from_millis(200)).await;
    let r = read(second.sign("k2", &claims("acme", scope, |_| {}))).await;
    assert_eq!(r.status, 200, "{}", r.text());
    // HS256 with the development secret.
    let hs = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims("acme", scope, |_| {}),
        &EncodingKey::from_secret(&[b'k'; 40]),
    )
    .unwrap();
    assert_eq!(read(hs).await.status, 200);
    running.shutdown().await.unwrap();
    // [auth] without its issuer.
    let mut bad = o;
    bad.auth.as_mut().unwrap().issuer = None;
    let e = start_rigged(bad, Rig::scenarios())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("auth.issuer: required"), "{e}");
}

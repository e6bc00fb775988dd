//! Callers checked: tokens from a test issuer (keys made here) that are
//! wrong in each way are refused on HTTP and gRPC, a good one works only
//! for its own tenant and scopes, the roles grant what the README's table
//! says; RS256 keys, a JWKS URL whose keys rotate, HS256 for development
//! only; and no authentication only on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::full_options as options;
use common::{demo, get_with, refusal, serve};
use ctxpack_service::auth::AuthFile;
use ctxpack_service::client::{Answer, Client};
use ctxpack_service::grpc::pb;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

    /// A token of this header's and these claims' text, as written (a
    /// JSON value cannot name a key twice).
    fn sign_text(&self, header: &str, claims: &str) -> String {
        let signed = format!(
            "{}.{}",
            b64url(header.as_bytes()),
            b64url(claims.as_bytes())
        );
        let signature =
            jsonwebtoken::crypto::sign(signed.as_bytes(), &self.key, Algorithm::ES256).unwrap();
        format!("{signed}.{signature}")
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
        // The data scopes the bundled request names.
        "data_scopes": ["repo:ctx", "mem:dev-3"],
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

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// `GET` run `r`'s snapshot list on `c` with the bearer `token`: the answer.
async fn read_runs(c: &Client, token: &str) -> Answer {
    get_with(
        c,
        "/factory/runs/r/context-snapshots",
        &[("authorization", &bearer(token))],
    )
    .await
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

    let wrong: Vec<(&str, Option<String>, u16, &str)> =
        vec![
        ("no token", None, 401, "authorization: missing"),
        ("not a JWT", Some("abc.def".into()), 401, "not a JWT"),
        (
            "a claim named twice (the last for a lenient parser)",
            Some(issuer.sign_text(
                r#"{"alg":"ES256","typ":"JWT","kid":"k1"}"#,
                &claims("acme", ASSEMBLE, |_| {})
                    .to_string()
                    .replacen('{', r#"{"tenant_id":"globex","#, 1),
            )),
            401,
            "names the claim",
        ),
        (
            "a critical extension",
            Some(issuer.sign_text(
                r#"{"alg":"ES256","typ":"JWT","kid":"k1","crit":["exp-policy"],"exp-policy":1}"#,
                &claims("acme", ASSEMBLE, |_| {}).to_string(),
            )),
            401,
            "critical extensions (crit)",
        ),
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
    assert_eq!(reply.status, ["truncated"]);
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
    let r = get_with(&c, &path, &[("authorization", &other)]).await;
    assert_eq!(r.status, 404, "{}", r.text());
    let r = get_with(
        &c,
        &path,
        &[("authorization", &other), ("x-tenant-id", "acme")],
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.text());
    let mine = bearer(&good);
    let r = get_with(&c, &path, &[("authorization", &mine)]).await;
    assert_eq!(r.status, 200, "{}", r.text());
    // x-tenant-id twice (a gateway appending its own) is refused.
    let r = get_with(
        &c,
        &path,
        &[
            ("authorization", &mine),
            ("x-tenant-id", "acme"),
            ("x-tenant-id", "globex"),
        ],
    )
    .await;
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
    let deleted = "/factory/sources/s1/deleted";
    let assemble = "/factory/runs/r/attempts/9/context";
    for (who, method, at, want) in [
        ("Reviewer", "GET", path.as_str(), 200),
        ("Reviewer", "POST", assemble, 403),
        ("Reviewer", "POST", deleted, 403),
        ("Requester", "POST", deleted, 403),
        ("WorkspaceAdmin", "POST", deleted, 200),
        ("Observer", "GET", path.as_str(), 403),
        ("Observer", "GET", "/metrics", 200),
        ("Reviewer", "GET", "/metrics", 403),
        ("Nobody", "GET", path.as_str(), 403),
    ] {
        assert_eq!(
            as_role(role(who), method, at.to_owned()).await,
            want,
            "{who} {method} {at}"
        );
    }
    // /metrics on the main listener asks for a token; its own listener
    // does not. Every answer above is counted by route and status.
    let r = get_with(&c, "/metrics", &[]).await;
    assert_eq!(r.status, 401);
    common::openapi::hold_answers();
    let metrics = Client::new(format!("http://{}", running.metrics.unwrap()));
    let m = get_with(&metrics, "/metrics", &[]).await;
    assert_eq!(m.status, 200);
    let text = m.text();
    for line in [
        "ctxpack_responses_total{protocol=\"http\",route=\"POST /factory/runs/{run_id}/attempts/{attempt_id}/context\",status=\"401\"} 10",
        "ctxpack_responses_total{protocol=\"http\",route=\"GET /metrics\",status=\"401\"} 1",
        "ctxpack_responses_total{protocol=\"grpc\",route=\"ContextAssembly/Assemble\",status=\"Unauthenticated\"} 10",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
    }
    // A method a client makes up is counted, and logged, as `OTHER`,
    // whatever it is: no client grows the metrics.
    for i in 0..50 {
        let made_up = format!("BREW{i}{}", "X".repeat(i * 200));
        let r = c
            .request(&made_up, "/healthz", &[], Vec::new())
            .await
            .unwrap();
        assert!(r.status >= 400, "{made_up}: {}", r.status);
    }
    let after = get_with(&metrics, "/metrics", &[]).await.text();
    assert!(!after.contains("BREW"), "{after}");
    let other: Vec<&str> = after
        .lines()
        .filter(|l| l.starts_with("ctxpack_responses_total{protocol=\"http\",route=\"OTHER "))
        .collect();
    assert_eq!(other.len(), 1, "{after}");
    assert!(other[0].ends_with(" 50"), "{}", other[0]);
    assert!(
        after.len() < text.len() + 200,
        "{} then {}",
        text.len(),
        after.len()
    );
    running.shutdown().await.unwrap();
}

/// A request's `context.scopes` are bounded by the token: each must be
/// among the data scopes its `data_scopes` claim lists (a list, or a
/// string of them space separated); a token without the claim may name
/// none. Refused 403 on HTTP and PERMISSION_DENIED on gRPC, naming the
/// scope, nothing recorded.
#[tokio::test(flavor = "multi_thread")]
async fn the_scopes_a_request_names_are_bounded_by_its_token() {
    let dir = common::tempdir("scopes-bound");
    let issuer = Issuer::new("k1");
    let mut o = options(dir.join("store.db").display().to_string());
    o.auth = Some(auth_file(&dir, &issuer));
    let (running, c) = serve(o).await;
    let token = |data: Option<Value>| {
        bearer(&issuer.sign(
            "k1",
            &claims("acme", ASSEMBLE, |c| match data {
                Some(d) => c["data_scopes"] = d,
                None => {
                    c.as_object_mut().unwrap().remove("data_scopes");
                }
            }),
        ))
    };
    let post = |token: String, body: Value, attempt: &'static str| {
        let c = c.clone();
        async move {
            c.request(
                "POST",
                &format!("/factory/runs/r/attempts/{attempt}/context"),
                &[
                    ("authorization", &token),
                    ("content-type", "application/json"),
                ],
                serde_json::to_vec(&body).unwrap(),
            )
            .await
            .unwrap()
        }
    };
    // Another tenant's scope, asked by a token of acme: refused.
    let mut globex = demo();
    globex["context"]["scopes"] = json!(["tenant:globex"]);
    let r = post(token(Some(json!(["repo:ctx"]))), globex, "1").await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json()["error"]["message"],
        "request.context.scopes[0]: \"tenant:globex\" is not among the token's data scopes (data_scopes claim)"
    );
    // One of two not listed: named.
    let r = post(token(Some(json!(["repo:ctx"]))), demo(), "2").await;
    assert_eq!(r.status, 403, "{}", r.text());
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("request.context.scopes[1]: \"mem:dev-3\""),
        "{message}"
    );
    // No claim: no scope may be named; a request naming none is served.
    let r = post(token(None), demo(), "3").await;
    assert_eq!(r.status, 403, "{}", r.text());
    let mut none = demo();
    none["context"]["scopes"] = json!([]);
    let r = post(token(None), none, "4").await;
    assert_eq!(r.status, 201, "{}", r.text());
    // Both listed, as a list or as a string: served.
    let r = post(token(Some(json!(["repo:ctx", "mem:dev-3"]))), demo(), "5").await;
    assert_eq!(r.status, 201, "{}", r.text());
    let r = post(token(Some(json!("mem:dev-3 repo:ctx"))), demo(), "6").await;
    assert_eq!(r.status, 201, "{}", r.text());
    // A claim of another type is a bad token.
    let r = post(token(Some(json!(7))), demo(), "7").await;
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(r.text().contains("data_scopes claim"), "{}", r.text());
    // gRPC the same.
    let mut grpc = pb::context_assembly_client::ContextAssemblyClient::connect(format!(
        "http://{}",
        running.grpc.unwrap()
    ))
    .await
    .unwrap();
    let mut r = tonic::Request::new(pb::AssembleRequest {
        run_id: "r".into(),
        attempt_id: "8".into(),
        request_json: serde_json::to_string(&demo()).unwrap(),
    });
    r.metadata_mut().insert(
        "authorization",
        token(Some(json!(["repo:ctx"]))).parse().unwrap(),
    );
    let e = grpc.assemble(r).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("mem:dev-3"), "{e:?}");
    let census = running.service.store.census().await.unwrap();
    assert_eq!(census.snapshots, 3);
    running.shutdown().await.unwrap();
}

/// Without authentication the service listens on loopback only, and says
/// so; with neither it does not start.
#[tokio::test(flavor = "multi_thread")]
async fn no_authentication_is_a_loopback_development_switch() {
    let dir = common::tempdir("hostile-noauth");
    let mut o = options(dir.join("store.db").display().to_string());
    let e = refusal(o.clone()).await;
    assert!(
        e.contains("--insecure-dev-no-auth") && e.contains("[auth]"),
        "{e}"
    );
    o.no_auth = true;
    o.http = "0.0.0.0:0".parse().unwrap();
    let e = refusal(o.clone()).await;
    assert!(e.contains("loopback"), "{e}");
    // On loopback it answers a loopback Host only: a page whose name a DNS
    // answer points at 127.0.0.1 (DNS rebinding) is turned away.
    o.http = "127.0.0.1:0".parse().unwrap();
    let (running, c) = serve(o).await;
    for (host, status) in [
        ("evil.example", 421),
        ("evil.example:8080", 421),
        ("127.0.0.1.nip.io", 421),
        ("localhost", 200),
        ("LOCALHOST:9", 200),
        ("127.0.0.1:1234", 200),
        ("[::1]:80", 200),
    ] {
        let r = c
            .request("GET", "/healthz", &[("host", host)], Vec::new())
            .await
            .unwrap();
        assert_eq!(r.status, status, "{host}: {}", r.text());
    }
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
        jsonwebtoken::encode(&header, &claims("acme", "factory.runs.read", |_| {}), key).unwrap()
    };
    assert_eq!(read_runs(&c, &sign(&key)).await.status, 200);
    let r = read_runs(&c, &sign(&other)).await;
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
    let scope = "factory.runs.read";
    let token = first.sign("k1", &claims("acme", scope, |_| {}));
    assert_eq!(read_runs(&c, &token).await.status, 200);
    // The issuer rotates in k2.
    *jwks.lock().unwrap() = json!({"keys": [first.jwk, second.jwk]});
    tokio::time::sleep(ctxpack_service::auth::REFETCH + Duration::from_millis(200)).await;
    let r = read_runs(&c, &second.sign("k2", &claims("acme", scope, |_| {}))).await;
    assert_eq!(r.status, 200, "{}", r.text());
    // HS256 with the development secret.
    let hs = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims("acme", scope, |_| {}),
        &EncodingKey::from_secret(&[b'k'; 40]),
    )
    .unwrap();
    assert_eq!(read_runs(&c, &hs).await.status, 200);
    running.shutdown().await.unwrap();
    // [auth] without its issuer.
    let mut bad = o;
    bad.auth.as_mut().unwrap().issuer = None;
    let e = refusal(bad).await;
    assert!(e.contains("auth.issuer: required"), "{e}");
}

/// `ctxpack-load --tokens FILE` loads a service that checks tokens: each
/// client sends one of the file's bearer tokens, its tenant the token's.
#[tokio::test(flavor = "multi_thread")]
async fn the_load_tool_sends_bearer_tokens() {
    let dir = common::tempdir("load-tokens");
    let issuer = Issuer::new("k1");
    let mut o = options(dir.join("store.db").display().to_string());
    o.auth = Some(auth_file(&dir, &issuer));
    let (running, _c) = serve(o).await;
    let tokens = dir.join("tokens");
    let lines: Vec<String> = ["acme", "globex"]
        .iter()
        .map(|t| issuer.sign("k1", &claims(t, ASSEMBLE, |_| {})))
        .collect();
    std::fs::write(&tokens, lines.join("\n") + "\n").unwrap();
    let url = format!("http://{}", running.http);
    let load = |args: Vec<String>| {
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_ctxpack-load"))
                .args(args)
                .output()
                .unwrap()
        })
    };
    let tokens = tokens.display().to_string();
    let out = load(
        [
            "--url",
            &url,
            "--clients",
            "2",
            "--seconds",
            "1.5",
            "--tokens",
            &tokens,
        ]
        .map(String::from)
        .to_vec(),
    )
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by_status = summary["byStatus"].as_object().unwrap();
    assert_eq!(by_status.keys().collect::<Vec<_>>(), ["201"], "{summary}");
    // Accepted, so each request carried a token (without one, 401).
    assert!(summary["acknowledged"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(summary["acknowledged"], by_status["201"], "{summary}");
    // A file with no token is refused, saying so.
    let empty = dir.join("empty");
    std::fs::write(&empty, "\n").unwrap();
    let empty = empty.display().to_string();
    let out = load(
        ["--url", &url, "--tokens", &empty]
            .map(String::from)
            .to_vec(),
    )
    .await
    .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no token in it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    running.shutdown().await.unwrap();
}

/// `/metrics` on the main listener shows a tenant role its own tenant's
/// series alone, and every tenant's only to the platform's role.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_show_a_tenant_its_own_series_and_the_platform_all() {
    let dir = common::tempdir("metrics-tenants");
    let issuer = Issuer::new("k1");
    let mut o = options(dir.join("store.db").display().to_string());
    o.auth = Some(auth_file(&dir, &issuer));
    let (running, c) = serve(o).await;
    let as_role = |tenant: &str, role: &str| {
        bearer(&issuer.sign(
            "k1",
            &claims(tenant, ASSEMBLE, |c| c["roles"] = json!([role])),
        ))
    };
    for tenant in ["acme", "globex"] {
        let r = c
            .request(
                "POST",
                "/factory/runs/r/attempts/1/context",
                &[("authorization", &as_role(tenant, "Requester"))],
                serde_json::to_vec(&demo()).unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let metrics = |token: String| {
        let c = c.clone();
        async move {
            let r = get_with(&c, "/metrics", &[("authorization", &token)]).await;
            assert_eq!(r.status, 200, "{}", r.text());
            r.text()
        }
    };
    for role in ["Observer", "Operator"] {
        let text = metrics(as_role("acme", role)).await;
        assert!(
            text.contains("ctxpack_context_assemblies_total{tenant=\"acme\""),
            "{role}: {text}"
        );
        assert!(!text.contains("globex"), "{role}: {text}");
        // Service-wide series sum every tenant's traffic: not shown.
        assert!(!text.contains("ctxpack_responses_total"), "{role}: {text}");
        assert!(
            text.contains("# TYPE ctxpack_context_assembly_latency_seconds histogram"),
            "{text}"
        );
    }
    let all = metrics(as_role("acme", "PlatformAdmin")).await;
    for want in [
        "tenant=\"acme\"",
        "tenant=\"globex\"",
        "ctxpack_responses_total",
    ] {
        assert!(all.contains(want), "{want}: {all}");
    }
    running.shutdown().await.unwrap();
}

/// On `SIGHUP` (`Service::reload`) the `jwks-file` is read again, so a
/// rotated key is taken without a restart; any other change to `[auth]`
/// is not applied (and said, loudly, in the log): who may call does not
/// change under the callers.
#[tokio::test(flavor = "multi_thread")]
async fn a_rotated_jwks_file_is_read_again_on_reload() {
    let dir = common::tempdir("auth-reload");
    let (old, new) = (Issuer::new("k1"), Issuer::new("k2"));
    let jwks = dir.join("jwks.json");
    let write_jwks = |issuer: &Issuer| {
        std::fs::write(&jwks, json!({"keys": [issuer.jwk]}).to_string()).unwrap();
    };
    write_jwks(&old);
    let config = dir.join("ctxpack.toml");
    let auth_toml = |issuer: &str| {
        format!(
            "[auth]\nissuer = \"{issuer}\"\naudience = \"{AUDIENCE}\"\njwks-file = \"{}\"\n",
            jwks.display()
        )
    };
    std::fs::write(&config, auth_toml(ISSUER)).unwrap();
    let mut o = options(dir.join("store.db").display().to_string());
    o.config = Some(config.clone());
    let (running, c) = serve(o).await;
    let by = |issuer: &Issuer, kid: &str| issuer.sign(kid, &claims("acme", ASSEMBLE, |_| {}));
    assert_eq!(read_runs(&c, &by(&old, "k1")).await.status, 200);
    assert_eq!(read_runs(&c, &by(&new, "k2")).await.status, 401);

    // The issuer rotates its key: read again on reload.
    write_jwks(&new);
    running.service.reload().await.unwrap();
    assert_eq!(read_runs(&c, &by(&new, "k2")).await.status, 200);
    assert_eq!(read_runs(&c, &by(&old, "k1")).await.status, 401);

    // A JWKS file broken mid-rotation leaves the keys in use.
    std::fs::write(&jwks, "{not json").unwrap();
    running.service.reload().await.unwrap();
    assert_eq!(read_runs(&c, &by(&new, "k2")).await.status, 200);

    // Another issuer is not applied: tokens of the one it started with
    // still verify, and another's do not.
    write_jwks(&new);
    std::fs::write(&config, auth_toml("https://other.test/")).unwrap();
    running.service.reload().await.unwrap();
    assert_eq!(read_runs(&c, &by(&new, "k2")).await.status, 200);
    running.shutdown().await.unwrap();
}

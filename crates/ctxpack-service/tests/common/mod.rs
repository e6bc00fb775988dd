//! Helpers the service's test files share: temporary directories and
//! databases, the options a test service starts with, starting it, the
//! bundled request, and sending it requests (`get`, `post`, `post_json`,
//! `get_with`, `assemble_demo`). The test stores the upstream tests call
//! are in `stores`.

#[allow(dead_code)]
pub mod stores;

/// Answers held to the API description.
pub mod openapi;

use ctxpack_service::client::{Answer, Client};
use ctxpack_service::snapshots::Store;
use ctxpack_service::{Options, Rig, Running, demo_path, start_rigged};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

#[allow(dead_code)]
static N: AtomicU32 = AtomicU32::new(0);

/// A fresh, empty directory of this test process, named for `what`.
#[allow(dead_code)]
pub fn tempdir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ctxpack-{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    #[allow(clippy::unwrap_used)]
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh PostgreSQL database named for `what` on the server
/// `CTXPACK_TEST_POSTGRES` names, its URL and a client of that server; none
/// when it is unset (with `CTXPACK_REQUIRE_POSTGRES`, as `.ci/run` sets, its
/// absence fails the test).
#[allow(dead_code, clippy::unwrap_used)]
pub async fn fresh_postgres(what: &str) -> Option<(String, tokio_postgres::Client)> {
    let Ok(url) = std::env::var("CTXPACK_TEST_POSTGRES") else {
        assert!(
            std::env::var("CTXPACK_REQUIRE_POSTGRES").is_err(),
            "CTXPACK_REQUIRE_POSTGRES is set but CTXPACK_TEST_POSTGRES is not"
        );
        eprintln!("CTXPACK_TEST_POSTGRES unset: not run");
        return None;
    };
    let (admin, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let db = format!("ctxpack_{what}_{}", std::process::id());
    for sql in [
        format!("DROP DATABASE IF EXISTS {db}"),
        format!("CREATE DATABASE {db}"),
    ] {
        admin.batch_execute(&sql).await.unwrap();
    }
    Some((format!("{}/{db}", url.rsplit_once('/').unwrap().0), admin))
}

/// An artifact store of its own, named for `what`, in the S3-compatible
/// server `CTXPACK_TEST_S3` names (the URL `crates/ctxpack-service/s3`
/// prints; its key pair in `AWS_ACCESS_KEY_ID` and
/// `AWS_SECRET_ACCESS_KEY`); none when it is unset (with
/// `CTXPACK_REQUIRE_S3`, as `.ci/run` sets, its absence fails the test).
#[allow(dead_code)]
pub fn fresh_s3(what: &str) -> Option<String> {
    let Ok(url) = std::env::var("CTXPACK_TEST_S3") else {
        assert!(
            std::env::var("CTXPACK_REQUIRE_S3").is_err(),
            "CTXPACK_REQUIRE_S3 is set but CTXPACK_TEST_S3 is not"
        );
        eprintln!("CTXPACK_TEST_S3 unset: not run");
        return None;
    };
    let (bucket, query) = url.split_once('?').unwrap_or((&url, ""));
    let n = N.fetch_add(1, Ordering::Relaxed);
    Some(format!(
        "{bucket}/{what}-{}-{n}?{query}",
        std::process::id()
    ))
}

/// The Redis server `CTXPACK_TEST_REDIS` names (the URL
/// `crates/ctxpack-service/redis` prints), and a name no other run's keys
/// use, for `what`; none when it is unset (with `CTXPACK_REQUIRE_REDIS`,
/// as `.ci/run` sets, its absence fails the test).
#[allow(dead_code)]
pub fn fresh_redis(what: &str) -> Option<(String, String)> {
    let Ok(url) = std::env::var("CTXPACK_TEST_REDIS") else {
        assert!(
            std::env::var("CTXPACK_REQUIRE_REDIS").is_err(),
            "CTXPACK_REQUIRE_REDIS is set but CTXPACK_TEST_REDIS is not"
        );
        eprintln!("CTXPACK_TEST_REDIS unset: not run");
        return None;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    Some((url, format!("{what}-{}-{nanos}", std::process::id())))
}

/// Why the store `spec` with the artifact store `artifacts` does not
/// open: its error, as text. It opening fails the test.
#[allow(dead_code)]
pub async fn store_refusal(spec: &str, artifacts: Option<&str>) -> String {
    match ctxpack_service::open_store(spec, artifacts, 1, None, false).await {
        Ok(_) => panic!("the store {spec} opened, and should not have"),
        Err(e) => e.to_string(),
    }
}

/// Drops the database [`fresh_postgres`] made at `url`, with `admin`, its
/// server's client.
#[allow(dead_code, clippy::unwrap_used)]
pub async fn drop_postgres(admin: &tokio_postgres::Client, url: &str) {
    admin
        .batch_execute(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            url.rsplit_once('/').unwrap().1
        ))
        .await
        .unwrap();
}

/// What `sql`, a `SELECT COUNT(*)` with no parameters, counts in `store`.
#[allow(dead_code, clippy::unwrap_used)]
pub async fn count(store: &Store, sql: &'static str) -> u64 {
    store.count(sql, vec![]).await.unwrap()
}

/// A test service's options: HTTP on a free loopback port, no gRPC, two
/// instances, the fixture's settings file (`tests/fixture/ctxpack.toml`),
/// the store `store`, no authentication.
#[allow(dead_code, clippy::unwrap_used)]
pub fn options(store: String) -> Options {
    Options {
        http: "127.0.0.1:0".parse().unwrap(),
        grpc: None,
        // A PostgreSQL store's artifact store: a directory of its own.
        // A PostgreSQL store's artifact store: a directory named for its
        // database, the same each time the test starts a service on it.
        artifacts: store.starts_with("postgres").then(|| {
            let db = store.rsplit('/').next().unwrap_or("store");
            std::env::temp_dir()
                .join(format!("ctxpack-artifacts-{db}"))
                .display()
                .to_string()
        }),
        store,
        instances: 2,
        config: Some(demo_path("tests/fixture/ctxpack.toml")),
        no_auth: true,
        ..Options::default()
    }
}

/// Why the service does not start with `o` on the scenario fixture: its
/// error, as text. It starting fails the test.
#[allow(dead_code)]
pub async fn refusal(o: Options) -> String {
    match start_rigged(o, Rig::scenarios()).await {
        Ok(_) => panic!("the service started, and should not have"),
        Err(e) => e.to_string(),
    }
}

/// A free loopback port, for a listener the test asks for.
#[allow(dead_code, clippy::unwrap_used)]
pub fn any_port() -> std::net::SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// The service started with `o` on `rig`, and a client of its HTTP
/// listener.
#[allow(dead_code, clippy::unwrap_used)]
pub async fn serve_on(o: Options, rig: Rig) -> (Running, Client) {
    openapi::hold_answers();
    let running = start_rigged(o, rig).await.unwrap();
    let client = Client::new(format!("http://{}", running.http));
    (running, client)
}

/// The service started with `o` on the scenario fixture
/// ([`Rig::scenarios`]), and a client of its HTTP listener.
#[allow(dead_code)]
pub async fn serve(o: Options) -> (Running, Client) {
    serve_on(o, Rig::scenarios()).await
}

/// [`options`] on a fresh SQLite store, with gRPC too.
#[allow(dead_code)]
pub fn grpc_options() -> Options {
    let store = tempdir("service").join("store.db");
    Options {
        grpc: Some(any_port()),
        ..options(store.display().to_string())
    }
}

/// The options of the tests of clients the service does not control:
/// [`options`] with gRPC and metrics listeners, and authentication as
/// each test gives it.
#[allow(dead_code)]
pub fn full_options(store: String) -> Options {
    Options {
        grpc: Some(any_port()),
        metrics_listen: Some(any_port()),
        no_auth: false,
        ..options(store)
    }
}

/// [`full_options`] on a fresh SQLite store in a directory named for
/// `what`, with no authentication.
#[allow(dead_code)]
pub fn unauthenticated_options(what: &str) -> Options {
    let store = tempdir(what).join("store.db");
    Options {
        no_auth: true,
        ..full_options(store.display().to_string())
    }
}

/// The bundled request (`tests/fixture/request.json`), as JSON.
#[allow(dead_code, clippy::unwrap_used)]
pub fn demo() -> Value {
    serde_json::from_str(&std::fs::read_to_string(demo_path("tests/fixture/request.json")).unwrap())
        .unwrap()
}

/// `GET path` as `tenant` (its `x-tenant-id`), no body: the answer.
#[allow(dead_code, clippy::unwrap_used)]
pub async fn get(c: &Client, path: &str, tenant: &str) -> Answer {
    c.send("GET", path, Some(tenant), "").await.unwrap()
}

/// `POST path` as `tenant` with `body` as it is: the answer.
#[allow(dead_code, clippy::unwrap_used)]
pub async fn post(c: &Client, path: &str, tenant: &str, body: impl Into<bytes::Bytes>) -> Answer {
    c.send("POST", path, Some(tenant), body).await.unwrap()
}

/// `POST path` as `tenant` with `body` as JSON: the answer.
#[allow(dead_code, clippy::unwrap_used)]
pub async fn post_json(c: &Client, path: &str, tenant: &str, body: &Value) -> Answer {
    post(c, path, tenant, serde_json::to_vec(body).unwrap()).await
}

/// `GET path` with `headers` (each sent as given; none names a tenant
/// unless given), no body: the answer.
#[allow(dead_code, clippy::unwrap_used)]
pub async fn get_with(c: &Client, path: &str, headers: &[(&str, &str)]) -> Answer {
    c.request("GET", path, headers, Vec::new()).await.unwrap()
}

/// `POST` the bundled request as `acme` to run `run-1`, attempt `a-1`: the
/// answer.
#[allow(dead_code)]
pub async fn assemble_demo(c: &Client) -> Answer {
    post_json(
        c,
        "/factory/runs/run-1/attempts/a-1/context",
        "acme",
        &demo(),
    )
    .await
}

//! Helpers the service's test files share.

use ctxpack_service::client::Client;
use ctxpack_service::{Options, Rig, Running, demo_path, start_rigged};
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

/// A test service's options: HTTP on a free loopback port, no gRPC, two
/// instances, the fixture's settings file (`tests/fixture/ctxpack.toml`),
/// the store `store`, no authentication.
#[allow(dead_code, clippy::unwrap_used)]
pub fn options(store: String) -> Options {
    Options {
        http: "127.0.0.1:0".parse().unwrap(),
        grpc: None,
        store,
        instances: 2,
        config: Some(demo_path("tests/fixture/ctxpack.toml")),
        no_auth: true,
        ..Options::default()
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

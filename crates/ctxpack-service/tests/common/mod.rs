//! Helpers the service's test files share.

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

//! The cache and coordination store (Redis): replicas share each tenant's
//! rate; without it, or while it does not answer, each replica keeps its
//! own and every request is still served. The graph cache and
//! `GraphFactsUpdated` are in `events.rs`, which has a broker.
//!
//! Runs when `CTXPACK_TEST_REDIS` names a server (`crates/ctxpack-service/redis`;
//! `.ci/run` starts one and sets it, with `CTXPACK_REQUIRE_REDIS`).

#![allow(clippy::unwrap_used)]

mod common;

use ctxpack_service::client::Client;
use std::path::Path;

/// The fixture's settings with a tenant's rate of 1 a second, 4 at once,
/// and `redis` when given.
fn config(dir: &Path, redis: Option<&str>) -> std::path::PathBuf {
    let text =
        std::fs::read_to_string(ctxpack_service::demo_path("tests/fixture/ctxpack.toml")).unwrap();
    let mut text = text.replace(
        "requests-per-second = 0",
        "requests-per-second = 1\nburst = 4",
    );
    if let Some(url) = redis {
        text.push_str(&format!("\n[redis]\nurl = \"{url}\"\ntimeout-ms = 200\n"));
    }
    let path = dir.join("ctxpack.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Two replicas on `redis` (or none), and their clients.
async fn replicas(what: &str, redis: Option<&str>) -> Vec<(ctxpack_service::Running, Client)> {
    let mut out = Vec::new();
    for r in 0..2 {
        let dir = common::tempdir(&format!("{what}-{r}"));
        let mut o = common::options(dir.join("store.db").display().to_string());
        o.config = Some(config(&dir, redis));
        out.push(common::serve(o).await);
    }
    out
}

/// Sends 12 reads of `tenant`'s run, alternating between the replicas, at
/// once; answers how many were taken (200) and refused (429).
async fn burst(replicas: &[(ctxpack_service::Running, Client)], tenant: &str) -> (usize, usize) {
    let mut taken = 0;
    let mut refused = 0;
    for i in 0..12 {
        let c = &replicas[i % 2].1;
        let a = common::get(c, "/factory/runs/r/context-snapshots", tenant).await;
        match a.status {
            200 => taken += 1,
            429 => {
                assert!(a.headers.contains_key("retry-after"));
                refused += 1;
            }
            other => panic!("{other}: {}", a.text()),
        }
    }
    (taken, refused)
}

#[tokio::test(flavor = "multi_thread")]
async fn replicas_share_a_tenants_rate_through_redis() {
    let Some((url, tenant)) = common::fresh_redis("rate") else {
        return;
    };
    let shared = replicas("shared-rate", Some(&url)).await;
    let (taken, refused) = burst(&shared, &tenant).await;
    // The tenant's 4 at once, and at most one more a second while the
    // burst is sent: not 4 from each replica.
    assert!((4..=6).contains(&taken), "{taken} taken, {refused} refused");
    // Another tenant has an allowance of its own.
    let (other, _) = burst(&shared, &format!("{tenant}-other")).await;
    assert!((4..=6).contains(&other), "{other}");
    for (running, _) in shared {
        running.shutdown().await.unwrap();
    }

    // Without Redis each replica counts alone: twice the tenant's burst.
    let alone = replicas("own-rate", None).await;
    let (taken, _) = burst(&alone, &tenant).await;
    assert!((8..=10).contains(&taken), "{taken}");
    for (running, _) in alone {
        running.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redis_that_does_not_answer_leaves_each_replica_its_own_rate() {
    // Nothing listens there: the service starts, says so, and counts alone.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}");
    let down = replicas("redis-down", Some(&url)).await;
    let started = std::time::Instant::now();
    let (taken, refused) = burst(&down, "other-tenant").await;
    assert!(
        (8..=10).contains(&taken),
        "{taken} taken, {refused} refused"
    );
    // Each call gave up within its timeout (200 ms): no request waited
    // long on it.
    assert!(started.elapsed() < std::time::Duration::from_secs(6));
    // Assemblies go on.
    let a = common::assemble_demo(&down[0].1).await;
    assert_eq!(a.status, 201, "{}", a.text());
    for (running, _) in down {
        running.shutdown().await.unwrap();
    }
    // A URL that is not Redis's is refused at start, naming the key.
    let dir = common::tempdir("redis-bad-url");
    let mut o = common::options(dir.join("store.db").display().to_string());
    o.config = Some(config(&dir, Some("http://127.0.0.1:1")));
    let e = common::refusal(o).await;
    assert!(e.contains("redis.url"), "{e}");
}

//! Requests the service does not expect, against its store: headers sent
//! twice, ids and pages out of range, requests too large to record,
//! retries that are not, NUL characters; a store that turns read-only or
//! corrupt while serving, or is not what was expected at start. Each
//! answered as `ctxpack serve`'s README says, nothing recorded that was
//! refused. Tokens are in `auth.rs`, connections and listeners in
//! `connections.rs`.
//!
//! The store-facing cases run on SQLite, and on PostgreSQL too when
//! `CTXPACK_TEST_POSTGRES` names a server (`CTXPACK_REQUIRE_POSTGRES=1`
//! makes its absence a failure).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::full_options as options;
use common::{count, demo, get, get_with, post, post_json, refusal, serve};
use ctxpack_service::client::Client;
use ctxpack_service::{Rig, start_rigged};
use serde_json::{Value, json};
use std::time::Duration;

/// The store-facing hostile requests on one store.
async fn requests_on(store: String) {
    let mut o = options(store);
    o.no_auth = true;
    let (running, c) = serve(o).await;
    let send = |tenant: &'static str, attempt: &'static str, body: Vec<u8>| {
        let c = c.clone();
        async move {
            post(
                &c,
                &format!("/factory/runs/r/attempts/{attempt}/context"),
                tenant,
                body,
            )
            .await
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
    // A body is one JSON object: one followed by anything (text, another
    // object, NUL bytes), or the fields as an array by position, is
    // refused saying so.
    let one = serde_json::to_vec(&demo()).unwrap();
    for tail in [&b" xyz"[..], br#"{"budget":"lots"}"#, b"\0\0\0"] {
        let r = send("one", "1", [one.as_slice(), tail].concat()).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(
            r.text().contains("more than one JSON object"),
            "{}",
            r.text()
        );
    }
    let r = send(
        "one",
        "1",
        br#"[{"session-id":"s"},"q",null,"o200k-base"]"#.to_vec(),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("the body is an array"), "{}", r.text());
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
            let r = get(&c, &q, "pages").await;
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
        let r = get(&c, &path, "ids").await;
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
    let r = get(
        &c,
        "/factory/runs/r/context-snapshots?limit=100000",
        "limits",
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.text());

    // Request ids and trace context: echoed or made, and continued.
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let r = get_with(
        &c,
        "/healthz",
        &[
            ("x-request-id", "req-42"),
            ("traceparent", &format!("00-{trace}-00f067aa0ba902b7-01")),
        ],
    )
    .await;
    assert_eq!(r.headers["x-request-id"], "req-42");
    let tp = r.headers["traceparent"].to_str().unwrap();
    assert!(
        tp.starts_with(&format!("00-{trace}-")) && !tp.contains("00f067aa0ba902b7"),
        "{tp}"
    );
    let r = get_with(&c, "/healthz", &[]).await;
    assert_eq!(r.headers["x-request-id"].len(), 32);

    // Readiness: the store takes a write.
    let r = get_with(&c, "/readyz", &[]).await;
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
    let m = Client::new(format!("http://{}", running.metrics.unwrap()));
    read_only(true).await;
    let mut r = get_with(&m, "/readyz", &[]).await;
    // (A pooled connection the server closed may say so first.)
    for _ in 0..30 {
        if r.status == 503 && r.text().contains("read-only") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        r = get_with(&m, "/readyz", &[]).await;
    }
    not_ready(&c, &m, "read-only").await;
    read_only(false).await;
    let mut r = get_with(&c, "/readyz", &[]).await;
    for _ in 0..30 {
        if r.status == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        r = get_with(&c, "/readyz", &[]).await;
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
    // The same artifact store the service ran with: the store's own.
    let artifacts = options(fresh.clone()).artifacts.unwrap();
    let open = |query: String| {
        let fresh = fresh.clone();
        let artifacts = artifacts.clone();
        async move {
            ctxpack_service::open_store(
                &format!("{fresh}?{query}"),
                Some(&artifacts),
                1,
                None,
                false,
            )
            .await
        }
    };
    for query in [
        "sslmode=require".to_owned(),
        format!("sslmode=verify-ca&sslrootcert={}", ca_file.display()),
        format!("sslmode=verify-full&sslrootcert={}", ca_file.display()),
    ] {
        let store = open(query.clone()).await.unwrap();
        let tls = count(
            &store,
            "SELECT COUNT(*) FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl",
        )
        .await;
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
    let e = common::store_refusal("postgres://u:hunter2@127.0.0.1:x/db", Some("memory:")).await;
    assert!(!e.contains("hunter2") && e.contains("u:***@"), "{e}");
}

/// Not ready: `/readyz` is 503 with Retry-After on both listeners, the
/// metrics listener's (the operator's) saying why, `store_says`, and the
/// API's not (its reason is in the log); an assembly is 503 with
/// Retry-After, its message naming no internal detail either.
async fn not_ready(c: &Client, metrics: &Client, store_says: &str) {
    let r = get_with(metrics, "/readyz", &[]).await;
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.headers.contains_key("retry-after"));
    let why = r.json()["store"].as_str().unwrap().to_owned();
    assert!(why.contains(store_says), "{}", r.text());
    let r = get_with(c, "/readyz", &[]).await;
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(r.headers.contains_key("retry-after"));
    assert_eq!(
        r.json()["store"],
        "unavailable; the service's log says why",
        "{}",
        r.text()
    );
    let w = post_json(
        c,
        "/factory/runs/not-ready/attempts/1/context",
        "acme",
        &demo(),
    )
    .await;
    assert_eq!(w.status, 503, "{}", w.text());
    assert!(w.headers.contains_key("retry-after"));
    assert_eq!(
        w.json()["error"]["code"],
        "store-unavailable",
        "{}",
        w.text()
    );
    let told = w.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(
        told.starts_with("the store or the artifact store is unavailable;")
            && !told.contains(store_says),
        "{told}"
    );
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
        let r = post(
            &c,
            &format!("/factory/runs/r/attempts/a{i}/context"),
            "acme",
            body.clone(),
        )
        .await;
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
    let m = Client::new(format!("http://{}", running.metrics.unwrap()));
    not_ready(&c, &m, "malformed").await;
    running.shutdown().await.unwrap();
    // And it is refused at the next start.
    let mut o = options(path.display().to_string());
    o.no_auth = true;
    let e = refusal(o).await;
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
    let e = refusal(o.clone()).await;
    assert!(
        e.contains("empty (0 bytes)") && e.contains("--init-store"),
        "{e}"
    );
    let garbage = dir.join("garbage.db");
    std::fs::write(&garbage, vec![0x5a; 8192]).unwrap();
    let mut g = o.clone();
    g.store = garbage.display().to_string();
    let e = refusal(g).await;
    assert!(e.contains("garbage.db"), "{e}");
    let foreign = dir.join("foreign.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER)")
        .unwrap();
    let mut f = o.clone();
    f.store = foreign.display().to_string();
    let e = refusal(f.clone()).await;
    assert!(e.contains("no ctxpack store"), "{e}");
    // Told to initialise, the foreign file and the empty one start.
    f.init_store = true;
    o.init_store = true;
    for told in [f, o] {
        start_rigged(told, Rig::scenarios())
            .await
            .unwrap()
            .shutdown()
            .await
            .unwrap();
    }
}

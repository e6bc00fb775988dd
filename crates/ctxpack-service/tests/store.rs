//! The snapshot store on both engines: every corpus scenario's snapshot
//! recorded and read back equal, content stored once by hash, rows that
//! cannot be changed, one event per snapshot, retries and taken attempts.
//!
//! PostgreSQL runs when `CTXPACK_TEST_POSTGRES` names a server
//! (`postgres://user@host:port/db`; `.ci/run` starts one and sets it); with
//! `CTXPACK_REQUIRE_POSTGRES=1` (set by `.ci/run`) its absence fails. The
//! artifact store on S3 runs when `CTXPACK_TEST_S3` names a server
//! (`crates/ctxpack-service/s3`), likewise with `CTXPACK_REQUIRE_S3`.

// Helpers outside #[test] functions unwrap too: a failure is the test's.
#![allow(clippy::unwrap_used)]

use ctxpack_core::json::Reply;
mod common;

use ctxpack_service::snapshots::{Record, Recorded, Store, Value, now_rfc3339};
use std::path::PathBuf;

fn corpus() -> Vec<(String, ctxpack_scenario::Scenario)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, ctxpack_scenario::scenario::load(&p).unwrap())
        })
        .collect()
}

/// The records of the corpus: each scenario's pack or failed snapshot,
/// under tenant `corpus`, the scenario's name as its run.
fn records() -> Vec<Record> {
    let mut out = Vec::new();
    for (name, scenario) in corpus() {
        let outcome = ctxpack_scenario::run_native(&scenario);
        let (mut snapshot, text, compression, event) = match &outcome.reply {
            Reply::Failed(f) => match &f.snapshot {
                Some(s) => (
                    (**s).clone(),
                    String::new(),
                    Default::default(),
                    Default::default(),
                ),
                None => continue,
            },
            reply => match reply.pack() {
                Some(p) => (
                    p.snapshot.clone(),
                    p.text.clone(),
                    p.compression.clone(),
                    p.event.clone(),
                ),
                None => continue,
            },
        };
        snapshot.tenant_id = Some("corpus".into());
        snapshot.run_id = Some(name.clone());
        snapshot.attempt_id = Some("1".into());
        out.push(Record {
            snapshot,
            text,
            compression,
            session_id: scenario.request.context.session_id.clone(),
            trace_id: scenario.request.context.trace_id.clone(),
            event,
            sections: vec![],
            assembled_at: now_rfc3339(),
            request_hash: ctxpack_core::text_hash(
                &serde_json::to_string(&scenario.request).unwrap(),
            ),
            user_id: scenario.request.context.user_id.clone(),
        });
    }
    out
}

/// The document index on the engine: chunks found by their words, best
/// first, cited by path and place with the file's hash; a re-ingested
/// file's old chunks gone, an unchanged one left alone.
async fn index(store: &Store) {
    use ctxpack_service::index::Ingested;
    let invoices = "# Invoices\n\nAn invoice is overdue thirty days after its date.\n\n\
                    ## Late fees\n\nOverdue invoices carry a late fee of 2% a month; \
                    overdue overdue.\n";
    assert_eq!(
        store.ingest("docs/invoices.md", invoices).await.unwrap(),
        Ingested::Written(2)
    );
    assert_eq!(
        store.ingest("docs/invoices.md", invoices).await.unwrap(),
        Ingested::Unchanged
    );
    // BM25 weighs a word by how rare it is: a corpus of a few more files.
    for (i, text) in [
        "Porto is sunny in June.",
        "Lisbon has trams and hills.",
        "Coffee is served after lunch.",
        "The office opens at nine.",
        "Parking is behind the building.",
        "Badges are issued at the front desk.",
    ]
    .iter()
    .enumerate()
    {
        let path = format!("docs/other-{i}.txt");
        assert_eq!(
            store.ingest(&path, text).await.unwrap(),
            Ingested::Written(1)
        );
    }
    let found = store
        .search("Which overdue invoices carry a late fee?", 5)
        .await
        .unwrap();
    let ids: Vec<&str> = found.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        ["docs/invoices.md#2", "docs/invoices.md#1"],
        "{found:?}"
    );
    assert!(found[0].score > found[1].score, "{found:?}");
    let p = found[0].provenance.as_ref().unwrap();
    assert_eq!(p.reference, "docs/invoices.md#2");
    assert_eq!(
        p.source_version.as_deref(),
        Some(ctxpack_service::index::version_of(invoices.as_bytes()).as_str())
    );
    assert_eq!(
        store
            .search("Which overdue invoices carry a late fee?", 1)
            .await
            .unwrap()
            .len(),
        1
    );
    // Words the engines' query syntax would read as operators are words.
    assert!(
        store
            .search("NEAR( \"AND\" OR * -", 5)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.search("the and of", 5).await.unwrap().is_empty());
    // Replaced: the old chunks no longer answer.
    store
        .ingest("docs/invoices.md", "Invoices are paid by card.")
        .await
        .unwrap();
    let found = store.search("overdue", 5).await.unwrap();
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(
        store.search("card", 5).await.unwrap()[0].id,
        "docs/invoices.md#1"
    );
    assert_eq!(store.indexed().await.unwrap(), (7, 7));
}

async fn exercise(store: &Store) {
    index(store).await;
    let records = records();
    assert!(records.len() >= 30, "{}", records.len());
    for r in &records {
        assert_eq!(
            store.record(r).await.unwrap(),
            Recorded::New,
            "{}",
            r.snapshot.id
        );
    }
    // Read back equal, field for field, scores and runs included.
    for r in &records {
        let d = store.get("corpus", &r.snapshot.id).await.unwrap().unwrap();
        assert_eq!(d.snapshot, r.snapshot, "{:?}", r.snapshot.run_id);
        assert_eq!(d.compression, r.compression);
        assert_eq!(
            store
                .content(&r.snapshot.content_hash)
                .await
                .unwrap()
                .as_deref(),
            Some(r.text.as_str())
        );
        // Another tenant does not see it.
        assert!(store.get("other", &r.snapshot.id).await.unwrap().is_none());
    }
    let failed = records
        .iter()
        .filter(|r| r.snapshot.failure.is_some())
        .count();
    assert!(failed >= 2, "failed snapshots in the corpus: {failed}");
    // The list of a run.
    let r0 = &records[0];
    let list = store
        .list("corpus", r0.snapshot.run_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].context_snapshot_id, r0.snapshot.id);
    let included = r0.snapshot.entries.iter().filter(|e| e.included).count() as u32;
    assert_eq!(list[0].included, included);
    assert!(
        store
            .list("other", r0.snapshot.run_id.as_deref().unwrap())
            .await
            .unwrap()
            .is_empty()
    );

    // A retry is replayed, a different snapshot for the attempt refused;
    // neither writes.
    assert_eq!(store.record(r0).await.unwrap(), Recorded::Replayed);
    let mut other = records[1].clone();
    other.snapshot.run_id = r0.snapshot.run_id.clone();
    assert_eq!(
        store.record(&other).await.unwrap(),
        Recorded::AttemptTaken(r0.snapshot.id.clone())
    );

    // Content once by hash: the same text under another attempt.
    let mut again = r0.clone();
    again.snapshot.attempt_id = Some("2".into());
    again.snapshot.id = format!("{}-again", r0.snapshot.id);
    assert_eq!(store.record(&again).await.unwrap(), Recorded::New);
    let rows_with_r0s_content =
        |sql: &'static str| store.count(sql, vec![Value::Text(r0.snapshot.content_hash.clone())]);
    assert_eq!(
        rows_with_r0s_content("SELECT COUNT(*) FROM context_artifacts WHERE content_hash = $1")
            .await
            .unwrap(),
        1
    );
    // The content is never in the snapshot row.
    assert_eq!(
        rows_with_r0s_content("SELECT COUNT(*) FROM context_snapshots WHERE content_ref = $1")
            .await
            .unwrap(),
        2
    );

    // The bodies are in the artifact store, not the database.
    for r in &records {
        let plan = ctxpack_service::snapshots::json(&r.snapshot.plan);
        let a = store.artifacts();
        assert_eq!(
            a.get(&r.snapshot.content_hash).await.unwrap().unwrap(),
            r.text
        );
        assert_eq!(
            a.get(&ctxpack_core::text_hash(&plan))
                .await
                .unwrap()
                .unwrap(),
            plan
        );
    }

    // One event per snapshot, its plan and content found, the database
    // whole.
    let c = store.census().await.unwrap();
    assert_eq!(c.snapshots, records.len() as u64 + 1);
    assert_eq!(c.events, c.snapshots);
    assert_eq!(c.unmatched, 0);
    assert_eq!(c.without_content, 0);
    assert_eq!(c.integrity, "ok");
    let payload = store
        .count(
            "SELECT COUNT(*) FROM context_outbox WHERE event_id = $1 AND topic = $2",
            vec![
                Value::Text(r0.snapshot.id.clone()),
                Value::Text(ctxpack_service::snapshots::TOPIC.into()),
            ],
        )
        .await
        .unwrap();
    assert_eq!(payload, 1);

    // Rows that cannot change.
    for sql in [
        "UPDATE context_snapshots SET tokens_used = 0",
        "DELETE FROM context_snapshots",
        "UPDATE context_items SET included = NOT included",
        "DELETE FROM context_items",
        "UPDATE context_artifacts SET kind = 'changed'",
        "DELETE FROM context_artifacts",
    ] {
        let e = store.execute(sql, vec![]).await.unwrap_err().to_string();
        assert!(e.contains("immutable"), "{sql}: {e}");
    }
    let d = store.get("corpus", &r0.snapshot.id).await.unwrap().unwrap();
    assert_eq!(d.snapshot, r0.snapshot);

    // A deleted source marks the tenant's snapshots citing it, only those,
    // and only once.
    let cited = r0
        .snapshot
        .entries
        .iter()
        .find_map(|e| e.provenance.as_ref().filter(|p| p.source_kind != "request"))
        .map(|p| p.reference.clone());
    if let Some(reference) = cited {
        let n = store
            .source_deleted("other", &reference, &now_rfc3339())
            .await
            .unwrap();
        assert_eq!(n, 0);
        let n = store
            .source_deleted("corpus", &reference, &now_rfc3339())
            .await
            .unwrap();
        assert!(n >= 1);
        assert_eq!(
            store
                .source_deleted("corpus", &reference, &now_rfc3339())
                .await
                .unwrap(),
            0
        );
        let after = store.get("corpus", &r0.snapshot.id).await.unwrap().unwrap();
        assert_eq!(after.snapshot, r0.snapshot);
        assert_eq!(after.deleted_citations.len(), 1);
        assert_eq!(after.deleted_citations[0].0, reference);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_store() {
    let dir = std::env::temp_dir().join(format!("ctxpack-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("store.db");
    let _ = std::fs::remove_file(&path);
    let store = ctxpack_service::open_store(path.to_str().unwrap(), None, 2, None, false)
        .await
        .unwrap();
    exercise(&store).await;
    // Reopened: the migrations are not applied twice, the rows are there.
    drop(store);
    let store = ctxpack_service::open_store(path.to_str().unwrap(), None, 2, None, false)
        .await
        .unwrap();
    assert!(store.census().await.unwrap().snapshots > 30);
    let mode = common::count(
        &store,
        "SELECT COUNT(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'",
    )
    .await;
    assert_eq!(mode, 1, "the database is in WAL mode");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_store() {
    let Some((fresh, client)) = common::fresh_postgres("test").await else {
        return;
    };
    let artifacts = common::tempdir("pg-artifacts").display().to_string();
    let store = ctxpack_service::open_store(&fresh, Some(&artifacts), 4, None, false)
        .await
        .unwrap();
    exercise(&store).await;
    // Several replicas migrating at once: one applies, the rest find it.
    let opened = futures_join(&fresh, &artifacts).await;
    assert!(opened.iter().all(Result::is_ok), "{opened:?}");
    drop(store);
    common::drop_postgres(&client, &fresh).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn s3_artifact_store() {
    let Some(artifacts) = common::fresh_s3("store") else {
        return;
    };
    let path = common::tempdir("store-s3").join("store.db");
    let store =
        ctxpack_service::open_store(path.to_str().unwrap(), Some(&artifacts), 2, None, false)
            .await
            .unwrap();
    exercise(&store).await;
    // Nothing went beside the file: the objects are in the bucket.
    assert!(!path.with_extension("db.artifacts").exists());
}

async fn futures_join(url: &str, artifacts: &str) -> Vec<Result<(), ctxpack_service::StartError>> {
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (url, artifacts) = (url.to_owned(), artifacts.to_owned());
        set.spawn(async move {
            ctxpack_service::open_store(&url, Some(&artifacts), 1, None, false)
                .await
                .map(drop)
        });
    }
    let mut out = Vec::new();
    while let Some(r) = set.join_next().await {
        out.push(r.unwrap());
    }
    out
}

/// The migrations of `engine` a store holds before its contents move to
/// the artifact store, in order: (version, SQL). Every one but that move
/// (0009), which runs late, once the contents are moved: a store from
/// before it takes the later ones (0010, the chat) first.
fn before_the_artifact_store(engine: &str) -> Vec<(i64, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(engine);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name[..4].parse::<i64>().unwrap(), p)
        })
        .filter(|(v, _)| *v != ctxpack_service::snapshots::CONTENTS_MOVED)
        .map(|(v, p)| (v, std::fs::read_to_string(p).unwrap()))
        .collect()
}

/// A SQLite store as it was before the artifact store, at `path`: its
/// snapshots, items and events those of the store at `now`, and the
/// plans and contents of `records` in its `context_contents`.
fn old_sqlite_store(path: &std::path::Path, now: &std::path::Path, records: &[Record]) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
    )
    .unwrap();
    for (version, sql) in before_the_artifact_store("sqlite") {
        c.execute_batch(&sql).unwrap();
        c.execute(
            "INSERT INTO schema_migrations VALUES (?1, '2026-01-01T00:00:00Z')",
            [version],
        )
        .unwrap();
    }
    for r in records {
        let plan = ctxpack_service::snapshots::json(&r.snapshot.plan);
        for (kind, body) in [("plan", plan.as_str()), ("context", r.text.as_str())] {
            c.execute(
                "INSERT INTO context_contents (content_hash, kind, body) VALUES (?1, ?2, ?3) \
                 ON CONFLICT DO NOTHING",
                [&ctxpack_core::text_hash(body), kind, body],
            )
            .unwrap();
        }
    }
    c.execute("ATTACH ?1 AS now", [now.to_str().unwrap()])
        .unwrap();
    for table in ["context_snapshots", "context_items", "context_outbox"] {
        c.execute(
            &format!("INSERT INTO {table} SELECT * FROM now.{table}"),
            [],
        )
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_from_before_the_artifact_store_has_its_contents_moved_there() {
    let dir = common::tempdir("store-moved");
    let records: Vec<Record> = records().into_iter().take(12).collect();
    let now = dir.join("now.db");
    let store = ctxpack_service::open_store(now.to_str().unwrap(), None, 2, None, false)
        .await
        .unwrap();
    for r in &records {
        assert_eq!(store.record(r).await.unwrap(), Recorded::New);
    }
    drop(store);

    let old = dir.join("old.db");
    old_sqlite_store(&old, &now, &records);
    let bodies = common::count(
        &ctxpack_service::open_store(now.to_str().unwrap(), None, 1, None, false)
            .await
            .unwrap(),
        "SELECT COUNT(*) FROM context_artifacts",
    )
    .await;
    let store = ctxpack_service::open_store(old.to_str().unwrap(), None, 2, None, false)
        .await
        .unwrap();
    // Every body is a file of the directory beside the store, and the
    // database keeps only the references.
    let files = walk(&dir.join("old.db.artifacts"));
    assert_eq!(files as u64, bodies);
    let tables = common::count(
        &store,
        "SELECT COUNT(*) FROM sqlite_master WHERE name = 'context_contents'",
    )
    .await;
    assert_eq!(tables, 0, "context_contents is gone");
    assert_eq!(
        common::count(&store, "SELECT COUNT(*) FROM context_artifacts").await,
        bodies
    );
    for r in &records {
        let id = &r.snapshot.id;
        let d = store.get("corpus", id).await.unwrap().unwrap();
        assert_eq!(d.snapshot, r.snapshot);
        assert_eq!(
            store.content_of("corpus", id).await.unwrap().as_deref(),
            Some(r.text.as_str())
        );
        assert_eq!(
            store.content_size("corpus", id).await.unwrap(),
            Some(r.text.len() as u64)
        );
    }
    let c = store.census().await.unwrap();
    assert_eq!((c.snapshots, c.without_content), (12, 0));
    assert_eq!(c.integrity, "ok");
    // Reopened: nothing to move, the rows and objects as they were.
    drop(store);
    let store = ctxpack_service::open_store(old.to_str().unwrap(), None, 2, None, false)
        .await
        .unwrap();
    assert_eq!(store.census().await.unwrap().without_content, 0);
    drop(store);

    // A body that is not its hash's is not moved: the store is refused,
    // naming it, and nothing is dropped.
    let bad = dir.join("bad.db");
    old_sqlite_store(&bad, &now, &records);
    let c = rusqlite::Connection::open(&bad).unwrap();
    c.execute_batch(
        "DROP TRIGGER context_contents_immutable_update; \
         UPDATE context_contents SET body = 'changed' WHERE kind = 'context'",
    )
    .unwrap();
    drop(c);
    let e = ctxpack_service::open_store(bad.to_str().unwrap(), None, 1, None, false)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("not its hash's"), "{e}");
    let c = rusqlite::Connection::open(&bad).unwrap();
    let kept: i64 = c
        .query_row("SELECT COUNT(*) FROM context_contents", [], |r| r.get(0))
        .unwrap();
    assert!(kept > 0);

    // Once the move is done, a snapshot whose object is lost is counted by
    // the census, and reading its content fails (it is not an empty text).
    let store = ctxpack_service::open_store(old.to_str().unwrap(), None, 1, None, false)
        .await
        .unwrap();
    let r0 = &records[0];
    let h = &r0.snapshot.content_hash;
    std::fs::remove_file(dir.join("old.db.artifacts/sha256").join(&h[..2]).join(h)).unwrap();
    let lost = records
        .iter()
        .filter(|r| r.snapshot.content_hash == *h)
        .count() as u64;
    assert_eq!(store.census().await.unwrap().without_content, lost);
    let e = store
        .content_of("corpus", &r0.snapshot.id)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("not in the artifact store"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// How many files are under `dir`.
fn walk(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            if p.is_dir() { walk(&p) } else { 1 }
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_contents_are_moved_once_by_replicas_starting_together() {
    let Some((fresh, admin)) = common::fresh_postgres("moved").await else {
        return;
    };
    let (c, conn) = tokio_postgres::connect(&fresh, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    c.batch_execute(
        "CREATE TABLE schema_migrations (version BIGINT PRIMARY KEY, applied_at TEXT NOT NULL)",
    )
    .await
    .unwrap();
    for (version, sql) in before_the_artifact_store("postgres") {
        c.batch_execute(&sql).await.unwrap();
        c.execute(
            "INSERT INTO schema_migrations VALUES ($1, '2026-01-01T00:00:00Z')",
            &[&version],
        )
        .await
        .unwrap();
    }
    let bodies: Vec<String> = (0..600).map(|i| format!("body {i}")).collect();
    for b in &bodies {
        c.execute(
            "INSERT INTO context_contents (content_hash, kind, body) VALUES ($1, 'context', $2)",
            &[&ctxpack_core::text_hash(b), b],
        )
        .await
        .unwrap();
    }
    let dir = common::tempdir("pg-moved");
    let at = dir.display().to_string();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (url, at) = (fresh.clone(), at.clone());
        set.spawn(async move {
            ctxpack_service::open_store(&url, Some(&at), 1, None, false)
                .await
                .map(drop)
        });
    }
    while let Some(r) = set.join_next().await {
        r.unwrap().unwrap();
    }
    let store = ctxpack_service::open_store(&fresh, Some(&at), 1, None, false)
        .await
        .unwrap();
    for b in &bodies {
        let got = store.content(&ctxpack_core::text_hash(b)).await.unwrap();
        assert_eq!(got.as_deref(), Some(b.as_str()));
    }
    assert_eq!(walk(&dir), bodies.len());
    let left = common::count(
        &store,
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'context_contents' \
         AND table_schema = current_schema()",
    )
    .await;
    assert_eq!(left, 0);
    assert_eq!(
        common::count(&store, "SELECT COUNT(*) FROM context_artifacts").await,
        600
    );
    drop((store, c));
    common::drop_postgres(&admin, &fresh).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_object_store_that_does_not_answer_fails_the_record_and_nothing_is_written() {
    // A server that takes connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let dir = common::tempdir("store-fail-fast");
    let path = dir.join("store.db");
    let spec = format!(
        "s3://ctxpack?endpoint=http://127.0.0.1:{port}&allow_http=true&skip_signature=true&region=us-east-1"
    );
    let store = ctxpack_service::open_store(path.to_str().unwrap(), Some(&spec), 1, None, false)
        .await
        .unwrap();
    let r = &records()[0];
    let started = std::time::Instant::now();
    let e = store.record(r).await.unwrap_err().to_string();
    assert!(e.starts_with("artifact store: put"), "{e}");
    // Fail-fast: within the timeout and its one retry's margin.
    assert!(started.elapsed() < std::time::Duration::from_secs(8));
    for table in [
        "SELECT COUNT(*) FROM context_snapshots",
        "SELECT COUNT(*) FROM context_outbox",
        "SELECT COUNT(*) FROM context_artifacts",
    ] {
        assert_eq!(common::count(&store, table).await, 0, "{table}");
    }
    // The census needs the object store too: it says so, it does not
    // count a snapshot as whole.
    let e = store.census().await.unwrap_err().to_string();
    assert!(e.starts_with("artifact store: list"), "{e}");
    // Bad input names the field.
    let other = dir.join("other.db");
    let e = common::store_refusal(
        other.to_str().unwrap(),
        Some("s3://bucket?secret_access_key=x"),
    )
    .await;
    assert!(
        e.contains("--artifacts") && e.contains("secret_access_key"),
        "{e}"
    );
    let e = common::store_refusal("postgres://u@127.0.0.1:1/db", None).await;
    assert!(
        e.starts_with("--artifacts: a PostgreSQL store needs"),
        "{e}"
    );
    drop(silent);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_artifact_store_not_the_stores_own_or_not_writable_is_said_at_start() {
    // A store with snapshots, opened with another artifact directory: refused,
    // naming it, rather than every old snapshot unreadable.
    let dir = common::tempdir("artifacts-wrong");
    let path = dir.join("store.db");
    let store = ctxpack_service::open_store(path.to_str().unwrap(), None, 1, None, false)
        .await
        .unwrap();
    for r in records().iter().take(3) {
        store.record(r).await.unwrap();
    }
    drop(store);
    let elsewhere = dir.join("elsewhere");
    let e = common::store_refusal(path.to_str().unwrap(), elsewhere.to_str()).await;
    assert!(e.contains("does not hold this store's contents"), "{e}");
    // A command that only reads makes no directory, and says so.
    let missing = dir.join("missing");
    let e = ctxpack_service::open_store_to_read(path.to_str().unwrap(), missing.to_str())
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("no such directory"), "{e}");
    assert!(!missing.exists());
    // Its own opens, and a census reads it.
    let store = ctxpack_service::open_store_to_read(path.to_str().unwrap(), None)
        .await
        .unwrap();
    assert_eq!(store.census().await.unwrap().without_content, 0);

    // An S3 store that cannot be written: the service does not start, and
    // says what to look at.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut o = common::unauthenticated_options("artifacts-unwritable");
    o.artifacts = Some(format!(
        "s3://ctxpack?endpoint=http://127.0.0.1:{port}&allow_http=true&skip_signature=true&region=us-east-1"
    ));
    let e = common::refusal(o).await;
    assert!(
        e.starts_with("--artifacts s3://") && e.contains("AWS_ACCESS_KEY_ID"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_artifact_store_gone_while_serving_is_unready_and_a_lost_object_is_not_a_passing_fault()
{
    let o = common::unauthenticated_options("artifacts-gone");
    let store = std::path::PathBuf::from(&o.store);
    let (running, c) = common::serve(o).await;
    let a = common::assemble_demo(&c).await;
    assert_eq!(a.status, 201, "{}", a.text());
    let id = a.json()["contextSnapshotId"].as_str().unwrap().to_owned();
    let ready = c.send("GET", "/readyz", None, "").await.unwrap();
    assert_eq!(ready.status, 200, "{}", ready.text());
    assert_eq!(ready.json()["artifacts"], "ok");

    // Its objects lost: reading the content is 500 store-corrupt, no
    // Retry-After, not 503.
    let artifacts = store.with_extension("db.artifacts");
    std::fs::remove_dir_all(artifacts.join("sha256")).unwrap();
    let lost = common::get(
        &c,
        &format!("/factory/context-snapshots/{id}/content"),
        "acme",
    )
    .await;
    assert_eq!(lost.status, 500, "{}", lost.text());
    assert_eq!(lost.json()["error"]["code"], "store-corrupt");
    assert!(!lost.headers.contains_key("retry-after"));

    // The directory gone and a file in its place: nothing can be written,
    // so the service is not ready, and an assembly is refused, recording
    // nothing.
    std::fs::remove_dir_all(&artifacts).unwrap();
    std::fs::write(&artifacts, "not a directory").unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let ready = c.send("GET", "/readyz", None, "").await.unwrap();
    assert_eq!(ready.status, 503, "{}", ready.text());
    // The API's listener does not say where the artifact store is; the
    // operator's (the metrics listener) does.
    assert_eq!(
        ready.json()["artifacts"],
        "unavailable; the service's log says why"
    );
    let m = ctxpack_service::client::Client::new(format!("http://{}", running.metrics.unwrap()));
    let ready = m.send("GET", "/readyz", None, "").await.unwrap();
    assert_eq!(ready.status, 503, "{}", ready.text());
    assert!(
        ready.json()["artifacts"]
            .as_str()
            .unwrap()
            .starts_with("artifact store: probe")
    );
    let a = common::post_json(
        &c,
        "/factory/runs/run-1/attempts/a-2/context",
        "acme",
        &common::demo(),
    )
    .await;
    assert_eq!(a.status, 503, "{}", a.text());
    assert_eq!(a.json()["error"]["code"], "store-unavailable");
    let snapshots = common::count(
        &running.service.store,
        "SELECT COUNT(*) FROM context_snapshots",
    )
    .await;
    assert_eq!(snapshots, 1);
    running.shutdown().await.unwrap();
}

//! The snapshot store on both engines: every corpus scenario's snapshot
//! recorded and read back equal, content stored once by hash, rows that
//! cannot be changed, one event per snapshot, retries and taken attempts.
//!
//! PostgreSQL runs when `CTXPACK_TEST_POSTGRES` names a server
//! (`postgres://user@host:port/db`; `.ci/run` starts one and sets it); with
//! `CTXPACK_REQUIRE_POSTGRES=1` (set by `.ci/run`) its absence fails.

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
        rows_with_r0s_content("SELECT COUNT(*) FROM context_contents WHERE content_hash = $1")
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

    // One event per snapshot, the database whole.
    let c = store.census().await.unwrap();
    assert_eq!(c.snapshots, records.len() as u64 + 1);
    assert_eq!(c.events, c.snapshots);
    assert_eq!(c.unmatched, 0);
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
        "UPDATE context_contents SET body = 'changed'",
        "DELETE FROM context_contents",
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
    let store = ctxpack_service::open_store(path.to_str().unwrap(), 2, None, false)
        .await
        .unwrap();
    exercise(&store).await;
    // Reopened: the migrations are not applied twice, the rows are there.
    drop(store);
    let store = ctxpack_service::open_store(path.to_str().unwrap(), 2, None, false)
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
    let store = ctxpack_service::open_store(&fresh, 4, None, false)
        .await
        .unwrap();
    exercise(&store).await;
    // Several replicas migrating at once: one applies, the rest find it.
    let opened = futures_join(&fresh).await;
    assert!(opened.iter().all(Result::is_ok), "{opened:?}");
    drop(store);
    common::drop_postgres(&client, &fresh).await;
}

async fn futures_join(url: &str) -> Vec<Result<(), ctxpack_service::StartError>> {
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let url = url.to_owned();
        set.spawn(async move {
            ctxpack_service::open_store(&url, 1, None, false)
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

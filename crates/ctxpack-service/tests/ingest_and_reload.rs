//! The `ctxpack` binary: documents indexed by `ctxpack ingest` answer a
//! question `ctxpack serve` is asked (the embedded index), and a reload on
//! SIGHUP under load drops no request.

// Helpers outside #[test] functions unwrap too: a failure is the test's.
#![allow(clippy::unwrap_used)]

mod common;

use common::stores::{Behaviour, assemble, config, options, request, serve, store};
use common::{get, post, post_json};
use ctxpack_service::client::Client;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn tempdir() -> PathBuf {
    common::tempdir("upstreams")
}

fn ctxpack() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_ctxpack"))
}

/// `ctxpack ingest --store store what`, run to its end.
fn ingest(store: &Path, what: &Path) -> std::process::Output {
    ctxpack()
        .args(["ingest", "--store"])
        .arg(store)
        .arg(what)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn ingested_documents_answer_a_question() {
    let dir = tempdir();
    let docs = dir.join("docs");
    std::fs::create_dir_all(docs.join("billing")).unwrap();
    std::fs::write(
        docs.join("billing/invoices.md"),
        "# Invoices\n\nAn invoice is overdue thirty days after its date.\n\n## Late fees\n\nOverdue invoices carry a late fee of 2% a month.\n",
    )
    .unwrap();
    std::fs::write(docs.join("weather.txt"), "Porto is sunny in June.\n").unwrap();
    std::fs::write(docs.join("image.png"), [0u8, 159, 146, 150]).unwrap();
    let store = dir.join("store.db");
    let out = ingest(&store, &docs);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("ingested 2 files (3 chunks)"), "{stdout}");
    // Again: nothing changed.
    let out = ingest(&store, &docs);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("ingested 0 files (0 chunks), 2 unchanged")
    );
    // A file given by name is read whatever its extension; a binary one is
    // refused, naming it.
    let out = ingest(&store, &docs.join("image.png"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("image.png"));

    let (running, c) = serve(options(&dir, None)).await;
    let a = post_json(&c, "/factory/runs/r/attempts/a/context", "acme", &json!({"query": "When is an invoice overdue, and what does it cost?", "tokenizer": "o200k-base"})).await;
    assert_eq!(a.status, 201, "{}", a.text());
    let id = a.json()["contextSnapshotId"].as_str().unwrap().to_owned();
    let text = get(
        &c,
        &format!("/factory/context-snapshots/{id}/content"),
        "acme",
    )
    .await
    .text();
    assert!(text.contains("An invoice is overdue thirty days"), "{text}");
    assert!(text.contains("late fee of 2%"), "{text}");
    assert!(!text.contains("Porto"), "{text}");
    let detail = get(&c, &format!("/factory/context-snapshots/{id}"), "acme")
        .await
        .json();
    let cited = detail["items"].to_string();
    let reference = format!("{}#1", docs.join("billing/invoices.md").display());
    assert!(cited.contains(&reference), "{cited}");
    assert!(
        cited.contains("sha256:"),
        "the source version is the file's hash: {cited}"
    );
    running.shutdown().await.unwrap();
}

/// The service's HTTP address, read from its start-up log.
fn listening(stderr: &mut impl std::io::BufRead, log: &mut String) -> SocketAddr {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the service exited:\n{log}"
        );
        log.push_str(&line);
        if line.contains("\"listening\"") {
            let v: Value = serde_json::from_str(&line).unwrap();
            return v["fields"]["http"].as_str().unwrap().parse().unwrap();
        }
    }
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn sighup_reloads_the_configuration_without_dropping_a_request() {
    let dir = tempdir();
    std::fs::write(
        dir.join("doc.md"),
        "Trailing commas are refused by the parser's grammar.\n",
    )
    .unwrap();
    let store_db = dir.join("store.db");
    let out = ingest(&store_db, &dir.join("doc.md"));
    assert!(out.status.success());
    let b = Arc::new(Behaviour::default());
    let up = store(true, b.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let index_only = format!(
        "[service]\nstore = \"{}\"\nlisten = \"127.0.0.1:0\"\ngrpc = \"off\"\n[builder]\nprofile = {{ rag = {{ retrieve-limit = 4 }} }}\n",
        store_db.display()
    );
    let with_store = format!(
        "{index_only}[upstreams.retrieve]\ngrpc = \"http://{}\"\n",
        up.addr
    );
    let path = config(&dir, &index_only);
    let mut child = ctxpack()
        .args(["serve", "--insecure-dev-no-auth", "--config"])
        .arg(&path)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut log = String::new();
    let addr = listening(&mut stderr, &mut log);
    let log = Arc::new(Mutex::new(log));
    let reader = {
        let log = log.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while std::io::BufRead::read_line(&mut stderr, &mut line).unwrap_or(0) > 0 {
                log.lock().unwrap().push_str(&line);
                line.clear();
            }
        })
    };
    common::openapi::hold_answers();
    let c = Client::new(format!("http://{addr}"));
    let hangup = || {
        let ok = std::process::Command::new("kill")
            .args(["-HUP", &child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    };

    // Clients post without pause while the configuration changes under
    // them: every request is answered 201.
    let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let clients: Vec<_> = (0..6)
        .map(|k| {
            let c = c.clone();
            let running = running.clone();
            tokio::spawn(async move {
                let mut statuses = Vec::new();
                let mut n = 0;
                while running.load(Ordering::Relaxed) {
                    let a = post(
                        &c,
                        &format!("/factory/runs/load/attempts/c{k}-{n}/context"),
                        "acme",
                        request(20000),
                    )
                    .await;
                    statuses.push(a.status);
                    n += 1;
                }
                statuses
            })
        })
        .collect();

    // The index answers first.
    let (_, reply, detail) = assemble(&c, 1, 20000).await;
    assert!(
        detail["items"].to_string().contains("doc.md#1"),
        "{reply} {detail}"
    );

    // Reloaded with an upstream: the store answers.
    std::fs::write(&path, &with_store).unwrap();
    hangup();
    let mut n = 2;
    let switched = loop {
        let (_, _, detail) = assemble(&c, n, 20000).await;
        n += 1;
        if detail["items"].to_string().contains("store/up-1") {
            break true;
        }
        if n > 100 {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        switched,
        "the reload never took effect:\n{}",
        log.lock().unwrap()
    );
    assert!(log.lock().unwrap().contains("configuration reloaded"));

    // An invalid file is refused, naming the key; the running one stays.
    std::fs::write(&path, format!("{with_store}timeout-ms = 0\n")).unwrap();
    hangup();
    let refused = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(20));
        log.lock().unwrap().contains("reload refused")
    });
    assert!(refused, "{}", log.lock().unwrap());
    assert!(
        log.lock()
            .unwrap()
            .contains("upstreams.retrieve.timeout-ms: must be at least 1")
    );
    let (_, _, detail) = assemble(&c, n, 20000).await;
    assert!(
        detail["items"].to_string().contains("store/up-1"),
        "{detail}"
    );

    running.store(false, Ordering::Relaxed);
    let mut answered = 0;
    for client in clients {
        let statuses = client.await.unwrap();
        assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
        answered += statuses.len();
    }
    assert!(answered > 10, "{answered}");
    child.kill().unwrap();
    let _ = child.wait();
    let _ = reader.join();
    up.down().await;
}

//! The service's events on NATS JetStream, on loopback with a broker of
//! the test's own (Debian's `nats-server`; `crates/ctxpack-service/nats`
//! installs it): every `ContextAssembled` on the stream exactly once,
//! through a broker that goes away and comes back and a relay that
//! publishes again what it had not marked; two replicas relaying from one
//! PostgreSQL; the seed's inbound events handled.
//!
//! Without `nats-server` the tests say so and pass, unless
//! `CTXPACK_REQUIRE_NATS` is set (`.ci/run` sets it), when they fail.

// Helpers outside #[test] functions unwrap too: a failure is the test's.
#![allow(clippy::unwrap_used)]

use common::{get, get_with, post, post_json, serve};
use ctxpack_service::client::Client;
use ctxpack_service::events::stream_census;
use ctxpack_service::settings::Events;
use ctxpack_service::snapshots::Store;
use ctxpack_service::{Options, demo_path};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

mod common;

fn tempdir() -> PathBuf {
    common::tempdir("events")
}

fn nats_server() -> Option<PathBuf> {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|d| d.join("nats-server"))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var("CTXPACK_REQUIRE_NATS").is_err(),
            "CTXPACK_REQUIRE_NATS is set but nats-server is not installed (crates/ctxpack-service/nats)"
        );
        eprintln!("nats-server not installed: not run (crates/ctxpack-service/nats installs it)");
    }
    found
}

/// A broker of the test's own, which it can kill and start again on the
/// same port and storage.
struct Broker {
    bin: PathBuf,
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl Broker {
    fn start(bin: PathBuf) -> Broker {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut b = Broker {
            bin,
            port,
            dir: tempdir(),
            child: None,
        };
        b.up();
        b
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn up(&mut self) {
        let child = Command::new(&self.bin)
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(self.dir.join("js"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < until, "nats-server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The service's options for these tests: the broker `events` names.
fn options(store: String, events: Option<Events>) -> Options {
    Options {
        events,
        ..common::options(store)
    }
}

fn request() -> Vec<u8> {
    std::fs::read(demo_path("tests/fixture/request.json")).unwrap()
}

/// Posts attempts `from..to` of run `run`; gives the snapshot ids.
async fn assemble(c: &Client, run: &str, from: u32, to: u32) -> Vec<String> {
    let mut ids = Vec::new();
    for n in from..to {
        let a = post(
            c,
            &format!("/factory/runs/{run}/attempts/a-{n}/context"),
            "acme",
            request(),
        )
        .await;
        assert_eq!(a.status, 201, "{}", a.text());
        ids.push(a.json()["contextSnapshotId"].as_str().unwrap().to_owned());
    }
    ids
}

/// Waits until `check` holds, for up to 20 s.
async fn eventually<F: std::future::Future<Output = bool>>(what: &str, check: impl Fn() -> F) {
    let until = Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(Instant::now() < until, "never: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the service has made its inbound stream and consumer: an
/// event published before would reach no stream.
async fn inbound_consumer_made(js: &async_nats::jetstream::Context) {
    eventually("the inbound consumer exists", || {
        let js = js.clone();
        async move {
            match js.get_stream("CONTEXT_ASSEMBLY_INBOUND").await {
                Ok(s) => s
                    .get_consumer::<async_nats::jetstream::consumer::pull::Config>("ctxpack-serve")
                    .await
                    .is_ok(),
                Err(_) => false,
            }
        }
    })
    .await;
}

async fn on_stream(url: &str) -> u64 {
    stream_census(url, "CONTEXT_ASSEMBLY")
        .await
        .map_or(0, |c| c.messages)
}

/// Waits until `n` events are on the stream at `url` and `store` has
/// marked every event published.
async fn all_published(url: &str, store: &Store, n: u64) {
    eventually(&format!("{n} events on the stream"), || async {
        on_stream(url).await == n
    })
    .await;
    eventually("all marked published", || async {
        store.unpublished().await.unwrap() == 0
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn each_event_is_on_the_stream_once_through_a_broker_outage_and_a_repeat() {
    let Some(bin) = nats_server() else { return };
    let mut broker = Broker::start(bin);
    let url = broker.url();
    let dir = tempdir();
    let (running, c) = serve(options(
        dir.join("store.db").display().to_string(),
        Some(Events::at(&url)),
    ))
    .await;
    let store = running.service.store.clone();

    let mut ids = assemble(&c, "r", 0, 10).await;
    all_published(&url, &store, 10).await;

    let ready = || {
        let c = c.clone();
        async move {
            let r = get_with(&c, "/readyz", &[]).await;
            let j = r.json();
            (r.status, j["degraded"].clone(), j["broker"].clone())
        }
    };
    assert_eq!(ready().await, (200, json!(false), json!("ok")));

    // The broker goes away: assemblies go on, events wait, and the
    // service stays ready — a replica that could take assemblies is not
    // taken out of its balancer — but says it is degraded, and why.
    broker.kill();
    ids.extend(assemble(&c, "r", 10, 20).await);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(store.unpublished().await.unwrap(), 10);
    eventually("degraded without the broker", || async {
        let (status, degraded, broker) = ready().await;
        status == 200 && degraded == json!(true) && broker != json!("ok")
    })
    .await;

    // It comes back: they go out, and the service is whole again.
    broker.up();
    eventually("whole with the broker back", || async {
        ready().await == (200, json!(false), json!("ok"))
    })
    .await;
    all_published(&url, &store, 20).await;

    // A relay killed between publishing and marking publishes again: the
    // broker drops the repeats by id.
    store
        .execute(
            "UPDATE context_outbox SET published_at = NULL WHERE sequence <= 5",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(store.unpublished().await.unwrap(), 5);
    eventually("marked again", || async {
        store.unpublished().await.unwrap() == 0
    })
    .await;

    // Read whole by a consumer: each snapshot once, its id the message's,
    // the seed's payload.
    let census = stream_census(&url, "CONTEXT_ASSEMBLY").await.unwrap();
    assert_eq!(census.messages, 20, "{census:?}");
    assert_eq!(census.mismatched, 0);
    let mut want = ids.clone();
    want.sort();
    assert_eq!(census.ids.keys().cloned().collect::<Vec<_>>(), want);
    assert!(census.ids.values().all(|n| *n == 1), "{census:?}");

    let client = async_nats::connect(&url).await.unwrap();
    let js = async_nats::jetstream::new(client);
    let mut stream = js.get_stream("CONTEXT_ASSEMBLY").await.unwrap();
    let first = stream.get_raw_message(1).await.unwrap();
    assert_eq!(
        first.subject.as_str(),
        "context-assembly.snapshots.v1.context-assembled"
    );
    let payload: Value = serde_json::from_slice(&first.payload).unwrap();
    let keys: Vec<&str> = payload
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "attemptId",
            "contextSnapshotId",
            "runId",
            "status",
            "tenantId",
            "tokenBudget",
            "tokensUsed"
        ]
    );
    assert_eq!(payload["tenantId"], "acme");
    let info = stream.info().await.unwrap();
    assert_eq!(info.config.duplicate_window, Duration::from_secs(3600));
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn inbound_events_degrade_an_index_and_record_deletions() {
    let Some(bin) = nats_server() else { return };
    let broker = Broker::start(bin);
    let url = broker.url();
    let dir = tempdir();
    let store_path = dir.join("store.db").display().to_string();
    let mut o = options(store_path, Some(Events::at(&url)));
    // The embedded index answers retrieval: no fixture.
    o.config = None;
    let (running, c) = common::serve_on(o, ctxpack_service::Rig::default()).await;
    let store = running.service.store.clone();
    store
        .ingest(
            "docs/commas.md",
            "The parser rejects trailing commas in arrays.",
        )
        .await
        .unwrap();
    let client = async_nats::connect(&url).await.unwrap();
    // Events published before the service has made its inbound stream and
    // consumer would reach no stream: wait for them.
    let js = async_nats::jetstream::new(client.clone());
    inbound_consumer_made(&js).await;
    let post = |n: u32| {
        let c = c.clone();
        async move {
            let a = post_json(
                &c,
                &format!("/factory/runs/idx/attempts/a-{n}/context"),
                "acme",
                &json!({"query": "Why are trailing commas rejected?", "tokenizer": "o200k-base"}),
            )
            .await;
            assert_eq!(a.status, 201, "{}", a.text());
            a.json()
        }
    };
    assert_eq!(post(0).await["status"], json!(["complete"]));
    let publish = |subject: &'static str, body: Value| {
        let client = client.clone();
        async move {
            client
                .publish(subject, serde_json::to_vec(&body).unwrap().into())
                .await
                .unwrap();
            client.flush().await.unwrap();
        }
    };

    // Not an event: dropped, and what follows is still handled.
    publish(
        "vector-memory.indexes.v1.index-degraded",
        json!({"index": 1}),
    )
    .await;
    publish(
        "vector-memory.indexes.v1.index-degraded",
        json!({"indexId": "embedded", "reason": "reindexing after a schema change"}),
    )
    .await;
    let n = AtomicU32::new(1);
    eventually("assemblies degraded", || async {
        post(n.fetch_add(1, Ordering::Relaxed)).await["status"] == json!(["degraded"])
    })
    .await;
    let id = post(100).await["contextSnapshotId"]
        .as_str()
        .unwrap()
        .to_owned();
    let detail = get(&c, &format!("/factory/context-snapshots/{id}"), "acme")
        .await
        .json();
    assert!(
        detail["sourceCalls"]
            .to_string()
            .contains("index `embedded` is degraded: reindexing after a schema change"),
        "{}",
        detail["sourceCalls"]
    );

    publish(
        "vector-memory.indexes.v1.index-revision-ready",
        json!({"indexId": "embedded", "indexRevision": "r42"}),
    )
    .await;
    eventually("assemblies whole again", || async {
        post(n.fetch_add(1, Ordering::Relaxed)).await["status"] == json!(["complete"])
    })
    .await;

    // SourceDeleted: the snapshots citing the chunk carry a deleted
    // citation.
    publish(
        "knowledge-ingestion.sources.v1.source-deleted",
        json!({"tenantId": "acme", "sourceId": "docs/commas.md#1"}),
    )
    .await;
    let first = get(&c, "/factory/runs/idx/context-snapshots", "acme")
        .await
        .json()["snapshots"][0]["contextSnapshotId"]
        .as_str()
        .unwrap()
        .to_owned();
    eventually("the deletion recorded", || async {
        get(&c, &format!("/factory/context-snapshots/{first}"), "acme")
            .await
            .json()["deletedCitations"]
            .to_string()
            .contains("docs/commas.md#1")
    })
    .await;
    // Each was handled once: nothing is waiting on the inbound stream's
    // consumer.
    let js = async_nats::jetstream::new(client.clone());
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let mut consumer: async_nats::jetstream::consumer::PullConsumer = js
            .get_stream("CONTEXT_ASSEMBLY_INBOUND")
            .await
            .unwrap()
            .get_consumer("ctxpack-serve")
            .await
            .unwrap();
        let info = consumer.info().await.unwrap();
        if info.num_pending == 0 && info.num_ack_pending == 0 {
            assert_eq!(info.delivered.stream_sequence, 4, "{info:?}");
            break;
        }
        assert!(Instant::now() < until, "inbound events left: {info:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_on_one_postgresql_publish_each_event_once() {
    let Some(bin) = nats_server() else { return };
    let Some((fresh, admin)) = common::fresh_postgres("events").await else {
        return;
    };
    let broker = Broker::start(bin);
    let nats = broker.url();
    let (a, ca) = serve(options(fresh.clone(), Some(Events::at(&nats)))).await;
    let (b, cb) = serve(options(fresh.clone(), Some(Events::at(&nats)))).await;
    // Both replicas take requests at once.
    let (x, y) = tokio::join!(assemble(&ca, "ra", 0, 30), assemble(&cb, "rb", 0, 30));
    let mut ids: Vec<String> = x.into_iter().chain(y).collect();
    ids.sort();
    eventually("60 events on the stream", || async {
        on_stream(&nats).await >= 60
    })
    .await;
    let store = a.service.store.clone();
    eventually("all marked", || async {
        store.unpublished().await.unwrap() == 0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let census = stream_census(&nats, "CONTEXT_ASSEMBLY").await.unwrap();
    assert_eq!(census.messages, 60, "{census:?}");
    assert_eq!(census.ids.keys().cloned().collect::<Vec<_>>(), ids);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    common::drop_postgres(&admin, &fresh).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn graph_neighbourhoods_are_cached_across_replicas_until_graph_facts_updated() {
    let Some(bin) = nats_server() else { return };
    let Some((redis, tenant)) = common::fresh_redis("graph") else {
        return;
    };
    let broker = Broker::start(bin);
    let url = broker.url();
    // A store counting its graph calls, each answer naming its call.
    let graph_calls = std::sync::Arc::new(AtomicU32::new(0));
    let counted = graph_calls.clone();
    let answering: ctxpack_service::upstream_server::Answering =
        std::sync::Arc::new(move |call: ctxpack_core::Call<'static>, _context, _auth| {
            let counted = counted.clone();
            Box::pin(async move {
                use ctxpack_core::{Answer, Call};
                match call {
                    Call::Retrieve { .. } => {
                        Answer::Candidates(Ok(vec![common::stores::candidate(
                            "seed-1",
                            "The parser rejects trailing commas.",
                        )]))
                    }
                    Call::ExpandGraph { .. } => {
                        let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
                        Answer::Candidates(Ok(vec![common::stores::candidate(
                            "fact-1",
                            &format!("Neighbourhood as of graph call {n}."),
                        )]))
                    }
                    Call::RecallMemory { .. } | Call::RepositoryState { .. } => {
                        Answer::Candidates(Ok(vec![]))
                    }
                    other => {
                        other.failed(ctxpack_core::HostError::not_provided(other.capability()))
                    }
                }
            })
        });
    let store = common::stores::serve_store(false, answering, "127.0.0.1:0".parse().unwrap()).await;
    let stores = format!("http://{}/stores", store.addr);
    let mut config = String::from(
        "[builder]\nprofile = { full = { retrieve-limit = 4, graph-depth = 1, memory-limit = 2, repository-state = false } }\n",
    );
    for capability in [
        "retrieve",
        "expand-graph",
        "recall-memory",
        "repository-state",
    ] {
        config.push_str(&format!("[upstreams.{capability}]\nhttp = \"{stores}\"\n"));
    }
    config.push_str(&format!("[redis]\nurl = \"{redis}\"\n"));
    let mut replicas = Vec::new();
    for _ in 0..2 {
        let dir = tempdir();
        let path = dir.join("ctxpack.toml");
        std::fs::write(&path, &config).unwrap();
        let mut o = options(
            dir.join("store.db").display().to_string(),
            Some(Events::at(&url)),
        );
        o.config = Some(path);
        replicas.push(common::serve_on(o, ctxpack_service::Rig::default()).await);
    }
    let n = AtomicU32::new(0);
    let assemble = |replica: usize, tenant: String| {
        let c = replicas[replica].1.clone();
        let n = n.fetch_add(1, Ordering::SeqCst);
        async move {
            let a = post_json(
                &c,
                &format!("/factory/runs/graph/attempts/a-{n}/context"),
                &tenant,
                &json!({"query": "Why are trailing commas rejected?", "tokenizer": "o200k-base",
                        "context": {"project-id": "parser"}}),
            )
            .await;
            assert_eq!(a.status, 201, "{}", a.text());
            let id = a.json()["contextSnapshotId"].as_str().unwrap().to_owned();
            get(
                &c,
                &format!("/factory/context-snapshots/{id}/content"),
                &tenant,
            )
            .await
            .text()
        }
    };
    let first = assemble(0, tenant.clone()).await;
    assert!(first.contains("as of graph call 1"), "{first}");
    assert_eq!(graph_calls.load(Ordering::SeqCst), 1);
    // The other replica, another run and session: read from the cache.
    let again = assemble(1, tenant.clone()).await;
    assert!(again.contains("as of graph call 1"), "{again}");
    assert_eq!(graph_calls.load(Ordering::SeqCst), 1);
    // Another tenant's neighbourhood is its own.
    assemble(1, format!("{tenant}-other")).await;
    assert_eq!(graph_calls.load(Ordering::SeqCst), 2);

    // GraphFactsUpdated for the tenant: its next assembly asks the store.
    let client = async_nats::connect(&url).await.unwrap();
    let js = async_nats::jetstream::new(client.clone());
    inbound_consumer_made(&js).await;
    client
        .publish(
            "vector-memory.graph.v1.graph-facts-updated",
            serde_json::to_vec(&json!({"tenantId": tenant}))
                .unwrap()
                .into(),
        )
        .await
        .unwrap();
    client.flush().await.unwrap();
    eventually("the tenant's neighbourhood asked again", || async {
        assemble(0, tenant.clone())
            .await
            .contains("as of graph call 3")
    })
    .await;
    // And cached again, for both replicas.
    let calls = graph_calls.load(Ordering::SeqCst);
    assert!(
        assemble(1, tenant.clone())
            .await
            .contains("as of graph call 3")
    );
    assert_eq!(graph_calls.load(Ordering::SeqCst), calls);
    for (running, _) in replicas {
        running.shutdown().await.unwrap();
    }
    store.down().await;
}

//! Time limits, end to end on loopback: the deadline interrupts a long
//! assembly and the pool recovers, the next request after an interrupted
//! call is served, an assembly abandoned at its deadline leaves its
//! instance usable, and a shutdown finishes the requests in flight.

// Helpers outside #[test] functions unwrap too: a failure is the test's.
#![allow(clippy::unwrap_used)]

mod common;

use common::grpc_options as options;
use common::{assemble_demo, demo, post_json, serve, serve_on};
use ctxpack_service::{Options, Rig};
use serde_json::{Value, json};
use std::time::Duration;

fn body(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

/// Options whose 50 ms deadline a long assembly runs past inside the
/// component: bodies up to 64 MiB and 5000 instructions are let in.
fn interrupting_options() -> Options {
    let mut o = options();
    o.deadline = Duration::from_millis(50);
    o.max_body = 64 << 20;
    o.request_limits = Some(ctxpack_service::settings::RequestLimits {
        instructions: 5000,
        ..Default::default()
    });
    o
}

#[tokio::test(flavor = "multi_thread")]
async fn the_deadline_interrupts_a_long_assembly_and_the_pool_recovers() {
    let (running, c) = serve(interrupting_options()).await;
    // Two thousand instructions of ~4 kB each: L0 is counted exactly,
    // eight megabytes of text, far past 50 ms inside the component.
    let mut v = demo();
    let line = "Keep the parser strict about separators and report the position. ".repeat(60);
    v["instructions"] = json!(vec![line; 2000]);
    v["budget"] = json!(10_000_000);
    let r = post_json(&c, "/factory/runs/run-1/attempts/a-1/context", "acme", &v).await;
    assert_eq!(r.status, 504, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], "deadline-exceeded");
    // It was interrupted inside the component (the instance trapped and
    // was dropped), not only abandoned between steps.
    assert_eq!(running.service.live().pool.trapped(), 1);
    assert_eq!(running.service.store.census().await.unwrap().snapshots, 0);
    // The trapped instance is never used again: the next request gets a
    // fresh one and is answered.
    let r = assemble_demo(&c).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(running.service.live().pool.trapped(), 1);
    running.shutdown().await.unwrap();

    // A slow source runs the clock out between steps.
    let mut o = options();
    o.deadline = Duration::from_millis(200);
    let mut rig = Rig::scenarios();
    rig.faults.delay = Some(Duration::from_millis(1_000));
    let (running, c) = serve_on(o, rig).await;
    let r = assemble_demo(&c).await;
    assert_eq!(r.status, 504);
    assert_eq!(running.service.live().pool.trapped(), 0);
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn after_an_interrupted_call_the_next_request_is_served() {
    let mut o = interrupting_options();
    o.instances = 1;
    let (running, c) = serve(o).await;
    let mut v = demo();
    v["instructions"] = json!(vec!["Report positions. ".repeat(250); 2000]);
    v["budget"] = json!(10_000_000);
    let r = post_json(&c, "/factory/runs/r/attempts/1/context", "acme", &v).await;
    assert_eq!(r.status, 504);
    let r = post_json(&c, "/factory/runs/r/attempts/2/context", "acme", &demo()).await;
    assert_eq!(r.status, 201, "{}", r.text());
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_assembly_abandoned_at_its_deadline_leaves_its_instance_usable() {
    // The deadline passes while the stores are still answering: the
    // assembly is abandoned between steps and its resource dropped after
    // its deadline. The one instance must serve the next request.
    let mut o = options();
    o.deadline = Duration::from_millis(100);
    o.instances = 1;
    let mut rig = Rig::scenarios();
    rig.faults.delay = Some(Duration::from_millis(400));
    let (running, c) = serve_on(o, rig).await;
    for attempt in ["1", "2", "3"] {
        let r = post_json(
            &c,
            &format!("/factory/runs/r/attempts/{attempt}/context"),
            "acme",
            &demo(),
        )
        .await;
        assert_eq!(r.status, 504, "{}", r.text());
    }
    assert_eq!(running.service.live().pool.trapped(), 0);
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn shutdown_finishes_the_requests_in_flight() {
    let mut rig = Rig::scenarios();
    rig.faults.delay = Some(Duration::from_millis(600));
    let (running, c) = serve_on(options(), rig).await;
    let addr = running.http;
    let pending = tokio::spawn({
        let c = c.clone();
        async move {
            c.send(
                "POST",
                "/factory/runs/r/attempts/1/context",
                Some("acme"),
                body(&demo()),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let store = running.service.store.clone();
    running.shutdown().await.unwrap();
    let r = pending.await.unwrap().unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(store.census().await.unwrap().snapshots, 1);
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still listening"
    );
}

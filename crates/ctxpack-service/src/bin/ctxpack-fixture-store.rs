//! `ctxpack-fixture-store`: the scenario fixture's stores (see
//! `ctxpack_service::fixture`) served as a store team would serve theirs —
//! `stores.proto` over gRPC and the HTTP JSON shape — for the load script's
//! upstreams and for trying the connectors by hand.

use ctxpack_service::fixture::{DemoSources, Faults};
use ctxpack_service::upstream_server::{Answering, Grpc, http};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

const USAGE: &str = "\
usage: ctxpack-fixture-store --fixture DIR [--grpc ADDR] [--http ADDR] [--delay-ms N]
  serves the scenario files' host answers (DIR: tests/scenarios) as every
  capability of stores.proto over gRPC, and over HTTP with JSON; prints
  `grpc ADDR` and `http ADDR` once listening; stops on SIGTERM or SIGINT.
  --delay-ms N: every source call answers N ms late.
";

fn arg(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

async fn run(args: Vec<String>) -> Result<(), String> {
    let dir = arg(&args, "--fixture").ok_or(USAGE)?;
    let delay = match arg(&args, "--delay-ms") {
        Some(ms) => {
            Some(Duration::from_millis(ms.parse().map_err(|_| {
                format!("--delay-ms: {ms:?} is not a number")
            })?))
        }
        None => None,
    };
    let fixture = Arc::new(DemoSources::load(
        dir.as_ref(),
        Faults {
            delay,
            ..Default::default()
        },
    )?);
    let answering: Answering = Arc::new(move |call, context, _auth| {
        let fixture = fixture.clone();
        Box::pin(async move { fixture.answer(&call, &context).await })
    });
    let mut tasks = Vec::new();
    if let Some(addr) = arg(&args, "--grpc") {
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|e| format!("--grpc {addr}: {e}"))?;
        println!("grpc {}", listener.local_addr().map_err(|e| e.to_string())?);
        let (sources, policy, summarizer) = Grpc(answering.clone()).services();
        tasks.push(tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(sources)
                .add_service(policy)
                .add_service(summarizer)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await
                .map_err(|e| format!("grpc: {e}"))
        }));
    }
    if let Some(addr) = arg(&args, "--http") {
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|e| format!("--http {addr}: {e}"))?;
        println!("http {}", listener.local_addr().map_err(|e| e.to_string())?);
        let app = http(answering);
        tasks.push(tokio::spawn(async move {
            axum::serve(listener, app)
                .await
                .map_err(|e| format!("http: {e}"))
        }));
    }
    if tasks.is_empty() {
        return Err(format!("give --grpc or --http\n\n{USAGE}"));
    }
    let _ = tokio::signal::ctrl_c().await;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ctxpack-fixture-store: {e}");
            ExitCode::FAILURE
        }
    }
}

//! `ctxpack-fixture-store`: the scenario fixture's stores (see
//! `ctxpack_service::fixture`) served as a store team would serve theirs —
//! `stores.proto` over gRPC and the HTTP JSON shape — for the load script's
//! upstreams and for trying the connectors by hand.

use ctxpack_service::fixture::{DemoSources, Faults, FixtureError};
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

/// Why the stores are not served: each reads as the message printed after
/// `ctxpack-fixture-store: `.
#[derive(Debug, thiserror::Error)]
enum RunError {
    /// No `--fixture`: the usage.
    #[error("{USAGE}")]
    Usage,
    /// Neither `--grpc` nor `--http`, with the usage.
    #[error("give --grpc or --http\n\n{USAGE}")]
    NoListener,
    /// `--delay-ms` is not a number (quoted).
    #[error("--delay-ms: {0:?} is not a number")]
    Delay(String),
    /// The fixture does not load.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    /// `flag`'s address cannot be listened on.
    #[error("{flag} {addr}: {source}")]
    Bind {
        /// `--grpc` or `--http`.
        flag: &'static str,
        /// The address.
        addr: String,
        /// Why not.
        source: std::io::Error,
    },
    /// The bound listener has no address.
    #[error("{0}")]
    Address(std::io::Error),
    /// The gRPC server stopped on an error.
    #[error("grpc: {0}")]
    Grpc(tonic::transport::Error),
    /// The HTTP server stopped on an error.
    #[error("http: {0}")]
    Http(std::io::Error),
}

/// A listener on `addr`, given with `flag`; and its address.
async fn bind(
    flag: &'static str,
    addr: String,
) -> Result<(tokio::net::TcpListener, std::net::SocketAddr), RunError> {
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|source| RunError::Bind { flag, addr, source })?;
    let bound = listener.local_addr().map_err(RunError::Address)?;
    Ok((listener, bound))
}

async fn run(args: Vec<String>) -> Result<(), RunError> {
    let dir = arg(&args, "--fixture").ok_or(RunError::Usage)?;
    let delay = match arg(&args, "--delay-ms") {
        Some(ms) => Some(Duration::from_millis(
            ms.parse().map_err(|_| RunError::Delay(ms))?,
        )),
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
        let (listener, bound) = bind("--grpc", addr).await?;
        println!("grpc {bound}");
        let (sources, policy, summarizer) = Grpc(answering.clone()).services();
        tasks.push(tokio::spawn(async move {
            tonic::transport::Server::builder()
                .add_service(sources)
                .add_service(policy)
                .add_service(summarizer)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await
                .map_err(RunError::Grpc)
        }));
    }
    if let Some(addr) = arg(&args, "--http") {
        let (listener, bound) = bind("--http", addr).await?;
        println!("http {bound}");
        let app = http(answering);
        tasks.push(tokio::spawn(async move {
            axum::serve(listener, app).await.map_err(RunError::Http)
        }));
    }
    if tasks.is_empty() {
        return Err(RunError::NoListener);
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

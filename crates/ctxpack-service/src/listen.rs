//! The HTTP listener: plain or TLS (rustls), with the limits a service
//! facing clients it does not control needs.
//!
//! - **A connection cap**: past `max-connections` open connections, a new
//!   one is closed as soon as it is accepted, so the file descriptors
//!   left serve the connections already open (and the metrics listener).
//! - **A header timeout**: a connection that does not send a whole request
//!   head within `header-timeout-ms` (a slow client, or one idle between
//!   requests) is closed. A TLS handshake has the same time.
//! - **A body timeout** (`body-timeout-ms`), applied by the handler that
//!   reads a body: 408.
//! - **A send timeout**: a connection whose writes make no progress for
//!   `send-timeout-ms` (a client that does not read its answer) is closed,
//!   and what it held is freed.
//! - **A shutdown deadline**: on stop, no new connections; those open get
//!   `shutdown-ms` to finish their requests, then are cut.
//!
//! gRPC's listener ([`incoming`]) has the same cap and send timeout; its
//! header timeout is the time to the connection's first byte (the HTTP/2
//! preface), and HTTP/2 keep-alive pings find dead peers after that.

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::{Semaphore, watch};
use tokio::time::Sleep;

/// The listener's limits (`[limits]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Most connections open at once.
    pub max_connections: usize,
    /// Most time to send a request head (and a TLS handshake).
    pub header_timeout: Duration,
    /// Most time to send a request body.
    pub body_timeout: Duration,
    /// Most time the requests in flight get after a stop.
    pub shutdown: Duration,
    /// Most time a write may make no progress.
    pub send_timeout: Duration,
    /// Most bytes of large answers (over 64 KiB each) held at once; past
    /// it such an answer is 503 with Retry-After.
    pub response_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            shutdown: Duration::from_secs(10),
            send_timeout: Duration::from_secs(30),
            response_bytes: 256 << 20,
        }
    }
}

/// The server side of TLS: a certificate chain and its key, PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct ServerTls {
    /// The certificate chain.
    pub cert: Vec<u8>,
    /// Its private key.
    pub key: Vec<u8>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerTls { .. }")
    }
}

impl ServerTls {
    /// The rustls configuration (ring), offering `alpn`.
    pub fn config(&self, alpn: &[&[u8]]) -> Result<rustls::ServerConfig, ListenError> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs = CertificateDer::pem_slice_iter(&self.cert)
            .collect::<Result<Vec<_>, _>>()
            .map_err(ListenError::CertNotPem)?;
        if certs.is_empty() {
            return Err(ListenError::NoCertificate);
        }
        let key = PrivateKeyDer::from_pem_slice(&self.key).map_err(ListenError::KeyNotPem)?;
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(ListenError::Tls)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(ListenError::KeyMismatch)?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(config)
    }
}

/// Why a listener cannot be set up or stopped serving: its TLS, its
/// address, its server. Each reads as the message the service has always
/// given (`--listen 127.0.0.1:80: …`, `tls.cert-file: …`).
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// `tls.cert-file` is not PEM.
    #[error("tls.cert-file: not PEM certificates: {0}")]
    CertNotPem(rustls::pki_types::pem::Error),
    /// `tls.cert-file` holds no certificate.
    #[error("tls.cert-file: holds no certificate")]
    NoCertificate,
    /// `tls.key-file` is not a PEM private key.
    #[error("tls.key-file: not a PEM private key: {0}")]
    KeyNotPem(rustls::pki_types::pem::Error),
    /// rustls refused its own configuration.
    #[error("{0}")]
    Tls(rustls::Error),
    /// The certificate is not the key's.
    #[error("tls: the certificate and key do not go together: {0}")]
    KeyMismatch(rustls::Error),
    /// The address given with `flag` cannot be listened on.
    #[error("{flag} {addr}: {source}")]
    Bind {
        /// The option that gave it (`--listen`, `--grpc`, `--metrics-listen`).
        flag: &'static str,
        /// The address.
        addr: std::net::SocketAddr,
        /// Why not.
        source: std::io::Error,
    },
    /// The bound listener has no address.
    #[error("{0}")]
    Address(std::io::Error),
    /// gRPC's TLS identity does not load.
    #[error("tls: {0}")]
    GrpcTls(tonic::transport::Error),
    /// The gRPC server stopped on an error.
    #[error("grpc: {0}")]
    Grpc(tonic::transport::Error),
}

/// A listener on `addr`, the option that gave it named in the error; and
/// the address it is bound to (port 0: the one chosen).
pub(crate) async fn bind(
    flag: &'static str,
    addr: std::net::SocketAddr,
) -> Result<(TcpListener, std::net::SocketAddr), ListenError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ListenError::Bind { flag, addr, source })?;
    let bound = listener.local_addr().map_err(ListenError::Address)?;
    Ok((listener, bound))
}

/// Serves `app` on `listener` until `stop` turns true, then gives the
/// requests in flight `limits.shutdown` before cutting them.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) -> Result<(), ListenError> {
    let mut server = Server {
        permits: Arc::new(Semaphore::new(limits.max_connections.max(1))),
        graceful: GracefulShutdown::new(),
        acceptor: tls.map(tokio_rustls::TlsAcceptor::from),
        conns: tokio::task::JoinSet::new(),
        refused_logged: None,
        app,
        limits,
    };
    loop {
        while server.conns.try_join_next().is_some() {}
        let Some((socket, peer)) = accept(&listener, &mut stop).await else {
            break;
        };
        let Some(permit) = server.admit(peer) else {
            drop(socket);
            continue;
        };
        let _ = socket.set_nodelay(true);
        let socket = Guarded::new(socket, permit, None, server.limits.send_timeout);
        server.spawn(socket, peer);
    }
    drop(listener);
    server.drain().await;
    Ok(())
}

/// The next connection on `listener`, or none once `stop` turns true. A
/// failed accept (out of descriptors or the like) is logged and retried
/// after a pause, so the loop does not spin.
async fn accept(
    listener: &TcpListener,
    stop: &mut watch::Receiver<bool>,
) -> Option<(TcpStream, std::net::SocketAddr)> {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => return Some(a),
                Err(e) => {
                    tracing::warn!(target: "ctxpack::serve", error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = async { let _ = stop.wait_for(|s| *s).await; } => return None,
        }
    }
}

/// What [`serve`] holds while it runs: the connection cap's permits, the
/// connections open (watched for a graceful shutdown), TLS if any.
struct Server {
    permits: Arc<Semaphore>,
    graceful: GracefulShutdown,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    conns: tokio::task::JoinSet<()>,
    /// When a refusal at the cap was last logged.
    refused_logged: Option<std::time::Instant>,
    app: Router,
    limits: Limits,
}

impl Server {
    /// One of the cap's permits for a connection from `peer`; none when
    /// the cap is reached (logged at most once per 10 s), and the
    /// connection is closed.
    fn admit(&mut self, peer: std::net::SocketAddr) -> Option<OwnedSemaphorePermit> {
        let permit = self.permits.clone().try_acquire_owned().ok();
        if permit.is_none()
            && self
                .refused_logged
                .is_none_or(|t| t.elapsed() > Duration::from_secs(10))
        {
            self.refused_logged = Some(std::time::Instant::now());
            tracing::warn!(
                target: "ctxpack::serve",
                max_connections = self.limits.max_connections,
                %peer,
                "connection refused: the connection cap is reached (logged once per 10 s)"
            );
        }
        permit
    }

    /// Serves HTTP/1.1 on `socket` in a task of its own, after the TLS
    /// handshake (within the header timeout) when TLS is configured.
    fn spawn(&mut self, socket: Guarded, peer: std::net::SocketAddr) {
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_timeout)
            .max_buf_size(64 << 10);
        let service = TowerToHyperService::new(self.app.clone());
        match &self.acceptor {
            None => {
                let conn = http.serve_connection(TokioIo::new(socket), service);
                let conn = self.graceful.watch(conn);
                self.conns.spawn(async move {
                    let _ = conn.await;
                });
            }
            Some(acceptor) => {
                let acceptor = acceptor.clone();
                let watcher = self.graceful.watcher();
                let handshake = self.limits.header_timeout;
                self.conns.spawn(async move {
                    let tls = match tokio::time::timeout(handshake, acceptor.accept(socket)).await
                    {
                        Ok(Ok(tls)) => tls,
                        Ok(Err(e)) => {
                            tracing::debug!(target: "ctxpack::serve", %peer, error = %e, "TLS handshake failed");
                            return;
                        }
                        Err(_) => return,
                    };
                    let conn = http.serve_connection(TokioIo::new(tls), service);
                    let _ = watcher.watch(conn).await;
                });
            }
        }
    }

    /// After a stop: the requests in flight get `limits.shutdown` to
    /// finish, then the connections still open are cut.
    async fn drain(mut self) {
        let deadline = self.limits.shutdown;
        if tokio::time::timeout(deadline, self.graceful.shutdown())
            .await
            .is_err()
        {
            tracing::warn!(
                target: "ctxpack::serve",
                after = ?deadline,
                "shutdown deadline passed: the connections still open are cut"
            );
        }
        self.conns.abort_all();
    }
}

/// The bytes of HTTP/2's connection preface: a gRPC connection sends them
/// within the header timeout or is closed.
pub const PREFACE: usize = 24;

/// A connection under the listener's limits: it holds one of the cap's
/// permits until it is dropped; taking longer than `first_bytes` to send
/// its first [`PREFACE`] bytes, or longer than `stall` for a write to make
/// progress, fails it, and the server closes it.
pub struct Guarded {
    io: TcpStream,
    _permit: OwnedSemaphorePermit,
    first_bytes: Option<Duration>,
    read: usize,
    stall: Duration,
    read_timer: Option<Pin<Box<Sleep>>>,
    write_timer: Option<Pin<Box<Sleep>>>,
}

impl Guarded {
    fn new(
        io: TcpStream,
        permit: OwnedSemaphorePermit,
        first_bytes: Option<Duration>,
        stall: Duration,
    ) -> Self {
        Guarded {
            io,
            _permit: permit,
            first_bytes,
            read: 0,
            stall,
            read_timer: None,
            write_timer: None,
        }
    }

    /// `Pending`, unless `timer` (started now for `after` if unset) ran out.
    fn wait<T>(
        timer: &mut Option<Pin<Box<Sleep>>>,
        after: Duration,
        cx: &mut Context<'_>,
        what: &str,
    ) -> Poll<std::io::Result<T>> {
        let t = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(after)));
        match t.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("{what} took longer than {after:?}"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(r) => {
                this.read += buf.filled().len() - before;
                if this.read >= PREFACE {
                    this.first_bytes = None;
                    this.read_timer = None;
                }
                Poll::Ready(r)
            }
            Poll::Pending => match this.first_bytes {
                Some(after) => Guarded::wait(&mut this.read_timer, after, cx, "the preface"),
                None => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Ready(r) => {
                this.write_timer = None;
                Poll::Ready(r)
            }
            Poll::Pending => Guarded::wait(&mut this.write_timer, this.stall, cx, "a write"),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_flush(cx) {
            Poll::Ready(r) => {
                this.write_timer = None;
                Poll::Ready(r)
            }
            Poll::Pending => Guarded::wait(&mut this.write_timer, this.stall, cx, "a flush"),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for Guarded {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

/// gRPC's connections from `listener` under `limits`: past the cap a new
/// one is closed at once; one that sends nothing within the header
/// timeout, or stops reading its answers, is closed.
pub fn incoming(
    listener: TcpListener,
    limits: Limits,
) -> impl futures_util::Stream<Item = std::io::Result<Guarded>> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    futures_util::stream::unfold(
        (listener, permits, limits),
        |(listener, permits, limits)| async move {
            loop {
                let (socket, _) = match listener.accept().await {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(target: "ctxpack::serve", error = %e, "gRPC accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    drop(socket);
                    continue;
                };
                let _ = socket.set_nodelay(true);
                let guarded = Guarded::new(
                    socket,
                    permit,
                    Some(limits.header_timeout),
                    limits.send_timeout,
                );
                return Some((Ok(guarded), (listener, permits, limits)));
            }
        },
    )
}

/// The bytes of large answers being sent at once, in KiB.
pub struct SendBudget {
    permits: Arc<Semaphore>,
    kib: u32,
}

impl SendBudget {
    /// A budget of `bytes`.
    pub fn new(bytes: usize) -> Self {
        let kib = u32::try_from(bytes >> 10).unwrap_or(u32::MAX).max(1);
        SendBudget {
            permits: Arc::new(Semaphore::new(kib as usize)),
            kib,
        }
    }

    /// Holds `bytes` of the budget (all of it, for an answer larger than
    /// the whole), or none when that much is not free now.
    pub fn take(&self, bytes: u64) -> Option<OwnedSemaphorePermit> {
        let kib = u32::try_from(bytes.div_ceil(1024))
            .unwrap_or(u32::MAX)
            .min(self.kib);
        self.permits.clone().try_acquire_many_owned(kib).ok()
    }
}

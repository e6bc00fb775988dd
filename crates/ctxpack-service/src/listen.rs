//! The HTTP listener: plain or TLS (rustls), with the limits a service
//! facing clients it does not control needs.
//!
//! - **A connection cap**, and one per client address: past
//!   `max-connections` open connections, or `max-connections-per-client`
//!   from one address, a new one takes the place of the connection idle
//!   the longest, which is closed; where every one has a request in
//!   flight, the new one is closed as soon as it is accepted (see
//!   [`conns`]).
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
//! gRPC's listener ([`incoming`]) has the same caps and send timeout; its
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

pub mod conns;
use conns::{Conns, Place, Refused};
use tokio::time::Sleep;

/// The listener's limits (`[limits]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Most connections open at once.
    pub max_connections: usize,
    /// Most connections open at once from one client address.
    pub max_connections_per_client: usize,
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
            max_connections_per_client: 128,
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
        graceful: GracefulShutdown::new(),
        acceptor: tls.map(tokio_rustls::TlsAcceptor::from),
        tasks: tokio::task::JoinSet::new(),
        app,
        limits,
    };
    let conns = Conns::new(
        server.limits.max_connections,
        server.limits.max_connections_per_client,
    );
    let mut admitted = admitted(
        listener,
        server.limits.clone(),
        conns,
        None,
        "connection",
        stop.clone(),
    );
    loop {
        while server.tasks.try_join_next().is_some() {}
        tokio::select! {
            next = admitted.recv() => match next {
                Some((socket, peer)) => server.spawn(socket, peer),
                None => break,
            },
            _ = async { let _ = stop.wait_for(|s| *s).await; } => break,
        }
    }
    drop(admitted);
    server.drain().await;
    Ok(())
}

/// The connections accepted on `listener` and admitted among `conns`
/// under `limits` (see [`conns`]), guarded (`first_bytes`: the time a
/// connection has to send its first [`PREFACE`] bytes), until `stop`
/// turns true or the receiver is dropped. A connection past a cap waits
/// for its first bytes in a task of its own, at most [`conns::WAITING`]
/// times as many at once as the cap: past that, the one waiting the
/// longest is closed once it has waited [`conns::GRACE`], and until then
/// the new one is.
fn admitted(
    listener: TcpListener,
    limits: Limits,
    conns: Arc<Conns>,
    first_bytes: Option<Duration>,
    what: &'static str,
    mut stop: watch::Receiver<bool>,
) -> tokio::sync::mpsc::Receiver<(Guarded, std::net::SocketAddr)> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let room = conns::WAITING * limits.max_connections.max(1);
    tokio::spawn(async move {
        // The connections waiting for their first bytes, oldest first:
        // dropping one's sender closes it.
        let mut waiting: std::collections::VecDeque<(
            tokio::time::Instant,
            tokio::sync::oneshot::Sender<()>,
        )> = std::collections::VecDeque::new();
        // When a refusal was last logged, by this loop or a waiting task.
        let logged = Arc::new(std::sync::Mutex::new(None));
        let send_timeout = limits.send_timeout;
        let guard = move |socket: TcpStream, place: Place| {
            let _ = socket.set_nodelay(true);
            Guarded::new(socket, place, first_bytes, send_timeout)
        };
        while let Some((socket, peer)) = accept(&listener, &mut stop).await {
            let refused = match conns.admit(peer, false) {
                Ok(place) => {
                    if tx.send((guard(socket, place), peer)).await.is_err() {
                        break;
                    }
                    continue;
                }
                Err(r) => r,
            };
            if refused != Refused::Wait {
                log_refused(&conns, peer, &limits, &logged, what, refused);
                continue;
            }
            // Past a cap: taken once it sends something; at once if it has.
            let socket = match sent_already(socket) {
                Some((socket, true)) => {
                    match conns.admit(peer, true) {
                        Ok(place) => {
                            if tx.send((guard(socket, place), peer)).await.is_err() {
                                break;
                            }
                        }
                        Err(r) => log_refused(&conns, peer, &limits, &logged, what, r),
                    }
                    continue;
                }
                Some((socket, false)) => socket,
                None => continue,
            };
            waiting.retain(|(_, w)| !w.is_closed());
            if waiting.len() >= room {
                // The oldest gives up its turn once it has had its grace;
                // until then, the newest waits no more.
                match waiting.front() {
                    Some((since, _)) if since.elapsed() >= conns::GRACE => {
                        waiting.pop_front();
                    }
                    _ => {
                        log_refused(&conns, peer, &limits, &logged, what, refused);
                        continue;
                    }
                }
            }
            let (closer, closed) = tokio::sync::oneshot::channel::<()>();
            waiting.push_back((tokio::time::Instant::now(), closer));
            let (conns, tx, logged) = (conns.clone(), tx.clone(), logged.clone());
            let (limits, most) = (
                limits.clone(),
                conns::FIRST_BYTES.min(limits.header_timeout),
            );
            tokio::spawn(async move {
                let mut byte = [0u8; 1];
                tokio::select! {
                    biased;
                    r = tokio::time::timeout(most, socket.peek(&mut byte)) => if !matches!(r, Ok(Ok(1))) {
                        return;
                    },
                    _ = closed => return,
                }
                match conns.admit(peer, true) {
                    Ok(place) => {
                        let _ = tx.send((guard(socket, place), peer)).await;
                    }
                    Err(r) => log_refused(&conns, peer, &limits, &logged, what, r),
                }
            });
        }
    });
    rx
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

/// What [`serve`] holds while it runs: the connections open (watched for
/// a graceful shutdown), TLS if any.
struct Server {
    graceful: GracefulShutdown,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    tasks: tokio::task::JoinSet<()>,
    app: Router,
    limits: Limits,
}

impl Server {
    /// Serves HTTP/1.1 on `socket` in a task of its own, after the TLS
    /// handshake (within the header timeout) when TLS is configured.
    fn spawn(&mut self, socket: Guarded, peer: std::net::SocketAddr) {
        let conn = socket.place.conn().clone();
        let mut http = hyper::server::conn::http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_timeout)
            .max_buf_size(64 << 10);
        let service = TowerToHyperService::new(conns::Busy {
            inner: self.app.clone(),
            on: conns::On::Conn(conn),
        });
        match &self.acceptor {
            None => {
                let conn = http.serve_connection(TokioIo::new(socket), service);
                let conn = self.graceful.watch(conn);
                self.tasks.spawn(async move {
                    let _ = conn.await;
                });
            }
            Some(acceptor) => {
                let acceptor = acceptor.clone();
                let watcher = self.graceful.watcher();
                let handshake = self.limits.header_timeout;
                self.tasks.spawn(async move {
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
        self.tasks.abort_all();
    }
}

/// The bytes of HTTP/2's connection preface: a gRPC connection sends them
/// within the header timeout or is closed.
pub const PREFACE: usize = 24;

/// Whether `socket` has sent something already (looked at without
/// waiting, and without taking it), with the socket; none where it is
/// closed or failed. A socket just accepted has no readiness known to the
/// runtime yet, so it is looked at through the system's socket.
fn sent_already(socket: TcpStream) -> Option<(TcpStream, bool)> {
    let std = socket.into_std().ok()?;
    let mut byte = [0u8; 1];
    let sent = match std.peek(&mut byte) {
        Ok(0) => return None,
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
        Err(_) => return None,
    };
    Some((TcpStream::from_std(std).ok()?, sent))
}

/// Logs that a connection from `peer` (`what`: the listener's kind of
/// connection) was refused for `refused`, at most once per 10 s (`logged`:
/// when last).
fn log_refused(
    conns: &Conns,
    peer: std::net::SocketAddr,
    limits: &Limits,
    logged: &std::sync::Mutex<Option<std::time::Instant>>,
    what: &str,
    refused: Refused,
) {
    let now = std::time::Instant::now();
    let due = {
        // A panic while held leaves a time or none: taken as it is.
        let mut last = logged.lock().unwrap_or_else(|p| p.into_inner());
        let due = last.is_none_or(|t| now.duration_since(t) > Duration::from_secs(10));
        if due {
            *last = Some(now);
        }
        due
    };
    if due {
        let (open, closing) = conns.count();
        let why = match refused {
            Refused::Wait => "past a cap, it sent nothing",
            Refused::Full => "every connection is busy at max-connections",
            Refused::Client => {
                "every connection of the client is busy at max-connections-per-client"
            }
        };
        tracing::warn!(
            target: "ctxpack::serve",
            max_connections = limits.max_connections,
            max_connections_per_client = limits.max_connections_per_client,
            open,
            closing,
            %peer,
            "{what} refused: {why} (logged once per 10 s)"
        );
    }
}

/// A connection under the listener's limits: it holds its place among the
/// connections until it is dropped; taking longer than `first_bytes` to
/// send its first [`PREFACE`] bytes, or longer than `stall` for a write to
/// make progress, or being chosen to make room for another, fails it, and
/// the server closes it.
pub struct Guarded {
    io: TcpStream,
    place: Place,
    first_bytes: Option<Duration>,
    read: usize,
    stall: Duration,
    read_timer: Option<Pin<Box<Sleep>>>,
    write_timer: Option<Pin<Box<Sleep>>>,
}

impl Guarded {
    fn new(io: TcpStream, place: Place, first_bytes: Option<Duration>, stall: Duration) -> Self {
        Guarded {
            io,
            place,
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
        if this.place.conn().evicted(cx) {
            return Poll::Ready(Err(evicted()));
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(r) => {
                let read = buf.filled().len() - before;
                if read > 0 {
                    this.place.conn().heard();
                }
                this.read += read;
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
        if this.place.conn().evicted(cx) {
            return Poll::Ready(Err(evicted()));
        }
        match Pin::new(&mut this.io).poll_write(cx, buf) {
            Poll::Ready(r) => {
                if r.as_ref().is_ok_and(|&n| n > 0) {
                    this.place.conn().touched();
                }
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

/// The error a connection chosen to make room fails with.
fn evicted() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "closed to make room: idle the longest at the connection cap",
    )
}

impl tonic::transport::server::Connected for Guarded {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

/// gRPC's connections from `listener` under `limits`, counted in `conns`
/// (see [`conns`]), until `stop`; one that sends nothing within the
/// header timeout, or stops reading its answers, is closed.
pub fn incoming(
    listener: TcpListener,
    limits: Limits,
    conns: Arc<Conns>,
    stop: watch::Receiver<bool>,
) -> impl futures_util::Stream<Item = std::io::Result<Guarded>> {
    let first_bytes = Some(limits.header_timeout);
    let rx = admitted(
        listener,
        limits,
        conns,
        first_bytes,
        "gRPC connection",
        stop,
    );
    futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|(g, _)| (Ok(g), rx))
    })
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

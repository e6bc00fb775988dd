//! Clients the service does not control, at its listeners: a tenant past
//! its rate; slow, idle and too many connections; clients that do not
//! read their answers; bad protobuf on gRPC (and gRPC health); TLS on
//! both listeners.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{demo, get, post_json, serve, unauthenticated_options};
use ctxpack_service::client::Client;
use ctxpack_service::grpc::pb;
use ctxpack_service::{Rig, start_rigged};
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One answer read from `r`: its status line and headers (lower case),
/// and its body (by its `content-length`).
async fn answer_on(r: &mut (impl AsyncReadExt + Unpin)) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(r.read(&mut byte).await.unwrap(), 1, "closed mid-answer");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .map_or(0, |n| n.trim().parse().unwrap());
    let mut body = vec![0u8; length];
    r.read_exact(&mut body).await.unwrap();
    (head, body)
}

/// A POST of `body` as `tenant`, of `content-type`.
fn raw_post(tenant: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut req = format!(
        "POST /factory/runs/r/attempts/1/context HTTP/1.1\r\nHost: localhost\r\n\
         x-tenant-id: {tenant}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    req
}

/// A refusal before the body is read (the tenant's rate here) on a
/// kept-alive connection is read whole by the client, `Retry-After`
/// included: a body of up to a mebibyte is read and dropped and the
/// connection takes the next request; a larger one is answered with
/// `Connection: close` and the connection closed after the answer. A
/// body that is not `application/json` is 415, naming its type.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_request_on_a_kept_alive_connection_is_answered_whole() {
    let mut o = unauthenticated_options("refused-kept-alive");
    o.request_limits = Some(ctxpack_service::settings::RequestLimits {
        requests_per_second: 0.2,
        burst: 1,
        ..Default::default()
    });
    let (running, _c) = serve(o).await;
    let s = tokio::net::TcpStream::connect(running.http).await.unwrap();
    let (mut r, mut w) = s.into_split();
    // The burst spent on a body of another type: 415, the connection kept.
    w.write_all(&raw_post("kept", "text/plain", b"{}"))
        .await
        .unwrap();
    let (head, body) = answer_on(&mut r).await;
    assert!(head.starts_with("http/1.1 415"), "{head}");
    let said: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        said["error"]["message"],
        "request body: Content-Type \"text/plain\"; send it as application/json"
    );
    assert!(!head.contains("connection: close"), "{head}");
    // 100 kB refused at the rate: read and dropped, the connection kept.
    let big = vec![b' '; 100_000];
    w.write_all(&raw_post("kept", "application/json", &big))
        .await
        .unwrap();
    let (head, _) = answer_on(&mut r).await;
    assert!(head.starts_with("http/1.1 429"), "{head}");
    assert!(head.contains("retry-after: "), "{head}");
    assert!(!head.contains("connection: close"), "{head}");
    w.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let (head, _) = answer_on(&mut r).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    // 3 MB refused: answered, then closed, saying so; the client writing
    // its body meanwhile may be cut off, never before the answer.
    let huge = raw_post("kept", "application/json", &vec![b' '; 3 << 20]);
    let writer = tokio::spawn(async move {
        let _ = w.write_all(&huge).await;
    });
    let (head, _) = answer_on(&mut r).await;
    assert!(head.starts_with("http/1.1 429"), "{head}");
    assert!(head.contains("retry-after: "), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), r.read_to_end(&mut rest)).await;
    assert!(matches!(closed, Ok(Ok(_)) | Ok(Err(_))), "still open");
    writer.await.unwrap();
    running.shutdown().await.unwrap();
}

/// A tenant past its rate gets 429 with Retry-After, on HTTP and gRPC;
/// another tenant is not held back.
#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_past_its_rate_is_answered_429_with_retry_after() {
    let mut o = unauthenticated_options("hostile-rate");
    // One request every 5 s after a burst of 3: the burst is spent long
    // before a token comes back, however slow the machine.
    o.request_limits = Some(ctxpack_service::settings::RequestLimits {
        requests_per_second: 0.2,
        burst: 3,
        ..Default::default()
    });
    let (running, c) = serve(o).await;
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let r = get(&c, "/factory/runs/r/context-snapshots", "rate").await;
        if r.status == 429 {
            assert!(r.headers.contains_key("retry-after"));
        }
        statuses.push(r.status);
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    let r = get(&c, "/factory/runs/r/context-snapshots", "calm").await;
    assert_eq!(r.status, 200);

    let mut grpc = pb::context_assembly_client::ContextAssemblyClient::connect(format!(
        "http://{}",
        running.grpc.unwrap()
    ))
    .await
    .unwrap();
    let mut r = tonic::Request::new(pb::AssembleRequest {
        run_id: "r".into(),
        attempt_id: "1".into(),
        request_json: serde_json::to_string(&demo()).unwrap(),
    });
    r.metadata_mut()
        .insert("x-tenant-id", "rate".parse().unwrap());
    let e = grpc.assemble(r).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
    assert!(e.metadata().get("retry-after").is_some());
    running.shutdown().await.unwrap();
}

/// The status of `GET /healthz`, no tenant, on `c`.
async fn health(c: &Client) -> u16 {
    c.send("GET", "/healthz", None, Vec::new())
        .await
        .unwrap()
        .status
}

/// Reads from `s` until it is closed; how long that took.
async fn closed_within(s: &mut tokio::net::TcpStream, most: Duration) -> Duration {
    let t = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(most, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return t.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("still open after {most:?}"),
        }
    }
}

/// Slow and idle clients are cut at the header timeout; past the cap a new
/// connection takes the place of the longest idle one, and is closed at
/// once only where every one is busy; a client stuck mid-header does not
/// hold the shutdown past its deadline.
#[tokio::test(flavor = "multi_thread")]
async fn slow_idle_and_too_many_connections_do_not_hold_the_service() {
    let mut o = unauthenticated_options("hostile-slow");
    o.listen_limits = Some(ctxpack_service::listen::Limits {
        max_connections: 4,
        max_connections_per_client: 4,
        header_timeout: Duration::from_millis(500),
        body_timeout: Duration::from_millis(500),
        shutdown: Duration::from_millis(500),
        send_timeout: Duration::from_millis(500),
        response_bytes: 8 << 20,
    });
    let (running, c) = serve(o).await;
    let addr = running.http;
    // Mid-header and idle connections are closed at the header timeout.
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    closed_within(&mut slow, Duration::from_secs(5)).await;
    closed_within(&mut idle, Duration::from_secs(5)).await;
    // A body that never finishes: 408.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(
        b"POST /factory/runs/r/attempts/1/context HTTP/1.1\r\nHost: localhost\r\n\
          x-tenant-id: acme\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"query\"",
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    // Four idle connections fill the cap: a fifth that sends a request
    // takes the place of the one idle the longest, which is closed, and
    // is served.
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(tokio::net::TcpStream::connect(addr).await.unwrap());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    held[1]
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 256];
    let n = held[1].read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    let mut fifth = tokio::net::TcpStream::connect(addr).await.unwrap();
    fifth
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let took = closed_within(&mut held[0], Duration::from_millis(400)).await;
    assert!(took < Duration::from_millis(400));
    let n = fifth.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    drop((held, fifth));
    // Four connections each sending a body (busy until it ends or the
    // body timeout): a fifth is closed at once, and none of the four. One
    // that sends nothing waits for its first bytes (at most the header
    // timeout here), then is closed.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut busy = Vec::new();
    for _ in 0..4 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            b"POST /factory/runs/r/attempts/1/context HTTP/1.1\r\nHost: localhost\r\n\
              x-tenant-id: acme\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{",
        )
        .await
        .unwrap();
        busy.push(s);
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut fifth = tokio::net::TcpStream::connect(addr).await.unwrap();
    fifth
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let took = closed_within(&mut fifth, Duration::from_millis(300)).await;
    assert!(took < Duration::from_millis(300));
    let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    let took = closed_within(&mut silent, Duration::from_secs(2)).await;
    assert!(took >= Duration::from_millis(400), "{took:?}");
    for s in &mut busy {
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    }
    drop(busy);
    // Once they are gone, new connections are served again.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(health(&c).await, 200);
    // gRPC: idle sockets are closed at the header timeout, and past the
    // cap a new one that sends something takes the place of the longest
    // idle.
    let grpc = running.grpc.unwrap();
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(tokio::net::TcpStream::connect(grpc).await.unwrap());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut fifth = tokio::net::TcpStream::connect(grpc).await.unwrap();
    fifth.write_all(b"PRI * HTTP/2.0").await.unwrap();
    assert!(
        closed_within(&mut idle[0], Duration::from_millis(400)).await < Duration::from_millis(400)
    );
    // Half a preface, then nothing: closed too.
    idle[1].write_all(b"PRI * HTTP/2.0").await.unwrap();
    for s in idle[1..].iter_mut().chain([&mut fifth]) {
        closed_within(s, Duration::from_secs(5)).await;
    }
    // A client stuck mid-header at shutdown.
    let mut stuck = tokio::net::TcpStream::connect(addr).await.unwrap();
    stuck.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    let t = Instant::now();
    running.shutdown().await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

/// Whether the service closed `s` (without waiting).
fn closed(s: &tokio::net::TcpStream) -> bool {
    let mut b = [0u8; 1];
    match s.try_read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

/// A flood of idle sockets, reopened as fast as they are closed, from the
/// same address as the callers: every caller is served, on HTTP and on
/// gRPC, and the listener never holds more than its cap (and the sockets
/// it is closing).
#[tokio::test(flavor = "multi_thread")]
async fn idle_sockets_reopened_as_fast_as_closed_do_not_lock_callers_out() {
    let mut o = unauthenticated_options("hostile-idle-flood");
    o.listen_limits = Some(ctxpack_service::listen::Limits {
        max_connections: 32,
        max_connections_per_client: 32,
        ..Default::default()
    });
    let (running, c) = serve(o).await;
    let (addr, grpc) = (running.http, running.grpc.unwrap());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut flood = Vec::new();
    for target in [addr, grpc] {
        for _ in 0..4 {
            let stop = stop.clone();
            flood.push(tokio::spawn(async move {
                // Each task keeps 40 idle sockets open, reopening each as
                // soon as the service closes it.
                let mut opened = 0u32;
                let mut open: Vec<tokio::net::TcpStream> = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    open.retain(|s| !closed(s));
                    while open.len() < 40 {
                        match tokio::net::TcpStream::connect(target).await {
                            Ok(s) => {
                                open.push(s);
                                opened += 1;
                            }
                            Err(_) => break,
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                opened
            }));
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Callers, each on a connection of its own, sending its request as
    // it connects.
    let mut served = 0;
    for _ in 0..20 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut answer)).await;
        if answer.starts_with(b"HTTP/1.1 200") {
            served += 1;
        }
    }
    let mut grpc_served = 0;
    for _ in 0..10 {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{grpc}"))
            .unwrap()
            .connect()
            .await;
        let Ok(channel) = channel else { continue };
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        let r = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: String::new(),
            })
            .await;
        if r.is_ok() {
            grpc_served += 1;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut opened = 0;
    for f in flood {
        opened += f.await.unwrap();
    }
    // The flood did reach past the caps many times over.
    assert!(opened > 4 * 32, "{opened}");
    assert_eq!((served, grpc_served), (20, 10));
    assert_eq!(health(&c).await, 200);
    running.shutdown().await.unwrap();
}

/// Clients that ask for large answers and do not read them: each is cut
/// at the send timeout, and while they hold the sending budget another
/// large answer is 503 with Retry-After, not more memory.
#[tokio::test(flavor = "multi_thread")]
async fn clients_that_do_not_read_their_answers_hold_bounded_memory() {
    let mut o = unauthenticated_options("hostile-readers");
    o.max_body = 32 << 20;
    o.deadline = Duration::from_secs(60);
    o.listen_limits = Some(ctxpack_service::listen::Limits {
        send_timeout: Duration::from_millis(1000),
        response_bytes: 12 << 20,
        ..Default::default()
    });
    let (running, c) = serve(o).await;
    // An 8 MB answer: more than the socket buffers take.
    let mut v = demo();
    v["instructions"] = json!(vec!["Keep separators strict. ".repeat(1400); 250]);
    v["budget"] = json!(100_000_000);
    let r = post_json(&c, "/factory/runs/r/attempts/big/context", "acme", &v).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["contextSnapshotId"].as_str().unwrap().to_owned();
    let get = format!(
        "GET /factory/context-snapshots/{id}/content HTTP/1.1\r\nHost: localhost\r\nx-tenant-id: acme\r\n\r\n"
    );
    // One client asks and does not read: it holds 8 of the 12 MB.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(running.http).await.unwrap();
    stalled.write_all(get.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let busy = common::get(
        &c,
        &format!("/factory/context-snapshots/{id}/content"),
        "acme",
    )
    .await;
    assert_eq!(busy.status, 503, "{} bytes", busy.body.len());
    assert!(busy.headers.contains_key("retry-after"));
    // Small answers are not held back.
    assert_eq!(health(&c).await, 200);
    // The stalled client is cut at the send timeout; then the answer goes.
    let t = Instant::now();
    let answered = loop {
        let r = common::get(
            &c,
            &format!("/factory/context-snapshots/{id}/content"),
            "acme",
        )
        .await;
        if r.status == 200 {
            break r.body.len();
        }
        assert!(t.elapsed() < Duration::from_secs(10), "never freed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(answered > 8_000_000, "{answered}");
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0;
    loop {
        match stalled.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    assert!(
        got < answered,
        "the stalled client was cut: it got {got} of {answered}"
    );
    running.shutdown().await.unwrap();
}

/// A message that does not decode is the client's error, and gRPC health
/// follows readiness.
#[tokio::test(flavor = "multi_thread")]
async fn grpc_bad_protobuf_is_invalid_argument_and_health_is_served() {
    #[derive(Clone, PartialEq, prost::Message)]
    struct Wrong {
        #[prost(uint64, tag = "1")]
        run_id: u64,
    }
    let (running, _) = serve(unauthenticated_options("hostile-grpc")).await;
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://{}", running.grpc.unwrap()))
            .unwrap()
            .connect()
            .await
            .unwrap();
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.unwrap();
    let mut req = tonic::Request::new(Wrong { run_id: 7 });
    req.metadata_mut()
        .insert("x-tenant-id", "acme".parse().unwrap());
    let e = grpc
        .unary::<_, pb::AssembleReply, _>(
            req,
            "/ctxpack.assembly.v1.ContextAssembly/Assemble"
                .parse()
                .unwrap(),
            tonic_prost::ProstCodec::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let mut serving = false;
    for _ in 0..50 {
        let r = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "ctxpack.assembly.v1.ContextAssembly".into(),
            })
            .await;
        if let Ok(r) = r
            && r.into_inner().status == 1
        {
            serving = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(serving, "health never said SERVING");
    running.shutdown().await.unwrap();
}

/// With `[tls]`, HTTP is HTTPS and gRPC is over TLS on the same
/// certificate; a plain client gets no answer.
#[tokio::test(flavor = "multi_thread")]
async fn the_listeners_serve_tls() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let (cert_pem, key_pem) = (cert.cert.pem(), cert.signing_key.serialize_pem());
    let mut o = unauthenticated_options("hostile-tls");
    o.tls = Some(ctxpack_service::listen::ServerTls {
        cert: cert_pem.clone().into_bytes(),
        key: key_pem.into_bytes(),
    });
    let running = start_rigged(o, Rig::scenarios()).await.unwrap();

    // HTTPS, the certificate checked against itself.
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(running.http).await.unwrap();
    let mut tls = connector
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    tls.read_to_end(&mut answer).await.unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Plain HTTP to the TLS port: no answer.
    common::openapi::hold_answers();
    let plain = Client::new(format!("http://{}", running.http))
        .send("GET", "/healthz", None, Vec::new())
        .await;
    assert!(plain.is_err() || plain.unwrap().status != 200);

    // gRPC over TLS: the health service answers.
    let channel =
        tonic::transport::Endpoint::from_shared(format!("https://{}", running.grpc.unwrap()))
            .unwrap()
            .tls_config(
                tonic::transport::ClientTlsConfig::new()
                    .ca_certificate(tonic::transport::Certificate::from_pem(&cert_pem))
                    .domain_name("localhost"),
            )
            .unwrap()
            .connect()
            .await
            .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    health
        .check(tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        })
        .await
        .unwrap();
    running.shutdown().await.unwrap();
}

/// A body declared larger than the service takes is refused before the
/// client sends it: `Expect: 100-continue` with a 50 MB `Content-Length`
/// is answered 413, never `100 Continue`.
#[tokio::test(flavor = "multi_thread")]
async fn a_body_declared_too_large_is_refused_before_100_continue() {
    let (running, _c) = serve(unauthenticated_options("continue")).await;
    let mut s = tokio::net::TcpStream::connect(running.http).await.unwrap();
    s.write_all(
        b"POST /factory/runs/r/attempts/1/context HTTP/1.1\r\nHost: localhost\r\n\
          x-tenant-id: continue\r\ncontent-type: application/json\r\n\
          Expect: 100-continue\r\nContent-Length: 50000000\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(!answer.contains("100 Continue"), "{answer}");
    assert!(answer.contains("larger than"), "{answer}");
    running.shutdown().await.unwrap();
}

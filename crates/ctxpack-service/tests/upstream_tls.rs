//! Upstreams over TLS, on loopback: the service checks the store's
//! certificate against the `ca-file` (or refuses it) and shows a client
//! certificate to a store that asks for one (mTLS), over gRPC and HTTP.

// Helpers outside #[test] functions unwrap too: a failure is the test's.
#![allow(clippy::unwrap_used)]

mod common;

use common::stores::{Behaviour, answering, assemble, call_outcome, config, options, serve};
use ctxpack_service::upstream_server::{Grpc, http};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

fn tempdir() -> PathBuf {
    common::tempdir("upstreams")
}

/// A CA, a certificate for 127.0.0.1 it signed, and a client certificate
/// it signed: (ca, server cert, server key, client cert, client key), PEM.
fn certificates() -> (String, String, String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, SanType};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let mut server = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    server
        .subject_alt_names
        .push(SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let server_cert = server.signed_by(&server_key, &issuer).unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client = CertificateParams::new(vec!["store-client".to_owned()]).unwrap();
    let client_cert = client.signed_by(&client_key, &issuer).unwrap();
    (
        ca_cert.pem(),
        server_cert.pem(),
        server_key.serialize_pem(),
        client_cert.pem(),
        client_key.serialize_pem(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn upstreams_over_tls_check_the_store_and_show_a_client_certificate() {
    let (ca, server_cert, server_key, client_cert, client_key) = certificates();
    let dir = tempdir();
    for (name, pem) in [
        ("ca.pem", &ca),
        ("client.pem", &client_cert),
        ("client.key", &client_key),
    ] {
        std::fs::write(dir.join(name), pem).unwrap();
    }
    // An impostor's CA, which the store's certificate is not signed by.
    std::fs::write(dir.join("other-ca.pem"), certificates().0).unwrap();
    let b = Arc::new(Behaviour::default());

    // gRPC over TLS, the store requiring a client certificate its CA signed.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let grpc_addr = listener.local_addr().unwrap();
    let (sources, policy, summarizer) = Grpc(answering(b.clone())).services();
    let tls = tonic::transport::ServerTlsConfig::new()
        .identity(tonic::transport::Identity::from_pem(
            &server_cert,
            &server_key,
        ))
        .client_ca_root(tonic::transport::Certificate::from_pem(&ca));
    let grpc_task = tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .tls_config(tls)
            .unwrap()
            .add_service(sources)
            .add_service(policy)
            .add_service(summarizer)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
            .await;
    });

    // HTTPS, the same.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let https_addr = listener.local_addr().unwrap();
    let acceptor = {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
            .unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![CertificateDer::from_pem_slice(server_cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(server_key.as_bytes()).unwrap(),
            )
            .unwrap();
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    };
    let app = http(answering(b.clone()));
    let https_task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service =
                    hyper::service::service_fn(move |r: hyper::Request<hyper::body::Incoming>| {
                        let app = app.clone();
                        async move {
                            use tower::ServiceExt;
                            app.oneshot(r.map(axum::body::Body::new)).await
                        }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });

    // Each upstream's roots and whether it shows the client certificate.
    let toml = |grpc: (&str, bool), https: (&str, bool)| {
        let tls = |(ca, identity): (&str, bool)| {
            let id = if identity {
                "cert-file = \"client.pem\"\nkey-file = \"client.key\"\n"
            } else {
                ""
            };
            format!("retries = 0\nca-file = \"{ca}\"\n{id}")
        };
        format!(
            "[builder]\nprofile = {{ rag = {{ retrieve-limit = 4 }} }}\n\
             [upstreams.retrieve]\ngrpc = \"https://{grpc_addr}\"\n{}\
             [upstreams.review]\nhttp = \"https://{https_addr}/policy\"\n{}",
            tls(grpc),
            tls(https)
        )
    };
    let run = |grpc: (&'static str, bool), https: (&'static str, bool)| {
        let text = toml(grpc, https);
        let dir = dir.clone();
        async move {
            let dir2 = tempdir();
            for f in ["ca.pem", "client.pem", "client.key", "other-ca.pem"] {
                std::fs::copy(dir.join(f), dir2.join(f)).unwrap();
            }
            let (running, c) = serve(options(&dir2, Some(config(&dir2, &text)))).await;
            let out = assemble(&c, 1, 20000).await;
            running.shutdown().await.unwrap();
            out
        }
    };
    let good = ("ca.pem", true);

    // Trusted and identified: answered over both.
    let (status, reply, detail) = run(good, good).await;
    assert_eq!(status, 201, "{reply}");
    assert_eq!(reply["status"], json!(["complete"]), "{detail}");
    assert_eq!(
        call_outcome(&detail, "sources.retrieve"),
        json!({"answered": 3})
    );
    assert_eq!(
        (b.calls("sources.retrieve"), b.calls("policy.review")),
        (1, 1)
    );

    // Each upstream refused in turn: over gRPC retrieval degrades; over
    // HTTPS the policy fails the assembly.
    for bad in [
        // No client certificate: the store refuses the handshake.
        ("ca.pem", false),
        // A store whose certificate the configured roots did not sign is
        // not trusted.
        ("other-ca.pem", true),
    ] {
        let (status, reply, detail) = run(bad, good).await;
        assert_eq!(
            (status, &reply["status"]),
            (201, &json!(["degraded"])),
            "{bad:?}: {detail}"
        );
        let (status, reply, _) = run(good, bad).await;
        assert_eq!(status, 422, "{bad:?}: {reply}");
    }

    // Only the trusted, identified calls reached the stores' code: the
    // first assembly's two, and the retrievals before the two failed
    // reviews.
    assert_eq!(b.calls("sources.retrieve"), 3);
    assert_eq!(b.calls("policy.review"), 1);
    grpc_task.abort();
    https_task.abort();
}

//! What the service logs of refusals: each line with its reason, and no
//! more than a few a second however many a client provokes, the next
//! line counting those left out. (A test binary of its own: it installs
//! the process's log subscriber.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{full_options, get_with, serve};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use std::sync::{Arc, Mutex};

/// Every line the process logs.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_are_logged_with_their_reason_and_never_flood() {
    let log = Captured::default();
    let writer = log.clone();
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .init();
    let dir = common::tempdir("logs");
    let secret = dir.join("dev.secret");
    std::fs::write(&secret, "a development secret of 32 bytes or more").unwrap();
    let mut o = full_options(dir.join("store.db").display().to_string());
    o.auth = Some(ctxpack_service::auth::AuthFile {
        issuer: Some("https://issuer.test/".into()),
        audience: Some("ctxpack".into()),
        hs256_secret_file: Some(secret),
        ..Default::default()
    });
    let (running, c) = serve(o).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = |scope: &str| {
        let claims = json!({"iss": "https://issuer.test/", "aud": "ctxpack", "sub": "c1",
                            "tenant_id": "acme", "scope": scope, "exp": now + 600});
        let key = EncodingKey::from_secret(b"a development secret of 32 bytes or more");
        let t = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).unwrap();
        format!("Bearer {t}")
    };
    let refused = || {
        log.lines()
            .into_iter()
            .filter(|l| l.contains("refused"))
            .collect::<Vec<_>>()
    };

    // A 401 and a 403 each say why.
    let r = get_with(
        &c,
        "/factory/runs/r/context-snapshots",
        &[("authorization", "Bearer nonsense")],
    )
    .await;
    assert_eq!(r.status, 401);
    let r = get_with(
        &c,
        "/factory/runs/r/context-snapshots",
        &[("authorization", &token("factory.metrics.read"))],
    )
    .await;
    assert_eq!(r.status, 403);
    let lines = refused();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[0].contains("status=401") && lines[0].contains("reason=\"authorization:"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("status=403") && lines[1].contains("does not grant factory.runs.read"),
        "{}",
        lines[1]
    );

    // A client refused 500 times in a burst: a few lines, not 500.
    let t = std::time::Instant::now();
    for _ in 0..500 {
        get_with(
            &c,
            "/factory/runs/r/context-snapshots",
            &[("authorization", "Bearer nonsense")],
        )
        .await;
    }
    let seconds = t.elapsed().as_secs() + 1;
    let burst = refused().len() - 2;
    assert!(
        burst as u64 <= 10 * (seconds + 1),
        "{burst} lines in {seconds} s"
    );
    // Past the second, the next line counts the ones left out.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    get_with(
        &c,
        "/factory/runs/r/context-snapshots",
        &[("authorization", "Bearer nonsense")],
    )
    .await;
    let last = refused().pop().unwrap();
    let left_out: u64 = last
        .split("suppressed=")
        .nth(1)
        .and_then(|v| v.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(left_out > 0, "{last}");
    let total: u64 = refused()
        .iter()
        .filter_map(|l| {
            l.split("suppressed=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum();
    // Every refusal is a line or counted in one.
    assert_eq!(total + refused().len() as u64, 502 + 1, "{:#?}", refused());
    running.shutdown().await.unwrap();
}

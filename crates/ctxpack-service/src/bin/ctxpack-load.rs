//! Load for `ctxpack serve`: N clients posting assemblies for T seconds,
//! each for a new attempt, as fast as answered or at a set total rate.
//! Prints throughput and latency percentiles; writes the id of every
//! snapshot the service acknowledged (2xx, or 422 with its failed
//! snapshot) to `--acks`, for `ctxpack census --acks` to check.
//!
//! A request that cannot connect (the service restarting) is retried, for
//! the same attempt, until it is answered or the run ends.
//!
//! Against a service with `[auth]`, `--tokens FILE` gives the bearer
//! tokens (one a line, client k sending the k-th, round robin); without
//! it, each client names its tenant in `x-tenant-id`, as a service with
//! `--insecure-dev-no-auth` takes it: `PREFIX-0` to `PREFIX-(N-1)` for
//! `--tenants N --tenant-prefix PREFIX` (`tenant` by default), so two
//! runs at once can load different tenants.

use ctxpack_service::client::Client;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: ctxpack-load --url URL[,URL…] [--clients 50] [--seconds 30] \
                     [--rate RPS] [--request FILE] [--tenants 4 [--tenant-prefix tenant] | \
                     --tokens FILE] [--acks FILE] [--label TEXT]\n\
                     several URLs (replicas): client k posts to the k-th, round robin;\n\
                     --tokens: bearer tokens, one a line; client k sends the k-th, round robin \
                     (its tenant the token's), instead of x-tenant-id";

const QUERIES: &[&str] = &[
    "Why does the parser reject trailing commas?",
    "How is the release profile built?",
    "Which commit trimmed the wasmtime features?",
    "What changed in the array grammar?",
];

#[derive(Default)]
struct Tally {
    latencies_ms: Vec<f64>,
    by_status: BTreeMap<u16, u64>,
    by_snapshot_status: BTreeMap<String, u64>,
    unreachable: u64,
    acks: Vec<String>,
}

impl Tally {
    /// Adds one client's tally to this one.
    fn add(&mut self, t: Tally) {
        self.latencies_ms.extend(t.latencies_ms);
        for (s, n) in t.by_status {
            *self.by_status.entry(s).or_default() += n;
        }
        self.unreachable += t.unreachable;
        for (s, n) in t.by_snapshot_status {
            *self.by_snapshot_status.entry(s).or_default() += n;
        }
        self.acks.extend(t.acks);
    }
}

/// Appends each acknowledged snapshot id to the file at `path`, one a
/// line.
fn write_acks(path: &str, ids: &[String]) -> Result<(), LoadError> {
    let acks = |source| LoadError::Acks {
        path: path.to_owned(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(acks)?;
    for id in ids {
        writeln!(f, "{id}").map_err(acks)?;
    }
    Ok(())
}

fn arg(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Why the load did not run: each reads as the message printed after
/// `ctxpack-load: `.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    /// No `--url`: the usage.
    #[error("{USAGE}")]
    Usage,
    /// A flag whose value is not a number (quoted).
    #[error("{flag}: {value:?} is not a number")]
    NotANumber {
        /// The flag.
        flag: String,
        /// Its value.
        value: String,
    },
    /// The request file cannot be read.
    #[error("--request {}: {source}", path.display())]
    Request {
        /// The file.
        path: std::path::PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// The request file is not JSON.
    #[error("--request: {0}")]
    RequestJson(serde_json::Error),
    /// The tokens file cannot be read.
    #[error("--tokens {path}: {source}")]
    Tokens {
        /// The file.
        path: String,
        /// Why not.
        source: std::io::Error,
    },
    /// The tokens file holds no token.
    #[error("--tokens {0}: no token in it (one a line)")]
    NoTokens(String),
    /// A client task panicked.
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
    /// The `--acks` file cannot be written.
    #[error("--acks {path}: {source}")]
    Acks {
        /// The file.
        path: String,
        /// Why not.
        source: std::io::Error,
    },
}

fn num<T: std::str::FromStr>(args: &[String], flag: &str, default: T) -> Result<T, LoadError> {
    match arg(args, flag) {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| LoadError::NotANumber {
            flag: flag.to_owned(),
            value: v,
        }),
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Who a client is: its tenant (`x-tenant-id`), or its bearer token.
#[derive(Clone)]
enum Caller {
    Tenant(String),
    Bearer(String),
}

async fn client_loop(
    k: usize,
    client: Client,
    body: serde_json::Value,
    caller: Caller,
    until: Instant,
    interval: Option<Duration>,
) -> Tally {
    let mut t = Tally::default();
    let run = format!("load-{}-{k}", std::process::id());
    let header = match &caller {
        Caller::Tenant(tenant) => ("x-tenant-id", tenant.clone()),
        Caller::Bearer(token) => ("authorization", format!("Bearer {token}")),
    };
    let mut next = Instant::now();
    let mut n = 0u64;
    while Instant::now() < until {
        if let Some(every) = interval {
            tokio::time::sleep_until(next.into()).await;
            next += every;
        }
        n += 1;
        let mut b = body.clone();
        b["query"] = QUERIES[(n as usize + k) % QUERIES.len()].into();
        b["context"]["trace-id"] = format!("trace-{run}-{n}").into();
        let bytes = serde_json::to_vec(&b).unwrap_or_default();
        let path = format!("/factory/runs/{run}/attempts/attempt-{n}/context");
        loop {
            let sent = Instant::now();
            match client
                .request("POST", &path, &[(header.0, &header.1)], bytes.clone())
                .await
            {
                Ok(a) => {
                    t.latencies_ms.push(sent.elapsed().as_secs_f64() * 1e3);
                    *t.by_status.entry(a.status).or_default() += 1;
                    if ((200..300).contains(&a.status) || a.status == 422)
                        && let Some(id) = a.json()["contextSnapshotId"].as_str()
                    {
                        t.acks.push(id.to_owned());
                        let status = a.json()["status"].to_string();
                        *t.by_snapshot_status.entry(status).or_default() += 1;
                    }
                    break;
                }
                Err(_) if Instant::now() < until => {
                    t.unreachable += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(_) => break,
            }
        }
    }
    t
}

async fn run(args: Vec<String>) -> Result<(), LoadError> {
    let url = arg(&args, "--url").ok_or(LoadError::Usage)?;
    let clients: usize = num(&args, "--clients", 50)?;
    let seconds: f64 = num(&args, "--seconds", 30.0)?;
    let rate: f64 = num(&args, "--rate", 0.0)?;
    let tenants: usize = num(&args, "--tenants", 4)?;
    let prefix = arg(&args, "--tenant-prefix").unwrap_or_else(|| "tenant".into());
    let callers: Vec<Caller> = match arg(&args, "--tokens") {
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|source| LoadError::Tokens {
                path: path.clone(),
                source,
            })?;
            let tokens: Vec<Caller> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(|l| Caller::Bearer(l.to_owned()))
                .collect();
            if tokens.is_empty() {
                return Err(LoadError::NoTokens(path));
            }
            tokens
        }
        None => (0..tenants.max(1))
            .map(|i| Caller::Tenant(format!("{prefix}-{i}")))
            .collect(),
    };
    let label = arg(&args, "--label").unwrap_or_else(|| "load".into());
    let request = arg(&args, "--request").map_or_else(
        || ctxpack_service::demo_path("tests/fixture/request.json"),
        std::path::PathBuf::from,
    );
    let text = std::fs::read_to_string(&request).map_err(|source| LoadError::Request {
        path: request.clone(),
        source,
    })?;
    let body: serde_json::Value = serde_json::from_str(&text).map_err(LoadError::RequestJson)?;
    let interval = (rate > 0.0).then(|| Duration::from_secs_f64(clients as f64 / rate));
    let replicas: Vec<Client> = url.split(',').map(|u| Client::new(u.to_owned())).collect();
    let started = Instant::now();
    let until = started + Duration::from_secs_f64(seconds);
    let tasks: Vec<_> = (0..clients)
        .map(|k| {
            tokio::spawn(client_loop(
                k,
                replicas[k % replicas.len()].clone(),
                body.clone(),
                callers[k % callers.len()].clone(),
                until,
                interval,
            ))
        })
        .collect();
    let mut all = Tally::default();
    for task in tasks {
        all.add(task.await?);
    }
    let took = started.elapsed().as_secs_f64();
    all.latencies_ms.sort_by(f64::total_cmp);
    let l = &all.latencies_ms;
    let answered = l.len();
    let summary = serde_json::json!({
        "label": label,
        "clients": clients,
        "seconds": (took * 10.0).round() / 10.0,
        "targetRps": rate,
        "answered": answered,
        "rps": (answered as f64 / took * 10.0).round() / 10.0,
        "byStatus": all.by_status.iter().map(|(k, v)| (k.to_string(), *v)).collect::<BTreeMap<_, _>>(),
        "bySnapshotStatus": all.by_snapshot_status,
        "unreachableRetries": all.unreachable,
        "p50Ms": (percentile(l, 50.0) * 10.0).round() / 10.0,
        "p95Ms": (percentile(l, 95.0) * 10.0).round() / 10.0,
        "p99Ms": (percentile(l, 99.0) * 10.0).round() / 10.0,
        "maxMs": (l.last().copied().unwrap_or(f64::NAN) * 10.0).round() / 10.0,
        "acknowledged": all.acks.len(),
    });
    println!("{summary}");
    if let Some(path) = arg(&args, "--acks") {
        write_acks(&path, &all.acks)?;
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ctxpack-load: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ctxpack-load: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

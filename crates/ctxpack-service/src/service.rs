//! One assembly, as both the HTTP and the gRPC endpoint run it: the
//! request read, an instance leased, the assembly driven step by step with
//! the service's stores answering between steps, the snapshot recorded
//! with its content and event, the metrics observed.
//!
//! Apart: each tenant's rate (`rate`) and fair share of the assemblies
//! running at once (`fair`), reading and checking the request and the
//! stores' answers (`request`), and what is recorded (`record`).

pub mod fair;
pub mod rate;
mod record;
mod request;

pub use rate::{RateLimiter, Throttled};
pub use request::{check_id, no_nul, parse_request};

use record::{record_of_failure, record_of_pack};
use request::{bind, checked};

use crate::answerers::Answerers;
use crate::auth::Caller;
use crate::metrics::{Metrics, Observation};
use crate::pool::{Pool, ticks};
use crate::settings::RequestLimits;
use crate::snapshots::{Record, Recorded, Store, StoreError};
use ctxpack_core::{AssembleRequest, ContextPack, Failure, SnapshotStatus};
use ctxpack_host::{Step, Steps, WasmError};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a configuration reload replaces: an assembly takes the current
/// one when it starts and keeps it to its end.
pub struct Live {
    /// Component instances, their builders made from the configuration.
    pub pool: Arc<Pool>,
    /// The stores the assemblies draw from.
    pub stores: Arc<Answerers>,
}

/// The service's parts.
pub struct Service {
    /// The configuration's part, replaced on reload.
    pub live: std::sync::RwLock<Arc<Live>>,
    /// The indexes degraded now, shared by every configuration.
    pub health: Arc<crate::answerers::IndexHealth>,
    /// The snapshot store.
    pub store: Store,
    /// Metrics.
    pub metrics: Metrics,
    /// How long one assembly may take, from its request read to its
    /// outcome (recording it is not cut off).
    pub deadline: Duration,
    /// What a reload needs, when a configuration file was given.
    pub reload: Option<Reload>,
    /// How callers are checked.
    pub auth: crate::auth::Auth,
    /// What one request may hold, and how many a tenant may send.
    pub limits: RequestLimits,
    /// Each tenant's requests, for its rate limit.
    pub rate: RateLimiter,
    /// The cache and coordination store, when there is one.
    pub coord: Option<crate::coord::Coord>,
    /// Most bytes of a request body.
    pub max_body: usize,
    /// The broker events are relayed to, once connected.
    pub broker: std::sync::OnceLock<async_nats::Client>,
    /// The last readiness found, and when.
    pub ready: tokio::sync::Mutex<Option<(Instant, Readiness)>>,
    /// When the store's quick check last ran.
    pub checked: std::sync::Mutex<Option<Instant>>,
    /// The KiB of large answers being sent, at most `[limits]
    /// max-response-bytes`.
    pub sending: crate::listen::SendBudget,
    /// The work keeping a core busy, each tenant within its share of the
    /// cores.
    pub fair: Arc<fair::Fair>,
    /// The assemblies running at once, each tenant within its share of
    /// the pool's instances.
    pub seats: Arc<fair::Fair>,
}

/// Whether the service can take assemblies (`/readyz`, gRPC health).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Readiness {
    /// The store takes writes: assemblies are taken. The broker is not
    /// needed for it: the outbox keeps every event until it is back.
    pub ok: bool,
    /// The broker is configured and not connected: events wait in the
    /// outbox.
    pub degraded: bool,
    /// `ok`, or why the store cannot take a write.
    pub store: String,
    /// `ok`, or why the artifact store cannot take an object: an assembly
    /// is refused without it (fail-fast), so the service is not ready.
    pub artifacts: String,
    /// `ok`, `not configured`, or the broker's connection state.
    pub broker: String,
}

/// What a configuration reload needs besides the file.
pub struct Reload {
    /// The configuration file.
    pub path: std::path::PathBuf,
    /// Its `[service]` at start, which a reload cannot change.
    pub service: crate::settings::ServiceFile,
    /// The component.
    pub runtime: Arc<ctxpack_host::Runtime>,
    /// The fixture, when the service runs on one.
    pub fixture: Option<Arc<crate::fixture::DemoSources>>,
    /// Instances per pool.
    pub instances: usize,
    /// The file's `[auth]` at start: a change is not applied (its
    /// `jwks-file` is read again).
    pub auth: Option<crate::auth::AuthFile>,
}

/// What an assembly answers.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reply {
    /// The snapshot's id.
    pub context_snapshot_id: String,
    /// Tenant.
    pub tenant_id: String,
    /// Run.
    pub run_id: String,
    /// Attempt.
    pub attempt_id: String,
    /// Every condition that holds.
    pub status: Vec<SnapshotStatus>,
    /// Tokens used.
    pub tokens_used: u32,
    /// Budget.
    pub token_budget: u32,
    /// `sha256:<hex>` of the assembled text, stored once by that hash.
    pub content_ref: String,
    /// Why it failed, for a failed assembly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Whether the attempt already had this very snapshot (a retry).
    pub replayed: bool,
    /// The conversation's compaction (kebab-case keys, as the request's
    /// `compaction` takes it back), where the plan compacts or the
    /// request passed one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<ctxpack_core::Compaction>,
    /// For a request that carried a chat: the request to send, in the
    /// chat's shape (the kept messages the caller's own, with the
    /// provider's cache hints).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatReply>,
}

/// The request to send for a chat (see `ctxpack_core::ChatRequest`).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatReply {
    /// The chat's shape (`openai-chat`, `openai-responses`, `anthropic`,
    /// `gemini`).
    pub shape: ctxpack_core::ChatShape,
    /// The body to send but the model and its options, as the core wrote
    /// it.
    pub body: Box<serde_json::value::RawValue>,
    /// For each message of the body's list, the index in the chat's
    /// messages of the one it is, or null for a message of the pack's.
    pub sources: Vec<Option<u32>>,
}

impl PartialEq for ChatReply {
    fn eq(&self, other: &Self) -> bool {
        (self.shape, self.body.get(), &self.sources)
            == (other.shape, other.body.get(), &other.sources)
    }
}

impl ChatReply {
    fn of(chat: ctxpack_core::ChatRequest) -> Option<Self> {
        Some(ChatReply {
            shape: chat.shape,
            body: serde_json::value::RawValue::from_string(chat.body).ok()?,
            sources: chat.sources,
        })
    }
}

/// Why an assembly did not give a pack.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// The request is wrong; the message names the field. Nothing recorded.
    #[error("{0}")]
    Invalid(String),
    /// The assembly failed; its failed snapshot is recorded.
    #[error("assembly failed: {}", .0.failure.as_deref().unwrap_or("?"))]
    Failed(Box<Reply>),
    /// The caller may not ask this (a data scope its token does not
    /// list); nothing recorded.
    #[error("{0}")]
    Forbidden(String),
    /// The attempt already has another snapshot.
    #[error("attempt already has snapshot {0}; a changed request is a new attempt")]
    AttemptTaken(String),
    /// The deadline passed before the assembly ended; nothing recorded.
    #[error("deadline of {0:?} passed before the assembly ended")]
    Deadline(Duration),
    /// The deadline passed inside the component, which was interrupted;
    /// nothing recorded.
    #[error("deadline of {0:?} passed: the assembly was interrupted")]
    Interrupted(Duration),
    /// The component failed.
    #[error("component: {0}")]
    Wasm(String),
    /// The store failed.
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl AssembleError {
    /// A short code for clients and logs.
    pub fn code(&self) -> &'static str {
        match self {
            AssembleError::Invalid(_) => "invalid-request",
            AssembleError::Forbidden(_) => "forbidden",
            AssembleError::Failed(_) => "assembly-failed",
            AssembleError::AttemptTaken(_) => "attempt-taken",
            AssembleError::Deadline(_) | AssembleError::Interrupted(_) => "deadline-exceeded",
            AssembleError::Wasm(_) => "component-failed",
            AssembleError::Store(StoreError::Corrupt { .. }) => "store-corrupt",
            AssembleError::Store(_) => "store-unavailable",
        }
    }
}

impl AssembleError {
    /// What the caller is told: the error itself, but for a fault of the
    /// service's own (the component, the store, the artifact store),
    /// whose detail — a backtrace, an endpoint, a bucket, a path, SQL —
    /// only the log has, under the request id the answer carries.
    pub fn told(&self) -> String {
        let what = match self {
            AssembleError::Wasm(_) => {
                "the assembly failed inside the component (its instance is replaced)"
            }
            AssembleError::Store(StoreError::Corrupt { .. }) => {
                "the store holds what cannot be read back"
            }
            AssembleError::Store(_) => "the store or the artifact store is unavailable",
            told => return told.to_string(),
        };
        format!("{what}; the service's log says why, under this answer's x-request-id")
    }

    /// Whether [`AssembleError::told`] leaves out the detail.
    pub fn is_internal(&self) -> bool {
        matches!(self, AssembleError::Wasm(_) | AssembleError::Store(_))
    }
}

fn wasm(e: impl std::fmt::Display) -> AssembleError {
    AssembleError::Wasm(e.to_string())
}

/// A component failure; the deadline's interruption is a
/// [`AssembleError::Deadline`].
fn trapped(deadline: Duration) -> impl Fn(WasmError) -> AssembleError {
    move |e| {
        if e.is_deadline() {
            AssembleError::Interrupted(deadline)
        } else {
            wasm(e)
        }
    }
}

impl Service {
    /// Whether the store and the artifact store take a write and the
    /// broker (if any) is connected; found again at most once a second.
    pub async fn readiness(&self) -> Readiness {
        let mut last = self.ready.lock().await;
        if let Some((at, r)) = &*last
            && at.elapsed() < Duration::from_secs(1)
        {
            return r.clone();
        }
        // The quick check reads every page: every 30 s, not every probe.
        let checked = self.checked.lock().map(|t| *t).unwrap_or(None);
        if checked.is_none_or(|t: Instant| t.elapsed() > Duration::from_secs(30)) {
            if let Ok(mut t) = self.checked.lock() {
                *t = Some(Instant::now());
            }
            let _ = self.store.quick_check().await;
        }
        let store = match self.store.probe().await {
            Ok(()) => "ok".to_owned(),
            Err(e) => {
                let mut m = e.to_string();
                m.truncate(m.floor_char_boundary(300));
                m
            }
        };
        let artifacts = match self.store.artifacts().probe().await {
            Ok(()) => "ok".to_owned(),
            Err(e) => {
                let mut m = e.to_string();
                m.truncate(m.floor_char_boundary(300));
                m
            }
        };
        let broker = match self.broker.get() {
            None => "not configured".to_owned(),
            Some(c) => match c.connection_state() {
                async_nats::connection::State::Connected => "ok".to_owned(),
                other => format!("{other}"),
            },
        };
        let r = Readiness {
            ok: store == "ok" && artifacts == "ok",
            degraded: !(broker == "ok" || broker == "not configured"),
            store,
            artifacts,
            broker,
        };
        *last = Some((Instant::now(), r.clone()));
        r
    }

    /// The configuration's part in use now.
    pub fn live(&self) -> Arc<Live> {
        match self.live.read() {
            Ok(live) => live.clone(),
            // A panic while swapping cannot leave a half-written `Arc`.
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Puts `live` in use for the assemblies that start from now on.
    pub fn replace(&self, live: Live) {
        let live = Arc::new(live);
        match self.live.write() {
            Ok(mut slot) => *slot = live,
            Err(poisoned) => *poisoned.into_inner() = live,
        }
    }

    /// Assembles `body` for `caller`'s tenant's attempt, records it,
    /// answers it. The request's `context.scopes` must be among the data
    /// scopes `caller`'s token lists.
    pub async fn assemble(
        &self,
        caller: &Caller,
        run_id: &str,
        attempt_id: &str,
        body: &[u8],
    ) -> Result<Reply, AssembleError> {
        let started = Instant::now();
        let tenant = caller.tenant.as_str();
        check_id("tenant (x-tenant-id)", tenant)?;
        check_id("runId", run_id)?;
        check_id("attemptId", attempt_id)?;
        // The tenant's seat among the assemblies running, before its
        // request is read: reading a large one is work too.
        let seat = self.seats.enter(tenant).await;
        let mut request = self.work(tenant, || parse_request(body)).await?;
        caller
            .may_read(&request.context.scopes)
            .map_err(|r| AssembleError::Forbidden(r.to_string()))?;
        self.limits.check(&request)?;
        no_nul(&request)?;
        let c = &mut request.context;
        bind(&mut c.tenant_id, "tenant-id", "x-tenant-id header", tenant)?;
        bind(&mut c.run_id, "run-id", "path's runId", run_id)?;
        bind(
            &mut c.attempt_id,
            "attempt-id",
            "path's attemptId",
            attempt_id,
        )?;
        let request_hash = self
            .work(tenant, || {
                ctxpack_core::text_hash(&crate::snapshots::json(&request))
            })
            .await;
        let outcome = tokio::time::timeout(self.deadline, self.run(&request, started))
            .await
            .map_err(|_| AssembleError::Deadline(self.deadline))??;
        drop(seat);
        let (mut compaction, mut chat) = (None, None);
        let mut record = match outcome {
            Ok(mut pack) => {
                compaction = pack.compaction.take();
                chat = pack.chat.take().and_then(ChatReply::of);
                self.work(tenant, || record_of_pack(pack, &request)).await
            }
            Err(Failure {
                error,
                snapshot: None,
            }) => return Err(AssembleError::Invalid(error.to_string())),
            Err(Failure {
                snapshot: Some(snapshot),
                ..
            }) => record_of_failure(*snapshot, &request),
        };
        record.request_hash = request_hash;
        // Not cut off by the deadline: a write abandoned midway may still
        // commit (SQLite's runs on a thread of its own), and the answer
        // must say what was stored. The store's own timeouts bound it.
        let recorded = self.store.record(&record).await?;
        let s = &record.snapshot;
        let reply = Reply {
            context_snapshot_id: s.id.clone(),
            tenant_id: tenant.to_owned(),
            run_id: run_id.to_owned(),
            attempt_id: attempt_id.to_owned(),
            status: s.status.clone(),
            tokens_used: s.tokens_used,
            token_budget: s.token_budget,
            content_ref: format!("sha256:{}", s.content_hash),
            failure: s.failure.clone(),
            replayed: recorded == Recorded::Replayed,
            compaction,
            chat,
        };
        match recorded {
            Recorded::AttemptTaken(existing) => return Err(AssembleError::AttemptTaken(existing)),
            Recorded::New => self.observe(tenant, &record, started.elapsed()),
            Recorded::Replayed => {}
        }
        if s.status.contains(&SnapshotStatus::Failed) {
            return Err(AssembleError::Failed(Box::new(reply)));
        }
        Ok(reply)
    }

    /// Runs `f`, work that keeps a core busy (parsing a request, running
    /// the component, writing the record), in `tenant`'s turn (see
    /// [`fair`]): between such work — while the stores answer — an
    /// assembly holds no turn.
    async fn work<T>(&self, tenant: &str, f: impl FnOnce() -> T) -> T {
        let _turn = self.fair.enter(tenant).await;
        heavy(f)
    }

    fn observe(&self, tenant: &str, record: &Record, took: Duration) {
        let s = &record.snapshot;
        let mut dropped = std::collections::BTreeMap::<String, u32>::new();
        for e in s.entries.iter().filter(|e| !e.included) {
            *dropped.entry(e.reason.name().to_owned()).or_default() += e.candidates();
        }
        self.metrics.record(&Observation {
            tenant,
            status: s
                .status
                .iter()
                .map(crate::snapshots::name)
                .collect::<Vec<_>>()
                .join("+"),
            tokens_per_section: record.sections.clone(),
            dropped_by_reason: dropped.into_iter().collect(),
            latency: took.as_secs_f64(),
        });
    }

    /// Drives the assembly in a leased instance.
    async fn run(
        &self,
        request: &AssembleRequest,
        started: Instant,
    ) -> Result<Result<ContextPack, Failure>, AssembleError> {
        let live = self.live();
        let mut lease = live.pool.lease().await.map_err(wasm)?;
        let result = self.drive(&mut lease, &live.stores, request, started).await;
        if matches!(
            result,
            Err(AssembleError::Wasm(_) | AssembleError::Interrupted(_))
        ) {
            lease.trapped();
        }
        result
    }

    async fn drive(
        &self,
        lease: &mut crate::pool::Lease,
        stores: &Arc<Answerers>,
        request: &AssembleRequest,
        started: Instant,
    ) -> Result<Result<ContextPack, Failure>, AssembleError> {
        let tenant = request.context.tenant_id.as_deref().unwrap_or_default();
        let deadline = self.deadline;
        let trap = trapped(deadline);
        let left = || ticks(deadline.saturating_sub(started.elapsed()));
        let instance = lease
            .instance()
            .ok_or_else(|| wasm("the lease has no instance"))?;
        instance.set_deadline(left());
        let mut a = self
            .work(tenant, || instance.start(request))
            .await
            .map_err(&trap)?;
        loop {
            a.set_deadline(left());
            match self.work(tenant, || a.next()).await.map_err(&trap)? {
                Step::Done(outcome) => return Ok(outcome),
                Step::Calls(calls) => {
                    // One round's calls are independent: they run at once.
                    let mut tasks = tokio::task::JoinSet::new();
                    for (i, call) in calls.into_iter().enumerate() {
                        let stores = stores.clone();
                        let context = request.context.clone();
                        let most = self.limits.candidates;
                        tasks.spawn(async move {
                            let answer = stores.answer(&call, &context).await;
                            (i, checked(&call, answer, most))
                        });
                    }
                    let mut answers = Vec::new();
                    while let Some(done) = tasks.join_next().await {
                        answers.push(done.map_err(wasm)?);
                    }
                    for (i, answer) in answers {
                        a.set_deadline(left());
                        self.work(tenant, || a.provide(i, answer))
                            .await
                            .map_err(&trap)?
                            .map_err(wasm)?;
                    }
                }
            }
        }
    }
}

/// Runs `f`, work that holds the thread (parsing a request, running the
/// component), where the runtime's other tasks do not wait behind it: on a
/// multi-threaded runtime its worker hands them to another first.
fn heavy<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

impl From<crate::settings::OverLimit> for AssembleError {
    fn from(e: crate::settings::OverLimit) -> Self {
        AssembleError::Invalid(e.to_string())
    }
}

impl From<WasmError> for AssembleError {
    fn from(e: WasmError) -> Self {
        wasm(e)
    }
}

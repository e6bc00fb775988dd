//! A pool of component instances, reused across requests.
//!
//! One component is compiled (or loaded precompiled) once; the pool holds
//! up to `size` instances of it, each with its context builder made from
//! the service's configuration. A request leases one and gives it back.
//!
//! Instances are reused, not made fresh per request: making one is
//! instantiating the component and creating its builder (see
//! [`ctxpack_host::Startup`], logged at start), while an assembly leaves
//! nothing behind in it — each is its own resource, dropped when it ends.
//! An instance that trapped (a deadline, a limit) cannot be entered again
//! and is dropped instead of given back; so is one that has served
//! [`RETIRE_AFTER`] assemblies, so that its linear memory, which never
//! shrinks, is given back now and then.

use ctxpack_core::BuilderConfig;
use ctxpack_host::{Instance, Runtime, WasmError};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How often the deadline clock ticks.
pub const TICK: Duration = Duration::from_millis(5);

/// Assemblies an instance serves before it is replaced.
pub const RETIRE_AFTER: u32 = 10_000;

/// The pool.
pub struct Pool {
    runtime: Arc<Runtime>,
    config: BuilderConfig,
    idle: Mutex<Vec<(Instance, u32)>>,
    permits: Arc<Semaphore>,
    size: usize,
    trapped: std::sync::atomic::AtomicU64,
}

/// Why a lease could not be had.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The component failed.
    #[error("{0}")]
    Wasm(#[from] WasmError),
    /// The builder refused the configuration.
    #[error("builder configuration: {0}")]
    Config(ctxpack_core::Error),
}

impl Pool {
    /// A pool of up to `size` instances of `runtime` with `config`; one is
    /// made now, so a bad configuration fails at start.
    pub fn new(
        runtime: Arc<Runtime>,
        config: BuilderConfig,
        size: usize,
    ) -> Result<Arc<Self>, PoolError> {
        let pool = Arc::new(Pool {
            runtime,
            config,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(size.max(1))),
            size: size.max(1),
            trapped: Default::default(),
        });
        let first = pool.instantiate()?;
        pool.give_back(first, 0);
        Ok(pool)
    }

    /// The pool's most instances.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Instances dropped because they trapped (a deadline, a limit).
    pub fn trapped(&self) -> u64 {
        self.trapped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Instances idle now.
    pub fn idle(&self) -> usize {
        self.idle.lock().map_or(0, |i| i.len())
    }

    /// The startup of a fresh instance, for the start-up log.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    fn instantiate(&self) -> Result<Instance, PoolError> {
        self.runtime
            // Driven by steps only: the instance's imports are never called.
            .instantiate(ctxpack_core::NoHost, &self.config)?
            .map_err(PoolError::Config)
    }

    fn give_back(&self, instance: Instance, uses: u32) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push((instance, uses));
        }
    }

    /// An instance for one request, waiting while all are leased.
    pub async fn lease(self: &Arc<Self>) -> Result<Lease, PoolError> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| WasmError::from(wasmtime::Error::msg("the pool is closed")))?;
        let idle = self.idle.lock().ok().and_then(|mut i| i.pop());
        let (instance, uses) = match idle {
            Some(found) => found,
            None => (self.instantiate()?, 0),
        };
        Ok(Lease {
            instance: Some(instance),
            uses: uses + 1,
            pool: self.clone(),
            trapped: false,
            _permit: permit,
        })
    }
}

/// An instance leased for one request; given back when dropped unless it
/// trapped.
pub struct Lease {
    instance: Option<Instance>,
    uses: u32,
    pool: Arc<Pool>,
    trapped: bool,
    _permit: OwnedSemaphorePermit,
}

impl Lease {
    /// The instance. (Present until the lease is dropped.)
    pub fn instance(&mut self) -> Option<&mut Instance> {
        self.instance.as_mut()
    }

    /// Marks the instance as unusable: it is dropped, not given back.
    pub fn trapped(&mut self) {
        self.trapped = true;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Some(instance) = self.instance.take() else {
            return;
        };
        if self.trapped || !instance.usable() {
            self.pool
                .trapped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        } else if self.uses < RETIRE_AFTER {
            self.pool.give_back(instance, self.uses);
        }
    }
}

/// Starts the clock deadlines are measured in: a thread ticking the
/// runtime every [`TICK`] for as long as the runtime lives.
pub fn start_clock(runtime: &Arc<Runtime>) {
    let weak = Arc::downgrade(runtime);
    std::thread::Builder::new()
        .name("ctxpack-deadline-clock".into())
        .spawn(move || {
            while let Some(rt) = weak.upgrade() {
                rt.tick();
                drop(rt);
                std::thread::sleep(TICK);
            }
        })
        .map(drop)
        .unwrap_or_else(|e| tracing::error!(error = %e, "deadline clock did not start"));
}

/// Ticks of [`TICK`] covering `d`, at least one.
pub fn ticks(d: Duration) -> u64 {
    (d.as_micros() / TICK.as_micros()).max(1) as u64 + 1
}

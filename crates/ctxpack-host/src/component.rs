//! Runs the ctxpack component under wasmtime.
//!
//! The linker holds nothing but ctxpack's own imports: the component gets no
//! WASI, so no filesystem, network, clock or randomness. Each import forwards
//! to the [`ctx::Host`] the instance was lent, the same trait the native
//! path calls.

use ctxpack_core as ctx;
use ctxpack_wit::Convert;
use std::any::Any;
use std::path::Path;
use wasmtime::component::{Component, HasSelf, Linker, ResourceAny};
use wasmtime::{Config, Engine, Store, StoreLimits, StoreLimitsBuilder};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "ctxpack",
    });
}

ctxpack_wit::wit_conversions!(crate::component::bindings::ctxpack::context);

pub use crate::error::WasmError;
use crate::steps::{JsonSteps, Step, Steps};
use bindings::ctxpack::context::{self as imports, types as wit};
use bindings::exports::ctxpack::context::builder as exported;

mod arms;
mod cache;
use arms::call;
use cache::load_cached;

/// What one instance may use, so a runaway request cannot take the host
/// down. Hitting a limit traps the call; the error says which limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes of linear memory an instance may grow to.
    pub max_memory_bytes: Option<usize>,
    /// Most fuel (roughly, WebAssembly instructions) per call.
    pub fuel: Option<u64>,
    /// Most bytes the component may hand the host in one call (wasmtime's
    /// default, 128 MiB, when unset).
    pub max_transfer_bytes: Option<usize>,
    /// Calls can be interrupted by a deadline ([`Instance::set_deadline`]),
    /// measured in ticks of [`Runtime::tick`], which the host calls from a
    /// clock of its own (wasmtime's epoch interruption).
    pub interruptible: bool,
}

/// A host an instance can be lent: any [`ctx::Host`] that can move between
/// threads, kept so its owner can look at it again ([`Instance::host`]).
pub trait Lent: ctx::Host + Any + Send {
    /// Itself, to look at as what it is.
    fn as_any(&self) -> &dyn Any;
    /// Itself, to change as what it is.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: ctx::Host + Any + Send> Lent for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// The imports' side of a store: the host lent, behind the WIT's traits.
pub struct Imports(Box<dyn Lent>);

/// A store's data: the host lent and the store's limits.
pub struct State {
    host: Imports,
    limits: StoreLimits,
}

/// A compiled component and a linker with ctxpack's imports, ready to
/// instantiate as often as needed.
pub struct Runtime {
    engine: Engine,
    component: Component,
    linker: Linker<State>,
    limits: Limits,
    from_artifact: bool,
}

/// How long an instance took to start, in its two parts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Startup {
    /// Instantiating the component.
    pub instantiate: std::time::Duration,
    /// Creating its context builder.
    pub builder: std::time::Duration,
}

impl Runtime {
    /// Loads the component at `path`: from a precompiled artifact beside it
    /// when one matches (same component bytes, same wasmtime and engine
    /// settings), else by compiling it and leaving the artifact for next
    /// time. A cache that cannot be written is only a slower start.
    pub fn load(path: &Path) -> Result<Self, WasmError> {
        Self::load_limited(path, Limits::default())
    }

    /// As [`Runtime::load`], with limits on every instance.
    pub fn load_limited(path: &Path, limits: Limits) -> Result<Self, WasmError> {
        Self::load_keyed(path, None, limits)
    }

    /// Loads the component at `path`, whose hex SHA-256 is `sha256` if
    /// known (else it is read and hashed).
    fn load_keyed(path: &Path, sha256: Option<&str>, limits: Limits) -> Result<Self, WasmError> {
        let mut config = Config::new();
        config.consume_fuel(limits.fuel.is_some());
        config.epoch_interruption(limits.interruptible);
        let engine = Engine::new(&config)?;
        let (component, from_artifact) = load_cached(&engine, path, sha256)?;
        let mut linker = Linker::new(&engine);
        bindings::Ctxpack::add_to_linker::<_, HasSelf<Imports>>(&mut linker, |s: &mut State| {
            &mut s.host
        })?;
        Ok(Runtime {
            engine,
            component,
            linker,
            limits,
            from_artifact,
        })
    }

    /// Advances the clock deadlines are measured by (see
    /// [`Limits::interruptible`]): a call past its instance's deadline
    /// traps.
    pub fn tick(&self) {
        self.engine.increment_epoch();
    }

    /// Loads the component this workspace builds.
    pub fn load_bundled() -> Result<Self, WasmError> {
        Self::load_bundled_limited(Limits::default())
    }

    /// As [`Runtime::load_bundled`], with limits on every instance. The
    /// component's hash is known from its build, so a start with the
    /// precompiled artifact in place reads only the artifact.
    pub fn load_bundled_limited(limits: Limits) -> Result<Self, WasmError> {
        Self::load_keyed(
            Path::new(ctxpack_artifacts::COMPONENT_PATH),
            Some(ctxpack_artifacts::COMPONENT_SHA256),
            limits,
        )
    }

    /// Whether the component came from a precompiled artifact rather than
    /// being compiled now.
    pub fn from_artifact(&self) -> bool {
        self.from_artifact
    }

    /// The names of everything the component imports.
    pub fn imports(&self) -> Vec<String> {
        self.component
            .component_type()
            .imports(&self.engine)
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    /// A new instance with one context builder, its imports answered by
    /// `host` (a [`ctx::NoHost`] for an instance driven only by steps).
    pub fn instantiate(
        &self,
        host: impl Lent,
        config: &ctx::BuilderConfig,
    ) -> Result<Result<Instance, ctx::Error>, WasmError> {
        let started = std::time::Instant::now();
        let mut builder = StoreLimitsBuilder::new().trap_on_grow_failure(true);
        if let Some(max) = self.limits.max_memory_bytes {
            builder = builder.memory_size(max);
        }
        let mut store = Store::new(
            &self.engine,
            State {
                host: Imports(Box::new(host)),
                limits: builder.build(),
            },
        );
        store.limiter(|s| &mut s.limits);
        if let Some(fuel) = self.limits.fuel {
            store.set_fuel(fuel)?;
        }
        if let Some(bytes) = self.limits.max_transfer_bytes {
            store.set_hostcall_fuel(bytes);
        }
        if self.limits.interruptible {
            // No deadline until the host sets one.
            store.set_epoch_deadline(u64::MAX / 2);
        }
        let bindings = bindings::Ctxpack::instantiate(&mut store, &self.component, &self.linker)?;
        let instantiate = started.elapsed();
        let config: wit::BuilderConfig = config.clone().convert();
        let created = bindings
            .ctxpack_context_builder()
            .context_builder()
            .call_create(&mut store, &config)?;
        Ok(match created {
            Ok(builder) => Ok(Instance {
                dropped_badly: false,
                store,
                bindings,
                builder,
                fuel: self.limits.fuel,
                startup: Startup {
                    instantiate,
                    builder: started.elapsed() - instantiate,
                },
            }),
            Err(e) => Err(e.convert()),
        })
    }
}

/// Where the component built with this crate is (`CTXPACK_COMPONENT`, if
/// it was set at build time).
pub fn bundled_path() -> &'static Path {
    Path::new(ctxpack_artifacts::COMPONENT_PATH)
}

/// One instance of the component holding one context builder.
pub struct Instance {
    startup: Startup,
    store: Store<State>,
    fuel: Option<u64>,
    bindings: bindings::Ctxpack,
    builder: ResourceAny,
    /// Whether dropping a resource failed: the instance trapped there and
    /// cannot be entered again.
    dropped_badly: bool,
}

/// Ticks of [`Runtime::tick`] a resource's drop may take, however late
/// the call that abandoned it was.
const DROP_TICKS: u64 = 1 << 20;

/// A router resource inside an [`Instance`].
#[derive(Clone, Copy)]
pub struct RouterHandle(ResourceAny);

impl Instance {
    /// Fuel is a per-call allowance: top it up before each call.
    fn refuel(&mut self) -> Result<(), WasmError> {
        if let Some(fuel) = self.fuel {
            self.store.set_fuel(fuel)?;
        }
        Ok(())
    }

    /// Compiles a router inside the component.
    pub fn router(
        &mut self,
        config: &str,
        format: ctx::ConfigFormat,
    ) -> Result<Result<RouterHandle, ctx::Error>, WasmError> {
        self.refuel()?;
        let created = self
            .bindings
            .ctxpack_context_builder()
            .router()
            .call_create(&mut self.store, config, format.convert())?;
        Ok(created.map(RouterHandle).map_err(Convert::convert))
    }

    /// Routes a query inside the component.
    pub fn route(
        &mut self,
        router: RouterHandle,
        query: &str,
    ) -> Result<ctx::RoutingDecision, WasmError> {
        self.refuel()?;
        let decision = self
            .bindings
            .ctxpack_context_builder()
            .router()
            .call_route(&mut self.store, router.0, query)?;
        Ok(decision.convert())
    }

    /// Routes and dispatches `request` inside the component.
    pub fn handle(
        &mut self,
        router: RouterHandle,
        request: &ctx::AssembleRequest,
    ) -> Result<Result<ctx::Handling, ctx::Failure>, WasmError> {
        self.refuel()?;
        let request: wit::AssembleRequest = request.clone().convert();
        let answer = self.bindings.ctxpack_context_builder().call_handle(
            &mut self.store,
            router.0,
            self.builder,
            &request,
        )?;
        Ok(answer.map(Convert::convert).map_err(Convert::convert))
    }

    /// Assembles `request` inside the component.
    pub fn assemble(
        &mut self,
        request: &ctx::AssembleRequest,
    ) -> Result<Result<ctx::ContextPack, ctx::Failure>, WasmError> {
        self.refuel()?;
        let request: wit::AssembleRequest = request.clone().convert();
        let answer = self
            .bindings
            .ctxpack_context_builder()
            .context_builder()
            .call_assemble(&mut self.store, self.builder, &request)?;
        Ok(answer.map(Convert::convert).map_err(Convert::convert))
    }

    /// Counts `request`'s texts and chat inside the component, as
    /// [`ctx::Builder::count`] does natively: the same numbers.
    pub fn count(
        &mut self,
        request: &ctx::CountRequest,
    ) -> Result<Result<ctx::TokenCounts, ctx::Error>, WasmError> {
        self.refuel()?;
        let request: wit::CountRequest = request.clone().convert();
        let answer = self
            .bindings
            .ctxpack_context_builder()
            .context_builder()
            .call_count(&mut self.store, self.builder, &request)?;
        Ok(answer.map(Convert::convert).map_err(Convert::convert))
    }

    /// Trims `request`'s chat inside the component, as
    /// [`ctx::Builder::trim`] does natively; a host counter of messages or
    /// splitter is asked through the instance's host.
    pub fn trim(
        &mut self,
        request: &ctx::TrimRequest,
    ) -> Result<Result<ctx::Trimmed, ctx::Error>, WasmError> {
        self.refuel()?;
        let request: wit::TrimRequest = request.clone().convert();
        let answer = self
            .bindings
            .ctxpack_context_builder()
            .context_builder()
            .call_trim(&mut self.store, self.builder, &request)?;
        Ok(answer.map(Convert::convert).map_err(Convert::convert))
    }

    /// Starts an assembly of `request` inside the component, driven step
    /// by step (see [`crate::steps`]) instead of through the imports.
    pub fn start(
        &mut self,
        request: &ctx::AssembleRequest,
    ) -> Result<ComponentAssembly<'_>, WasmError> {
        self.refuel()?;
        let request: wit::AssembleRequest = request.clone().convert();
        let handle = self
            .bindings
            .ctxpack_context_builder()
            .context_builder()
            .call_start(&mut self.store, self.builder, &request)?;
        Ok(ComponentAssembly {
            instance: self,
            handle,
        })
    }

    /// Drops a resource the host held. An assembly abandoned at its
    /// deadline is still dropped: the drop gets a deadline of its own, so
    /// the instance stays usable; if the drop fails all the same, the
    /// instance has trapped ([`Instance::usable`]).
    pub(crate) fn drop_resource(&mut self, handle: ResourceAny) -> Result<(), WasmError> {
        self.store.set_epoch_deadline(DROP_TICKS);
        self.refuel()?;
        let dropped = handle.resource_drop(&mut self.store);
        self.dropped_badly |= dropped.is_err();
        Ok(dropped?)
    }

    /// Whether the instance can be entered again: false once dropping a
    /// resource trapped, which the caller of the call that dropped it
    /// never saw. (A call that traps says so itself.)
    pub fn usable(&self) -> bool {
        !self.dropped_badly
    }

    /// Diffs two snapshots inside the component.
    pub fn diff_snapshots(
        &mut self,
        before: &ctx::Snapshot,
        after: &ctx::Snapshot,
    ) -> Result<ctx::SnapshotDiff, WasmError> {
        self.refuel()?;
        let before: wit::Snapshot = before.clone().convert();
        let after: wit::Snapshot = after.clone().convert();
        let diff = self
            .bindings
            .ctxpack_context_builder()
            .call_diff_snapshots(&mut self.store, &before, &after)?;
        Ok(diff.convert())
    }

    /// A context builder for the `json` interface, from its configuration
    /// as JSON.
    pub fn json_builder(
        &mut self,
        config: &str,
    ) -> Result<Result<JsonBuilderHandle, ctx::Error>, WasmError> {
        self.refuel()?;
        let created = self
            .bindings
            .ctxpack_context_json()
            .json_builder()
            .call_create(&mut self.store, config)?;
        Ok(created.map(JsonBuilderHandle).map_err(Convert::convert))
    }

    /// Starts assembling `request` (JSON) with `builder`, or handling it
    /// with `router`, driven with JSON (see [`crate::json`]).
    pub fn json_start(
        &mut self,
        builder: JsonBuilderHandle,
        router: Option<RouterHandle>,
        request: &str,
    ) -> Result<ComponentJsonAssembly<'_>, WasmError> {
        self.refuel()?;
        let json = self.bindings.ctxpack_context_json().json_builder();
        let handle = match router {
            None => json.call_start(&mut self.store, builder.0, request)?,
            Some(router) => json.call_handle(&mut self.store, builder.0, router.0, request)?,
        };
        Ok(ComponentJsonAssembly {
            instance: self,
            handle,
        })
    }

    pub(crate) fn json_step(
        &mut self,
        handle: ResourceAny,
        answer: Option<&str>,
    ) -> Result<Result<String, ctx::Error>, WasmError> {
        self.refuel()?;
        let step = self
            .bindings
            .ctxpack_context_json()
            .json_assembly()
            .call_step(&mut self.store, handle, answer.unwrap_or_default())?;
        Ok(step.map_err(Convert::convert))
    }

    /// Interrupts any call still running `ticks` ticks of
    /// [`Runtime::tick`] from now (only on an interruptible runtime, see
    /// [`Limits::interruptible`]). An interrupted instance has trapped and
    /// cannot be used again.
    pub fn set_deadline(&mut self, ticks: u64) {
        self.store.set_epoch_deadline(ticks);
    }

    /// How long this instance took to start.
    pub fn startup(&self) -> Startup {
        self.startup
    }

    /// The host lent at [`Runtime::instantiate`], if it is an `H` (to
    /// read what the component's calls left in it).
    pub fn host<H: Any>(&self) -> Option<&H> {
        self.store.data().host.0.as_any().downcast_ref()
    }

    /// The host lent, if it is an `H`, to change what it answers next.
    pub fn host_mut<H: Any>(&mut self) -> Option<&mut H> {
        self.store.data_mut().host.0.as_any_mut().downcast_mut()
    }
}

impl Steps for ComponentAssembly<'_> {
    fn next(&mut self) -> Result<Step, WasmError> {
        let i = &mut *self.instance;
        i.refuel()?;
        let step = i
            .bindings
            .ctxpack_context_builder()
            .assembly()
            .call_next(&mut i.store, self.handle)?;
        Ok(match step {
            exported::Step::Calls(calls) => Step::Calls(calls.into_iter().map(call).collect()),
            exported::Step::Done(outcome) => Step::Done(match outcome {
                Ok(pack) => Ok(pack.convert()),
                Err(e) => Err(e.convert()),
            }),
        })
    }

    fn provide(
        &mut self,
        call: usize,
        answer: ctx::Answer,
    ) -> Result<Result<(), ctx::Error>, WasmError> {
        // An index past u32 is out of range for any round.
        let call = u32::try_from(call).unwrap_or(u32::MAX);
        let answer: exported::Answer = answer.convert();
        let i = &mut *self.instance;
        i.refuel()?;
        let provided = i
            .bindings
            .ctxpack_context_builder()
            .assembly()
            .call_provide(&mut i.store, self.handle, call, &answer)?;
        Ok(provided.map_err(Convert::convert))
    }
}

impl ComponentAssembly<'_> {
    /// As [`Instance::set_deadline`], for the instance this assembly runs in.
    pub fn set_deadline(&mut self, ticks: u64) {
        self.instance.set_deadline(ticks);
    }
}

/// An assembly resource inside an [`Instance`], started with
/// [`Instance::start`]. Dropped, it drops the resource.
pub struct ComponentAssembly<'i> {
    pub(crate) instance: &'i mut Instance,
    pub(crate) handle: wasmtime::component::ResourceAny,
}

impl Drop for ComponentAssembly<'_> {
    fn drop(&mut self) {
        // A resource the instance cannot drop (it trapped) goes with the
        // instance; there is nothing to report to.
        let _ = self.instance.drop_resource(self.handle);
    }
}

/// A JSON assembly inside an [`Instance`].
pub struct ComponentJsonAssembly<'a> {
    pub(crate) instance: &'a mut Instance,
    pub(crate) handle: wasmtime::component::ResourceAny,
}

impl JsonSteps for ComponentJsonAssembly<'_> {
    fn step(&mut self, answer: Option<&str>) -> Result<Result<String, ctx::Error>, WasmError> {
        self.instance.json_step(self.handle, answer)
    }
}

impl Drop for ComponentJsonAssembly<'_> {
    fn drop(&mut self) {
        // A failed drop leaves the resource to the store, which goes with
        // the instance.
        let _ = self.instance.drop_resource(self.handle);
    }
}

/// A JSON builder inside an [`Instance`].
#[derive(Clone, Copy)]
pub struct JsonBuilderHandle(pub(crate) wasmtime::component::ResourceAny);

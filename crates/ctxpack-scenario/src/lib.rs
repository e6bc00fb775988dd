//! The scenario apparatus: the format every engine runs the corpus from
//! (`tests/scenarios/README.md`), the in-memory stores that answer it, and
//! running a scenario natively through `ctxpack-core` or through the
//! component, which is how the conformance tests prove both give identical
//! results. Unpublished: the tests, the benchmarks and the host example
//! use it; a host lends the component its own `ctxpack_core::Host`.
//!
//! - [`scenario`]: the format ([`Scenario`]) and its outcome ([`Outcome`]);
//! - [`stores`]: [`InMemoryHost`], a host whose sources, policy and
//!   summariser answer from data ([`HostAnswers`]) — any of them can be
//!   made to fail — and count the calls they receive;
//! - [`record`]: [`Recorder`], a host that writes down every call and its
//!   answer, for the hosts in other languages to replay;
//! - [`json`]: a scenario driven with JSON text.

// Text is cut only by `ctxpack_core::text::cut`, which never panics.
#![cfg_attr(not(test), deny(clippy::string_slice))]
pub mod json;
pub mod record;
pub mod scenario;
pub mod stores;

pub use record::{Recorded, Recorder};
pub use scenario::{Outcome, Reply, RouterSpec, Scenario};
pub use stores::{CounterRule, HostAnswers, InMemoryHost, words};

use ctxpack_core::ConfigFormat;
use ctxpack_host::{Runtime, WasmError};

type RouterText<'a> = Result<Option<(&'a str, ConfigFormat)>, ctxpack_core::Error>;

fn router_text(scenario: &Scenario) -> RouterText<'_> {
    match &scenario.router {
        None => Ok(None),
        Some(RouterSpec::Yaml(t)) => Ok(Some((t, ConfigFormat::Yaml))),
        Some(RouterSpec::Json(t)) => Ok(Some((t, ConfigFormat::Json))),
        // `scenario::load` reads router files in; a scenario built in code
        // must give the text.
        Some(RouterSpec::File(p)) => Err(ctxpack_core::Error::invalid(
            "router.file",
            format!(
                "{} was not read in: load the scenario with scenario::load",
                p.display()
            ),
        )),
    }
}

/// The outcome of a scenario: `reply`, and the calls `host` received.
pub fn outcome(reply: Reply, host: &InMemoryHost) -> Outcome {
    Outcome {
        reply,
        host_calls: host
            .calls()
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect(),
        recorded: Vec::new(),
    }
}

/// The outcome of a scenario whose stores were recorded: [`outcome`],
/// with every call and its answer.
fn recorded(reply: Reply, host: &mut Recorder<InMemoryHost>) -> Outcome {
    Outcome {
        recorded: host.take(),
        ..outcome(reply, host.inner())
    }
}

/// Runs `scenario` natively through the core: `handle` when it has a
/// router, `assemble` otherwise.
pub fn run_native(scenario: &Scenario) -> Outcome {
    match ctxpack_core::Builder::new(scenario.config.clone()) {
        Err(e) => outcome(Reply::refused(e), &InMemoryHost::default()),
        Ok(builder) => run_native_with(&builder, scenario),
    }
}

/// Runs `scenario` natively on `builder`, which must have been built from
/// the scenario's configuration (a host that keeps one builder per
/// configuration, as a service does, and its counts with it).
pub fn run_native_with(builder: &ctxpack_core::Builder, scenario: &Scenario) -> Outcome {
    let mut host = Recorder::new(InMemoryHost::new(scenario.host.clone()));
    let reply = match router_text(scenario) {
        Err(e) => Reply::refused(e),
        Ok(None) => builder.assemble(&scenario.request, &mut host).into(),
        Ok(Some((text, format))) => match ctxpack_core::Router::from_text(text, format) {
            Err(e) => Reply::refused(e),
            Ok(router) => {
                ctxpack_core::handle(&router, builder, &scenario.request, &mut host).into()
            }
        },
    };
    recorded(reply, &mut host)
}

/// Runs `scenario` through the component on `runtime`, as [`run_native`].
pub fn run_component(runtime: &Runtime, scenario: &Scenario) -> Result<Outcome, WasmError> {
    let host = Recorder::new(InMemoryHost::new(scenario.host.clone()));
    let mut instance = match runtime.instantiate(host, &scenario.config)? {
        Ok(instance) => instance,
        Err(e) => return Ok(outcome(Reply::refused(e), &InMemoryHost::default())),
    };
    let reply = match router_text(scenario) {
        Err(e) => Reply::refused(e),
        Ok(None) => instance.assemble(&scenario.request)?.into(),
        Ok(Some((text, format))) => match instance.router(text, format)? {
            Err(e) => Reply::refused(e),
            Ok(router) => instance.handle(router, &scenario.request)?.into(),
        },
    };
    let host = instance
        .host_mut::<Recorder<InMemoryHost>>()
        .ok_or_else(|| WasmError::msg("the instance lost its stores"))?;
    Ok(recorded(reply, host))
}

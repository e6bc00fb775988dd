//! The ctxpack core as a WebAssembly component.
//!
//! This crate only maps types: WIT records to core types and back (through
//! `ctxpack-wit`), and the WIT imports onto the core's [`ctxpack_core::Host`]
//! trait. Every decision is made in `ctxpack-core`; if one is made here, it is
//! in the wrong place.
//!
//! Build it for `wasm32-unknown-unknown` and turn it into a component with
//! `wit-component` (the `ctxpack-artifacts` build script does both): the
//! result imports only ctxpack's own interfaces and no WASI at all.

mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "ctxpack",
        // Import parameters borrow: what the host is given (the policy is
        // given every candidate) is lowered from the core's own values,
        // not from copies made for the call.
        ownership: Borrowing { duplicate_if_necessary: true },
    });
}

ctxpack_wit::wit_conversions!(crate::bindings::ctxpack::context, borrowing);

use bindings::ctxpack::context::{self as imports, types as wit};
use bindings::exports::ctxpack::context::builder::{
    self as exported, Assembly, ContextBuilder, ContextBuilderBorrow, Guest, GuestAssembly,
    GuestContextBuilder, GuestRouter, Router, RouterBorrow,
};
use ctxpack_core as ctx;
use ctxpack_wit::Convert;
use std::cell::RefCell;
use std::rc::Rc;

struct Component;

impl Guest for Component {
    type ContextBuilder = Builder;
    type Router = RouterResource;
    type Assembly = AssemblyResource;

    fn handle(
        router: RouterBorrow<'_>,
        builder: ContextBuilderBorrow<'_>,
        request: wit::AssembleRequest,
    ) -> Result<wit::Handling, wit::AssemblyFailure> {
        let router: &RouterResource = router.get();
        let builder: &Builder = builder.get();
        let request: ctx::AssembleRequest = request.convert();
        match ctx::handle(&router.0, &builder.0, &request, &mut Imports) {
            Ok(handling) => Ok(handling.convert()),
            Err(e) => Err(e.convert()),
        }
    }

    fn diff_snapshots(before: wit::Snapshot, after: wit::Snapshot) -> wit::SnapshotDiff {
        ctx::diff(&before.convert(), &after.convert()).convert()
    }
}

/// The `router` resource: one compiled core router.
struct RouterResource(ctx::Router);

impl GuestRouter for RouterResource {
    fn create(config: String, format: wit::ConfigFormat) -> Result<Router, wit::CtxpackError> {
        match ctx::Router::from_text(&config, format.convert()) {
            Ok(router) => Ok(Router::new(RouterResource(router))),
            Err(e) => Err(e.convert()),
        }
    }

    fn route(&self, query: String) -> wit::RoutingDecision {
        self.0.route(&query).convert()
    }
}

/// The `context-builder` resource: one core builder, kept between calls
/// and shared with the assemblies it starts.
struct Builder(Rc<ctx::Builder>);

impl GuestContextBuilder for Builder {
    fn create(config: wit::BuilderConfig) -> Result<ContextBuilder, wit::CtxpackError> {
        match ctx::Builder::new(config.convert()) {
            Ok(builder) => Ok(ContextBuilder::new(Builder(Rc::new(builder)))),
            Err(e) => Err(e.convert()),
        }
    }

    fn assemble(
        &self,
        request: wit::AssembleRequest,
    ) -> Result<wit::ContextPack, wit::AssemblyFailure> {
        let request: ctx::AssembleRequest = request.convert();
        match self.0.assemble(&request, &mut Imports) {
            Ok(pack) => Ok(pack.convert()),
            Err(e) => Err(e.convert()),
        }
    }

    fn start(&self, request: wit::AssembleRequest) -> Assembly {
        let assembly = ctx::Builder::start_owned(Rc::clone(&self.0), request.convert());
        Assembly::new(AssemblyResource(RefCell::new(assembly)))
    }

    fn count(&self, request: wit::CountRequest) -> Result<wit::TokenCounts, wit::CtxpackError> {
        match self.0.count(&request.convert()) {
            Ok(counts) => Ok(counts.convert()),
            Err(e) => Err(e.convert()),
        }
    }

    fn trim(&self, request: wit::TrimRequest) -> Result<wit::Trimmed, wit::CtxpackError> {
        match self.0.trim(&request.convert(), &mut Imports) {
            Ok(trimmed) => Ok(trimmed.convert()),
            Err(failure) => Err(failure.error.convert()),
        }
    }
}

/// The `assembly` resource: one core assembly, driven by the host's
/// answers.
struct AssemblyResource(RefCell<ctx::Assembly<'static>>);

impl GuestAssembly for AssemblyResource {
    fn next(&self) -> exported::Step {
        let mut assembly = self.0.borrow_mut();
        match assembly.next() {
            ctx::Next::Calls(calls) => exported::Step::Calls(calls.iter().map(call).collect()),
            ctx::Next::Done(outcome) => exported::Step::Done(match outcome {
                Ok(pack) => Ok(pack.convert()),
                Err(e) => Err(e.convert()),
            }),
        }
    }

    fn provide(&self, call: u32, answer: exported::Answer) -> Result<(), wit::CtxpackError> {
        self.0
            .borrow_mut()
            .provide(call as usize, answer.convert())
            .map_err(Convert::convert)
    }
}

/// The host's imports, seen by the core as its [`ctx::Host`].
struct Imports;

fn convert<A: Convert<B>, B>(answer: Result<A, wit::HostError>) -> Result<B, ctx::HostError> {
    answer.map(Convert::convert).map_err(Convert::convert)
}

/// Calls `call` with a borrowed view of `context`.
fn with_context<R>(
    context: &ctx::AgentContext,
    call: impl FnOnce(wit::AgentContextParam<'_>) -> R,
) -> R {
    let ctx::AgentContext {
        session_id,
        trace_id,
        user_id,
        tenant_id,
        project_id,
        run_id,
        attempt_id,
        scopes,
    } = context;
    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
    call(wit::AgentContextParam {
        session_id: session_id.as_deref(),
        trace_id,
        user_id: user_id.as_deref(),
        tenant_id: tenant_id.as_deref(),
        project_id: project_id.as_deref(),
        run_id: run_id.as_deref(),
        attempt_id: attempt_id.as_deref(),
        scopes: &scopes,
    })
}

/// A core value lent to an import as the bindings' borrowed form.
trait Lend<'a> {
    type Param;
    fn lend(&'a self) -> Self::Param;
}

impl<'a> Lend<'a> for ctx::Candidate {
    type Param = wit::CandidateParam<'a>;

    /// Destructured, so a field added to the core's candidate fails to
    /// compile here instead of being left behind.
    fn lend(&'a self) -> wit::CandidateParam<'a> {
        let ctx::Candidate {
            id,
            section,
            text,
            provenance,
            trust,
            score,
            sequence,
            scope,
            token_count,
        } = self;
        wit::CandidateParam {
            id,
            section: section.convert(),
            text,
            provenance: provenance.as_ref().map(|p| {
                let ctx::Provenance {
                    source_kind,
                    reference,
                    source_version,
                    index_revision,
                } = p;
                wit::ProvenanceParam {
                    source_kind,
                    reference,
                    source_version: source_version.as_deref(),
                    index_revision: index_revision.as_deref(),
                }
            }),
            trust: trust.convert(),
            score: *score,
            sequence: *sequence,
            scope: scope.as_deref(),
            token_count: *token_count,
        }
    }
}

impl<'a> Lend<'a> for ctx::SummaryRequest {
    type Param = wit::SummaryRequestParam<'a>;

    /// Destructured, as a candidate is.
    fn lend(&'a self) -> wit::SummaryRequestParam<'a> {
        let ctx::SummaryRequest {
            section,
            text,
            target_tokens,
        } = self;
        wit::SummaryRequestParam {
            section: section.convert(),
            text,
            target_tokens: *target_tokens,
        }
    }
}

impl<'a> Lend<'a> for ctx::MessageList {
    type Param = wit::MessageListParam<'a>;

    /// Destructured, as a candidate is.
    fn lend(&'a self) -> wit::MessageListParam<'a> {
        let ctx::MessageList { messages, cut } = self;
        wit::MessageListParam {
            messages,
            cut: cut.as_ref().map(|p| {
                let ctx::Partial {
                    message,
                    blocks,
                    text,
                } = p;
                wit::PartialParam {
                    message: *message,
                    blocks: blocks.map(|b| wit::BlockRange {
                        first: b.first,
                        count: b.count,
                    }),
                    text: text.as_deref(),
                }
            }),
        }
    }
}

impl<'a> Lend<'a> for ctx::Tokenizer {
    type Param = wit::TokenizerParam<'a>;

    fn lend(&'a self) -> wit::TokenizerParam<'a> {
        match self {
            ctx::Tokenizer::O200kBase => wit::TokenizerParam::O200kBase,
            ctx::Tokenizer::Cl100kBase => wit::TokenizerParam::Cl100kBase,
            ctx::Tokenizer::CharsPerToken(n) => wit::TokenizerParam::CharsPerToken(*n),
            ctx::Tokenizer::Named(name) => wit::TokenizerParam::Named(name),
            ctx::Tokenizer::Host(name) => wit::TokenizerParam::Host(name),
        }
    }
}

/// The guest's side of every import, expanded from the WIT's list
/// ([`ctxpack_wit::wit_capabilities!`]): a call of the step protocol as the
/// WIT spells it, and the core's [`ctx::Host`] answered by the imports.
macro_rules! guest_arms {
    ($( $interface:ident {
        $( $function:ident $Capability:ident [$($Request:ident)?] ($($context:ident)?)
            { $($param:ident : $kind:ident [$owned:ty] [$core:ty]),* } -> [$answer:ty] [$core_answer:ty]; )*
    } )*) => {
        /// A call as the WIT spells it.
        fn call(call: &ctx::Call<'_>) -> exported::Call {
            match call {
                $($(
                    ctx::Call::$Capability { $($param),* } => guest_arms!(
                        @case $Capability [$($Request)?] { $($param: guest_arms!(@to $kind $param)),* }
                    ),
                )*)*
            }
        }

        impl ctx::Host for Imports {
            $($(
                fn $function(
                    &mut self,
                    $($context: &ctx::AgentContext,)?
                    $($param: $core),*
                ) -> Result<$core_answer, ctx::HostError> {
                    $(let $param = guest_arms!(@lend $kind $param);)*
                    guest_arms!(@call [$($context)?] $interface $function (
                        $(guest_arms!(@arg $kind $param)),*
                    ))
                }
            )*)*
        }
    };
    (@case $Capability:ident [$Request:ident] { $($field:tt)* }) => {
        exported::Call::$Capability(exported::$Request { $($field)* })
    };
    (@case $Capability:ident [] { }) => { exported::Call::$Capability };
    // A field of the core's `Call`, as the WIT's call record holds it.
    (@to str $p:ident) => { $p.to_string() };
    (@to strs $p:ident) => { $p.to_vec() };
    (@to copy $p:ident) => { *$p };
    (@to candidates $p:ident) => { $p.to_vec().convert() };
    (@to records $p:ident) => { $p.to_vec().convert() };
    (@to value $p:ident) => { $p.clone().convert() };
    // A parameter of the core's `Host`, held in the bindings' borrowed form…
    (@lend str $p:ident) => { $p };
    (@lend strs $p:ident) => { $p.iter().map(String::as_str).collect::<Vec<&str>>() };
    (@lend copy $p:ident) => { $p };
    (@lend candidates $p:ident) => { $p.iter().map(|c| c.lend()).collect::<Vec<_>>() };
    (@lend records $p:ident) => { $p.iter().map(Lend::lend).collect::<Vec<_>>() };
    (@lend value $p:ident) => { $p.lend() };
    // … and passed to the import.
    (@arg str $p:ident) => { $p };
    (@arg strs $p:ident) => { &$p };
    (@arg copy $p:ident) => { $p };
    (@arg candidates $p:ident) => { &$p };
    (@arg records $p:ident) => { &$p };
    (@arg value $p:ident) => { $p };
    // The import called, with a borrowed view of the context if it takes one.
    (@call [$context:ident] $i:ident $f:ident ( $($arg:expr),* )) => {
        convert(with_context($context, |c| imports::$i::$f(c, $($arg),*)))
    };
    (@call [] $i:ident $f:ident ( $($arg:expr),* )) => { convert(imports::$i::$f($($arg),*)) };
}

ctxpack_wit::wit_capabilities!(guest_arms);
ctxpack_wit::wit_answers!();

/// The `json` interface: the same builder and steps, one string each way.
mod json {
    use super::{Component, RouterResource, ctx, wit};
    use crate::bindings::exports::ctxpack::context::builder::RouterBorrow;
    use crate::bindings::exports::ctxpack::context::json::{
        Guest, GuestJsonAssembly, GuestJsonBuilder, JsonAssembly, JsonBuilder,
    };
    use ctxpack_wit::Convert;
    use std::cell::RefCell;
    use std::rc::Rc;

    impl Guest for Component {
        type JsonBuilder = Builder;
        type JsonAssembly = Assembly;

        fn route(router: RouterBorrow<'_>, query: String) -> Result<String, wit::CtxpackError> {
            let router: &RouterResource = router.get();
            ctx::json::route(&router.0, &query).map_err(Convert::convert)
        }

        fn diff_snapshots(before: String, after: String) -> Result<String, wit::CtxpackError> {
            ctx::json::diff(&before, &after).map_err(Convert::convert)
        }
    }

    /// The `json-builder` resource: one core builder, shared with the
    /// assemblies it starts.
    pub struct Builder(Rc<ctx::Builder>);

    impl GuestJsonBuilder for Builder {
        fn create(config: String) -> Result<JsonBuilder, wit::CtxpackError> {
            match ctx::json::builder(&config) {
                Ok(builder) => Ok(JsonBuilder::new(Builder(Rc::new(builder)))),
                Err(e) => Err(e.convert()),
            }
        }

        fn start(&self, request: String) -> JsonAssembly {
            let assembly = ctx::json::JsonAssembly::start(Rc::clone(&self.0), &request);
            JsonAssembly::new(Assembly(RefCell::new(assembly)))
        }

        fn handle(&self, router: RouterBorrow<'_>, request: String) -> JsonAssembly {
            let router: &RouterResource = router.get();
            let assembly = ctx::json::JsonAssembly::handle(&router.0, Rc::clone(&self.0), &request);
            JsonAssembly::new(Assembly(RefCell::new(assembly)))
        }

        fn count(&self, request: String) -> Result<String, wit::CtxpackError> {
            ctx::json::count(&self.0, &request).map_err(Convert::convert)
        }

        fn count_texts(
            &self,
            request: String,
            texts: Vec<String>,
        ) -> Result<Vec<u32>, wit::CtxpackError> {
            ctx::json::count_texts(&self.0, &request, &texts).map_err(Convert::convert)
        }

        fn trim(&self, request: String) -> JsonAssembly {
            let assembly = ctx::json::JsonAssembly::trim(Rc::clone(&self.0), &request);
            JsonAssembly::new(Assembly(RefCell::new(assembly)))
        }
    }

    /// The `json-assembly` resource.
    pub struct Assembly(RefCell<ctx::json::JsonAssembly>);

    impl GuestJsonAssembly for Assembly {
        fn step(&self, answer: String) -> Result<String, wit::CtxpackError> {
            let answer = Some(answer.as_str()).filter(|a| !a.is_empty());
            self.0.borrow_mut().step(answer).map_err(Convert::convert)
        }
    }
}

bindings::export!(Component with_types_in bindings);

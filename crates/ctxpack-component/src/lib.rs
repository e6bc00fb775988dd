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
    });
}

ctxpack_wit::wit_conversions!(crate::bindings::ctxpack::context);

use bindings::ctxpack::context::{policy, sources, summarizer, types as wit};
use bindings::exports::ctxpack::context::builder::{
    ContextBuilder, ContextBuilderBorrow, Guest, GuestContextBuilder, GuestRouter, Router,
    RouterBorrow,
};
use ctxpack_core as ctx;
use ctxpack_wit::Convert;

struct Component;

impl Guest for Component {
    type ContextBuilder = Builder;
    type Router = RouterResource;

    fn handle(
        router: RouterBorrow<'_>,
        builder: ContextBuilderBorrow<'_>,
        request: wit::AssembleRequest,
    ) -> Result<wit::Handling, wit::CtxpackError> {
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

/// The `context-builder` resource: one core builder, kept between calls.
struct Builder(ctx::Builder);

impl GuestContextBuilder for Builder {
    fn create(config: wit::BuilderConfig) -> Result<ContextBuilder, wit::CtxpackError> {
        match ctx::Builder::new(config.convert()) {
            Ok(builder) => Ok(ContextBuilder::new(Builder(builder))),
            Err(e) => Err(e.convert()),
        }
    }

    fn assemble(
        &self,
        request: wit::AssembleRequest,
    ) -> Result<wit::ContextPack, wit::CtxpackError> {
        let request: ctx::AssembleRequest = request.convert();
        match self.0.assemble(&request, &mut Imports) {
            Ok(pack) => Ok(pack.convert()),
            Err(e) => Err(e.convert()),
        }
    }
}

/// The host's imports, seen by the core as its [`ctx::Host`].
struct Imports;

fn answer<A: Convert<B>, B>(answer: Result<A, wit::HostError>) -> Result<B, ctx::HostError> {
    answer.map(Convert::convert).map_err(Convert::convert)
}

impl ctx::Host for Imports {
    fn retrieve(
        &mut self,
        context: &ctx::AgentContext,
        query: &str,
        limit: u32,
    ) -> Result<Vec<ctx::Candidate>, ctx::HostError> {
        answer(sources::retrieve(&context.clone().convert(), query, limit))
    }

    fn expand_graph(
        &mut self,
        context: &ctx::AgentContext,
        item_ids: &[String],
        depth: u32,
    ) -> Result<Vec<ctx::Candidate>, ctx::HostError> {
        answer(sources::expand_graph(
            &context.clone().convert(),
            item_ids,
            depth,
        ))
    }

    fn recall_memory(
        &mut self,
        context: &ctx::AgentContext,
        user_id: &str,
        query: &str,
        limit: u32,
    ) -> Result<Vec<ctx::Candidate>, ctx::HostError> {
        answer(sources::recall_memory(
            &context.clone().convert(),
            user_id,
            query,
            limit,
        ))
    }

    fn repository_state(
        &mut self,
        context: &ctx::AgentContext,
    ) -> Result<Vec<ctx::Candidate>, ctx::HostError> {
        answer(sources::repository_state(&context.clone().convert()))
    }

    fn review(
        &mut self,
        context: &ctx::AgentContext,
        items: &[&ctx::Candidate],
    ) -> Result<Vec<ctx::Verdict>, ctx::HostError> {
        let items: Vec<wit::Candidate> = items.iter().map(|&c| c.clone().convert()).collect();
        answer(policy::review(&context.clone().convert(), &items))
    }

    fn summarize(
        &mut self,
        requests: &[ctx::SummaryRequest],
        tokenizer: ctx::Tokenizer,
    ) -> Result<Vec<String>, ctx::HostError> {
        let requests: Vec<wit::SummaryRequest> = requests.to_vec().convert();
        answer(summarizer::summarize(&requests, tokenizer.convert()))
    }
}

bindings::export!(Component with_types_in bindings);

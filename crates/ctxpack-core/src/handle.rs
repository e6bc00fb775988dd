//! Conditional dispatch: route first, on the raw query; build a context
//! only when the router cannot confidently route.
//!
//! On a confident route without a reference cue the skill gets a trivial
//! request context built inline — the builder is not called and no host
//! capability is touched, so retrieval is structurally absent from that
//! path. Otherwise the builder assembles a pack and the fallback skill gets
//! the request context drawn from it.

use crate::Builder;
use crate::error::Failure;
use crate::host::Host;
use crate::pack::{ContextPack, RequestContext};
use crate::snapshot::Origin;

use crate::router::{Entity, Router, RoutingDecision};
use crate::types::AssembleRequest;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A confident route's dispatch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SkillDispatch {
    /// The route.
    pub route: String,
    /// The skill to run.
    pub skill: String,
    /// Entities the router matched.
    pub matched_entities: Vec<Entity>,
    /// The trivial context: the query and the ids, nothing gathered.
    pub context: RequestContext,
}

/// The builder branch's dispatch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FallbackDispatch {
    /// The request context drawn from the pack.
    pub context: RequestContext,
    /// The assembled pack, with its snapshot.
    pub pack: ContextPack,
}

/// Where a query goes.
// One dispatch is built per request and moved once; boxing a variant would
// buy nothing but an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dispatch {
    /// Straight to a skill.
    Skill(SkillDispatch),
    /// Through the builder to the fallback skill.
    Fallback(FallbackDispatch),
}

/// The routing decision and what came of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Handling {
    /// What the router decided, and why.
    pub decision: RoutingDecision,
    /// Where the query went.
    pub dispatch: Dispatch,
}

/// Routes `request.query` and dispatches it.
pub fn handle(
    router: &Router,
    builder: &Builder,
    request: &AssembleRequest,
    host: &mut dyn Host,
) -> Result<Handling, Failure> {
    match route(router, request) {
        Routed::Skill(handling) => Ok(handling),
        Routed::Builder(decision) => {
            let pack = builder.assemble(request, host)?;
            Ok(fallback(decision, request, pack))
        }
    }
}

/// Where the router sends a request: straight to a skill (the handling is
/// complete), or through the builder.
// Made once per request and matched at once: boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Routed {
    Skill(Handling),
    Builder(RoutingDecision),
}

/// The routing half of [`handle`].
pub(crate) fn route(router: &Router, request: &AssembleRequest) -> Routed {
    let decision = router.route(&request.query);
    match (&decision.route, &decision.skill) {
        (Some(route), Some(skill)) if decision.goes_to_skill() => {
            let dispatch = Dispatch::Skill(SkillDispatch {
                route: route.clone(),
                skill: skill.clone(),
                matched_entities: decision.matched_entities.clone(),
                context: trivial_context(request),
            });
            Routed::Skill(Handling { decision, dispatch })
        }
        _ => Routed::Builder(decision),
    }
}

/// The builder half of [`handle`]: the fallback dispatch of a pack.
pub(crate) fn fallback(
    decision: RoutingDecision,
    request: &AssembleRequest,
    pack: ContextPack,
) -> Handling {
    Handling {
        decision,
        dispatch: Dispatch::Fallback(FallbackDispatch {
            context: context_from_pack(request, &pack),
            pack,
        }),
    }
}

fn trivial_context(request: &AssembleRequest) -> RequestContext {
    RequestContext {
        user_query: request.query.clone(),
        conversation_history: Vec::new(),
        retrieved_context: Vec::new(),
        memory_items: Vec::new(),
        session_id: request.context.session_id.clone(),
        trace_id: request.context.trace_id.clone(),
        user_id: request.context.user_id.clone(),
    }
}

/// The request context, drawn from what the pack kept: its retrieved and
/// memory entries as packed, and the conversation turns it kept, oldest
/// first.
pub fn context_from_pack(request: &AssembleRequest, pack: &ContextPack) -> RequestContext {
    let mut context = trivial_context(request);
    let origins: HashMap<&str, Origin> = pack
        .snapshot
        .entries
        .iter()
        .filter(|e| e.included)
        .map(|e| (e.id.as_str(), e.origin))
        .collect();
    for entry in &pack.entries {
        match origins.get(entry.id.as_str()) {
            Some(Origin::Retrieval) => context.retrieved_context.push(entry.clone()),
            Some(Origin::Memory) => context.memory_items.push(entry.clone()),
            _ => {}
        }
    }
    context.conversation_history = pack
        .snapshot
        .turns()
        .zip(&request.conversation)
        .filter(|(e, _)| e.included)
        .map(|(_, turn)| turn.clone())
        .collect();
    context
}

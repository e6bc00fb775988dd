//! Properties of the core over generated requests and host answers: the
//! invariants hold for every input, not only for the corpus.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use ctxpack_core::{
    AgentContext, AssembleRequest, Builder, BuilderConfig, Candidate, ContextPack,
    ConversationTurn, Layer, Origin, Plan, Profile, Provenance, RagMemorySettings, Reason, Role,
    Section, StageSummary, Tokenizer, TrustTier,
};
use ctxpack_host_example::stores::{Answer, HostAnswers, InMemoryHost, PolicyRules};
use proptest::prelude::*;
use std::collections::HashMap;

const WORDS: &[&str] = &[
    "invoice",
    "deploy",
    "garden",
    "the",
    "a",
    "of",
    "parser",
    "rail",
    "Kyoto",
    "refund",
    "café",
    "東京",
    "tool",
    "<untrusted>",
    "[source: x]",
    "42",
];

fn text(max_words: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 0..max_words).prop_map(|w| w.join(" "))
}

/// A conversation whose tool calls are well formed: an assistant turn with
/// a call id may be followed (not necessarily at once) by its results, and
/// a result may also be an orphan.
fn conversation() -> impl Strategy<Value = Vec<ConversationTurn>> {
    prop::collection::vec((0u8..6, text(12)), 0..14).prop_map(|spec| {
        let mut turns = Vec::new();
        let mut open: Vec<String> = Vec::new();
        for (k, (kind, content)) in spec.into_iter().enumerate() {
            let (role, id) = match kind {
                0 | 1 => (Role::User, None),
                2 => (Role::Assistant, None),
                3 => {
                    let id = format!("call{k}");
                    open.push(id.clone());
                    (Role::Assistant, Some(id))
                }
                4 => match open.pop() {
                    Some(id) => (Role::Tool, Some(id)),
                    None => (Role::Tool, Some(format!("orphan{k}"))),
                },
                _ => (Role::System, None),
            };
            turns.push(ConversationTurn {
                role,
                content,
                tool_call_id: id,
            });
        }
        turns
    })
}

const SECTIONS: &[Section] = &[
    Section::RelevantKnowledge,
    Section::GraphNeighbours,
    Section::EpisodicMemory,
    Section::RepositoryState,
    Section::SupportingContext,
    Section::ToolResults,
    Section::CurrentDiff,
    Section::MandatoryInstructions,
    Section::ConversationState,
];
const TIERS: &[TrustTier] = &[
    TrustTier::System,
    TrustTier::Trusted,
    TrustTier::Unverified,
    TrustTier::Untrusted,
];

fn candidate() -> impl Strategy<Value = Candidate> {
    (
        0u8..24,
        prop::sample::select(SECTIONS),
        text(40),
        any::<bool>(),
        prop::sample::select(TIERS),
        prop::option::of(prop_oneof![Just(f64::NAN), -1.0f64..1.0]),
        prop::option::of(0u64..100),
        prop::option::of(prop::sample::select(&["a", "b", "z"][..])),
    )
        .prop_map(
            |(id, section, text, cited, trust, score, sequence, scope)| Candidate {
                id: format!("c{id}"),
                section,
                text,
                provenance: cited.then(|| Provenance {
                    source_kind: "chunk".into(),
                    reference: format!("ref/{id}"),
                    source_version: None,
                    index_revision: Some("rev".into()),
                }),
                trust,
                score,
                sequence,
                scope: scope.map(str::to_owned),
                token_count: None,
            },
        )
}

#[derive(Debug, Clone)]
struct Case {
    request: AssembleRequest,
    config: BuilderConfig,
    host: HostAnswers,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (0u32..400, 0u32..4, 0u32..12, 1u32..5, 1u32..9),
        (
            text(12),
            prop::collection::vec(text(8), 0..3),
            prop::option::of(text(10)),
        ),
        conversation(),
        prop::collection::vec((text(3), text(10)), 0..5),
        prop::collection::vec(candidate(), 0..12),
        prop::collection::vec(candidate(), 0..6),
        prop::collection::vec(0u8..24, 0..4),
        any::<bool>(),
    )
        .prop_map(
            |(
                (budget, overhead, keep_last, chars, step),
                (system, instructions, task),
                conversation,
                stages,
                retrieved,
                memory,
                denied,
                compress,
            )| {
                let request = AssembleRequest {
                    context: AgentContext {
                        session_id: Some("s".into()),
                        trace_id: "t".into(),
                        user_id: Some("u".into()),
                        scopes: vec!["a".into(), "b".into()],
                        ..AgentContext::default()
                    },
                    query: "q".into(),
                    tokenizer: Tokenizer::CharsPerToken(chars),
                    budget: Some(budget),
                    entry_overhead: overhead,
                    system_prompt: system,
                    workflow: None,
                    instructions,
                    current_task: task,
                    conversation,
                    keep_last,
                    stage_summaries: stages
                        .into_iter()
                        .enumerate()
                        .map(|(i, (outcome, summary))| StageSummary {
                            stage_id: format!("s{i}"),
                            outcome,
                            summary,
                        })
                        .collect(),
                };
                let mut policy = PolicyRules::default();
                for d in denied {
                    policy.deny.insert(format!("c{d}"), "no".into());
                }
                let host = HostAnswers {
                    retrieve: Some(Answer::Items(retrieved)),
                    recall_memory: Some(Answer::Items(memory)),
                    policy: Some(policy),
                    summarizer: Some(ctxpack_host_example::stores::SummarizerRule::LeadingWords),
                    ..HostAnswers::default()
                };
                let config = BuilderConfig {
                    profile: Profile::RagMemory(RagMemorySettings {
                        retrieve_limit: 50,
                        memory_limit: 50,
                    }),
                    plan: Plan {
                        compress,
                        cut_step: step,
                        ..Plan::default()
                    },
                    ..BuilderConfig::default()
                };
                Case {
                    request,
                    config,
                    host,
                }
            },
        )
}

fn run(case: &Case) -> Result<ContextPack, ctxpack_core::Error> {
    let builder = Builder::new(case.config.clone()).unwrap();
    builder.assemble(&case.request, &mut InMemoryHost::new(case.host.clone()))
}

fn host_items(case: &Case) -> usize {
    [&case.host.retrieve, &case.host.recall_memory]
        .iter()
        .map(|a| match a {
            Some(Answer::Items(v)) => v.len(),
            _ => 0,
        })
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold(case in case()) {
        let pack = match run(&case) {
            Ok(pack) => pack,
            // The only refusal for well-formed input: L0 alone over budget.
            Err(ctxpack_core::Error::MandatoryOverBudget { mandatory_tokens, budget }) => {
                prop_assert!(mandatory_tokens > budget);
                return Ok(());
            }
            Err(e) => return Err(TestCaseError::fail(format!("refused: {e}"))),
        };
        let snap = &pack.snapshot;
        // Never over budget; the accounting adds up.
        prop_assert!(pack.budget_used <= pack.budget_limit);
        let charged: u32 = pack.entries.iter().map(|e| e.tokens + case.request.entry_overhead).sum();
        prop_assert_eq!(charged, pack.budget_used);
        // Every candidate exactly once: the request's and the host's.
        let from = |o: Origin| snap.entries.iter().filter(|e| e.origin == o).count();
        let request_items = usize::from(!case.request.system_prompt.is_empty())
            + case.request.instructions.len()
            + usize::from(case.request.current_task.is_some())
            + case.request.conversation.len()
            + case.request.stage_summaries.len();
        prop_assert_eq!(from(Origin::Request), request_items);
        prop_assert_eq!(from(Origin::Retrieval) + from(Origin::Memory), host_items(&case));
        let denied: Vec<String> = case.host.policy.as_ref().map(|p| p.deny.keys().cloned().collect()).unwrap_or_default();
        for e in &snap.entries {
            prop_assert_eq!(e.included, e.reason.is_inclusion());
            // L0 is never dropped nor compressed; nothing from a host in L0.
            if e.origin == Origin::Request && e.layer == Layer::L0 {
                prop_assert!(e.included && !e.compressed);
            }
            if e.included && e.origin != Origin::Request {
                prop_assert_ne!(e.layer, Layer::L0);
            }
            if e.included {
                // Provenance, scope and policy.
                prop_assert!(e.provenance.is_some());
                if matches!(e.origin, Origin::Retrieval | Origin::Memory) {
                    prop_assert!(!denied.contains(&e.id), "{} was denied", e.id);
                }
            }
            if let Reason::OverBudget(s) = &e.reason {
                prop_assert!(s.needed > s.remaining);
            }
        }
        // An included host item is in scope and cited at its source.
        for e in snap.entries.iter().filter(|e| e.included) {
            let answer = match e.origin {
                Origin::Retrieval => &case.host.retrieve,
                Origin::Memory => &case.host.recall_memory,
                _ => continue,
            };
            let Some(Answer::Items(items)) = answer else { continue };
            let ok = items.iter().any(|c| {
                c.id == e.id
                    && c.provenance.is_some()
                    && c.scope.as_deref().is_none_or(|s| ["a", "b"].contains(&s))
            });
            prop_assert!(ok, "{} included without provenance or out of scope", e.id);
        }
        // A tool call is never separated from its results.
        let kept: HashMap<usize, &ConversationTurn> = pack
            .entries
            .iter()
            .filter(|e| e.section == Section::ConversationState && e.provenance.source_kind == "request")
            .filter_map(|e| e.id.strip_prefix("turn-")?.parse::<usize>().ok())
            .map(|i| (i, &case.request.conversation[i]))
            .collect();
        for (i, t) in case.request.conversation.iter().enumerate() {
            if let (Role::Tool, Some(id)) = (t.role, &t.tool_call_id) {
                let call = case.request.conversation.iter().position(|c| c.role == Role::Assistant && c.tool_call_id.as_ref() == Some(id));
                match call {
                    Some(c) => prop_assert_eq!(kept.contains_key(&c), kept.contains_key(&i), "turn {} split from call {}", i, c),
                    None => prop_assert!(!kept.contains_key(&i), "orphan {} kept", i),
                }
            }
        }
        // Deterministic: the same input gives the same bytes.
        let again = run(&case).unwrap();
        prop_assert_eq!(serde_json::to_string(&pack).unwrap(), serde_json::to_string(&again).unwrap());
    }

    #[test]
    fn host_order_does_not_matter(case in case(), seed in any::<u64>()) {
        let mut shuffled = case.clone();
        for answer in [&mut shuffled.host.retrieve, &mut shuffled.host.recall_memory] {
            if let Some(Answer::Items(items)) = answer {
                // A deterministic shuffle from the seed.
                let mut s = seed | 1;
                for i in (1..items.len()).rev() {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    items.swap(i, (s % (i as u64 + 1)) as usize);
                }
            }
        }
        // Ids repeated within a source make "the first one" depend on the
        // order by definition; the property is for distinct ids.
        let distinct = |a: &Option<Answer>| match a {
            Some(Answer::Items(v)) => {
                let mut ids: Vec<&str> = v.iter().map(|c| c.id.as_str()).collect();
                ids.sort_unstable();
                ids.windows(2).all(|w| w[0] != w[1])
            }
            _ => true,
        };
        prop_assume!(distinct(&case.host.retrieve) && distinct(&case.host.recall_memory));
        let a = run(&case).map(|p| serde_json::to_string(&p).unwrap());
        let b = run(&shuffled).map(|p| serde_json::to_string(&p).unwrap());
        prop_assert_eq!(a, b);
    }
}

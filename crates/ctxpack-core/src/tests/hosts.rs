//! What a host lends and what a build leaves out: the policy's review
//! rounds, the capabilities' defaults, refusals naming a left-out tokenizer.

use super::*;

/// A host whose retrieval answers `n` short candidates and whose policy
/// denies those `denies` names (every one, for [`DenyingHost::all`]),
/// counting what it was shown.
struct DenyingHost {
    n: usize,
    reviewed: Vec<usize>,
    denies: fn(&str) -> bool,
}

impl DenyingHost {
    /// Denies every candidate.
    fn all(n: usize) -> Self {
        DenyingHost {
            n,
            reviewed: Vec::new(),
            denies: |_| true,
        }
    }
}

impl Host for DenyingHost {
    fn retrieve(&mut self, _: &AgentContext, _: &str, _: u32) -> Result<Vec<Candidate>, HostError> {
        Ok((0..self.n)
            .map(|i| Candidate {
                id: format!("kb-{i:02}"),
                section: Section::RelevantKnowledge,
                text: format!("fact {i:02}"),
                provenance: Some(Provenance {
                    source_kind: "kb".into(),
                    reference: format!("kb/{i:02}"),
                    source_version: None,
                    index_revision: None,
                }),
                trust: TrustTier::Trusted,
                score: Some(1.0 - i as f64 / 100.0),
                sequence: None,
                scope: None,
                token_count: None,
            })
            .collect())
    }
    fn expand_graph(
        &mut self,
        c: &AgentContext,
        i: &[String],
        d: u32,
    ) -> Result<Vec<Candidate>, HostError> {
        NoHost.expand_graph(c, i, d)
    }
    fn recall_memory(
        &mut self,
        c: &AgentContext,
        u: &str,
        q: &str,
        l: u32,
    ) -> Result<Vec<Candidate>, HostError> {
        NoHost.recall_memory(c, u, q, l)
    }
    fn repository_state(&mut self, c: &AgentContext) -> Result<Vec<Candidate>, HostError> {
        NoHost.repository_state(c)
    }
    fn review(
        &mut self,
        _: &AgentContext,
        items: &[&Candidate],
    ) -> Result<Vec<Verdict>, HostError> {
        self.reviewed.push(items.len());
        Ok(items
            .iter()
            .map(|c| match (self.denies)(&c.id) {
                true => Verdict::Deny("no".into()),
                false => Verdict::Allow,
            })
            .collect())
    }
    fn summarize(&mut self, r: &[SummaryRequest], t: Tokenizer) -> Result<Vec<String>, HostError> {
        NoHost.summarize(r, t)
    }
}

#[test]
fn a_policy_that_denies_everything_gets_four_rounds_then_nothing_unreviewed_goes_in() {
    let config = BuilderConfig {
        profile: Profile::Rag(RagSettings { retrieve_limit: 40 }),
        plan: Plan {
            compress: false,
            shares: vec![SectionShare {
                section: Section::RelevantKnowledge,
                share: 1.0,
            }],
            ..Plan::default()
        },
        ..BuilderConfig::default()
    };
    let builder = Builder::new(config).unwrap();
    // Each candidate is "[source: kb/NN]\nfact NN": 23 characters, and 2
    // more for the blank line before it; the budget takes three.
    let r = request(3 + 3 * 25);
    let mut host = DenyingHost::all(40);
    let p = builder.assemble(&r, &mut host).unwrap();
    // Each round reviews what the room the last denials freed would take.
    assert_eq!(host.reviewed, [3, 3, 3, 3]);
    let rs = reasons(&p);
    let count = |name: &str| rs.iter().filter(|(_, r)| r.name() == name).count();
    assert_eq!(count("policy-denied"), 12);
    // The next three would fit, but the rounds were spent.
    assert_eq!(count("unreviewed"), 3);
    let unreviewed: Vec<&str> = rs
        .iter()
        .filter(|(_, r)| *r == Reason::Unreviewed)
        .map(|(id, _)| id.as_str())
        .collect();
    assert_eq!(unreviewed, ["kb-12", "kb-13", "kb-14"]);
    // Nothing of the host's is included; the rest were never reached.
    assert!(p.entries.iter().all(|e| !e.id.starts_with("kb-")));
    assert_eq!(count("over-budget"), 40 - 15);
    let rounds = p
        .snapshot
        .source_calls
        .iter()
        .filter(|c| c.capability == "policy.review")
        .count();
    assert_eq!(rounds as u32, REVIEW_ROUNDS);
}

/// What a build without `tokenizer` (compiled without `feature`) says
/// when a counter, a builder's preload or an assembly asks for it.
#[allow(dead_code)]
fn left_out_is_refused_naming_it(tokenizer: Tokenizer, name: &str, feature: &str) {
    let named = |e: &Error| {
        let text = e.to_string();
        assert!(
            matches!(e, Error::TokenizerUnavailable(_))
                && text.contains(name)
                && text.contains(&format!("cargo feature `{feature}`")),
            "{text}"
        );
    };
    named(
        &crate::tokenizer::Tokenizers::new()
            .counter(&tokenizer)
            .err()
            .unwrap(),
    );
    let config = crate::BuilderConfig {
        preload: vec![tokenizer.clone()],
        ..crate::BuilderConfig::default()
    };
    named(&crate::Builder::new(config).err().unwrap());
    let mut request: crate::AssembleRequest = serde_json::from_str(
        r#"{"context": {"trace-id": "t"}, "query": "q", "tokenizer": {"chars-per-token": 4},
            "budget": 100, "entry-overhead": 0, "system-prompt": "S",
            "conversation": [], "keep-last": 1}"#,
    )
    .unwrap();
    request.tokenizer = Some(tokenizer);
    let builder = crate::Builder::new(crate::BuilderConfig::default()).unwrap();
    let failure = builder.assemble(&request, &mut crate::NoHost).unwrap_err();
    named(&failure.error);
    assert!(failure.snapshot.is_none());
}

#[cfg(not(feature = "o200k"))]
#[test]
fn a_build_left_without_o200k_refuses_it_naming_it() {
    left_out_is_refused_naming_it(Tokenizer::O200kBase, "o200k-base", "o200k");
}

#[cfg(not(feature = "cl100k"))]
#[test]
fn a_build_left_without_cl100k_refuses_it_naming_it() {
    left_out_is_refused_naming_it(Tokenizer::Cl100kBase, "cl100k-base", "cl100k");
}

#[test]
fn every_capability_is_a_call_keyed_by_its_function_and_a_host_lends_none_by_default() {
    let calls = [
        Call::Retrieve {
            query: "q".into(),
            limit: 1,
        },
        Call::ExpandGraph {
            item_ids: vec!["a".to_owned()].into(),
            depth: 1,
        },
        Call::RecallMemory {
            user_id: "u".into(),
            query: "q".into(),
            limit: 1,
        },
        Call::RepositoryState {},
        Call::Review {
            items: Vec::new().into(),
        },
        Call::Summarize {
            requests: Vec::new().into(),
            tokenizer: Tokenizer::O200kBase,
        },
        Call::CountTokens {
            tokenizer: "claude-sonnet-4-5".into(),
            texts: Vec::new().into(),
        },
        Call::CountMessages {
            tokenizer: "claude-sonnet-4-5".into(),
            lists: Vec::new().into(),
        },
        Call::SplitText {
            texts: Vec::new().into(),
        },
    ];
    let imports: Vec<Capability> = calls.iter().map(Call::import).collect();
    assert_eq!(imports, Capability::ALL);
    struct Lends;
    impl Host for Lends {}
    let context = request(10).context;
    for (call, capability) in calls.iter().zip(Capability::ALL) {
        // The JSON face keys a call by the import's function name.
        let json = serde_json::to_value(call).unwrap();
        let key = json.as_object().unwrap().keys().next().unwrap().clone();
        assert_eq!(key, capability.function());
        assert_eq!(Capability::named(capability.name()), Some(capability));
        assert_eq!(call.capability(), capability.name());
        // A host that implements nothing answers "not provided", naming it.
        let answer = call.call(&mut Lends, &context);
        let failed = call.failed(HostError::not_provided(capability.name()));
        assert_eq!(answer, failed, "{capability}");
    }
}

/// Assembles 40 short host texts and a conversation whose long first
/// turn, the assistant's, the fill takes and the start on a user turn
/// then leaves out, the policy denying what `denies` names: the pack, and
/// how many texts each review round saw.
fn room_freed_after_the_fill(denies: fn(&str) -> bool) -> (ContextPack, Vec<usize>) {
    let config = BuilderConfig {
        profile: Profile::Rag(RagSettings { retrieve_limit: 40 }),
        plan: Plan {
            compress: false,
            ..Plan::default()
        },
        ..BuilderConfig::default()
    };
    let builder = Builder::new(config).unwrap();
    let mut r = request(3 + 10 * 25);
    r.conversation = vec![
        turn(Role::Assistant, &"a".repeat(60), None),
        turn(Role::User, "u", None),
    ];
    let mut host = DenyingHost {
        n: 40,
        reviewed: Vec::new(),
        denies,
    };
    let p = builder.assemble(&r, &mut host).unwrap();
    (p, host.reviewed)
}

#[test]
fn texts_the_policy_never_saw_are_reviewed_for_the_room_freed_after_the_fill() {
    let (p, reviewed) = room_freed_after_the_fill(|_| false);
    // The fill took six texts with the assistant's turn; leaving the turn
    // out freed room for three more, which the policy had not seen.
    assert_eq!(reviewed, [6, 3]);
    let rs = reasons(&p);
    let included: Vec<&str> = p.entries.iter().map(|e| e.id.as_str()).collect();
    let kb: Vec<String> = (0..9).map(|i| format!("kb-{i:02}")).collect();
    assert_eq!(included[1..10], kb);
    assert!(rs.contains(&("turn-0".into(), Reason::BeforeUserTurn)));
    // What is still left out does not fit in what is left.
    let remaining = u64::from(3 + 10 * 25 - p.snapshot.tokens_used);
    for (id, reason) in rs
        .iter()
        .filter(|(id, _)| id.starts_with("kb-") && id.as_str() > "kb-08")
    {
        match reason {
            Reason::OverBudget(s) => {
                assert!(s.remaining == remaining && s.needed > remaining, "{id}")
            }
            other => panic!("{id}: {other:?}"),
        }
    }
    let rounds = |p: &ContextPack| {
        let calls = p.snapshot.source_calls.iter();
        calls.filter(|c| c.capability == "policy.review").count()
    };
    assert_eq!(rounds(&p), 2);

    // A denial in that round leaves room for the next text, reviewed in
    // a round of its own.
    let (p, reviewed) = room_freed_after_the_fill(|id| id == "kb-07");
    assert_eq!(reviewed, [6, 3, 1]);
    let rs = reasons(&p);
    assert!(rs.contains(&("kb-07".into(), Reason::PolicyDenied("no".into()))));
    assert!(rs.contains(&("kb-09".into(), Reason::WithinBudget)));
    assert_eq!(rounds(&p), 3);
}

//! The pipeline end to end on small requests, with counters whose
//! counts are easy to check by hand.

use super::*;
use crate::conversation::{Unit, render_reachable, render_turn, units};
use crate::item::Group;
use crate::tokenizer::{CharsPerToken, Meter, Recording};

mod chat;
mod compaction;
mod conversation;
mod counters;
#[cfg(feature = "o200k")]
mod host_counts;
mod hosts;
mod models;
mod modules;
#[cfg(any(feature = "o200k", feature = "cl100k"))]
mod tokenizer_files;
mod trim;

fn turn(role: Role, content: &str, call: Option<&str>) -> ConversationTurn {
    ConversationTurn {
        role,
        content: content.into(),
        tool_call_id: call.map(Into::into),
        attached_tokens: None,
    }
}

/// `n` turns, the user's and the assistant's in turn, the `i`th saying
/// `text(i)`.
fn alternating(n: usize, text: impl Fn(usize) -> String) -> Vec<ConversationTurn> {
    (0..n)
        .map(|i| {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            turn(role, &text(i), None)
        })
        .collect()
}

fn request(budget: u32) -> AssembleRequest {
    AssembleRequest {
        context: AgentContext {
            session_id: Some("s1".into()),
            trace_id: "t1".into(),
            ..AgentContext::default()
        },
        query: "q".into(),
        model: None,
        tokenizer: Some(Tokenizer::CharsPerToken(1)),
        budget: Some(budget),
        entry_overhead: None,
        reply_overhead: None,
        system_prompt: "SYS".into(),
        workflow: None,
        instructions: vec![],
        current_task: None,
        conversation: vec![],
        chat: None,
        keep_last: 10,
        conversation_start: None,
        form: None,
        layout: None,
        stage_summaries: vec![],
        compaction: None,
    }
}

/// Assembles `r` with no host, counting with `counter` through `cache`.
fn run_with(
    r: &AssembleRequest,
    counter: &dyn crate::tokenizer::TokenCounter,
    cache: &mut crate::tokenizer::CountCache,
) -> Result<ContextPack, Error> {
    crate::validate::request(r)?;
    let builder = Builder::new(BuilderConfig::default()).unwrap();
    let settled = builder.models.settle(r)?;
    let m = Meter::new(counter, &settled.tokenizer, cache);
    let budget = r.budget.unwrap();
    let (builder, m, settled) = (&builder, &m, &settled);
    Assembly::new(
        |channel| async move { builder.run((r, None), &channel, m, settled, budget).await },
    )
    .drive(&mut NoHost, &r.context)
    .map_err(|f| f.error)
}

fn run(r: &AssembleRequest) -> Result<ContextPack, Error> {
    let c = CharsPerToken::new(1).unwrap();
    run_with(r, &c, &mut crate::tokenizer::CountCache::new(0))
}

#[test]
fn a_re_assembly_counts_only_the_new_turn() {
    let counter = Recording::new(CharsPerToken::new(1).unwrap());
    let mut cache = crate::tokenizer::CountCache::new(1000);
    let mut r = request(200);
    r.conversation = (0..6)
        .map(|i| turn(Role::User, &format!("turn {i}"), None))
        .collect();
    let mut assemble_with = |r: &AssembleRequest| run_with(r, &counter, &mut cache).unwrap();
    // Each turn is counted as an entry and as a message's content;
    // the rendered whole is counted too (this estimator does not add
    // up at splits, so the tally counts the joined text).
    let turns_counted = |counted: &[String]| -> Vec<String> {
        counted
            .iter()
            .filter(|t| t.contains("turn") && !t.contains("\n"))
            .cloned()
            .collect()
    };
    let first = assemble_with(&r);
    assert_eq!(first.entries.len(), 7);
    assert_eq!(turns_counted(&counter.1.borrow()).len(), 12);
    counter.1.borrow_mut().clear();
    r.conversation.push(turn(Role::User, "turn 6", None));
    let second = assemble_with(&r);
    assert_eq!(second.entries.len(), 8);
    // The new turn, as an entry and as a message. Turn 5 first meets
    // the conversation's share (20 of 200 tokens) with too little
    // room: a known count over the limit asked is made again, only as
    // far as the limit, so that a warm builder records what a cold one
    // would. No other turn is counted again.
    // The new turn is the question being answered: counted first, with
    // L0, as it is sent whatever happens.
    assert_eq!(
        turns_counted(&counter.1.borrow()),
        ["[user] turn 6", "turn 6", "[user] turn 5"]
    );
}

#[test]
fn only_turns_the_budget_can_reach_are_rendered() {
    let turns: Vec<ConversationTurn> = (0..1000)
        .map(|i| turn(Role::User, &format!("turn {i} says a few words"), None))
        .collect();
    let tokenizers = crate::tokenizer::Tokenizers::new();
    let counter = tokenizers.counter(&Tokenizer::O200kBase).unwrap();
    let mut cache = crate::tokenizer::CountCache::new(0);
    let meter = Meter::new(&*counter, &Tokenizer::O200kBase, &mut cache);
    let mut r = request(100);
    r.conversation = turns.clone();
    let sent = crate::budget::Sent {
        form: r.form,
        overhead: 0,
        reply: 0,
        verbatim: false,
    };
    let mut l1 = crate::layer::own(&r, &meter, sent).l1;
    assert!(l1.iter().all(|i| i.text.is_empty()));
    let window: Vec<Group> = (0..1000).rev().map(Group::One).collect();
    // Each turn's content is six runs, so at least six tokens, plus an
    // overhead of one: the eleventh newest turn passes 70, and is the
    // last the budgeting could count.
    render_reachable(&turns, &mut l1, &window, &meter, 70, (1, sent.written()));
    let rendered: Vec<usize> = (0..1000).filter(|&i| !l1[i].text.is_empty()).collect();
    assert_eq!(rendered, (989..1000).collect::<Vec<_>>());
    assert_eq!(l1[995].text, "[user] turn 995 says a few words");
    // Those it renders are enough: the turns that fit in 70 are fewer.
    let fit = (0..1000)
        .rev()
        .scan(0u32, |used, i| {
            *used += meter.count(&render_turn(&turns[i], meter.controls()).0) + 1;
            (*used <= 70).then_some(i)
        })
        .count();
    assert!(fit < rendered.len(), "{fit} fit");
}

/// Each candidate's id and reason, a run's members each.
fn reasons(p: &ContextPack) -> Vec<(String, Reason)> {
    p.snapshot
        .entries
        .iter()
        .flat_map(|e| e.ids().into_iter().map(|id| (id, e.reason.clone())))
        .collect()
}

/// How far each candidate was counted, a run's members each.
fn counted(p: &ContextPack) -> Vec<Counted> {
    p.snapshot
        .entries
        .iter()
        .flat_map(|e| std::iter::repeat_n(e.counted, e.candidates() as usize))
        .collect()
}

#[test]
fn l0_over_budget_fails_with_both_numbers() {
    let mut r = request(5);
    r.instructions = vec!["four".into()];
    let err = run(&r).unwrap_err();
    assert_eq!(
        err,
        Error::MandatoryOverBudget {
            mandatory_tokens: 9,
            budget: 5
        }
    );
    // L0 as it renders: "SYS", a blank line, "four".
    assert!(err.to_string().contains('9') && err.to_string().contains('5'));
}

#[test]
fn l0_is_kept_even_when_it_uses_the_whole_budget() {
    let mut r = request(3);
    r.conversation = vec![turn(Role::Assistant, "hi", None)];
    r.stage_summaries = vec![StageSummary {
        stage_id: "a".into(),
        outcome: "ok".into(),
        summary: "x".into(),
    }];
    let p = run(&r).unwrap();
    assert_eq!(p.budget_used, 3);
    assert_eq!(p.entries.len(), 1);
    assert_eq!(p.entries[0].id, "system-prompt");
    assert_eq!(p.compression.entries_dropped, 2);
    // A question being answered is sent with L0, or the assembly fails
    // with both counted: "SYS", a blank line, "[user] hi".
    r.conversation = vec![turn(Role::User, "hi", None)];
    assert_eq!(
        run(&r).unwrap_err(),
        Error::MandatoryOverBudget {
            mandatory_tokens: 14,
            budget: 3
        }
    );
}

/// A retriever of `n` trusted texts of `len` characters each.
struct Texts(usize, usize);

impl Host for Texts {
    fn retrieve(&mut self, _: &AgentContext, _: &str, _: u32) -> Result<Vec<Candidate>, HostError> {
        Ok((0..self.0)
            .map(|i| Candidate {
                id: format!("kb-{i}"),
                section: Section::RelevantKnowledge,
                text: (0..self.1 / 8)
                    .map(|k| format!("d{i:02}w{k:03} "))
                    .collect(),
                provenance: Some(Provenance {
                    source_kind: "kb".into(),
                    reference: format!("kb/{i}"),
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

    fn review(
        &mut self,
        _: &AgentContext,
        items: &[&Candidate],
    ) -> Result<Vec<Verdict>, HostError> {
        Ok(vec![Verdict::Allow; items.len()])
    }
}

#[test]
fn the_question_being_answered_and_its_calls_are_never_given_up() {
    // Retrieved text that fills its share, and a share of the
    // conversation smaller than its newest user turn and the call after
    // it: those are sent all the same, and older turns give way.
    let mut r = request(400);
    r.form = Some(PackForm::Messages);
    r.conversation = vec![
        turn(Role::User, &"old question ".repeat(3), None),
        turn(Role::Assistant, &"old answer ".repeat(8), None),
        turn(Role::User, &"new question ".repeat(6), None),
        turn(Role::Assistant, "looking", Some("c1")),
        turn(Role::Tool, &"found it ".repeat(12), Some("c1")),
    ];
    let mut config = BuilderConfig {
        profile: Profile::Rag(RagSettings { retrieve_limit: 10 }),
        ..BuilderConfig::default()
    };
    config.plan.shares = vec![
        crate::SectionShare {
            section: Section::ConversationState,
            share: 0.05,
        },
        crate::SectionShare {
            section: Section::RelevantKnowledge,
            share: 0.95,
        },
    ];
    let builder = Builder::new(config).unwrap();
    let p = builder.assemble(&r, &mut Texts(10, 60)).unwrap();
    let turns: Vec<&str> = p
        .entries
        .iter()
        .filter(|e| e.section == Section::ConversationState)
        .map(|e| e.id.as_str())
        .collect();
    assert_eq!(turns, ["turn-2", "turn-3", "turn-4"]);
    assert!(p.entries.iter().any(|e| e.id.starts_with("kb-")));
    assert!(p.budget_used <= 400);
    // Where they cannot fit with L0, the assembly fails saying so.
    r.budget = Some(150);
    match builder.assemble(&r, &mut Texts(10, 60)) {
        Err(Failure {
            error:
                Error::MandatoryOverBudget {
                    budget: 150,
                    mandatory_tokens,
                },
            snapshot: Some(_),
        }) => assert!(mandatory_tokens > 150),
        other => panic!("{other:?}"),
    }
}

#[test]
fn workflow_status_uses_seed_format_and_none_for_missing_stage() {
    let mut r = request(100);
    r.workflow = Some(WorkflowStatus {
        status: "running".into(),
        stage_id: None,
    });
    let p = run(&r).unwrap();
    assert_eq!(p.entries[1].text, "Status: running, Stage: none");
    assert_eq!(p.stage_id, None);
}

#[test]
fn l2_evicts_oldest_and_keeps_chronological_order() {
    let mut r = request(3 + 2 * (16 + 2));
    r.stage_summaries = (0..4)
        .map(|i| StageSummary {
            stage_id: format!("s{i}"),
            outcome: "ok".into(),
            summary: "x".into(),
        })
        .collect();
    let p = run(&r).unwrap();
    let texts: Vec<_> = p.entries.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(texts, ["SYS", "Stage s2 (ok): x", "Stage s3 (ok): x"]);
    let rs = reasons(&p);
    assert_eq!(rs[1].1, Reason::EvictedOldest);
    assert_eq!(rs[2].1, Reason::EvictedOldest);
}

#[test]
fn l1_is_charged_before_l2() {
    let mut r = request(3 + 9 + 2);
    r.conversation = vec![turn(Role::User, "t0", None)];
    r.stage_summaries = vec![StageSummary {
        stage_id: "s".into(),
        outcome: "ok".into(),
        summary: "".into(),
    }];
    let p = run(&r).unwrap();
    assert_eq!(p.entries.last().unwrap().text, "[user] t0");
    assert_eq!(reasons(&p)[1].1, Reason::EvictedOldest);
}

#[test]
fn overhead_is_charged_per_entry() {
    let mut r = request(3 + 4 + 9 + 4 + 2);
    r.entry_overhead = Some(4);
    r.conversation = vec![turn(Role::User, "t0", None), turn(Role::User, "t1", None)];
    let p = run(&r).unwrap();
    // "SYS\n\n[user] t1": 14 tokens, and an overhead per entry.
    assert_eq!(p.budget_used, 22);
    assert_eq!(p.snapshot.text_tokens, 14);
    // Two messages: "SYS" and "t1".
    assert_eq!(p.snapshot.message_tokens, 3 + 2 + 2 * 4);
    assert_eq!(p.snapshot.stable_prefix_tokens, 7);
    assert_eq!(p.entries.len(), 2);
}

#[test]
fn a_turns_attached_tokens_are_charged_where_it_is_sent_as_a_message() {
    let mut r = request(0);
    r.entry_overhead = Some(2);
    let mut image = turn(Role::User, "look", None);
    image.attached_tokens = Some(50);
    r.conversation = vec![turn(Role::User, "t0", None), image];
    // Sent as messages: "SYS" and "look" with its 50 tokens, each 2 more.
    r.form = Some(PackForm::Messages);
    r.budget = Some(3 + 2 + 4 + 50 + 2);
    let p = run(&r).unwrap();
    let why = reasons(&p);
    assert!(matches!(why[1], (ref id, Reason::OverBudget(_)) if id == "turn-0"));
    assert_eq!(why[2], ("turn-1".into(), Reason::WithinBudget));
    assert_eq!((p.budget_used, p.snapshot.message_tokens), (61, 61));
    assert_eq!(p.entries[1].tokens, 54);
    // Sent as text, no image goes with it: "SYS\n\n[user] t0\n\n[user] look".
    r.form = Some(PackForm::Text);
    r.entry_overhead = None;
    r.budget = Some(27);
    let p = run(&r).unwrap();
    assert_eq!(p.budget_used, 27);
    assert_eq!(
        p.entries.iter().map(|e| e.tokens).collect::<Vec<_>>(),
        [3, 9, 11]
    );
    // Either form: the budget holds for the messages with the image.
    r.form = None;
    r.budget = Some(100);
    let p = run(&r).unwrap();
    assert_eq!(p.snapshot.message_tokens, 3 + 2 + 4 + 50);
    assert!(p.budget_used >= p.snapshot.message_tokens && p.budget_used >= p.snapshot.text_tokens);
}

/// A counter whose joins cost more than the separator alone: a `!`
/// that takes the blank line after it costs three tokens more, as an
/// encoding's punctuation piece can.
struct Merging;

impl crate::tokenizer::TokenCounter for Merging {
    fn count(&self, text: &str) -> u32 {
        (text.chars().count() + 3 * text.matches("!\n\n").count()) as u32
    }
    fn truncate(&self, text: &str, max: u32) -> String {
        text.chars().take(max as usize).collect()
    }
}

#[test]
fn what_the_joins_add_is_counted_and_the_pack_settled_within_the_budget() {
    let mut r = request(25);
    r.system_prompt = "SYS!".into();
    r.conversation = vec![turn(Role::User, "a!", None), turn(Role::User, "b", None)];
    // The fill charges each turn its text and a blank line: 4 + (8 +
    // 2) + (9 + 2) = 25 fits. Rendered, "!" takes two blank lines
    // after it: 31 tokens, over. The oldest turn goes.
    let p = run_with(&r, &Merging, &mut crate::tokenizer::CountCache::new(0)).unwrap();
    assert_eq!(p.text, "SYS!\n\n[user] b");
    assert_eq!(p.snapshot.text_tokens, 14 + 3);
    assert_eq!(p.budget_used, 17);
    assert_eq!(
        reasons(&p)[1].1,
        Reason::OverBudget(Shortfall {
            needed: 31 - 17,
            remaining: 25 - 17
        })
    );
    // The messages are "SYS!" and "b".
    assert_eq!(p.snapshot.message_tokens, 5);
}

#[test]
fn an_enormous_overhead_is_refused_with_the_true_sum() {
    let mut r = request(u32::MAX);
    r.entry_overhead = Some(u32::MAX);
    r.instructions = vec!["four".into()];
    let err = run(&r).unwrap_err();
    // "SYS", a blank line and "four", and two overheads.
    let needed = 3 + 2 + 4 + 2 * u64::from(u32::MAX);
    assert_eq!(
        err,
        Error::MandatoryOverBudget {
            mandatory_tokens: needed,
            budget: u32::MAX
        }
    );
    assert!(err.to_string().contains(&needed.to_string()), "{err}");
}

#[test]
fn pack_id_is_deterministic_and_unknown_without_session() {
    let mut r = request(100);
    assert_eq!(run(&r).unwrap().id, "s1-router-pack");
    r.context.session_id = None;
    let a = run(&r).unwrap();
    assert_eq!(a.id, "unknown-router-pack");
    assert_eq!(a, run(&r).unwrap());
    r.query = "other".into();
    assert_eq!(
        a.snapshot.id,
        run(&r).unwrap().snapshot.id,
        "query is not packed"
    );
    r.system_prompt = "SYZ".into();
    assert_ne!(a.snapshot.id, run(&r).unwrap().snapshot.id);
}

#[test]
fn bad_turns_name_the_field() {
    let mut r = request(100);
    r.conversation = vec![
        turn(Role::Assistant, "a", Some("x")),
        turn(Role::Assistant, "b", Some("x")),
    ];
    let e = run(&r).unwrap_err().to_string();
    assert!(e.contains("request.conversation[1].tool-call-id"), "{e}");
    r.conversation = vec![turn(Role::Tool, "a", None)];
    let e = run(&r).unwrap_err().to_string();
    assert!(e.contains("request.conversation[0].tool-call-id"), "{e}");
    r.conversation = vec![turn(Role::User, "a", Some("x"))];
    assert!(run(&r).is_err());
    r.conversation = vec![];
    r.context.session_id = Some(String::new());
    let e = run(&r).unwrap_err().to_string();
    assert!(e.contains("request.context.session-id"), "{e}");
}

#[test]
fn turns_dropped_alike_uncounted_are_one_run_that_diff_and_turns_expand() {
    let mut r = request(10_000);
    r.conversation = (0..20)
        .map(|i| turn(Role::User, &format!("turn {i}"), None))
        .collect();
    r.keep_last = 5;
    let before = run(&r).unwrap();
    let runs: Vec<&SnapshotEntry> = before
        .snapshot
        .entries
        .iter()
        .filter(|e| e.run.is_some())
        .collect();
    assert_eq!(runs.len(), 1);
    let run_entry = runs[0];
    assert_eq!(run_entry.id, "turn-0");
    assert_eq!(
        run_entry.run,
        Some(Run {
            last_id: "turn-14".into(),
            count: 15
        })
    );
    assert_eq!(run_entry.reason, Reason::KeepLast(5));
    assert_eq!(run_entry.ids().len(), 15);
    assert_eq!(run_entry.ids()[14], "turn-14");
    // One entry per turn as `turns` reads them; metrics count members.
    assert_eq!(before.snapshot.turns().count(), 20);
    assert_eq!(before.snapshot.turns().filter(|e| e.included).count(), 5);
    assert_eq!(before.compression.entries_dropped, 15);
    let keep_last = before
        .metrics
        .dropped_by_reason
        .iter()
        .find(|c| c.reason == "keep-last")
        .unwrap();
    assert_eq!(keep_last.count, 15);

    // Five more turns kept: the diff names each member that entered.
    r.keep_last = 10;
    let after = run(&r).unwrap();
    let d = diff(&before.snapshot, &after.snapshot);
    let entered: Vec<&str> = d
        .changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Entered)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(
        entered,
        ["turn-10", "turn-11", "turn-12", "turn-13", "turn-14"]
    );
    // The turns still dropped, now a run of ten, are dropped for another
    // reason (keep-last 10); the prompt and the five kept did not change.
    let changed = d
        .changes
        .iter()
        .filter(|c| c.kind == ChangeKind::ReasonChanged)
        .count();
    assert_eq!(changed, 10);
    assert_eq!(d.unchanged, 1 + 5);
}

#[test]
fn a_run_with_ids_that_are_not_consecutive_is_not_made() {
    // Turns of one run are consecutive ids; a counted turn breaks a run.
    let mut r = request(40);
    r.conversation = (0..30)
        .map(|i| turn(Role::User, &format!("turn {i}"), None))
        .collect();
    r.keep_last = 30;
    let p = run(&r).unwrap();
    for e in &p.snapshot.entries {
        if let Some(run) = &e.run {
            assert!(run.count >= 2);
            assert_eq!(e.counted, Counted::Uncounted);
            assert!(!e.included);
        }
    }
    let members: u32 = p
        .snapshot
        .entries
        .iter()
        .map(SnapshotEntry::candidates)
        .sum();
    assert_eq!(members as usize, 1 + 30);
}

#[test]
fn a_cache_first_pack_says_which_prefixes_the_next_turn_repeats() {
    let mut r = request(100_000);
    r.form = Some(PackForm::Messages);
    r.system_prompt = "S".repeat(1_100);
    r.current_task = Some("the task".into());
    r.conversation = alternating(5, |i| format!("turn {i}"));
    let first = run(&r).unwrap();
    let kinds = |p: &ContextPack| -> Vec<(CacheBoundary, u32, u32, bool)> {
        p.snapshot
            .cache_prefixes
            .iter()
            .map(|c| (c.boundary, c.messages, c.tokens, c.cacheable))
            .collect()
    };
    // The system prompt; four turns after it; then the task and the
    // newest user turn, which change every turn. One token a character,
    // no overhead: "[user] " is not in a message's content.
    assert_eq!(
        kinds(&first),
        [
            (CacheBoundary::Stable, 1, 1_100, true),
            (CacheBoundary::History, 5, 1_100 + 4 * 6, true),
            (CacheBoundary::Turn, 7, first.snapshot.message_tokens, true),
        ]
    );
    // The next turn repeats the history byte for byte, and hashes it alike.
    r.conversation.push(turn(Role::Assistant, "turn 5", None));
    r.conversation.push(turn(Role::User, "turn 6", None));
    let next = run(&r).unwrap();
    let (was, now) = (
        &first.snapshot.cache_prefixes,
        &next.snapshot.cache_prefixes,
    );
    assert_eq!(next.messages[..5], first.messages[..5]);
    assert_ne!(next.messages[..7], first.messages[..7]);
    assert_eq!(was[0], now[0]);
    assert_eq!((now[1].messages, now[1].tokens), (7, 1_100 + 6 * 6));
    use sha2::Digest;
    let mut chain = sha2::Sha256::new();
    for m in &next.messages[..5] {
        crate::record::cache_bytes(m, &mut |b| chain.update(b));
    }
    assert_eq!(format!("{:x}", chain.finalize()), was[1].hash);
    // One key for the session, another for another session.
    assert_eq!(first.cache_key, next.cache_key);
    assert!(
        first
            .cache_key
            .as_deref()
            .is_some_and(|k| k.starts_with("ctxpack-") && k.len() == 40)
    );
    r.context.session_id = Some("s2".into());
    assert_ne!(run(&r).unwrap().cache_key, first.cache_key);
    // Without a session, the key follows the stable prefix.
    r.context.session_id = None;
    let keyed = run(&r).unwrap();
    assert_eq!(
        keyed.cache_key,
        Some(format!("ctxpack-{}", &was[0].hash[..32]))
    );
    // A short prompt is not worth a breakpoint; a pack sent as text has
    // no message prefixes.
    r.system_prompt = "SYS".into();
    assert!(
        run(&r)
            .unwrap()
            .snapshot
            .cache_prefixes
            .iter()
            .all(|c| !c.cacheable)
    );
    r.form = Some(PackForm::Text);
    assert!(run(&r).unwrap().snapshot.cache_prefixes.is_empty());
}

#[test]
fn context_first_puts_no_history_before_the_context_that_changes() {
    let mut r = request(100_000);
    r.form = Some(PackForm::Messages);
    r.layout = Some(Layout::ContextFirst);
    r.conversation = alternating(3, |i| format!("turn {i}"));
    let boundaries = |r: &AssembleRequest| -> Vec<(CacheBoundary, u32)> {
        let p = run(r).unwrap();
        p.snapshot
            .cache_prefixes
            .iter()
            .map(|c| (c.boundary, c.messages))
            .collect()
    };
    // With nothing between L0 and the conversation, the conversation
    // leads after it, and is the whole pack.
    assert_eq!(
        boundaries(&r),
        [
            (CacheBoundary::Stable, 1),
            (CacheBoundary::History, 4),
            (CacheBoundary::Turn, 4)
        ]
    );
    // A stage's summary comes between: no history leads.
    r.stage_summaries = vec![StageSummary {
        stage_id: "s".into(),
        outcome: "ok".into(),
        summary: "done".into(),
    }];
    assert_eq!(
        boundaries(&r),
        [(CacheBoundary::Stable, 1), (CacheBoundary::Turn, 5)]
    );
    // Cache-first, the conversation comes before it.
    r.layout = None;
    assert_eq!(
        boundaries(&r),
        [
            (CacheBoundary::Stable, 1),
            (CacheBoundary::History, 3),
            (CacheBoundary::Turn, 5)
        ]
    );
}

/// Assembles `r` with no host under `config`, one token a character.
fn run_config(r: &AssembleRequest, config: BuilderConfig) -> ContextPack {
    let c = CharsPerToken::new(1).unwrap();
    let mut cache = crate::tokenizer::CountCache::new(0);
    let builder = Builder::new(config).unwrap();
    let settled = builder.models.settle(r).unwrap();
    let m = Meter::new(&c, &settled.tokenizer, &mut cache);
    let budget = r.budget.unwrap();
    let (builder, m, settled) = (&builder, &m, &settled);
    Assembly::new(
        |channel| async move { builder.run((r, None), &channel, m, settled, budget).await },
    )
    .drive(&mut NoHost, &r.context)
    .map_err(|f| f.error)
    .unwrap()
}

#[test]
fn a_cache_first_conversation_gives_way_in_steps_of_tokens() {
    // Turns of 20 characters (20 tokens, 20 bytes); steps of a sixteenth
    // of 400 tokens, at 4 bytes a token: 100 bytes, five turns.
    let mut config = BuilderConfig::default();
    config.plan.cut_share = 1.0 / 16.0;
    let mut r = request(400);
    r.form = Some(PackForm::Messages);
    r.keep_last = KEEP_EVERY_TURN;
    r.conversation_start = Some(ConversationStart::AnyTurn);
    let first_kept = |p: &ContextPack| {
        p.snapshot
            .turns()
            .position(|e| e.included)
            .unwrap_or(usize::MAX)
    };
    let (mut firsts, mut previous): (Vec<usize>, Option<ContextPack>) = (Vec::new(), None);
    for n in 1..=60 {
        r.conversation = alternating(n, |i| format!("turn {i:>3} of the chat"));
        assert_eq!(r.conversation[n - 1].content.len(), 20);
        let p = run_config(&r, config.clone());
        assert!(p.budget_used <= 400);
        let first = first_kept(&p);
        firsts.push(first);
        // It begins on a step, and while it stays there the next pack
        // repeats the last one's history byte for byte.
        assert!(
            first.is_multiple_of(5) || first == usize::MAX,
            "{n}: {first}"
        );
        if let Some(before) = previous.filter(|b| first_kept(b) == first) {
            let history = before.snapshot.cache_prefixes[1].messages as usize;
            assert_eq!(p.messages[..history], before.messages[..history], "{n}");
        }
        previous = Some(p);
    }
    let mut moves = firsts.clone();
    moves.dedup();
    assert!(firsts.windows(2).all(|w| w[0] <= w[1]), "{firsts:?}");
    // It gave way (the budget holds ~19 turns), a step at a time.
    assert!((30..60).contains(&firsts[59]), "{firsts:?}");
    assert!(moves.len() > 3 && moves.len() <= 60 / 5 + 1, "{moves:?}");
    // Context-first, as trimming does, the window moves turn by turn.
    r.layout = Some(Layout::ContextFirst);
    let turn_by_turn: Vec<usize> = (40..=45)
        .map(|n| {
            r.conversation = alternating(n, |i| format!("turn {i:>3} of the chat"));
            first_kept(&run_config(&r, config.clone()))
        })
        .collect();
    assert!(
        turn_by_turn.windows(2).all(|w| w[1] == w[0] + 1),
        "{turn_by_turn:?}"
    );
    // A share of 0 gives way turn by turn too.
    config.plan.cut_share = 0.0;
    r.layout = None;
    let kept = first_kept(&run_config(&r, config.clone()));
    assert_eq!(kept, *turn_by_turn.last().unwrap());
}

#[test]
fn a_step_begins_on_a_turn_the_conversation_may_begin_with() {
    // Steps of five 20-byte turns, turns alternating from the user's: a
    // step reached at an assistant's turn (5, 15, …) begins at the user's
    // turn after it. Begun on the assistant's turn, the window was
    // charged for a turn it then left out, and gave way a step early.
    let mut config = BuilderConfig::default();
    config.plan.cut_share = 1.0 / 16.0;
    let mut r = request(400);
    r.form = Some(PackForm::Messages);
    r.keep_last = KEEP_EVERY_TURN;
    let first = |p: &ContextPack| p.snapshot.turns().position(|e| e.included);
    let step_starts: Vec<usize> = (0..80).map(|k| k * 5 + (k % 2)).collect();
    let mut began_after_an_assistant = 0;
    for n in (2..=60).step_by(2) {
        r.conversation = alternating(n + 1, |i| format!("turn {i:>3} of the chat"));
        config.plan.cut_share = 1.0 / 16.0;
        let stepped = run_config(&r, config.clone());
        config.plan.cut_share = 0.0;
        let by_turn = first(&run_config(&r, config.clone())).unwrap();
        let kept = first(&stepped).unwrap();
        assert_eq!(r.conversation[kept].role, Role::User, "{n}");
        // The oldest step from which the rest fits, as many turns as fit
        // from there.
        let oldest = step_starts.iter().copied().find(|&s| s >= by_turn);
        assert_eq!(Some(kept), oldest, "{n}: turn by turn from {by_turn}");
        let kept_turns = stepped.snapshot.turns().filter(|e| e.included).count();
        assert_eq!(kept_turns, n + 1 - kept, "{n}");
        began_after_an_assistant += usize::from(kept % 10 == 6);
    }
    assert!(began_after_an_assistant > 0);
}

#[test]
fn a_step_larger_than_the_conversations_room_gives_way_in_smaller_ones() {
    // The room holds 19 turns of 20 characters: turns 21 to 39. No step
    // of half the budget (800 bytes, 40 turns) nor of its half (20 turns)
    // begins among them; one of its quarter (10 turns) does: the
    // conversation begins on turn 30.
    let mut config = BuilderConfig::default();
    config.plan.cut_share = 0.5;
    let mut r = request(400);
    r.form = Some(PackForm::Messages);
    r.keep_last = KEEP_EVERY_TURN;
    r.conversation_start = Some(ConversationStart::AnyTurn);
    r.conversation = alternating(40, |i| format!("turn {i:>3} of the chat"));
    let first = |p: &ContextPack| p.snapshot.turns().position(|e| e.included);
    assert_eq!(first(&run_config(&r, config.clone())), Some(30));
    // Steps of the whole budget: none of the three sizes fits, so the
    // conversation keeps the newest turns that fit, as it would turn by
    // turn, rather than one.
    config.plan.cut_share = 1.0;
    let stepped = run_config(&r, config.clone());
    config.plan.cut_share = 0.0;
    let by_turn = run_config(&r, config);
    assert_eq!(first(&stepped), Some(21));
    assert_eq!(stepped.messages, by_turn.messages);
}

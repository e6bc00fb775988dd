//! Compaction over a conversation's turns: the summary and the cleared
//! tool results stay byte for byte between compactions, no call loses
//! its result, and a summariser that fails leaves things as they were.

use super::*;
use crate::compact::{PLACEHOLDER, SUMMARY_ID};

/// A summariser that says how many turns it was given, and how many
/// times it was asked; or fails, or answers too long.
#[derive(Default)]
struct Summariser {
    asked: usize,
    texts: Vec<String>,
    answer: Answering,
}

#[derive(Default, Clone, Copy, PartialEq)]
enum Answering {
    #[default]
    Short,
    Fails,
    TooLong,
}

impl Host for Summariser {
    fn summarize(&mut self, r: &[SummaryRequest], _: Tokenizer) -> Result<Vec<String>, HostError> {
        self.asked += 1;
        self.texts.extend(r.iter().map(|r| r.text.clone()));
        match self.answer {
            Answering::Fails => Err(HostError {
                capability: "summarizer.summarize".into(),
                message: "down".into(),
            }),
            Answering::TooLong => Ok(vec!["x".repeat(10_000)]),
            Answering::Short => Ok(r
                .iter()
                .map(|r| {
                    format!(
                        "{} earlier turns, {} bytes",
                        r.text.matches("\n\n").count() + 1,
                        r.text.len()
                    )
                })
                .collect()),
        }
    }
}

/// Compacting at half of a 1,000-token budget (4 characters a token):
/// 2,000 bytes trigger it, 1,000 are kept.
fn config() -> BuilderConfig {
    let mut config = BuilderConfig::default();
    config.plan.compact_share = 0.5;
    config.plan.compact_tokens = 40;
    config.plan.clear_at_least = 50;
    config
}

/// Turn `i` of a chat whose every fifth exchange calls a tool that
/// answers 400 bytes.
fn chat(n: usize) -> Vec<ConversationTurn> {
    (0..n)
        .map(|i| match i % 10 {
            7 => turn(Role::Assistant, "let me look", Some(&format!("call-{i}"))),
            8 => turn(
                Role::Tool,
                &"r".repeat(400),
                Some(&format!("call-{}", i - 1)),
            ),
            k if k % 2 == 0 => turn(Role::User, &format!("question {i:>4} asked here"), None),
            _ => turn(Role::Assistant, &format!("answer {i:>4} given back"), None),
        })
        .collect()
}

/// Whether `content`, a summary's message, sends `summary`: after the
/// summary's head, and fenced, every line quoted, where it covers a
/// tool's result.
fn summarises(content: &str, summary: &str) -> bool {
    let head = crate::conversation::SUMMARY_HEAD;
    let quoted = crate::fence::quote(summary, true);
    let fenced = content.strip_prefix(head).is_some_and(|rest| {
        rest.starts_with("<untrusted-")
            && rest.contains(&format!("\n{quoted}\n</untrusted-"))
            && rest.ends_with('>')
    });
    fenced || content == format!("{head}{summary}")
}

fn assemble(r: &AssembleRequest, config: &BuilderConfig, host: &mut Summariser) -> ContextPack {
    let c = CharsPerToken::new(4).unwrap();
    let mut cache = crate::tokenizer::CountCache::new(0);
    let builder = Builder::new(config.clone()).unwrap();
    crate::validate::request(r).unwrap();
    let settled = builder.models.settle(r).unwrap();
    let m = Meter::new(&c, &settled.tokenizer, &mut cache);
    let budget = r.budget.unwrap();
    let (builder, m, settled) = (&builder, &m, &settled);
    Assembly::new(
        |channel| async move { builder.run((r, None), &channel, m, settled, budget).await },
    )
    .drive(host, &r.context)
    .map_err(|f| f.error)
    .unwrap()
}

fn chat_request() -> AssembleRequest {
    let mut r = request(1000);
    r.tokenizer = Some(Tokenizer::CharsPerToken(4));
    r.form = Some(PackForm::Messages);
    r.keep_last = KEEP_EVERY_TURN;
    r
}

#[test]
fn a_compacted_conversation_keeps_its_prefix_until_the_next_compaction() {
    let config = config();
    let mut host = Summariser::default();
    let mut r = chat_request();
    let mut state: Option<Compaction> = None;
    let mut previous: Option<ContextPack> = None;
    let mut compactions = 0;
    for n in 1..=200 {
        r.conversation = chat(n);
        r.compaction = state.clone();
        let asked = host.asked;
        let p = assemble(&r, &config, &mut host);
        assert!(p.budget_used <= 1000, "{n}");
        let now = p.compaction.clone().unwrap();
        let was = state.clone().unwrap_or_default();
        assert!(now.turns >= was.turns && now.cleared >= was.cleared, "{n}");
        if now.turns != was.turns {
            compactions += 1;
            assert_eq!(host.asked, asked + 1, "{n}: asked once");
            // The summary stands for the turns before it, the one before
            // it given too.
            let text = host.texts.last().unwrap();
            assert_eq!(
                now.summary,
                format!(
                    "{} earlier turns, {} bytes",
                    text.matches("\n\n").count() + 1,
                    text.len()
                )
            );
            if was.turns > 0 {
                assert!(
                    text.starts_with(&format!("[summary] {}", was.summary)),
                    "{n}"
                );
            }
        } else {
            assert_eq!(host.asked, asked, "{n}: not asked");
        }
        if now.turns > 0 {
            // The summary is the message after the system prompt; the
            // turns before it are summarised in it.
            let at = now.turns as usize - 1;
            // It summarises what users and tools wrote: it is the
            // user's, fenced when a tool's result is among what it covers.
            assert_eq!(p.messages[1].role, Role::User);
            assert!(summarises(&p.messages[1].content, &now.summary), "{n}");
            let turns: Vec<&SnapshotEntry> = p.snapshot.turns().collect();
            assert!(
                turns[..at]
                    .iter()
                    .all(|e| e.reason == Reason::Summarized(SUMMARY_ID.into())),
                "{n}"
            );
            assert_eq!(turns[at].id, SUMMARY_ID);
            assert!(turns[at].included, "{n}");
            // What is left of the conversation is about half the share
            // (and the summary's fence, some 80 bytes).
            let left: usize = p.messages[1..].iter().map(|m| m.content.len()).sum();
            assert!(left <= 2100, "{n}: {left}");
        }
        // No tool result is sent without its call, and the newest three
        // are never cleared.
        let results: Vec<&Message> = p.messages.iter().filter(|m| m.role == Role::Tool).collect();
        for m in &results {
            let call = m.tool_call_id.as_deref();
            assert!(
                p.messages
                    .iter()
                    .any(|c| c.role == Role::Assistant && c.tool_call_id.as_deref() == call),
                "{n}"
            );
        }
        let whole = results.iter().rev().take(3);
        assert!(whole.clone().all(|m| m.content != PLACEHOLDER), "{n}");
        // Until the next compaction, the pack repeats the last one's
        // messages but its newest.
        if let Some(before) = previous.filter(|_| now == was) {
            let kept = before.messages.len() - 1;
            assert_eq!(p.messages[..kept], before.messages[..kept], "{n}");
        }
        state = Some(now);
        previous = Some(p);
    }
    let state = state.unwrap();
    assert!(compactions >= 4, "{compactions}");
    assert!(state.turns > 150, "{state:?}");
    assert!(state.cleared >= state.turns);
}

#[test]
fn tool_results_are_cleared_before_turns_are_summarised() {
    // 45 turns send 2,625 bytes, past 0.6 of the budget (2,400); clearing
    // the oldest of four results frees 379 (94 tokens) and brings it back
    // under: the summariser is not asked.
    let mut config = config();
    config.plan.compact_share = 0.6;
    let mut host = Summariser::default();
    let mut r = chat_request();
    r.conversation = chat(45);
    let p = assemble(&r, &config, &mut host);
    let state = p.compaction.unwrap();
    assert_eq!(host.asked, 0);
    assert_eq!(state.turns, 0);
    // Four results; the newest three are kept, the oldest cleared.
    assert_eq!(state.cleared, 9);
    let results: Vec<&str> = p
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(results.len(), 4);
    assert_eq!(results[0], PLACEHOLDER);
    assert!(results[1..].iter().all(|c| c.len() == 400));
    // Clearing less than `clear-at-least` clears nothing: the turns are
    // summarised instead.
    config.plan.clear_at_least = 95;
    let p = assemble(&r, &config, &mut host);
    let state = p.compaction.unwrap();
    assert_eq!(host.asked, 1);
    assert!(state.turns > 9, "{state:?}");
    assert!(p.messages.iter().all(|m| m.content != PLACEHOLDER));
}

#[test]
fn a_summariser_that_fails_leaves_the_summary_as_it_was() {
    let config = config();
    let mut r = chat_request();
    r.conversation = chat(120);
    let given = Compaction {
        summary: "what came before".into(),
        turns: 20,
        cleared: 20,
        hash: crate::compact::covered_hash(&r.conversation[..20]),
    };
    r.compaction = Some(given.clone());
    for answer in [Answering::Fails, Answering::TooLong] {
        let mut host = Summariser {
            answer,
            ..Summariser::default()
        };
        let p = assemble(&r, &config, &mut host);
        assert_eq!(host.asked, 1);
        let state = p.compaction.unwrap();
        assert_eq!(
            (state.summary.as_str(), state.turns),
            ("what came before", 20)
        );
        let call = &p.snapshot.source_calls[0];
        assert_eq!(call.capability, "summarizer.summarize");
        assert!(matches!(call.outcome, SourceOutcome::Failed(_)), "{call:?}");
        assert!(p.budget_used <= 1000);
        assert!(summarises(&p.messages[1].content, "what came before"));
    }
    // A plan that does not compact still sends the summary it is given.
    r.conversation = chat(40);
    let mut host = Summariser::default();
    let p = assemble(&r, &BuilderConfig::default(), &mut host);
    assert_eq!(host.asked, 0);
    assert_eq!(p.compaction, Some(given));
    assert!(summarises(&p.messages[1].content, "what came before"));
}

#[test]
fn a_compaction_that_does_not_fit_the_conversation_is_refused() {
    let mut r = chat_request();
    r.conversation = chat(30);
    let refused = |c: Compaction, r: &mut AssembleRequest| {
        r.compaction = Some(c);
        match crate::validate::request(r) {
            Err(Error::InvalidField { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    };
    let turns = r.conversation.clone();
    let c = |summary: &str, at: u32, cleared: u32| Compaction {
        summary: summary.into(),
        turns: at,
        cleared,
        hash: crate::compact::covered_hash(&turns[..(at.max(cleared) as usize).min(turns.len())]),
    };
    assert_eq!(refused(c("s", 31, 0), &mut r), "request.compaction.turns");
    assert_eq!(refused(c("s", 0, 31), &mut r), "request.compaction.cleared");
    assert_eq!(refused(c(" ", 4, 0), &mut r), "request.compaction.summary");
    // Turn 8 is call 7's result.
    assert_eq!(refused(c("s", 8, 0), &mut r), "request.compaction.turns");
    r.compaction = Some(c("s", 9, 0));
    assert!(crate::validate::request(&r).is_ok());
    // Another conversation's, or this one with its first turns left out:
    // its hash says so.
    let mut other = c("s", 9, 0);
    other.hash = crate::compact::covered_hash(&chat(40)[1..10]);
    assert_eq!(refused(other, &mut r), "request.compaction.hash");
    let given = c("s", 9, 0);
    r.conversation.remove(0);
    assert_eq!(refused(given, &mut r), "request.compaction.hash");
}

#[test]
fn the_question_being_answered_is_never_summarised() {
    // The newest user turn, then a call whose result alone is past the
    // share: the summary stops before the question, which is kept with
    // the call and its result.
    let mut config = config();
    config.plan.clear_at_least = 0;
    let mut host = Summariser::default();
    let mut r = chat_request();
    let mut turns = chat(12);
    turns.push(turn(Role::User, "and the fares for Sunday?", None));
    turns.push(turn(Role::Assistant, "looking", Some("call-sun")));
    turns.push(turn(Role::Tool, &"s".repeat(2_500), Some("call-sun")));
    r.conversation = turns;
    let p = assemble(&r, &config, &mut host);
    let state = p.compaction.unwrap();
    assert_eq!(host.asked, 1);
    assert_eq!(state.turns, 12, "{state:?}");
    let roles: Vec<Role> = p.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            // The summary: of what a user wrote.
            Role::User,
            Role::User,
            Role::Assistant,
            Role::Tool
        ]
    );
    assert_eq!(p.messages[2].content, "and the fares for Sunday?");
}

#[test]
fn an_agent_loop_passed_its_compaction_back_keeps_its_question_and_calls() {
    // One question, then an agent's calls with long results, the pack's
    // compaction passed back every step. A compaction that ended just
    // before the question must not take it (nor its calls) the next time;
    // the calls' old results are cleared, so they stay within the budget.
    let mut config = config();
    config.plan.clear_at_least = 10;
    let mut host = Summariser::default();
    let mut r = chat_request();
    let mut turns = chat(20);
    let question = turns.len();
    turns.push(turn(Role::User, "book the cheapest Sunday fare", None));
    let mut state: Option<Compaction> = None;
    let mut compacted_at_question = 0;
    for step in 0..40 {
        let id = format!("call-agent-{step}");
        turns.push(turn(Role::Assistant, "searching", Some(&id)));
        turns.push(turn(Role::Tool, &"f".repeat(300), Some(&id)));
        r.conversation = turns.clone();
        r.compaction = state.clone();
        let p = assemble(&r, &config, &mut host);
        let now = p.compaction.clone().unwrap();
        assert!(now.turns as usize <= question, "{step}: {now:?}");
        compacted_at_question += usize::from(now.turns as usize == question);
        // The question is sent, and the newest call with its result.
        assert!(
            p.messages
                .iter()
                .any(|m| m.content == "book the cheapest Sunday fare"),
            "{step}: {:?}",
            p.messages.iter().map(|m| m.role).collect::<Vec<_>>()
        );
        let last = p.messages.last().unwrap();
        assert_eq!(last.tool_call_id.as_deref(), Some(id.as_str()), "{step}");
        assert!(
            !p.snapshot
                .entries
                .iter()
                .any(|e| e.reason == Reason::BeforeUserTurn)
        );
        state = Some(now);
    }
    // The case the loop exists for was met.
    assert!(compacted_at_question > 0);
}

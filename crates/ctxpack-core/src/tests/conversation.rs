//! The conversation's window: kept newest first within the budget, in
//! units that keep a tool call with its result, starting on a user turn
//! unless any turn is asked.

use super::*;

#[test]
fn keep_last_window_then_budget_newest_first() {
    let mut r = request(3 + 2 * (9 + 2));
    // each "[user] tN" is 9 chars, and the blank line before it 2
    r.conversation = (0..5)
        .map(|i| turn(Role::User, &format!("t{i}"), None))
        .collect();
    r.keep_last = 3;
    let p = run(&r).unwrap();
    let rs = reasons(&p);
    assert_eq!(rs[1], ("turn-0".into(), Reason::KeepLast(3)));
    assert_eq!(rs[2], ("turn-1".into(), Reason::KeepLast(3)));
    // Nothing is left for turn-2, not even for the blank line before
    // it, so it is not counted: it needs at least that line.
    assert_eq!(
        rs[3],
        (
            "turn-2".into(),
            Reason::OverBudget(Shortfall {
                needed: 2,
                remaining: 0
            })
        )
    );
    // Turns outside the window are never counted.
    assert_eq!(
        counted(&p)[1..],
        [
            Counted::Uncounted,
            Counted::Uncounted,
            Counted::Uncounted,
            Counted::Exact,
            Counted::Exact
        ]
    );
    assert_eq!(rs[4].1, Reason::WithinBudget);
    assert_eq!(rs[5].1, Reason::WithinBudget);
    assert_eq!(
        p.compression.applied_strategies,
        vec![
            Strategy::L0Immutable,
            Strategy::KeepLast,
            Strategy::ConversationBudget
        ]
    );
}

#[test]
fn older_units_after_a_cut_need_at_least_what_the_first_uncounted_needs() {
    let mut r = request(3 + 9 + 2);
    r.conversation = vec![
        turn(Role::User, "t0", None),
        turn(Role::User, "a much longer turn", None),
        turn(Role::User, "t2", None),
    ];
    let p = run(&r).unwrap();
    let rs = reasons(&p);
    // turn-0 would fit alone, but keeping it would need turn-1 too.
    // With nothing left, neither is counted: what the newest needs is a
    // lower bound, and the older one shares it (it needs more still), so
    // the two are one run.
    let shortfall = Reason::OverBudget(Shortfall {
        needed: 2,
        remaining: 0,
    });
    assert_eq!(rs[2].1, shortfall);
    assert_eq!(rs[1].1, shortfall);
    assert_eq!(p.snapshot.entries[1].candidates(), 2);
    assert_eq!(counted(&p)[1..3], [Counted::Uncounted, Counted::Uncounted]);
    // With room left, the first that does not fit is counted.
    let mut r = request(3 + 9 + 2 + 5);
    r.conversation = vec![
        turn(Role::User, "t0", None),
        turn(Role::User, "a much longer turn", None),
        turn(Role::User, "t2", None),
    ];
    let p = run(&r).unwrap();
    assert_eq!(
        reasons(&p)[2].1,
        Reason::OverBudget(Shortfall {
            needed: 25 + 2,
            remaining: 5
        })
    );
    assert_eq!(counted(&p)[2], Counted::Exact);
    assert_eq!(rs[3].1, Reason::WithinBudget);
}

#[test]
fn the_kept_conversation_begins_on_a_user_turn_unless_any_turn_is_asked() {
    let mut r = request(1000);
    r.conversation = vec![
        turn(Role::User, "u0", None),
        turn(Role::Assistant, "a1", None),
        turn(Role::Assistant, "call", Some("c1")),
        turn(Role::User, "inside the call's unit", None),
        turn(Role::Tool, "result", Some("c1")),
        turn(Role::User, "u5", None),
        turn(Role::Assistant, "a6", None),
    ];
    r.keep_last = 6; // the window begins on a1
    let p = run(&r).unwrap();
    let rs = reasons(&p);
    // a1 and the call's unit come before the first user turn that begins
    // a unit: left out, though they fit; the unit is not split.
    assert_eq!(rs[1].1, Reason::KeepLast(6));
    for (i, (id, reason)) in rs[2..=5].iter().enumerate() {
        assert_eq!(
            (id.as_str(), reason),
            (format!("turn-{}", i + 1).as_str(), &Reason::BeforeUserTurn)
        );
    }
    assert_eq!(rs[6].1, Reason::WithinBudget);
    let turns: Vec<&str> = p
        .messages
        .iter()
        .skip(1)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(turns, ["u5", "a6"]);
    // What is left out is not charged.
    let flat = p.text.matches("[user]").count() + p.text.matches("[assistant]").count();
    assert_eq!(flat, 2);

    r.conversation_start = Some(ConversationStart::AnyTurn);
    let p = run(&r).unwrap();
    assert!(
        reasons(&p)[2..]
            .iter()
            .all(|(_, r)| *r == Reason::WithinBudget)
    );

    // No user turn kept at all: the conversation is left out whole.
    r.conversation_start = None;
    r.keep_last = 1;
    let p = run(&r).unwrap();
    let rs = reasons(&p);
    assert_eq!(rs[rs.len() - 1], ("turn-6".into(), Reason::BeforeUserTurn));
    assert!(p.messages.iter().all(|m| m.role == Role::System));

    // A system turn is an instruction, not a reply: it stays.
    r.conversation = vec![
        turn(Role::Assistant, "a0", None),
        turn(Role::System, "s1", None),
        turn(Role::Assistant, "a2", None),
        turn(Role::User, "u3", None),
    ];
    r.keep_last = 10;
    let p = run(&r).unwrap();
    let kept: Vec<&str> = p
        .messages
        .iter()
        .skip(1)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(kept, ["s1", "u3"]);
}

#[test]
fn tool_call_and_result_stay_together() {
    let mut r = request(1000);
    r.conversation = vec![
        turn(Role::User, "u", None),
        turn(Role::Assistant, "call", Some("c1")),
        turn(Role::Tool, "result", Some("c1")),
        turn(Role::User, "u2", None),
    ];
    r.keep_last = 2; // the window splits the call from its result
    let p = run(&r).unwrap();
    let rs = reasons(&p);
    assert_eq!(rs[2].1, Reason::KeepLast(2));
    assert_eq!(rs[3].1, Reason::ToolPair("turn-1".into()));
    assert_eq!(rs[4].1, Reason::WithinBudget);
    assert!(p.entries.iter().all(|e| e.role != Role::Tool));
}

#[test]
fn a_unit_that_does_not_fit_goes_whole() {
    let mut r = request(3 + 20);
    r.conversation = vec![
        turn(Role::Assistant, "call", Some("c1")),
        turn(Role::Tool, "a long tool result", Some("c1")),
    ];
    let p = run(&r).unwrap();
    assert_eq!(p.entries.len(), 1);
    let rs = reasons(&p);
    assert!(matches!(rs[1].1, Reason::OverBudget(_)));
    assert_eq!(rs[1].1, rs[2].1);
}

#[test]
fn orphan_tool_results_are_never_kept() {
    let mut r = request(1000);
    r.conversation = vec![
        turn(Role::Tool, "stale", Some("gone")),
        turn(Role::User, "u", None),
    ];
    let p = run(&r).unwrap();
    assert_eq!(reasons(&p)[1].1, Reason::OrphanToolResult);
    assert_eq!(p.entries.last().unwrap().text, "[user] u");
}

#[test]
fn interleaved_calls_merge_into_one_unit() {
    let turns = vec![
        turn(Role::Assistant, "a", Some("x")),
        turn(Role::Assistant, "b", Some("y")),
        turn(Role::Tool, "rx", Some("x")),
        turn(Role::Tool, "ry", Some("y")),
        turn(Role::User, "u", None),
    ];
    let units = units(&turns);
    assert_eq!(
        units,
        vec![
            Unit {
                start: 0,
                members: Group::Many(vec![0, 1, 2, 3])
            },
            Unit {
                start: 4,
                members: Group::One(4)
            }
        ]
    );
}

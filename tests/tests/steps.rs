//! The step protocol, driven by hand over the whole corpus, natively and
//! through the component's `assembly` resource under wasmtime: the same
//! outcome as the synchronous `assemble` over imports that answer the
//! same, whatever order the host answers a round in; failures injected at
//! every step give identical outcomes on both engines; an answer out of
//! turn is a typed error that changes nothing.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use ctxpack_conformance::invariants::{check as check_invariants, check_failure};
use ctxpack_conformance::{render, scenarios};
use ctxpack_core::{
    Answer, Builder, Call, ContextPack, Error, Failure, HostError, SnapshotStatus, SourceOutcome,
    Tokenizers,
};
use ctxpack_host::{Runtime, Step, Steps};
use ctxpack_scenario::{InMemoryHost, Outcome, Reply, Scenario, outcome, run_native};
use std::sync::OnceLock;

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::load_bundled().unwrap())
}

/// How a hand driver answers.
#[derive(Clone, Copy, Default)]
struct Driving {
    /// Answer each round's source calls last first.
    reverse: bool,
    /// Before each answer, try answers out of turn, and ask twice.
    probe: bool,
    /// Fail every answer of this step (counted from 0).
    fail_at: Option<usize>,
}

fn injected(capability: &str) -> HostError {
    HostError::new(capability, "injected failure")
}

/// Asserts `provided` is a step mismatch.
fn mismatch(provided: Result<(), Error>, what: &str) {
    match provided {
        Err(Error::StepMismatch(_)) => {}
        other => panic!("{what}: expected a step mismatch, got {other:?}"),
    }
}

/// Drives `steps` to its end, answering from `host` as `how` says; returns
/// the outcome and the steps it took.
fn drive_by_hand(
    steps: &mut dyn Steps,
    host: &mut InMemoryHost,
    scenario: &Scenario,
    how: Driving,
) -> (Result<ContextPack, Failure>, Vec<&'static str>) {
    let context = &scenario.request.context;
    let mut taken = Vec::new();
    loop {
        let step = steps.next().unwrap();
        if how.probe && !matches!(step, Step::Done(_)) {
            // Asking again gives the same step (compared as printed: a
            // score may be NaN).
            let again = steps.next().unwrap();
            assert_eq!(format!("{again:?}"), format!("{step:?}"), "a second `next`");
        }
        let failing = how.fail_at == Some(taken.len());
        let calls = match step {
            Step::Done(outcome) => {
                if how.probe {
                    // The outcome is given once.
                    match steps.next().unwrap() {
                        Step::Done(Err(f)) => mismatch(Err(f.error), "`next` after done"),
                        other => panic!("`next` after done: {other:?}"),
                    }
                    mismatch(
                        steps.provide(0, Answer::Verdicts(Ok(vec![]))).unwrap(),
                        "review after done",
                    );
                }
                return (outcome, taken);
            }
            Step::Calls(calls) => calls,
        };
        taken.push(match calls.first() {
            Some(Call::Review { .. }) => "review",
            Some(Call::Summarize { .. }) => "summaries",
            Some(Call::CountTokens { .. }) => "counts",
            _ => "sources",
        });
        if how.probe {
            // An answer of another kind than its call's, and one to a
            // call past the round, are refused.
            let other = match calls[0] {
                Call::Review { .. } => Answer::Summaries(Ok(vec![])),
                _ => Answer::Verdicts(Ok(vec![])),
            };
            mismatch(steps.provide(0, other).unwrap(), "another call's answer");
            if matches!(calls[0], Call::Review { .. } | Call::Summarize { .. }) {
                mismatch(
                    steps.provide(0, Answer::Candidates(Ok(vec![]))).unwrap(),
                    "a source's answer",
                );
            }
            mismatch(
                steps
                    .provide(calls.len(), calls[0].failed(injected("x")))
                    .unwrap(),
                "a call past the round",
            );
        }
        let mut order: Vec<usize> = (0..calls.len()).collect();
        if how.reverse {
            order.reverse();
        }
        for (n, &k) in order.iter().enumerate() {
            let call = &calls[k];
            let answer = if failing {
                call.failed(injected(call.capability()))
            } else {
                call.call(host, context)
            };
            steps.provide(k, answer).unwrap().unwrap();
            if how.probe && n + 1 < order.len() {
                // The round is not over: the same step, and the call
                // answered cannot be answered again.
                assert_eq!(
                    format!("{:?}", steps.next().unwrap()),
                    format!("{:?}", Step::Calls(calls.clone())),
                    "a round half answered"
                );
                mismatch(
                    steps.provide(k, call.failed(injected("x"))).unwrap(),
                    "a call answered twice",
                );
            }
        }
    }
}

/// A scenario driven by hand on both engines; `None` where the builder
/// cannot be built (an invalid configuration has no assembly to drive).
fn both(s: &Scenario, how: Driving) -> Option<[(Outcome, Vec<&'static str>); 2]> {
    let builder = Builder::new(s.config.clone()).ok()?;
    let mut host = InMemoryHost::new(s.host.clone());
    let mut native = builder.start(&s.request);
    let (reply, native_steps) = drive_by_hand(&mut native, &mut host, s, how);
    let native = outcome(Reply::from(reply), &host);

    // The instance's own stores answer imports, which the step protocol
    // never calls: they must stay untouched.
    let mut instance = runtime()
        .instantiate(InMemoryHost::default(), &s.config)
        .unwrap()
        .unwrap();
    let mut host = InMemoryHost::new(s.host.clone());
    let mut assembly = instance.start(&s.request).unwrap();
    let (reply, wasm_steps) = drive_by_hand(&mut assembly, &mut host, s, how);
    drop(assembly);
    let lent: &InMemoryHost = instance.host().unwrap();
    assert_eq!(lent.total_calls(), 0, "an import was called");
    let wasm = outcome(Reply::from(reply), &host);
    Some([(native, native_steps), (wasm, wasm_steps)])
}

/// What the synchronous `assemble` gives for `s`'s request, over imports
/// that answer from the same stores.
fn assembled(s: &Scenario) -> Outcome {
    if s.router.is_none() {
        return run_native(s);
    }
    // `handle` wraps the assembly: compare with the assembly itself.
    let builder = Builder::new(s.config.clone()).unwrap();
    let mut host = InMemoryHost::new(s.host.clone());
    let reply = builder.assemble(&s.request, &mut host);
    outcome(Reply::from(reply), &host)
}

#[test]
fn every_scenario_driven_by_hand_equals_the_synchronous_assembly() {
    let mut driven = 0;
    for (name, s) in scenarios() {
        for how in [
            Driving::default(),
            Driving {
                reverse: true,
                probe: true,
                fail_at: None,
            },
        ] {
            let Some([(native, steps), (wasm, wasm_steps)]) = both(&s, how) else {
                continue;
            };
            let want = render(&assembled(&s));
            assert_eq!(render(&native), want, "{name}: native, by hand");
            assert_eq!(render(&wasm), want, "{name}: wasmtime, by hand");
            assert_eq!(steps, wasm_steps, "{name}");
            driven += 1;
        }
    }
    assert!(driven >= 2 * 30, "only {driven} drives");
}

#[test]
fn a_failure_at_every_step_gives_the_same_outcome_on_both_engines() {
    let tokenizers = Tokenizers::new();
    let mut seen = std::collections::BTreeSet::new();
    for (name, s) in scenarios() {
        let Some([(_, steps), _]) = both(&s, Driving::default()) else {
            continue;
        };
        for (k, &step) in steps.iter().enumerate() {
            let how = Driving {
                fail_at: Some(k),
                reverse: k % 2 == 1,
                probe: false,
            };
            let [(native, _), (wasm, _)] = both(&s, how).unwrap();
            assert_eq!(render(&native), render(&wasm), "{name}: failing step {k}");
            let what = format!("{name}, {step} failing at step {k}");
            match (&native.reply, step) {
                (Reply::Pack(pack), "sources") => {
                    check_invariants(&what, &s.request, &s.config, pack, &tokenizers);
                    assert!(
                        pack.snapshot.status.contains(&SnapshotStatus::Degraded),
                        "{what}: not degraded"
                    );
                }
                (Reply::Pack(pack), "summaries") => {
                    check_invariants(&what, &s.request, &s.config, pack, &tokenizers);
                    let call = pack
                        .snapshot
                        .source_calls
                        .iter()
                        .find(|c| c.capability == "summarizer.summarize")
                        .unwrap();
                    assert!(
                        matches!(call.outcome, SourceOutcome::Failed(_)),
                        "{what}: {call:?}"
                    );
                }
                (Reply::Failed(failure), "review") => {
                    check_failure(&what, &s.request, &s.config, failure);
                    assert!(
                        matches!(&failure.error, Error::HostFailed { capability, .. } if capability == "policy.review"),
                        "{what}: {:?}",
                        failure.error
                    );
                    let snapshot = failure.snapshot.as_ref().unwrap();
                    assert!(snapshot.status.contains(&SnapshotStatus::Failed));
                }
                // Nothing is packed on a guessed count: the assembly
                // fails, naming the counter, with no snapshot to show.
                (Reply::Failed(failure), "counts") => {
                    assert!(
                        matches!(&failure.error, Error::HostFailed { capability, .. } if capability == "counter.count-tokens"),
                        "{what}: {:?}",
                        failure.error
                    );
                    assert!(failure.snapshot.is_none(), "{what}");
                }
                (reply, _) => panic!("{what}: {reply:?}"),
            }
            seen.insert(step);
        }
    }
    // The corpus reaches every kind of step.
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["counts", "review", "sources", "summaries"]
    );
}

/// Generated requests and host answers (every section, profile,
/// tokenizer and answer shape, failing sources included) driven by hand,
/// a round answered last first: the synchronous outcome, on both engines.
#[test]
fn generated_scenarios_driven_by_hand_equal_the_synchronous_assembly() {
    use ctxpack_conformance::generate::{Source, scenario};
    let mut driven = 0;
    for seed in 0..80 {
        let s = scenario(&mut Source::seeded(seed));
        let how = Driving {
            reverse: seed % 2 == 0,
            probe: seed % 5 == 0,
            fail_at: None,
        };
        let Some([(native, _), (wasm, _)]) = both(&s, how) else {
            continue;
        };
        let want = render(&assembled(&s));
        assert_eq!(render(&native), want, "seed {seed}: native, by hand");
        assert_eq!(render(&wasm), want, "seed {seed}: wasmtime, by hand");
        driven += 1;
    }
    assert!(driven >= 60, "only {driven} generated scenarios driven");
}

//! What the fuzz targets run (`fuzz/fuzz_targets/`), kept here so the
//! corpus they find is replayed by `cargo test` (`tests/tests/fuzz_corpus.rs`)
//! with the very same checks.
//!
//! Whatever the bytes, nothing may panic: bad input is an error naming a
//! field, and a pack that comes out keeps the invariants.

// Test support: a broken invariant is a finding, so it panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::generate::{self, Source};
use ctxpack_core::Builder;
use ctxpack_core::{AssembleRequest, ConfigFormat, Router, Tokenizers};
use ctxpack_scenario::{Outcome, Reply, Scenario, run_native, run_native_with, scenario};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

fn tokenizers() -> &'static Tokenizers {
    static BUILT_IN: Tokenizers = Tokenizers::new();
    &BUILT_IN
}

/// Bytes as a scenario file (a request, a builder configuration and what
/// the host answers) assembled natively, or as a bare request, decoded and
/// validated; bytes that are not JSON drive the generator
/// ([`crate::generate`]) over the whole input space instead.
pub fn assemble(data: &[u8]) {
    match std::str::from_utf8(data) {
        Ok(text) if text.trim_start().starts_with('{') => assemble_json(text),
        _ => run_and_check(&generate::scenario(&mut Source::bytes(data))),
    }
}

fn assemble_json(text: &str) {
    if let Ok(request) = serde_json::from_str::<AssembleRequest>(text) {
        // Validation names a field or passes; it never panics.
        if let Err(e) = ctxpack_core::validate_request(&request) {
            assert!(!e.to_string().is_empty());
        }
    }
    let Ok(s) = scenario::parse(text) else {
        return;
    };
    // Keep one run small enough to fuzz: a generated budget of billions
    // with a text of megabytes is a test of patience, not of the code.
    if text.len() > 1 << 16 {
        return;
    }
    run_and_check(&s);
}

thread_local! {
    /// One builder per configuration, kept across inputs as a host keeps
    /// them (its count cache with it): building one per input made the
    /// target spend its time on set-up.
    static BUILDERS: RefCell<HashMap<String, Rc<Builder>>> = RefCell::default();
}

/// Runs `s` natively on the builder for its configuration (see
/// [`BUILDERS`]), or refuses the configuration as `run_native` does.
fn run(s: &Scenario) -> Outcome {
    let Ok(key) = serde_json::to_string(&s.config) else {
        return run_native(s);
    };
    let builder = BUILDERS.with_borrow_mut(|builders| {
        if let Some(b) = builders.get(&key) {
            return Some(b.clone());
        }
        let b = Rc::new(Builder::new(s.config.clone()).ok()?);
        if builders.len() >= 256 {
            builders.clear();
        }
        builders.insert(key, b.clone());
        Some(b)
    });
    match builder {
        Some(b) => run_native_with(&b, s),
        None => run_native(s),
    }
}

/// Runs `s` natively: nothing panics, a pack keeps the invariants, a
/// failure its own, and the same input gives the same outcome.
fn run_and_check(s: &Scenario) {
    let outcome = run(s);
    match &outcome.reply {
        Reply::Failed(f) => crate::invariants::check_failure("fuzz", &s.request, &s.config, f),
        reply => {
            if let Some(pack) = reply.pack() {
                crate::invariants::check("fuzz", &s.request, &s.config, pack, tokenizers());
            }
        }
    }
    // The same input gives the same outcome, with a builder of its own.
    assert_eq!(crate::render(&outcome), crate::render(&run_native(s)));
}

/// Bytes driving the hostile generator ([`generate::fence_scenario`]): a
/// scenario whose host fields hold marker spellings and canaries, run
/// natively; then again with the spellings carrying the pack's nonce.
/// Every marker in the pack must be ctxpack's own and every canary of
/// untrusted origin inside a fence (see
/// [`crate::properties::untrusted_text_stays_in_its_fence`]).
pub fn fence(data: &[u8]) {
    let s = generate::fence_scenario(&mut Source::bytes(data), None);
    let outcome = run(&s);
    crate::properties::fenced("fuzz fence", &s, &outcome);
    if let Some(nonce) = outcome.reply.pack().and_then(crate::fence::nonce) {
        let s = generate::fence_scenario(&mut Source::bytes(data), Some(&nonce));
        crate::properties::fenced("fuzz fence, nonce known", &s, &run(&s));
    }
}

/// Bytes as a router configuration (YAML or JSON, by the first byte) and
/// queries after it (separated by NUL): compiled, then every query routed.
pub fn route(data: &[u8]) {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let format = if first % 2 == 0 {
        ConfigFormat::Yaml
    } else {
        ConfigFormat::Json
    };
    let mut parts = rest.split(|&b| b == 0);
    let config = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let router = match Router::from_text(&config, format) {
        Ok(r) => r,
        Err(e) => {
            assert!(e.to_string().contains("config"), "{e}");
            return;
        }
    };
    for query in parts.map(String::from_utf8_lossy) {
        let d = router.route(&query);
        assert!((0.0..=1.0).contains(&d.confidence), "{d:?}");
        if let Some(route) = &d.route {
            assert!(d.scores.iter().any(|s| &s.route == route), "{d:?}");
        }
    }
}

/// Bytes as text (invalid UTF-8 replaced) counted by ctxpack's exact
/// counters and by tiktoken-rs itself: the counts must agree, whole and
/// counted up to any limit, and the cheap floor must not pass them.
pub fn count(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for (tokenizer, reference) in [
        (
            ctxpack_core::Tokenizer::O200kBase,
            tiktoken_rs::o200k_base_singleton(),
        ),
        (
            ctxpack_core::Tokenizer::Cl100kBase,
            tiktoken_rs::cl100k_base_singleton(),
        ),
    ] {
        let counter = tokenizers().counter(&tokenizer).unwrap();
        let want = reference.encode_ordinary(&text).len() as u32;
        assert_eq!(counter.count(&text), want, "{tokenizer:?} {text:?}");
        let floor = counter.at_least(&text);
        assert!(
            floor <= want,
            "{tokenizer:?} floor {floor} > {want}: {text:?}"
        );
        for limit in [0, want / 2, want.saturating_sub(1), want] {
            match counter.count_up_to(&text, limit) {
                ctxpack_core::Count::Exact(n) => assert_eq!(n, want, "{tokenizer:?} {text:?}"),
                ctxpack_core::Count::Over(n) => {
                    assert!(n >= limit && n < want, "{tokenizer:?} {limit} {n} {text:?}")
                }
            }
        }
    }
}

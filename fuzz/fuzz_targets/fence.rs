//! Hostile host fields — marker spellings of every kind, with and without
//! the pack's nonce, in texts, references, ids, redactions, summaries and
//! turns — read back by an independent parser: every byte of untrusted
//! origin lies inside a fence ctxpack opened and closed.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxpack_conformance::fuzz::fence(data));

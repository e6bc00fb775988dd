//! Exact token counts on arbitrary text, against tiktoken-rs itself.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxpack_conformance::fuzz::count(data));

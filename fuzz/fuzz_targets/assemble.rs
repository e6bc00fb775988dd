//! Request decoding, validation and assembly on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxpack_conformance::fuzz::assemble(data));

//! Fuzz target `frame`: see `rmq_common::fuzz_harness::frame`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rmq_common::fuzz_harness::frame(data));

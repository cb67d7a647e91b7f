//! Fuzz target `header_binary`: see `rmq_common::fuzz_harness::header_binary`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rmq_common::fuzz_harness::header_binary(data));

//! Fuzz target `header_json`: see `rmq_common::fuzz_harness::header_json`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rmq_common::fuzz_harness::header_json(data));

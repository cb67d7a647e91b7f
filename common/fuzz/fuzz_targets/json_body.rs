//! Fuzz target `json_body`: see `rmq_common::fuzz_harness::json_body`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rmq_common::fuzz_harness::json_body(data));

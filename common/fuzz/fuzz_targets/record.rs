//! Fuzz target `record`: see `rmq_common::fuzz_harness::record`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rmq_common::fuzz_harness::record(data));

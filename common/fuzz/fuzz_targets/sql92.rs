//! Fuzz target `sql92`: see `rmq_common::fuzz_harness::sql92`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rmq_common::fuzz_harness::sql92(data));

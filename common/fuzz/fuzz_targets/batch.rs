//! Fuzz target `batch`: see `rmq_common::fuzz_harness::batch`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rmq_common::fuzz_harness::batch(data));

//! Fuzz target `properties`: see `rmq_common::fuzz_harness::properties`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rmq_common::fuzz_harness::properties(data));

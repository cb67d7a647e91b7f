//! Fuzz target `acl`: see `rmq_common::fuzz_harness::acl`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rmq_common::fuzz_harness::acl(data));

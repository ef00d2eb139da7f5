//! `cargo fuzz run classify`: see bpflog_fuzz::classify.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bpflog_fuzz::classify(data));

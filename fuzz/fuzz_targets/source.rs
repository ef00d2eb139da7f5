//! `cargo fuzz run source`: see bpflog_fuzz::source.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bpflog_fuzz::source(data));

//! `cargo fuzz run profile`: see bpflog_fuzz::profile.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bpflog_fuzz::profile(data));

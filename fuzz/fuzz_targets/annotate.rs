//! `cargo fuzz run annotate`: see bpflog_fuzz::annotate.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bpflog_fuzz::annotate(data));

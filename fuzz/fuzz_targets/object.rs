//! `cargo fuzz run object`: see bpflog_fuzz::object.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bpflog_fuzz::object(data));

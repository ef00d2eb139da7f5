//! `cargo fuzz run dwarf`: see bpflog_fuzz::dwarf.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bpflog_fuzz::dwarf(data));

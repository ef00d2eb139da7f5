//! The shared library's SONAME, `libbpflog.so.N`, N the ABI version `src/lib.rs` declares
//! (`BPFLOG_ABI_VERSION`, the one place it is written).

fn main() {
    println!("cargo::rerun-if-changed=src/lib.rs");
    let source = std::fs::read_to_string("src/lib.rs").expect("src/lib.rs is readable");
    let abi = source
        .lines()
        .find_map(|line| line.strip_prefix("pub const BPFLOG_ABI_VERSION: u32 = "))
        .and_then(|rest| rest.strip_suffix(';'))
        .expect("src/lib.rs declares `pub const BPFLOG_ABI_VERSION: u32 = N;`");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo::rustc-cdylib-link-arg=-Wl,-soname,libbpflog.so.{abi}");
    }
}

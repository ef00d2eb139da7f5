//! In a loader: annotate the kernel's verdict with the line info the loader itself passed.
//!
//! ```sh
//! cargo run -p bpflog --example loader -- examples/reject_subprog.log
//! ```
//!
//! A loader hands `BPF_PROG_LOAD` its program's `line_info` (one `bpf_line_info` per source line
//! change, `insn_off` in instructions of the final program) and the BTF whose strings they name.
//! When the kernel rejects the program without having been asked for a level with line info, or
//! when the log is to be shown differently, those records are all bpflog needs: no object, no
//! layout to reproduce. Here the loader's state is written out as constants: the records and
//! strings of `xdp_reject_subprog` from `examples/reject_subprog.o`, as libbpf loads it.

use bpflog::{AnnotateOptions, BpfLineInfo, Input, LogData, Program};
use std::error::Error;
use std::io::{self, BufRead, BufReader, Write};

/// The program's name, instruction count, line info and BTF string section, as the loader has
/// them when it calls `BPF_PROG_LOAD`.
const NAME: &str = "xdp_reject_subprog";
const INSN_CNT: u32 = 49;
const LINE_INFO: [BpfLineInfo; 22] = [
    rec(0, 20, 60, 0),
    rec(1, 63, 63, 38),
    rec(2, 110, 62, 34),
    rec(3, 149, 43, 19),
    rec(5, 149, 43, 6),
    rec(6, 184, 45, 11),
    rec(11, 226, 73, 19),
    rec(12, 226, 73, 12),
    rec(13, 251, 74, 19),
    rec(14, 251, 74, 12),
    rec(16, 276, 75, 8),
    rec(19, 308, 76, 6),
    rec(22, 333, 79, 7),
    rec(25, 374, 80, 6),
    rec(34, 401, 83, 1),
    rec(35, 403, 54, 15),
    rec(38, 403, 54, 12),
    rec(40, 422, 55, 15),
    rec(41, 403, 54, 12),
    rec(42, 443, 53, 14),
    rec(46, 462, 56, 21),
    rec(48, 462, 56, 2),
];
const BTF_STRINGS: &[u8] = b"\0./reject_subprog.c\0int xdp_reject_subprog(struct xdp_md *ctx)\0\
    \tvoid *data_end = (void *)(long)ctx->data_end;\0\tvoid *data = (void *)(long)ctx->data;\0\
    \tif ((void *)(iph + 1) > data_end)\0\tif (eth->h_proto != bpf_htons(ETH_P_IP))\0\
    \tkey.saddr = iph->saddr;\0\tkey.daddr = iph->daddr;\0\tlen = bpf_ntohs(iph->tot_len);\0\
    \tif (len < sizeof(*iph))\0\tfv = bpf_map_lookup_elem(&flows, &key);\0\
    \tif (update_flow(fv, len))\0}\0\tfv->bytes += len;\0\tfv->last_len = len;\0\
    \tfv->packets += 1;\0\treturn fv->packets > 100;\0";

/// A record of `./reject_subprog.c` (file name at offset 1).
const fn rec(insn_off: u32, line_off: u32, line: u32, col: u32) -> BpfLineInfo {
    BpfLineInfo {
        insn_off,
        file_name_off: 1,
        line_off,
        line_col: line << 10 | col,
    }
}

/// What the loader does with the kernel's log: write it with the source lines put back.
fn report(log: impl BufRead, out: impl Write) -> Result<(), Box<dyn Error>> {
    let program = Program::from_line_info(NAME, &LINE_INFO, BTF_STRINGS, INSN_CNT)?;
    let input = Input::of(&program, LogData::Stream(log));
    bpflog::annotate(input, out, &AnnotateOptions::default(), |_, _| Ok(()))?;
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let Some(path) = std::env::args_os().nth(1) else {
        return Err("usage: loader LOG".into());
    };
    let log = BufReader::new(std::fs::File::open(path)?);
    report(log, io::stdout().lock())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The loader's records give back the kernel's own annotation, byte for byte.
    #[test]
    fn gives_back_the_kernels_lines() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let stripped = std::fs::read(root.join("examples/reject_subprog.log")).unwrap();
        let kernel = std::fs::read(
            root.join("tests/fixtures/logs/reject_subprog.xdp_reject_subprog.l2.log"),
        )
        .unwrap();
        let mut out = Vec::new();
        report(&stripped[..], &mut out).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out),
            String::from_utf8_lossy(&kernel)
        );
    }
}

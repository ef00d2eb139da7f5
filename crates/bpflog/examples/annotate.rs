//! Annotate a verifier log with the source of the object it came from.
//!
//! ```sh
//! cargo run -p bpflog --example annotate -- examples/reject_subprog.o examples/reject_subprog.log
//! ```
//!
//! Every program of the object is laid out under every loader's layout, the one each log in the
//! file belongs to is found as `bpflog annotate` finds it, and the log is written in the rich
//! style (file:line:col, function, inlined calls) with the rejection's diagnostic at the end.

use bpflog::object::{BpfObject, Loader};
use bpflog::{AnnotateOptions, Input, Palette, SourceSearch, Style};
use std::error::Error;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Annotates the log at `log` with the programs of the object at `object`, into `out`.
fn run(object: &Path, log: &Path, out: impl Write) -> Result<(), Box<dyn Error>> {
    let data = std::fs::read(object)?;
    let object = BpfObject::parse(&data)?;
    // Every program as each loader lays it out: the log tells which it is.
    let programs = bpflog::lay_out(&object, &Loader::ALL).programs;
    let options = AnnotateOptions::default()
        .style(Style::Rich)
        .palette(Palette::new(false))
        .diagnostic(true)
        // Where the C files are, when the paths in the debug info are relative.
        .sources(
            SourceSearch::default()
                .dirs(object_dir(log))
                .maps(Vec::new()),
        );
    // Each log's program is found by reading ahead at its start, in the file.
    let file = File::open(log)?;
    bpflog::annotate(
        Input::among(&programs, (&file).into()),
        out,
        &options,
        |_, _| Ok(()),
    )?;
    Ok(())
}

fn object_dir(path: &Path) -> Vec<PathBuf> {
    path.parent().map(Path::to_path_buf).into_iter().collect()
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [object, log] = args.as_slice() else {
        return Err("usage: annotate OBJ LOG".into());
    };
    run(object, log, io::stdout().lock())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotates_the_quick_start() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut out = Vec::new();
        run(
            &root.join("examples/reject_subprog.o"),
            &root.join("examples/reject_subprog.log"),
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("; fv->bytes += len; @ reject_subprog.c:54:15 in update_flow\n"));
        assert!(text.contains("R1 invalid mem access 'map_value_or_null'\n"));
        assert!(text.contains("  --> reject_subprog.c:54:12\n"));
    }
}

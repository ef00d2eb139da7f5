//! Where the verifier spent its effort: a level-2 log counted per source line and function.
//!
//! ```sh
//! cargo run -p bpflog --example profile -- tests/fixtures/obj/loop_callback.o \
//!     tests/fixtures/logs/loop_callback.loop_sum.l2.log loop_sum
//! ```

use bpflog::object::BpfObject;
use bpflog::profile::{self, RenderOptions};
use bpflog::{Input, LogData, Program, SourceFiles, SourceSearch};
use std::error::Error;
use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};

/// Profiles the log at `log` of program `name` of the object at `object`, as a table into `out`.
fn run(object: &Path, log: &Path, name: &str, mut out: impl Write) -> Result<(), Box<dyn Error>> {
    let data = std::fs::read(object)?;
    let object = BpfObject::parse(&data)?;
    let program = Program::new(&object, object.program(name)?)?;
    // The log read once, taken as the program's; no source file is read (no search given).
    let input = Input::of(&program, LogData::Stream(BufReader::new(File::open(log)?)));
    let mut files = SourceFiles::new(SourceSearch::default());
    let request = profile::ProfileRequest::default();
    let profile = profile::profile(input, &request, &mut files)?.profile;
    let options = RenderOptions::default().top(5);
    profile::render(&profile, &mut out, &options)?;
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [object, log, name] = args.as_slice() else {
        return Err("usage: profile OBJ LOG PROG".into());
    };
    run(
        &PathBuf::from(object),
        &PathBuf::from(log),
        name,
        io::stdout().lock(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_a_fixture_log() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let mut out = Vec::new();
        run(
            &fixtures.join("obj/loop_callback.o"),
            &fixtures.join("logs/loop_callback.loop_sum.l2.log"),
            "loop_sum",
            &mut out,
        )
        .unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("accepted"), "{text}");
        assert!(text.contains("loop_sum"), "{text}");
    }
}

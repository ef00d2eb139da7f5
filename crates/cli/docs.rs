//! `bpflog completions` and `bpflog man`: shell completions and manual pages, generated from the
//! same clap definitions that parse the command line, so they cannot drift from it.

use crate::files::NewFile;
use crate::{Failure, IO_BUFFER};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Arguments of `bpflog completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Arguments of `bpflog man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write a page for bpflog and one for each subcommand (bpflog.1, bpflog-annotate.1, ...)
    /// into DIR instead of printing bpflog(1).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Runs `bpflog completions`: the script on standard output.
pub(crate) fn completions(args: &CompletionsArgs) -> Result<(), Failure> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut crate::command(), "bpflog", &mut script);
    write_stdout(&script)
}

/// Runs `bpflog man`: bpflog(1) in roff on standard output, or every page into a directory.
pub(crate) fn man(args: &ManArgs) -> Result<(), Failure> {
    let command = crate::command();
    if let Some(dir) = &args.dir {
        std::fs::create_dir_all(dir).map_err(|e| Failure::at(dir, e))?;
        let mut command = command.disable_help_subcommand(true);
        command.build();
        return write_pages(command, dir);
    }
    let mut page = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut page)
        .map_err(Failure::stdout)?;
    write_stdout(&page)
}

/// Writes the page of `command` and of each of its subcommands into `dir`, as
/// [`clap_mangen::generate_to`] names them, each put in place once complete.
fn write_pages(command: clap::Command, dir: &Path) -> Result<(), Failure> {
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub.clone(), dir)?;
    }
    let man = clap_mangen::Man::new(command);
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page).map_err(|e| Failure::at(&path, e))?;
    let mut file = NewFile::create(&path)?;
    file.write_all(&page).map_err(|e| Failure::at(&path, e))?;
    file.commit()
}

fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = io::BufWriter::with_capacity(IO_BUFFER, io::stdout().lock());
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(Failure::stdout)
}

//! `bpflog completions` and `bpflog man`: shell completions and manual pages, generated from the
//! same clap definitions that parse the command line, so they cannot drift from it; and the end
//! of each command's long help and manual page (its exit status, the page of `docs/` that is its
//! full reference).

use crate::files::NewFile;
use crate::{Failure, IO_BUFFER};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The end of `bpflog annotate --help` and of its manual page: the exit status, and where every
/// rule is written down.
pub(crate) const ANNOTATE: &str = "Exit status: 0 on success (with warnings too, and when the \
    reader of the output goes away), 1 when an input is missing or malformed, the program named \
    is not in the objects, the log fits no program or holds no verifier line, or standard \
    output cannot be written, 2 for a command-line error.\n\n\
    The full reference (what is found from the log, live logs, misfits, the JSON schema): \
    docs/annotate.md in bpflog's source; untrusted input: docs/trust.md.";

/// The end of `bpflog profile --help`, as [`ANNOTATE`].
pub(crate) const PROFILE: &str = "Exit status: 0 on success, 1 when an input is missing or \
    malformed, the program named is not in the object, the log fits no program or has no \
    instruction line (a level-1 log of an accepted program), 2 for a command-line error.\n\n\
    The full reference (visits, insns, paths; the summary; the CSV and JSON schemas; \
    --compare; the flame graph): docs/profile.md in bpflog's source.";

/// The end of `bpflog report --help`, as [`ANNOTATE`].
pub(crate) const REPORT: &str = "Exit status: 0 on success, 1 when an input is missing or \
    malformed, the log fits no program or the page cannot be written, 2 for a command-line \
    error.\n\n\
    The full reference (the page's panes, how large logs are held): docs/report.md in \
    bpflog's source.";

/// The end of `bpflog explain --help`, as [`ANNOTATE`].
pub(crate) const EXPLAIN: &str = "Exit status: 0 whether the log was rejected or accepted, 1 \
    when an input is missing or malformed, the program named is not in the object or the log \
    fits no program, 2 for a command-line error.\n\n\
    The full reference (the classes, the chain's roles, the JSON, gcc and SARIF formats, how \
    right the explanations are): docs/explain.md in bpflog's source.";

/// The end of `bpflog verify --help`, as [`ANNOTATE`].
pub(crate) const VERIFY: &str = "Exit status: 0 when the kernel accepted every program, 3 when \
    it rejected one (with --compare --fail-on: when a program grew by more than PCT percent or \
    NEW rejects a program BASE accepted), 1 on any other failure (an unreadable object, no \
    CAP_BPF, a program libbpf could not prepare), 2 for a command-line error. The status is \
    the verdict also when the reader of the output goes away early.\n\n\
    The full reference (the table's columns, --sort, --filter, what a load may touch, \
    --compare): docs/verify.md in bpflog's source.";

/// The end of `bpflog lines --help`, as [`ANNOTATE`].
pub(crate) const LINES: &str = "Exit status: 0 on success, 1 when the object is missing or \
    malformed or has no program of that name, 2 for a command-line error.\n\n\
    The reference: the README's `bpflog lines` in bpflog's source.";

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

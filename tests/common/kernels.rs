//! The logs of other kernels than the host's: `tests/fixtures/kernels/<release>/` (written by
//! `capture.sh` there), each with its `MANIFEST` and `logs/<object>.<program>.l<level>.log`.

use super::fixtures;
use std::path::PathBuf;

/// What a kernel did with one program at one log level (a `MANIFEST` line's verdict).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The verifier accepted the program.
    Accepted,
    /// The verifier ran and rejected the program with this errno.
    Rejected(i32),
    /// Nothing was verified (the kernel processed no instruction, or libbpf gave up before the
    /// kernel saw the program): the errno and the one-line reason.
    Refused(i32, String),
}

/// One log of a kernel: a `MANIFEST` line.
#[derive(Debug, Clone)]
pub struct KernelLog {
    /// The log's file name, `<object>.<program>.l<level>.log`.
    pub name: String,
    /// Its path.
    pub log: PathBuf,
    /// The object's stem (`reject_entry.nodwarf`).
    pub object: String,
    /// The program's name.
    pub program: String,
    /// The log level (1 or 2).
    pub level: u32,
    /// The sha256 the `MANIFEST` gives, in hex.
    pub sha256: String,
    /// The verdict.
    pub verdict: Verdict,
}

/// One kernel's `MANIFEST`.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// The folder's name: `5.10`, `6.1`, `6.12`.
    pub release: String,
    /// `uname -r` in the guest.
    pub uname: String,
    /// The Debian package and its version.
    pub package: (String, String),
    /// The objects loaded without CAP_PERFMON and CAP_SYS_ADMIN.
    pub unprivileged: Vec<String>,
    /// Its logs, in the `MANIFEST`'s order.
    pub logs: Vec<KernelLog>,
}

/// The folder of the kernels' logs.
pub fn kernels_dir() -> PathBuf {
    fixtures().join("kernels")
}

/// Reads `<release>/MANIFEST`; an `Err` names the line that does not parse.
pub fn read_kernel(release: &str) -> Result<Kernel, String> {
    let dir = kernels_dir().join(release);
    let path = dir.join("MANIFEST");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut kernel = Kernel {
        release: release.to_owned(),
        uname: String::new(),
        package: (String::new(), String::new()),
        unprivileged: Vec::new(),
        logs: Vec::new(),
    };
    for (n, line) in text.lines().enumerate() {
        let bad = |why: &str| format!("{}:{}: {why}: {line:?}", path.display(), n + 1);
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (key, rest) = line.split_once(' ').ok_or_else(|| bad("no value"))?;
        match key {
            "uname-r" => kernel.uname = rest.to_owned(),
            "package" => {
                let (name, version) = rest.split_once(' ').ok_or_else(|| bad("no version"))?;
                kernel.package = (name.to_owned(), version.to_owned());
            }
            "libbpf" => {}
            "unprivileged" => {
                kernel.unprivileged = rest.split_whitespace().map(str::to_owned).collect();
            }
            name if name.ends_with(".log") => {
                let (sha256, verdict) = rest.split_once(' ').ok_or_else(|| bad("no verdict"))?;
                let verdict = parse_verdict(verdict).ok_or_else(|| bad("bad verdict"))?;
                let stem = &name[..name.len() - ".log".len()];
                let (rest, level) = stem.rsplit_once(".l").ok_or_else(|| bad("no level"))?;
                let (object, program) = rest.rsplit_once('.').ok_or_else(|| bad("no program"))?;
                kernel.logs.push(KernelLog {
                    name: name.to_owned(),
                    log: dir.join("logs").join(name),
                    object: object.to_owned(),
                    program: program.to_owned(),
                    level: level.parse().map_err(|_| bad("bad level"))?,
                    sha256: sha256.to_owned(),
                    verdict,
                });
            }
            _ => return Err(bad("unknown key")),
        }
    }
    Ok(kernel)
}

/// `accepted`, `rejected errno=N`, `refused errno=N: REASON`.
fn parse_verdict(text: &str) -> Option<Verdict> {
    let errno = |s: &str| s.strip_prefix("errno=")?.parse().ok();
    if text == "accepted" {
        Some(Verdict::Accepted)
    } else if let Some(rest) = text.strip_prefix("rejected ") {
        Some(Verdict::Rejected(errno(rest)?))
    } else {
        let (errno_text, reason) = text.strip_prefix("refused ")?.split_once(": ")?;
        Some(Verdict::Refused(errno(errno_text)?, reason.to_owned()))
    }
}

/// The README's table of the kernels tested (between its `<!-- kernels -->` markers): the
/// cell of the row whose first cell starts with `row`, in the column whose heading is `release`
/// or starts with it and a space. Panics, naming what is missing, when there is no such cell.
pub fn readme_cell(row: &str, release: &str) -> String {
    const MARKER: &str = "<!-- kernels -->";
    let readme = std::fs::read_to_string(super::fixtures().join("../../README.md")).unwrap();
    let table = readme
        .split(MARKER)
        .nth(1)
        .expect("README.md: no table of kernels between <!-- kernels --> markers");
    let cells = |line: &str| -> Vec<String> {
        let line = line.trim().trim_start_matches('|').trim_end_matches('|');
        line.split(" | ").map(|c| c.trim().to_owned()).collect()
    };
    let mut rows = table.lines().filter(|l| l.starts_with('|'));
    let header = cells(
        rows.next()
            .expect("README.md: the kernels table has no header"),
    );
    let column = header
        .iter()
        .position(|h| h == release || h.starts_with(&format!("{release} ")))
        .unwrap_or_else(|| panic!("README.md's kernels table has no column {release}"));
    let found = rows
        .map(cells)
        .find(|cells| cells[0].starts_with(row))
        .unwrap_or_else(|| panic!("README.md's kernels table has no row {row:?}"));
    found
        .get(column)
        .unwrap_or_else(|| panic!("README.md's kernels table: row {row:?} has no {release}"))
        .clone()
}

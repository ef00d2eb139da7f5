//! Finding and reading the C source files that debug info names.
//!
//! A file name from DWARF or BTF (`./prog.c`, `/build/bpf/prog.c`, `bpf/prog.c`) is looked for,
//! in order: rewritten by each `--source-map FROM=TO` whose FROM is a prefix of it; as it is
//! (absolute, or relative to the current directory); and under each `--source-dir`, first with
//! its relative path, then by its base name. Files are read once and cached; a file that is not
//! found is remembered too, and callers fall back to the line text stored in BTF.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Source files larger than this are not read (a C file of 64 MiB is not a source file).
const MAX_SOURCE_BYTES: u64 = 64 << 20;

/// Where to look for source files.
#[derive(Debug, Clone, Default)]
pub struct SourceSearch {
    /// Directories to search (`--source-dir`).
    pub dirs: Vec<PathBuf>,
    /// Prefix rewrites `(from, to)` (`--source-map FROM=TO`), tried in order.
    pub maps: Vec<(String, String)>,
}

/// One source file, split into lines.
#[derive(Debug)]
pub struct SourceFile {
    /// Where it was found.
    pub path: PathBuf,
    bytes: Vec<u8>,
    /// Start of each line in `bytes`.
    starts: Vec<usize>,
}

impl SourceFile {
    /// A source file from its bytes.
    pub fn new(path: PathBuf, bytes: Vec<u8>) -> Self {
        let mut starts = vec![0];
        starts.extend(
            memchr::memchr_iter(b'\n', &bytes)
                .map(|i| i + 1)
                .filter(|&i| i < bytes.len()),
        );
        SourceFile {
            path,
            bytes,
            starts,
        }
    }

    /// Line `n` (1-based) without its line terminator.
    pub fn line(&self, n: u32) -> Option<&[u8]> {
        let i = usize::try_from(n).ok()?.checked_sub(1)?;
        let start = *self.starts.get(i)?;
        let end = self.starts.get(i + 1).copied().unwrap_or(self.bytes.len());
        let line = self.bytes.get(start..end)?;
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    }

    /// Number of lines.
    pub fn line_count(&self) -> u32 {
        u32::try_from(self.starts.len()).unwrap_or(u32::MAX)
    }
}

/// Source files by the name debug info gives them, looked up once each.
#[derive(Debug, Default)]
pub struct SourceFiles {
    search: SourceSearch,
    cache: HashMap<Vec<u8>, Option<Arc<SourceFile>>>,
}

impl SourceFiles {
    /// A cache searching `search`.
    pub fn new(search: SourceSearch) -> Self {
        SourceFiles {
            search,
            cache: HashMap::new(),
        }
    }

    /// The file debug info calls `name`, if it can be found and read.
    pub fn get(&mut self, name: &[u8]) -> Option<Arc<SourceFile>> {
        if let Some(found) = self.cache.get(name) {
            return found.clone();
        }
        let found = self.candidates(name).into_iter().find_map(|path| {
            // Debug info comes from strangers: only regular files of sane size, never a device
            // or a FIFO that could block or never end.
            let meta = std::fs::metadata(&path).ok()?;
            if !meta.is_file() || meta.len() > MAX_SOURCE_BYTES {
                return None;
            }
            let bytes = std::fs::read(&path).ok()?;
            Some(Arc::new(SourceFile::new(path, bytes)))
        });
        self.cache.insert(name.to_vec(), found.clone());
        found
    }

    /// The paths tried for `name`, in order.
    pub fn candidates(&self, name: &[u8]) -> Vec<PathBuf> {
        let name = String::from_utf8_lossy(name);
        let mut out = Vec::new();
        for (from, to) in &self.search.maps {
            if let Some(rest) = name.strip_prefix(from.as_str()) {
                out.push(PathBuf::from(format!("{to}{rest}")));
            }
        }
        let path = Path::new(name.as_ref());
        out.push(path.to_path_buf());
        let relative = path.strip_prefix("/").unwrap_or(path);
        for dir in &self.search.dirs {
            out.push(dir.join(relative));
            if let Some(base) = path.file_name() {
                out.push(dir.join(base));
            }
        }
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_from_one_without_terminators() {
        let f = SourceFile::new("a.c".into(), b"int a;\r\nint b;\n\nlast".to_vec());
        assert_eq!(f.line(1), Some(&b"int a;"[..]));
        assert_eq!(f.line(2), Some(&b"int b;"[..]));
        assert_eq!(f.line(3), Some(&b""[..]));
        assert_eq!(f.line(4), Some(&b"last"[..]));
        assert_eq!(f.line(5), None);
        assert_eq!(f.line(0), None);
        assert_eq!(f.line_count(), 4);
    }

    #[test]
    fn maps_then_the_name_then_each_directory() {
        let files = SourceFiles::new(SourceSearch {
            dirs: vec!["/src".into()],
            maps: vec![("/build/".into(), "/home/me/".into())],
        });
        let tried = files.candidates(b"/build/bpf/prog.c");
        let expected: Vec<PathBuf> = [
            "/home/me/bpf/prog.c",
            "/build/bpf/prog.c",
            "/src/build/bpf/prog.c",
            "/src/prog.c",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(tried, expected);
        // `/src/./prog.c` and `/src/prog.c` are one path: tried once.
        let tried = files.candidates(b"./prog.c");
        assert_eq!(
            tried,
            [PathBuf::from("./prog.c"), PathBuf::from("/src/prog.c")]
        );
    }

    #[test]
    fn devices_and_directories_are_not_sources() {
        let mut files = SourceFiles::new(SourceSearch::default());
        assert!(files.get(b"/dev/zero").is_none());
        assert!(files.get(b"/").is_none());
    }

    #[test]
    fn missing_files_are_remembered() {
        let mut files = SourceFiles::new(SourceSearch::default());
        assert!(files.get(b"/nonexistent/x.c").is_none());
        assert!(files.cache.contains_key(&b"/nonexistent/x.c"[..]));
    }
}

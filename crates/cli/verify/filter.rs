//! Which programs `verify` loads: `--prog NAME` and `--filter GLOB`, as veristat's `-f`.
//!
//! veristat's `should_process_file_prog` (veristat.c): a filter `FILE/PROG` globs the object's
//! file name (without its directory) and the program's name; a filter without `/` matches when
//! it globs either; filters starting with `!` leave programs out, and when there is any other
//! filter a program must match one of them.

use globset::{Glob, GlobMatcher};

/// One glob filter.
#[derive(Debug)]
enum Rule {
    /// `GLOB`: the file name or the program's name.
    Either(GlobMatcher),
    /// `FILE/PROG`.
    Both(GlobMatcher, GlobMatcher),
}

impl Rule {
    fn matches(&self, file: &str, prog: &str) -> bool {
        match self {
            Rule::Either(g) => g.is_match(file) || g.is_match(prog),
            Rule::Both(f, p) => f.is_match(file) && p.is_match(prog),
        }
    }
}

/// The programs asked for.
#[derive(Debug, Default)]
pub(crate) struct Filters {
    prog: Option<String>,
    allow: Vec<Rule>,
    deny: Vec<Rule>,
}

impl Filters {
    /// From `--prog` and the `--filter` globs; a malformed glob is an error naming it.
    pub(crate) fn new(prog: Option<&str>, globs: &[String]) -> Result<Filters, String> {
        let mut filters = Filters {
            prog: prog.map(str::to_owned),
            ..Filters::default()
        };
        for spec in globs {
            let (deny, pattern) = match spec.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, spec.as_str()),
            };
            let glob = |p: &str| {
                Glob::new(p)
                    .map(|g| g.compile_matcher())
                    .map_err(|e| format!("--filter '{spec}': {e}"))
            };
            let rule = match pattern.split_once('/') {
                Some((file, prog)) => Rule::Both(glob(file)?, glob(prog)?),
                None => Rule::Either(glob(pattern)?),
            };
            if deny {
                filters.deny.push(rule);
            } else {
                filters.allow.push(rule);
            }
        }
        Ok(filters)
    }

    /// Whether program `prog` of the object whose file name is `file` is to be loaded.
    pub(crate) fn accepts(&self, file: &str, prog: &str) -> bool {
        self.prog.as_deref().is_none_or(|p| p == prog)
            && (self.allow.is_empty() || self.allow.iter().any(|r| r.matches(file, prog)))
            && !self.deny.iter().any(|r| r.matches(file, prog))
    }

    /// Whether only programs named by `--prog` are asked for.
    pub(crate) fn named(&self) -> Option<&str> {
        self.prog.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::Filters;

    fn filters(globs: &[&str]) -> Filters {
        let globs: Vec<String> = globs.iter().map(|g| g.to_string()).collect();
        Filters::new(None, &globs).unwrap()
    }

    #[test]
    fn globs_as_veristat_reads_them() {
        let f = filters(&[]);
        assert!(f.accepts("a.o", "x"));
        let f = filters(&["loop*"]);
        assert!(f.accepts("loop1.o", "anything"));
        assert!(f.accepts("other.o", "loop_sum"));
        assert!(!f.accepts("other.o", "sum"));
        let f = filters(&["two_*.o/xdp_?econd"]);
        assert!(f.accepts("two_in_one.o", "xdp_second"));
        assert!(!f.accepts("two_in_one.o", "xdp_first"));
        assert!(!f.accepts("one.o", "xdp_second"));
        let f = filters(&["!*_nested", "!reject*.o/*"]);
        assert!(f.accepts("a.o", "xdp_first"));
        assert!(!f.accepts("a.o", "xdp_nested"));
        assert!(!f.accepts("reject_entry.o", "xdp"));
        let f = Filters::new(Some("x"), &["*".to_string()]).unwrap();
        assert!(f.accepts("a.o", "x"));
        assert!(!f.accepts("a.o", "y"));
    }

    #[test]
    fn a_malformed_glob_is_named() {
        let e = Filters::new(None, &["a/[b".to_string()]).unwrap_err();
        assert!(e.starts_with("--filter 'a/[b': "), "{e}");
    }
}

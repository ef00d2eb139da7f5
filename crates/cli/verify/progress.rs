//! Progress while programs load: a heavy program keeps the kernel busy for seconds to minutes,
//! and a silent terminal looks hung.
//!
//! On a terminal (stderr), one line per loading thread says which program it verifies and for
//! how long, and a last line how many programs are done of how many; nothing is drawn when
//! stderr is not a terminal (indicatif's rule). What else goes to the terminal while the lines
//! are drawn goes through [`Progress::suspend`].

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::time::Duration;

/// The progress lines of one `verify` run.
pub(crate) struct Progress {
    lines: MultiProgress,
    done: ProgressBar,
}

impl Progress {
    /// Progress over `programs` programs, drawn on stderr when it is a terminal.
    pub(crate) fn new(programs: usize) -> Progress {
        let lines = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let done = lines.add(ProgressBar::new(programs as u64));
        done.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} programs  {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Progress { lines, done }
    }

    /// The line of one loading thread.
    pub(crate) fn thread_line(&self) -> ProgressBar {
        let line = self
            .lines
            .insert_before(&self.done, ProgressBar::new_spinner());
        line.set_style(
            ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        line.enable_steady_tick(Duration::from_millis(200));
        line
    }

    /// One more program done.
    pub(crate) fn one_done(&self) {
        self.done.inc(1);
    }

    /// Runs `f` (which writes to the terminal) with the progress lines out of the way.
    pub(crate) fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.lines.suspend(f)
    }

    /// Removes the progress lines.
    pub(crate) fn finish(&self) {
        self.done.finish_and_clear();
        let _ = self.lines.clear();
    }
}

/// Says on a thread's line that `label` (names from the object) is being verified, from now.
pub(crate) fn verifying(line: &ProgressBar, label: &str) {
    line.set_message(bpflog::escape_controls_str(label).into_owned());
    line.reset_elapsed();
}

//! [`AnnotatedRows`]: the annotated log handed out row by row with what the annotator decoded
//! of each row, for a consumer that would otherwise split the annotator's output into lines and
//! classify them again (the report).

use bpflog_log::Line;
use std::io;

/// What takes the rows of a log annotated in kernel style, as plain text (the rows the
/// annotator writes then are the log's lines, less an old kernel's annotation lines, and the
/// annotation lines it inserts): each line of the log with its kind when the annotator
/// classified it, and each inserted line without classifying it.
pub(crate) trait AnnotatedRows {
    /// Line `line_no` of the log (`payload`, without its line end) goes out: `kind` is its
    /// kind when the annotator classified it.
    fn line(&mut self, kind: Option<&Line<'_>>, payload: &[u8], line_no: u64) -> io::Result<()>;

    /// The annotator inserts a source line (`; text @ file:line`) before the next line:
    /// `write` writes it, without its line end, into the buffer it is given.
    fn inserted(&mut self, write: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> io::Result<()>;
}

/// No consumer of rows: annotating writes bytes only.
pub(crate) struct NoRows;

impl AnnotatedRows for NoRows {
    #[inline(always)]
    fn line(&mut self, _: Option<&Line<'_>>, _: &[u8], _: u64) -> io::Result<()> {
        Ok(())
    }

    #[inline(always)]
    fn inserted(&mut self, _: impl FnOnce(&mut Vec<u8>) -> io::Result<()>) -> io::Result<()> {
        Ok(())
    }
}

//! What the failing path keeps of each instruction line while the log is read: where its bytes
//! are and what the reader saw of it, shared by the path ([`Path`](super::path::Path)) that keeps
//! it and the decoder ([`PathInsn`](super::decoded::PathInsn)) that reads it.

/// At most this many bytes of an instruction's line are kept (its text and the state after it;
/// a longer line's state is taken to show nothing: [`PathInsn::cut`](super::decoded::PathInsn::cut)).
pub(crate) const MAX_LINE: usize = 512;

/// What [`Path`](super::path::Path) keeps of an instruction line: its line is `[start..end]` of
/// the path's block number `block` (counted from the path's first block, dropped ones included).
#[derive(Debug, Clone, Copy)]
pub(super) struct KeptLine {
    pub(super) index: u64,
    pub(super) frame: usize,
    pub(super) block: usize,
    pub(super) start: usize,
    pub(super) end: usize,
    /// The line was longer than [`MAX_LINE`].
    pub(super) cut: bool,
    pub(super) packet_check: bool,
    /// Its state is one printed on a line of its own after it, every register shown
    /// ([`Path::state_after_last`](super::path::Path::state_after_last)).
    pub(super) full_state: bool,
    pub(super) read_at: u64,
}

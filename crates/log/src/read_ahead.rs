//! Reading on a thread of its own, ahead of the lines handed out.
//!
//! A read from a file costs the kernel a copy of every byte out of the page cache: about a fifth
//! of the time a one-pass annotation of a large log takes. On another core that copy overlaps
//! the work on the lines. The blocks are handed over, not copied again: the thread reads into a
//! block after a gap, and the [`LineReader`](crate::LineReader) moves only the unfinished line
//! of the previous block into that gap, in front of the new bytes.
//!
//! Memory stays bounded: [`BLOCKS`] blocks go round between the two threads.

use std::io::{self, Read};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::Duration;

/// How many blocks go round: one being read from, one being filled, and ones ready.
const BLOCKS: usize = 4;

/// The size of the first block read (then doubled up to the size asked for).
const FIRST_BLOCK: usize = 64 * 1024;

/// Room before the bytes of a block for the unfinished line of the block before it.
pub(crate) const GAP: usize = 64 * 1024;

/// How long a [`live`](ReadAhead::live) source may pause before its reader says it would wait
/// (and its caller flushes what it wrote): short to a person, long to a loader writing a log.
pub const PAUSE: Duration = Duration::from_millis(100);

/// A source read by a thread of its own, in blocks, for a
/// [`LineReader`](crate::LineReader::read_ahead).
///
/// Bytes and their order are those of the source; a read error ends the lines with that error.
/// Dropped early, it stops the thread, unless the thread waits on a source that never answers (a
/// terminal): then the thread ends with the process.
pub struct ReadAhead {
    /// Filled blocks and how many bytes from [`GAP`] were read into each (0: the end).
    full: Receiver<io::Result<(Vec<u8>, usize)>>,
    /// Used blocks back to the thread.
    empty: SyncSender<Vec<u8>>,
    done: bool,
    /// A block received ahead of its turn (see [`ready`](Self::ready)).
    received: Option<io::Result<(Vec<u8>, usize)>>,
    /// How long the next block is waited for before [`ready`](Self::ready) says it is not:
    /// `None` for a source that does not pause (a file).
    patience: Option<Duration>,
}

impl ReadAhead {
    /// Reads `source` in blocks of `capacity` bytes (at least 1) on a new thread.
    pub fn new(mut source: impl Read + Send + 'static, capacity: usize) -> Self {
        let full_size = GAP + capacity.max(1);
        // The first blocks are smaller, doubling up to `capacity`: a small log is read without
        // the zeroing of a whole block it does not fill (a page fault a page).
        let mut size = full_size.min(GAP + FIRST_BLOCK);
        let (filled, full) = sync_channel::<io::Result<(Vec<u8>, usize)>>(BLOCKS);
        let (empty, to_fill) = sync_channel::<Vec<u8>>(BLOCKS);
        for _ in 0..BLOCKS - 1 {
            // Cannot fail: the receiver is alive and the channel has room.
            let _ = empty.send(Vec::new());
        }
        std::thread::spawn(move || {
            for mut block in to_fill {
                // A block that grew around a long line gives its memory back.
                if block.capacity() > 2 * full_size {
                    block = Vec::new();
                }
                // Only a block that was cut or grew is set to size again: zeroing a whole block
                // for every short read (a pipe hands out 64 KiB at a time) would cost more than
                // the read.
                if block.len() != size {
                    block.resize(size, 0);
                }
                let read = loop {
                    match source.read(&mut block[GAP..]) {
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        other => break other,
                    }
                };
                let last = !matches!(read, Ok(n) if n > 0);
                size = full_size.min(GAP + 2 * (size - GAP));
                let message = read.map(|n| (block, n));
                // The reader may be gone: then nothing more is wanted.
                if filled.send(message).is_err() || last {
                    return;
                }
            }
        });
        ReadAhead {
            full,
            empty,
            done: false,
            received: None,
            patience: None,
        }
    }

    /// The same, for a source that may pause (a pipe from a live loader, a terminal): a reader
    /// whose next block is not there within `patience` says it would wait
    /// ([`LineReader::would_wait`](crate::LineReader::would_wait)), so that its caller can
    /// flush what it wrote.
    pub fn live(mut self, patience: Duration) -> Self {
        self.patience = Some(patience);
        self
    }

    /// Whether the next block (or the end) is there, waited for up to the patience of a
    /// [`live`](Self::live) source; always for another.
    pub(crate) fn ready(&mut self) -> bool {
        let Some(patience) = self.patience else {
            return true;
        };
        if self.done || self.received.is_some() {
            return true;
        }
        match self.full.recv_timeout(patience) {
            Ok(message) => {
                self.received = Some(message);
                true
            }
            Err(RecvTimeoutError::Timeout) => false,
            // The thread ended: the end is there.
            Err(RecvTimeoutError::Disconnected) => true,
        }
    }

    /// The next block and the number of its bytes from [`GAP`]; `None` at the end.
    pub(crate) fn next_block(&mut self) -> io::Result<Option<(Vec<u8>, usize)>> {
        if self.done {
            return Ok(None);
        }
        let message = match self.received.take() {
            Some(message) => Ok(message),
            None => self.full.recv(),
        };
        match message {
            Ok(Ok((block, n))) if n > 0 => Ok(Some((block, n))),
            Ok(Err(e)) => {
                self.done = true;
                Err(e)
            }
            // The end: an empty block, or the thread gone.
            Ok(Ok(_)) | Err(_) => {
                self.done = true;
                Ok(None)
            }
        }
    }

    /// Gives a used block back to be filled again.
    pub(crate) fn give_back(&mut self, block: Vec<u8>) {
        // The thread may have ended at the end of the source.
        let _ = self.empty.try_send(block);
    }
}

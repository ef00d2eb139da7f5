//! Standard output written by a thread of its own.
//!
//! Annotating a large log is a read, some work per line and a write. The write of a large output
//! to a file costs about as much as the work (the kernel copies every byte into the page cache),
//! so it is done on the second core: the annotator fills a buffer, hands it over and fills the
//! next while the first is written. The bytes and their order are those of a plain buffered
//! writer; only the time differs.
//!
//! Memory stays bounded: [`BUFFERS`] buffers of [`IO_BUFFER`](crate::IO_BUFFER) bytes go round
//! between the two threads, and the annotator waits when all of them are full.
//!
//! Output can also be held back, up to a limit, so that it can still be taken back: a one-pass
//! annotation that finds the log does not fit before the limit leaves nothing written, as a
//! first pass would have. Held buffers are kept as they are, not copied. Output to the end of a
//! regular file is not held: it is written at once, and taken back by cutting the file back to
//! its length before (the file is then as it was; memory and time are spared).

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// How many buffers go round: one being filled, one being written, one ready.
const BUFFERS: usize = 3;

/// A buffered writer of standard output whose writes happen on another thread.
pub(crate) struct OutputThread {
    buffer: Vec<u8>,
    capacity: usize,
    /// Full buffers to the writing thread; `None` once it has stopped.
    full: Option<SyncSender<Vec<u8>>>,
    /// Written buffers back from it.
    empty: Receiver<Vec<u8>>,
    /// While output is held: asks it to prepare a buffer to hold output, and takes those it
    /// prepared.
    prepare: Option<(SyncSender<()>, Receiver<Vec<u8>>)>,
    thread: Option<JoinHandle<io::Result<()>>>,
    /// Full buffers held back, and how many more bytes may be.
    held: Vec<Vec<u8>>,
    hold: usize,
    holding: bool,
    /// What was held back went out on a flush, not for growing past the hold.
    flushed: bool,
    /// While this says so, a flush keeps what is held back (see
    /// [`hold_while`](OutputThread::hold_while)).
    undecided: Option<Box<dyn Fn() -> bool>>,
    /// Where output that can be taken back is written instead of held.
    retract: Option<Retract>,
}

impl OutputThread {
    /// Standard output, written in blocks of `capacity` bytes; the first `hold` bytes are held
    /// back until there are more, or until [`finish`](OutputThread::finish).
    pub(crate) fn stdout(capacity: usize, hold: usize) -> io::Result<Self> {
        // A descriptor of its own, unbuffered: `Stdout` would look for line ends in every block.
        use std::os::fd::AsFd;
        let out = File::from(io::stdout().as_fd().try_clone_to_owned()?);
        let retract = if hold > 0 {
            Retract::at_end(&out)
        } else {
            None
        };
        Ok(OutputThread::new(out, capacity, hold, retract))
    }

    fn new(
        mut sink: impl Write + Send + 'static,
        capacity: usize,
        hold: usize,
        retract: Option<Retract>,
    ) -> Self {
        let capacity = capacity.max(1);
        // The buffers that hold output: prepared by the writing thread one ahead of the need
        // (asked for as each is taken), and handed over at once when released. Preparing them
        // all at the start costs a small log 13 ms of page faults. Once written, all but the few
        // that go round are dropped.
        let held = if hold > 0 && retract.is_none() {
            hold / capacity + 1
        } else {
            0
        };
        let (full, to_write) = sync_channel::<Vec<u8>>(BUFFERS + held);
        let (written, empty) = sync_channel::<Vec<u8>>(BUFFERS);
        let (ready, prepared) = sync_channel::<Vec<u8>>(1);
        let (want, wanted) = sync_channel::<()>(1);
        for _ in 1..BUFFERS {
            // Cannot fail: the receiver is alive and the channel has room.
            let _ = written.send(Vec::with_capacity(capacity));
        }
        let thread = std::thread::spawn(move || -> io::Result<()> {
            // Nothing is written while output is held: meanwhile this thread touches the memory
            // of the buffers that will hold it, as they are asked for (a first touch costs a page
            // fault a page). It goes on to write once output is no longer held (the other side
            // lets go of the channels).
            for () in wanted.iter().take(held) {
                // Written, not only allocated: zeroed memory from the system is not touched yet.
                let mut buffer = Vec::with_capacity(capacity);
                buffer.resize(capacity, 1);
                buffer.clear();
                if ready.send(buffer).is_err() {
                    break;
                }
            }
            drop((ready, wanted));
            for mut buffer in to_write {
                sink.write_all(&buffer).map_err(Failed::wrap)?;
                buffer.clear();
                // Beyond the buffers that go round (held ones, released), buffers are dropped:
                // a few buffers stay in the caches. The other side may be gone (it stopped
                // early): nothing more to hand back.
                let _ = written.try_send(buffer);
            }
            sink.flush().map_err(Failed::wrap)
        });
        OutputThread {
            buffer: Vec::with_capacity(capacity),
            capacity,
            full: Some(full),
            empty,
            prepare: (held > 0).then_some((want, prepared)),
            thread: Some(thread),
            held: Vec::new(),
            hold,
            holding: hold > 0,
            flushed: false,
            undecided: None,
            retract,
        }
    }

    /// Keeps what is held back held through a flush while `undecided` says the output may still
    /// be refused (a log that is blank so far).
    pub(crate) fn hold_while(&mut self, undecided: impl Fn() -> bool + 'static) {
        self.undecided = Some(Box::new(undecided));
    }

    /// Why what was held back was written: a flush (the input paused), or it outgrew the hold.
    pub(crate) fn released_on_flush(&self) -> bool {
        self.flushed
    }

    /// Whether output went beyond what is held back: then it is being written.
    pub(crate) fn released(&self) -> bool {
        !self.holding
    }

    /// Drops what is held back, unwritten (or takes back what was written of it), and stops.
    pub(crate) fn discard(mut self) -> io::Result<()> {
        self.held.clear();
        self.buffer.clear();
        self.holding = false;
        self.prepare = None;
        // Nothing more to write: whatever the thread says is of no use.
        let _ = self.finish_mut();
        match self.retract.take() {
            Some(retract) => retract.take_back(),
            None => Ok(()),
        }
    }

    /// Lets what is held back go to the writing thread, without waiting for it to be written.
    fn release(&mut self) -> io::Result<()> {
        self.holding = false;
        // No more buffers to prepare: the writing thread goes on to write.
        self.prepare = None;
        for buffer in std::mem::take(&mut self.held) {
            // The channel has room for them all (unless flushes handed over short buffers: then
            // this waits for the writing thread, which does not wait on this one).
            let sent = self
                .full
                .as_ref()
                .is_some_and(|full| full.send(buffer).is_ok());
            if !sent {
                return Err(self.stop());
            }
        }
        Ok(())
    }

    /// Hands `buffer` to the writing thread and returns an empty one.
    fn send(&mut self, buffer: Vec<u8>) -> io::Result<Vec<u8>> {
        let sent = match &self.full {
            Some(full) => full.send(buffer).is_ok(),
            None => false,
        };
        if !sent {
            return Err(self.stop());
        }
        match self.empty.recv() {
            Ok(buffer) => Ok(buffer),
            // The thread returned: it failed to write.
            Err(_) => Err(self.stop()),
        }
    }

    /// Hands the current buffer to the writing thread (or holds it back) and takes an empty one.
    fn hand_over(&mut self) -> io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        if self.holding {
            if self.buffer.len() > self.hold {
                self.release()?;
            } else if self.retract.is_some() {
                // Written now, and taken back if need be.
                self.hold -= self.buffer.len();
            } else {
                self.hold -= self.buffer.len();
                // A buffer the writing thread prepared, if one is ready.
                let full = self.buffer.len() >= self.capacity;
                let fresh = self.prepare.as_ref().and_then(|(want, prepared)| {
                    // The next one, asked for now (unless asked already) when output fills
                    // buffers; not for one that a flush hands over part full.
                    if full {
                        let _ = want.try_send(());
                    }
                    prepared.try_recv().ok()
                });
                let fresh = fresh.unwrap_or_else(|| Vec::with_capacity(self.capacity));
                self.held.push(std::mem::replace(&mut self.buffer, fresh));
                return Ok(());
            }
        }
        let buffer = std::mem::take(&mut self.buffer);
        self.buffer = self.send(buffer)?;
        Ok(())
    }

    /// Stops the writing thread and returns why it stopped early.
    fn stop(&mut self) -> io::Error {
        self.full = None;
        self.prepare = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => e,
            Some(Err(_)) => io::Error::other("the output thread panicked"),
            Some(Ok(Ok(()))) | None => io::Error::other("the output thread has stopped"),
        }
    }

    /// Writes what is left and waits until all of it is written.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.finish_mut()
    }

    fn finish_mut(&mut self) -> io::Result<()> {
        if self.holding {
            self.release()?;
        }
        if let Some(full) = self.full.take() {
            if !self.buffer.is_empty() {
                let buffer = std::mem::take(&mut self.buffer);
                // A failed send means the thread stopped; join says why.
                let _ = full.send(buffer);
            }
            drop(full);
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("the output thread panicked")),
            None => Ok(()),
        }
    }
}

impl Write for OutputThread {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.write_all(data)?;
        Ok(data.len())
    }

    #[inline]
    fn write_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while self.buffer.len() + data.len() > self.capacity {
            // Fill the buffer up (a large write goes out in buffers of the usual size).
            let room = self.capacity.saturating_sub(self.buffer.len());
            let (now, later) = data.split_at(room.min(data.len()));
            self.buffer.extend_from_slice(now);
            self.hand_over()?;
            data = later;
        }
        self.buffer.extend_from_slice(data);
        Ok(())
    }

    /// Hands over what is buffered, and what is held back (unless [undecided](OutputThread::hold_while)):
    /// the bytes are written soon after, in order. A caller flushes what it has decided, e.g.
    /// when its input pauses.
    ///
    /// It does not wait for the write: [`OutputThread::finish`] does.
    fn flush(&mut self) -> io::Result<()> {
        if self.holding && !self.undecided.as_ref().is_some_and(|u| u()) {
            self.flushed = true;
            self.hand_over()?;
            return self.release();
        }
        self.hand_over()
    }
}

impl Drop for OutputThread {
    fn drop(&mut self) {
        // Like `BufWriter`: what is buffered is written, and an error here has nowhere to go.
        let _ = self.finish_mut();
    }
}

/// A regular file that output is added to the end of, and its length before: output written
/// to it can be taken back.
struct Retract {
    file: File,
    len: u64,
}

impl Retract {
    /// `file`, when it is a regular file written at its end: `>` in a shell, or `>>` onto an
    /// empty file (an appending descriptor stands at 0 until its first write).
    fn at_end(file: &File) -> Option<Retract> {
        let meta = file.metadata().ok()?;
        let mut file = file.try_clone().ok()?;
        let at = file.stream_position().ok()?;
        (meta.is_file() && at == meta.len()).then_some(Retract {
            file,
            len: meta.len(),
        })
    }

    /// Cuts the file back to its length before, and puts its position back there.
    fn take_back(mut self) -> io::Result<()> {
        self.file.set_len(self.len)?;
        self.file.seek(SeekFrom::Start(self.len)).map(drop)
    }
}

/// An error of the writing thread, told apart from the reader's errors that pass through the
/// same calls (see [`failed`]).
#[derive(Debug)]
struct Failed(io::Error);

impl Failed {
    fn wrap(e: io::Error) -> io::Error {
        io::Error::new(e.kind(), Failed(e))
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "standard output: {}", self.0)
    }
}

impl std::error::Error for Failed {}

/// Whether `e` is a failure to write the output (rather than to read the input).
pub(crate) fn failed(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Failed>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A sink that keeps what it is given, in the order of the calls.
    #[derive(Clone, Default)]
    struct Kept(Arc<Mutex<Vec<u8>>>);

    impl Write for Kept {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn bytes_arrive_whole_and_in_order() {
        let kept = Kept::default();
        let mut out = OutputThread::new(kept.clone(), 64, 0, None);
        let mut expected = Vec::new();
        for i in 0..10_000u32 {
            // Pieces of every size, some larger than a buffer.
            let piece: Vec<u8> = (0..(i % 150)).map(|j| (i + j) as u8).collect();
            out.write_all(&piece).expect("write");
            expected.extend_from_slice(&piece);
            if i % 997 == 0 {
                out.flush().expect("flush");
            }
        }
        out.finish().expect("finish");
        assert_eq!(*kept.0.lock().expect("lock"), expected);
    }

    /// A sink that fails after some bytes, like a closed pipe.
    struct Closes(usize);

    impl Write for Closes {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            if self.0 < data.len() {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            self.0 -= data.len();
            Ok(data.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_reaches_the_writer() {
        let mut out = OutputThread::new(Closes(1000), 100, 0, None);
        let error = (0..100_000)
            .find_map(|_| out.write_all(b"0123456789").err())
            .expect("an error");
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
        assert!(failed(&error), "{error}");
    }

    #[test]
    fn held_output_is_written_past_the_limit_or_at_the_end_or_never() {
        let pieces: Vec<Vec<u8>> = (0..200u8).map(|i| vec![i; usize::from(i % 13)]).collect();
        let all: Vec<u8> = pieces.concat();
        for hold in [0, 10, 100, 10_000] {
            // Released past the limit, or at the end.
            let kept = Kept::default();
            let mut out = OutputThread::new(kept.clone(), 16, hold, None);
            for (k, piece) in pieces.iter().enumerate() {
                out.write_all(piece).unwrap();
                let written: usize = pieces[..=k].iter().map(Vec::len).sum();
                if written > hold + 16 {
                    assert!(out.released(), "hold {hold}");
                }
            }
            out.finish().unwrap();
            assert!(*kept.0.lock().unwrap() == all, "hold {hold}");
            // Discarded before the limit, kept held through a flush: nothing written.
            let kept = Kept::default();
            let mut out = OutputThread::new(kept.clone(), 16, 10_000, None);
            out.write_all(&all).unwrap();
            out.hold_while(|| true);
            out.flush().unwrap();
            assert!(!out.released());
            out.discard().unwrap();
            assert!(kept.0.lock().unwrap().is_empty());
        }
    }

    #[test]
    fn a_flush_writes_what_is_held() {
        // What is decided goes out when the caller flushes (its input paused): all of it, in
        // order, and what follows too.
        let kept = Kept::default();
        let mut out = OutputThread::new(kept.clone(), 16, 10_000, None);
        out.write_all(b"decided\n").unwrap();
        out.flush().unwrap();
        assert!(out.released() && out.released_on_flush());
        out.write_all(b"then more\n").unwrap();
        out.finish().unwrap();
        assert_eq!(*kept.0.lock().unwrap(), b"decided\nthen more\n");
    }

    #[test]
    fn output_written_to_the_end_of_a_file_is_taken_back_there() {
        let path = std::env::temp_dir().join(format!("bpflog-output-{}", std::process::id()));
        std::fs::write(&path, b"before\n").unwrap();
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        // Not at its end: nothing to take back to.
        assert!(Retract::at_end(&file).is_none());
        file.seek(SeekFrom::End(0)).unwrap();
        let piece = [b'x'; 10];
        for (pieces, released) in [(50, false), (500, true)] {
            let retract = Retract::at_end(&file);
            assert!(retract.is_some());
            let mut out = OutputThread::new(file.try_clone().unwrap(), 16, 1000, retract);
            for _ in 0..pieces {
                out.write_all(&piece).unwrap();
            }
            assert_eq!(out.released(), released);
            if released {
                out.finish().unwrap();
            } else {
                out.flush().unwrap();
                out.discard().unwrap();
            }
        }
        // The first output was taken back, the second written after what was there before.
        let after = std::fs::read(&path).unwrap();
        assert_eq!(after, [&b"before\n"[..], &[b'x'; 5000]].concat());
        assert_eq!(file.stream_position().unwrap(), after.len() as u64);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_failed_last_write_reaches_finish() {
        let mut out = OutputThread::new(Closes(5), 100, 0, None);
        out.write_all(b"0123456789").expect("buffered");
        let error = out.finish().expect_err("the write fails");
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
    }
}

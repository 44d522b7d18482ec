//! Many files hinted to the system in the order they will be read, by a thread of
//! their own, at most a window of bytes beyond the farthest point the readers have
//! reached.
//!
//! Why one ordered stream: when every task hinted its own files (fast5 files read by
//! a pool, each task opening a group of files), the hints of tasks far apart reached
//! the disk interleaved, so the files read first came in last: 50 multi-read files
//! cold on 16 cores took 0.698 s against 0.435 s for the disk alone; one stream in
//! reading order, paced by the readers, 0.457 s (benchmarks/results/scaling.md). Why a
//! thread: a hint blocks while the device's queue is full (see `read_ahead`).

use super::read_ahead;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// The thread checks the readers' progress after hinting this many bytes.
const STEP_BYTES: u64 = 1 << 20;

/// A stream of files hinted in order. Files are added with `push`, in the order they
/// will be read, and numbered from 0 in that order; the readers say how far they have
/// got with `reached` (a file's number and how far into it). The thread learns each
/// file's size as it opens it, so callers need not measure anything. Dropping it
/// stops the thread.
pub struct FileHints {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// The process that started the thread: a forked child has none to stop (and its
    /// copy of the lock may be held by a thread it does not have).
    owner: u32,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Files added and not yet taken by the thread, in reading order.
    queue: VecDeque<PathBuf>,
    /// Files added so far (the next one's number).
    pushed: u64,
    /// The files the thread has taken and the readers have not passed: where each
    /// starts in the stream and its size, the first being file `first_open`.
    opened: VecDeque<(u64, u64)>,
    first_open: u64,
    /// Where the next file the thread takes starts in the stream.
    stream_end: u64,
    /// The farthest point a reader has reached: (file, its part done, as a fraction
    /// `done / of`).
    reached: (u64, u64, u64),
    closed: bool,
}

impl State {
    /// Where the readers are in the stream; None when they are past every file the
    /// thread has opened (it is behind them: no reason to wait).
    fn readers_at(&self) -> Option<u64> {
        let (file, done, of) = self.reached;
        let (start, len) = *self.opened.get(file.checked_sub(self.first_open)? as usize)?;
        let into = (u128::from(len) * u128::from(done) / u128::from(of.max(1))).min(u128::from(len)) as u64;
        Some(start.saturating_add(into))
    }

    /// Forget the files before `file` (the readers have passed them).
    fn passed(&mut self, file: u64) {
        while self.first_open < file && !self.opened.is_empty() {
            self.opened.pop_front();
            self.first_open += 1;
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl FileHints {
    /// A hinting thread `window` bytes ahead of the readers; None when the window is 0
    /// or no thread can start (reads then go on without hints).
    pub fn start(window: u64) -> Option<FileHints> {
        if window == 0 {
            return None;
        }
        let shared = Arc::new(Shared { state: Mutex::new(State::default()), changed: Condvar::new() });
        let theirs = shared.clone();
        let thread = std::thread::Builder::new()
            .name("h5turbo-file-hints".into())
            .spawn(move || hint_in_order(&theirs, window))
            .ok()?;
        Some(FileHints { shared, thread: Some(thread), owner: std::process::id() })
    }

    /// Whether this is a forked copy: the thread is not here, and the lock may have
    /// been held by it at the fork, for ever. A copy hints nothing and takes no lock.
    fn forked(&self) -> bool {
        std::process::id() != self.owner
    }

    /// The next file the readers will read; returns its number (0 in a forked copy,
    /// which keeps no count).
    pub fn push(&self, path: PathBuf) -> u64 {
        if self.forked() {
            return 0;
        }
        let mut state = self.shared.lock();
        state.queue.push_back(path);
        let number = state.pushed;
        state.pushed += 1;
        drop(state);
        self.shared.changed.notify_all();
        number
    }

    /// A reader has reached file `file`, `done / of` of the way into it (`done` reads
    /// of `of`, say). Only the farthest point counts.
    pub fn reached(&self, file: u64, done: u64, of: u64) {
        if self.forked() {
            return;
        }
        let mut state = self.shared.lock();
        let (f, d, o) = state.reached;
        // done/of > d/o, compared without division
        let further = file > f || (file == f && u128::from(done) * u128::from(o.max(1)) > u128::from(d) * u128::from(of.max(1)));
        if further {
            state.reached = (file, done, of);
            state.passed(file);
            drop(state);
            self.shared.changed.notify_all();
        }
    }
}

impl Drop for FileHints {
    fn drop(&mut self) {
        if self.forked() {
            return;
        }
        self.shared.lock().closed = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The thread: each file in turn, hinted from its start in steps, waiting while the
/// next step would begin `window` bytes or more beyond the readers. A file that cannot
/// be opened, or is not a regular file, counts 0 bytes (its reader reports the error).
fn hint_in_order(shared: &Shared, window: u64) {
    while let Some(path) = next_file(shared) {
        let file = open_regular(&path);
        let len = file.as_ref().and_then(|f| f.metadata().ok()).map_or(0, |m| m.len());
        let base = {
            let mut state = shared.lock();
            let base = state.stream_end;
            state.stream_end = base.saturating_add(len);
            state.opened.push_back((base, len));
            let reached = state.reached.0;
            state.passed(reached);
            base
        };
        let Some(file) = file else { continue };
        let mut at = 0;
        while at < len {
            if !wait_for_room(shared, base.saturating_add(at), window) {
                return;
            }
            let step = STEP_BYTES.min(len - at);
            read_ahead::hint(&file, at, step);
            at += step;
        }
    }
}

/// A regular file opened for reading; None for anything else. Opened without blocking:
/// a FIFO among the paths must not hold the thread (and whoever waits to stop it).
fn open_regular(path: &std::path::Path) -> Option<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// The next file added, waiting for one; None once closed.
fn next_file(shared: &Shared) -> Option<PathBuf> {
    let mut state = shared.lock();
    loop {
        if state.closed {
            return None;
        }
        if let Some(path) = state.queue.pop_front() {
            return Some(path);
        }
        state = shared.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
    }
}

/// Wait until `position` is less than `window` bytes beyond the readers (or they are
/// past every file opened); false once closed.
fn wait_for_room(shared: &Shared, position: u64, window: u64) -> bool {
    let mut state = shared.lock();
    loop {
        if state.closed {
            return false;
        }
        match state.readers_at() {
            Some(at) if position >= at.saturating_add(window) => {}
            _ => return true,
        }
        state = shared.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn files(tag: &str, sizes: &[usize]) -> (PathBuf, Vec<PathBuf>) {
        let dir = std::env::temp_dir().join(format!("h5turbo-file-hints-{}-{}", tag, std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let paths = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let p = dir.join(format!("{}.bin", i));
                std::fs::write(&p, vec![7u8; n]).unwrap();
                p
            })
            .collect();
        (dir, paths)
    }

    /// Wait (up to a second) for the thread to reach a state.
    fn eventually(hints: &FileHints, done: impl Fn(&State) -> bool) -> bool {
        (0..1000).any(|_| {
            let reached = done(&hints.shared.lock());
            if !reached {
                std::thread::sleep(Duration::from_millis(1));
            }
            reached
        })
    }

    /// A forked child's copy: the lock held (by the parent's thread at the fork) must
    /// not stop its readers.
    #[test]
    fn a_forked_copy_takes_no_lock() {
        let mut hints = FileHints::start(1 << 20).unwrap();
        hints.owner = hints.owner.wrapping_add(1); // as seen from a child process
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            let held = hints.shared.lock();
            scope.spawn(|| {
                hints.push(PathBuf::from("a.fast5"));
                hints.reached(0, 1, 2);
                done.send(()).unwrap();
            });
            let returned = finished.recv_timeout(Duration::from_secs(10)).is_ok();
            drop(held);
            assert!(returned, "push or reached waited for the lock in a forked copy");
        });
        assert_eq!(hints.shared.lock().pushed, 0);
        hints.owner = std::process::id();
    }

    #[test]
    fn no_window_no_thread() {
        assert!(FileHints::start(0).is_none());
    }

    #[test]
    fn waits_for_the_readers_then_goes_on() {
        let (dir, paths) = files("pace", &[3 << 20, 3 << 20, 3 << 20]);
        let hints = FileHints::start(1 << 20).unwrap();
        for (i, p) in paths.iter().enumerate() {
            assert_eq!(hints.push(p.clone()), i as u64);
        }
        // the readers at the start: the thread hints 1 MiB of file 0 and waits
        assert!(eventually(&hints, |s| s.opened.len() == 1 && s.queue.len() == 2));
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(hints.shared.lock().queue.len(), 2, "ran ahead of its window");
        // the readers half way into file 1: file 0 forgotten, files 1 and 2 opened, and
        // the thread waits 1 MiB past the readers (at file 2's start)
        hints.reached(1, 1, 2);
        assert!(eventually(&hints, |s| s.queue.is_empty() && s.first_open == 1 && s.opened.len() == 2));
        assert_eq!(hints.shared.lock().readers_at(), Some((3 << 20) + (3 << 19)));
        assert_eq!(hints.shared.lock().opened[1], (6 << 20, 3 << 20));
        // a reader behind the farthest one does not pull the pace back
        hints.reached(0, 5, 6);
        assert_eq!(hints.shared.lock().reached, (1, 1, 2));
        drop(hints);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_does_not_hold_the_thread() {
        let (dir, paths) = files("fifo", &[1 << 20]);
        let fifo = dir.join("fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a plain system call with a valid C string
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let hints = FileHints::start(64 << 20).unwrap();
        hints.push(fifo);
        hints.push(paths[0].clone());
        // the FIFO has no writer: a blocking open would wait for ever
        assert!(eventually(&hints, |s| s.opened.len() == 2));
        assert_eq!(hints.shared.lock().opened[0], (0, 0));
        drop(hints);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_file_counts_nothing_and_dropping_never_hangs() {
        let (dir, paths) = files("drop", &[2 << 20, 2 << 20]);
        let hints = FileHints::start(1 << 20).unwrap();
        hints.push(dir.join("missing.bin"));
        for p in &paths {
            hints.push(p.clone());
        }
        // file 0 is missing (0 bytes): file 1 starts at 0 and the thread waits in it
        assert!(eventually(&hints, |s| s.opened.len() == 2));
        assert_eq!(hints.shared.lock().opened[1], (0, 2 << 20));
        drop(hints); // while the thread waits for the readers
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

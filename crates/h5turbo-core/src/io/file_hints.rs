//! Many files hinted to the system in the order they will be read, by a thread of
//! their own, at most a window of bytes beyond the farthest point the readers have
//! reached. Positions are the caller's: each file is pushed with where it starts in the
//! stream, and readers report positions in the same terms.
//!
//! Why one ordered stream: when every task hinted its own files (fast5 files read by
//! a pool, each task opening a group of files), the hints of tasks far apart reached
//! the disk interleaved, so the files read first came in last: 50 multi-read files
//! cold on 2 cores gave their first reads after 0.5-0.6 s (the disk's time for all of
//! them) and finished at 1.43x their warm time. One stream in reading order, paced by
//! the readers, gave 1.29x (benchmarks/results/cold.md). Why a thread: a hint blocks
//! while the device's queue is full (see `read_ahead`).

use super::read_ahead;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// The thread checks the readers' progress after hinting this many bytes.
const STEP_BYTES: u64 = 1 << 20;

/// A stream of files hinted in order. Files are added with `push`, in the order they
/// will be read, each with its position in the stream (where it starts, in bytes:
/// typically the sizes of the files before it summed); the readers say how far they
/// have got with `reached`. Dropping it stops the thread.
pub struct FileHints {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Files added and not yet taken by the thread, in reading order, with where each
    /// starts in the stream.
    queue: VecDeque<(PathBuf, u64)>,
    /// The farthest position any reader has reached.
    reached: u64,
    closed: bool,
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
        Some(FileHints { shared, thread: Some(thread) })
    }

    /// The next file the readers will read, starting at `start` in the stream.
    pub fn push(&self, path: PathBuf, start: u64) {
        self.shared.lock().queue.push_back((path, start));
        self.shared.changed.notify_all();
    }

    /// A reader has reached `position` in the stream.
    pub fn reached(&self, position: u64) {
        let mut state = self.shared.lock();
        if position > state.reached {
            state.reached = position;
            drop(state);
            self.shared.changed.notify_all();
        }
    }
}

impl Drop for FileHints {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The thread: each file in turn, hinted from its start in steps, waiting while the
/// next step would begin `window` bytes or more beyond the readers. A file that cannot
/// be opened is skipped (its reader reports the error).
fn hint_in_order(shared: &Shared, window: u64) {
    while let Some((path, base)) = next_file(shared) {
        let Ok(file) = std::fs::File::open(&path) else { continue };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
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

/// The next file added, waiting for one; None once closed.
fn next_file(shared: &Shared) -> Option<(PathBuf, u64)> {
    let mut state = shared.lock();
    loop {
        if state.closed {
            return None;
        }
        if let Some(next) = state.queue.pop_front() {
            return Some(next);
        }
        state = shared.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
    }
}

/// Wait until `position` is less than `window` bytes beyond the readers; false once
/// closed.
fn wait_for_room(shared: &Shared, position: u64, window: u64) -> bool {
    let mut state = shared.lock();
    loop {
        if state.closed {
            return false;
        }
        if position < state.reached.saturating_add(window) {
            return true;
        }
        state = shared.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_window_no_thread() {
        assert!(FileHints::start(0).is_none());
    }

    #[test]
    fn stops_when_dropped_while_waiting_for_the_readers() {
        let dir = std::env::temp_dir().join(format!("h5turbo-file-hints-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let paths: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("{}.bin", i))).collect();
        for path in &paths {
            std::fs::write(path, vec![7u8; 3 << 20]).unwrap();
        }
        let hints = FileHints::start(1 << 20).unwrap();
        for (i, path) in paths.iter().enumerate() {
            hints.push(path.clone(), i as u64 * (3 << 20));
        }
        hints.push(dir.join("missing.bin"), 9 << 20); // skipped, not an error
        hints.reached(4 << 20);
        // the thread now waits for the readers past 4 MiB; dropping must not hang
        drop(hints);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn hints_every_file_once_the_readers_move_on() {
        let dir = std::env::temp_dir().join(format!("h5turbo-file-hints-all-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.bin");
        std::fs::write(&path, vec![1u8; 2 << 20]).unwrap();
        let hints = FileHints::start(1 << 20).unwrap();
        hints.push(path.clone(), 0);
        hints.reached(u64::MAX);
        // with the readers at the end, the queue drains and the thread waits for more
        for _ in 0..1000 {
            if hints.shared.lock().queue.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(hints.shared.lock().queue.is_empty());
        drop(hints);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! Batches handed out in file order, with the bytes ahead of them hinted to the system.
//!
//! Cold, a thread that reads a batch and then decodes it leaves the disk idle while it
//! decodes. Here every thread takes the next batch in address order, and before reading
//! it makes sure the batches up to `window` bytes further on have been hinted
//! (`ReadAt::prefetch`): the system reads them into its page cache while the threads
//! decode, and the positional reads that follow find their bytes there or on the way.
//! One stream in address order also suits disks that seek and read-ahead heuristics.

use super::plan::Batch;
use crate::error::Result;
use crate::io::ReadAt;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The hints of one read: how far they have gone.
struct Hints<'a> {
    source: &'a dyn ReadAt,
    batches: &'a [Batch],
    window: u64,
    /// Bytes of all batches before batch i (`starts[batches.len()]` is the total).
    starts: Vec<u64>,
    /// The first batch not yet hinted.
    next: Mutex<usize>,
}

impl Hints<'_> {
    /// Hint every batch that begins less than `window` bytes (of batches) after the
    /// start of batch `i`, batch `i` included, that no thread has hinted yet.
    fn reach(&self, i: usize) {
        let limit = self.starts[i].saturating_add(self.window);
        let (from, to) = {
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            let from = *next;
            let mut to = from.max(i + 1).min(self.batches.len());
            while to < self.batches.len() && self.starts[to] < limit {
                to += 1;
            }
            *next = to.max(from);
            (from, to)
        };
        // The system calls run outside the lock: one thread's hints never hold up another.
        for batch in self.batches.get(from..to).unwrap_or(&[]) {
            self.source.prefetch(batch.start, batch.len);
        }
    }
}

/// Run `f` on every batch with per-thread state from `init`: on the current pool when
/// `parallel`, else on the calling thread, in address order either way, reading
/// `window` bytes ahead (0: no hints). Stops at the first error, which it returns.
pub(super) fn for_each_batch<S>(
    source: &dyn ReadAt,
    batches: &[Batch],
    window: u64,
    parallel: bool,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, &Batch) -> Result<()> + Sync + Send,
) -> Result<()> {
    let hints = (window > 0 && batches.len() > 1 && !source.in_memory()).then(|| Hints {
        source,
        batches,
        window,
        starts: std::iter::once(0)
            .chain(batches.iter().scan(0u64, |sum, b| {
                *sum = sum.saturating_add(b.len);
                Some(*sum)
            }))
            .collect(),
        next: Mutex::new(0),
    });
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let work = |state: &mut S| -> Result<()> {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= batches.len() || failed.load(Ordering::Relaxed) {
                return Ok(());
            }
            if let Some(h) = &hints {
                h.reach(i);
            }
            if let Err(e) = f(state, &batches[i]) {
                failed.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
    };
    let workers = if parallel { rayon::current_num_threads().min(batches.len()) } else { 1 };
    if workers <= 1 {
        return work(&mut init());
    }
    (0..workers).into_par_iter().try_for_each(|_| work(&mut init()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemSource;
    use std::sync::Mutex as StdMutex;

    /// A source that records its hints and reports itself on disk.
    struct Recorder {
        inner: MemSource,
        hinted: StdMutex<Vec<(u64, u64)>>,
    }

    impl ReadAt for Recorder {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
            self.inner.read_exact_at(buf, offset)
        }
        fn len(&self) -> u64 {
            self.inner.len()
        }
        fn prefetch(&self, offset: u64, len: u64) {
            self.hinted.lock().unwrap().push((offset, len));
        }
    }

    fn batches(n: u64, len: u64) -> Vec<Batch> {
        (0..n).map(|i| Batch { start: i * len, len, tasks: Vec::new() }).collect()
    }

    #[test]
    fn hints_run_a_window_ahead_and_cover_every_batch_once() {
        let src = Recorder { inner: MemSource::new(vec![0; 1000]), hinted: StdMutex::new(Vec::new()) };
        let all = batches(10, 100);
        let seen = StdMutex::new(Vec::new());
        for_each_batch(&src, &all, 300, false, || (), |_, b| {
            // when batch b is read, everything up to 300 bytes on has been hinted
            let hinted = src.hinted.lock().unwrap().len() as u64;
            assert!(hinted >= (b.start / 100 + 3).min(10), "batch at {} with {} hinted", b.start, hinted);
            seen.lock().unwrap().push(b.start);
            Ok(())
        })
        .unwrap();
        assert_eq!(*seen.lock().unwrap(), (0..10).map(|i| i * 100).collect::<Vec<_>>());
        assert_eq!(*src.hinted.lock().unwrap(), (0..10).map(|i| (i * 100, 100)).collect::<Vec<_>>());
    }

    #[test]
    fn a_zero_window_hints_nothing_and_an_error_stops_the_loop() {
        let src = Recorder { inner: MemSource::new(vec![0; 1000]), hinted: StdMutex::new(Vec::new()) };
        let all = batches(10, 100);
        let done = AtomicUsize::new(0);
        let fail_at_300 = |_: &mut (), b: &Batch| {
            done.fetch_add(1, Ordering::Relaxed);
            match b.start {
                300 => Err(crate::error::Error::format("bad batch")),
                _ => Ok(()),
            }
        };
        assert!(for_each_batch(&src, &all, 0, false, || (), fail_at_300).is_err());
        assert_eq!(done.load(Ordering::Relaxed), 4);
        assert!(src.hinted.lock().unwrap().is_empty());
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        assert!(pool.install(|| for_each_batch(&src, &all, 1 << 20, true, || (), fail_at_300)).is_err());
    }
}

//! Batches handed out in file order, with the bytes ahead of them hinted to the system.
//!
//! Cold, a thread that reads a batch and then decodes it leaves the disk idle while it
//! decodes. Here the threads take batches in address order (one stream, which the
//! system's own read-ahead and disks that seek both favour), and a thread of the read's
//! own keeps the batches up to `window` bytes beyond the one being taken hinted
//! (`ReadAt::prefetch`): the system reads them into its page cache while the threads
//! decode, and the positional reads that follow find their bytes there or on the way.
//! The hints run on their own thread because a hint blocks while the device's queue is
//! full (measured: 256 MiB of hints took 0.11-0.17 s, about the disk's own time), which
//! would stall a decoding thread.

use super::plan::Batch;
use crate::error::Result;
use crate::io::ReadAt;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Reads smaller than this get no hint thread: starting one costs more than it saves.
const MIN_HINTED_BYTES: u64 = 4 << 20;

/// Hint batches while they begin less than `window` bytes (of batches) after the start
/// of the next batch to be taken (`taken`: how many have been), skipping those taken
/// already, until every batch is hinted or `stop` is set.
fn hint_ahead(source: &dyn ReadAt, batches: &[Batch], starts: &[u64], window: u64, taken: &AtomicUsize, stop: &AtomicBool) {
    let mut hinted = 1; // the first batch is being read already
    while hinted < batches.len() && !stop.load(Ordering::Relaxed) {
        let current = taken.load(Ordering::Relaxed).min(batches.len() - 1);
        let limit = starts[current].saturating_add(window);
        if hinted < current {
            hinted = current; // taken already: too late to hint
        } else if starts[hinted] < limit {
            source.prefetch(batches[hinted].start, batches[hinted].len);
            hinted += 1;
        } else {
            // woken by the next batch taken (a lost wake-up costs at most the timeout)
            std::thread::park_timeout(Duration::from_millis(2));
        }
    }
}

/// How batches are handed to threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Handout {
    /// All on the calling thread, in order.
    Serial,
    /// On the current pool, split as it likes (in address order when hinted).
    Pool,
    /// On the current pool, in order: a thread takes the next batch when it is done with
    /// its last, so results that must be combined in order wait for few predecessors.
    PoolInOrder,
}

/// Run `f` on every batch (with its index) with per-thread state from `init`, handed
/// out as `handout` says. Reads of `MIN_HINTED_BYTES` and more from a file with a
/// `window` (0: none) take their batches in address order with the hint thread ahead.
/// Stops at the first error, which it returns.
pub(super) fn for_each_batch<S>(
    source: &dyn ReadAt,
    batches: &[Batch],
    window: u64,
    handout: Handout,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize, &Batch) -> Result<()> + Sync + Send,
) -> Result<()> {
    let starts: Vec<u64> = batches
        .iter()
        .scan(0u64, |sum, b| {
            let start = *sum;
            *sum = sum.saturating_add(b.len);
            Some(start)
        })
        .collect();
    let total = batches.iter().fold(0u64, |sum, b| sum.saturating_add(b.len));
    let hinted = window > 0 && batches.len() > 1 && total >= MIN_HINTED_BYTES && !source.in_memory();
    if !hinted && handout == Handout::Pool {
        // Without hints, the pool's own split of the batches: measured, in-order
        // hand-out alone was slower cold (the threads read and decode in step).
        return batches.par_iter().enumerate().try_for_each_init(init, |s, (i, b)| f(s, i, b));
    }
    let order = InOrder::default();
    std::thread::scope(|scope| {
        let hinter = hinted.then(|| {
            let (starts, order) = (&starts, &order);
            std::thread::Builder::new()
                .name("h5turbo-hints".into())
                .spawn_scoped(scope, move || hint_ahead(source, batches, starts, window, &order.next, &order.stop))
                .ok()
        });
        let hinter = hinter.flatten();
        let wake_hinter = || {
            if let Some(h) = &hinter {
                h.thread().unpark();
            }
        };
        // Also while unwinding: a worker's panic must not leave the hint thread waiting
        // for batches nobody will take (the scope would never end).
        let _stop = StopOnDrop(|| {
            order.stop.store(true, Ordering::Relaxed);
            wake_hinter();
        });
        order.run(batches, handout != Handout::Serial, init, wake_hinter, f)
    })
}

/// Run `f` on every item (with its index) in their order, on the current pool when
/// `parallel`: each thread takes the next item when it is done with its last. Stops at
/// the first error, which it returns.
pub(super) fn for_each_in_order<T: Sync, S>(
    items: &[T],
    parallel: bool,
    init: impl Fn() -> S + Sync + Send,
    f: impl Fn(&mut S, usize, &T) -> Result<()> + Sync + Send,
) -> Result<()> {
    InOrder::default().run(items, parallel, init, || (), f)
}

/// The shared state of an in-order hand-out.
#[derive(Default)]
struct InOrder {
    /// Items taken so far (the next one to take).
    next: AtomicUsize,
    stop: AtomicBool,
}

impl InOrder {
    fn run<T: Sync, S>(
        &self,
        items: &[T],
        parallel: bool,
        init: impl Fn() -> S + Sync + Send,
        on_take: impl Fn() + Sync,
        f: impl Fn(&mut S, usize, &T) -> Result<()> + Sync + Send,
    ) -> Result<()> {
        let work = |state: &mut S| -> Result<()> {
            loop {
                let i = self.next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() || self.stop.load(Ordering::Relaxed) {
                    return Ok(());
                }
                on_take();
                if let Err(e) = f(state, i, &items[i]) {
                    self.stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        };
        let workers = if parallel { rayon::current_num_threads().min(items.len()) } else { 1 };
        if workers <= 1 {
            work(&mut init())
        } else {
            (0..workers).into_par_iter().try_for_each(|_| work(&mut init()))
        }
    }
}

/// Runs its closure when dropped, on a normal end and while unwinding.
struct StopOnDrop<F: FnMut()>(F);

impl<F: FnMut()> Drop for StopOnDrop<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemSource;
    use std::sync::Mutex as StdMutex;
    use std::time::Duration;

    /// A source that records its hints (with the batch taken last when each came) and
    /// reports itself on disk.
    struct Recorder {
        inner: MemSource,
        taken: AtomicUsize,
        hinted: StdMutex<Vec<(u64, u64, usize)>>,
    }

    impl ReadAt for Recorder {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
            self.inner.read_exact_at(buf, offset)
        }
        fn len(&self) -> u64 {
            self.inner.len()
        }
        fn prefetch(&self, offset: u64, len: u64) {
            self.hinted.lock().unwrap().push((offset, len, self.taken.load(Ordering::SeqCst)));
        }
    }

    fn recorder() -> Recorder {
        Recorder { inner: MemSource::new(Vec::new()), taken: AtomicUsize::new(0), hinted: StdMutex::new(Vec::new()) }
    }

    const MIB: u64 = 1 << 20;

    fn batches(n: u64, len: u64) -> Vec<Batch> {
        (0..n).map(|i| Batch { start: i * len, len, tasks: Vec::new() }).collect()
    }

    #[test]
    fn hints_stay_within_the_window_ahead_and_come_once_in_order() {
        let src = recorder();
        let all = batches(20, MIB);
        let seen = StdMutex::new(Vec::new());
        for_each_batch(&src, &all, 3 * MIB, Handout::Serial, || (), |_, _, b| {
            src.taken.store((b.start / MIB) as usize, Ordering::SeqCst);
            seen.lock().unwrap().push(b.start);
            std::thread::sleep(Duration::from_millis(5));
            Ok(())
        })
        .unwrap();
        assert_eq!(*seen.lock().unwrap(), (0..20).map(|i| i * MIB).collect::<Vec<_>>());
        let hinted = src.hinted.lock().unwrap();
        assert!(!hinted.is_empty());
        for pair in hinted.windows(2) {
            assert!(pair[0].0 < pair[1].0, "hints out of order: {:?}", *hinted);
        }
        for &(offset, len, taken) in hinted.iter() {
            assert_eq!(len, MIB);
            // never a batch taken already; less than the window beyond the next one to take
            // (`taken` is recorded inside `f`, so it may lag the engine's count by one)
            assert!(offset > taken as u64 * MIB && offset < (taken as u64 + 2) * MIB + 3 * MIB, "{:?}", *hinted);
        }
    }

    #[test]
    fn a_panicking_worker_ends_the_read_instead_of_hanging_it() {
        let src = recorder();
        let all = batches(50, MIB);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for_each_batch(&src, &all, 2 * MIB, Handout::Serial, || (), |_, _, b| {
                if b.start == 3 * MIB {
                    panic!("worker bug");
                }
                Ok(())
            })
        }));
        assert!(result.is_err(), "the panic reaches the caller");
    }

    #[test]
    fn a_zero_window_hints_nothing_and_an_error_stops_the_loop() {
        let src = recorder();
        let all = batches(10, MIB);
        let done = AtomicUsize::new(0);
        let fail_at_300 = |_: &mut (), _: usize, b: &Batch| {
            done.fetch_add(1, Ordering::Relaxed);
            match b.start {
                s if s == 3 * MIB => Err(crate::error::Error::format("bad batch")),
                _ => Ok(()),
            }
        };
        assert!(for_each_batch(&src, &all, 0, Handout::Serial, || (), fail_at_300).is_err());
        assert_eq!(done.load(Ordering::Relaxed), 4);
        assert!(src.hinted.lock().unwrap().is_empty());
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        assert!(pool.install(|| for_each_batch(&src, &all, 1 << 20, Handout::Pool, || (), fail_at_300)).is_err());
    }
}

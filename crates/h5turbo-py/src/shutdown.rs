//! Interpreter exit with reads still running in daemon threads.
//!
//! Once Python has begun to finalize, a thread other than the finalizing one that takes
//! the GIL (or waits for it) is ended with `pthread_exit` (Python 3.9-3.13). Inside one
//! of our calls that unwinds through our Rust frames and pyo3's panic guard, which
//! cannot let it pass: the process aborted ("FATAL: exception not rethrown", exit
//! status 134). h5py hangs there instead.
//!
//! So Python's exit handlers (atexit, which run on the thread that then finalizes,
//! before it does) close a gate: from then on no other thread takes the GIL from inside
//! our code. A native call that ends parks its thread instead of taking the GIL back
//! (as Python 3.14 parks such threads itself; the process's exit ends it), a read
//! through a Python file object is refused, and the exit handler waits (the GIL
//! released, 5 s at most) for the threads already taking it to be done with it.

use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The thread that ran Python's exit handlers, which is the one that finalizes.
static EXITING_THREAD: AtomicU64 = AtomicU64::new(0);
/// Set by the exit handler: other threads may no longer take the GIL in our code.
static EXITING: AtomicBool = AtomicBool::new(false);
/// Threads inside our code that are taking, or hold, the GIL they asked for.
static TAKING_GIL: AtomicUsize = AtomicUsize::new(0);
static CHANGED: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

/// atexit hook (python/h5turbo/__init__.py): close the gate, then wait for the threads
/// already taking the GIL in our code to be done with it.
#[pyfunction]
pub fn prepare_exit(py: Python<'_>) {
    EXITING_THREAD.store(this_thread(), Ordering::SeqCst);
    EXITING.store(true, Ordering::SeqCst);
    py.allow_threads(|| wait_for_gil_takers(Duration::from_secs(5)));
}

/// Leave to take the GIL in our code; held until the GIL is given up again.
pub struct GilClaim(());

/// A claim to take the GIL, or None once Python exits and this is not the exiting thread.
pub fn claim_gil() -> Option<GilClaim> {
    TAKING_GIL.fetch_add(1, Ordering::SeqCst);
    if EXITING.load(Ordering::SeqCst) && EXITING_THREAD.load(Ordering::SeqCst) != this_thread() {
        give_up_claim();
        return None;
    }
    Some(GilClaim(()))
}

impl Drop for GilClaim {
    fn drop(&mut self) {
        give_up_claim();
    }
}

/// For a thread that must never take the GIL again: the process's exit ends it.
pub fn park_for_good() -> ! {
    loop {
        std::thread::park();
    }
}

fn give_up_claim() {
    // only the exit handler waits (looking every 10 ms): no lock taken on every call
    if TAKING_GIL.fetch_sub(1, Ordering::SeqCst) == 1 && EXITING.load(Ordering::SeqCst) {
        let _lock = CHANGED.0.lock().unwrap_or_else(|p| p.into_inner());
        CHANGED.1.notify_all();
    }
}

fn wait_for_gil_takers(limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut lock = CHANGED.0.lock().unwrap_or_else(|p| p.into_inner());
    while TAKING_GIL.load(Ordering::SeqCst) > 0 {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else { return };
        let step = left.min(Duration::from_millis(10));
        lock = CHANGED.1.wait_timeout(lock, step).unwrap_or_else(|p| p.into_inner()).0;
    }
}

fn this_thread() -> u64 {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() as u64 }
}

//! Fork safety: `os.fork()` waits until no native call is running, and none starts until
//! it is done, so a child never inherits a lock a parent thread held mid-read (the pool
//! registry, a dataset's chunk cache, a file object's turn), which nothing in the child
//! would ever release: its reads of that file hung. h5py gets the same from the GIL,
//! which its reads hold; ours release it, hence this gate, entered by every native call
//! (`without_gil` and `errors::guard`) and closed by `os.register_at_fork` hooks
//! (python/h5turbo/__init__.py).
//!
//! A call made without the GIL waits at a closed gate. One made with the GIL never
//! waits (the forking thread, which holds the GIL while the gate is closed, could be
//! what it waits for): it is counted, and the fork waits for it to end instead.

use crate::shutdown;
use pyo3::prelude::*;
use std::panic::{self, AssertUnwindSafe};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static CLOSED: AtomicBool = AtomicBool::new(false);
static CHANGED: (Mutex<()>, Condvar) = (Mutex::new(()), Condvar::new());

thread_local! {
    /// Gate passes this thread holds (native calls nest: a file object's read calls back).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Whether this thread runs without the GIL, inside `without_gil`.
    static NO_GIL: Cell<bool> = const { Cell::new(false) };
}

/// A native call in progress; the gate counts it until dropped.
pub struct Pass(());

/// Enter the gate: waits while a fork is under way when this thread does not hold the
/// GIL; a nested call passes at once.
pub fn enter() -> Pass {
    let depth = DEPTH.with(|d| d.replace(d.get() + 1));
    if depth > 0 {
        return Pass(());
    }
    let may_wait = NO_GIL.with(Cell::get);
    loop {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        if !may_wait || !CLOSED.load(Ordering::SeqCst) {
            return Pass(());
        }
        leave_one();
        wait_while(|| CLOSED.load(Ordering::SeqCst));
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        let depth = DEPTH.with(|d| d.replace(d.get() - 1));
        if depth == 1 {
            leave_one();
        }
    }
}

fn leave_one() {
    if IN_FLIGHT.fetch_sub(1, Ordering::SeqCst) == 1 && CLOSED.load(Ordering::SeqCst) {
        notify();
    }
}

fn notify() {
    let _lock = CHANGED.0.lock().unwrap_or_else(|p| p.into_inner());
    CHANGED.1.notify_all();
}

/// Wait (a short sleep between looks, so a missed wake-up costs 10 ms at most).
fn wait_while(condition: impl Fn() -> bool) {
    let mut lock = CHANGED.0.lock().unwrap_or_else(|p| p.into_inner());
    while condition() {
        lock = CHANGED.1.wait_timeout(lock, Duration::from_millis(10)).unwrap_or_else(|p| p.into_inner()).0;
    }
}

/// `py.allow_threads` for native work: the GIL released, the gate entered. A call that
/// ends once Python exits, on a thread other than the exiting one, never takes the GIL
/// back (shutdown.rs).
pub fn without_gil<T: Send>(py: Python<'_>, f: impl FnOnce() -> T + Send) -> T {
    let (outcome, claim) = py.allow_threads(|| {
        let outcome = {
            let _no_gil = NoGil(NO_GIL.with(|n| n.replace(true)));
            let _pass = enter();
            panic::catch_unwind(AssertUnwindSafe(f))
        };
        let claim = shutdown::claim_gil().unwrap_or_else(|| shutdown::park_for_good());
        (outcome, claim)
    });
    drop(claim); // the GIL is taken back
    outcome.unwrap_or_else(|payload| panic::resume_unwind(payload))
}

/// Marks this thread as running without the GIL until dropped (also when `f` panics),
/// then puts back what it was.
struct NoGil(bool);

impl Drop for NoGil {
    fn drop(&mut self) {
        NO_GIL.with(|n| n.set(self.0));
    }
}

/// os.register_at_fork(before=...): close the gate and wait, the GIL released, until no
/// native call runs; checked again with the GIL held (a call holding the GIL may have
/// started meanwhile), so the fork happens with none running.
#[pyfunction]
pub fn fork_prepare(py: Python<'_>) {
    if DEPTH.with(Cell::get) > 0 {
        return; // forking from inside a native call (a file object's read): nothing to wait for
    }
    CLOSED.store(true, Ordering::SeqCst);
    while IN_FLIGHT.load(Ordering::SeqCst) > 0 {
        py.allow_threads(|| wait_while(|| IN_FLIGHT.load(Ordering::SeqCst) > 0));
    }
}

/// os.register_at_fork(after_in_parent=...): open the gate.
#[pyfunction]
pub fn fork_parent() {
    CLOSED.store(false, Ordering::SeqCst);
    notify();
}

/// os.register_at_fork(after_in_child=...): open the gate; the child has this thread only.
#[pyfunction]
pub fn fork_child() {
    // the calls of other threads are gone; this thread's own, if it forked inside one, stays
    IN_FLIGHT.store(usize::from(DEPTH.with(Cell::get) > 0), Ordering::SeqCst);
    CLOSED.store(false, Ordering::SeqCst);
}

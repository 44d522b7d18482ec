//! Thread pools, one per thread count, built once and kept: building a pool costs
//! thread spawns, far too much to pay per read.

use crate::error::{Error, Result};
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// `H5TURBO_THREADS` if set to a positive number, else the number of cores.
pub fn default_threads() -> usize {
    std::env::var("H5TURBO_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(cores)
}

/// Cores available to this process, asked once: the query reads cgroup files, which
/// costs more than a small read.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
}

/// A requested thread count, 0 meaning the default.
pub fn resolve_threads(requested: usize) -> usize {
    if requested == 0 {
        default_threads()
    } else {
        requested.min(1024)
    }
}

/// The pools of this process, and which process built them.
#[derive(Default)]
struct Pools {
    pid: u32,
    by_threads: HashMap<usize, Arc<ThreadPool>>,
}

/// The pool for `threads` threads. The lock guards only the lookup, never a read.
/// A forked child (R's mclapply, Python's multiprocessing with fork) inherits the
/// parent's pools without their threads: work sent there would wait forever, so a
/// new process builds its own pools and leaves the inherited ones untouched.
pub fn get(threads: usize) -> Result<Arc<ThreadPool>> {
    static POOLS: OnceLock<Mutex<Pools>> = OnceLock::new();
    let pools = POOLS.get_or_init(Default::default);
    let mut pools = pools.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let pid = std::process::id();
    if pools.pid != pid {
        // dropping would signal threads that do not exist in this process
        std::mem::forget(std::mem::take(&mut pools.by_threads));
        pools.pid = pid;
    }
    let pools = &mut pools.by_threads;
    if let Some(pool) = pools.get(&threads) {
        return Ok(pool.clone());
    }
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("h5turbo-{}", i))
        .build()
        .map_err(|e| Error::new(crate::error::ErrorKind::Io, format!("cannot start {} threads: {}", threads, e)))?;
    let pool = Arc::new(pool);
    pools.insert(threads, pool.clone());
    Ok(pool)
}

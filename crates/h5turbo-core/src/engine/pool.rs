//! Thread pools, one per thread count, built once and kept: building a pool costs
//! thread spawns, far too much to pay per read.

use crate::error::{Error, Result};
use crate::settings::{env_setting, warn_unreadable};
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::{Arc, Mutex, OnceLock};

/// `H5TURBO_THREADS` if set to a positive number, else the number of cores (0 too;
/// a value that is no count says so on standard error, once).
pub fn default_threads() -> usize {
    let Some(value) = env_setting("H5TURBO_THREADS") else { return cores() };
    match value.parse::<usize>() {
        Ok(0) => cores(),
        Ok(n) => n,
        Err(_) => {
            warn_unreadable("H5TURBO_THREADS", &value, "a thread count", "every core");
            cores()
        }
    }
}

/// Cores available to this process, asked once: the query reads cgroup files, which
/// costs more than a small read.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
}

/// Most threads one read may use.
const MAX_THREADS: usize = 1024;

/// A requested thread count, 0 meaning the default.
pub fn resolve_threads(requested: usize) -> usize {
    Threads::resolve(requested).get()
}

/// A thread count resolved once at an entry point of the engine: at least 1, at
/// most `MAX_THREADS`, the default already applied. Only pools of such counts exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threads(usize);

impl Threads {
    /// `requested` threads, 0 meaning the default (H5TURBO_THREADS or all cores).
    pub fn resolve(requested: usize) -> Threads {
        match requested {
            0 => Threads(default_threads().clamp(1, MAX_THREADS)),
            n => Threads(n.min(MAX_THREADS)),
        }
    }

    pub fn get(self) -> usize {
        self.0
    }
}

/// The pools of this process, and which process built them.
#[derive(Default)]
struct Pools {
    pid: u32,
    /// (thread count, pool), least recently used first.
    recent: Vec<(usize, Arc<ThreadPool>)>,
}

/// Pools kept at most. Each keeps its threads (and their scratch buffers) alive, so a
/// caller that varies `threads` call by call would otherwise collect pools without end
/// (measured: thread counts 1 to 64 once each left 2082 threads and 5.6 GiB). A pool
/// let go of ends its threads when the reads using it are done.
const MAX_POOLS: usize = 4;

/// The pool for `threads` threads. The lock guards only the lookup, never a read.
/// A forked child (R's mclapply, Python's multiprocessing with fork) inherits the
/// parent's pools without their threads: work sent there would wait forever, so a
/// new process builds its own pools and leaves the inherited ones untouched.
pub fn get(threads: Threads) -> Result<Arc<ThreadPool>> {
    let threads = threads.get();
    static POOLS: OnceLock<Mutex<Pools>> = OnceLock::new();
    let pools = POOLS.get_or_init(Default::default);
    let mut pools = pools.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let pid = std::process::id();
    if pools.pid != pid {
        // dropping would signal threads that do not exist in this process
        std::mem::forget(std::mem::take(&mut pools.recent));
        pools.pid = pid;
    }
    let pool = match pools.recent.iter().position(|(n, _)| *n == threads) {
        Some(at) => pools.recent.remove(at).1,
        None => Arc::new(
            ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("h5turbo-{}", i))
                .build()
                .map_err(|e| Error::new(crate::error::ErrorKind::Io, format!("cannot start {} threads: {}", threads, e)))?,
        ),
    };
    pools.recent.push((threads, pool.clone()));
    if pools.recent.len() > MAX_POOLS {
        pools.recent.remove(0);
    }
    Ok(pool)
}

/// Run `f` on the pool of `threads` threads (0: the default): its rayon calls
/// (`par_iter` ...) use that pool. For bindings that spread work of their own.
pub fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> Result<R> {
    Ok(get(Threads::resolve(threads))?.install(f))
}

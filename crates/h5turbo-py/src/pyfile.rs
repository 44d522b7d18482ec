//! Python file-like objects as a positional-read source (`_native.File.from_fileobj`).
//!
//! The core reads with `read_exact_at` from many threads while the GIL is released
//! (decoding runs in parallel). Here each read takes the GIL only around the Python
//! calls, and one read at a time per object (a seek and a read are a pair that another
//! thread must not split), whichever File the read is for. An object with a usable `fileno()` (a real file, the same
//! bytes) is read with the native positional path instead, without the GIL. An object
//! with `pread(n, offset)` (positional and thread-safe, as the Python layer's adapter
//! for fsspec's remote files is) takes no turn: its reads run concurrently.
//!
//! Lock order, which keeps this free of deadlocks: a reader first takes the GIL, then
//! waits for its turn on the object with the GIL released (a thread holding the turn
//! may need the GIL back: `read()` of a real file releases it during the system call),
//! then takes the GIL again. No thread ever waits for the turn while holding the GIL.

use crate::errors::FileObjectFailure;
use crate::shutdown;
use h5turbo_core::prelude::{Error, ErrorKind, FileSource, ReadAt, Result};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};
use std::path::{Path, PathBuf};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::Duration;

/// The largest piece read with one `readinto` call: the bounce buffer's size.
const MAX_PIECE: usize = 4 << 20;

/// Bytes compared between the object and its `fileno()` before trusting the latter.
const FILENO_PROBE: usize = 4096;

/// The source for `obj`: its descriptor when `fileno()` names a regular file holding
/// the same bytes (size and first bytes compared: a member of a tar archive, say, has
/// the archive's descriptor), else reads through the object.
pub fn source_for(obj: Bound<'_, PyAny>, name: &Path) -> PyResult<Arc<dyn ReadAt>> {
    let through_object = PyFileSource::new(obj.clone(), name)?;
    if let Some(native) = native_source(&obj, &through_object, name) {
        return Ok(Arc::new(native));
    }
    Ok(Arc::new(through_object))
}

/// The native positional source behind `obj.fileno()`, if it reads the same bytes.
#[cfg(unix)]
fn native_source(obj: &Bound<'_, PyAny>, through_object: &PyFileSource, name: &Path) -> Option<FileSource> {
    use std::os::fd::BorrowedFd;
    let fd: i32 = obj.call_method0("fileno").ok()?.extract().ok()?;
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor is open (fileno() just returned it) for the length of this
    // call, and is duplicated at once: the source owns its copy, whatever the object
    // does with its own later.
    let owned = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned().ok()?;
    let file = std::fs::File::from(owned);
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() != through_object.len() {
        return None;
    }
    let native = FileSource::from_file(file, name).ok()?;
    let probe = FILENO_PROBE.min(native.len() as usize);
    let (mut a, mut b) = (vec![0u8; probe], vec![0u8; probe]);
    // Both reads run with the GIL held by this thread: the object's read re-enters it.
    (native.read_exact_at(&mut a, 0).is_ok() && through_object.read_exact_at(&mut b, 0).is_ok() && a == b)
        .then_some(native)
}

#[cfg(not(unix))]
fn native_source(_: &Bound<'_, PyAny>, _: &PyFileSource, _: &Path) -> Option<FileSource> {
    None
}

/// One reader at a time on an object. A flag and a condition variable rather than a
/// mutex guard: the wait happens with the GIL released (`allow_threads` takes only
/// `Send` closures and results, which a `MutexGuard` is not).
#[derive(Default)]
struct Turn {
    busy: Mutex<bool>,
    freed: Condvar,
}

impl Turn {
    fn wait(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        while *busy {
            busy = self.freed.wait(busy).unwrap_or_else(|p| p.into_inner());
        }
        *busy = true;
    }

    fn end(&self) {
        *self.busy.lock().unwrap_or_else(|p| p.into_inner()) = false;
        self.freed.notify_one();
    }
}

/// The turn of the Python object `obj`, one per object (by address) among the sources
/// alive. A source keeps its object alive until it is closed, so while a turn is in the
/// table its address names that object; after, sharing a turn is only a wait too many.
fn shared_turn(obj: &Bound<'_, PyAny>) -> Arc<Turn> {
    static TURNS: OnceLock<Mutex<HashMap<usize, Weak<Turn>>>> = OnceLock::new();
    let mut turns = TURNS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    turns.retain(|_, turn| turn.strong_count() > 0);
    let key = obj.as_ptr() as usize;
    if let Some(turn) = turns.get(&key).and_then(Weak::upgrade) {
        return turn;
    }
    let turn = Arc::new(Turn::default());
    turns.insert(key, Arc::downgrade(&turn));
    turn
}

/// Ends the turn however the read ends.
struct TurnHeld<'a>(&'a Turn);

impl Drop for TurnHeld<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

/// A Python object with `read` (or `readinto`) and `seek`, read at any offset.
pub struct PyFileSource {
    /// None once closed (the object is given back to Python; it is not closed: h5py
    /// does not close file-like objects it was given either).
    /// Shared with the sources `refreshed` makes, so that closing one closes all.
    obj: Arc<Mutex<Option<Py<PyAny>>>>,
    name: PathBuf,
    len: u64,
    has_readinto: bool,
    /// The object has `pread(n, offset)` (as `os.pread`): positional reads that are
    /// safe to call from several threads at once, so reads take no turn and run
    /// concurrently (each holds the GIL only while calling; the object releases it
    /// while it waits, as fsspec does for a ranged request).
    has_pread: bool,
    /// `readinto` fills this Python-owned buffer, copied out after each call. Not the
    /// caller's memory: a memoryview over Rust memory can outlive the call (a slice of
    /// it shares the buffer, and `release()` cannot see it), so a misbehaving object
    /// could write there later; here it can only write into its own bytearray.
    bounce: Mutex<Option<Py<PyByteArray>>>,
    /// Shared by every source reading this object: two Files opened on one file
    /// object must not split each other's seek and read either.
    turn: Arc<Turn>,
}

impl PyFileSource {
    fn new(obj: Bound<'_, PyAny>, name: &Path) -> PyResult<PyFileSource> {
        for method in ["seek", "read"] {
            if !obj.hasattr(method)? {
                return Err(PyTypeError::new_err(format!(
                    "a file-like object needs read() (or readinto()) and seek(); {} has no {}()",
                    obj.get_type().name()?,
                    method
                )));
            }
        }
        let has_readinto = obj.hasattr("readinto")?;
        let has_pread = obj.hasattr("pread")?;
        let len = object_size(&obj).map_err(|e| crate::errors::to_py_err(e.in_file(name)))?;
        let turn = shared_turn(&obj);
        note_source(name, 1);
        Ok(PyFileSource {
            obj: Arc::new(Mutex::new(Some(obj.unbind()))),
            name: name.to_path_buf(),
            len,
            has_readinto,
            has_pread,
            bounce: Mutex::new(None),
            turn,
        })
    }

    fn object(&self, py: Python<'_>) -> Result<Py<PyAny>> {
        let obj = self.obj.lock().unwrap_or_else(|p| p.into_inner());
        obj.as_ref().map(|o| o.clone_ref(py)).ok_or_else(|| Error::closed().in_file(&self.name))
    }

    /// Run `f` (which seeks the object) in this object's turn, waited for without the GIL.
    fn in_turn<R>(&self, py: Python<'_>, f: impl FnOnce() -> R) -> R {
        let turn = &*self.turn;
        // not fork_gate::without_gil: this runs for a call already through the gate (on
        // its pool's threads), which must not wait for a fork that waits for it
        py.allow_threads(|| turn.wait());
        let _held = TurnHeld(turn);
        f()
    }

    /// Fill `buf` from `offset`, with the GIL and this object's turn held.
    fn read_locked(&self, py: Python<'_>, obj: &Bound<'_, PyAny>, buf: &mut [u8], offset: u64) -> Result<()> {
        obj.call_method1("seek", (offset,)).map_err(|e| seek_failure(py, obj, e, offset))?;
        let mut filled = 0;
        while filled < buf.len() {
            check_interrupted(py, &self.name)?;
            let got = match self.has_readinto {
                true => self.readinto(py, obj, &mut buf[filled..], offset + filled as u64)?,
                false => None,
            };
            let got = match got {
                Some(got) => got,
                None => read_some(py, obj, &mut buf[filled..])?,
            };
            if got == 0 {
                return Err(short_read(filled, buf.len(), offset));
            }
            filled += got;
        }
        Ok(())
    }

    /// Fill `buf` from `offset` with `pread` calls (no seek, no turn: see `has_pread`).
    fn pread_all(&self, py: Python<'_>, obj: &Bound<'_, PyAny>, buf: &mut [u8], offset: u64) -> Result<()> {
        let mut filled = 0;
        while filled < buf.len() {
            check_interrupted(py, &self.name)?;
            let at = offset + filled as u64;
            let want = (buf.len() - filled).min(MAX_PIECE);
            let data = obj
                .call_method1("pread", (want, at))
                .map_err(|e| failure(py, e, format!("pread({}, {}) failed", want, at)))?;
            let got = copy_bytes(&data, &mut buf[filled..filled + want], "pread()")?;
            if got == 0 {
                return Err(short_read(filled, buf.len(), offset));
            }
            filled += got;
        }
        Ok(())
    }

    /// One `readinto` call into the bounce buffer, copied to `out`: the bytes read, or
    /// None when readinto returned None, the object then sought back to `start` (where
    /// the call began).
    fn readinto(&self, py: Python<'_>, obj: &Bound<'_, PyAny>, out: &mut [u8], start: u64) -> Result<Option<usize>> {
        let piece = out.len().min(MAX_PIECE);
        let bounce = self.bounce_buffer(py, piece)?;
        // slice(0, piece) built by a call, not PySlice::new: pyo3 0.25's leaks its three
        // ints (PySlice_New does not take them over), one object per read
        let view = py
            .import("builtins")
            .and_then(|b| {
                let whole = b.getattr("memoryview")?.call1((&bounce,))?;
                whole.get_item(b.getattr("slice")?.call1((0usize, piece))?)
            })
            .map_err(|e| failure(py, e, "cannot make a memoryview".into()))?;
        let result = obj.call_method1("readinto", (&view,));
        let _ = view.call_method0("release");
        let returned = result.map_err(|e| failure(py, e, format!("readinto() of {} bytes failed", piece)))?;
        if returned.is_none() {
            // Either a non-blocking object with no data ready, or one whose readinto fills
            // the buffer and forgets to say how much (h5py ignores what readinto returns,
            // so it reads those): the piece is read again with read(), which tells.
            obj.call_method1("seek", (start,)).map_err(|e| failure(py, e, format!("seek({}) failed", start)))?;
            return Ok(None);
        }
        let got: usize =
            returned.extract().map_err(|e| failure(py, e, "readinto() did not return a byte count".into()))?;
        if got > piece {
            return Err(object_error(format!("readinto() claims {} bytes read into a buffer of {}", got, piece)));
        }
        // SAFETY: the GIL is held and no Python code runs while the slice is alive, so
        // nothing resizes or writes the bytearray meanwhile.
        let bytes = unsafe { bounce.as_bytes() };
        let bytes = bytes.get(..got).ok_or_else(|| object_error("the read buffer shrank during readinto()".into()))?;
        out[..got].copy_from_slice(bytes);
        Ok(Some(got))
    }

    /// The bounce bytearray, at least `size` bytes long (kept between reads).
    fn bounce_buffer<'py>(&self, py: Python<'py>, size: usize) -> Result<Bound<'py, PyByteArray>> {
        let mut bounce = self.bounce.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = bounce.as_ref().map(|b| b.bind(py).clone()) {
            if existing.len() >= size {
                return Ok(existing);
            }
        }
        let fresh = PyByteArray::new_with(py, size, |_| Ok(()))
            .map_err(|e| failure(py, e, format!("cannot allocate a read buffer of {} bytes", size)))?;
        *bounce = Some(fresh.clone().unbind());
        Ok(fresh)
    }
}

impl ReadAt for PyFileSource {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        if offset.checked_add(buf.len() as u64).is_none_or(|end| end > self.len) {
            return Err(Error::format(format!(
                "read of {} bytes at offset {} goes past the end of the file-like object ({} bytes)",
                buf.len(),
                offset,
                self.len
            ))
            .in_file(&self.name));
        }
        if buf.is_empty() {
            return Ok(());
        }
        with_gil_unless_exiting(|py| {
            let obj = self.object(py)?;
            if self.has_pread {
                return self.pread_all(py, obj.bind(py), buf, offset);
            }
            self.in_turn(py, || self.read_locked(py, obj.bind(py), buf, offset))
        })
        .map_err(|e| e.in_file(&self.name))
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn refreshed(&self) -> Result<Option<Arc<dyn ReadAt>>> {
        let len = with_gil_unless_exiting(|py| {
            let obj = self.object(py)?;
            self.in_turn(py, || object_size(obj.bind(py)))
        })
        .map_err(|e| e.in_file(&self.name))?;
        note_source(&self.name, 1);
        Ok(Some(Arc::new(PyFileSource {
            obj: self.obj.clone(),
            name: self.name.clone(),
            len,
            has_readinto: self.has_readinto,
            has_pread: self.has_pread,
            bounce: Mutex::new(None),
            turn: self.turn.clone(),
        })))
    }

    fn close(&self) {
        // Dropped without the GIL: pyo3 defers the decref until a thread holds it.
        self.obj.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.bounce.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}

/// `Python::with_gil`, refused once Python exits on another thread: taking the GIL
/// while it finalizes would end this thread by `pthread_exit`, which aborts the
/// process (shutdown.rs).
fn with_gil_unless_exiting<T>(f: impl FnOnce(Python<'_>) -> Result<T>) -> Result<T> {
    let Some(_claim) = shutdown::claim_gil() else {
        return Err(Error::closed().context("Python is exiting"));
    };
    Python::with_gil(f)
}

impl Drop for PyFileSource {
    fn drop(&mut self) {
        note_source(&self.name, -1);
    }
}

// ---------------------------------------------------------------------- interruption
//
// Python runs signal handlers (Ctrl-C's KeyboardInterrupt, a signal.alarm handler) only
// in the main thread, and only while it runs Python code. A read whose chunks the pool
// reads through a file object leaves the main thread waiting in native code, so a
// handler would run only once the whole read is done (a slow or stalled object: never).
// `interruptible` keeps the main thread looking for signals while the read runs on
// another thread; when a handler raises, reads through file objects that start from
// then on fail at once with that exception, and the read stops after the object calls
// already in flight (which Python cannot interrupt off the main thread).

/// The names of the files read through Python objects (the label each was opened
/// with), with the sources alive under each: reads of other files never call Python,
/// and skip the helper thread (which costs more than a small read).
static OBJECT_FILES: Mutex<Option<HashMap<PathBuf, usize>>> = Mutex::new(None);

/// How many sources read through Python objects are alive: while none is, a read asks
/// no lock (every read of every file asks `reads_through_object`).
static OBJECT_SOURCES: AtomicUsize = AtomicUsize::new(0);

fn note_source(name: &Path, change: isize) {
    let mut files = OBJECT_FILES.lock().unwrap_or_else(|p| p.into_inner());
    let files = files.get_or_insert_with(HashMap::new);
    let count = files.entry(name.to_path_buf()).or_insert(0);
    *count = count.saturating_add_signed(change);
    if *count == 0 {
        files.remove(name);
    }
    OBJECT_SOURCES.store(files.values().sum(), Ordering::SeqCst); // under the lock: exact
}

fn reads_through_object(file: &Path) -> bool {
    if OBJECT_SOURCES.load(Ordering::SeqCst) == 0 {
        return false;
    }
    OBJECT_FILES.lock().unwrap_or_else(|p| p.into_inner()).as_ref().is_some_and(|files| files.contains_key(file))
}

/// How often the waiting main thread looks for signals.
const SIGNAL_POLL: Duration = Duration::from_millis(20);
/// Set while an interrupted read drains: the file it reads (only that file's reads
/// fail: another thread's read of another file object goes on) and the exception the
/// handler raised.
static INTERRUPTING: AtomicBool = AtomicBool::new(false);
static INTERRUPTION: Mutex<Option<(PathBuf, Py<PyAny>)>> = Mutex::new(None);

/// `fork_gate::without_gil` for a read of `file` (its core path) that may call a file
/// object from pool threads: `work` runs on a helper thread while this one, the main
/// thread, runs the signal handlers due. Reads of files opened by path, or called from
/// another thread (which runs no handlers), go straight to `without_gil`. When a
/// handler raises, the read ends with that exception (`KeyboardInterrupt` raised as
/// itself, errors.rs).
///
/// Used by the calls whose time grows with the data: reads, reductions, reads of
/// variable-length data. Lookups of one object or attribute stay on `without_gil`: a
/// helper thread per call would cost more than most of them take.
pub fn interruptible<T: Send>(py: Python<'_>, file: &Path, work: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    if !reads_through_object(file) || !is_main_thread(py) {
        return crate::fork_gate::without_gil(py, work);
    }
    let done = &Done::default();
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            let _finished = Finished(done); // also when `work` panics
            let _pass = crate::fork_gate::enter(); // a fork waits for this read to end
            work()
        });
        let caught = wait_looking_for_signals(py, file, done);
        let result = py.allow_threads(|| worker.join());
        if let Some(err) = caught {
            end_interruption();
            return Err(failure(py, err, "the read was interrupted".into()));
        }
        result.unwrap_or_else(|_| Err(Error::new(ErrorKind::Format, "internal error (please report): a read panicked")))
    })
}

/// Whether the helper thread of `interruptible` is done.
#[derive(Default)]
struct Done {
    flag: Mutex<bool>,
    changed: Condvar,
}

/// Marks `Done` when dropped.
struct Finished<'a>(&'a Done);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        *self.0.flag.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.0.changed.notify_all();
    }
}

/// Wait (the GIL released) until the helper thread is done, running the signal
/// handlers due every SIGNAL_POLL; the first exception a handler raises starts the
/// interruption.
fn wait_looking_for_signals(py: Python<'_>, file: &Path, done: &Done) -> Option<PyErr> {
    let mut caught = None;
    loop {
        let finished = py.allow_threads(|| {
            let flag = done.flag.lock().unwrap_or_else(|p| p.into_inner());
            let (flag, _) = done.changed.wait_timeout_while(flag, SIGNAL_POLL, |f| !*f).unwrap_or_else(|p| p.into_inner());
            *flag
        });
        if finished {
            return caught;
        }
        if caught.is_none() {
            if let Err(err) = py.check_signals() {
                start_interruption(py, file, &err);
                caught = Some(err);
            }
        }
    }
}

/// The main thread's identity (Python's `threading.main_thread().ident`, which is the
/// thread's pthread_t on Unix), taken when the module is loaded.
static MAIN_THREAD: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();

/// Note which thread is the main one (called at module load, with the GIL).
pub fn note_main_thread(py: Python<'_>) {
    MAIN_THREAD.get_or_init(|| {
        let ident = || -> PyResult<u64> { py.import("threading")?.call_method0("main_thread")?.getattr("ident")?.extract() };
        ident().ok()
    });
}

/// Whether this is the main thread, told without running Python code: a daemon thread
/// that ran `threading.current_thread()` here while the interpreter began to exit could
/// have its GIL taken away in that code, and Python ended the thread with pthread_exit,
/// which aborts the process through these native frames (SIGABRT, about 3 % of exits
/// under load with daemon threads reading a BytesIO).
fn is_main_thread(py: Python<'_>) -> bool {
    #[cfg(unix)]
    {
        let _ = py;
        // SAFETY: pthread_self has no preconditions.
        let me = unsafe { libc::pthread_self() } as u64;
        MAIN_THREAD.get().copied().flatten() == Some(me)
    }
    #[cfg(not(unix))]
    {
        let current = || -> PyResult<bool> {
            let threading = py.import("threading")?;
            Ok(threading.call_method0("current_thread")?.is(&threading.call_method0("main_thread")?))
        };
        current().unwrap_or(false)
    }
}

fn start_interruption(py: Python<'_>, file: &Path, err: &PyErr) {
    let raised = err.value(py).clone().into_any().unbind();
    *INTERRUPTION.lock().unwrap_or_else(|p| p.into_inner()) = Some((file.to_path_buf(), raised));
    INTERRUPTING.store(true, Ordering::SeqCst);
}

fn end_interruption() {
    INTERRUPTING.store(false, Ordering::SeqCst);
    // dropped without the GIL is fine: pyo3 defers the decref
    INTERRUPTION.lock().unwrap_or_else(|p| p.into_inner()).take();
}

/// Fails (with the handler's exception as the cause) while a read of `file` is being
/// interrupted: called before each call into a file object.
fn check_interrupted(py: Python<'_>, file: &Path) -> Result<()> {
    if !INTERRUPTING.load(Ordering::SeqCst) {
        return Ok(());
    }
    let interruption = INTERRUPTION.lock().unwrap_or_else(|p| p.into_inner());
    let raised = interruption.as_ref().filter(|(read, _)| read == file).map(|(_, e)| e.clone_ref(py));
    drop(interruption);
    match raised {
        Some(value) => Err(failure(py, PyErr::from_value(value.into_bound(py)), "the read was interrupted".into())),
        None => Ok(()),
    }
}

/// The object's size, found as h5py's fileobj driver finds it: `seek(0, SEEK_END)`, then
/// `tell()`. What seek returns is used only by an object without `tell`: io's seek
/// returns the new position, but objects whose seek returns 0, None or themselves are
/// read by h5py, so they must be here too.
fn object_size(obj: &Bound<'_, PyAny>) -> Result<u64> {
    let py = obj.py();
    let end = obj.call_method1("seek", (0, 2)).map_err(|e| failure(py, e, "seek(0, SEEK_END) failed".into()))?;
    let has_tell = obj.hasattr("tell").map_err(|e| failure(py, e, "cannot look for tell()".into()))?;
    let (end, what) = if has_tell {
        let told = obj.call_method0("tell").map_err(|e| failure(py, e, "tell() failed after seek(0, SEEK_END)".into()))?;
        (told, "tell() after seek(0, SEEK_END)")
    } else {
        (end, "seek(0, SEEK_END), with no tell() to ask,")
    };
    end.extract::<u64>().map_err(|e| failure(py, e, format!("{} did not give a position", what)))
}

/// One `read(n)` call, copied to `out`: the bytes read (0 at the end of the object).
fn read_some(py: Python<'_>, obj: &Bound<'_, PyAny>, out: &mut [u8]) -> Result<usize> {
    let want = out.len().min(MAX_PIECE);
    let data = obj.call_method1("read", (want,)).map_err(|e| failure(py, e, format!("read({}) failed", want)))?;
    if data.is_none() {
        return Err(not_bytes_error(format!("read({}) returned None (a non-blocking object with no data ready)", want)));
    }
    copy_bytes(&data, &mut out[..want], "read()")
}

/// What a read call returned, copied to the start of `out` (at most `out.len()` bytes
/// allowed): the byte count.
fn copy_bytes(data: &Bound<'_, PyAny>, out: &mut [u8], call: &str) -> Result<usize> {
    let bytes = data.downcast::<PyBytes>().map(|b| b.as_bytes().to_vec()).or_else(|_| {
        // bytearray, memoryview or any other buffer; not str (a file opened in text mode)
        data.extract::<Vec<u8>>().map_err(|_| {
            not_bytes_error(format!(
                "{} returned {}, not bytes (open the file in binary mode, 'rb')",
                call,
                data.get_type().name().map(|n| n.to_string()).unwrap_or_default()
            ))
        })
    })?;
    if bytes.len() > out.len() {
        return Err(object_error(format!(
            "{} returned {} bytes for {} asked: the object does not honour seek() (an HTTP server without \
             range requests, read with fsspec's cache_type=\"none\", does this)",
            call,
            bytes.len(),
            out.len()
        )));
    }
    out[..bytes.len()].copy_from_slice(&bytes);
    Ok(bytes.len())
}

fn short_read(filled: usize, wanted: usize, offset: u64) -> Error {
    object_error(format!(
        "the file-like object ended after {} of the {} bytes asked for at offset {} (did it shrink, or does it return short reads at its end?)",
        filled, wanted, offset
    ))
}

/// The error for a seek that raised: ClosedError (a ValueError, as h5py raises the
/// object's 'I/O operation on closed file') when the user closed the object while a
/// File reads it, else FileObjectError with the exception as its cause.
fn seek_failure(py: Python<'_>, obj: &Bound<'_, PyAny>, err: PyErr, offset: u64) -> Error {
    let closed = obj.getattr("closed").and_then(|c| c.extract::<bool>()).unwrap_or(false);
    if closed && err.is_instance_of::<pyo3::exceptions::PyValueError>(py) {
        return Error::new(
            ErrorKind::Closed,
            format!("the file-like object was closed while the file was open (seek({}) raised {})", offset, err.value(py)),
        );
    }
    failure(py, err, format!("seek({}) failed", offset))
}

/// An h5turbo error for a misbehaving object (`_native.FileObjectError`).
fn object_error(message: String) -> Error {
    file_object_error(FileObjectFailure { message, cause: None, not_bytes: false })
}

/// An h5turbo error for a read call that returned something other than bytes
/// (`_native.NotBytesError`, also a TypeError).
fn not_bytes_error(message: String) -> Error {
    file_object_error(FileObjectFailure { message, cause: None, not_bytes: true })
}

/// An h5turbo error for a Python exception raised by the object: the exception
/// becomes the `__cause__` of the error Python sees.
fn failure(py: Python<'_>, err: PyErr, what: String) -> Error {
    let message = format!("{}: {}", what, err.value(py).repr().map(|r| r.to_string()).unwrap_or_default());
    file_object_error(FileObjectFailure { message, cause: Some(err), not_bytes: false })
}

/// `failure` as the core's Io error, to be raised by errors::to_py_err.
fn file_object_error(failure: FileObjectFailure) -> Error {
    Error::io(std::io::Error::other(failure), "file-like object")
}

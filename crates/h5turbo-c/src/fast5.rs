//! fast5 reads, shaped like slow5lib's API: open many files and folders, take reads in
//! batches decoded on an internal thread pool (in file order), or one by read id
//! through an index built on first use. A broken file or read is reported in its place.

use crate::errors::*;
use h5turbo_core::prelude::ErrorKind;
use std::panic::{catch_unwind, AssertUnwindSafe};
use crate::handles::{close_handle, give_handle, out_handle, out_strings};
use crate::strings::give_strings;
use crate::objects::path_arg;
use h5turbo_core::prelude::fast5::{
    file_from_source, file_read_ids, locate_record, open_file, open_hinted, single_value, Fast5Index, Layout, ReadLocations, ReadRecord,
    SignalDataset,
};
use h5turbo_core::prelude::{read_ahead, zeroed_vec, FileHints, FileSource};
use h5turbo_core::prelude::{Error, File, ResultExt};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::ffi::{c_char, c_int, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// One read. `status` 0: the values are set; else the read failed and `error` says
/// why (file, read, problem), and `signal` is NULL.
#[repr(C)]
pub struct h5turbo_fast5_read {
    pub read_id: *mut c_char,
    /// The raw signal (n_samples values); NULL when empty or failed.
    pub signal: *mut i16,
    pub n_samples: u64,
    pub digitisation: f64,
    pub offset: f64,
    pub range: f64,
    pub sampling_rate: f64,
    pub channel_number: *mut c_char,
    pub read_number: i32,
    pub start_time: u64,
    pub duration: u64,
    /// The file the read came from (owned by the batch).
    pub path: *const c_char,
    pub status: c_int,
    pub error: *mut c_char,
}

// SAFETY: a read owns its strings alone (path and signal point into an Arc'd path
// and arena the batch keeps, written before the read is given out and only read
// after); moving it to another thread moves that ownership.
unsafe impl Send for h5turbo_fast5_read {}

/// A batch of reads, in file order; free with h5turbo_fast5_batch_free.
#[repr(C)]
pub struct h5turbo_fast5_batch {
    pub reads: *mut h5turbo_fast5_read,
    pub n: usize,
}

/// What the caller sees first (`batch`), and what the batch owns besides.
#[repr(C)]
struct OwnedBatch {
    batch: h5turbo_fast5_batch,
    /// The file paths the reads point to.
    paths: Vec<Arc<CString>>,
    /// The memory the reads' signals point into.
    arenas: Vec<Arc<SignalArena>>,
}

/// The signals of one batch's reads, side by side in one allocation. When the last
/// batch pointing into it is freed, it goes back to its handle's spares and the next
/// batch decodes into it: memory already faulted in and written, where a fresh
/// allocation per signal cost the kernel's page faults and zeroing (~15 % of a
/// multi-read file's time) and the allocator's bookkeeping.
struct SignalArena {
    samples: Vec<i16>,
    spares: Weak<Mutex<Vec<Vec<i16>>>>,
}

/// Arenas kept for reuse: a caller holding one batch while it takes the next uses two.
const SPARE_ARENAS: usize = 2;

impl Drop for SignalArena {
    fn drop(&mut self) {
        if self.samples.is_empty() {
            return;
        }
        let Some(spares) = self.spares.upgrade() else { return };
        let mut spares = spares.lock().unwrap_or_else(|p| p.into_inner());
        spares.push(std::mem::take(&mut self.samples));
        if spares.len() > SPARE_ARENAS {
            // the smallest goes: the larger ones fit more batches
            let smallest = (0..spares.len()).min_by_key(|&i| spares[i].len()).unwrap_or(0);
            spares.swap_remove(smallest);
        }
    }
}

/// Many fast5 files read as one stream of reads. With two threads or more, the next
/// batch is decoded while the caller works on the one it was given.
pub struct h5turbo_fast5 {
    reader: Arc<Reader>,
    /// The paths the stream was opened with, as its errors name them.
    label: PathBuf,
    /// The batch being decoded ahead, if any.
    ahead: Mutex<Option<Ahead>>,
    /// The process that opened it: its decoding threads exist there only. A child of a
    /// fork that calls it would wait for them forever: it gets an error instead.
    opened_by: u32,
}

impl h5turbo_fast5 {
    fn in_this_process(&self) -> Result<(), Error> {
        if self.opened_by == std::process::id() {
            return Ok(());
        }
        Err(Error::invalid_argument(format!(
            "the stream was opened by process {} before a fork; its threads are not in this process: open the files again here",
            self.opened_by
        )))
    }
}

/// A batch decoded on the pool while the caller works: its entries (or the pool
/// job's failure) when done.
struct Ahead {
    done: std::sync::mpsc::Receiver<Result<Vec<Entry>, Error>>,
}

impl Ahead {
    /// Wait for the batch.
    fn entries(self) -> Result<Vec<Entry>, Error> {
        self.done.recv().unwrap_or_else(|_| Err(Error::new(ErrorKind::Io, "the batch decoded ahead was lost")))
    }
}

impl Drop for h5turbo_fast5 {
    fn drop(&mut self) {
        // The job decoding ahead holds the reader: wait for it, then free its reads.
        if let Some(ahead) = self.ahead.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            drop(ahead.entries());
        }
    }
}

/// What the handle reads with, shared with the job decoding ahead.
struct Reader {
    files: Vec<SourceFile>,
    stop_on_error: bool,
    pool: rayon::ThreadPool,
    cursor: Mutex<Cursor>,
    /// read id -> (file, read in file), built on the first h5turbo_fast5_get(_batch).
    index: OnceLock<ReadLocations>,
    /// Files opened by h5turbo_fast5_get, most recent last.
    recent: Mutex<Vec<(usize, GetFile)>>,
    /// Signal memory given back by freed batches (see SignalArena).
    spares: Arc<Mutex<Vec<Vec<i16>>>>,
    /// Multi-read files hinted to the system in reading order, by a thread of their
    /// own, the read-ahead window beyond the batch being planned (None: window 0).
    /// The thread, because a hint blocks while the device's queue is full: on the
    /// batch's path, hinting the next files made a cold walk slower (50 multi-read
    /// files: 1.33 -> 1.43 s).
    hints: Option<FileHints>,
}

/// Files kept open for h5turbo_fast5_get.
const RECENT_FILES: usize = 8;

/// A file opened for h5turbo_fast5_get. A multi-read file is not listed again: its
/// read groups are named by their ids (`read_<id>`) and each is looked up by name
/// (a descent of the root group's index, cached in the file while it stays open);
/// listing its thousands of links at every fetch that found it closed made fetching
/// reads in random order slower than libhdf5 (20000 reads from 50 files, 1 thread:
/// 8.8 s against libhdf5's 5.5 s). A single-read file holds one read: indexed whole.
#[derive(Clone)]
enum GetFile {
    Indexed(Arc<(File, Fast5Index)>),
    MultiRead(File),
}

/// A file's reads for one fetch, and where in it each read asked for is.
type ReadsAsked = (Arc<(File, Fast5Index)>, Vec<usize>);

/// Files an h5turbo_fast5_get_batch call has open at once: the reads asked for may
/// lie in hundreds of files, and a large file keeps its descriptor until its reads
/// are decoded (with the 8 kept for h5turbo_fast5_get, at most 72 descriptors).
const GET_FILES_AT_ONCE: usize = 64;

struct SourceFile {
    path: PathBuf,
    c_path: Arc<CString>,
    /// Why this folder, found under a folder given, could not be listed: it is then
    /// an entry of its own that fails in its place, as an unreadable file does, and
    /// the other files are read.
    unlisted: Option<String>,
}

impl SourceFile {
    fn open_hinted(&self, hint: u64) -> Result<FileSource, Error> {
        self.listed()?;
        open_hinted(&self.path, hint)
    }

    fn read_ids(&self) -> Result<(Layout, Vec<String>), Error> {
        self.listed()?;
        file_read_ids(&self.path)
    }

    fn listed(&self) -> Result<(), Error> {
        match &self.unlisted {
            Some(problem) => Err(Error::new(h5turbo_core::prelude::ErrorKind::Io, problem.clone()).in_file(&self.path)),
            None => Ok(()),
        }
    }
}

/// Where next_batch goes on: files opened ahead (with how far each was read), the
/// next file not yet opened, and reads decoded but not yet given (decoded ahead, or
/// with stop_on_error those after a failure: the next calls give them first).
#[derive(Default)]
struct Cursor {
    opened: VecDeque<Opened>,
    next_file: usize,
    held: VecDeque<Entry>,
    /// Reads per file in the files opened last (None before any): how many files
    /// the next reads need.
    reads_per_file: Option<usize>,
    /// Files before this one have been given to the hinting thread (see
    /// Reader::hint_next_files), from `hinted_from` on (its file number 0).
    hinted_until: usize,
    hinted_from: Option<usize>,
}

/// A decoded read, the number of the file it came from, and the memory its signal
/// points into. Its strings are freed with it unless taken (`take_read`).
struct Entry {
    read: h5turbo_fast5_read,
    file_no: usize,
    arena: Option<Arc<SignalArena>>,
}

impl Entry {
    /// The read, now the caller's to free; the entry keeps nothing to free.
    fn take_read(&mut self) -> h5turbo_fast5_read {
        let read = h5turbo_fast5_read { ..self.read };
        self.read.read_id = std::ptr::null_mut();
        self.read.channel_number = std::ptr::null_mut();
        self.read.error = std::ptr::null_mut();
        read
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // SAFETY: the strings were made by decode, and given to no one (take_read
        // clears what it gives).
        unsafe { free_read(&self.read) };
    }
}

struct Opened {
    file_no: usize,
    reads: Result<Arc<(File, Fast5Index)>, Arc<Error>>,
    next_read: usize,
}

impl Opened {
    /// Entries this file still gives: its unread reads, or one for a file that failed.
    fn remaining(&self) -> usize {
        match &self.reads {
            Ok(r) => r.1.len().saturating_sub(self.next_read),
            Err(_) => usize::from(self.next_read == 0),
        }
    }
}

/// One entry of a batch: read `read` of an opened file, or a file's own error.
enum Job {
    Read { file_no: usize, reads: Arc<(File, Fast5Index)>, read: usize },
    FileError { file_no: usize, error: Arc<Error> },
}

/// A job after its first step: a read's metadata with its signal found, or an entry
/// already failed.
enum Located {
    Read { file_no: usize, file: Arc<(File, Fast5Index)>, record: ReadRecord<SignalDataset> },
    Failed { file_no: usize, read: h5turbo_fast5_read },
}

impl Located {
    /// The samples its signal will take (0 when it has none or failed).
    fn signal_len(&self) -> usize {
        match self {
            Located::Read { record: ReadRecord { signal: Ok(signal), .. }, .. } => signal.len(),
            _ => 0,
        }
    }

    /// Its signal fails: there is no memory for it.
    fn fail_signal(&mut self) {
        if let Located::Read { record, .. } = self {
            if let Ok(signal) = &record.signal {
                let message = format!("{}: cannot allocate its {} samples", signal.name(), signal.len());
                record.signal = Err(Error::out_of_memory(message));
            }
        }
    }
}

/// The samples of all their signals; None when the sum overflows.
fn total_len(located: &[Located]) -> Option<usize> {
    located.iter().try_fold(0usize, |sum, l| sum.checked_add(l.signal_len()))
}

/// How errors name a stream: the path it was opened with, or the first of them and
/// how many more (None when no path is known).
fn stream_label(given: &[PathBuf]) -> Option<PathBuf> {
    let first = given.first()?;
    Some(match given.len() {
        1 => first.clone(),
        n => {
            let mut named = first.clone().into_os_string();
            named.push(format!(" (and {} more paths)", n - 1));
            PathBuf::from(named)
        }
    })
}

/// The paths of h5turbo_fast5_open's arguments that can be read (for its messages).
unsafe fn given_paths(paths: *const *const c_char, n_paths: usize) -> Vec<PathBuf> {
    if paths.is_null() {
        return Vec::new();
    }
    (0..n_paths).filter_map(|i| path_arg(*paths.add(i), "path").ok().map(Path::to_path_buf)).collect()
}

/// Run an entry point on a stream: its errors (a NULL output too) name the paths the
/// stream was opened with, when they name no file of their own.
unsafe fn guard_fast5(f5: *const h5turbo_fast5, body: impl FnOnce() -> Result<(), Error>) -> c_int {
    let named = crate::handles::live(f5).map(|h| h.label.as_path()).filter(|p| !p.as_os_str().is_empty());
    guard_named(named, None, || {
        if let Some(handle) = crate::handles::live(f5) {
            handle.in_this_process()?;
        }
        body()
    })
}

/// A file to read, or a folder under the ones given that could not be listed (why).
type Found = (PathBuf, Option<String>);

/// The files under `paths` in order: files as given, folders walked recursively
/// (entries by name) for `*.fast5`. A folder given that cannot be listed is an error;
/// one found inside it is an entry that fails (as `find` reports it and goes on).
fn expand(paths: &[PathBuf]) -> Result<Vec<Found>, Error> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut seen, &mut out).map_err(|e| Error::io(e, "cannot list the folder").in_file(path))?;
        } else {
            out.push((path.clone(), None));
        }
    }
    Ok(out)
}

/// The *.fast5 files under `dir`, in name order, depth first. Links to folders are
/// followed (a run's sub-folders often live on other disks; ont_fast5_api's and
/// h5turbo's Python walks follow them too), each folder walked once (`seen`: device and
/// inode), so a link back up the tree lists nothing twice; links to files are taken.
fn walk(dir: &Path, seen: &mut HashSet<(u64, u64)>, out: &mut Vec<Found>) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir)?;
    if !seen.insert((meta.dev(), meta.ino())) {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir)?;
    // The entry's type comes with the listing on most file systems: only links (and
    // entries of unknown type) cost a stat, not each of 100,000 files on a network disk.
    let mut found: Vec<(PathBuf, Option<std::fs::FileType>)> =
        entries.filter_map(|e| e.ok()).map(|e| (e.path(), e.file_type().ok())).collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, kind) in found {
        let folder = match kind {
            Some(k) if k.is_dir() => true,
            Some(k) if k.is_file() => false,
            _ => path.is_dir(), // a link (followed) or a type the listing did not give
        };
        if folder {
            if let Err(e) = walk(&path, seen, out) {
                out.push((path, Some(format!("cannot list the folder: {}", e))));
            }
        } else if path.as_os_str().as_encoded_bytes().ends_with(b".fast5") {
            // by the name's ending, as ont_fast5_api and the Python walk: a file named
            // ".fast5" has no extension to Rust
            out.push((path, None));
        }
    }
    Ok(())
}

/// Open fast5 files and/or folders (searched recursively for *.fast5, in name order;
/// links to folders inside them are followed, each folder once, as ont_fast5_api
/// follows them; a folder inside them that cannot be listed is an entry that fails in
/// its place). threads: the
/// decoding pool (0 = H5TURBO_THREADS or every core); with two or more, each
/// h5turbo_fast5_next_batch starts decoding the next batch (of the same size) before
/// it returns, so reading overlaps the caller's work: at most one batch decoded ahead.
/// stop_on_error: a failed read makes h5turbo_fast5_next_batch fail instead of being
/// reported in the batch. A stream belongs to the process that opened it: in a child of
/// fork() its calls fail with H5TURBO_E_INVALID (h5turbo_fast5_close does nothing
/// there); open the files again in the child.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_fast5_open(
    paths: *const *const c_char,
    n_paths: usize,
    threads: c_int,
    stop_on_error: c_int,
    f5: *mut *mut h5turbo_fast5,
) -> c_int {
    let named = stream_label(&given_paths(paths, n_paths));
    guard_named(named.as_deref(), None, || {
        let out = out_handle(f5, "f5")?;
        let threads = threads_arg(threads)?;
        if n_paths > 0 && paths.is_null() {
            return Err(invalid("paths is NULL"));
        }
        let mut given = Vec::with_capacity(n_paths);
        for i in 0..n_paths {
            given.push(path_arg(*paths.add(i), &format!("paths[{}]", i))?.to_path_buf());
        }
        let files = expand(&given)?
            .into_iter()
            .map(|(path, unlisted)| {
                let c_path = Arc::new(c_string_lossy(path.as_os_str().as_encoded_bytes()));
                SourceFile { path, c_path, unlisted }
            })
            .collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("h5turbo-fast5-{}", i))
            .build()
            .map_err(|e| Error::new(h5turbo_core::prelude::ErrorKind::Io, format!("cannot start threads: {}", e)))?;
        let reader = Reader {
            files,
            stop_on_error: stop_on_error != 0,
            pool,
            cursor: Mutex::new(Cursor::default()),
            index: OnceLock::new(),
            recent: Mutex::new(Vec::new()),
            spares: Arc::default(),
            hints: FileHints::start(read_ahead::window()),
        };
        let label = stream_label(&given).unwrap_or_default();
        let handle = h5turbo_fast5 { reader: Arc::new(reader), label, ahead: Mutex::new(None), opened_by: std::process::id() };
        give_handle(out, handle);
        Ok(())
    })
}

/// The number of fast5 files found (after walking folders).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_fast5_file_count(f5: *const h5turbo_fast5, n: *mut usize) -> c_int {
    guard_fast5(f5, || {
        let n = out_ptr(n, "n")?;
        *n = deref(f5, "f5")?.reader.files.len();
        Ok(())
    })
}

/// Close (NULL is fine). Batches already taken stay valid.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_fast5_close(f5: *mut h5turbo_fast5) {
    // A copy of a stream in a child of a fork: dropping it would wait for the parent's
    // threads (a batch decoding ahead, the pool) forever. Its memory is left to the
    // child; the parent closes the stream itself.
    if crate::handles::live(f5).is_some_and(|handle| handle.in_this_process().is_err()) {
        return;
    }
    close_handle(f5, "f5");
}

/// Files are opened in waves of this many, `WAVES_AHEAD` waves ahead of the one being
/// parsed: at most `OPEN_WAVE * (WAVES_AHEAD + 1)` descriptors are open at once.
/// Opening a whole batch's files at once (512) grew the process's descriptor table
/// past its first 64 slots, and in a process of several threads each growth waits for
/// an RCU grace period: the first batch of 512 single-read files spent 23-36 ms
/// opening them, the later ones (the table grown) 1.1-2 ms; 2000 single-read files,
/// 2 threads, warm: 0.135 -> 0.101 s. Two waves ahead kept cold reads as fast as one
/// wave of all 512 (0.18-0.20 s; 24 x 1, 16 x 3 and 12 x 4 alike within the noise).
const OPEN_WAVE: usize = 16;
const WAVES_AHEAD: usize = 2;

/// Multi-read files given to the hinting thread ahead of those opened, at least.
const MIN_FILES_HINTED: usize = 8;

/// Open `files` and index their reads, in parallel, in waves: while one wave is
/// parsed, the next is opened and hinted to the system (the read-ahead window shared
/// among the waves ahead), so a cold file's bytes are on their way before its turn
/// (2000 single-read files, cold, 2 threads: 0.28 -> 0.18 s against no hints).
/// `hinted`: the files are with the hinting thread already, so none is hinted here.
fn open_in_waves(files: &[SourceFile], hinted: bool) -> Vec<Result<Arc<(File, Fast5Index)>, Arc<Error>>> {
    let hint = if hinted { 0 } else { read_ahead::window() / files.len().clamp(1, OPEN_WAVE * WAVES_AHEAD) as u64 };
    let open = |wave: &[SourceFile]| -> Vec<Result<FileSource, Error>> { wave.par_iter().map(|f| f.open_hinted(hint)).collect() };
    let waves: Vec<&[SourceFile]> = files.chunks(OPEN_WAVE).collect();
    let mut ahead: VecDeque<Vec<Result<FileSource, Error>>> = waves.iter().take(WAVES_AHEAD).map(|w| open(w)).collect();
    let mut indexed = Vec::with_capacity(files.len());
    for (i, wave) in waves.iter().enumerate() {
        let sources = ahead.pop_front().unwrap_or_default();
        let parse = || -> Vec<_> {
            sources.into_par_iter().zip(*wave).map(|(source, f)| index_reads(source.and_then(|s| file_from_source(s, &f.path)), &f.path)).collect()
        };
        let (parsed, opened) = rayon::join(parse, || waves.get(i + WAVES_AHEAD).map(|w| open(w)));
        indexed.extend(parsed);
        ahead.extend(opened);
    }
    indexed
}

fn open_reads(path: &Path) -> Result<Arc<(File, Fast5Index)>, Arc<Error>> {
    index_reads(open_file(path), path)
}

/// A file's reads, from its opened bytes.
fn index_reads(file: Result<File, Error>, path: &Path) -> Result<Arc<(File, Fast5Index)>, Arc<Error>> {
    let opened = caught(|| {
        let file = file?;
        let index = Fast5Index::open(&file)?;
        Ok((file, index))
    });
    opened.in_file(path).map(Arc::new).map_err(Arc::new)
}

impl Reader {
    /// The next entries (reads, or file errors), at most `max`, in file order.
    fn plan(&self, cursor: &mut Cursor, max: usize) -> Vec<Job> {
        let mut jobs = Vec::new();
        while jobs.len() < max {
            let ahead: usize = cursor.opened.iter().map(Opened::remaining).sum();
            if ahead < max - jobs.len() && cursor.next_file < self.files.len() {
                self.open_ahead(cursor, max - jobs.len() - ahead);
            }
            if let Some(Opened { file_no, reads: Ok(reads), next_read }) = cursor.opened.front() {
                self.report_reached(cursor.hinted_from, *file_no, *next_read, reads.1.len());
            }
            let Some(front) = cursor.opened.front_mut() else { break };
            match &front.reads {
                Ok(reads) => {
                    let take = front.remaining().min(max - jobs.len());
                    for read in front.next_read..front.next_read + take {
                        jobs.push(Job::Read { file_no: front.file_no, reads: reads.clone(), read });
                    }
                    front.next_read += take;
                }
                Err(error) => {
                    if front.next_read == 0 {
                        jobs.push(Job::FileError { file_no: front.file_no, error: error.clone() });
                    }
                    front.next_read = 1;
                }
            }
            if front.remaining() == 0 {
                cursor.opened.pop_front();
            }
        }
        jobs
    }

    /// Open (in parallel) the next files that `wanted` more reads may need, at the
    /// reads per file seen so far: single-read files one per read, multi-read files
    /// one per few hundred reads (opening more would parse their indexes early and
    /// spread the read-ahead window thin: 50 multi-read files cold, 2 threads, 1.80 ->
    /// 1.33 s). The first call opens one file per thread to learn.
    fn open_ahead(&self, cursor: &mut Cursor, wanted: usize) {
        let first = cursor.next_file;
        let count = match cursor.reads_per_file {
            None => self.pool.current_num_threads().min(wanted),
            Some(per_file) => wanted.div_ceil(per_file.max(1)),
        };
        let last = first.saturating_add(count.max(1)).min(self.files.len());
        let files = &self.files[first..last];
        let hinted = self.hints.is_some() && last <= cursor.hinted_until;
        let opened = self.pool.install(|| open_in_waves(files, hinted));
        let mut reads_found = 0;
        for (i, reads) in opened.into_iter().enumerate() {
            let opened = Opened { file_no: first + i, reads, next_read: 0 };
            reads_found += opened.remaining();
            cursor.opened.push_back(opened);
        }
        cursor.reads_per_file = Some(reads_found / files.len().max(1));
        cursor.next_file = last;
        self.hint_next_files(cursor, count);
    }

    /// Give the files after those opened to the hinting thread, in order: those the
    /// next two batches need (at the reads per file seen so far) and at least
    /// `MIN_FILES_HINTED`; the thread paces itself by the read-ahead window. Only files
    /// of many reads: single-read files are small, hinted as their batch opens, and a
    /// second open of each would cost more than it saves.
    fn hint_next_files(&self, cursor: &mut Cursor, count: usize) {
        let Some(hints) = &self.hints else { return };
        if cursor.reads_per_file.is_none_or(|n| n < 2) {
            return;
        }
        let start = cursor.hinted_until.max(cursor.next_file);
        let end = cursor.next_file.saturating_add((2 * count).max(MIN_FILES_HINTED)).min(self.files.len());
        if start >= end {
            return;
        }
        for file in &self.files[start..end] {
            let number = hints.push(file.path.clone());
            if number == 0 {
                cursor.hinted_from = Some(start);
            }
        }
        cursor.hinted_until = end;
    }

    /// Tell the hinting thread that reads are planned from read `done` of `total` in
    /// file `file_no` (`hinted_from`: the file given to it first).
    fn report_reached(&self, hinted_from: Option<usize>, file_no: usize, done: usize, total: usize) {
        if let (Some(hints), Some(from)) = (&self.hints, hinted_from) {
            if let Some(number) = file_no.checked_sub(from) {
                hints.reached(number as u64, done as u64, total as u64);
            }
        }
    }

    /// A read's metadata and its signal found (not decoded), or a file's error.
    fn locate(&self, job: &Job) -> Located {
        match job {
            Job::Read { file_no, reads, read } => {
                let record = caught(|| locate_record(&reads.1, *read)).unwrap_or_else(|e| ReadRecord::failed(&reads.1, *read, e));
                Located::Read { file_no: *file_no, file: reads.clone(), record }
            }
            Job::FileError { file_no, error } => {
                let mut read = empty_read(self.files[*file_no].c_path.as_ptr());
                read.status = code_of(error.kind());
                read.error = c_string_lossy(message_of(error).as_bytes()).into_raw();
                Located::Failed { file_no: *file_no, read }
            }
        }
    }

    /// The jobs' indexes in the order their reads lie in the files: each thread then
    /// takes a run of neighbours, whose metadata shares blocks and whose signals are
    /// read in file order (random order read each metadata block 2-3 times).
    fn file_order(jobs: &[Job]) -> Vec<usize> {
        let mut order: Vec<usize> = (0..jobs.len()).collect();
        order.sort_by_key(|&j| match &jobs[j] {
            Job::Read { file_no, reads, read } => (*file_no, reads.1.position(*read), j),
            Job::FileError { file_no, .. } => (*file_no, 0, j),
        });
        order
    }

    /// A located read with its signal decoded into `samples` (exactly its length).
    fn finish(&self, located: Located, samples: &mut [i16]) -> (h5turbo_fast5_read, usize) {
        match located {
            Located::Read { file_no, file, record } => {
                let record = record.map_signal(|signal| caught(|| signal.read_into(samples)).map(|()| samples.len()));
                (to_c_read(record, file.0.path(), self.files[file_no].c_path.as_ptr()), file_no)
            }
            Located::Failed { file_no, read } => (read, file_no),
        }
    }

    /// The jobs' reads in order: metadata first (in parallel), then every signal
    /// decoded (in parallel) into one arena sized for them all; both steps in file
    /// order.
    fn decode(&self, jobs: &[Job]) -> Vec<Entry> {
        let order = Self::file_order(jobs);
        let mut located: Vec<Located> = self.map_jobs(order.clone(), |j| self.locate(&jobs[j]));
        let mut samples = self.signal_memory(&mut located);
        let lengths: Vec<usize> = located.iter().map(Located::signal_len).collect();
        let total = lengths.iter().sum();
        let mut slots = Vec::with_capacity(lengths.len());
        let mut rest = &mut samples[..total];
        for &len in &lengths {
            let (slot, tail) = std::mem::take(&mut rest).split_at_mut(len);
            slots.push(slot);
            rest = tail;
        }
        let pairs: Vec<(Located, &mut [i16])> = located.into_iter().zip(slots).collect();
        let reads: Vec<(h5turbo_fast5_read, usize)> = self.map_jobs(pairs, |(l, slot)| self.finish(l, slot));
        let arena = Arc::new(SignalArena { samples, spares: Arc::downgrade(&self.spares) });
        // Pointers taken from the arena where it now lives (moving the vector moved
        // no samples); a read that failed keeps a NULL signal.
        let base = arena.samples.as_ptr().cast_mut();
        let mut at = 0;
        let mut entries: Vec<Option<Entry>> = (0..jobs.len()).map(|_| None).collect();
        for (((mut read, file_no), len), j) in reads.into_iter().zip(lengths).zip(order) {
            if read.status == H5TURBO_OK && read.n_samples > 0 {
                // SAFETY: at + len <= total <= the arena's length.
                read.signal = unsafe { base.add(at) };
            }
            at += len;
            entries[j] = Some(Entry { read, file_no, arena: (len > 0).then(|| arena.clone()) });
        }
        entries.into_iter().flatten().collect()
    }

    /// `f` over `items`, in order: on the pool, or for one item (a read fetched by id)
    /// on the calling thread: no wake-up of a pool thread for one read, and reads
    /// fetched from many threads of the caller's are decoded side by side, not one
    /// after another on the pool.
    fn map_jobs<T: Send, R: Send>(&self, items: Vec<T>, f: impl Fn(T) -> R + Sync + Send) -> Vec<R> {
        if items.len() <= 1 {
            return items.into_iter().map(f).collect();
        }
        self.pool.install(|| items.into_par_iter().map(f).collect())
    }

    /// An arena for the signals of `located`. The lengths come from the files: when
    /// they cannot all be had, the signals that cannot be had alone fail (their reads
    /// report it), then, if the rest still cannot, every signal of the batch.
    fn signal_memory(&self, located: &mut [Located]) -> Vec<i16> {
        if let Some(samples) = self.arena_for(total_len(located)) {
            return samples;
        }
        for l in located.iter_mut() {
            if zeroed_vec::<i16>(l.signal_len(), "a signal").is_err() {
                l.fail_signal();
            }
        }
        if let Some(samples) = self.arena_for(total_len(located)) {
            return samples;
        }
        located.iter_mut().for_each(Located::fail_signal);
        Vec::new()
    }

    /// Memory for `total` samples: a spare arena large enough, else a new one with
    /// room for larger batches to come; None when `total` cannot be had.
    fn arena_for(&self, total: Option<usize>) -> Option<Vec<i16>> {
        let total = total?;
        let mut spares = self.spares.lock().unwrap_or_else(|p| p.into_inner());
        let fitting = (0..spares.len()).filter(|&i| spares[i].len() >= total).min_by_key(|&i| spares[i].len());
        if let Some(i) = fitting {
            return Some(spares.swap_remove(i));
        }
        drop(spares);
        zeroed_vec(total.saturating_add(total / 4), "signals").or_else(|_| zeroed_vec(total, "signals")).ok()
    }

    fn batch_of(&self, entries: Vec<Entry>) -> *mut h5turbo_fast5_batch {
        let mut paths: Vec<Arc<CString>> = Vec::new();
        let mut arenas: Vec<Arc<SignalArena>> = Vec::new();
        let mut reads = Vec::with_capacity(entries.len());
        for mut entry in entries {
            let path = &self.files[entry.file_no].c_path;
            if !paths.last().is_some_and(|p| Arc::ptr_eq(p, path)) {
                paths.push(path.clone());
            }
            if let Some(arena) = entry.arena.take() {
                if !arenas.iter().any(|a| Arc::ptr_eq(a, &arena)) {
                    arenas.push(arena);
                }
            }
            reads.push(entry.take_read());
        }
        let n = reads.len();
        let reads = if n == 0 { std::ptr::null_mut() } else { Box::into_raw(reads.into_boxed_slice()).cast() };
        let owned = Box::new(OwnedBatch { batch: h5turbo_fast5_batch { reads, n }, paths, arenas });
        crate::handles::register(Box::into_raw(owned)).cast::<h5turbo_fast5_batch>()
    }

    /// The next entries, at most `max`: held ones first, else newly planned and decoded.
    fn next_entries(&self, cursor: &mut Cursor, max: usize) -> Vec<Entry> {
        let n = max.min(cursor.held.len());
        let mut entries: Vec<Entry> = cursor.held.drain(..n).collect();
        if entries.len() < max && (!self.stop_on_error || entries.is_empty()) {
            let jobs = self.plan(cursor, max - entries.len());
            entries.extend(self.decode(&jobs));
        }
        entries
    }

    /// More entries may come (files or reads not yet given).
    fn has_more(&self, cursor: &Cursor) -> bool {
        !cursor.held.is_empty() || !cursor.opened.is_empty() || cursor.next_file < self.files.len()
    }

    /// read id -> (file, read), from every file's read ids (`file_read_ids`), built
    /// on the pool at the first fetch.
    fn index(&self) -> &ReadLocations {
        self.index.get_or_init(|| {
            let per_file = self.pool.install(|| self.files.par_iter().map(|f| caught(|| f.read_ids())).collect());
            ReadLocations::from_files(per_file)
        })
    }
}

impl Reader {
    /// The reads with ids `ids` (every one in `index`), in that order. Their files are
    /// taken in order, `GET_FILES_AT_ONCE` at a time (each opened once, in parallel,
    /// a multi-read file's read groups looked up by name), and each wave's reads
    /// decoded together.
    fn fetch(&self, index: &ReadLocations, ids: &[&str]) -> Result<Vec<Entry>, Error> {
        let found: Vec<(usize, usize)> = ids.iter().map(|id| index.find(id)).collect::<Result<_, _>>()?;
        // each file's reads, by their place in `ids`, in the order asked
        let mut asked: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (at, &(file_no, _)) in found.iter().enumerate() {
            asked.entry(file_no).or_default().push(at);
        }
        let asked: Vec<(usize, Vec<usize>)> = asked.into_iter().collect();
        let mut entries: Vec<Option<Entry>> = (0..ids.len()).map(|_| None).collect();
        for wave in asked.chunks(GET_FILES_AT_ONCE) {
            let opened = self.map_jobs(wave.iter().collect(), |(file_no, places)| {
                self.reads_for_get(index, *file_no, places.iter().map(|&at| (ids[at], found[at].1)).collect())
            });
            let mut jobs = Vec::new();
            let mut places = Vec::new();
            for ((file_no, asked_here), reads) in wave.iter().zip(opened) {
                let file_no = *file_no;
                for (k, &at) in asked_here.iter().enumerate() {
                    jobs.push(match &reads {
                        Ok((reads, numbers)) => Job::Read { file_no, reads: reads.clone(), read: numbers[k] },
                        Err(error) => Job::FileError { file_no, error: error.clone() },
                    });
                    places.push(at);
                }
            }
            for (entry, at) in self.decode(&jobs).into_iter().zip(places) {
                entries[at] = Some(entry);
            }
        }
        Ok(entries.into_iter().flatten().collect())
    }

    /// File `file_no` opened for the reads `asked` (id, number in the file's listing),
    /// and where each of them is in the index given: a listed file's own numbers, or
    /// for a multi-read file an index of just these read groups, in the order asked.
    fn reads_for_get(&self, index: &ReadLocations, file_no: usize, asked: Vec<(&str, usize)>) -> Result<ReadsAsked, Arc<Error>> {
        let path = &self.files[file_no].path;
        match self.opened_for_get(file_no, index.layout(file_no))? {
            GetFile::Indexed(reads) => {
                let numbers = caught(|| reads.1.numbers_of(&asked)).in_file(path).map_err(Arc::new)?;
                Ok((reads, numbers))
            }
            GetFile::MultiRead(file) => {
                let (named, numbers) =
                    caught(|| Fast5Index::for_reads(&file, Layout::MultiRead, &asked)).in_file(path).map_err(Arc::new)?;
                Ok((Arc::new((file, named)), numbers))
            }
        }
    }

    /// File `file_no` opened, from the recent files when it is one of them.
    fn opened_for_get(&self, file_no: usize, layout: Option<Layout>) -> Result<GetFile, Arc<Error>> {
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = recent.iter().position(|(n, _)| *n == file_no) {
            let entry = recent.remove(at);
            let file = entry.1.clone();
            recent.push(entry);
            return Ok(file);
        }
        drop(recent); // opened without the lock: other threads' gets go on meanwhile
        let path = &self.files[file_no].path;
        let file = match layout {
            Some(Layout::MultiRead) => GetFile::MultiRead(caught(|| open_file(path)).in_file(path).map_err(Arc::new)?),
            _ => GetFile::Indexed(open_reads(path)?),
        };
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        if recent.len() == RECENT_FILES {
            recent.remove(0);
        }
        recent.push((file_no, file.clone()));
        Ok(file)
    }
}

fn empty_read(path: *const c_char) -> h5turbo_fast5_read {
    h5turbo_fast5_read {
        read_id: CString::default().into_raw(),
        signal: std::ptr::null_mut(),
        n_samples: 0,
        digitisation: f64::NAN,
        offset: f64::NAN,
        range: f64::NAN,
        sampling_rate: f64::NAN,
        channel_number: CString::default().into_raw(),
        read_number: 0,
        start_time: 0,
        duration: 0,
        path,
        status: H5TURBO_OK,
        error: std::ptr::null_mut(),
    }
}

/// A read as C sees it. Values the file does not hold are NaN (the four channel
/// values), 0 (read number, start time, duration) or "" (channel number); a value
/// of the wrong kind fails the read.
/// `record.signal` is the number of samples decoded; the caller points `signal` at
/// them.
fn to_c_read(record: ReadRecord<usize>, file: &Path, path: *const c_char) -> h5turbo_fast5_read {
    let mut read = empty_read(path);
    let id = record.read_id();
    read.read_id = replace_string(read.read_id, id.as_deref().unwrap_or("").as_bytes());
    let failure = match fill(&mut read, &record) {
        // no id, no read: the by-id index leaves such a read out (as ont_fast5_api
        // refuses its file), and a made-up id would travel into the caller's output
        Ok(()) if id.is_none() => Some(Error::format("the read has no read_id attribute (a string)")),
        Ok(()) => record.signal.map(|n| read.n_samples = n as u64).err(),
        Err(e) => Some(e),
    };
    if let Some(e) = failure {
        let e = e.in_object(&record.name).in_file(file);
        read.status = code_of(e.kind());
        read.error = c_string_lossy(message_of(&e).as_bytes()).into_raw();
    }
    read
}

fn replace_string(old: *mut c_char, bytes: &[u8]) -> *mut c_char {
    if !old.is_null() {
        // SAFETY: made by CString::into_raw in empty_read.
        drop(unsafe { CString::from_raw(old) });
    }
    c_string_lossy(bytes).into_raw()
}

/// The channel and read attributes of a read.
fn fill<S>(read: &mut h5turbo_fast5_read, record: &ReadRecord<S>) -> Result<(), Error> {
    let channel = |name: &str| -> Result<f64, Error> {
        let Some(value) = record.channel_attribute(name) else { return Ok(f64::NAN) };
        single_value(value)
            .and_then(|s| s.as_f64())
            .ok_or_else(|| Error::unsupported(format!("channel_id attribute '{}' is not a scalar number", name)))
    };
    read.digitisation = channel("digitisation")?;
    read.offset = channel("offset")?;
    read.range = channel("range")?;
    read.sampling_rate = channel("sampling_rate")?;
    read.read_number = read_integer(record, "read_number", "int32_t")?;
    read.start_time = read_integer(record, "start_time", "uint64_t")?;
    read.duration = read_integer(record, "duration", "uint64_t")?;
    let channel_number = record.channel_text("channel_number").unwrap_or_default();
    read.channel_number = replace_string(read.channel_number, &channel_number);
    Ok(())
}

/// A raw-group integer attribute in the C field's type: 0 when absent; a float holding
/// a whole number is taken (some writers store times as floats); anything else (text,
/// a fraction, a value the field cannot hold) fails the read, naming the attribute.
fn read_integer<S, T: TryFrom<i128> + Default>(record: &ReadRecord<S>, name: &str, c_type: &str) -> Result<T, Error> {
    let Some(value) = record.attribute(name) else { return Ok(T::default()) };
    let number = single_value(value).and_then(|s| match s.as_integer() {
        Some(v) => Some(v),
        None => s.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 2f64.powi(64)).map(|f| f as i128),
    });
    number.and_then(|v| T::try_from(v).ok()).ok_or_else(|| {
        Error::unsupported(format!(
            "read attribute '{}' is not a whole number that fits the read's {} field",
            name, c_type
        ))
    })
}

/// The next reads, max_reads of them (fewer only at the end, or after a failure with
/// stop_on_error), decoded in parallel, in file order; `(*batch)->n` is 0 at the end. A file that cannot be read gives one entry with its error (an
/// empty read_id); a read that fails gives its entry with status and error set.
/// With stop_on_error, a batch ends before the first failure, and the call that
/// reaches the failure returns its status instead of a batch; the calls after it go
/// on after it. No read is lost either way.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_fast5_next_batch(
    f5: *mut h5turbo_fast5,
    max_reads: usize,
    batch: *mut *mut h5turbo_fast5_batch,
) -> c_int {
    guard_fast5(f5, || {
        let out = out_handle(batch, "batch")?;
        let f5 = deref(f5, "f5")?;
        if max_reads == 0 {
            return Err(invalid("max_reads is 0"));
        }
        // Held for the whole call: batches are given in file order.
        let mut ahead = f5.ahead.lock().unwrap_or_else(|p| p.into_inner());
        let reader = &f5.reader;
        let decoded = match ahead.take() {
            Some(job) => job.entries()?,
            None => Vec::new(),
        };
        let mut cursor = reader.cursor.lock().unwrap_or_else(|p| p.into_inner());
        for entry in decoded.into_iter().rev() {
            cursor.held.push_front(entry);
        }
        let mut entries = reader.next_entries(&mut cursor, max_reads);
        if reader.stop_on_error {
            if let Some(at) = entries.iter().position(|e| e.read.status != H5TURBO_OK) {
                let mut rest = entries.split_off(at).into_iter();
                let failure = if at == 0 { rest.next() } else { None };
                for entry in rest.rev() {
                    cursor.held.push_front(entry);
                }
                if let Some(failed) = failure {
                    return Err(error_of(&failed.read));
                }
            }
        }
        if reader.pool.current_num_threads() > 1 && reader.has_more(&cursor) {
            drop(cursor);
            *ahead = Some(decode_ahead(reader, max_reads));
        }
        *out = reader.batch_of(entries);
        Ok(())
    })
}

/// Start decoding the next `max` reads on the pool.
fn decode_ahead(reader: &Arc<Reader>, max: usize) -> Ahead {
    let (sender, done) = std::sync::mpsc::sync_channel(1);
    let job_reader = reader.clone();
    reader.pool.spawn(move || {
        let entries = catch_unwind(AssertUnwindSafe(move || {
            let mut cursor = job_reader.cursor.lock().unwrap_or_else(|p| p.into_inner());
            job_reader.next_entries(&mut cursor, max)
            // job_reader goes here, before the handle (waiting for the send) can close
        }))
        .map_err(|panic| Error::new(ErrorKind::Io, format!("internal error in h5turbo (please report): {}", panic_text(panic.as_ref()))));
        // The handle's drop waits for this; a failed send only means the batch is freed here.
        let _ = sender.send(entries);
    });
    Ahead { done }
}

/// A failed read's error, as the core error it was made from.
fn error_of(read: &h5turbo_fast5_read) -> Error {
    // SAFETY: error is a CString made by to_c_read or run when status != 0.
    let message = if read.error.is_null() { String::new() } else { unsafe { std::ffi::CStr::from_ptr(read.error) }.to_string_lossy().into_owned() };
    // The message names the read's file already: an empty file keeps the stream's
    // paths from being put before it (see errors::message_of).
    Error::new(kind_of(read.status), message).in_file(Path::new(""))
}

fn kind_of(code: c_int) -> h5turbo_core::prelude::ErrorKind {
    use h5turbo_core::prelude::ErrorKind::*;
    match code {
        H5TURBO_E_UNSUPPORTED => Unsupported,
        H5TURBO_E_NOT_FOUND => NotFound,
        H5TURBO_E_IO => Io,
        H5TURBO_E_INVALID => InvalidArgument,
        H5TURBO_E_CLOSED => Closed,
        H5TURBO_E_NOMEM => OutOfMemory,
        _ => Format,
    }
}

/// The read with id `read_id` (a batch of one; free it with h5turbo_fast5_batch_free).
/// The first call builds an index of every file's read ids (in parallel); a read id
/// that no file holds is H5TURBO_E_NOT_FOUND; one that several files hold is taken
/// from the first of them, in the order the files are read. A read that fails is
/// returned with its status and error set, as in batches.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_fast5_get(
    f5: *mut h5turbo_fast5,
    read_id: *const c_char,
    one: *mut *mut h5turbo_fast5_batch,
) -> c_int {
    guard_fast5(f5, || {
        let out = out_handle(one, "one")?;
        let f5 = &deref(f5, "f5")?.reader;
        let id = text(read_id, "read_id")?;
        let made = f5.batch_of(f5.fetch(f5.index(), &[id])?);
        *out = made;
        Ok(())
    })
}

/// The reads with ids `read_ids[0..n]`, in that order, as one batch (free it with
/// h5turbo_fast5_batch_free), as slow5lib's slow5_get_batch: a caller with a list of
/// reads to fetch (f5c's batch of a BAM file's reads) passes them at once, and they
/// are decoded on the stream's pool, each file opened once (64 files at a time) and
/// its reads taken in file order. The first call (of this or h5turbo_fast5_get) builds the index of read ids.
/// A read id no file holds fails the call (H5TURBO_E_NOT_FOUND, naming it; no batch);
/// a read that cannot be read gives its entry with status and error set, as in
/// batches. The same id may be asked more than once.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_fast5_get_batch(
    f5: *mut h5turbo_fast5,
    read_ids: *const *const c_char,
    n: usize,
    batch: *mut *mut h5turbo_fast5_batch,
) -> c_int {
    guard_fast5(f5, || {
        let out = out_handle(batch, "batch")?;
        let f5 = &deref(f5, "f5")?.reader;
        if read_ids.is_null() && n > 0 {
            return Err(Error::invalid_argument("read_ids is NULL"));
        }
        let ids: Vec<&str> = (0..n).map(|i| text(*read_ids.add(i), &format!("read_ids[{}]", i))).collect::<Result<_, _>>()?;
        *out = f5.batch_of(f5.fetch(f5.index(), &ids)?);
        Ok(())
    })
}

/// Every read id of the files, in file order then read order (slow5lib's
/// slow5_get_rids): the index h5turbo_fast5_get uses, built here if it is not yet. An
/// id several files hold is listed once. Free with h5turbo_strings_free(*ids, *n).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_fast5_read_ids(f5: *mut h5turbo_fast5, ids: *mut *mut *mut c_char, n: *mut usize) -> c_int {
    guard_fast5(f5, || {
        let (ids, n) = out_strings(ids, "ids", n, "n")?;
        let f5 = &deref(f5, "f5")?.reader;
        give_strings(f5.index().in_file_order().into_iter().map(|(id, _, _)| id.as_bytes()), ids, n)?;
        Ok(())
    })
}

/// Free a batch (NULL is fine): every read's strings and signal, and the batch.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_fast5_batch_free(batch: *mut h5turbo_fast5_batch) {
    // SAFETY: made by batch_of: an OwnedBatch whose first field is the batch.
    close_handle(batch.cast::<OwnedBatch>(), "batch");
}

impl Drop for OwnedBatch {
    fn drop(&mut self) {
        if self.batch.n == 0 {
            return;
        }
        // SAFETY: batch_of made `reads` a boxed slice of n reads, each read's strings
        // its own; nothing else frees them. The signals go with the arenas.
        unsafe {
            let reads = Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.batch.reads, self.batch.n));
            for read in reads.iter() {
                free_read(read);
            }
        }
    }
}

/// Free a read's strings (its signal lives in an arena).
unsafe fn free_read(read: &h5turbo_fast5_read) {
    for s in [read.read_id, read.channel_number, read.error] {
        if !s.is_null() {
            drop(CString::from_raw(s));
        }
    }
}

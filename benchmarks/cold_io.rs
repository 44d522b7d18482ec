//! Cold-read mechanisms compared on one file, outside the engine (issue 16): the file
//! is cut into pieces (stand-ins for chunks), each piece read and then "decoded" (a CPU
//! pass over its bytes, `--work` times), with the file evicted from the page cache
//! before every run. Mechanisms:
//!   sync       each decode thread reads its next piece, then decodes it (the engine before)
//!   fadvise    sync + posix_fadvise(WILLNEED) hints `--window` bytes ahead (the engine now)
//!   iothreads  `--io-threads` threads pread pieces into buffers, at most `--window` bytes
//!              in flight, decode threads take them from a channel
//!   uring      one thread keeps `--window` bytes of reads in flight with io_uring,
//!              decode threads take the completed buffers from a channel
//!   disk       one thread, sequential 16 MiB reads, no decoding (the disk alone)
//!
//! cargo run --release -p h5turbo-core --example cold_io -- FILE --mode fadvise
//!     [--threads 2] [--piece 1M] [--window 32M] [--io-threads 4] [--work 1] [--repeats 3]

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex};
use std::time::Instant;

struct Args {
    path: String,
    mode: String,
    threads: usize,
    piece: u64,
    window: u64,
    io_threads: usize,
    work: usize,
    repeats: usize,
    hint_piece: u64,
}

fn parse() -> Args {
    let mut a = Args {
        path: String::new(),
        mode: "sync".into(),
        threads: 2,
        piece: 1 << 20,
        window: 32 << 20,
        io_threads: 4,
        work: 1,
        repeats: 3,
        hint_piece: 128 << 10,
    };
    let bytes = |v: &str| h5turbo_core::io::read_ahead::parse_bytes(v).expect("a byte size");
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().expect("a value");
        match k.as_str() {
            "--mode" => a.mode = v(),
            "--threads" => a.threads = v().parse().unwrap(),
            "--piece" => a.piece = bytes(&v()),
            "--window" => a.window = bytes(&v()),
            "--io-threads" => a.io_threads = v().parse().unwrap(),
            "--work" => a.work = v().parse().unwrap(),
            "--repeats" => a.repeats = v().parse().unwrap(),
            "--hint-piece" => a.hint_piece = bytes(&v()),
            _ => a.path = k,
        }
    }
    a
}

fn evict(file: &File) {
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
}

/// The stand-in for decoding: `passes` reads of every 8-byte word.
fn decode(buf: &[u8], passes: usize) -> u64 {
    let mut sum = 0u64;
    for _ in 0..passes {
        for w in buf.chunks_exact(8) {
            sum = sum.wrapping_add(u64::from_le_bytes(w.try_into().unwrap()));
        }
    }
    std::hint::black_box(sum)
}

fn pieces(len: u64, piece: u64) -> Vec<(u64, usize)> {
    (0..len.div_ceil(piece)).map(|i| (i * piece, piece.min(len - i * piece) as usize)).collect()
}

fn hint(file: &File, a: &Args, o: u64, l: usize) {
    let mut at = o;
    while at < o + l as u64 {
        let n = a.hint_piece.min(o + l as u64 - at);
        unsafe { libc::posix_fadvise(file.as_raw_fd(), at as i64, n as i64, libc::POSIX_FADV_WILLNEED) };
        at += n;
    }
}

/// As `run_sync`, the hints issued by a thread of their own (they block while the
/// device queue is full, which would stall a decode thread).
fn run_hint_thread(file: &File, a: &Args) {
    let all = pieces(file.metadata().unwrap().len(), a.piece);
    let next = AtomicUsize::new(0);
    let ahead = (a.window / a.piece) as usize;
    std::thread::scope(|s| {
        let (all, next) = (&all, &next);
        s.spawn(move || {
            let mut hinted = 0usize;
            while hinted < all.len() {
                if hinted < next.load(Ordering::Relaxed) + ahead {
                    let (o, l) = all[hinted];
                    hint(file, a, o, l);
                    hinted += 1;
                } else {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
            }
        });
        for _ in 0..a.threads {
            s.spawn(move || {
                let mut buf = vec![0u8; a.piece as usize];
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(off, len)) = all.get(i) else { return };
                    file.read_exact_at(&mut buf[..len], off).unwrap();
                    decode(&buf[..len], a.work);
                }
            });
        }
    });
}

fn run_sync(file: &File, a: &Args, hint: bool) {
    let all = pieces(file.metadata().unwrap().len(), a.piece);
    let next = AtomicUsize::new(0);
    let hinted = Mutex::new(0usize);
    let ahead = (a.window / a.piece) as usize;
    std::thread::scope(|s| {
        for _ in 0..a.threads {
            s.spawn(|| {
                let mut buf = vec![0u8; a.piece as usize];
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(off, len)) = all.get(i) else { return };
                    if hint {
                        let (from, to) = {
                            let mut h = hinted.lock().unwrap();
                            let from = *h;
                            *h = (*h).max((i + 1 + ahead).min(all.len()));
                            (from, *h)
                        };
                        for &(o, l) in &all[from..to] {
                            let mut at = o;
                            while at < o + l as u64 {
                                let n = a.hint_piece.min(o + l as u64 - at);
                                unsafe {
                                    libc::posix_fadvise(file.as_raw_fd(), at as i64, n as i64, libc::POSIX_FADV_WILLNEED)
                                };
                                at += n;
                            }
                        }
                    }
                    file.read_exact_at(&mut buf[..len], off).unwrap();
                    decode(&buf[..len], a.work);
                }
            });
        }
    });
}

/// Bytes in flight, bounded: taken before a read, given back after its decode.
struct Budget {
    free: Mutex<u64>,
    cv: Condvar,
}

impl Budget {
    fn take(&self, n: u64) {
        let mut f = self.free.lock().unwrap();
        while *f < n {
            f = self.cv.wait(f).unwrap();
        }
        *f -= n;
    }
    fn give(&self, n: u64) {
        *self.free.lock().unwrap() += n;
        self.cv.notify_all();
    }
}

fn decoders<'s, 'e>(s: &'s std::thread::Scope<'s, 'e>, rx: &'e Mutex<mpsc::Receiver<Vec<u8>>>, budget: &'e Budget, a: &'e Args) {
    for _ in 0..a.threads {
        s.spawn(move || loop {
            let got = rx.lock().unwrap().recv();
            let Ok(buf) = got else { return };
            decode(&buf, a.work);
            budget.give(buf.len() as u64);
        });
    }
}

fn run_iothreads(file: &File, a: &Args) {
    let all = pieces(file.metadata().unwrap().len(), a.piece);
    let next = AtomicUsize::new(0);
    let budget = Budget { free: Mutex::new(a.window.max(a.piece)), cv: Condvar::new() };
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        decoders(s, &rx, &budget, a);
        for _ in 0..a.io_threads {
            let tx = tx.clone();
            let (all, next, budget) = (&all, &next, &budget);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(off, len)) = all.get(i) else { return };
                budget.take(len as u64);
                let mut buf = vec![0u8; len];
                file.read_exact_at(&mut buf, off).unwrap();
                tx.send(buf).unwrap();
            });
        }
        drop(tx);
    });
}

fn run_uring(file: &File, a: &Args) {
    use io_uring::{opcode, types, IoUring};
    let all = pieces(file.metadata().unwrap().len(), a.piece);
    let depth = ((a.window / a.piece).max(1) as u32).min(256);
    let budget = Budget { free: Mutex::new(a.window.max(a.piece)), cv: Condvar::new() };
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let rx = Mutex::new(rx);
    std::thread::scope(|s| {
        decoders(s, &rx, &budget, a);
        let mut ring = IoUring::new(depth).expect("io_uring");
        let mut bufs: Vec<Option<Vec<u8>>> = vec![None; all.len()];
        let (mut submitted, mut done, mut in_flight) = (0usize, 0usize, 0u32);
        while done < all.len() {
            while submitted < all.len() && in_flight < depth {
                let (off, len) = all[submitted];
                budget.take(len as u64);
                let mut buf = vec![0u8; len];
                let e = opcode::Read::new(types::Fd(file.as_raw_fd()), buf.as_mut_ptr(), len as u32)
                    .offset(off)
                    .build()
                    .user_data(submitted as u64);
                bufs[submitted] = Some(buf);
                unsafe { ring.submission().push(&e).unwrap() };
                submitted += 1;
                in_flight += 1;
            }
            ring.submit_and_wait(1).unwrap();
            let finished: Vec<(usize, i32)> = ring.completion().map(|c| (c.user_data() as usize, c.result())).collect();
            for (i, res) in finished {
                let mut buf = bufs[i].take().unwrap();
                let (off, len) = all[i];
                if res < len as i32 {
                    // a short read: the rest synchronously (rare; keeps the example simple)
                    let got = res.max(0) as usize;
                    file.read_exact_at(&mut buf[got..], off + got as u64).unwrap();
                }
                tx.send(buf).unwrap();
                in_flight -= 1;
                done += 1;
            }
        }
        drop(tx);
    });
}

fn run_disk(file: &File) {
    let mut buf = vec![0u8; 16 << 20];
    let mut off = 0u64;
    loop {
        let n = file.read_at(&mut buf, off).unwrap();
        if n == 0 {
            return;
        }
        off += n as u64;
    }
}

fn main() {
    let a = parse();
    let file = File::open(&a.path).expect("open");
    if std::env::var_os("NO_READAHEAD").is_some() {
        // the system's own read-ahead off for this descriptor: a disk or file system
        // whose read-ahead does not see the pattern (or a small read_ahead_kb)
        unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    }
    let len = file.metadata().unwrap().len();
    let mut times = Vec::new();
    for _ in 0..a.repeats {
        evict(&file);
        let t = Instant::now();
        match a.mode.as_str() {
            "sync" => run_sync(&file, &a, false),
            "fadvise" => run_sync(&file, &a, true),
            "hintthread" => run_hint_thread(&file, &a),
            "iothreads" => run_iothreads(&file, &a),
            "uring" => run_uring(&file, &a),
            "disk" => run_disk(&file),
            m => panic!("unknown mode {}", m),
        }
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let median = times[times.len() / 2];
    println!(
        "mode={} threads={} piece={} window={} io_threads={} work={} median_s={:.3} GB/s={:.2} runs={:?}",
        a.mode, a.threads, a.piece, a.window, a.io_threads, a.work, median, len as f64 / median / 1e9, times
    );
}

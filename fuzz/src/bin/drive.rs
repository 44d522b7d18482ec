//! Coverage-less fuzz driver on stable Rust: runs the same targets as the libFuzzer
//! ones over random stacked mutations of a seed corpus, for a time budget.
//!
//!   drive TARGET SECONDS [CORPUS_DIR] [SEED]
//!   drive TARGET replay FILE
//!
//! TARGET is open_read or decode_<family>. A panic saves the input under
//! artifacts/TARGET/panic-N. Before each run the input is written to
//! artifacts/TARGET/current, so after an abort (allocation failure) or a hang
//! (the caller's timeout) that file holds the culprit.

use std::fs;
use std::panic;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use h5turbo_fuzz::{decode, open_walk_read, Family};

const INTERESTING: [u64; 10] = [0, 1, 0x7f, 0x80, 0xff, 0xffff, 0x7fff_ffff, 0xffff_ffff, 1 << 40, u64::MAX];

/// xorshift64*: reproducible from the seed, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, input: &mut Vec<u8>, other: &[u8]) {
    if input.is_empty() {
        input.push(rng.next() as u8);
        return;
    }
    let pos = rng.below(input.len());
    match rng.below(7) {
        0 => input[pos] ^= 1 << rng.below(8),
        1 => {
            let width = [1, 2, 4, 8][rng.below(4)];
            let value = INTERESTING[rng.below(INTERESTING.len())].to_le_bytes();
            let end = (pos + width).min(input.len());
            input[pos..end].copy_from_slice(&value[..end - pos]);
        }
        2 => input.truncate(pos),
        3 => {
            let end = (pos + [8, 64, 512][rng.below(3)]).min(input.len());
            input[pos..end].fill(0);
        }
        4 => {
            let at = rng.below(other.len());
            input.truncate(pos);
            input.extend_from_slice(&other[at..]);
        }
        5 => input[pos] = rng.next() as u8,
        _ => {
            let end = (pos + 1 + rng.below(16)).min(input.len());
            input.drain(pos..end);
        }
    }
}

fn load_corpus(dir: &Path) -> Vec<Vec<u8>> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .map(|it| it.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    paths.sort();
    paths.iter().filter_map(|p| fs::read(p).ok()).collect()
}

fn runner(target: &str) -> Option<Box<dyn Fn(&[u8])>> {
    if target == "open_read" {
        return Some(Box::new(open_walk_read));
    }
    let family = Family::from_name(target.strip_prefix("decode_")?)?;
    Some(Box::new(move |data: &[u8]| decode(family, data)))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(target), Some(seconds)) =
        (args.get(1), args.get(2).and_then(|s| if s == "replay" { Some(0) } else { s.parse::<u64>().ok() }))
    else {
        eprintln!("usage: drive TARGET SECONDS [CORPUS_DIR] [SEED]");
        std::process::exit(2);
    };
    let Some(run) = runner(target) else {
        eprintln!("unknown target {}", target);
        std::process::exit(2);
    };
    if args.get(2).map(String::as_str) == Some("replay") {
        // drive TARGET replay FILE: one run with the default panic message.
        let input = fs::read(args.get(3).map(String::as_str).unwrap_or("")).expect("replay input");
        run(&input);
        println!("{}: no panic", target);
        return;
    }
    let corpus_dir = args.get(3).map(PathBuf::from).unwrap_or_else(|| PathBuf::from("corpus").join(target));
    let seed = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(0x5eed_u64) | 1;
    let corpus = load_corpus(&corpus_dir);
    if corpus.is_empty() {
        eprintln!("no seeds in {} (run fuzz/seed_corpus.py)", corpus_dir.display());
        std::process::exit(2);
    }
    let artifacts = PathBuf::from("artifacts").join(target);
    fs::create_dir_all(&artifacts).expect("artifacts folder");
    panic::set_hook(Box::new(|_| {}));
    let stats = fuzz_loop(&*run, &corpus, &artifacts, Duration::from_secs(seconds), seed);
    println!(
        "{}: {} inputs in {:.1} s ({} seeds, seed {}), {} panics, slowest input {:.3} s",
        target, stats.execs, stats.elapsed, corpus.len(), seed, stats.panics, stats.slowest
    );
    if stats.panics > 0 {
        std::process::exit(1);
    }
}

struct Stats {
    execs: u64,
    panics: u64,
    slowest: f64,
    elapsed: f64,
}

fn fuzz_loop(run: &dyn Fn(&[u8]), corpus: &[Vec<u8>], artifacts: &Path, budget: Duration, seed: u64) -> Stats {
    let mut rng = Rng(seed);
    let start = Instant::now();
    let mut stats = Stats { execs: 0, panics: 0, slowest: 0.0, elapsed: 0.0 };
    let current = artifacts.join("current");
    while start.elapsed() < budget {
        let mut input = corpus[rng.below(corpus.len())].clone();
        let other = &corpus[rng.below(corpus.len())];
        for _ in 0..1 + rng.below(8) {
            mutate(&mut rng, &mut input, other);
        }
        let _ = fs::write(&current, &input);
        let t = Instant::now();
        if panic::catch_unwind(panic::AssertUnwindSafe(|| run(&input))).is_err() {
            stats.panics += 1;
            let _ = fs::write(artifacts.join(format!("panic-{}", stats.panics)), &input);
        }
        let took = t.elapsed().as_secs_f64();
        if took > stats.slowest {
            // kept: a slow input is a finding too (a near-hang), replayable like a panic
            stats.slowest = took;
            let _ = fs::write(artifacts.join("slowest"), &input);
        }
        stats.execs += 1;
    }
    stats.elapsed = start.elapsed().as_secs_f64();
    stats
}

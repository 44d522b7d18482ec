//! Chunk indexes and layouts against h5py's own view of the same files
//! (tests/data/chunkindex/expected.json, written by make_fixtures.py), plus the
//! shared corpus (corpus_expected.json) and corruption tests.

mod common;

use common::{context, context_with_base, data_dir, digest, gunzip, header_messages, message, Json, TestBTreeV2};
use h5turbo_core::format::chunk_index::{chunk_index_from_records, read_chunk_index, ChunkIndex, ChunkLookup};
use h5turbo_core::format::layout::{ChunkIndexKind, ChunkedLayout, Layout};
use h5turbo_core::format::links::LinkTarget;
use h5turbo_core::format::symbol_table::symbol_table_links;
use h5turbo_core::format::FormatContext;
use h5turbo_core::{ErrorKind, Result};
use std::path::Path;

const MSG_LAYOUT: u16 = 0x0008;
const MSG_SYMBOL_TABLE: u16 = 0x0011;

type Chunk = (Vec<u64>, u64, u64, u32);

fn expected() -> Json {
    Json::parse(&std::fs::read_to_string(data_dir().join("expected.json")).unwrap())
}

fn layout_of(ctx: &FormatContext, bytes: &[u8], header: u64) -> Result<Layout> {
    let messages = header_messages(bytes, ctx.sizes(), header);
    let (body, at) = message(&messages, MSG_LAYOUT).expect("layout message");
    Layout::parse(body, at, ctx.sizes())
}

fn dims(info: &Json, key: &str) -> Vec<u64> {
    info.get(key).unwrap().arr().iter().map(|v| if v.int() < 0 { u64::MAX } else { v.u64() }).collect()
}

fn expected_chunks(info: &Json) -> Vec<Chunk> {
    let mut chunks: Vec<Chunk> = info
        .get("chunks")
        .unwrap()
        .arr()
        .iter()
        .map(|c| {
            let c = c.arr();
            let coords = c[0].arr().iter().map(Json::u64).collect();
            (coords, c[1].u64(), c[2].u64(), c[3].u64() as u32)
        })
        .collect();
    chunks.sort();
    chunks
}

/// The chunk index, using the test-only v2 B-tree walk where the layout needs one.
fn index_for(ctx: &FormatContext, layout: &ChunkedLayout, info: &Json) -> Result<ChunkIndex> {
    let (d, m, filtered) = (dims(info, "dims"), dims(info, "max_dims"), info.get("filtered").unwrap().bool());
    match layout.index {
        ChunkIndexKind::BTreeV2 { address: Some(address), .. } => {
            let tree = TestBTreeV2::open(ctx, address)?;
            chunk_index_from_records(ctx, layout, &d, &m, filtered, &tree)
        }
        _ => read_chunk_index(ctx, layout, &d, &m, filtered),
    }
}

/// The lookup of a few chunks (small reads) finds exactly what the whole index
/// holds: every stored chunk, and up to `cells` cells of the grid spread over it.
fn check_lookup(what: &str, ctx: &FormatContext, layout: &ChunkedLayout, dims: &[u64], max_dims: &[u64], filtered: bool, index: &ChunkIndex, cells: u64) {
    let lookup = ChunkLookup::new(ctx, layout, dims, max_dims, filtered).unwrap_or_else(|e| panic!("{}: {}", what, e));
    let Some(lookup) = lookup else {
        let whole = matches!(layout.index, ChunkIndexKind::SingleChunk { .. } | ChunkIndexKind::Implicit { .. });
        assert!(whole || layout.index.address().is_none(), "{}: no lookup for {:?}", what, layout.index);
        return;
    };
    let found = |coords: &[u64]| lookup.find(ctx, coords).unwrap_or_else(|e| panic!("{}: {:?}: {}", what, coords, e));
    for (coords, location) in index.iter() {
        assert_eq!(found(&coords), Some(location), "{}: stored chunk {:?}", what, coords);
    }
    let grid = index.grid_dims().to_vec();
    let total: u64 = grid.iter().product();
    let step = total.div_ceil(cells.max(1)).max(1);
    let mut coords = vec![0u64; grid.len()];
    for linear in (0..total).step_by(step as usize) {
        let mut rest = linear;
        for d in (0..grid.len()).rev() {
            coords[d] = rest % grid[d];
            rest /= grid[d];
        }
        assert_eq!(found(&coords), index.get(&coords), "{}: cell {:?}", what, coords);
    }
    assert_eq!(found(&grid), None, "{}: outside the grid", what);
}

fn chunks_of(index: &ChunkIndex) -> Vec<Chunk> {
    index.iter().map(|(c, l)| (c, l.address, l.size, l.filter_mask)).collect()
}

/// Which index HDF5 picks for each fixture dataset, by file and name.
fn expected_kind(file: &str, name: &str) -> &'static str {
    if file.contains("earliest") {
        return "btree1";
    }
    match name {
        n if n.starts_with("single") => "single",
        n if n.starts_with("implicit") => "implicit",
        n if n.starts_with("ea_") => "earray",
        n if n.starts_with("bt2") => "btree2",
        _ => "farray",
    }
}

fn kind_name(kind: &ChunkIndexKind) -> &'static str {
    match kind {
        ChunkIndexKind::BTreeV1 { .. } => "btree1",
        ChunkIndexKind::SingleChunk { .. } => "single",
        ChunkIndexKind::Implicit { .. } => "implicit",
        ChunkIndexKind::FixedArray { .. } => "farray",
        ChunkIndexKind::ExtensibleArray { .. } => "earray",
        ChunkIndexKind::BTreeV2 { .. } => "btree2",
    }
}

fn check_chunked(file: &str, name: &str, ctx: &FormatContext, layout: &ChunkedLayout, info: &Json) {
    let what = format!("{}:{}", file, name);
    assert_eq!(kind_name(&layout.index), expected_kind(file, name), "{}", what);
    let want_chunk_dims: Vec<u64> = info.get("chunk_dims").unwrap().arr().iter().map(Json::u64).collect();
    assert_eq!(layout.chunk_dims, want_chunk_dims, "{}", what);
    let index = index_for(ctx, layout, info).unwrap_or_else(|e| panic!("{}: {}", what, e));
    let want = expected_chunks(info);
    let got = chunks_of(&index);
    assert_eq!(got, want, "{}", what);
    assert_eq!(index.len(), want.len(), "{}", what);
    assert_eq!(index.stored_bytes(), want.iter().map(|c| c.2).sum::<u64>(), "{}", what);
    for (coords, address, size, mask) in &want {
        let loc = index.get(coords).unwrap_or_else(|| panic!("{}: chunk {:?} missing", what, coords));
        assert_eq!((loc.address, loc.size, loc.filter_mask), (*address, *size, *mask), "{}", what);
    }
    // Every other cell of the current grid is unallocated; cells outside are None.
    let grid = index.grid_dims().to_vec();
    let cells: u64 = grid.iter().product();
    let mut allocated = 0;
    for linear in 0..cells.min(200_000) {
        let mut coords = vec![0u64; grid.len()];
        let mut rest = linear;
        for d in (0..grid.len()).rev() {
            coords[d] = rest % grid[d];
            rest /= grid[d];
        }
        if index.get(&coords).is_some() {
            allocated += 1;
        }
    }
    if cells <= 200_000 {
        assert_eq!(allocated, want.len(), "{}", what);
    }
    let outside: Vec<u64> = grid.clone();
    assert!(index.get(&outside).is_none(), "{}", what);
    let (d, m, filtered) = (dims(info, "dims"), dims(info, "max_dims"), info.get("filtered").unwrap().bool());
    check_lookup(&what, ctx, layout, &d, &m, filtered, &index, 200_000);
    assert!(index.get(&grid[1..]).is_none(), "{}: wrong rank", what);
}

#[test]
fn fixtures_match_h5py() {
    let expected = expected();
    let mut checked = 0;
    for (file, datasets) in expected.obj() {
        if !file.starts_with("chunks_") {
            continue;
        }
        let bytes = gunzip(&data_dir().join(format!("{}.gz", file)));
        let ctx = context(bytes.clone());
        for (name, info) in datasets.obj() {
            // HDF 2.0 writes layout version 5 only where it changes something: filtered
            // chunks, whose index size fields it widens to 8 bytes.
            let filtered = info.get("filtered").unwrap().bool();
            let version = match file.as_str() {
                "chunks_v200.h5" if filtered => 5,
                "chunks_v110.h5" | "chunks_v200.h5" => 4,
                _ => 3,
            };
            let layout = layout_of(&ctx, &bytes, info.get("header").unwrap().u64())
                .unwrap_or_else(|e| panic!("{}:{}: {}", file, name, e));
            match (&layout, info.get("layout").unwrap().int()) {
                (Layout::Chunked(c), 2) => {
                    assert_eq!(c.version, version, "{}:{}", file, name);
                    check_chunked(file, name, &ctx, c, info);
                }
                (Layout::Contiguous { address, size }, 1) => {
                    let want = info.get("address").unwrap();
                    assert_eq!(*address, if matches!(want, Json::Null) { None } else { Some(want.u64()) });
                    if address.is_some() {
                        assert_eq!(*size, info.get("size").unwrap().u64(), "{}:{}", file, name);
                    }
                }
                (Layout::Compact { data }, 0) => {
                    let want: Vec<u8> = info.get("data").unwrap().arr().iter().map(|v| v.u64() as u8).collect();
                    assert_eq!(data, &want, "{}:{}", file, name);
                }
                (other, class) => panic!("{}:{}: layout {:?}, h5py says class {}", file, name, other, class),
            }
            checked += 1;
        }
    }
    assert!(checked >= 86, "only {} datasets checked", checked);
}

#[test]
fn symbol_table_links_match_h5py() {
    let expected = expected();
    let groups = expected.get("groups_earliest.h5").unwrap();
    let bytes = gunzip(&data_dir().join("groups_earliest.h5.gz"));
    let ctx = context(bytes.clone());
    // Root object header address from the v0/v1 superblock's root symbol table entry
    // (version 1 adds 4 bytes: indexed-storage K and reserved).
    let entry = if bytes[8] == 0 { 56 } else { 60 };
    let root_header = u64::from_le_bytes(bytes[entry + 8..entry + 16].try_into().unwrap());
    let group_header = |name: &str| -> u64 {
        if name == "/" {
            return root_header;
        }
        let root = groups.get("/").unwrap().arr();
        let entry = root.iter().find(|l| l.arr()[0].str() == name.trim_start_matches('/')).unwrap();
        entry.arr()[2].u64()
    };
    for (group, links) in groups.obj() {
        let messages = header_messages(&bytes, ctx.sizes(), group_header(group));
        let (stab, _) = message(&messages, MSG_SYMBOL_TABLE).expect("symbol table message");
        let btree = u64::from_le_bytes(stab[..8].try_into().unwrap());
        let heap = u64::from_le_bytes(stab[8..16].try_into().unwrap());
        let got = symbol_table_links(&ctx, btree, heap).unwrap();
        let want = links.arr();
        assert_eq!(got.len(), want.len(), "{}", group);
        for (g, w) in got.iter().zip(want) {
            let w = w.arr();
            assert_eq!(g.name, w[0].str(), "{}", group);
            match (&g.target, w[1].str()) {
                (LinkTarget::Hard(a), "hard") => assert_eq!(*a, w[2].u64(), "{}/{}", group, g.name),
                (LinkTarget::Soft(p), "soft") => assert_eq!(p, w[2].str(), "{}/{}", group, g.name),
                (t, k) => panic!("{}/{}: got {:?}, h5py says {}", group, g.name, t, k),
            }
        }
    }
}

#[test]
fn corpus_files_match_h5py() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/corpus");
    assert!(corpus.is_dir(), "the corpus is part of the repository: {}", corpus.display());
    let expected =
        Json::parse(&std::fs::read_to_string(data_dir().join("corpus_expected.json")).unwrap());
    let mut checked = 0;
    for (file, datasets) in expected.obj() {
        let bytes = std::fs::read(corpus.join(file)).unwrap();
        let ctx = context(bytes.clone());
        for (name, info) in datasets.obj() {
            let what = format!("{}:{}", file, name);
            let layout = layout_of(&ctx, &bytes, info.get("header").unwrap().u64())
                .unwrap_or_else(|e| panic!("{}: {}", what, e));
            if let Some(address) = info.get("address") {
                let Layout::Contiguous { address: got, size } = layout else { panic!("{}: not contiguous", what) };
                assert_eq!((got, size), (Some(address.u64()), info.get("size").unwrap().u64()), "{}", what);
                checked += 1;
                continue;
            }
            let Layout::Chunked(layout) = layout else { panic!("{}: not chunked", what) };
            let index = index_for(&ctx, &layout, info).unwrap_or_else(|e| panic!("{}: {}", what, e));
            let got = chunks_of(&index);
            assert_eq!(got.len() as u64, info.get("count").unwrap().u64(), "{}", what);
            let sample = expected_chunks(info);
            assert_eq!(&got[..sample.len()], &sample[..], "{}", what);
            assert_eq!(digest(&got), info.get("digest").unwrap().str(), "{}", what);
            checked += 1;
        }
    }
    assert!(checked >= 100, "only {} corpus datasets checked", checked);
}

/// Every chunked fixture dataset: (file bytes, header address, info).
fn chunked_fixtures(file: &str) -> (Vec<u8>, Vec<(String, Json)>) {
    let expected = expected();
    let bytes = gunzip(&data_dir().join(format!("{}.gz", file)));
    let datasets = expected
        .get(file)
        .unwrap()
        .obj()
        .iter()
        .filter(|(_, i)| i.get("layout").unwrap().int() == 2)
        .map(|(n, i)| (n.clone(), i.clone()))
        .collect();
    (bytes, datasets)
}

/// Layout + index of one dataset from possibly damaged bytes; must not panic.
fn read_damaged(bytes: Vec<u8>, header_layout: &(Vec<u8>, u64), info: &Json) -> Result<usize> {
    let ctx = context(bytes);
    let layout = Layout::parse(&header_layout.0, header_layout.1, ctx.sizes())?;
    let Layout::Chunked(layout) = layout else { return Ok(0) };
    Ok(index_for(&ctx, &layout, info)?.len())
}

#[test]
fn corrupted_index_structures_give_errors_not_panics() {
    for file in ["chunks_earliest.h5", "chunks_v110.h5", "chunks_v200.h5"] {
        let (bytes, datasets) = chunked_fixtures(file);
        let ctx = context(bytes.clone());
        for (name, info) in &datasets {
            let messages = header_messages(&bytes, ctx.sizes(), info.get("header").unwrap().u64());
            let (body, at) = message(&messages, MSG_LAYOUT).unwrap();
            let layout_msg = (body.to_vec(), at);
            let Ok(Layout::Chunked(layout)) = Layout::parse(body, at, ctx.sizes()) else { panic!() };
            let Some(index_address) = layout.index.address() else { continue };
            if matches!(layout.index, ChunkIndexKind::SingleChunk { .. } | ChunkIndexKind::Implicit { .. }) {
                continue; // the address points at chunk data, not at an index structure
            }
            // Flip every bit of the first 48 bytes of the index structure.
            let checksummed = !matches!(layout.index, ChunkIndexKind::BTreeV1 { .. });
            for byte in 0..48u64 {
                for bit in 0..8 {
                    let mut damaged = bytes.clone();
                    damaged[(index_address + byte) as usize] ^= 1 << bit;
                    let result = std::panic::catch_unwind(|| read_damaged(damaged, &layout_msg, info));
                    let result = result.unwrap_or_else(|_| panic!("{}:{} panicked, byte {} bit {}", file, name, byte, bit));
                    if checksummed && byte < 16 {
                        let err = result.expect_err(&format!("{}:{} byte {} bit {} accepted", file, name, byte, bit));
                        assert!(matches!(err.kind(), ErrorKind::Format | ErrorKind::Unsupported));
                    }
                }
            }
            // Truncate the file inside and just after the index structure.
            for cut in [index_address, index_address + 3, index_address + 20, index_address + 100] {
                let damaged = bytes[..(cut as usize).min(bytes.len())].to_vec();
                let result = std::panic::catch_unwind(|| read_damaged(damaged, &layout_msg, info));
                assert!(result.is_ok(), "{}:{} panicked when cut at {}", file, name, cut);
            }
        }
    }
}

#[test]
fn random_damage_never_panics() {
    // Deterministic xorshift: many single-byte changes anywhere in the index region.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for file in ["chunks_earliest.h5", "chunks_v110.h5", "chunks_v200.h5"] {
        let (bytes, datasets) = chunked_fixtures(file);
        let ctx = context(bytes.clone());
        for (name, info) in &datasets {
            let messages = header_messages(&bytes, ctx.sizes(), info.get("header").unwrap().u64());
            let (body, at) = message(&messages, MSG_LAYOUT).unwrap();
            let layout_msg = (body.to_vec(), at);
            for _ in 0..60 {
                let mut damaged = bytes.clone();
                let pos = (next() % damaged.len() as u64) as usize;
                damaged[pos] = next() as u8;
                // Also damage the layout message itself now and then.
                let mut msg = layout_msg.clone();
                if next() % 4 == 0 {
                    let i = (next() % msg.0.len() as u64) as usize;
                    msg.0[i] = next() as u8;
                }
                let result = std::panic::catch_unwind(|| read_damaged(damaged, &msg, info));
                assert!(result.is_ok(), "{}:{} panicked with byte {} changed", file, name, pos);
            }
        }
    }
}

#[test]
fn truncated_layout_messages_and_damaged_groups_give_errors() {
    let (bytes, datasets) = chunked_fixtures("chunks_v110.h5");
    let ctx = context(bytes.clone());
    for (name, info) in &datasets {
        let messages = header_messages(&bytes, ctx.sizes(), info.get("header").unwrap().u64());
        let (body, at) = message(&messages, MSG_LAYOUT).unwrap();
        // Every proper prefix lacks the index address at least: always an error.
        for cut in 0..body.len() - 1 {
            let layout = body.get(..cut).unwrap();
            assert!(Layout::parse(layout, at, ctx.sizes()).is_err(), "{} cut at {}", name, cut);
        }
    }
    let bytes = gunzip(&data_dir().join("groups_earliest.h5.gz"));
    let expected = expected();
    let many = expected.get("groups_earliest.h5").unwrap().get("/").unwrap();
    let many_header = many.arr().iter().find(|l| l.arr()[0].str() == "many").unwrap().arr()[2].u64();
    let sizes = context(bytes.clone()).sizes();
    let messages = header_messages(&bytes, sizes, many_header);
    let (stab, _) = message(&messages, MSG_SYMBOL_TABLE).unwrap();
    let btree = u64::from_le_bytes(stab[..8].try_into().unwrap());
    let heap = u64::from_le_bytes(stab[8..16].try_into().unwrap());
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..3000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut damaged = bytes.clone();
        // Half the rounds hit the group's own B-tree root and heap header.
        let pos = match round % 4 {
            0 => btree as usize + (state % 64) as usize,
            1 => heap as usize + (state % 32) as usize,
            _ => (state % bytes.len() as u64) as usize,
        };
        damaged[pos] ^= (state >> 32) as u8 | 1;
        let result = std::panic::catch_unwind(|| symbol_table_links(&context(damaged), btree, heap));
        assert!(result.is_ok(), "symbol table walk panicked with byte {} changed", pos);
    }
    for cut in [btree, btree + 10, heap, heap + 20] {
        let damaged = bytes[..cut as usize].to_vec();
        assert!(symbol_table_links(&context(damaged), btree, heap).is_err(), "cut at {}", cut);
    }
}

/// Every chunked dataset of the corpus (tests/data/corpus) (10x, h5ad, loom, fast5, NetCDF4, jhdf,
/// pyfive): the layout parses and the index holds as many chunks as h5py counts.
#[test]
fn whole_corpus_chunk_counts_match_h5py() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/corpus");
    assert!(corpus.is_dir(), "the corpus is part of the repository: {}", corpus.display());
    let list = std::fs::read_to_string(data_dir().join("corpus_sweep.txt")).unwrap();
    let parse_dims = |s: &str| -> Vec<u64> {
        s.split(',').map(|x| if x == "U" { u64::MAX } else { x.parse().unwrap() }).collect()
    };
    let mut files: std::collections::HashMap<&str, (Vec<u8>, FormatContext)> = Default::default();
    let mut checked = 0;
    for line in list.lines() {
        let f: Vec<&str> = line.splitn(7, ' ').collect();
        let (file, header, name) = (f[0], f[1].parse::<u64>().unwrap(), f[6]);
        let (dims, max_dims, filtered, count) = (parse_dims(f[2]), parse_dims(f[3]), f[4] != "0", f[5]);
        let (bytes, ctx) = files.entry(file).or_insert_with(|| {
            let bytes = std::fs::read(corpus.join(file)).unwrap();
            (bytes.clone(), context_with_base(bytes))
        });
        let what = format!("{}:{}", file, name);
        let base = ctx.base();
        let messages = header_messages(bytes, ctx.sizes(), header + base);
        let (body, at) = message(&messages, MSG_LAYOUT).expect("layout message");
        let layout = Layout::parse(body, at - base, ctx.sizes()).unwrap_or_else(|e| panic!("{}: {}", what, e));
        let Layout::Chunked(layout) = layout else { panic!("{}: not chunked", what) };
        let index = match layout.index {
            ChunkIndexKind::BTreeV2 { address: Some(address), .. } => TestBTreeV2::open(ctx, address)
                .and_then(|tree| chunk_index_from_records(ctx, &layout, &dims, &max_dims, filtered, &tree)),
            _ => read_chunk_index(ctx, &layout, &dims, &max_dims, filtered),
        };
        let index = index.unwrap_or_else(|e| panic!("{}: {}", what, e));
        assert_eq!(index.len().to_string(), count, "{}", what);
        check_lookup(&what, ctx, &layout, &dims, &max_dims, filtered, &index, 2_000);
        checked += 1;
    }
    assert!(checked >= 500, "only {} datasets checked", checked);
}

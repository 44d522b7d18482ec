//! Dense storage (v2 B-trees, fractal heaps, dense links and attributes) checked
//! against h5py on a generated fixture and on corpus files, plus corruption and
//! truncation of every structure. Expectations come from
//! `tests/data/make_dense_fixtures.py` (which also finds the message addresses).

use h5turbo_core::format::attribute_info::{
    attribute_message_name, dense_attribute_messages, dense_attribute_messages_by_creation_order, AttributeInfo,
};
use h5turbo_core::format::btree_v2::BTreeV2;
use h5turbo_core::format::links::{dense_links, parse_link_message, Link, LinkInfo, LinkTarget};
use h5turbo_core::format::{FormatContext, Sizes};
use h5turbo_core::io::MemSource;
use h5turbo_core::{ErrorKind, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn context(bytes: Vec<u8>) -> FormatContext {
    FormatContext::new(Arc::new(MemSource::new(bytes)), Path::new("test.h5"), Sizes::DEFAULT, 0)
}

/// One block of an `.expect` file.
#[derive(Debug)]
enum Expect {
    /// `compact`: the link messages of a group that is not dense.
    Links { file: String, object: String, message: (u64, u64), compact: Vec<(u64, u64)>, links: Vec<Link> },
    Attrs { file: String, object: String, message: (u64, u64), by_name: Vec<(String, u64)>, by_order: Vec<String> },
    Chunks { file: String, object: String, btree: u64, addresses: Vec<u64> },
}

fn parse_expect(path: &Path) -> Vec<Expect> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut blocks = Vec::new();
    let mut lines = text.lines().map(|l| l.split('\t').collect::<Vec<_>>());
    while let Some(head) = lines.next() {
        let body: Vec<Vec<&str>> = lines.by_ref().take_while(|l| l[0] != "end").collect();
        let (file, object) = (head[1].to_string(), head[2].to_string());
        let num = |s: &str| s.parse::<u64>().unwrap();
        blocks.push(match head[0] {
            "links" => Expect::Links {
                file,
                object,
                message: (num(head[3]), num(head[4])),
                compact: head[5]
                    .split(',')
                    .filter(|m| !m.is_empty())
                    .map(|m| m.split_once(':').map(|(a, s)| (num(a), num(s))).unwrap())
                    .collect(),
                links: body.iter().map(|l| expected_link(l)).collect(),
            },
            "attrs" => Expect::Attrs {
                file,
                object,
                message: (num(head[3]), num(head[4])),
                by_name: body.iter().filter(|l| l[0] == "attr").map(|l| (l[1].to_string(), num(l[2]))).collect(),
                by_order: body.iter().filter(|l| l[0] == "attr_by_order").map(|l| l[1].to_string()).collect(),
            },
            "chunks" => Expect::Chunks {
                file,
                object,
                btree: num(head[3]),
                addresses: head[4].split(',').map(num).collect(),
            },
            other => panic!("unknown expectation {}", other),
        });
    }
    blocks
}

fn expected_link(l: &[&str]) -> Link {
    let order = |s: &str| if s == "-" { None } else { Some(s.parse().unwrap()) };
    let (target, creation_order) = match l[2] {
        "hard" => (LinkTarget::Hard(l[3].parse().unwrap()), order(l[4])),
        "soft" => (LinkTarget::Soft(l[3].to_string()), order(l[4])),
        "external" => (LinkTarget::External { file: l[3].to_string(), path: l[4].to_string() }, order(l[5])),
        other => panic!("unknown link kind {}", other),
    };
    Link { name: l[1].to_string(), target, creation_order }
}

fn compact_links(ctx: &FormatContext, messages: &[(u64, u64)]) -> Vec<Link> {
    let mut links: Vec<Link> = messages
        .iter()
        .map(|&(addr, size)| parse_link_message(&ctx.read(addr, size, "link").unwrap(), addr, ctx.sizes()).unwrap())
        .collect();
    links.sort_by(|a, b| a.name.cmp(&b.name));
    links
}

fn link_info(ctx: &FormatContext, (addr, size): (u64, u64)) -> Result<LinkInfo> {
    LinkInfo::parse(&ctx.read(addr, size, "link info")?, addr, ctx.sizes())
}

fn attribute_info(ctx: &FormatContext, (addr, size): (u64, u64)) -> Result<AttributeInfo> {
    AttributeInfo::parse(&ctx.read(addr, size, "attribute info")?, addr, ctx.sizes())
}

fn names(ctx: &FormatContext, messages: &[(Vec<u8>, u64)]) -> Vec<String> {
    messages
        .iter()
        .map(|(m, a)| String::from_utf8(attribute_message_name(m, *a, ctx.sizes()).unwrap().to_vec()).unwrap())
        .collect()
}

fn check_block(ctx: &FormatContext, block: &Expect) {
    match block {
        Expect::Links { object, message, compact, links, .. } => {
            let info = link_info(ctx, *message).unwrap();
            assert_eq!(info.is_dense(), compact.is_empty(), "{}", object);
            let mut got = if info.is_dense() { dense_links(ctx, &info).unwrap() } else { compact_links(ctx, compact) };
            if info.is_dense() {
                got.sort_by(|a, b| a.name.cmp(&b.name)); // dense_links gives name-hash order
            }
            assert_eq!(got.len(), links.len(), "{}", object);
            for (g, e) in got.iter().zip(links) {
                assert_eq!(g, e, "{}", object);
            }
        }
        Expect::Attrs { object, message, by_name, by_order, .. } => {
            let info = attribute_info(ctx, *message).unwrap();
            let got = dense_attribute_messages(ctx, &info).unwrap();
            let expected: Vec<&String> = by_name.iter().map(|(n, _)| n).collect();
            assert_eq!(names(ctx, &got).iter().collect::<Vec<_>>(), expected, "{}", object);
            for ((message, _), (name, data_size)) in got.iter().zip(by_name) {
                assert!(message.len() as u64 > *data_size, "{}: message of {} too short", object, name);
            }
            if !by_order.is_empty() {
                assert!(info.creation_order_indexed);
                let ordered = dense_attribute_messages_by_creation_order(ctx, &info).unwrap();
                assert_eq!(&names(ctx, &ordered), by_order, "{}", object);
            }
        }
        Expect::Chunks { object, btree, addresses, .. } => check_chunk_index(ctx, object, *btree, addresses),
    }
}

/// Type 10/11 records start with the chunk address and end with the scaled offsets
/// (the key), so in-order traversal must give strictly increasing offsets.
fn check_chunk_index(ctx: &FormatContext, object: &str, btree: u64, addresses: &[u64]) {
    let tree = BTreeV2::open(ctx, btree).unwrap();
    assert!(matches!(tree.record_type(), 10 | 11), "{}", object);
    assert_eq!(tree.total_records(), addresses.len() as u64, "{}", object);
    let key_len = if tree.record_type() == 10 { tree.record_size() - 8 } else { 16 };
    let mut got = Vec::new();
    let mut keys: Vec<Vec<u64>> = Vec::new();
    tree.for_each_record(ctx, &mut |rec| {
        got.push(u64::from_le_bytes(rec[..8].try_into().unwrap()));
        let key = &rec[rec.len() - key_len..];
        keys.push(key.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect());
        Ok(())
    })
    .unwrap();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{}: records out of key order", object);
    got.sort();
    assert_eq!(got, addresses, "{}", object);
}

#[test]
fn fixture_matches_h5py() {
    let blocks = parse_expect(&data_dir().join("dense_storage.expect"));
    assert_eq!(blocks.len(), 4);
    let ctx = context(std::fs::read(data_dir().join("dense_storage.h5")).unwrap());
    for block in &blocks {
        check_block(&ctx, block);
    }
}

#[test]
fn large_group_has_a_deep_name_index() {
    let blocks = parse_expect(&data_dir().join("dense_storage.expect"));
    let ctx = context(std::fs::read(data_dir().join("dense_storage.h5")).unwrap());
    let Some(Expect::Links { message, .. }) = blocks.iter().find(|b| matches!(b, Expect::Links { object, .. } if object == "many")) else {
        panic!("no 'many' group")
    };
    let info = link_info(&ctx, *message).unwrap();
    let index = BTreeV2::open(&ctx, info.name_index_address.unwrap()).unwrap();
    assert_eq!(index.total_records(), 1300);
    assert!(index.depth() >= 2, "depth {}", index.depth());
    let order = BTreeV2::open(&ctx, info.creation_order_index_address.unwrap()).unwrap();
    assert_eq!(order.record_type(), 6);
    let mut orders = Vec::new();
    order
        .for_each_record(&ctx, &mut |rec| {
            orders.push(u64::from_le_bytes(rec[..8].try_into().unwrap()));
            Ok(())
        })
        .unwrap();
    assert_eq!(orders, (0..1300).collect::<Vec<u64>>());
}

#[test]
fn corpus_files_match_h5py() {
    let blocks = parse_expect(&data_dir().join("corpus.expect"));
    let mut checked = 0;
    for block in &blocks {
        let (Expect::Links { file, .. } | Expect::Attrs { file, .. } | Expect::Chunks { file, .. }) = block;
        // Paths in corpus.expect are relative to the repository's tests/data/corpus.
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/corpus").join(file);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e));
        check_block(&context(bytes), block);
        checked += 1;
    }
    eprintln!("checked {} corpus structures", checked);
}

/// Everything the fixture's dense storage holds, reached through every index; used to
/// compare damaged copies with the original.
fn walk_fixture(bytes: Vec<u8>, blocks: &[Expect]) -> Result<Vec<String>> {
    let ctx = context(bytes);
    let mut out = Vec::new();
    let mut record = |rec: &[u8]| -> Result<()> {
        out.push(format!("{:?}", rec));
        Ok(())
    };
    let mut summary = Vec::new();
    for block in blocks {
        match block {
            Expect::Links { message, .. } => {
                let info = link_info(&ctx, *message)?;
                summary.push(format!("{:?}", dense_links(&ctx, &info)?));
                if let Some(order) = info.creation_order_index_address {
                    BTreeV2::open(&ctx, order)?.for_each_record(&ctx, &mut record)?;
                }
            }
            Expect::Attrs { message, .. } => {
                let info = attribute_info(&ctx, *message)?;
                summary.push(format!("{:?}", dense_attribute_messages(&ctx, &info)?));
                if info.creation_order_indexed {
                    summary.push(format!("{:?}", dense_attribute_messages_by_creation_order(&ctx, &info)?));
                }
            }
            Expect::Chunks { .. } => {}
        }
    }
    summary.extend(out);
    Ok(summary)
}

fn fixture() -> (Vec<u8>, Vec<Expect>) {
    let bytes = std::fs::read(data_dir().join("dense_storage.h5")).unwrap();
    (bytes, parse_expect(&data_dir().join("dense_storage.expect")))
}

fn find_all(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    haystack.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle).map(|(i, _)| i).collect()
}

#[test]
fn flipped_bits_in_every_structure_are_format_errors() {
    let (bytes, blocks) = fixture();
    walk_fixture(bytes.clone(), &blocks).unwrap();
    let mut damaged = 0;
    for signature in [b"BTHD", b"BTIN", b"BTLF", b"FRHP", b"FHIB", b"FHDB"] {
        let found = find_all(&bytes, signature);
        assert!(!found.is_empty() || signature == b"FHIB", "no {:?} in the fixture", signature);
        for start in found {
            // Version byte, a field just after it, and the signature itself.
            for delta in [0usize, 4, 7] {
                let mut copy = bytes.clone();
                copy[start + delta] ^= 0x10;
                let err = walk_fixture(copy, &blocks).expect_err(&format!(
                    "flip at {:?}+{} ({}) went unnoticed",
                    String::from_utf8_lossy(signature),
                    delta,
                    start
                ));
                assert_eq!(err.kind(), ErrorKind::Format, "{}", err);
                damaged += 1;
            }
        }
    }
    eprintln!("{} damaged copies all rejected", damaged);
}

#[test]
fn checksum_mismatch_names_the_structure() {
    let (bytes, blocks) = fixture();
    for (signature, name) in [(b"BTLF", "v2 B-tree leaf node"), (b"FHDB", "fractal heap direct block"), (b"FRHP", "fractal heap header")] {
        let start = find_all(&bytes, signature)[0];
        let mut copy = bytes.clone();
        copy[start + 9] ^= 0x01;
        let err = walk_fixture(copy, &blocks).unwrap_err();
        assert!(err.message().contains(name) && err.message().contains("checksum"), "{}", err);
        assert_eq!(err.offset(), Some(start as u64), "{}", err);
    }
}

#[test]
fn truncated_files_never_give_wrong_answers() {
    let (bytes, blocks) = fixture();
    let full = walk_fixture(bytes.clone(), &blocks).unwrap();
    let mut errors = 0;
    for cut in (0..bytes.len()).step_by(397) {
        match walk_fixture(bytes[..cut].to_vec(), &blocks) {
            Ok(summary) => assert_eq!(summary, full, "cut at {} gave different results", cut),
            Err(_) => errors += 1,
        }
    }
    assert!(errors > 0);
}

#[test]
fn random_damage_never_panics() {
    let (bytes, blocks) = fixture();
    // Deterministic xorshift: reproducible positions and bits.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..1500 {
        let mut copy = bytes.clone();
        for _ in 0..3 {
            let pos = (next() % bytes.len() as u64) as usize;
            copy[pos] ^= 1 << (next() % 8);
        }
        let _ = walk_fixture(copy, &blocks);
    }
}

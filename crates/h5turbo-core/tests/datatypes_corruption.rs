//! Corrupt and truncated datatype, dataspace, attribute and fill value messages, and
//! corrupt vlen references and heap collections: every parse returns a result, none
//! panics, none allocates from an unchecked count.

mod support;

use h5turbo_core::format::attribute::{Attribute, AttributeDatatype};
use h5turbo_core::format::dataspace::Dataspace;
use h5turbo_core::format::datatype::Datatype;
use h5turbo_core::format::fill_value::FillValue;
use h5turbo_core::format::global_heap::GlobalHeapCache;
use h5turbo_core::format::shared::parse_shared_message;
use h5turbo_core::convert::columns::resolve_vlen_columns_on;
use h5turbo_core::convert::values::{resolve_vlen_elements, to_numpy_bytes};
use h5turbo_core::format::{FormatContext, Sizes};
use h5turbo_core::io::MemSource;
use std::path::Path;
use std::sync::Arc;
use support::*;

/// Deterministic xorshift, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn fixture(name: &str) -> FormatContext {
    open(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/datatypes").join(name))
}

/// All messages of the kinds this module parses, from every object in a fixture.
fn fixture_messages(ctx: &FormatContext, name: &str) -> Vec<Message> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/datatypes/expected.json"))
            .unwrap();
    let records = parse_json(&text);
    let mut addrs: Vec<u64> =
        records.array().iter().filter(|r| r.str("file") == Some(name)).filter_map(|r| r.u64("addr")).collect();
    addrs.sort_unstable();
    addrs.dedup();
    let kinds = [MSG_DATATYPE, MSG_DATASPACE, MSG_ATTRIBUTE, MSG_FILL_OLD, MSG_FILL_NEW];
    addrs.iter().flat_map(|&a| messages(ctx, a)).filter(|m| kinds.contains(&m.kind)).collect()
}

/// Parse `body` as a message of `kind` and use the result the way readers do;
/// true if the datatype/attribute parsed.
fn exercise(ctx: &FormatContext, heap: &GlobalHeapCache, kind: u16, body: &[u8]) -> bool {
    let sizes = ctx.sizes();
    match kind {
        MSG_DATATYPE => {
            let _ = parse_shared_message(body, 0, sizes);
            if let Ok(dt) = Datatype::parse(body, 0, sizes) {
                use_datatype(ctx, heap, &dt, body);
                return true;
            }
        }
        MSG_DATASPACE => {
            if let Ok(space) = Dataspace::parse(body, 0, sizes) {
                let _ = space.num_elements();
            }
        }
        MSG_ATTRIBUTE => {
            if let Ok(attr) = Attribute::parse(body, 0, sizes) {
                if let AttributeDatatype::Inline(dt) = &attr.datatype {
                    use_datatype(ctx, heap, dt, &attr.data);
                }
                return true;
            }
        }
        MSG_FILL_OLD => {
            let _ = FillValue::parse_old(body, 0, sizes);
        }
        _ => {
            if let Ok(f) = FillValue::parse_new(body, 0, sizes) {
                let _ = f.check_size(8);
            }
        }
    }
    false
}

fn use_datatype(ctx: &FormatContext, heap: &GlobalHeapCache, dt: &Datatype, data: &[u8]) {
    let _ = dt.numpy_dtype().map(|d| d.to_descr_string());
    let _ = dt.enum_members();
    let n = data.len() / dt.size.max(1);
    if dt.has_vlen() {
        let _ = resolve_vlen_elements(ctx, heap, dt, data, n.min(64));
        let _ = resolve_vlen_columns_on(ctx, heap, dt, data, n.min(64), 1);
    } else {
        let _ = to_numpy_bytes(dt, data, n.min(64));
    }
}

fn mutate(rng: &mut Rng, body: &[u8]) -> Vec<u8> {
    let mut out = body.to_vec();
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(out.len());
        match rng.below(3) {
            0 => out[i] ^= 1 << rng.below(8),
            1 => out[i] = rng.next() as u8,
            _ => out[i] = [0x00, 0xff, 0x7f, 0x80][rng.below(4)],
        }
    }
    out
}

#[test]
fn truncated_and_mutated_messages_never_panic() {
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let mut exercised = 0usize;
    let mut parsed = 0usize;
    for name in ["types_earliest.h5", "types_latest.h5"] {
        let ctx = fixture(name);
        let heap = GlobalHeapCache::new();
        let msgs = fixture_messages(&ctx, name);
        assert!(msgs.len() > 250, "{} messages in {}", msgs.len(), name);
        for m in &msgs {
            for len in 0..m.body.len() {
                exercise(&ctx, &heap, m.kind, &m.body[..len]);
            }
            for _ in 0..100 {
                parsed += exercise(&ctx, &heap, m.kind, &mutate(&mut rng, &m.body)) as usize;
            }
            exercised += m.body.len() + 100;
        }
    }
    // Mutations must reach the code behind the parsers, not only their error paths.
    assert!(exercised > 50_000 && parsed > 5_000 && parsed < exercised / 2, "{} of {}", parsed, exercised);
}

#[test]
fn truncated_datatypes_are_errors() {
    // Every field of a datatype message is needed: a cut anywhere is an error
    // (trailing bytes after the type are allowed, which is why only prefixes are cut).
    let ctx = fixture("types_latest.h5");
    for m in fixture_messages(&ctx, "types_latest.h5").iter().filter(|m| m.kind == MSG_DATATYPE && m.flags & 2 == 0) {
        let full = Datatype::parse(&m.body, m.address, ctx.sizes()).unwrap();
        let encoded = encoded_len(&full, &m.body);
        for len in 0..encoded {
            assert!(Datatype::parse(&m.body[..len], m.address, ctx.sizes()).is_err(), "{:?} cut at {}", full, len);
        }
    }
}

/// Shortest prefix of `body` that still parses to `full`.
fn encoded_len(full: &Datatype, body: &[u8]) -> usize {
    (0..=body.len()).find(|&n| Datatype::parse(&body[..n], 0, Sizes::DEFAULT).ok().as_ref() == Some(full)).unwrap()
}

/// A file with one collection whose objects and vlen references we corrupt.
#[test]
fn corrupt_vlen_references_and_heaps_are_errors() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/datatypes/types_latest.h5");
    let ctx = open(&path);
    let msgs = fixture_messages(&ctx, "types_latest.h5");
    let vlen_attrs: Vec<Attribute> = msgs
        .iter()
        .filter(|m| m.kind == MSG_ATTRIBUTE)
        .filter_map(|m| Attribute::parse(&m.body, m.address, ctx.sizes()).ok())
        .filter(|a| matches!(&a.datatype, AttributeDatatype::Inline(dt) if dt.has_vlen()))
        .collect();
    assert!(vlen_attrs.len() >= 4);
    let bytes = std::fs::read(&path).unwrap();
    let mut rng = Rng(42);
    for attr in &vlen_attrs {
        let AttributeDatatype::Inline(dt) = &attr.datatype else { unreachable!() };
        let n = attr.dataspace.num_elements().unwrap() as usize;
        let heap = GlobalHeapCache::new();
        assert!(resolve_vlen_elements(&ctx, &heap, dt, &attr.data, n).is_ok(), "{}", attr.name);
        for _ in 0..200 {
            // Corrupt the reference ...
            let data = mutate(&mut rng, &attr.data);
            let _ = resolve_vlen_elements(&ctx, &GlobalHeapCache::new(), dt, &data, n);
            let _ = resolve_vlen_columns_on(&ctx, &GlobalHeapCache::new(), dt, &data, n, 1);
            // ... or the heap collection it points into.
            let mut file = bytes.clone();
            let at = heap_address(&attr.data, &ctx).unwrap_or(0) as usize;
            for _ in 0..4 {
                let i = at + rng.below(64.min(file.len() - at));
                file[i] = rng.next() as u8;
            }
            let corrupt = FormatContext::new(Arc::new(MemSource::new(file)), &path, ctx.sizes(), ctx.base());
            let _ = resolve_vlen_elements(&corrupt, &GlobalHeapCache::new(), dt, &attr.data, n);
            let _ = resolve_vlen_columns_on(&corrupt, &GlobalHeapCache::new(), dt, &attr.data, n, 1);
        }
    }
    // Beyond the file and wrong object index: errors, not empty values.
    let heap = GlobalHeapCache::new();
    let mut bad = vec![3u8, 0, 0, 0];
    bad.extend_from_slice(&(ctx.source().len() + 10).to_le_bytes());
    bad.extend_from_slice(&1u32.to_le_bytes());
    assert!(heap.read_vlen(&ctx, &bad).is_err());
    assert!(heap.read_vlen(&ctx, &bad[..10]).is_err());
}

/// The collection address inside the first non-empty vlen reference of `data`.
fn heap_address(data: &[u8], ctx: &FormatContext) -> Option<u64> {
    let o = ctx.sizes().offset as usize;
    data.chunks(8 + o).find_map(|r| {
        let len = u32::from_le_bytes(r.get(..4)?.try_into().ok()?);
        let addr = u64::from_le_bytes(r.get(4..12)?.try_into().ok()?);
        (len > 0 && addr < ctx.source().len()).then_some(addr)
    })
}

//! The fuzz targets' bodies, shared by the libFuzzer targets (fuzz_targets/) and the
//! stable coverage-less driver (src/bin/drive.rs). Each returns normally on any
//! input: errors are the expected answer to bad bytes; a panic, abort, hang or
//! unbounded allocation is a finding.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use h5turbo_core::engine::AxisSelection;
use h5turbo_core::file::{File, Object, ObjectKind};
use h5turbo_core::filters::{self, DecodeScratch};
use h5turbo_core::format::filter_pipeline::{FilterInfo, FilterPipeline};
use h5turbo_core::format::links::LinkTarget;
use h5turbo_core::io::MemSource;

/// Largest dataset read fully (bytes); larger ones are read in a corner.
const MAX_FULL_READ: u64 = 16 << 20;
/// Largest decoded chunk the decode targets ask for.
const MAX_OUT: usize = 16 << 20;
const MAX_DEPTH: usize = 32;

/// Open `data` as an HDF5 file and read everything in it.
pub fn open_walk_read(data: &[u8]) {
    let source = Arc::new(MemSource::new(data.to_vec()));
    let Ok(file) = File::from_source(source, Path::new("fuzz.h5")) else { return };
    let Ok(root) = file.root() else { return };
    let mut seen = HashSet::from([root.address()]);
    walk(&root, &mut seen, 0);
}

fn walk(group: &Object, seen: &mut HashSet<u64>, depth: usize) {
    read_attributes(group);
    let Ok(links) = group.links() else { return };
    for link in links {
        if !matches!(link.target, LinkTarget::Hard(_)) {
            let _ = group.child(&link.name); // soft links resolve; external ones error
            continue;
        }
        let Ok(child) = group.child(&link.name) else { continue };
        if depth >= MAX_DEPTH || !seen.insert(child.address()) {
            continue;
        }
        read_attributes(&child);
        match child.kind() {
            ObjectKind::Group => walk(&child, seen, depth + 1),
            ObjectKind::Dataset => read_dataset(&child),
            ObjectKind::Datatype => {
                let _ = child.stored_datatype();
            }
        }
    }
}

fn read_attributes(obj: &Object) {
    let Ok(names) = obj.attribute_names() else { return };
    for name in names {
        if let Ok(value) = obj.attribute(&name) {
            if value.datatype.has_vlen() {
                let _ = value.vlen_values(obj.file());
            } else {
                let _ = value.numpy_bytes();
            }
        }
    }
}

fn read_dataset(obj: &Object) {
    let Ok(ds) = obj.dataset() else { return };
    let _ = ds.fill_numpy();
    let shape = ds.shape().to_vec();
    let elem = ds.element_size() as u64;
    let total = shape.iter().try_fold(elem, |acc, &d| acc.checked_mul(d));
    let full = total.is_some_and(|t| t <= MAX_FULL_READ);
    // The whole dataset when small, else a strided corner of at most 8 per axis.
    let sel: Vec<AxisSelection> = shape
        .iter()
        .map(|&n| match full {
            true => AxisSelection::all(n),
            false => AxisSelection::Range { start: n / 3, count: (n - n / 3).div_ceil(2).min(8), step: 2 },
        })
        .collect();
    let n: u64 = sel.iter().map(|s| s.count()).product();
    if ds.datatype.has_vlen() {
        let _ = ds.read_vlen(obj.file(), &sel, 2);
        return;
    }
    let Some(bytes) = n.checked_mul(elem).filter(|&b| b <= MAX_FULL_READ) else { return };
    let mut out = vec![0u8; bytes as usize];
    let _ = ds.read_raw(obj.file(), &sel, &mut out, 2);
    let _ = ds.read_numpy(obj.file(), &sel, &mut out, 2);
    reduce_dataset(obj, &ds, &sel);
}

/// Reductions plan and fold on paths of their own (unwritten chunks counted, not read;
/// elements converted): over the first axis and over all, in and out of fixed order.
fn reduce_dataset(obj: &Object, ds: &h5turbo_core::file::Dataset, sel: &[AxisSelection]) {
    use h5turbo_core::engine::reduce::ReduceOp;
    if sel.is_empty() || ds.element_kind().is_err() {
        return;
    }
    let first_axis: Vec<bool> = (0..sel.len()).map(|d| d == 0).collect();
    let every_axis = vec![true; sel.len()];
    for op in [ReduceOp::SumFloat, ReduceOp::SumExact, ReduceOp::Min, ReduceOp::Moments] {
        let _ = ds.reduce(obj.file(), sel, &first_axis, op, 2);
        let _ = ds.reduce(obj.file(), sel, &every_axis, op, 2);
    }
}

/// A decoder family: one HDF5 filter id.
#[derive(Debug, Clone, Copy)]
pub struct Family {
    pub name: &'static str,
    pub id: u16,
}

pub const FAMILIES: &[Family] = &[
    Family { name: "deflate", id: filters::FILTER_DEFLATE },
    Family { name: "shuffle", id: filters::FILTER_SHUFFLE },
    Family { name: "fletcher32", id: filters::FILTER_FLETCHER32 },
    Family { name: "lzf", id: filters::FILTER_LZF },
    Family { name: "zstd", id: filters::FILTER_ZSTD },
    Family { name: "lz4", id: filters::FILTER_LZ4 },
    Family { name: "bzip2", id: filters::FILTER_BZIP2 },
    Family { name: "bitshuffle", id: filters::FILTER_BITSHUFFLE },
    Family { name: "blosc", id: filters::FILTER_BLOSC },
    Family { name: "vbz", id: filters::FILTER_VBZ },
    Family { name: "szip", id: filters::FILTER_SZIP },
    Family { name: "nbit", id: filters::FILTER_NBIT },
    Family { name: "scaleoffset", id: filters::FILTER_SCALEOFFSET },
];

impl Family {
    pub fn from_name(name: &str) -> Option<Family> {
        FAMILIES.iter().copied().find(|f| f.name == name)
    }
}

/// One chunk through a one-filter pipeline. Input layout (see fuzz/seed_corpus.py):
/// element size - 1 (1 byte), decoded size (u32 LE, capped), client data count
/// (1 byte, at most 32), client data (u32 LE each), then the encoded chunk.
pub fn decode(family: Family, data: &[u8]) {
    let Some((element_size, out_len, client_data, encoded)) = split_decode_input(data) else { return };
    let info = FilterInfo { id: family.id, name: None, optional: false, client_data };
    let pipeline = FilterPipeline { filters: vec![info] };
    let mut out = vec![0u8; out_len];
    let mut scratch = DecodeScratch::default();
    // Client data the decoders cannot honour is an error here, as at a dataset's open.
    let Ok(decoder) = filters::DecodePipeline::new(&pipeline, element_size) else { return };
    let _ = filters::decode_chunk(&decoder, 0, encoded, &mut out, &mut scratch);
}

fn split_decode_input(data: &[u8]) -> Option<(usize, usize, Vec<u32>, &[u8])> {
    let (&elem, rest) = data.split_first()?;
    let (len, rest) = rest.split_at_checked(4)?;
    let out_len = u32::from_le_bytes(len.try_into().ok()?) as usize;
    let (&count, rest) = rest.split_first()?;
    let (cd, encoded) = rest.split_at_checked(4 * (count as usize % 33))?;
    let client_data = cd.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
    Some((elem as usize + 1, out_len.min(MAX_OUT), client_data, encoded))
}

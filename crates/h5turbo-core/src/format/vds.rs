//! Virtual dataset (VDS) mappings: the global heap object a virtual layout names.
//!
//! Layout: a version byte (0 or 1), the number of mappings (a length-sized field),
//! then per mapping [version 1: a flags byte] the source file name and the source
//! dataset name (NUL-terminated; version 1 leaves the file name out when flag 0x04
//! says the source is in the same file, "."), the source selection and the virtual
//! selection (serialized as in region references), and a checksum of it all.

use super::checksum::verify_trailing;
use super::reader::ByteReader;
use super::reference::{parse_virtual_selection, Selection};
use super::FormatContext;
use crate::error::{Error, Result};

/// Version-1 mapping flags (HDF5 2.0 writes them with libver latest): the source file
/// name, or the source dataset name, is that of an earlier mapping, stored as that
/// mapping's index (a length-sized field) instead of the name (names longer than the
/// index); the source dataset is in the virtual dataset's own file.
const FLAG_FILE_SHARED: u8 = 0x01;
const FLAG_DATASET_SHARED: u8 = 0x02;
const FLAG_SAME_FILE: u8 = 0x04;
const FLAGS_KNOWN: u8 = FLAG_FILE_SHARED | FLAG_DATASET_SHARED | FLAG_SAME_FILE;

/// Where a mapping's source dataset lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceFile {
    /// The virtual dataset's own file (stored as ".").
    Same,
    /// A file name as stored: absolute, or relative (see `file::vds` for the search).
    Named(String),
}

/// One mapping: the elements `virtual_selection` of the virtual dataset are the
/// elements `source_selection` of `dataset` in `file`, both in row-major order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub file: SourceFile,
    pub dataset: String,
    pub source_selection: Selection,
    pub virtual_selection: Selection,
}

/// Parse the mappings block (`at`: its address, for messages).
pub fn parse_mappings(ctx: &FormatContext, block: &[u8], at: u64) -> Result<Vec<Mapping>> {
    verify_trailing(block, "virtual dataset mappings", at)?;
    let body = &block[..block.len() - 4];
    let mut r = ByteReader::new(body, at, ctx.sizes());
    let version = r.u8()?;
    if version > 1 {
        return Err(r.error(format!("virtual dataset mappings version {} (0 and 1 are known)", version)));
    }
    let count = r.length()?;
    // each mapping takes at least two names and two 16-byte selections
    if count > (r.remaining() / 34) as u64 {
        return Err(r.error(format!("{} virtual dataset mappings do not fit in {} bytes", count, r.remaining())));
    }
    let mut mappings: Vec<Mapping> = Vec::new();
    for _ in 0..count {
        let next = mapping(&mut r, version, &mappings)?;
        mappings.push(next);
    }
    Ok(mappings)
}

fn mapping(r: &mut ByteReader, version: u8, earlier: &[Mapping]) -> Result<Mapping> {
    let flags = if version >= 1 { r.u8()? } else { 0 };
    if flags & !FLAGS_KNOWN != 0 {
        return Err(Error::unsupported(format!("virtual dataset mapping flags {:#04x}", flags)));
    }
    let file = if flags & FLAG_SAME_FILE != 0 {
        SourceFile::Same
    } else if flags & FLAG_FILE_SHARED != 0 {
        shared(r, earlier, "source file name")?.file.clone()
    } else {
        match text(r, "source file name")?.as_str() {
            "." => SourceFile::Same,
            name => SourceFile::Named(name.to_string()),
        }
    };
    let dataset = if flags & FLAG_DATASET_SHARED != 0 {
        shared(r, earlier, "source dataset name")?.dataset.clone()
    } else {
        text(r, "source dataset name")?
    };
    let source_selection = parse_virtual_selection(r)?;
    let virtual_selection = parse_virtual_selection(r)?;
    Ok(Mapping { file, dataset, source_selection, virtual_selection })
}

/// The earlier mapping whose name a shared-name flag points to (by index).
fn shared<'m>(r: &mut ByteReader, earlier: &'m [Mapping], what: &str) -> Result<&'m Mapping> {
    let index = r.length()?;
    usize::try_from(index).ok().and_then(|i| earlier.get(i)).ok_or_else(|| {
        r.error(format!("{} shared with mapping {}, of {} before it", what, index, earlier.len()))
    })
}

fn text(r: &mut ByteReader, what: &str) -> Result<String> {
    let bytes = r.cstring()?;
    String::from_utf8(bytes.to_vec()).map_err(|_| r.error(format!("{} is not UTF-8", what)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::checksum::metadata_checksum;
    use crate::format::test_support::{ctx, u32s};

    /// "all" selection, and a regular 1-d hyperslab (version 3, 2-byte fields).
    fn all() -> Vec<u8> {
        u32s(&[3, 1, 0, 0])
    }

    fn regular(start: u16, stride: u16, count: u16, block: u16) -> Vec<u8> {
        let mut b = u32s(&[2, 3]);
        b.extend([1u8, 2]);
        b.extend(u32s(&[1]));
        for v in [start, stride, count, block] {
            b.extend(v.to_le_bytes());
        }
        b
    }

    fn sealed(mut body: Vec<u8>) -> Vec<u8> {
        let sum = metadata_checksum(&body);
        body.extend(sum.to_le_bytes());
        body
    }

    #[test]
    fn version_0_and_1_mappings() {
        let mut b = vec![0u8];
        b.extend(2u64.to_le_bytes());
        b.extend(b"src.h5\0data\0");
        b.extend(all());
        b.extend(regular(0, 1, 1, 10));
        b.extend(b".\0/x\0");
        b.extend(regular(4, 2, 3, 1));
        b.extend(regular(10, 1, 1, 3));
        let maps = parse_mappings(&ctx(), &sealed(b), 0).unwrap();
        assert_eq!(maps.len(), 2);
        assert_eq!(maps[0].file, SourceFile::Named("src.h5".into()));
        assert_eq!((maps[0].dataset.as_str(), &maps[0].source_selection), ("data", &Selection::All));
        assert_eq!(maps[1].file, SourceFile::Same);
        assert_eq!(
            maps[1].source_selection,
            Selection::Regular { start: vec![4], stride: vec![2], count: vec![3], block: vec![1] }
        );
        // version 1: flag 0x04 = the same file, no file name stored
        let mut b = vec![1u8];
        b.extend(1u64.to_le_bytes());
        b.push(FLAG_SAME_FILE);
        b.extend(b"/local\0");
        b.extend(regular(10, 2, 5, 1));
        b.extend(regular(0, 1, 1, 5));
        let maps = parse_mappings(&ctx(), &sealed(b), 0).unwrap();
        assert_eq!((&maps[0].file, maps[0].dataset.as_str()), (&SourceFile::Same, "/local"));
        // flags 0x01 / 0x02: file / dataset name of an earlier mapping, by index
        let mut b = vec![1u8];
        b.extend(3u64.to_le_bytes());
        b.push(0);
        b.extend(b"/a/long/source.h5\0/long/dataset\0");
        b.extend(all());
        b.extend(regular(0, 1, 1, 10));
        b.push(FLAG_FILE_SHARED | FLAG_DATASET_SHARED);
        b.extend(0u64.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        b.extend(all());
        b.extend(regular(10, 1, 1, 10));
        b.push(FLAG_FILE_SHARED);
        b.extend(1u64.to_le_bytes());
        b.extend(b"other\0");
        b.extend(all());
        b.extend(regular(20, 1, 1, 10));
        let maps = parse_mappings(&ctx(), &sealed(b.clone()), 0).unwrap();
        let long = SourceFile::Named("/a/long/source.h5".into());
        assert_eq!((&maps[1].file, maps[1].dataset.as_str()), (&long, "/long/dataset"));
        assert_eq!((&maps[2].file, maps[2].dataset.as_str()), (&long, "other"));
        // an index to no earlier mapping is a format error
        let at = b.len() - 6 - all().len() - regular(20, 1, 1, 10).len() - 8;
        b[at] = 2;
        let e = parse_mappings(&ctx(), &sealed(b), 0).unwrap_err();
        assert!(e.to_string().contains("shared with mapping 2"), "{}", e);
    }

    #[test]
    fn unlimited_mappings_are_listed_where_region_references_refuse_them() {
        let mut b = vec![0u8];
        b.extend(1u64.to_le_bytes());
        b.extend(b"s.h5\0d\0");
        b.extend(regular(0, 1, u16::MAX, 1));
        b.extend(regular(2, 4, u16::MAX, 2));
        let maps = parse_mappings(&ctx(), &sealed(b), 0).unwrap();
        let unlimited = |start, stride, block| Selection::Regular {
            start: vec![start],
            stride: vec![stride],
            count: vec![crate::format::reference::UNLIMITED],
            block: vec![block],
        };
        assert_eq!((&maps[0].source_selection, &maps[0].virtual_selection), (&unlimited(0, 1, 1), &unlimited(2, 4, 2)));
        let bytes = regular(0, 1, u16::MAX, 1);
        let mut r = ByteReader::new(&bytes, 0, ctx().sizes());
        let e = crate::format::reference::parse_selection(&mut r).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported);
    }

    #[test]
    fn damaged_blocks_are_errors() {
        let mut b = vec![0u8];
        b.extend(1u64.to_le_bytes());
        b.extend(b"s\0d\0");
        b.extend(all());
        b.extend(all());
        let good = sealed(b.clone());
        assert!(parse_mappings(&ctx(), &good, 0).is_ok());
        let mut flipped = good.clone();
        flipped[12] ^= 1;
        assert!(parse_mappings(&ctx(), &flipped, 0).is_err()); // checksum
        for cut in 0..good.len() - 4 {
            assert!(parse_mappings(&ctx(), &sealed(b[..cut].to_vec()), 0).is_err(), "cut at {}", cut);
        }
        let mut huge = vec![0u8];
        huge.extend(u64::MAX.to_le_bytes());
        assert!(parse_mappings(&ctx(), &sealed(huge), 0).is_err()); // no allocation by count
        let mut flags = vec![1u8];
        flags.extend(1u64.to_le_bytes());
        flags.push(0x08);
        flags.extend([0u8; 40]); // room for a mapping, so the flags are what is refused
        let e = parse_mappings(&ctx(), &sealed(flags), 0).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Unsupported);
    }
}

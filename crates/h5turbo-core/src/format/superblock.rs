//! The superblock: where the file starts, field widths, and the root group.

use super::checksum::verify_trailing;
use super::reader::{ByteReader, Sizes};
use crate::error::{Error, Result};
use crate::io::ReadAt;

pub const SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

/// Largest superblock we need to read: v0/v1 with 8-byte fields and the root
/// symbol table entry is 24 + 2*2 + 4 + 4 + 4*8 + 40 = ~112 bytes.
const MAX_SUPERBLOCK_LEN: u64 = 256;

/// Where the root group's object header is and, for old files, its symbol table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superblock {
    pub version: u8,
    pub sizes: Sizes,
    /// Absolute file offset of the signature; all addresses are relative to it.
    pub base_address: u64,
    pub root_object_header: u64,
    /// v0/v1 root symbol table entry with cached B-tree and heap addresses.
    pub root_symbol_table: Option<(u64, u64)>,
    pub extension_address: Option<u64>,
    pub end_of_file_address: u64,
    /// File consistency flags; bit 0 (v3: write access) means "open for writing".
    pub consistency_flags: u32,
}

impl Superblock {
    /// Find the signature (at 0, 512, 1024, ... as HDF5 allows) and parse the superblock.
    pub fn find_and_read(src: &dyn ReadAt) -> Result<Superblock> {
        let base = find_signature(src)?;
        let len = MAX_SUPERBLOCK_LEN.min(src.len() - base);
        let mut buf = vec![0u8; len as usize];
        src.read_exact_at(&mut buf, base)?;
        Self::parse(&buf, base)
    }

    fn parse(buf: &[u8], base: u64) -> Result<Superblock> {
        let mut r = ByteReader::new(buf, base, Sizes::DEFAULT);
        r.skip(8)?;
        let version = r.u8()?;
        match version {
            0 | 1 => parse_v0_v1(&mut r, version, base),
            2 | 3 => parse_v2_v3(&mut r, buf, version, base),
            v => Err(Error::unsupported(format!("superblock version {} is not supported", v)).at(base)),
        }
    }
}

fn find_signature(src: &dyn ReadAt) -> Result<u64> {
    let mut offset = 0u64;
    while offset + SIGNATURE.len() as u64 <= src.len() {
        let mut sig = [0u8; 8];
        src.read_exact_at(&mut sig, offset)?;
        if sig == SIGNATURE {
            return Ok(offset);
        }
        offset = if offset == 0 { 512 } else { offset * 2 };
    }
    Err(Error::format("not an HDF5 file: no superblock signature found"))
}

fn read_sizes(r: &mut ByteReader) -> Result<Sizes> {
    let offset = r.u8()?;
    let length = r.u8()?;
    for (what, v) in [("offsets", offset), ("lengths", length)] {
        if ![2, 4, 8].contains(&v) {
            return Err(r.error(format!("superblock size of {} is {}, not 2, 4 or 8", what, v)));
        }
    }
    Ok(Sizes { offset, length })
}

fn parse_v0_v1(r: &mut ByteReader, version: u8, base: u64) -> Result<Superblock> {
    r.skip(4)?; // free-space, root symbol table entry, reserved, shared header versions
    let sizes = read_sizes(r)?;
    r.skip(1)?;
    r.skip(4)?; // group leaf / internal node K
    let consistency_flags = r.u32()?;
    if version == 1 {
        r.skip(4)?; // indexed storage internal node K, reserved
    }
    let mut r = ByteReader::new(&r.data()[r.position()..], r.address(), sizes);
    r.skip(sizes.offset as usize)?; // stored base address: superseded by where we found it
    // Base, free-space, end-of-file and driver-info addresses are all "size of
    // offsets" wide (not "size of lengths"), as is everything in the root entry.
    r.address_field()?; // free-space info (unused by readers)
    let end_of_file_address = r.uint(sizes.offset as usize)?;
    r.address_field()?; // driver information block
    // Root group symbol table entry.
    r.skip(sizes.offset as usize)?; // link name offset
    let root_object_header = r.required_address("root group object header")?;
    let cache_type = r.u32()?;
    r.skip(4)?;
    let root_symbol_table = if cache_type == 1 {
        let btree = r.required_address("root group B-tree")?;
        let heap = r.required_address("root group local heap")?;
        Some((btree, heap))
    } else {
        None
    };
    Ok(Superblock {
        version,
        sizes,
        base_address: base,
        root_object_header,
        root_symbol_table,
        extension_address: None,
        end_of_file_address,
        consistency_flags,
    })
}

fn parse_v2_v3(r: &mut ByteReader, buf: &[u8], version: u8, base: u64) -> Result<Superblock> {
    let sizes = read_sizes(r)?;
    let consistency_flags = r.u8()? as u32;
    let mut r = ByteReader::new(&buf[r.position()..], r.address(), sizes);
    r.skip(sizes.offset as usize)?; // stored base address
    let extension_address = r.address_field()?;
    let end_of_file_address = r.uint(sizes.offset as usize)?; // an address: size of offsets
    let root_object_header = r.required_address("root group object header")?;
    let total = 8 + 4 + 4 * sizes.offset as usize + 4;
    let block = buf.get(..total).ok_or_else(|| Error::format("superblock truncated").at(base))?;
    verify_trailing(block, "superblock", base)?;
    Ok(Superblock {
        version,
        sizes,
        base_address: base,
        root_object_header,
        root_symbol_table: None,
        extension_address,
        end_of_file_address,
        consistency_flags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::checksum::metadata_checksum;
    use crate::io::MemSource;

    fn v2_superblock(root: u64) -> Vec<u8> {
        let mut b = SIGNATURE.to_vec();
        b.extend_from_slice(&[2, 8, 8, 0]);
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&4096u64.to_le_bytes());
        b.extend_from_slice(&root.to_le_bytes());
        let sum = metadata_checksum(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    #[test]
    fn finds_superblock_after_userblock() {
        let mut file = vec![0u8; 512];
        file.extend(v2_superblock(48));
        file.resize(2048, 0);
        let sb = Superblock::find_and_read(&MemSource::new(file)).unwrap();
        assert_eq!(sb.base_address, 512);
        assert_eq!(sb.root_object_header, 48);
        assert_eq!(sb.extension_address, None);
    }

    #[test]
    fn rejects_bad_checksum_and_non_hdf5() {
        let mut file = v2_superblock(48);
        file[20] ^= 1;
        assert!(Superblock::find_and_read(&MemSource::new(file)).is_err());
        let err = Superblock::find_and_read(&MemSource::new(vec![0u8; 4096])).unwrap_err();
        assert!(err.to_string().contains("not an HDF5 file"));
    }
}

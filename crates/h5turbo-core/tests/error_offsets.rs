//! Errors in structures read through a copy of their bytes (a shared message in the
//! SOHM heap, a dense-storage link or attribute message, a v2 B-tree record, a global
//! heap object) name the structure's own place in the file: "(at byte offset N)" with
//! N inside the broken structure, not an offset within the copy nor the address of the
//! heap or tree that holds it.
//!
//! Each test damages one byte of a real file (libhdf5-written fixtures), finding the
//! structure by its bytes, reseals the checksum that covers it, and compares the
//! error's offset with the damaged byte's position.

use h5turbo_core::format::checksum::metadata_checksum;
use h5turbo_core::io::MemSource;
use h5turbo_core::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn repository_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(relative)
}

fn crate_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e))
}

fn open(bytes: Vec<u8>, name: &str) -> File {
    File::from_source(Arc::new(MemSource::new(bytes)), Path::new(name)).unwrap()
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap())
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// Every position of `needle` in `haystack`.
fn find_all(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    haystack.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle).map(|(i, _)| i).collect()
}

/// The only position of `needle`; the fixture is expected to hold it once.
fn find_once(haystack: &[u8], needle: &[u8]) -> usize {
    let found = find_all(haystack, needle);
    assert_eq!(found.len(), 1, "{:?} found at {:?}", String::from_utf8_lossy(needle), found);
    found[0]
}

/// The fractal heap direct block ("FHDB") holding `position` (the last one starting
/// before it), its checksum field's position and its size. The size is not stored in
/// the block: it is the one of the heap's doubling-table sizes that the stored
/// checksum verifies (8-byte addresses and lengths, as in every fixture here).
fn direct_block_around(bytes: &[u8], position: usize) -> (usize, usize, usize) {
    let block = *find_all(&bytes[..position], b"FHDB").last().expect("no direct block before the position");
    let heap = u64_at(bytes, block + 5) as usize;
    assert_eq!(&bytes[heap..heap + 4], b"FRHP", "direct block at {} names no heap header", block);
    let (start_size, max_direct, max_heap_bits) =
        (u64_at(bytes, heap + 112), u64_at(bytes, heap + 120), u16_at(bytes, heap + 128));
    let checksum_at = block + 5 + 8 + usize::from(max_heap_bits).div_ceil(8);
    let verifies = |size: usize| {
        let mut copy = bytes.get(block..block + size)?.to_vec();
        copy[checksum_at - block..checksum_at - block + 4].fill(0);
        (metadata_checksum(&copy) == u32_at(bytes, checksum_at)).then_some(size)
    };
    let size = std::iter::successors(Some(start_size as usize), |s| Some(s * 2))
        .take_while(|&s| s as u64 <= max_direct)
        .find_map(verifies)
        .unwrap_or_else(|| panic!("no block size verifies the direct block at {}", block));
    assert!(position < block + size, "position {} lies past the direct block at {}", position, block);
    (block, checksum_at, size)
}

/// Set `bytes[position]` to `value` inside a checksummed direct block, the block's
/// checksum recomputed so that the damage is read as a broken structure, not as a
/// checksum mismatch.
fn damage_in_direct_block(bytes: &mut [u8], position: usize, value: u8) {
    let (block, checksum_at, size) = direct_block_around(bytes, position);
    bytes[position] = value;
    bytes[checksum_at..checksum_at + 4].fill(0);
    let checksum = metadata_checksum(&bytes[block..block + size]);
    bytes[checksum_at..checksum_at + 4].copy_from_slice(&checksum.to_le_bytes());
}

/// A v2 B-tree whose root is a leaf: (record size, leaf address, record count).
fn leaf_tree(bytes: &[u8], record_type: u8) -> (usize, usize, usize) {
    let trees = find_all(bytes, b"BTHD").into_iter().filter(|&h| bytes[h + 5] == record_type && u16_at(bytes, h + 12) == 0);
    let header = trees.into_iter().next().unwrap_or_else(|| panic!("no one-leaf B-tree of record type {}", record_type));
    let (record_size, root, records) =
        (u16_at(bytes, header + 10) as usize, u64_at(bytes, header + 16) as usize, u16_at(bytes, header + 24) as usize);
    assert_eq!(&bytes[root..root + 4], b"BTLF");
    (record_size, root, records)
}

/// Set `bytes[position]` to `value` inside the leaf at `leaf` (holding `records`
/// records of `record_size` bytes), its trailing checksum recomputed.
fn damage_in_leaf(bytes: &mut [u8], leaf: usize, record_size: usize, records: usize, position: usize, value: u8) {
    let checksum_at = leaf + 6 + records * record_size;
    assert_eq!(metadata_checksum(&bytes[leaf..checksum_at]), u32_at(bytes, checksum_at), "leaf at {}", leaf);
    bytes[position] = value;
    let checksum = metadata_checksum(&bytes[leaf..checksum_at]);
    bytes[checksum_at..checksum_at + 4].copy_from_slice(&checksum.to_le_bytes());
}

/// The error says `says` and names file offset `at`.
fn assert_reported_at(error: &Error, says: &str, at: usize) {
    assert!(error.message().contains(says), "{}", error);
    assert_eq!(error.offset(), Some(at as u64), "{}", error);
}

fn expect_error<T>(result: Result<T>, what: &str) -> Error {
    match result {
        Ok(_) => panic!("{}: the damage went unnoticed", what),
        Err(error) => error,
    }
}

/// The i4 datatype of the datasets g*/d* is kept once, in the shared message heap; a
/// broken version in it is reported at the datatype's place in that heap (it was
/// reported at the referring message in the dataset's object header).
#[test]
fn a_shared_datatype_names_its_place_in_the_shared_message_heap() {
    let mut bytes = read(&repository_file("tests/data/sohm/sohm_all.h5"));
    // class 0 (integer), version 1; little-endian signed; 4 bytes; offset 0, 32 bits
    let datatype = find_once(&bytes, &[0x10, 0x08, 0, 0, 4, 0, 0, 0, 0, 0, 32, 0]);
    damage_in_direct_block(&mut bytes, datatype, 0x70); // version 7
    let file = open(bytes, "sohm_all.h5");
    let error = expect_error(file.get("/g0/d0").and_then(|o| o.dataset()), "/g0/d0");
    assert_reported_at(&error, "version 7", datatype);
}

/// A link message of a group with dense link storage, read from its fractal heap, is
/// reported where it lies in the heap's direct block (it was reported at the heap
/// header), whether the group is listed or the link looked up by name.
#[test]
fn a_dense_link_message_names_its_place_in_the_heap() {
    let mut bytes = read(&crate_file("tests/data/dense_storage.h5"));
    let name = find_once(&bytes, b"\x06soft_a");
    // version 1, flags, [type], [creation order], [charset], 1-byte name length
    let start = (name.saturating_sub(12)..name)
        .find(|&s| {
            let flags = bytes[s + 1];
            let prefix = 2 + usize::from(flags & 0x08 != 0) + 8 * usize::from(flags & 0x04 != 0) + usize::from(flags & 0x10 != 0);
            bytes[s] == 1 && flags & 0x03 == 0 && s + prefix == name
        })
        .expect("no link message prefix before the name");
    damage_in_direct_block(&mut bytes, start, 9);
    let file = open(bytes, "dense_storage.h5");
    let group = file.get("/plain").unwrap();
    let listed = expect_error(group.links(), "listing /plain");
    let looked_up = expect_error(group.link("soft_a"), "looking up /plain/soft_a");
    for error in [listed, looked_up] {
        assert_reported_at(&error, "version 9", start);
    }
}

/// An attribute message in dense attribute storage is reported where it lies in the
/// heap (it was reported at the heap header).
#[test]
fn a_dense_attribute_message_names_its_place_in_the_heap() {
    let mut bytes = read(&crate_file("tests/data/dense_storage.h5"));
    // version 3, flags, name length 4 ("z00" and its NUL), datatype and dataspace
    // lengths, character set, then the name
    let name = find_once(&bytes, b"z00\0");
    let start = name - 9;
    assert_eq!((bytes[start], u16_at(&bytes, start + 2)), (3, 4), "no attribute message before the name");
    damage_in_direct_block(&mut bytes, start, 9);
    let file = open(bytes, "dense_storage.h5");
    let error = expect_error(file.get("/attr_ds").and_then(|o| o.attribute_names()), "/attr_ds attributes");
    assert_reported_at(&error, "version 9", start);
}

/// A record of an attribute name index (v2 B-tree type 8: heap ID, message flags,
/// creation order, name hash) flagged as a shared message is reported at its flags
/// byte in the leaf (it was reported at the B-tree header).
#[test]
fn an_attribute_index_record_names_its_place_in_the_leaf() {
    let mut bytes = read(&crate_file("tests/data/dense_storage.h5"));
    let (record_size, leaf, records) = leaf_tree(&bytes, 8);
    let flags = leaf + 6 + 8; // first record, after its 8-byte heap ID
    let shared = bytes[flags] | 0x02;
    damage_in_leaf(&mut bytes, leaf, record_size, records, flags, shared);
    let file = open(bytes, "dense_storage.h5");
    let errors: Vec<Error> =
        ["/attr_holder", "/attr_ds"].iter().filter_map(|o| file.get(o).and_then(|o| o.attribute_names()).err()).collect();
    assert_eq!(errors.len(), 1, "{:?}", errors);
    assert_reported_at(&errors[0], "shared attribute messages", flags);
}

/// The heap ID in a link name index record (v2 B-tree type 5: name hash, heap ID)
/// with a version the heap does not know is reported at the ID in the leaf (it was
/// reported at the heap header).
#[test]
fn a_link_index_records_heap_id_names_its_place_in_the_leaf() {
    let mut bytes = read(&crate_file("tests/data/dense_storage.h5"));
    let (record_size, leaf, records) = leaf_tree(&bytes, 5);
    let heap_id = leaf + 6 + 4; // first record, after its name hash
    let version_1 = bytes[heap_id] | 0x40;
    damage_in_leaf(&mut bytes, leaf, record_size, records, heap_id, version_1);
    let file = open(bytes, "dense_storage.h5");
    let error = expect_error(file.get("/plain").and_then(|g| g.links()), "listing /plain");
    assert_reported_at(&error, "heap ID version 1", heap_id);
}

/// A region reference's selection, kept in a global heap object, is reported inside
/// that object (it was reported as if the object began at the collection's address).
#[test]
fn a_region_reference_names_its_place_in_the_global_heap() {
    let mut bytes = read(&repository_file("tests/data/corpus/pyfive/references.hdf5"));
    let collection = find_once(&bytes, b"GCOL");
    // collection header (16 bytes), then object 1: index, reference count, reserved,
    // size (16 bytes), its data: dataset address (8), selection type (4), version ...
    let object = collection + 16;
    assert_eq!(u16_at(&bytes, object), 1);
    let (data, size) = (object + 16, u64_at(&bytes, object + 8) as usize);
    let selection_type = data + 8;
    assert_eq!(u32_at(&bytes, selection_type), 2, "object 1 is not a hyperslab region");
    bytes[selection_type] = 9;
    let file = open(bytes, "references.hdf5");
    let error = expect_error(file.region(collection as u64, 1), "region reference");
    assert!(error.message().contains("selection type 9"), "{}", error);
    let offset = error.offset().expect("no offset") as usize;
    assert!((selection_type..data + size).contains(&offset), "{} not in {}..{}", error, selection_type, data + size);
}

//! Datatype message (type 0x0003): how one element is laid out.
//!
//! Every class of the format is parsed (fixed-point, floating-point, time, string,
//! bitfield, opaque, compound, reference, enum, variable-length, array, complex).
//! Which numpy dtype h5py gives each type is `crate::convert::numpy_dtype`'s business.

use super::reader::{bytes_needed, ByteReader, Sizes};
use crate::error::{Error, Result};

/// Nested types (compound in compound, array of vlen of ...) deeper than this are
/// rejected: real files use a handful of levels, and the limit bounds recursion.
pub const MAX_NESTING: usize = 32;
/// HDF5's limit on array type ranks (H5S_MAX_RANK).
const MAX_ARRAY_RANK: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
    /// VAX floating-point order (floats only); h5py has no dtype for it.
    Vax,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringPadding {
    NullTerminate,
    NullPad,
    SpacePad,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CharSet {
    Ascii,
    Utf8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReferenceKind {
    /// H5R_OBJECT1: an object header address.
    Object,
    /// H5R_DATASET_REGION1: a global heap id of a serialized selection.
    DatasetRegion,
    /// HDF5 1.12+ reference types (object2, region2, attribute); h5py has no dtype.
    Other(u8),
}

/// Bit layout of a floating-point type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatLayout {
    pub order: ByteOrder,
    pub bit_offset: u16,
    pub precision: u16,
    pub sign_location: u8,
    pub exponent_location: u8,
    pub exponent_size: u8,
    pub mantissa_location: u8,
    pub mantissa_size: u8,
    pub exponent_bias: u32,
    /// 0 none, 1 most significant bit set, 2 implied (IEEE).
    pub normalization: u8,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompoundMember {
    pub name: String,
    pub offset: u64,
    pub datatype: Datatype,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumMember {
    pub name: String,
    /// The value in the base type's encoding (base size bytes).
    pub value: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VlenKind {
    Sequence,
    String { padding: StringPadding, charset: CharSet },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatatypeClass {
    FixedPoint { order: ByteOrder, signed: bool, bit_offset: u16, precision: u16 },
    FloatingPoint(FloatLayout),
    Time { order: ByteOrder, precision: u16 },
    String { padding: StringPadding, charset: CharSet },
    Bitfield { order: ByteOrder, bit_offset: u16, precision: u16 },
    Opaque { tag: String },
    Compound { members: Vec<CompoundMember> },
    Reference { kind: ReferenceKind },
    Enum { base: Box<Datatype>, members: Vec<EnumMember> },
    VarLen { kind: VlenKind, base: Box<Datatype> },
    Array { dims: Vec<u64>, base: Box<Datatype> },
    Complex { base: Box<Datatype> },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datatype {
    /// Message version (1..=5): decides how compound/enum names and array members are encoded.
    pub version: u8,
    /// Bytes per element as stored in the file (for vlen: the 4 + offset + 4 heap reference).
    pub size: usize,
    pub class: DatatypeClass,
}

impl Datatype {
    /// Parse a datatype message body `data` that starts at file address `address`.
    pub fn parse(data: &[u8], address: u64, sizes: Sizes) -> Result<Datatype> {
        let mut r = ByteReader::new(data, address, sizes);
        Self::parse_from(&mut r)
    }

    /// Parse from a cursor (attribute messages embed a datatype).
    pub fn parse_from(r: &mut ByteReader) -> Result<Datatype> {
        parse_type(r, 0)
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// True if elements hold variable-length parts (stored in the global heap).
    pub fn has_vlen(&self) -> bool {
        match &self.class {
            DatatypeClass::VarLen { .. } => true,
            DatatypeClass::Compound { members } => members.iter().any(|m| m.datatype.has_vlen()),
            DatatypeClass::Array { base, .. } => base.has_vlen(),
            _ => false,
        }
    }

    /// Names and integer values of an enum type (values decoded with the base
    /// type's byte order and sign); `None` for other classes.
    pub fn enum_members(&self) -> Option<Vec<(String, i128)>> {
        match &self.class {
            DatatypeClass::Enum { base, members } => {
                Some(members.iter().map(|m| (m.name.clone(), base.decode_integer(&m.value))).collect())
            }
            _ => None,
        }
    }

    /// Decode one integer of this (fixed-point) type from `bytes`; other classes
    /// are read as unsigned little-endian (never used for them).
    pub fn decode_integer(&self, bytes: &[u8]) -> i128 {
        let (order, signed) = match self.class {
            DatatypeClass::FixedPoint { order, signed, .. } => (order, signed),
            DatatypeClass::Bitfield { order, .. } => (order, false),
            _ => (ByteOrder::Little, false),
        };
        decode_int(bytes, order, signed)
    }

}

/// Integer from up to 16 bytes in the given order, sign-extended if `signed`.
pub fn decode_int(bytes: &[u8], order: ByteOrder, signed: bool) -> i128 {
    let bytes = &bytes[..bytes.len().min(16)];
    let mut v: u128 = 0;
    let mut push = |b: u8| v = (v << 8) | b as u128;
    match order {
        ByteOrder::Big => bytes.iter().for_each(|&b| push(b)),
        _ => bytes.iter().rev().for_each(|&b| push(b)),
    }
    let bits = bytes.len() * 8;
    if signed && bits > 0 && bits < 128 && (v >> (bits - 1)) & 1 == 1 {
        (v | (!0u128 << bits)) as i128
    } else {
        v as i128
    }
}

// ---------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------

const CLASS_FIXED: u8 = 0;
const CLASS_FLOAT: u8 = 1;
const CLASS_TIME: u8 = 2;
const CLASS_STRING: u8 = 3;
const CLASS_BITFIELD: u8 = 4;
const CLASS_OPAQUE: u8 = 5;
const CLASS_COMPOUND: u8 = 6;
const CLASS_REFERENCE: u8 = 7;
const CLASS_ENUM: u8 = 8;
const CLASS_VLEN: u8 = 9;
const CLASS_ARRAY: u8 = 10;
const CLASS_COMPLEX: u8 = 11;

/// The fixed 8-byte header every datatype message starts with.
struct Header {
    start: u64,
    version: u8,
    class: u8,
    bits: u32,
    size: usize,
}

fn parse_type(r: &mut ByteReader, depth: usize) -> Result<Datatype> {
    let start = r.address();
    if depth > MAX_NESTING {
        return Err(Error::format(format!("datatype nested deeper than {} levels", MAX_NESTING)).at(start));
    }
    let h = parse_header(r)?;
    let class = parse_class(r, &h, depth).map_err(|e| e.at(start))?;
    let dt = Datatype { version: h.version, size: h.size, class };
    check_size(&dt).map_err(|e| e.at(start))?;
    Ok(dt)
}

fn parse_header(r: &mut ByteReader) -> Result<Header> {
    let start = r.address();
    let class_and_version = r.u8()?;
    let b = r.array::<3>()?;
    let size = r.u32()? as usize;
    let version = class_and_version >> 4;
    let class = class_and_version & 0x0f;
    if !(1..=5).contains(&version) {
        return Err(Error::format(format!("datatype message version {} is not 1..5", version)).at(start));
    }
    let bits = u32::from_le_bytes([b[0], b[1], b[2], 0]);
    Ok(Header { start, version, class, bits, size })
}

fn parse_class(r: &mut ByteReader, h: &Header, depth: usize) -> Result<DatatypeClass> {
    match h.class {
        CLASS_FIXED => parse_fixed(r, h.bits),
        CLASS_FLOAT => parse_float(r, h.bits),
        CLASS_TIME => Ok(DatatypeClass::Time { order: integer_order(h.bits), precision: r.u16()? }),
        CLASS_STRING => Ok(DatatypeClass::String {
            padding: string_padding(h.bits & 0x0f, h.start)?,
            charset: charset((h.bits >> 4) & 0x0f, h.start)?,
        }),
        CLASS_BITFIELD => {
            let (bit_offset, precision) = (r.u16()?, r.u16()?);
            Ok(DatatypeClass::Bitfield { order: integer_order(h.bits), bit_offset, precision })
        }
        CLASS_OPAQUE => parse_opaque(r, h.bits),
        CLASS_COMPOUND => parse_compound(r, h, depth),
        CLASS_REFERENCE => Ok(DatatypeClass::Reference { kind: reference_kind(h.bits) }),
        CLASS_ENUM => parse_enum(r, h, depth),
        CLASS_VLEN => parse_vlen(r, h, depth),
        CLASS_ARRAY => parse_array(r, h, depth),
        CLASS_COMPLEX => parse_complex(r, h, depth),
        c => Err(Error::format(format!("unknown datatype class {}", c))),
    }
}

fn integer_order(bits: u32) -> ByteOrder {
    if bits & 1 == 0 {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    }
}

fn parse_fixed(r: &mut ByteReader, bits: u32) -> Result<DatatypeClass> {
    let (bit_offset, precision) = (r.u16()?, r.u16()?);
    Ok(DatatypeClass::FixedPoint { order: integer_order(bits), signed: bits & 0x08 != 0, bit_offset, precision })
}

fn parse_float(r: &mut ByteReader, bits: u32) -> Result<DatatypeClass> {
    // Byte order is bits 0 and 6: 00 little, 01 big, 11 VAX; 10 is reserved.
    let order = match (bits & 1, (bits >> 6) & 1) {
        (0, 0) => ByteOrder::Little,
        (1, 0) => ByteOrder::Big,
        (1, 1) => ByteOrder::Vax,
        _ => return Err(Error::format("floating-point type with reserved byte order")),
    };
    let bit_offset = r.u16()?;
    let precision = r.u16()?;
    let exponent_location = r.u8()?;
    let exponent_size = r.u8()?;
    let mantissa_location = r.u8()?;
    let mantissa_size = r.u8()?;
    let exponent_bias = r.u32()?;
    Ok(DatatypeClass::FloatingPoint(FloatLayout {
        order,
        bit_offset,
        precision,
        sign_location: ((bits >> 8) & 0xff) as u8,
        exponent_location,
        exponent_size,
        mantissa_location,
        mantissa_size,
        exponent_bias,
        normalization: ((bits >> 4) & 0x03) as u8,
    }))
}

fn string_padding(v: u32, at: u64) -> Result<StringPadding> {
    match v {
        0 => Ok(StringPadding::NullTerminate),
        1 => Ok(StringPadding::NullPad),
        2 => Ok(StringPadding::SpacePad),
        p => Err(Error::format(format!("unknown string padding {}", p)).at(at)),
    }
}

fn charset(v: u32, at: u64) -> Result<CharSet> {
    match v {
        0 => Ok(CharSet::Ascii),
        1 => Ok(CharSet::Utf8),
        c => Err(Error::unsupported(format!("string character set {} (only ASCII and UTF-8 exist)", c)).at(at)),
    }
}

fn reference_kind(bits: u32) -> ReferenceKind {
    match bits & 0x0f {
        0 => ReferenceKind::Object,
        1 => ReferenceKind::DatasetRegion,
        k => ReferenceKind::Other(k as u8),
    }
}

fn parse_opaque(r: &mut ByteReader, bits: u32) -> Result<DatatypeClass> {
    // The tag field is NUL-padded to a multiple of 8; its length is in the class bits.
    let raw = r.bytes((bits & 0xff) as usize)?;
    Ok(DatatypeClass::Opaque { tag: text_until_nul(raw) })
}

fn text_until_nul(raw: &[u8]) -> String {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

/// A member or enum name: NUL-terminated; versions 1 and 2 pad it (with its NUL)
/// to a multiple of 8 bytes from its start, version 3 does not.
fn read_name(r: &mut ByteReader, version: u8) -> Result<String> {
    let name = r.cstring()?;
    if version < 3 {
        let stored = (name.len() + 8) / 8 * 8;
        r.skip(stored - name.len() - 1)?;
    }
    Ok(String::from_utf8_lossy(name).into_owned())
}

fn parse_compound(r: &mut ByteReader, h: &Header, depth: usize) -> Result<DatatypeClass> {
    let count = (h.bits & 0xffff) as usize;
    if count == 0 {
        return Err(r.error("compound has no members (libhdf5: invalid number of members: 0)"));
    }
    // Each member takes at least a name byte, an offset byte and an 8-byte type header.
    if count.saturating_mul(10) > r.remaining() {
        return Err(r.error(format!("compound claims {} members, more than its message holds", count)));
    }
    let mut members = Vec::with_capacity(count);
    for _ in 0..count {
        members.push(parse_member(r, h, depth)?);
    }
    Ok(DatatypeClass::Compound { members })
}

fn parse_member(r: &mut ByteReader, h: &Header, depth: usize) -> Result<CompoundMember> {
    let name = read_name(r, h.version)?;
    let offset = if h.version >= 3 { r.uint(bytes_needed(h.size as u64))? } else { r.u32()? as u64 };
    let old_array_dims = if h.version == 1 { parse_v1_member_dims(r)? } else { Vec::new() };
    let mut datatype = parse_type(r, depth + 1)?;
    if !old_array_dims.is_empty() {
        // Version 1 stored small arrays inside the member; libhdf5 presents them as array types.
        let size = array_size(&old_array_dims, datatype.size)?;
        datatype = Datatype {
            version: 2,
            size,
            class: DatatypeClass::Array { dims: old_array_dims, base: Box::new(datatype) },
        };
    }
    Ok(CompoundMember { name, offset, datatype })
}

/// Version 1 member: rank (<= 4), reserved, permutation, reserved, four dimension sizes.
fn parse_v1_member_dims(r: &mut ByteReader) -> Result<Vec<u64>> {
    let rank = r.u8()? as usize;
    if rank > 4 {
        return Err(r.error(format!("version 1 compound member of rank {} (at most 4)", rank)));
    }
    r.skip(3 + 4 + 4)?;
    let all: Vec<u64> = (0..4).map(|_| r.u32().map(u64::from)).collect::<Result<_>>()?;
    Ok(all[..rank].to_vec())
}

fn parse_enum(r: &mut ByteReader, h: &Header, depth: usize) -> Result<DatatypeClass> {
    let count = (h.bits & 0xffff) as usize;
    let base = parse_type(r, depth + 1)?;
    if !matches!(base.class, DatatypeClass::FixedPoint { .. }) {
        return Err(r.error("enum base type is not an integer type"));
    }
    if count.saturating_mul(base.size + 1) > r.remaining() {
        return Err(r.error(format!("enum claims {} members, more than its message holds", count)));
    }
    let names = (0..count).map(|_| read_name(r, h.version)).collect::<Result<Vec<_>>>()?;
    let mut members = Vec::with_capacity(count);
    for name in names {
        members.push(EnumMember { name, value: r.bytes(base.size)?.to_vec() });
    }
    Ok(DatatypeClass::Enum { base: Box::new(base), members })
}

fn parse_vlen(r: &mut ByteReader, h: &Header, depth: usize) -> Result<DatatypeClass> {
    let kind = match h.bits & 0x0f {
        0 => VlenKind::Sequence,
        1 => VlenKind::String {
            padding: string_padding((h.bits >> 4) & 0x0f, h.start)?,
            charset: charset((h.bits >> 8) & 0x0f, h.start)?,
        },
        k => return Err(r.error(format!("unknown variable-length type {}", k))),
    };
    let base = parse_type(r, depth + 1)?;
    Ok(DatatypeClass::VarLen { kind, base: Box::new(base) })
}

fn parse_array(r: &mut ByteReader, h: &Header, depth: usize) -> Result<DatatypeClass> {
    let rank = r.u8()? as usize;
    if rank == 0 || rank > MAX_ARRAY_RANK {
        return Err(r.error(format!("array type of rank {} (must be 1..{})", rank, MAX_ARRAY_RANK)));
    }
    if h.version < 3 {
        r.skip(3)?;
    }
    let dims = (0..rank).map(|_| r.u32().map(u64::from)).collect::<Result<Vec<_>>>()?;
    if h.version < 3 {
        // Permutation indices: never implemented by libhdf5, skipped there too.
        r.skip(4 * rank)?;
    }
    let base = parse_type(r, depth + 1)?;
    Ok(DatatypeClass::Array { dims, base: Box::new(base) })
}

fn parse_complex(r: &mut ByteReader, h: &Header, depth: usize) -> Result<DatatypeClass> {
    // Bit 0: both parts have the same type; bits 1-2: rectangular form (0). Nothing else exists.
    if h.bits & 1 == 0 || (h.bits >> 1) & 0x3 != 0 {
        return Err(Error::unsupported(format!("complex datatype with class bits {:#x}", h.bits)));
    }
    let base = parse_type(r, depth + 1)?;
    if !matches!(base.class, DatatypeClass::FloatingPoint(_)) {
        return Err(r.error("complex base type is not floating-point"));
    }
    Ok(DatatypeClass::Complex { base: Box::new(base) })
}

fn array_size(dims: &[u64], base_size: usize) -> Result<usize> {
    dims.iter()
        .try_fold(base_size as u64, |acc, &d| acc.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Error::format(format!("array type {:?} of {}-byte elements is too large", dims, base_size)))
}

/// The size stored in the message must agree with what the members need: later
/// code indexes element bytes with these offsets and sizes.
/// Largest element (numpy's itemsize limit).
const MAX_TYPE_SIZE: usize = i32::MAX as usize;

fn check_size(dt: &Datatype) -> Result<()> {
    if dt.size == 0 {
        // libhdf5 rejects zero-sized types; allowing them would let array types
        // claim any number of elements.
        return Err(Error::format("datatype of size 0"));
    }
    if dt.size > MAX_TYPE_SIZE {
        // numpy itemsizes are C ints; a larger element cannot be returned, and its
        // fill value alone would be a multi-GiB allocation from a corrupt size field.
        return Err(Error::format(format!("datatype of {} bytes (at most {} supported)", dt.size, MAX_TYPE_SIZE)));
    }
    match &dt.class {
        DatatypeClass::Compound { members } => {
            for m in members {
                let end = m.offset.checked_add(m.datatype.size as u64);
                if end.map_or(true, |e| e > dt.size as u64) {
                    return Err(Error::format(format!(
                        "compound member '{}' ({} bytes at offset {}) exceeds the {}-byte compound",
                        m.name, m.datatype.size, m.offset, dt.size
                    )));
                }
            }
            Ok(())
        }
        DatatypeClass::Array { dims, base } => {
            let need = array_size(dims, base.size)?;
            if need != dt.size {
                return Err(Error::format(format!("array type of {} bytes declares size {}", need, dt.size)));
            }
            Ok(())
        }
        DatatypeClass::Enum { base, .. } if base.size != dt.size => {
            Err(Error::format(format!("enum of size {} over a {}-byte base type", dt.size, base.size)))
        }
        DatatypeClass::Complex { base } if base.size.checked_mul(2) != Some(dt.size) => {
            Err(Error::format(format!("complex of size {} over a {}-byte base type", dt.size, base.size)))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Header bytes: class/version, three class-bit bytes, size.
    fn header(version: u8, class: u8, bits: u32, size: u32) -> Vec<u8> {
        let mut m = vec![(version << 4) | class, bits as u8, (bits >> 8) as u8, (bits >> 16) as u8];
        m.extend_from_slice(&size.to_le_bytes());
        m
    }

    fn int(size: u32, big: bool, signed: bool) -> Vec<u8> {
        let mut m = header(1, CLASS_FIXED, big as u32 | (signed as u32) << 3, size);
        m.extend_from_slice(&0u16.to_le_bytes());
        m.extend_from_slice(&(size as u16 * 8).to_le_bytes());
        m
    }

    #[test]
    fn rejects_elements_over_2_gib() {
        // Found by the mutation test: an opaque size set to 0xffffffff (was a 4 GiB
        // fill-value allocation and an abort).
        let mut m = header(1, CLASS_OPAQUE, 8, u32::MAX);
        m.extend_from_slice(b"tag\0\0\0\0\0");
        let e = Datatype::parse(&m, 0, Sizes::DEFAULT).unwrap_err();
        assert!(e.to_string().contains("4294967295 bytes"), "{}", e);
        m[4..8].copy_from_slice(&16u32.to_le_bytes());
        assert!(Datatype::parse(&m, 0, Sizes::DEFAULT).is_ok());
    }

    fn ieee(size: u32, big: bool) -> Vec<u8> {
        let (sign, eloc, esize, msize, bias): (u32, u8, u8, u8, u32) = match size {
            2 => (15, 10, 5, 10, 15),
            4 => (31, 23, 8, 23, 127),
            _ => (63, 52, 11, 52, 1023),
        };
        let mut m = header(1, CLASS_FLOAT, big as u32 | 0x20 | sign << 8, size);
        m.extend_from_slice(&0u16.to_le_bytes());
        m.extend_from_slice(&(size as u16 * 8).to_le_bytes());
        m.extend_from_slice(&[eloc, esize, 0, msize]);
        m.extend_from_slice(&bias.to_le_bytes());
        m
    }

    fn dtype(m: &[u8]) -> String {
        Datatype::parse(m, 0, Sizes::DEFAULT).unwrap().numpy_dtype().unwrap().to_descr_string()
    }

    fn kind_of(m: &[u8]) -> crate::ErrorKind {
        let parsed = Datatype::parse(m, 0, Sizes::DEFAULT).and_then(|d| d.numpy_dtype());
        parsed.unwrap_err().kind()
    }

    #[test]
    fn integers_and_floats() {
        assert_eq!(dtype(&int(1, false, true)), "|i1");
        assert_eq!(dtype(&int(1, true, false)), "|u1");
        assert_eq!(dtype(&int(2, true, true)), ">i2");
        assert_eq!(dtype(&int(8, false, false)), "<u8");
        assert_eq!(kind_of(&int(3, false, true)), crate::ErrorKind::Unsupported);
        assert_eq!(dtype(&ieee(2, false)), "<f2");
        assert_eq!(dtype(&ieee(4, true)), ">f4");
        assert_eq!(dtype(&ieee(8, false)), "<f8");
    }

    #[test]
    fn non_ieee_floats_follow_h5py_search() {
        // A 4-byte float with an 11-bit exponent (bias 1023) fits only float64.
        let mut m = header(1, CLASS_FLOAT, 31 << 8, 4);
        m.extend_from_slice(&[0, 0, 32, 0, 20, 11, 0, 20]);
        m.extend_from_slice(&1023u32.to_le_bytes());
        assert_eq!(dtype(&m), "<f8");
        // VAX order (bits 0 and 6) has no numpy equivalent.
        let mut vax = ieee(4, true);
        vax[1] |= 0x40;
        assert_eq!(kind_of(&vax), crate::ErrorKind::Unsupported);
        // Bit 6 alone is reserved.
        let mut reserved = ieee(4, false);
        reserved[1] |= 0x40;
        assert!(Datatype::parse(&reserved, 0, Sizes::DEFAULT).is_err());
    }

    #[test]
    fn time_and_new_references_are_unsupported() {
        let mut time = header(1, CLASS_TIME, 0, 4);
        time.extend_from_slice(&32u16.to_le_bytes());
        assert_eq!(kind_of(&time), crate::ErrorKind::Unsupported);
        assert_eq!(dtype(&header(1, CLASS_REFERENCE, 0, 8)), "ref-object");
        assert_eq!(dtype(&header(1, CLASS_REFERENCE, 1, 12)), "ref-region");
        assert_eq!(kind_of(&header(4, CLASS_REFERENCE, 0x12, 64)), crate::ErrorKind::Unsupported);
    }

    #[test]
    fn strings_opaque_and_numpy_tags() {
        assert_eq!(dtype(&header(1, CLASS_STRING, 0x12, 10)), "|S10");
        assert!(Datatype::parse(&header(1, CLASS_STRING, 0x03, 10), 0, Sizes::DEFAULT).is_err());
        let opaque = |tag: &[u8], size: u32| {
            let mut m = header(1, CLASS_OPAQUE, tag.len() as u32, size);
            m.extend_from_slice(tag);
            m
        };
        assert_eq!(dtype(&opaque(b"some tag\0\0\0\0\0\0\0\0", 16)), "|V16");
        assert_eq!(dtype(&opaque(b"NUMPY:<M8[ns]\0\0\0", 8)), "<M8[ns]");
        assert_eq!(dtype(&opaque(b"NUMPY:>m8[s]\0\0\0\0", 8)), ">m8[s]");
        assert_eq!(kind_of(&opaque(b"NUMPY:<M8[ns]\0\0\0", 4)), crate::ErrorKind::Unsupported);
        assert_eq!(kind_of(&opaque(b"NUMPY:what\0\0\0\0\0\0", 4)), crate::ErrorKind::Unsupported);
        assert!(Datatype::parse(&opaque(b"NUMPY:<M8", 8)[..12], 0, Sizes::DEFAULT).is_err());
    }

    fn enum_type(base: Vec<u8>, members: &[(&str, i8)], version: u8) -> Vec<u8> {
        let mut m = header(version, CLASS_ENUM, members.len() as u32, 1);
        m.extend(base);
        for (name, _) in members {
            m.extend_from_slice(name.as_bytes());
            m.push(0);
            if version < 3 {
                m.resize(m.len() + (8 - (name.len() + 1) % 8) % 8, 0);
            }
        }
        m.extend(members.iter().map(|(_, v)| *v as u8));
        m
    }

    #[test]
    fn enums_and_h5py_bool() {
        let e = enum_type(int(1, false, true), &[("RED", 0), ("BLUE", -3)], 3);
        let dt = Datatype::parse(&e, 0, Sizes::DEFAULT).unwrap();
        assert_eq!(dt.enum_members().unwrap(), vec![("RED".to_string(), 0), ("BLUE".to_string(), -3)]);
        assert_eq!(dtype(&e), "|i1");
        assert_eq!(dtype(&enum_type(int(1, false, true), &[("TRUE", 1), ("FALSE", 0)], 1)), "|b1");
        assert_eq!(dtype(&enum_type(int(1, false, true), &[("FALSE", 0), ("TRUE", 2)], 2)), "|i1");
        assert_eq!(dtype(&enum_type(int(1, false, false), &[("FALSE", 0), ("TRUE", 1), ("X", 2)], 3)), "|u1");
        // An enum over a float is malformed.
        let bad = enum_type(ieee(2, false), &[], 3);
        assert!(Datatype::parse(&bad, 0, Sizes::DEFAULT).is_err());
    }

    fn member(name: &str, offset: u32, version: u8, t: Vec<u8>) -> Vec<u8> {
        let mut m = name.as_bytes().to_vec();
        m.push(0);
        if version < 3 {
            m.resize(m.len() + (8 - (name.len() + 1) % 8) % 8, 0);
            m.extend_from_slice(&offset.to_le_bytes());
        } else {
            m.push(offset as u8); // compounds below 256 bytes: one offset byte
        }
        if version == 1 {
            m.extend_from_slice(&[0; 4 + 4 + 4 + 16]);
        }
        m.extend(t);
        m
    }

    #[test]
    fn compounds_of_every_version_and_complex() {
        for version in 1..=3 {
            let mut c = header(version, CLASS_COMPOUND, 2, 16);
            c.extend(member("r", 0, version, ieee(8, false)));
            c.extend(member("i", 8, version, ieee(8, false)));
            assert_eq!(dtype(&c), "<c16", "version {}", version);
            let mut s = header(version, CLASS_COMPOUND, 2, 12);
            s.extend(member("a_long_name", 0, version, int(4, true, true)));
            s.extend(member("b", 4, version, ieee(8, false)));
            assert_eq!(dtype(&s), "{a_long_name:>i4@0,b:<f8@4}/12", "version {}", version);
        }
        // Version 1 members carry array dimensions of their own.
        let mut c = header(1, CLASS_COMPOUND, 1, 24);
        let mut m = b"v\0\0\0\0\0\0\0".to_vec();
        m.extend_from_slice(&0u32.to_le_bytes());
        m.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        for d in [3u32, 2, 0, 0] {
            m.extend_from_slice(&d.to_le_bytes());
        }
        m.extend(int(4, false, false));
        c.extend(m);
        assert_eq!(dtype(&c), "{v:(3,2)<u4@0}/24");
        // A member reaching past the compound's size is malformed.
        let mut bad = header(3, CLASS_COMPOUND, 1, 4);
        bad.extend(member("x", 2, 3, int(4, false, true)));
        assert!(Datatype::parse(&bad, 0, Sizes::DEFAULT).is_err());
    }

    fn array(version: u8, dims: &[u32], base: Vec<u8>, base_size: u32) -> Vec<u8> {
        let mut m = header(version, CLASS_ARRAY, 0, dims.iter().product::<u32>() * base_size);
        m.push(dims.len() as u8);
        if version < 3 {
            m.extend_from_slice(&[0; 3]);
        }
        dims.iter().for_each(|d| m.extend_from_slice(&d.to_le_bytes()));
        if version < 3 {
            dims.iter().enumerate().for_each(|(i, _)| m.extend_from_slice(&(i as u32).to_le_bytes()));
        }
        m.extend(base);
        m
    }

    #[test]
    fn arrays_nest_like_numpy_and_depth_is_limited() {
        assert_eq!(dtype(&array(2, &[2, 3], ieee(4, true), 4)), "(2,3)>f4");
        assert_eq!(dtype(&array(3, &[4], array(3, &[2], int(2, false, true), 2), 4)), "(4,2)<i2");
        let mut wrong = array(3, &[2, 3], ieee(4, true), 4);
        wrong[4] = 7; // declared size no longer matches 2 x 3 x 4
        assert!(Datatype::parse(&wrong, 0, Sizes::DEFAULT).is_err());
        let mut deep = int(1, false, false);
        for _ in 0..=MAX_NESTING {
            deep = array(3, &[1], deep, 1);
        }
        assert!(Datatype::parse(&deep, 0, Sizes::DEFAULT).is_err());
    }

    #[test]
    fn vlen_and_native_complex() {
        let mut s = header(1, CLASS_VLEN, 1 | 1 << 8, 16);
        s.extend(header(1, CLASS_STRING, 0x10, 1));
        assert_eq!(dtype(&s), "vlen-str");
        let mut seq = header(1, CLASS_VLEN, 0, 16);
        seq.extend(int(4, true, true));
        let dt = Datatype::parse(&seq, 0, Sizes::DEFAULT).unwrap();
        assert!(dt.has_vlen());
        assert_eq!(dt.numpy_dtype().unwrap().to_descr_string(), "vlen[>i4]");
        let mut c = header(5, CLASS_COMPLEX, 1, 16);
        c.extend(ieee(8, true));
        assert_eq!(dtype(&c), ">c16");
        let mut half = header(5, CLASS_COMPLEX, 1, 4);
        half.extend(ieee(2, false));
        assert_eq!(kind_of(&half), crate::ErrorKind::Unsupported);
        let mut mismatched = header(5, CLASS_COMPLEX, 1, 8);
        mismatched.extend(ieee(8, false));
        assert!(Datatype::parse(&mismatched, 0, Sizes::DEFAULT).is_err());
    }

    #[test]
    fn decode_int_orders_and_signs() {
        assert_eq!(decode_int(&[0xff, 0x7f], ByteOrder::Little, true), 0x7fff);
        assert_eq!(decode_int(&[0xff, 0x7f], ByteOrder::Big, true), -129);
        assert_eq!(decode_int(&[0xff; 8], ByteOrder::Little, false), u64::MAX as i128);
        assert_eq!(decode_int(&[], ByteOrder::Little, true), 0);
    }
}

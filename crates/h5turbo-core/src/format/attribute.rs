//! Attribute message (type 0x000C), versions 1-3: name, datatype, dataspace and the
//! raw element bytes of a small named value attached to an object.

use super::dataspace::Dataspace;
use super::datatype::{CharSet, Datatype};
use super::reader::{ByteReader, Located, Sizes};
use super::shared::{parse_shared_from, SharedMessage};
use crate::error::{Error, Result};

const FLAG_DATATYPE_SHARED: u8 = 0x01;
const FLAG_DATASPACE_SHARED: u8 = 0x02;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeDatatype {
    Inline(Datatype),
    /// A committed datatype: resolve it through the object header reader.
    Shared(SharedMessage),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    pub name: String,
    /// Character set of the name (version 3 stores it; earlier versions are ASCII).
    pub name_charset: CharSet,
    pub datatype: AttributeDatatype,
    pub dataspace: Dataspace,
    /// Raw element bytes in file layout. Exactly elements x datatype size when the
    /// datatype is inline; for a shared datatype, everything after the dataspace
    /// (its first [`Attribute::value_len`] bytes once the datatype is resolved).
    pub data: Vec<u8>,
}

/// Lengths from the message prefix.
struct Prefix {
    version: u8,
    flags: u8,
    name_len: usize,
    datatype_len: usize,
    dataspace_len: usize,
    charset: CharSet,
}

impl Attribute {
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
    /// Parse an attribute message body `data` that starts at file address `address`.
    pub fn parse(data: &[u8], address: u64, sizes: Sizes) -> Result<Attribute> {
        Self::parse_with(data, address, sizes, &|_, _| {
            Err(Error::unsupported("attribute with a dataspace in the shared message heap"))
        })
    }

    /// As `parse`; `shared` gives the body of a message (type, heap id) kept in the
    /// shared message heap (SOHM), for a dataspace stored there.
    pub fn parse_with(data: &[u8], address: u64, sizes: Sizes, shared: &SharedBody<'_>) -> Result<Attribute> {
        let mut r = ByteReader::new(data, address, sizes);
        let p = parse_prefix(&mut r)?;
        let name = parse_name(&mut r, &p)?;
        let datatype = parse_datatype(&mut r, &p)?;
        let dataspace = parse_dataspace(&mut r, &p, shared)?;
        let mut attribute =
            Attribute { name, name_charset: p.charset, datatype, dataspace, data: r.bytes(r.remaining())?.to_vec() };
        if let AttributeDatatype::Inline(dt) = &attribute.datatype {
            let len = attribute.value_len(dt).map_err(|e| e.at(address))?;
            attribute.data.truncate(len);
        }
        Ok(attribute)
    }

    /// The bytes of the value, elements x `datatype.size`, checked to be in `data`.
    pub fn value_len(&self, datatype: &Datatype) -> Result<usize> {
        self.dataspace
            .num_elements()?
            .checked_mul(datatype.size as u64)
            .filter(|&n| n <= self.data.len() as u64)
            .map(|n| n as usize)
            .ok_or_else(|| {
                Error::format(format!(
                    "attribute '{}' holds {} data bytes, fewer than its {:?} elements of {} bytes need",
                    self.name,
                    self.data.len(),
                    self.dataspace.dims,
                    datatype.size
                ))
            })
    }
}

fn parse_prefix(r: &mut ByteReader) -> Result<Prefix> {
    let start = r.address();
    let version = r.u8()?;
    if !(1..=3).contains(&version) {
        return Err(Error::format(format!("attribute message version {} is not 1..3", version)).at(start));
    }
    // Version 1 has a reserved byte where later versions keep the sharing flags.
    let flags = if version == 1 { r.u8().map(|_| 0)? } else { r.u8()? };
    let name_len = r.u16()? as usize;
    let datatype_len = r.u16()? as usize;
    let dataspace_len = r.u16()? as usize;
    let charset = match version {
        3 => match r.u8()? {
            0 => CharSet::Ascii,
            1 => CharSet::Utf8,
            c => return Err(Error::format(format!("attribute name character set {}", c)).at(start)),
        },
        _ => CharSet::Ascii,
    };
    Ok(Prefix { version, flags, name_len, datatype_len, dataspace_len, charset })
}

/// Version 1 pads each of name, datatype and dataspace to a multiple of 8 bytes.
fn stored_len(p: &Prefix, len: usize) -> usize {
    if p.version == 1 {
        len.div_ceil(8) * 8
    } else {
        len
    }
}

fn parse_name(r: &mut ByteReader, p: &Prefix) -> Result<String> {
    if p.name_len == 0 {
        return Err(r.error("attribute name length is 0"));
    }
    // The stored length counts the NUL terminator; stop at the first NUL anyway.
    let raw = r.bytes(p.name_len)?;
    r.skip(stored_len(p, p.name_len) - p.name_len)?;
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    Ok(super::names::name_from_bytes(&raw[..end]))
}

fn sub_reader<'a>(r: &mut ByteReader<'a>, p: &Prefix, len: usize) -> Result<ByteReader<'a>> {
    let origin = r.address();
    let bytes = r.bytes(len)?;
    r.skip(stored_len(p, len) - len)?;
    Ok(ByteReader::new(bytes, origin, r.sizes()))
}

fn parse_datatype(r: &mut ByteReader, p: &Prefix) -> Result<AttributeDatatype> {
    let mut sub = sub_reader(r, p, p.datatype_len)?;
    if p.flags & FLAG_DATATYPE_SHARED != 0 {
        Ok(AttributeDatatype::Shared(parse_shared_from(&mut sub)?))
    } else {
        Ok(AttributeDatatype::Inline(Datatype::parse_from(&mut sub)?))
    }
}

/// The body of a message (type id, heap id) kept in the shared message heap.
pub type SharedBody<'a> = dyn Fn(u16, &[u8; 8]) -> Result<Located<Vec<u8>>> + 'a;

/// Message type id of a dataspace (the key of its shared message index).
const DATASPACE_MESSAGE: u16 = 0x0001;

fn parse_dataspace(r: &mut ByteReader, p: &Prefix, shared: &SharedBody<'_>) -> Result<Dataspace> {
    let at = r.address();
    let mut sub = sub_reader(r, p, p.dataspace_len)?;
    if p.flags & FLAG_DATASPACE_SHARED != 0 {
        return match parse_shared_from(&mut sub)? {
            SharedMessage::SharedHeap(id) => {
                let body = shared(DATASPACE_MESSAGE, &id).map_err(|e| e.at(at))?;
                Dataspace::parse_from(&mut body.reader(r.sizes()))
            }
            SharedMessage::ObjectHeader(_) => Err(Error::unsupported("attribute with a committed dataspace").at(at)),
        };
    }
    Dataspace::parse_from(&mut sub)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::dataspace::DataspaceKind;

    /// A v3 attribute "ab" holding two little-endian int32.
    fn v3_message() -> Vec<u8> {
        let dt = [0x10u8, 0x08, 0, 0, 4, 0, 0, 0, 0, 0, 32, 0];
        let ds = [2u8, 1, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0];
        let mut m = vec![3u8, 0];
        m.extend_from_slice(&3u16.to_le_bytes());
        m.extend_from_slice(&(dt.len() as u16).to_le_bytes());
        m.extend_from_slice(&(ds.len() as u16).to_le_bytes());
        m.push(1);
        m.extend_from_slice(b"ab\0");
        m.extend_from_slice(&dt);
        m.extend_from_slice(&ds);
        m.extend_from_slice(&7i32.to_le_bytes());
        m.extend_from_slice(&(-1i32).to_le_bytes());
        m
    }

    #[test]
    fn parses_v3() {
        let a = Attribute::parse(&v3_message(), 0, Sizes::DEFAULT).unwrap();
        assert_eq!(a.name, "ab");
        assert_eq!(a.name_charset, CharSet::Utf8);
        assert_eq!(a.dataspace.kind, DataspaceKind::Simple);
        assert_eq!(a.dataspace.dims, vec![2]);
        assert_eq!(a.data, [7, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn truncation_is_an_error() {
        let m = v3_message();
        for n in 0..m.len() {
            assert!(Attribute::parse(&m[..n], 0, Sizes::DEFAULT).is_err(), "length {}", n);
        }
    }
}

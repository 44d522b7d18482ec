//! Shared message encoding: a message (datatype, dataspace, fill value, ...) stored
//! once and referenced from object headers, either as a committed object (an object
//! header address) or in the shared object header message heap (SOHM).
//!
//! Decoding only; resolving the reference needs the object header reader.

use super::reader::{ByteReader, Sizes};
use crate::error::{Error, Result};

/// Message-flag bit (object header message flags) meaning "this message is shared".
pub const MESSAGE_FLAG_SHARED: u8 = 0x02;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedMessage {
    /// The message lives in the object header at this address (a committed datatype).
    ObjectHeader(u64),
    /// The message lives in the SOHM fractal heap under this 8-byte heap id.
    SharedHeap([u8; 8]),
}

/// Decode a shared message body (versions 1, 2, 3) starting at file address `address`.
pub fn parse_shared_message(data: &[u8], address: u64, sizes: Sizes) -> Result<SharedMessage> {
    parse_shared_from(&mut ByteReader::new(data, address, sizes))
}

/// Decode from a cursor (attribute messages embed shared datatypes and dataspaces).
pub fn parse_shared_from(r: &mut ByteReader) -> Result<SharedMessage> {
    let start = r.address();
    let version = r.u8()?;
    let kind = r.u8()?;
    match version {
        1 => {
            // 6 reserved bytes, then a symbol table entry's first two fields (libhdf5's
            // H5O__shared_decode): a name offset, unused, and the object header address
            r.skip(6)?;
            r.length()?;
            Ok(SharedMessage::ObjectHeader(r.required_address("shared message object header")?))
        }
        2 => Ok(SharedMessage::ObjectHeader(r.required_address("shared message object header")?)),
        3 => match kind {
            1 => Ok(SharedMessage::SharedHeap(r.array::<8>()?)),
            2 => Ok(SharedMessage::ObjectHeader(r.required_address("shared message object header")?)),
            k => Err(Error::format(format!("shared message type {} is not 1 (heap) or 2 (committed)", k)).at(start)),
        },
        v => Err(Error::format(format!("shared message version {} is not 1..3", v)).at(start)),
    }
}

impl SharedMessage {
    #[cfg_attr(not(feature = "internals"), allow(dead_code))] // for tests and fuzz targets
    /// The committed object's header address; SOHM heap messages are not read yet.
    pub fn object_header_address(&self) -> Result<u64> {
        match self {
            SharedMessage::ObjectHeader(a) => Ok(*a),
            SharedMessage::SharedHeap(_) => {
                Err(Error::unsupported("messages in the shared object header message heap (SOHM)"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_versions() {
        let mut v1 = vec![1u8, 0, 0, 0, 0, 0, 0, 0];
        v1.extend_from_slice(&0u64.to_le_bytes()); // the entry's name offset
        v1.extend_from_slice(&800u64.to_le_bytes());
        assert_eq!(parse_shared_message(&v1, 0, Sizes::DEFAULT).unwrap(), SharedMessage::ObjectHeader(800));
        let mut v2 = vec![2u8, 0];
        v2.extend_from_slice(&96u64.to_le_bytes());
        assert_eq!(parse_shared_message(&v2, 0, Sizes::DEFAULT).unwrap(), SharedMessage::ObjectHeader(96));
        let mut v3 = vec![3u8, 2];
        v3.extend_from_slice(&96u64.to_le_bytes());
        assert_eq!(parse_shared_message(&v3, 0, Sizes::DEFAULT).unwrap(), SharedMessage::ObjectHeader(96));
        let heap = [3u8, 1, 1, 2, 3, 4, 5, 6, 7, 8];
        let m = parse_shared_message(&heap, 0, Sizes::DEFAULT).unwrap();
        assert_eq!(m, SharedMessage::SharedHeap([1, 2, 3, 4, 5, 6, 7, 8]));
        assert!(m.object_header_address().is_err());
    }

    #[test]
    fn rejects_bad() {
        assert!(parse_shared_message(&[4, 2, 0, 0, 0, 0, 0, 0, 0, 0], 0, Sizes::DEFAULT).is_err());
        assert!(parse_shared_message(&[3, 7, 0, 0, 0, 0, 0, 0, 0, 0], 0, Sizes::DEFAULT).is_err());
        assert!(parse_shared_message(&[2, 0, 1, 2], 0, Sizes::DEFAULT).is_err());
        let undefined = [2u8, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert!(parse_shared_message(&undefined, 0, Sizes::DEFAULT).is_err());
    }
}

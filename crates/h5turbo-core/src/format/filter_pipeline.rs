//! Filter pipeline message (type 0x000B): the filters a chunk was encoded with,
//! in the order they were applied when writing (decode runs them in reverse).

use super::reader::ByteReader;
use crate::error::Result;

/// Largest number of filters HDF5 allows in one pipeline.
const MAX_FILTERS: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterInfo {
    /// Registered filter id (1 deflate, 2 shuffle, 3 fletcher32, 4 szip, ...).
    pub id: u16,
    /// Name stored in the file, if any.
    pub name: Option<String>,
    /// The filter may be skipped on write (a set bit in the chunk's filter mask says it was).
    pub optional: bool,
    /// Filter parameters ("client data"), as stored.
    pub client_data: Vec<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilterPipeline {
    /// In application (write) order.
    pub filters: Vec<FilterInfo>,
}

impl FilterPipeline {
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    pub fn has(&self, id: u16) -> bool {
        self.filters.iter().any(|f| f.id == id)
    }

    pub fn parse(r: &mut ByteReader) -> Result<Self> {
        let start = r.address();
        let version = r.u8()?;
        let count = r.u8()? as usize;
        if count > MAX_FILTERS {
            return Err(r.error(format!("filter pipeline claims {} filters (at most {})", count, MAX_FILTERS)));
        }
        let filters = match version {
            1 => {
                r.skip(6)?;
                (0..count).map(|_| parse_v1_filter(r)).collect::<Result<Vec<_>>>()?
            }
            2 => (0..count).map(|_| parse_v2_filter(r)).collect::<Result<Vec<_>>>()?,
            v => {
                return Err(crate::format_err!("filter pipeline message version {} is not 1 or 2", v).at(start))
            }
        };
        Ok(FilterPipeline { filters })
    }
}

fn parse_v1_filter(r: &mut ByteReader) -> Result<FilterInfo> {
    let id = r.u16()?;
    let name_len = r.u16()? as usize;
    let flags = r.u16()?;
    let n_values = r.u16()? as usize;
    let name = if name_len > 0 {
        // Padded to a multiple of eight bytes, NUL-terminated inside.
        let raw = r.bytes(name_len.div_ceil(8) * 8)?;
        Some(name_from(raw))
    } else {
        None
    };
    let client_data = read_values(r, n_values)?;
    if n_values % 2 == 1 {
        r.skip(4)?;
    }
    Ok(FilterInfo { id, name, optional: flags & 1 != 0, client_data })
}

fn parse_v2_filter(r: &mut ByteReader) -> Result<FilterInfo> {
    let id = r.u16()?;
    // Filters below 256 are predefined and carry no name length or name.
    let name_len = if id >= 256 { r.u16()? as usize } else { 0 };
    let flags = r.u16()?;
    let n_values = r.u16()? as usize;
    let name = if name_len > 0 { Some(name_from(r.bytes(name_len)?)) } else { None };
    let client_data = read_values(r, n_values)?;
    Ok(FilterInfo { id, name, optional: flags & 1 != 0, client_data })
}

fn read_values(r: &mut ByteReader, n: usize) -> Result<Vec<u32>> {
    if n * 4 > r.remaining() {
        return Err(r.error(format!("filter claims {} client data values, more than the message holds", n)));
    }
    (0..n).map(|_| r.u32()).collect()
}

fn name_from(raw: &[u8]) -> String {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::reader::Sizes;

    #[test]
    fn parses_v1_with_padding() {
        // deflate level 4 named "deflate", then shuffle with one value (odd count -> pad).
        let mut msg = vec![1u8, 2, 0, 0, 0, 0, 0, 0];
        msg.extend_from_slice(&[1, 0, 8, 0, 0, 0, 1, 0]);
        msg.extend_from_slice(b"deflate\0");
        msg.extend_from_slice(&4u32.to_le_bytes());
        msg.extend_from_slice(&[0; 4]);
        msg.extend_from_slice(&[2, 0, 0, 0, 1, 0, 1, 0]);
        msg.extend_from_slice(&4u32.to_le_bytes());
        msg.extend_from_slice(&[0; 4]);
        let p = FilterPipeline::parse(&mut ByteReader::new(&msg, 0, Sizes::DEFAULT)).unwrap();
        assert_eq!(p.filters.len(), 2);
        assert_eq!(p.filters[0].name.as_deref(), Some("deflate"));
        assert_eq!(p.filters[0].client_data, vec![4]);
        assert!(p.filters[1].optional);
    }

    #[test]
    fn parses_v2_and_rejects_overlong() {
        let mut msg = vec![2u8, 1];
        msg.extend_from_slice(&32015u16.to_le_bytes());
        msg.extend_from_slice(&4u16.to_le_bytes());
        msg.extend_from_slice(&0u16.to_le_bytes());
        msg.extend_from_slice(&1u16.to_le_bytes());
        msg.extend_from_slice(b"zstd");
        msg.extend_from_slice(&3u32.to_le_bytes());
        let p = FilterPipeline::parse(&mut ByteReader::new(&msg, 0, Sizes::DEFAULT)).unwrap();
        assert_eq!(p.filters[0].id, 32015);
        assert_eq!(p.filters[0].name.as_deref(), Some("zstd"));
        assert_eq!(p.filters[0].client_data, vec![3]);
        let bad = [2u8, 1, 1, 0, 0, 0, 0xff, 0xff];
        assert!(FilterPipeline::parse(&mut ByteReader::new(&bad, 0, Sizes::DEFAULT)).is_err());
    }
}

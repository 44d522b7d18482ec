//! A bounds-checked little-endian cursor over a metadata block.
//!
//! Every read returns `Result`: running off the end of the block is a format error
//! naming the file offset, never a panic.

use crate::error::{Error, Result};

/// Byte widths of file offsets ("addresses") and lengths, from the superblock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub offset: u8,
    pub length: u8,
}

impl Sizes {
    pub const DEFAULT: Sizes = Sizes { offset: 8, length: 8 };
}

pub struct ByteReader<'a> {
    data: &'a [u8],
    pos: usize,
    /// File address of `data[0]`, for error messages.
    origin: u64,
    sizes: Sizes,
}

impl<'a> ByteReader<'a> {
    pub fn new(data: &'a [u8], origin: u64, sizes: Sizes) -> Self {
        ByteReader { data, pos: 0, origin, sizes }
    }

    pub fn sizes(&self) -> Sizes {
        self.sizes
    }
    pub fn position(&self) -> usize {
        self.pos
    }
    /// File address of the next byte to be read.
    pub fn address(&self) -> u64 {
        self.origin + self.pos as u64
    }
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// An error at the current position.
    pub fn error(&self, message: impl Into<String>) -> Error {
        Error::format(message).at(self.address())
    }

    pub fn seek(&mut self, pos: usize) -> Result<()> {
        if pos > self.data.len() {
            return Err(self.error(format!("seek to {} past end of {}-byte block", pos, self.data.len())));
        }
        self.pos = pos;
        Ok(())
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "structure truncated: needed {} bytes, {} left",
                n,
                self.remaining()
            )));
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.bytes(n).map(|_| ())
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// An unsigned little-endian integer of `n` bytes (0..=8).
    pub fn uint(&mut self, n: usize) -> Result<u64> {
        if n > 8 {
            return Err(self.error(format!("integer field of {} bytes is wider than 8", n)));
        }
        let b = self.bytes(n)?;
        Ok(le_uint(b))
    }

    /// A file address; `None` for the "undefined address" (all bits set).
    pub fn address_field(&mut self) -> Result<Option<u64>> {
        let n = self.sizes.offset as usize;
        let v = self.uint(n)?;
        Ok(if is_undefined(v, n) { None } else { Some(v) })
    }

    /// A file address that must be defined.
    pub fn required_address(&mut self, what: &str) -> Result<u64> {
        let at = self.address();
        self.address_field()?
            .ok_or_else(|| Error::format(format!("{} address is undefined", what)).at(at))
    }

    /// A length field (size of lengths from the superblock).
    pub fn length(&mut self) -> Result<u64> {
        self.uint(self.sizes.length as usize)
    }

    /// Expect a 4-byte signature.
    pub fn signature(&mut self, expected: &[u8; 4], what: &str) -> Result<()> {
        let at = self.address();
        let got = self.array::<4>()?;
        if &got != expected {
            return Err(Error::format(format!(
                "bad {} signature: expected {:?}, found {:?}",
                what,
                String::from_utf8_lossy(expected),
                String::from_utf8_lossy(&got)
            ))
            .at(at));
        }
        Ok(())
    }

    /// A NUL-terminated string, returned without the terminator.
    pub fn cstring(&mut self) -> Result<&'a [u8]> {
        let rest = &self.data[self.pos..];
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                let s = &rest[..n];
                self.pos += n + 1;
                Ok(s)
            }
            None => Err(self.error("string is not NUL-terminated")),
        }
    }

    /// Skip padding so that the position is a multiple of `align` from the block start.
    pub fn align(&mut self, align: usize) -> Result<()> {
        let pad = (align - self.pos % align) % align;
        self.skip(pad)
    }
}

/// Bytes copied out of the file together with the file address of their first byte.
///
/// Structures read through a copy (a heap object, a B-tree record, a shared message
/// body) are parsed by a cursor made with [`Located::reader`], so that its errors name
/// the place in the file, never an offset within the copy. Derefs to the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Located<B> {
    bytes: B,
    address: u64,
}

impl<B: AsRef<[u8]>> Located<B> {
    /// `bytes`, whose first byte lies at file address `address`.
    pub fn at(address: u64, bytes: B) -> Self {
        Located { bytes, address }
    }
    /// File address of the first byte.
    pub fn address(&self) -> u64 {
        self.address
    }
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }
    pub fn into_bytes(self) -> B {
        self.bytes
    }
    /// A cursor whose errors name file addresses.
    pub fn reader(&self, sizes: Sizes) -> ByteReader<'_> {
        ByteReader::new(self.bytes(), self.address, sizes)
    }
    /// The bytes `range` of these, with their own address (None past the end).
    pub fn slice(&self, range: std::ops::Range<usize>) -> Option<Located<&[u8]>> {
        let start = range.start as u64;
        self.bytes().get(range).map(|bytes| Located::at(self.address + start, bytes))
    }
    /// The same place, the bytes borrowed.
    pub fn view(&self) -> Located<&[u8]> {
        Located::at(self.address, self.bytes())
    }
    /// The same place, the bytes copied.
    pub fn copied(&self) -> Located<Vec<u8>> {
        Located::at(self.address, self.bytes().to_vec())
    }
}

impl<B: AsRef<[u8]>> std::ops::Deref for Located<B> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes.as_ref()
    }
}

/// Little-endian unsigned integer from up to 8 bytes.
pub fn le_uint(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |acc, &x| (acc << 8) | x as u64)
}

/// True if `v` is the undefined address for an `n`-byte field (all bits set).
pub fn is_undefined(v: u64, n: usize) -> bool {
    if n >= 8 {
        v == u64::MAX
    } else {
        v == (1u64 << (8 * n)) - 1
    }
}

/// Bytes needed to store values up to `max` (used by B-tree v2 and heap fields).
pub fn bytes_needed(max: u64) -> usize {
    if max == 0 {
        1
    } else {
        (64 - max.leading_zeros() as usize).div_ceil(8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_bounds() {
        let data = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 0xff, 0xff, 0xff, 0xff];
        let mut r = ByteReader::new(&data, 100, Sizes { offset: 4, length: 2 });
        assert_eq!(r.u8().unwrap(), 1);
        assert_eq!(r.u16().unwrap(), 0x0302);
        assert_eq!(r.length().unwrap(), 0x0504);
        assert_eq!(r.uint(3).unwrap(), 0x080706);
        assert_eq!(r.u8().unwrap(), 9);
        assert_eq!(r.address_field().unwrap(), None);
        let err = r.u8().unwrap_err();
        assert_eq!(err.offset(), Some(113));
    }

    #[test]
    fn cstring_and_align() {
        let data = b"abc\0\0\0\0\0x";
        let mut r = ByteReader::new(data, 0, Sizes::DEFAULT);
        assert_eq!(r.cstring().unwrap(), b"abc");
        r.align(8).unwrap();
        assert_eq!(r.u8().unwrap(), b'x');
        let mut r = ByteReader::new(b"abc", 0, Sizes::DEFAULT);
        assert!(r.cstring().is_err());
    }

    #[test]
    fn located_bytes_keep_their_file_address() {
        let block = Located::at(1000, vec![0u8; 16]);
        let record = block.slice(4..12).unwrap();
        assert_eq!(record.address(), 1004);
        let mut r = record.reader(Sizes::DEFAULT);
        r.u64().unwrap();
        assert_eq!(r.u8().unwrap_err().offset(), Some(1012));
        assert!(block.slice(10..20).is_none());
    }

    #[test]
    fn bytes_needed_widths() {
        assert_eq!(bytes_needed(0), 1);
        assert_eq!(bytes_needed(255), 1);
        assert_eq!(bytes_needed(256), 2);
        assert_eq!(bytes_needed(u64::MAX), 8);
    }
}

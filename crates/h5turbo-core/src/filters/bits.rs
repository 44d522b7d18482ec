//! An MSB-first bit reader over a byte slice (szip, n-bit and scale-offset streams);
//! reading past the end is an error, never a panic.

use crate::error::{Error, Result};

/// MSB-first bits; reading past the end is an error.
pub(crate) struct BitReader<'a> {
    data: &'a [u8],
    /// In bits.
    pos: usize,
    /// The filter name for error messages.
    filter: &'static str,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(data: &'a [u8], filter: &'static str) -> Self {
        BitReader { data, pos: 0, filter }
    }

    /// The next `n` (at most 32) bits as a number.
    pub(crate) fn get(&mut self, n: usize) -> Result<u32> {
        if n == 0 {
            return Ok(0);
        }
        if self.pos + n > self.data.len() * 8 {
            return Err(self.ended());
        }
        let mut value = 0u64;
        let mut need = n;
        while need > 0 {
            let byte = self.data[self.pos / 8];
            let offset = self.pos % 8;
            let take = (8 - offset).min(need);
            let bits = (byte >> (8 - offset - take)) & ((1u16 << take) - 1) as u8;
            value = (value << take) | u64::from(bits);
            need -= take;
            self.pos += take;
        }
        Ok(value as u32)
    }

    /// Count zero bits up to a one bit (consumed).
    pub(crate) fn fundamental_sequence(&mut self) -> Result<u32> {
        let mut zeros = 0u32;
        loop {
            let Some(&byte) = self.data.get(self.pos / 8) else { return Err(self.ended()) };
            let rest = byte << (self.pos % 8);
            if rest != 0 {
                let lead = rest.leading_zeros();
                self.pos += lead as usize + 1;
                return Ok(zeros + lead);
            }
            let skipped = 8 - self.pos % 8;
            zeros += skipped as u32;
            self.pos += skipped;
        }
    }

    fn ended(&self) -> Error {
        crate::format_err!("{}: coded data ends before the chunk is complete", self.filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_msb_first_and_stops_at_the_end() {
        let mut r = BitReader::new(&[0b1010_0000, 0b0000_0001], "test");
        assert_eq!(r.get(1).unwrap(), 1);
        assert_eq!(r.fundamental_sequence().unwrap(), 1);
        assert_eq!(r.fundamental_sequence().unwrap(), 12);
        assert!(r.get(1).is_err());
        assert!(r.fundamental_sequence().is_err());
        let mut r = BitReader::new(&[0xAB, 0xCD, 0xEF, 0x12, 0x34], "test");
        assert_eq!(r.get(4).unwrap(), 0xA);
        assert_eq!(r.get(32).unwrap(), 0xBCDE_F123);
        assert!(r.get(5).is_err());
    }
}

//! An MSB-first bit reader over a byte slice (szip, n-bit and scale-offset streams);
//! reading past the end is an error, never a panic.

use crate::error::{Error, Result};

/// MSB-first bits; reading past the end is an error.
pub(crate) struct BitReader<'a> {
    data: &'a [u8],
    /// Next byte of `data` to load.
    next: usize,
    /// Loaded bits, the next one at bit 63; bits below the `count` valid ones are zero.
    acc: u64,
    count: u32,
    /// The filter name for error messages.
    filter: &'static str,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(data: &'a [u8], filter: &'static str) -> Self {
        BitReader { data, next: 0, acc: 0, count: 0, filter }
    }

    /// Load whole bytes while they fit.
    fn refill(&mut self) {
        while self.count <= 56 {
            let Some(&byte) = self.data.get(self.next) else { break };
            self.acc |= u64::from(byte) << (56 - self.count);
            self.count += 8;
            self.next += 1;
        }
    }

    fn consume(&mut self, n: u32) {
        self.acc = self.acc.checked_shl(n).unwrap_or(0);
        self.count -= n;
    }

    /// The next `n` (at most 32) bits as a number.
    pub(crate) fn get(&mut self, n: usize) -> Result<u32> {
        let n = n as u32;
        if n == 0 {
            return Ok(0);
        }
        if self.count < n {
            self.refill();
            if self.count < n {
                return Err(self.ended());
            }
        }
        let value = (self.acc >> (64 - n)) as u32;
        self.consume(n);
        Ok(value)
    }

    /// Count zero bits up to a one bit (consumed).
    pub(crate) fn fundamental_sequence(&mut self) -> Result<u32> {
        let mut zeros = 0u32;
        loop {
            if self.count == 0 {
                self.refill();
                if self.count == 0 {
                    return Err(self.ended());
                }
            }
            // Bits below `count` are zero, so a one bit inside the valid ones is real.
            let lead = self.acc.leading_zeros();
            if lead < self.count {
                self.consume(lead + 1);
                return Ok(zeros + lead);
            }
            zeros += self.count;
            self.acc = 0;
            self.count = 0;
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
        // Long runs of zeros across refills.
        let mut data = vec![0u8; 20];
        data.push(0b0010_0000);
        let mut r = BitReader::new(&data, "test");
        assert_eq!(r.get(3).unwrap(), 0);
        assert_eq!(r.fundamental_sequence().unwrap(), 20 * 8 - 3 + 2);
        assert_eq!(r.get(5).unwrap(), 0);
        assert!(r.get(1).is_err());
    }
}

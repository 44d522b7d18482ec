//! SZIP (filter 4): CCSDS 121.0-B adaptive entropy coding, as libhdf5 stores it
//! through libaec's szip interface: a 4-byte little-endian decoded size, then the
//! coded samples.
//!
//! Client data (set by libhdf5 at creation): [options mask, pixels per block, bits per
//! pixel, pixels per scanline]. Mask bits: 16 MSB-first samples, 32 nearest-neighbour
//! preprocessing (else entropy coding only). 32- and 64-bit pixels are coded as bytes
//! after a byte shuffle; a scanline that is not a whole number of blocks was padded to
//! one when coding.
//!
//! The coded stream is read MSB first. Samples come in reference sample intervals
//! (RSIs) of `ceil(pixels per scanline / pixels per block)` blocks; with
//! preprocessing, each RSI starts with a raw reference sample and the rest are mapped
//! differences. Each block starts with an option id: 0 low entropy (then one bit:
//! second extension, or a run of zero blocks), all ones uncompressed, else a split
//! sample with k = id - 1 low bits.

use super::bits::BitReader;
use super::{shuffle, Contexts};
use crate::error::Result;

const HEADER_LEN: usize = 4;
const MSB_MASK: u32 = 16;
const NN_MASK: u32 = 32;
/// A zero-block count of 5 means "to the end of the RSI or of the 64-block segment".
const ROS: usize = 5;
/// Largest second-extension code.
const SE_TABLE_SIZE: u32 = 90;

#[derive(Debug, Clone, Copy)]
pub struct Params {
    options: u32,
    pixels_per_block: usize,
    bits_per_pixel: usize,
    pixels_per_scanline: usize,
}

impl Params {
    pub fn parse(cd: &[u32]) -> Result<Params> {
        let [options, ppb, bpp, pps, ..] = *cd else {
            return Err(crate::format_err!("szip: {} client data values, need 4", cd.len()));
        };
        let (ppb, bpp, pps) = (ppb as usize, bpp as usize, pps as usize);
        if ppb == 0 || ppb % 2 == 1 || ppb > 64 || pps == 0 || !(bpp <= 32 || bpp == 64) || bpp == 0 {
            return Err(crate::format_err!(
                "szip: invalid parameters ({} pixels per block, {} bits per pixel, {} pixels per scanline)",
                ppb,
                bpp,
                pps
            ));
        }
        Ok(Params { options, pixels_per_block: ppb, bits_per_pixel: bpp, pixels_per_scanline: pps })
    }

    /// Wide pixels are coded as bytes, one byte plane after another.
    fn deinterleave(&self) -> bool {
        self.bits_per_pixel == 32 || self.bits_per_pixel == 64
    }

    fn sample_bits(&self) -> usize {
        if self.deinterleave() {
            8
        } else {
            self.bits_per_pixel
        }
    }

    fn blocks_per_rsi(&self) -> usize {
        self.pixels_per_scanline.div_ceil(self.pixels_per_block)
    }
}

fn bytes_per_sample(bits: usize) -> usize {
    match bits {
        0..=8 => 1,
        9..=16 => 2,
        _ => 4,
    }
}

pub fn announced_size(src: &[u8]) -> Option<usize> {
    let b = src.get(..HEADER_LEN)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

pub fn decode(src: &[u8], dst: &mut [u8], p: &Params, ctx: &mut Contexts) -> Result<()> {
    let size = announced_size(src).ok_or_else(|| crate::format_err!("szip: chunk shorter than its 4-byte header"))?;
    if size != dst.len() {
        return Err(crate::format_err!("szip: header announces {} bytes, expected {}", size, dst.len()));
    }
    let stream = &src[HEADER_LEN..];
    let pixel = bytes_per_sample(p.sample_bits());
    if dst.len() % pixel != 0 {
        return Err(crate::format_err!("szip: {} bytes is not a whole number of {}-byte samples", dst.len(), pixel));
    }
    let pad = p.pixels_per_scanline % p.pixels_per_block != 0;
    if !pad && !p.deinterleave() {
        return decode_samples(stream, dst, p, &mut ctx.samples);
    }
    let Contexts { work, samples, .. } = ctx;
    if !pad {
        let coded = super::sized(work, dst.len());
        decode_samples(stream, coded, p, samples)?;
        return shuffle::decode(coded, dst, p.bits_per_pixel / 8);
    }
    // Each scanline was padded to whole blocks: decode the padded lines, then keep the
    // pixels of each line.
    let line = p.pixels_per_scanline * pixel;
    let padded_line = p.blocks_per_rsi() * p.pixels_per_block * pixel;
    let lines = dst.len().div_ceil(line);
    let padded_len = lines.checked_mul(padded_line).ok_or_else(|| crate::format_err!("szip: chunk too large"))?;
    let both = super::sized(work, padded_len + if p.deinterleave() { dst.len() } else { 0 });
    let (padded, unpadded) = both.split_at_mut(padded_len);
    decode_samples(stream, padded, p, samples)?;
    let target: &mut [u8] = if p.deinterleave() { unpadded } else { &mut *dst };
    for (out, line_bytes) in target.chunks_mut(line).zip(padded.chunks(padded_line)) {
        out.copy_from_slice(&line_bytes[..out.len()]);
    }
    if p.deinterleave() {
        shuffle::decode(unpadded, dst, p.bits_per_pixel / 8)?;
    }
    Ok(())
}

/// Decode exactly `out.len() / bytes per sample` samples.
fn decode_samples(stream: &[u8], out: &mut [u8], p: &Params, samples: &mut Vec<u32>) -> Result<()> {
    let bits = p.sample_bits();
    let mut decoder = Decoder {
        input: BitReader::new(stream, "szip"),
        bits,
        id_len: match bits {
            17.. => 5,
            9..=16 => 4,
            _ => 3,
        },
        block: p.pixels_per_block,
        rsi_samples: p.blocks_per_rsi() * p.pixels_per_block,
    };
    let writer = SampleWriter {
        bytes: bytes_per_sample(bits),
        msb: p.options & MSB_MASK != 0,
        preprocessed: p.options & NN_MASK != 0,
        max: u32::MAX >> (32 - bits),
    };
    let total = out.len() / writer.bytes;
    let mut written = 0;
    while written < total {
        samples.clear();
        let mut reference = writer.preprocessed;
        while samples.len() < decoder.rsi_samples && written + samples.len() < total {
            decoder.block(reference, samples)?;
            reference = false;
        }
        let take = samples.len().min(total - written);
        writer.write(&samples[..take], &mut out[written * writer.bytes..(written + take) * writer.bytes]);
        written += take;
    }
    Ok(())
}

struct Decoder<'a> {
    input: BitReader<'a>,
    bits: usize,
    id_len: usize,
    block: usize,
    rsi_samples: usize,
}

impl Decoder<'_> {
    /// Decode one coded data set (a block, or a run of zero blocks) onto `samples`.
    fn block(&mut self, reference: bool, samples: &mut Vec<u32>) -> Result<()> {
        let id = self.input.get(self.id_len)? as usize;
        let uncompressed = (1 << self.id_len) - 1;
        if id == uncompressed {
            for _ in 0..self.block {
                samples.push(self.input.get(self.bits)?);
            }
            return Ok(());
        }
        let low_entropy_second = if id == 0 { Some(self.input.get(1)? == 1) } else { None };
        if reference {
            samples.push(self.input.get(self.bits)?);
        }
        let coded = self.block - usize::from(reference);
        match low_entropy_second {
            Some(true) => self.second_extension(reference, samples),
            Some(false) => self.zero_blocks(coded, samples),
            None => self.split(id - 1, coded, samples),
        }
    }

    /// Fundamental sequences carry the high bits, then all the k-bit low parts follow.
    fn split(&mut self, k: usize, count: usize, samples: &mut Vec<u32>) -> Result<()> {
        let start = samples.len();
        for _ in 0..count {
            samples.push(self.input.fundamental_sequence()?.wrapping_shl(k as u32));
        }
        if k > 0 {
            for s in &mut samples[start..] {
                *s = s.wrapping_add(self.input.get(k)?);
            }
        }
        Ok(())
    }

    /// Pairs of samples coded as one value m: with row i and row start s such that
    /// s <= m <= s + i, the pair is (i - (m - s), m - s). A block with a reference
    /// sample starts mid-pair and takes only the second value of its first pair.
    fn second_extension(&mut self, reference: bool, samples: &mut Vec<u32>) -> Result<()> {
        let mut i = usize::from(reference);
        while i < self.block {
            let m = self.input.fundamental_sequence()?;
            if m > SE_TABLE_SIZE {
                return Err(crate::format_err!("szip: second-extension code {} out of range", m));
            }
            let (row, row_start) = se_row(m);
            let second = m - row_start;
            if i % 2 == 0 {
                samples.push(row - second);
                i += 1;
            }
            samples.push(second);
            i += 1;
        }
        Ok(())
    }

    fn zero_blocks(&mut self, coded_in_first: usize, samples: &mut Vec<u32>) -> Result<()> {
        let mut blocks = self.input.fundamental_sequence()? as usize + 1;
        if blocks == ROS {
            let done = samples.len() / self.block;
            blocks = (self.rsi_samples / self.block - done).min(64 - done % 64);
        } else if blocks > ROS {
            blocks -= 1;
        }
        let reference = self.block - coded_in_first;
        let zeros = blocks * self.block - reference;
        if zeros > self.rsi_samples - samples.len() {
            return Err(crate::format_err!("szip: run of {} zero blocks passes the end of the interval", blocks));
        }
        samples.resize(samples.len() + zeros, 0);
        Ok(())
    }
}

/// (row, first code of the row) for second-extension code m: rows hold 1, 2, 3, ...
/// codes, so row i starts at i (i + 1) / 2.
fn se_row(m: u32) -> (u32, u32) {
    let mut row = 0;
    while (row + 1) * (row + 2) / 2 <= m {
        row += 1;
    }
    (row, row * (row + 1) / 2)
}

struct SampleWriter {
    bytes: usize,
    msb: bool,
    preprocessed: bool,
    max: u32,
}

impl SampleWriter {
    /// Undo the preprocessing if any (the first sample of an interval is the reference)
    /// and store the samples.
    fn write(&self, samples: &[u32], out: &mut [u8]) {
        let mut values = samples.iter().copied();
        let mut slots = out.chunks_exact_mut(self.bytes);
        if !self.preprocessed {
            for (slot, v) in slots.zip(values) {
                self.put(slot, v);
            }
            return;
        }
        let (Some(mut last), Some(slot)) = (values.next(), slots.next()) else { return };
        self.put(slot, last);
        let mid = self.max / 2 + 1;
        for (slot, d) in slots.zip(values) {
            last = self.unmap(last, d, mid);
            self.put(slot, last);
        }
    }

    /// Inverse of the CCSDS prediction-error mapping for unsigned samples.
    fn unmap(&self, previous: u32, d: u32, mid: u32) -> u32 {
        let half = (d >> 1) + (d & 1);
        let mask = if previous & mid != 0 { self.max } else { 0 };
        if half <= (mask ^ previous) {
            let step = if d & 1 == 1 { !(d >> 1) } else { d >> 1 };
            previous.wrapping_add(step)
        } else {
            mask ^ d
        }
    }

    fn put(&self, slot: &mut [u8], v: u32) {
        let bytes = if self.msb { v.to_be_bytes() } else { v.to_le_bytes() };
        match (self.bytes, self.msb) {
            (1, _) => slot[0] = v as u8,
            (n, true) => slot.copy_from_slice(&bytes[4 - n..]),
            (n, false) => slot.copy_from_slice(&bytes[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_extension_rows() {
        assert_eq!(se_row(0), (0, 0));
        assert_eq!(se_row(1), (1, 1));
        assert_eq!(se_row(2), (1, 1));
        assert_eq!(se_row(3), (2, 3));
        assert_eq!(se_row(90), (12, 78));
    }

    #[test]
    fn uncompressed_blocks_and_bad_params() {
        // 8-bit samples, 8 per block, no preprocessing: id 0b111 then 8 raw bytes.
        let p = Params::parse(&[0, 8, 8, 8]).unwrap();
        let raw: Vec<u8> = (1..=8).collect();
        // Pack the id (3 bits) then the samples MSB first into 9 bytes (5 bits unused).
        let mut acc: u128 = 0b111;
        for &b in &raw {
            acc = (acc << 8) | u128::from(b);
        }
        let bits = (acc << (72 - (3 + 64))).to_be_bytes()[16 - 9..].to_vec();
        let mut src = 8u32.to_le_bytes().to_vec();
        src.extend(bits);
        let mut out = [0u8; 8];
        decode(&src, &mut out, &p, &mut Contexts::default()).unwrap();
        assert_eq!(out.to_vec(), raw);
        assert!(decode(&src[..6], &mut out, &p, &mut Contexts::default()).is_err());
        assert!(Params::parse(&[0, 7, 8, 8]).is_err());
        assert!(Params::parse(&[0, 8, 40, 8]).is_err());
        assert!(Params::parse(&[0, 8, 8]).is_err());
    }
}

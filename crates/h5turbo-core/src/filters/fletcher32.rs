//! Fletcher-32 checksum (filter 3): the encoder appends a 4-byte checksum of the data.
//! Decoding verifies it exactly as libhdf5 does (H5_checksum_fletcher32 over big-endian
//! 16-bit words, stored little-endian) and strips it.

use crate::error::Result;

pub const CHECKSUM_LEN: usize = 4;

/// 16-bit words summed between reductions: small enough that neither 32-bit sum
/// overflows (libhdf5 uses the same bound, so the reductions match exactly).
const WORDS_PER_REDUCTION: usize = 360;

/// Verify the trailing checksum and copy the data before it into `dst`.
pub fn decode(src: &[u8], dst: &mut [u8]) -> Result<()> {
    let len = verify(src)?;
    if len != dst.len() {
        return Err(super::size_mismatch("fletcher32", len, dst.len()));
    }
    dst.copy_from_slice(&src[..len]);
    Ok(())
}

/// Verify the trailing checksum; returns the length of the data before it.
pub fn verify(src: &[u8]) -> Result<usize> {
    let Some(len) = src.len().checked_sub(CHECKSUM_LEN) else {
        return Err(crate::format_err!("fletcher32: chunk of {} bytes is shorter than its checksum", src.len()));
    };
    let (data, stored) = src.split_at(len);
    let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
    let computed = checksum(data);
    // Files from libhdf5 before 1.6.3 hold the checksum with the bytes of each 16-bit
    // half swapped; libhdf5 still accepts those, and so do we.
    if stored != computed && stored != swap_halves_bytes(computed) {
        return Err(crate::format_err!(
            "fletcher32 checksum mismatch (stored {:#010x}, computed {:#010x})",
            stored,
            computed
        ));
    }
    Ok(len)
}

fn swap_halves_bytes(v: u32) -> u32 {
    ((v & 0x00ff_00ff) << 8) | ((v >> 8) & 0x00ff_00ff)
}

fn reduce(sum: u32) -> u32 {
    (sum & 0xffff) + (sum >> 16)
}

/// libhdf5's Fletcher-32: big-endian 16-bit words; an odd last byte counts as the high
/// byte of a word whose low byte is zero.
pub fn checksum(data: &[u8]) -> u32 {
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let pairs = &data[..data.len() & !1];
    let odd = if data.len() % 2 == 1 { data.last().copied() } else { None };
    for block in pairs.chunks(WORDS_PER_REDUCTION * 2) {
        for word in block.chunks_exact(2) {
            sum1 += u32::from(u16::from_be_bytes([word[0], word[1]]));
            sum2 += sum1;
        }
        sum1 = reduce(sum1);
        sum2 = reduce(sum2);
    }
    if let Some(byte) = odd {
        sum1 += u32::from(byte) << 8;
        sum2 += sum1;
        sum1 = reduce(sum1);
        sum2 = reduce(sum2);
    }
    sum1 = reduce(sum1);
    sum2 = reduce(sum2);
    (sum2 << 16) | sum1
}

#[cfg(test)]
pub fn encode(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    out.extend_from_slice(&checksum(data).to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A direct transcription of the definition (no blocking), to check the blocked
    /// loop's reductions on long inputs.
    fn reference(data: &[u8]) -> u32 {
        let mut words: Vec<u32> =
            data.chunks(2).map(|w| (u32::from(w[0]) << 8) | u32::from(*w.get(1).unwrap_or(&0))).collect();
        let (mut a, mut b) = (0u64, 0u64);
        for w in words.drain(..) {
            a = (a + u64::from(w)) % 65535;
            b = (b + a) % 65535;
        }
        // libhdf5's end-around reductions may leave 0xffff where the modulus gives 0.
        ((b as u32) << 16) | a as u32
    }

    #[test]
    fn known_values() {
        // "abcde": words 0x6162, 0x6364, odd 0x65 -> 0x6500.
        assert_eq!(checksum(b"abcde"), 0x4FF0_29C7);
        assert_eq!(checksum(b"abcdef"), 0x5056_2A2D);
        assert_eq!(checksum(b""), 0);
    }

    #[test]
    fn matches_definition_on_long_and_odd_inputs() {
        for len in [1usize, 2, 3, 719, 720, 721, 5000, 5001] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8 | 0x80).collect();
            let c = checksum(&data);
            let r = reference(&data);
            let norm = |v: u32| ((v >> 16) % 65535) << 16 | ((v & 0xffff) % 65535);
            assert_eq!(norm(c), norm(r), "len {}", len);
        }
    }

    #[test]
    fn verifies_strips_and_rejects() {
        let data: Vec<u8> = (0..1001u32).map(|i| (i * 13) as u8).collect();
        let enc = encode(&data);
        let mut out = vec![0; data.len()];
        decode(&enc, &mut out).unwrap();
        assert_eq!(out, data);
        let mut old = data.clone();
        old.extend_from_slice(&swap_halves_bytes(checksum(&data)).to_le_bytes());
        assert_eq!(verify(&old).unwrap(), data.len());
        for i in [0, 500, 1000, 1001, 1004] {
            let mut bad = enc.clone();
            bad[i] ^= 0x10;
            let e = verify(&bad).unwrap_err();
            assert!(e.message().contains("fletcher32 checksum mismatch"));
        }
        assert!(verify(&[1, 2, 3]).is_err());
        assert!(decode(&enc, &mut [0; 10]).is_err());
    }
}

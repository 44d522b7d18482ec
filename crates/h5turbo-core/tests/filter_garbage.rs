//! Random bytes through every decoder and a spread of parameters: each call returns
//! an error (or, for codecs without any integrity check, some bytes) and never panics.

use h5turbo_core::filters::{decode_chunk, DecodeScratch, DecodePipeline};
use h5turbo_core::format::filter_pipeline::{FilterInfo, FilterPipeline};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Filters as (id, client data), in pipeline order.
type Filters = Vec<(u16, Vec<u32>)>;

/// Pipelines and their element sizes.
fn pipelines() -> Vec<(Filters, usize)> {
    let mut so_int = vec![2, 0, 64, 0, 4, 1, 0, 1];
    so_int.resize(20, 0);
    let mut so_float = vec![0, 2, 64, 1, 8, 0, 1, 0];
    so_float.resize(20, 0);
    vec![
        (vec![(1, vec![4])], 4),
        (vec![(2, vec![4]), (1, vec![4])], 4),
        (vec![(3, vec![])], 1),
        (vec![(32000, vec![4, 261, 256])], 4),
        (vec![(32015, vec![3])], 4),
        (vec![(32004, vec![0])], 8),
        (vec![(32008, vec![0, 4, 4, 0, 0])], 4),
        (vec![(32008, vec![0, 4, 2, 16, 2])], 2),
        (vec![(32008, vec![0, 4, 8, 0, 3])], 8),
        (vec![(307, vec![9])], 4),
        (vec![(32026, vec![1, 0, 4, 4012, 5, 1, 1])], 4),
        (vec![(32001, vec![2, 2, 4, 256, 5, 1, 1])], 4),
        (vec![(32020, vec![0, 2, 1, 1])], 2),
        (vec![(32020, vec![1, 1, 1, 0])], 1),
        (vec![(4, vec![169, 8, 16, 32])], 2),
        (vec![(4, vec![141, 16, 64, 20])], 8),
        (vec![(5, vec![8, 0, 64, 1, 4, 0, 17, 3])], 4),
        (vec![(5, vec![24, 0, 32, 3, 8, 3, 0, 1, 4, 0, 17, 3, 4, 1, 2, 1, 11, 2, 6, 1, 1, 0, 8, 0])], 8),
        (vec![(6, so_int)], 4),
        (vec![(6, so_float)], 8),
        (vec![(5, vec![8, 0, 64, 1, 4, 0, 17, 3]), (32015, vec![1])], 4),
    ]
}

/// A valid-looking header for codecs that check one first, so the garbage reaches
/// the decoder proper.
fn plausible_header(id: u16, out_len: usize, rng: &mut Rng) -> Vec<u8> {
    match id {
        32004 => {
            let mut h = (out_len as u64).to_be_bytes().to_vec();
            h.extend_from_slice(&(64u32 << rng.below(4)).to_be_bytes());
            h
        }
        32008 => {
            let mut h = (out_len as u64).to_be_bytes().to_vec();
            h.extend_from_slice(&(64u32 * (1 + rng.below(4) as u32)).to_be_bytes());
            h
        }
        32001 => {
            let mut h = vec![2, 1, [0u8, 1, 4, 0x21, 0x24, 0x61, 0x91, 0x41][rng.below(8)], 4];
            h.extend_from_slice(&(out_len as u32).to_le_bytes());
            h.extend_from_slice(&(64u32 << rng.below(3)).to_le_bytes());
            h
        }
        4 | 32020 => (out_len as u32).to_le_bytes().to_vec(),
        6 => {
            let mut h = vec![rng.below(20) as u8, 0, 0, 0, 8];
            h.extend_from_slice(&rng.next().to_le_bytes());
            h.extend_from_slice(&[0; 8]);
            h
        }
        _ => Vec::new(),
    }
}

#[test]
fn garbage_never_panics() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut scratch = DecodeScratch::default();
    for (filters, element_size) in pipelines() {
        let pipeline = FilterPipeline {
            filters: filters
                .iter()
                .map(|(id, cd)| FilterInfo { id: *id, name: None, optional: false, client_data: cd.clone() })
                .collect(),
        };
        DecodePipeline::new(&pipeline, element_size).unwrap_or_else(|e| panic!("{:?}: {}", filters, e));
        let id = filters.last().map(|f| f.0).unwrap_or(0);
        for _ in 0..3000 {
            let out_len = element_size * 64;
            let mut src = plausible_header(id, out_len, &mut rng);
            if id == 32001 {
                // Blosc's total size field, then the rest.
                let len = src.len() + 4 + rng.below(600);
                src.extend_from_slice(&(len as u32).to_le_bytes());
            }
            let extra = rng.below(700);
            src.extend((0..extra).map(|_| rng.next() as u8));
            let mut out = vec![0u8; out_len];
            // The result does not matter here; a panic fails the test.
            let _ = decode_chunk(&DecodePipeline::new(&pipeline, element_size).unwrap(), 0, &src, &mut out, &mut scratch);
        }
    }
}

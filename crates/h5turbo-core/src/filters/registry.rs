//! Every HDF5 filter h5turbo knows, by registered id: the one place a filter's
//! identity (id and name) is written. The decoder of each is dispatched in
//! `Codec` (filters/mod.rs), the encoder in `filters/encode.rs`; the bindings ask this table
//! (Python: `h5turbo._native.filters()`, C: `h5turbo_filter_name`).

/// One filter: its registered id, the name h5turbo reports, and what h5turbo does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilterKind {
    pub id: u16,
    pub name: &'static str,
    /// h5turbo reads chunks that went through this filter.
    pub decodes: bool,
    /// h5turbo's writer produces it.
    pub encodes: bool,
}

pub const FILTER_DEFLATE: u16 = 1;
pub const FILTER_SHUFFLE: u16 = 2;
pub const FILTER_FLETCHER32: u16 = 3;
pub const FILTER_SZIP: u16 = 4;
pub const FILTER_NBIT: u16 = 5;
pub const FILTER_SCALEOFFSET: u16 = 6;
pub const FILTER_BZIP2: u16 = 307;
pub const FILTER_LZF: u16 = 32000;
pub const FILTER_BLOSC: u16 = 32001;
pub const FILTER_LZ4: u16 = 32004;
pub const FILTER_BITSHUFFLE: u16 = 32008;
pub const FILTER_ZSTD: u16 = 32015;
pub const FILTER_SZ: u16 = 32017;
pub const FILTER_VBZ: u16 = 32020;
pub const FILTER_BLOSC2: u16 = 32026;

const fn kind(id: u16, name: &'static str, decodes: bool, encodes: bool) -> FilterKind {
    FilterKind { id, name, decodes, encodes }
}

/// Sorted by id. Ids without a decoder are listed so errors can name them.
pub const FILTERS: &[FilterKind] = &[
    kind(FILTER_DEFLATE, "deflate", true, true),
    kind(FILTER_SHUFFLE, "shuffle", true, true),
    kind(FILTER_FLETCHER32, "fletcher32", true, true),
    kind(FILTER_SZIP, "szip", true, false),
    kind(FILTER_NBIT, "nbit", true, false),
    kind(FILTER_SCALEOFFSET, "scaleoffset", true, false),
    kind(305, "LZO", false, false),
    kind(FILTER_BZIP2, "bzip2", true, false),
    kind(FILTER_LZF, "lzf", true, true),
    kind(FILTER_BLOSC, "blosc", true, true),
    kind(FILTER_LZ4, "lz4", true, true),
    kind(FILTER_BITSHUFFLE, "bitshuffle", true, true),
    kind(32013, "zfp", false, false),
    kind(FILTER_ZSTD, "zstd", true, true),
    kind(FILTER_SZ, "SZ", false, false),
    kind(FILTER_VBZ, "vbz", true, false),
    kind(32024, "SZ3", false, false),
    kind(FILTER_BLOSC2, "blosc2", true, false),
];

/// The filter with registered id `id`, if h5turbo knows it.
pub fn lookup(id: u16) -> Option<&'static FilterKind> {
    FILTERS.binary_search_by_key(&id, |k| k.id).ok().map(|i| &FILTERS[i])
}

/// The name of filter `id`, "unknown" for ids not in the table.
pub fn filter_name(id: u16) -> &'static str {
    lookup(id).map_or("unknown", |k| k.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        assert!(FILTERS.windows(2).all(|w| w[0].id < w[1].id));
    }

    #[test]
    fn lookup_finds_every_entry_and_nothing_else() {
        for k in FILTERS {
            assert_eq!(lookup(k.id), Some(k));
        }
        assert_eq!(filter_name(32017), "SZ");
        assert_eq!(filter_name(9999), "unknown");
        assert!(lookup(0).is_none());
    }

    #[test]
    fn encoders_are_a_subset_of_decoders() {
        assert!(FILTERS.iter().all(|k| !k.encodes || k.decodes));
    }
}

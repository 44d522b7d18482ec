//! Bytes to structures: the HDF5 file format, parsed without libhdf5.
//!
//! Pure functions over a [`FormatContext`]; every offset and length is checked
//! against the file before use; nothing here panics on bad input.

pub mod attribute;
pub mod attribute_info;
pub mod btree_v1;
pub mod btree_v2;
pub mod checksum;
pub mod chunk_index;
pub mod context;
pub mod dataspace;
pub mod datatype;
pub mod external;
pub mod dense_info;
pub mod fill_value;
pub mod filter_pipeline;
pub mod fractal_heap;
pub mod global_heap;
pub mod layout;
pub mod links;
pub mod local_heap;
pub mod names;
pub mod object_header;
pub mod reader;
pub(crate) mod recent;
pub mod reference;
pub mod shared;
pub mod sohm;
pub mod superblock;
pub mod symbol_table;
#[cfg(test)]
pub(crate) mod test_support;
pub mod vds;

pub use context::FormatContext;
#[cfg_attr(not(feature = "internals"), allow(unused_imports))] // for tests and fuzz targets
pub use reader::{ByteReader, Located, Sizes};

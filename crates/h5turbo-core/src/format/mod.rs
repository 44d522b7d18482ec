//! Bytes to structures: the HDF5 file format, parsed without libhdf5.
//!
//! Pure functions over a [`FormatContext`]; every offset and length is checked
//! against the file before use; nothing here panics on bad input.

pub mod attribute_info;
pub mod btree_v2;
pub mod checksum;
pub mod context;
pub mod filter_pipeline;
pub mod fractal_heap;
pub mod links;
pub mod object_header;
pub mod superblock;
pub mod reader;

pub use context::FormatContext;
pub use reader::{ByteReader, Sizes};

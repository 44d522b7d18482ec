//! Bytes to structures: the HDF5 file format, parsed without libhdf5.
//!
//! Pure functions over a [`FormatContext`]; every offset and length is checked
//! against the file before use; nothing here panics on bad input.

pub mod checksum;
pub mod context;
pub mod filter_pipeline;
pub mod links;
pub mod object_header;
pub mod superblock;
pub mod reader;

pub use context::FormatContext;
pub use reader::{ByteReader, Sizes};

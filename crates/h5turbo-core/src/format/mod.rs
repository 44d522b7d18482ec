//! Bytes to structures: the HDF5 file format, parsed without libhdf5.
//!
//! Pure functions over a [`FormatContext`]; every offset and length is checked
//! against the file before use; nothing here panics on bad input.

pub mod btree_v1;
pub mod checksum;
pub mod chunk_index;
pub mod context;
pub mod filter_pipeline;
pub mod layout;
pub mod links;
pub mod local_heap;
pub mod reader;
pub mod symbol_table;

pub use context::FormatContext;
pub use reader::{ByteReader, Sizes};

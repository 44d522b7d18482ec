//! Bytes to structures: the HDF5 file format, parsed without libhdf5.
//!
//! Pure functions over a [`FormatContext`]; every offset and length is checked
//! against the file before use; nothing here panics on bad input.

pub mod attribute;
pub mod checksum;
pub mod context;
pub mod dataspace;
pub mod datatype;
pub mod fill_value;
pub mod filter_pipeline;
pub mod float_convert;
pub mod global_heap;
pub mod links;
pub mod numpy_dtype;
pub mod reader;
pub mod shared;
pub mod values;

pub use context::FormatContext;
pub use reader::{ByteReader, Sizes};

//! h5turbo core: a lock-free HDF5 reader.
//!
//! Layers, data flowing down: [`format`] (bytes to structures) -> [`filters`]
//! (chunk decoders) -> [`engine`] (selection -> plan -> parallel execution).

pub mod convert;
pub mod engine;
pub mod error;
pub mod formats;
pub mod file;
pub mod filters;
pub mod format;
pub mod io;
pub mod prelude;

pub use error::{Error, ErrorKind, Result};

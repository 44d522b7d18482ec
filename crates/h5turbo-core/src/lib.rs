//! h5turbo core: a lock-free HDF5 reader.
//!
//! Layers, data flowing down: `format` (HDF5 bytes to structures) -> `filters`
//! (chunk decoders and encoders, one registry) -> `engine` (selection -> plan ->
//! parallel execution, reductions) -> [`mod@file`] (the object model: files, groups,
//! datasets, attributes) -> [`formats`] (conventions on top of HDF5: fast5).
//! `convert` turns HDF5 types and values into numpy's.
//!
//! Bindings (Python, C, R) use [`prelude`], the public API; the lower layers are
//! internal (public only with the `internals` feature, for fuzzing and format tests).
//! docs/architecture.md follows one read through every layer.

/// Declares the internal layers: crate-private, public with the `internals` feature.
macro_rules! internal_modules {
    ($($name:ident),*) => {$(
        #[cfg(feature = "internals")]
        pub mod $name;
        #[cfg(not(feature = "internals"))]
        pub(crate) mod $name;
    )*};
}

internal_modules!(convert, engine, filters, format, io);

pub mod buffer;
pub mod error;
pub mod file;
pub mod formats;
pub mod prelude;
mod settings;

pub use error::{Error, ErrorKind, Result};

//! File formats that are conventions on top of HDF5, read through the object model
//! (`crate::file`). Not to be confused with `crate::format`, the HDF5 format itself.
//!
//! - [`fast5`]: Oxford Nanopore reads (single- and multi-read files).

pub mod fast5;

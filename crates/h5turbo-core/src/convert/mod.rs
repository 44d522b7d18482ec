//! From HDF5 types and stored bytes to what numpy and h5py give: dtypes
//! ([`numpy_dtype`]), element values in numpy's memory layout and the objects of
//! variable-length data ([`values`]; compounds of them field by field: [`columns`]), and floats of any bit layout ([`floats`]).
//!
//! Sits above [`crate::format`] (which knows nothing of numpy) and below the object
//! model and the bindings.

pub mod columns;
pub mod floats;
pub mod numpy_dtype;
pub mod values;

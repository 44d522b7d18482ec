//! The Dimension Scale convention (H5DS): which datasets are scales.

use super::Object;
use crate::error::Result;
use crate::format::datatype::{DatatypeClass, StringPadding};

const CLASS: &str = "CLASS";
const DIMENSION_SCALE: &[u8] = b"DIMENSION_SCALE";

impl Object {
    /// H5DSis_scale: a CLASS attribute of fixed-length, null-terminated strings whose
    /// first string reads "DIMENSION_SCALE". libhdf5 refuses every other string kind
    /// (null- or space-padded, variable-length): h5py's `is_scale` is False for those,
    /// and so is ours.
    pub fn is_dimension_scale(&self) -> Result<bool> {
        if !self.attribute_names()?.iter().any(|n| n == CLASS) {
            return Ok(false);
        }
        let attr = self.attribute(CLASS)?;
        let DatatypeClass::String { padding: StringPadding::NullTerminate, .. } = attr.datatype.class else {
            return Ok(false);
        };
        let first = attr.raw.split(|&b| b == 0).next().unwrap_or_default();
        Ok(first == DIMENSION_SCALE)
    }
}

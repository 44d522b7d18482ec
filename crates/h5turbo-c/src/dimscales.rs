//! Dimension scales (the HDF5 Dimension Scale convention, H5DS): which datasets are
//! attached to each dimension of a dataset, read from its DIMENSION_LIST attribute
//! (per dimension, a variable-length list of object references to the scales).

use crate::errors::*;
use crate::handles::out_strings;
use crate::objects::h5turbo_object;
use crate::strings::give_strings;
use h5turbo_core::prelude::{reference, DatatypeClass, Error, Object, ReferenceKind, ResultExt, VlenValue};
use std::ffi::c_char;
use std::ffi::c_int;

const DIMENSION_LIST: &str = "DIMENSION_LIST";

/// The paths of the dimension scales attached to dimension `dim` (0-based, HDF5's
/// order: dimension 0 varies slowest) of a dataset, in attachment order (the order
/// H5DSiterate_scales visits them). None attached: `*count` is 0 and `*paths` NULL.
/// A scale no hard link reaches is skipped (it has no path). Free with
/// h5turbo_strings_free(*paths, *count).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_dimension_scales(
    ds: *const h5turbo_object,
    dim: usize,
    paths: *mut *mut *mut c_char,
    count: *mut usize,
) -> c_int {
    guard_in(ds, || {
        let (paths, count) = out_strings(paths, "paths", count, "count")?;
        let obj = &deref(ds, "ds")?.object;
        let found = attached_scales(obj, dim).in_object(obj.name()).in_file(obj.file().path())?;
        give_strings(found.iter().map(String::as_bytes), paths, count)?;
        Ok(())
    })
}

fn attached_scales(obj: &Object, dim: usize) -> Result<Vec<String>, Error> {
    let rank = obj.dataset()?.dataspace.dims.len();
    if dim >= rank {
        return Err(invalid(format!("dim is {}, the dataset has {} dimensions", dim, rank)));
    }
    if !obj.attribute_names()?.iter().any(|n| n == DIMENSION_LIST) {
        return Ok(Vec::new());
    }
    let attr = obj.attribute(DIMENSION_LIST)?;
    let context = |e: Error| e.in_object(format!("{} (attribute '{}')", obj.name(), DIMENSION_LIST));
    check_reference_lists(&attr.datatype.class).map_err(context)?;
    let lists = attr.vlen_values(obj.file()).map_err(context)?;
    // H5DS writes one list per dimension; a shorter attribute attaches nothing to the rest.
    let Some(list) = lists.get(dim) else { return Ok(Vec::new()) };
    // References are kept as their stored bytes, one value each.
    let VlenValue::NestedSequence(refs) = list else {
        return Err(context(Error::format("DIMENSION_LIST element is not a list of references")));
    };
    let mut found = Vec::new();
    for value in refs {
        let VlenValue::Fixed(raw) = value else {
            return Err(context(Error::format("DIMENSION_LIST holds a value that is not a reference")));
        };
        let Some(address) = reference::object_address(raw).map_err(context)? else { continue };
        if let (_, Some(path)) = obj.file().dereference(address)? {
            found.push(path);
        }
    }
    Ok(found)
}

/// DIMENSION_LIST must be a vlen of object references.
fn check_reference_lists(class: &DatatypeClass) -> Result<(), Error> {
    if let DatatypeClass::VarLen { base, .. } = class {
        if let DatatypeClass::Reference { kind: ReferenceKind::Object } = base.class {
            return Ok(());
        }
    }
    Err(Error::format("DIMENSION_LIST is not a variable-length list of object references"))
}

//! Attributes of groups, datasets and committed datatypes.

use crate::dataset::{in_object, rank_of, string_elements};
use crate::datatype::{give_datatype, h5turbo_datatype, Origin};
use crate::errors::*;
use crate::handles::{close_handle, give_handle, guard_put_attr, out_handle, out_strings};
use crate::native::to_native;
use crate::objects::h5turbo_object;
use crate::strings::give_strings;
use h5turbo_core::prelude::{stored_bytes, AttributeValue, Object};
use std::ffi::{c_char, c_int, c_void};

/// An attribute, read whole when opened.
pub struct h5turbo_attribute {
    object: Object,
    value: AttributeValue,
}

impl h5turbo_attribute {
    /// The object the attribute belongs to.
    pub(crate) fn object(&self) -> &Object {
        &self.object
    }

    pub(crate) fn value(&self) -> &AttributeValue {
        &self.value
    }
}

/// The attribute names of an object in h5py's order (creation order where tracked,
/// else by name). Free with h5turbo_strings_free(names, count).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_attribute_names(
    obj: *const h5turbo_object,
    names: *mut *mut *mut c_char,
    count: *mut usize,
) -> c_int {
    guard_in(obj, || {
        let (names, count) = out_strings(names, "names", count, "count")?;
        let obj = &deref(obj, "obj")?.object;
        let list = in_object(obj, obj.attribute_names())?;
        give_strings(list.iter().map(|name| stored_bytes(name)), names, count)?;
        Ok(())
    })
}

/// Open the attribute `name` of an object (H5TURBO_E_NOT_FOUND if it has none).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_attribute_open(
    obj: *const h5turbo_object,
    name: *const c_char,
    attr: *mut *mut h5turbo_attribute,
) -> c_int {
    guard_in(obj, || {
        let out = out_handle(attr, "attr")?;
        let object = deref(obj, "obj")?.object.clone();
        let name = hdf5_name(name, "name")?;
        let value = in_object(&object, object.attribute(&name))?;
        give_handle(out, h5turbo_attribute { object, value });
        Ok(())
    })
}

/// Close an attribute (NULL is fine).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_attribute_close(attr: *mut h5turbo_attribute) {
    close_handle(attr, "attr");
}

/// The attribute's element type (a new handle: close it with h5turbo_datatype_close).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_attribute_datatype(
    attr: *const h5turbo_attribute,
    dt: *mut *mut h5turbo_datatype,
) -> c_int {
    guard_attr(attr, || {
        let out = out_handle(dt, "dt")?;
        let attr = deref(attr, "attr")?;
        let origin = Origin {
            object: format!("{} (attribute '{}')", attr.object.name(), attr.value.name),
            file: attr.object.file().path().to_path_buf(),
        };
        give_datatype(attr.value.datatype.clone(), Some(std::sync::Arc::new(origin)), out);
        Ok(())
    })
}

/// The rank of an attribute: 0 for a scalar, -1 for a null dataspace.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_attribute_rank(attr: *const h5turbo_attribute, rank: *mut c_int) -> c_int {
    guard_put_attr(attr, rank, "rank", || rank_of(&deref(attr, "attr")?.value.dataspace))
}

/// The dimensions of an attribute into `dims` (room for max_rank; nothing for a scalar).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_attribute_shape(attr: *const h5turbo_attribute, dims: *mut u64, max_rank: c_int) -> c_int {
    guard_attr(attr, || crate::dataset::copy_dims(&deref(attr, "attr")?.value.dataspace.dims, dims, max_rank))
}

/// Every element of the attribute into `buf` (buf_size bytes, at least elements x
/// size), row-major, native byte order; the types h5turbo_dataset_read reads.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_attribute_read(attr: *const h5turbo_attribute, buf: *mut c_void, buf_size: usize) -> c_int {
    guard_attr(attr, || {
        let attr = deref(attr, "attr")?;
        let context = |e: h5turbo_core::prelude::Error| {
            e.in_object(format!("{} (attribute '{}')", attr.object.name(), attr.value.name))
                .in_file(attr.object.file().path())
        };
        let dtype = h5turbo_datatype::new(attr.value.datatype.clone());
        let (numpy, itemsize) = dtype.plain_layout().map_err(context)?;
        let n = attr.value.len().map_err(context)?;
        let mut bytes = attr.value.numpy_bytes().map_err(context)?;
        let need = n.checked_mul(itemsize).filter(|&b| b == bytes.len());
        let need = need.ok_or_else(|| context(h5turbo_core::prelude::Error::format("attribute value of unexpected size")))?;
        if need == 0 {
            return Ok(());
        }
        if buf_size < need {
            return Err(context(invalid(format!("buf_size is {} bytes, the attribute needs {}", buf_size, need))));
        }
        let out = out_ptr(buf.cast::<u8>(), "buf")?;
        // converted before the copy: a failed call leaves the caller's buffer as it was
        to_native(numpy, &mut bytes, n).map_err(context)?;
        std::slice::from_raw_parts_mut(out, need).copy_from_slice(&bytes);
        Ok(())
    })
}

/// The attribute's strings (fixed or variable length) as NUL-terminated C strings,
/// row-major; free with h5turbo_strings_free(*strings, *n).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_attribute_read_strings(
    attr: *const h5turbo_attribute,
    strings: *mut *mut *mut c_char,
    n: *mut usize,
) -> c_int {
    guard_attr(attr, || {
        let (strings, n) = out_strings(strings, "strings", n, "n")?;
        let attr = deref(attr, "attr")?;
        let value = &attr.value;
        let values = string_elements(
            &value.datatype.class,
            value.datatype.size,
            || value.numpy_bytes(),
            || value.vlen_values(attr.object.file()),
        )
        .map_err(|e| {
            e.in_object(format!("{} (attribute '{}')", attr.object.name(), value.name)).in_file(attr.object.file().path())
        })?;
        give_strings(values, strings, n)?;
        Ok(())
    })
}

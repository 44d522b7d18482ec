//! A compound dataset read one member at a time: what lets C (and R) read compounds
//! whose other members have no fixed C layout (variable-length strings, sequences).

use crate::dataset::{in_object, selected, Selected};
use crate::datatype::h5turbo_datatype;
use crate::errors::*;
use crate::handles::out_strings;
use crate::native::to_native;
use crate::objects::h5turbo_object;
use crate::strings::give_strings;
use h5turbo_core::prelude::{
    zeroed_elements, AxisSelection, CompoundMember, Dataset, DatatypeClass, Error, NumpyDtype, Object, VlenKind, VlenValue,
};
use std::ffi::{c_char, c_int};

/// The selected elements' values of one member: each element's bytes in the member's
/// numpy layout (stored byte order), or its string.
enum MemberValue {
    Bytes(Vec<u8>),
    String(Vec<u8>),
}

/// Member `member` of a compound dataset.
fn member_of(dataset: &Dataset, member: usize) -> Result<&CompoundMember, Error> {
    let DatatypeClass::Compound { members } = &dataset.datatype.class else {
        return Err(invalid("not a compound dataset"));
    };
    members.get(member).ok_or_else(|| invalid(format!("member {} of a compound of {}", member, members.len())))
}

/// The values of member `member` for the selection `sel` (`n` elements).
fn member_values(obj: &Object, dataset: &Dataset, member: usize, sel: &[AxisSelection], n: usize, threads: usize) -> Result<Vec<MemberValue>, Error> {
    let m = member_of(dataset, member)?;
    let numpy = dataset.datatype.numpy_dtype()?;
    let NumpyDtype::Structured { fields, itemsize } = &numpy else {
        return Err(Error::unsupported("a compound without a structured layout"));
    };
    // its place among the numpy fields: the order of the values read with vlen parts,
    // which is not always HDF5's
    let position = fields.iter().position(|(name, _, _)| *name == m.name).ok_or_else(|| Error::format("a compound member without its field"))?;
    if crate::native::is_plain(&numpy) {
        // every member has a fixed layout: one read of whole elements, then the member cut out
        let size = usize::try_from(*itemsize).map_err(|_| Error::unsupported("element too large"))?;
        let (_, field, offset) = &fields[position];
        let width = usize::try_from(field.itemsize()).map_err(|_| Error::unsupported("member too large"))?;
        let offset = usize::try_from(*offset).map_err(|_| Error::format("member offset too large"))?;
        let mut bytes = zeroed_elements(n, size, "the selected elements")?;
        obj.read_numpy(sel, &mut bytes, threads)?;
        let string = matches!(m.datatype.class, DatatypeClass::String { .. });
        let outside = || Error::format(format!("compound member {:?} lies outside its element", m.name));
        let end = offset.checked_add(width).filter(|&e| e <= size).ok_or_else(outside)?;
        return Ok(bytes
            .chunks_exact(size.max(1))
            .map(|e| {
                let value = e[offset..end].to_vec();
                if string { MemberValue::String(value) } else { MemberValue::Bytes(value) }
            })
            .collect());
    }
    obj.read_vlen(sel, threads)?
        .into_iter()
        .map(|element| match element {
            VlenValue::Compound(mut values) if position < values.len() => match values.swap_remove(position) {
                VlenValue::Fixed(bytes) if matches!(m.datatype.class, DatatypeClass::String { .. }) => Ok(MemberValue::String(bytes)),
                VlenValue::Fixed(bytes) => Ok(MemberValue::Bytes(bytes)),
                VlenValue::String(bytes) => Ok(MemberValue::String(bytes)),
                _ => Err(Error::unsupported(format!(
                    "member {:?} has variable-length or reference parts: no fixed C layout",
                    m.name
                ))),
            },
            _ => Err(Error::format("a compound element without its members")),
        })
        .collect()
}

/// Read member `member` (numbered as h5turbo_datatype_member numbers them) of a
/// hyperslab of a compound dataset into `buf` (buf_size bytes, checked): the member's
/// values alone, one after the other, in its own layout (the size and class of
/// h5turbo_datatype_member's type), native byte order. Also for compounds whose other
/// members are variable-length, which h5turbo_dataset_read cannot lay out; the member
/// itself must have a fixed layout (a fixed-length string member gives its bytes as
/// stored; variable-length strings: h5turbo_dataset_read_member_strings).
/// start/count/stride and threads as for h5turbo_dataset_read.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_read_member(
    ds: *const h5turbo_object,
    member: usize,
    start: *const u64,
    count: *const u64,
    stride: *const u64,
    buf: *mut std::ffi::c_void,
    buf_size: usize,
    threads: c_int,
) -> c_int {
    guard(|| {
        let Selected { obj, dataset, sel, n, threads } = selected(ds, start, count, stride, threads)?;
        let m = in_object(obj, member_of(&dataset, member))?;
        let member_type = h5turbo_datatype::new(m.datatype.clone());
        let (numpy, width) = in_object(obj, member_type.plain_layout())?;
        let need = in_object(obj, n.checked_mul(width).ok_or_else(|| invalid("selection too large")))?;
        if buf_size < need {
            return Err(invalid(format!("buf_size is {} bytes, the member's values need {}", buf_size, need)).in_object(obj.name()).in_file(obj.file().path()));
        }
        if need == 0 {
            return Ok(());
        }
        let values = in_object(obj, member_values(obj, &dataset, member, &sel, n, threads))?;
        let out = std::slice::from_raw_parts_mut(out_ptr(buf.cast::<u8>(), "buf")?, need);
        for (slot, value) in out.chunks_exact_mut(width).zip(&values) {
            match value {
                // fixed-length strings too: their bytes as stored, as h5turbo_dataset_read gives them
                MemberValue::Bytes(bytes) | MemberValue::String(bytes) if bytes.len() == width => slot.copy_from_slice(bytes),
                _ => return Err(Error::format("a member value of the wrong size").in_object(obj.name()).in_file(obj.file().path())),
            }
        }
        in_object(obj, to_native(numpy, out, n))
    })
}

/// The strings of member `member` (a fixed- or variable-length string member) of a
/// hyperslab of a compound dataset as NUL-terminated C strings, row-major; free with
/// h5turbo_strings_free(*strings, *n).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_read_member_strings(
    ds: *const h5turbo_object,
    member: usize,
    start: *const u64,
    count: *const u64,
    stride: *const u64,
    strings: *mut *mut *mut c_char,
    n: *mut usize,
    threads: c_int,
) -> c_int {
    guard(|| {
        let (strings, n) = out_strings(strings, "strings", n, "n")?;
        let Selected { obj, dataset, sel, n: len, threads } = selected(ds, start, count, stride, threads)?;
        let m = in_object(obj, member_of(&dataset, member))?;
        if !matches!(m.datatype.class, DatatypeClass::String { .. } | DatatypeClass::VarLen { kind: VlenKind::String { .. }, .. }) {
            return Err(invalid(format!("member {:?} is not a string", m.name)).in_object(obj.name()).in_file(obj.file().path()));
        }
        let values = in_object(obj, member_values(obj, &dataset, member, &sel, len, threads))?;
        let texts = values.into_iter().map(|v| match v {
            MemberValue::String(bytes) | MemberValue::Bytes(bytes) => bytes,
        });
        give_strings(texts, strings, n);
        Ok(())
    })
}

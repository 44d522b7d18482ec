//! Variable-length sequences (HDF5's vlen of numbers, enums, fixed strings or plain
//! compounds): each element a run of base-type values, handed to C in one block.

use crate::dataset::{in_object, selected, Selected};
use crate::datatype::h5turbo_datatype;
use crate::errors::*;
use crate::native::to_native;
use crate::attribute::h5turbo_attribute;
use crate::objects::h5turbo_object;
use h5turbo_core::prelude::{vec_with_capacity, Datatype, DatatypeClass, Error, VlenKind, VlenValue};
use std::ffi::{c_int, c_void};

/// One element of a variable-length sequence dataset: `len` values of the base type
/// (h5turbo_datatype_base; its h5turbo_datatype_info size and class), native byte
/// order, at `data` (NULL when `len` is 0), aligned for any base type.
#[repr(C)]
pub struct h5turbo_sequence {
    pub len: u64,
    pub data: *const c_void,
}

/// Every sequence's data starts on this boundary (the widest base: long double, complex).
const ALIGN: usize = 16;
/// Before the array handed out: the size of the whole block in 16-byte units, so that
/// h5turbo_sequences_free can give back exactly what was taken.
const HEADER: usize = ALIGN;

fn round_up(n: usize) -> Option<usize> {
    n.checked_add(ALIGN - 1).map(|v| v / ALIGN * ALIGN)
}

/// The values of each selected element, in native order.
fn sequences(values: Vec<VlenValue>, base: &h5turbo_datatype) -> Result<Vec<(u64, Vec<u8>)>, Error> {
    let (numpy, _) = base.plain_layout()?;
    let mut runs = vec_with_capacity(values.len(), "the sequences")?;
    for value in values {
        match value {
            VlenValue::Sequence { count, mut bytes } => {
                to_native(numpy, &mut bytes, count)?;
                runs.push((count as u64, bytes));
            }
            VlenValue::NestedSequence(_) => return Err(Error::unsupported("sequences of variable-length values have no fixed C layout")),
            _ => return Err(Error::format("a variable-length sequence element holds no sequence")),
        }
    }
    Ok(runs)
}

/// One block: [header][n x h5turbo_sequence][each sequence's data, ALIGN-aligned].
/// Returns the array's address inside it.
fn pack(runs: &[(u64, Vec<u8>)]) -> Result<*mut h5turbo_sequence, Error> {
    let too_large = || Error::unsupported("the selected sequences are too large");
    let array = runs.len().checked_mul(std::mem::size_of::<h5turbo_sequence>()).ok_or_else(too_large)?;
    let mut offsets = vec_with_capacity(runs.len(), "the sequences' offsets")?;
    let mut end = round_up(HEADER + array).ok_or_else(too_large)?;
    for (_, bytes) in runs {
        offsets.push(end);
        end = end.checked_add(bytes.len()).and_then(round_up).ok_or_else(too_large)?;
    }
    let units = end / ALIGN;
    let mut block: Vec<u128> = Vec::new();
    block.try_reserve_exact(units).map_err(|_| Error::out_of_memory(format!("cannot allocate {} bytes for the sequences", end)))?;
    block.resize(units, 0);
    let mut block = block.into_boxed_slice();
    block[0] = units as u128;
    let base = block.as_mut_ptr().cast::<u8>();
    // SAFETY: every offset lies inside the block (computed above); the array starts
    // at HEADER (16-aligned) and the data at 16-aligned offsets past it.
    unsafe {
        let array_ptr = base.add(HEADER).cast::<h5turbo_sequence>();
        for (i, ((len, bytes), &at)) in runs.iter().zip(&offsets).enumerate() {
            let data = if bytes.is_empty() { std::ptr::null() } else { base.add(at).cast_const().cast::<c_void>() };
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(at), bytes.len());
            array_ptr.add(i).write(h5turbo_sequence { len: *len, data });
        }
        std::mem::forget(block);
        Ok(crate::handles::register(array_ptr))
    }
}

/// The variable-length sequences of a hyperslab of a dataset whose elements are vlen
/// sequences of a fixed-layout base (numbers, enums, fixed-length strings, plain
/// compounds), row-major: `*n` sequences at `*seqs`, one block owned by the caller,
/// freed with h5turbo_sequences_free(*seqs, *n) (NULL and 0 when none is selected).
/// start/count/stride and threads as for h5turbo_dataset_read.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_read_sequences(
    ds: *const h5turbo_object,
    start: *const u64,
    count: *const u64,
    stride: *const u64,
    seqs: *mut *mut h5turbo_sequence,
    n: *mut usize,
    threads: c_int,
) -> c_int {
    guard_in(ds, || {
        let (seqs, n) = out_sequences(seqs, n)?;
        let Selected { obj, dataset, sel, threads, .. } = selected(ds, start, count, stride, threads)?;
        let DatatypeClass::VarLen { kind: VlenKind::Sequence, base } = &dataset.datatype.class else {
            return Err(invalid("not a dataset of variable-length sequences").in_object(obj.name()).in_file(obj.file().path()));
        };
        let values = obj.read_vlen(&sel, threads)?;
        in_object(obj, give_sequences(values, base, seqs, n))
    })
}

/// The variable-length sequences of an attribute whose elements are vlen sequences of
/// a fixed-layout base, as h5turbo_dataset_read_sequences gives a dataset's; free with
/// h5turbo_sequences_free(*seqs, *n).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_attribute_read_sequences(attr: *const h5turbo_attribute, seqs: *mut *mut h5turbo_sequence, n: *mut usize) -> c_int {
    guard_attr(attr, || {
        let (seqs, n) = out_sequences(seqs, n)?;
        let attr = deref(attr, "attr")?;
        let (obj, value) = (attr.object(), attr.value());
        let in_attribute = |e: Error| e.in_object(format!("{} (attribute '{}')", obj.name(), value.name)).in_file(obj.file().path());
        let DatatypeClass::VarLen { kind: VlenKind::Sequence, base } = &value.datatype.class else {
            return Err(in_attribute(invalid("not an attribute of variable-length sequences")));
        };
        let values = value.vlen_values(obj.file()).map_err(in_attribute)?;
        give_sequences(values, base, seqs, n).map_err(in_attribute)
    })
}

/// Check the pointers a block of sequences and its count are given through, and set
/// them to NULL and 0 until the call succeeds.
pub(crate) unsafe fn out_sequences(seqs: *mut *mut h5turbo_sequence, n: *mut usize) -> Result<(*mut *mut h5turbo_sequence, *mut usize), Error> {
    let seqs = out_ptr(seqs, "seqs")?;
    let n = out_ptr(n, "n")?;
    *seqs = std::ptr::null_mut();
    *n = 0;
    Ok((seqs, n))
}

/// Give `values` (sequences of `base`) to the caller as one block through `seqs` and
/// `n` (checked by out_sequences).
pub(crate) unsafe fn give_sequences(values: Vec<VlenValue>, base: &Datatype, seqs: *mut *mut h5turbo_sequence, n: *mut usize) -> Result<(), Error> {
    let runs = sequences(values, &h5turbo_datatype::new(base.clone()))?;
    // none selected: a NULL block, as an empty array of strings
    *seqs = if runs.is_empty() { std::ptr::null_mut() } else { pack(&runs)? };
    *n = runs.len();
    Ok(())
}

/// Free what h5turbo_dataset_read_sequences, h5turbo_attribute_read_sequences or
/// h5turbo_columns_member_sequences gave (NULL is fine).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_sequences_free(seqs: *mut h5turbo_sequence, n: usize) {
    let _ = n; // the block records its own size
    if seqs.is_null() || !crate::handles::unregister(seqs, "seqs") {
        return;
    }
    guard_void(|| {
        // SAFETY: seqs came from pack(): HEADER bytes past the start of a boxed [u128]
        // whose first unit holds its length in units.
        let start = seqs.cast::<u8>().sub(HEADER).cast::<u128>();
        let units = *start as usize;
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(start, units)));
    })
}

//! Element types of datasets and attributes.

use crate::errors::*;
use crate::handles::{close_handle, give_handle, out_handle, put_wanted};
use crate::native::is_plain;
use crate::objects::h5turbo_object;
use h5turbo_core::prelude::{
    ByteOrder, CharSet, Datatype, DatatypeClass, Error, NumpyDtype, ObjectKind, ResultExt, VlenKind,
};
use std::ffi::{c_char, c_int, CString};
use std::path::PathBuf;
use std::sync::Arc;

/// An element type (of a dataset, an attribute, a compound member or a base type).
pub struct h5turbo_datatype {
    pub(crate) datatype: Datatype,
    /// The layout h5turbo reads into (None: the type has no fixed C layout).
    pub(crate) numpy: Option<NumpyDtype>,
    /// Compound member names, for pointers handed out by h5turbo_datatype_member.
    member_names: Vec<CString>,
    /// Enum member names and values.
    enum_members: Vec<(CString, i64)>,
    /// The object (or attribute) and file the type came from, named in its errors.
    origin: Option<Arc<Origin>>,
}

/// Where a type handle came from, for its error messages.
pub(crate) struct Origin {
    pub(crate) object: String,
    pub(crate) file: PathBuf,
}

impl Origin {
    /// A type inside this one (a compound member, a base type).
    fn inner(self: &Arc<Origin>, what: &str) -> Arc<Origin> {
        Arc::new(Origin { object: format!("{} ({})", self.object, what), file: self.file.clone() })
    }
}

/// Run an entry point on a type handle: its errors name the object and file the type
/// came from.
unsafe fn guard_datatype(dt: *const h5turbo_datatype, body: impl FnOnce() -> Result<(), Error>) -> c_int {
    let origin = crate::handles::live(dt).and_then(|d| d.origin.clone());
    guard(|| {
        body().map_err(|e| match &origin {
            Some(o) => e.in_object(o.object.clone()).in_file(&o.file),
            None => e,
        })
    })
}

/// `guard_put` on a type handle (see guard_datatype).
unsafe fn guard_datatype_put<T>(dt: *const h5turbo_datatype, out: *mut T, what: &str, value: impl FnOnce() -> Result<T, Error>) -> c_int {
    guard_datatype(dt, || {
        out_ptr(out, what)?.write(value()?);
        Ok(())
    })
}

pub const H5TURBO_INTEGER: c_int = 0;
pub const H5TURBO_FLOAT: c_int = 1;
pub const H5TURBO_STRING: c_int = 2;
pub const H5TURBO_BITFIELD: c_int = 3;
pub const H5TURBO_OPAQUE: c_int = 4;
pub const H5TURBO_COMPOUND: c_int = 5;
pub const H5TURBO_REFERENCE: c_int = 6;
pub const H5TURBO_ENUM: c_int = 7;
pub const H5TURBO_VLEN: c_int = 8;
pub const H5TURBO_ARRAY: c_int = 9;
pub const H5TURBO_TIME: c_int = 10;
pub const H5TURBO_COMPLEX: c_int = 11;

/// No byte order (strings, opaque, compounds ...).
pub const H5TURBO_ORDER_NONE: c_int = 0;
pub const H5TURBO_ORDER_LE: c_int = 1;
pub const H5TURBO_ORDER_BE: c_int = 2;

/// What an element type is. Variable-length strings have class H5TURBO_STRING and
/// `is_variable_string` set (their `size` is that of a pointer; read them with
/// h5turbo_*_read_strings).
#[repr(C)]
pub struct h5turbo_type_info {
    /// H5TURBO_INTEGER, H5TURBO_FLOAT, ...
    pub type_class: c_int,
    /// Bytes per element in the buffer h5turbo_*_read fills.
    pub size: usize,
    /// H5TURBO_ORDER_LE or _BE as stored in the file (reads always give native order).
    pub byte_order: c_int,
    /// Signed integers, and enums by their base (0 for every other class).
    pub is_signed: c_int,
    /// A variable-length string: read with h5turbo_*_read_strings.
    pub is_variable_string: c_int,
    pub is_utf8: c_int,
}

impl h5turbo_datatype {
    pub(crate) fn new(datatype: Datatype) -> h5turbo_datatype {
        let numpy = datatype.numpy_dtype().ok();
        let member_names = match &datatype.class {
            DatatypeClass::Compound { members } => members.iter().map(|m| c_string_lossy(m.name.as_bytes())).collect(),
            _ => Vec::new(),
        };
        let enum_members = datatype
            .enum_members()
            .unwrap_or_default()
            .into_iter()
            .map(|(name, value)| (c_string_lossy(name.as_bytes()), value as i64))
            .collect();
        h5turbo_datatype { datatype, numpy, member_names, enum_members, origin: None }
    }

    /// The C layout of the elements, or an error saying why there is none.
    pub(crate) fn plain_layout(&self) -> Result<(&NumpyDtype, usize), Error> {
        let numpy = match &self.numpy {
            Some(n) => n,
            None => return Err(self.datatype.numpy_dtype().err().unwrap_or_else(|| Error::unsupported("element type"))),
        };
        if !is_plain(numpy) {
            return Err(Error::unsupported(match numpy {
                NumpyDtype::VlenString { .. } => "variable-length strings: read them with h5turbo_*_read_strings",
                NumpyDtype::VlenSequence(_) => "variable-length sequences: read them with h5turbo_*_read_sequences",
                NumpyDtype::Reference { region: false } => "object references: read them with h5turbo_dataset_read_references",
                NumpyDtype::Reference { region: true } => "region references are not read",
                _ => "elements with variable-length or reference parts have no fixed C layout",
            }));
        }
        let size = usize::try_from(numpy.itemsize()).map_err(|_| Error::unsupported("element too large"))?;
        Ok((numpy, size))
    }

    /// The origin of a type inside this one (`what`: "member 'x'", "base type").
    fn inner_origin(&self, what: &str) -> Option<Arc<Origin>> {
        self.origin.as_ref().map(|o| o.inner(what))
    }

    fn info(&self) -> h5turbo_type_info {
        let dt = &self.datatype;
        let (type_class, order, signed) = class_order_sign(dt);
        let (is_variable_string, is_utf8) = match &dt.class {
            DatatypeClass::String { charset, .. } => (false, *charset == CharSet::Utf8),
            DatatypeClass::VarLen { kind: VlenKind::String { charset, .. }, .. } => (true, *charset == CharSet::Utf8),
            _ => (false, false),
        };
        let size = match &self.numpy {
            Some(n) if is_plain(n) => usize::try_from(n.itemsize()).unwrap_or(dt.size),
            Some(NumpyDtype::VlenString { .. }) => std::mem::size_of::<*const c_char>(),
            _ => dt.size,
        };
        h5turbo_type_info {
            type_class: if is_variable_string { H5TURBO_STRING } else { type_class },
            size,
            byte_order: match order {
                Some(ByteOrder::Little) => H5TURBO_ORDER_LE,
                Some(ByteOrder::Big) => H5TURBO_ORDER_BE,
                _ => H5TURBO_ORDER_NONE,
            },
            is_signed: c_int::from(signed),
            is_variable_string: c_int::from(is_variable_string),
            is_utf8: c_int::from(is_utf8),
        }
    }
}

/// The class code, the stored byte order and the sign of a type.
fn class_order_sign(dt: &Datatype) -> (c_int, Option<ByteOrder>, bool) {
    match &dt.class {
        DatatypeClass::FixedPoint { order, signed, .. } => (H5TURBO_INTEGER, Some(*order), *signed),
        DatatypeClass::FloatingPoint(layout) => (H5TURBO_FLOAT, Some(layout.order), false),
        DatatypeClass::Time { order, .. } => (H5TURBO_TIME, Some(*order), false),
        DatatypeClass::String { .. } => (H5TURBO_STRING, None, false),
        DatatypeClass::Bitfield { order, .. } => (H5TURBO_BITFIELD, Some(*order), false),
        DatatypeClass::Opaque { .. } => (H5TURBO_OPAQUE, None, false),
        DatatypeClass::Compound { .. } => (H5TURBO_COMPOUND, None, false),
        DatatypeClass::Reference { .. } => (H5TURBO_REFERENCE, None, false),
        DatatypeClass::Enum { base, .. } => {
            let (_, order, signed) = class_order_sign(base);
            (H5TURBO_ENUM, order, signed)
        }
        DatatypeClass::VarLen { .. } => (H5TURBO_VLEN, None, false),
        DatatypeClass::Array { base, .. } => (H5TURBO_ARRAY, class_order_sign(base).1, false),
        DatatypeClass::Complex { base } => (H5TURBO_COMPLEX, class_order_sign(base).1, false),
    }
}

pub(crate) unsafe fn give_datatype(datatype: Datatype, origin: Option<Arc<Origin>>, out: *mut *mut h5turbo_datatype) {
    give_handle(out, h5turbo_datatype { origin, ..h5turbo_datatype::new(datatype) });
}

/// The element type of a dataset (or the type a committed datatype object stores).
/// Free with h5turbo_datatype_close.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_datatype(ds: *const h5turbo_object, dt: *mut *mut h5turbo_datatype) -> c_int {
    guard_in(ds, || {
        let out = out_handle(dt, "dt")?;
        let obj = &deref(ds, "ds")?.object;
        let datatype = match obj.kind() {
            ObjectKind::Datatype => obj.stored_datatype()?,
            _ => obj.dataset().in_object(obj.name()).in_file(obj.file().path())?.datatype.clone(),
        };
        let origin = Origin { object: obj.name().to_string(), file: obj.file().path().to_path_buf() };
        give_datatype(datatype, Some(Arc::new(origin)), out);
        Ok(())
    })
}

/// Close a datatype handle (NULL is fine).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_datatype_close(dt: *mut h5turbo_datatype) {
    close_handle(dt, "dt");
}

/// Class, size, byte order, sign and string kind of a type.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_datatype_info(dt: *const h5turbo_datatype, info: *mut h5turbo_type_info) -> c_int {
    guard_datatype_put(dt, info, "info", || Ok(deref(dt, "dt")?.info()))
}

/// Member `i` of a compound or an enum (`what`), or an error naming the count.
fn nth_member<'a, T>(members: &'a [T], i: usize, what: &str) -> Result<&'a T, Error> {
    members.get(i).ok_or_else(|| invalid(format!("member {} of {} of {}", i, what, members.len())))
}

fn compound_members(dt: &h5turbo_datatype) -> Result<&[h5turbo_core::prelude::CompoundMember], Error> {
    match &dt.datatype.class {
        DatatypeClass::Compound { members } => Ok(members),
        _ => Err(invalid("not a compound type")),
    }
}

/// The number of members of a compound type.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_datatype_member_count(dt: *const h5turbo_datatype, n: *mut usize) -> c_int {
    guard_datatype_put(dt, n, "n", || Ok(compound_members(deref(dt, "dt")?)?.len()))
}

/// Member `i` of a compound type: its name (owned by `dt`), its byte offset in an
/// element as h5turbo_dataset_read fills it, and its type (a new handle: close it).
/// Any of name, offset, member may be NULL when not wanted.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_datatype_member(
    dt: *const h5turbo_datatype,
    i: usize,
    name: *mut *const c_char,
    offset: *mut usize,
    member: *mut *mut h5turbo_datatype,
) -> c_int {
    guard_datatype(dt, || {
        // the new handle NULL first, as every one (closing it after a failure is safe);
        // name and offset are computed before either is written: a failure leaves them
        let member = if member.is_null() { None } else { Some(out_handle(member, "member")?) };
        let dt = deref(dt, "dt")?;
        let m = nth_member(compound_members(dt)?, i, "a compound")?;
        let member_at = member_offset(dt, &m.name, m.offset)?;
        put_wanted(name, || Ok(dt.member_names[i].as_ptr()))?;
        put_wanted(offset, || Ok(member_at))?;
        if let Some(member) = member {
            give_datatype(m.datatype.clone(), dt.inner_origin(&format!("member '{}'", m.name)), member);
        }
        Ok(())
    })
}

/// A member's offset in the layout h5turbo reads into (numpy's, which keeps HDF5's
/// offsets for plain compounds).
fn member_offset(dt: &h5turbo_datatype, name: &str, stored: u64) -> Result<usize, Error> {
    let offset = match &dt.numpy {
        Some(NumpyDtype::Structured { fields, .. }) => {
            fields.iter().find(|(n, _, _)| n == name).map_or(stored, |(_, _, o)| *o)
        }
        _ => stored,
    };
    usize::try_from(offset).map_err(|_| Error::format("member offset too large"))
}

fn enum_members(dt: &h5turbo_datatype) -> Result<&[(CString, i64)], Error> {
    match dt.datatype.class {
        DatatypeClass::Enum { .. } => Ok(&dt.enum_members),
        _ => Err(invalid("not an enum type")),
    }
}

/// The number of members of an enum type.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_datatype_enum_count(dt: *const h5turbo_datatype, n: *mut usize) -> c_int {
    guard_datatype_put(dt, n, "n", || Ok(enum_members(deref(dt, "dt")?)?.len()))
}

/// Member `i` of an enum type: its name (owned by `dt`) and value (an unsigned 64-bit
/// value above INT64_MAX comes wrapped). name or value may be NULL.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_datatype_enum_member(
    dt: *const h5turbo_datatype,
    i: usize,
    name: *mut *const c_char,
    value: *mut i64,
) -> c_int {
    guard_datatype(dt, || {
        let (n, v) = nth_member(enum_members(deref(dt, "dt")?)?, i, "an enum")?;
        put_wanted(name, || Ok(n.as_ptr()))?;
        put_wanted(value, || Ok(*v))
    })
}

/// The base type of an enum, array or variable-length type (a new handle).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_datatype_base(dt: *const h5turbo_datatype, base: *mut *mut h5turbo_datatype) -> c_int {
    guard_datatype(dt, || {
        let out = out_handle(base, "base")?;
        let dt = deref(dt, "dt")?;
        let base_type = match &dt.datatype.class {
            DatatypeClass::Enum { base, .. }
            | DatatypeClass::Array { base, .. }
            | DatatypeClass::VarLen { base, .. }
            | DatatypeClass::Complex { base } => (**base).clone(),
            _ => return Err(invalid("only enum, array, variable-length and complex types have a base type")),
        };
        give_datatype(base_type, dt.inner_origin("base type"), out);
        Ok(())
    })
}

/// The dimensions of an array type, as h5turbo_dataset_filters gives its ids: the
/// first max_rank dimensions into `dims` (which may be NULL when max_rank is 0), and
/// the type's rank in `*rank`, also when max_rank is smaller (then `dims` holds the
/// first max_rank and nothing beyond: call again with room for `*rank`). A negative
/// max_rank is H5TURBO_E_INVALID. Nothing is written when the call fails.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_datatype_array_dims(
    dt: *const h5turbo_datatype,
    dims: *mut u64,
    max_rank: c_int,
    rank: *mut c_int,
) -> c_int {
    guard_datatype(dt, || {
        let rank_out = out_ptr(rank, "rank")?;
        let room = usize::try_from(max_rank).map_err(|_| invalid(format!("max_rank is negative ({})", max_rank)))?;
        crate::dataset::check_capacity(dims, "dims", room)?;
        let DatatypeClass::Array { dims: shape, .. } = &deref(dt, "dt")?.datatype.class else {
            return Err(invalid("not an array type"));
        };
        let array_rank = c_int::try_from(shape.len()).map_err(|_| Error::format("array rank too large"))?;
        crate::dataset::write_capacity(shape, dims, room);
        *rank_out = array_rank;
        Ok(())
    })
}

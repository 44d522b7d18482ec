//! A compound selection read into columns, one per member, from one read: what lets C
//! (and R) read compounds whose members have no common fixed C layout (variable-length
//! strings, sequences), and tables whole without a pass per member.

use crate::dataset::{in_object, selected, Selected};
use crate::errors::*;
use crate::handles::{close_handle, give_handle, out_handle, out_strings};
use crate::native::{is_plain, to_native};
use crate::attribute::h5turbo_attribute;
use crate::objects::h5turbo_object;
use crate::sequences::{give_sequences, out_sequences, h5turbo_sequence};
use crate::strings::give_strings;
use h5turbo_core::prelude::{
    columns_from_values, memory_layout, zeroed_elements, AttributeValue, AxisSelection, Column as CoreColumn, CompoundMember, Datatype,
    DatatypeClass, Error, NumpyDtype, Object, ResultExt, Strings, VlenKind, VlenValue,
};
use std::path::PathBuf;
use std::ffi::{c_char, c_int, c_void};

/// One member's values for every selected element.
enum Column {
    /// A fixed layout: `width` bytes a value, native byte order; fixed-length strings
    /// (`string`) as stored.
    Fixed { bytes: Vec<u8>, width: usize, string: bool },
    /// Variable-length strings.
    Strings(Strings),
    /// Variable-length sequences of `base`, one per element.
    Sequences { values: Vec<VlenValue>, base: Datatype },
    /// A member without a fixed C layout (sequences, references, vlen parts deeper down).
    NoLayout,
}

/// The members of a compound selection, read once; read-only, so usable from many
/// threads at once. Free with h5turbo_columns_free.
pub struct h5turbo_columns {
    /// What was read (the dataset, or an object's attribute) and its file, for the
    /// errors of the column getters.
    what: String,
    file: PathBuf,
    names: Vec<String>,
    columns: Vec<Column>,
    rows: usize,
}

/// The members of a compound type.
fn compound_members(datatype: &Datatype) -> Result<&[CompoundMember], Error> {
    match &datatype.class {
        DatatypeClass::Compound { members } => Ok(members),
        _ => Err(invalid("not a compound")),
    }
}

/// Each member's (in HDF5's order) field of a plain compound's numpy layout: its
/// layout and offset. An {r, i} compound that h5py reads as complex has its two parts
/// back to back.
fn member_fields(members: &[CompoundMember], numpy: &NumpyDtype) -> Result<Vec<(NumpyDtype, usize)>, Error> {
    let fields = match numpy {
        NumpyDtype::Structured { fields, .. } => fields,
        NumpyDtype::Simple(_) if members.len() == 2 => {
            let real = members[0].datatype.numpy_dtype()?;
            let width = width_of(&real)?;
            return Ok(vec![(real, 0), (members[1].datatype.numpy_dtype()?, width)]);
        }
        _ => return Err(Error::unsupported("a compound without a structured layout")),
    };
    members
        .iter()
        .map(|m| {
            let field = fields.iter().find(|(name, _, _)| *name == m.name);
            let (_, dtype, offset) = field.ok_or_else(|| Error::format(format!("compound member {:?} without its field", m.name)))?;
            let offset = usize::try_from(*offset).map_err(|_| Error::format("member offset too large"))?;
            Ok((dtype.clone(), offset))
        })
        .collect()
}

fn width_of(dtype: &NumpyDtype) -> Result<usize, Error> {
    usize::try_from(dtype.itemsize()).map_err(|_| Error::unsupported("member too large"))
}

fn is_fixed_string(m: &CompoundMember) -> bool {
    matches!(m.datatype.class, DatatypeClass::String { .. })
}

/// Where a compound's values come from: whole elements in numpy layout when every
/// member has a fixed layout, else the core's columns.
trait CompoundSource {
    fn elements(&self, n: usize, itemsize: usize) -> Result<Vec<u8>, Error>;
    fn vlen_columns(&self) -> Result<Vec<CoreColumn>, Error>;
}

/// A hyperslab of a compound dataset.
struct Selection<'a> {
    obj: &'a Object,
    sel: &'a [AxisSelection],
    threads: usize,
}

impl CompoundSource for Selection<'_> {
    fn elements(&self, n: usize, itemsize: usize) -> Result<Vec<u8>, Error> {
        let mut elements = zeroed_elements(n, itemsize, "the selected elements")?;
        self.obj.read_numpy(self.sel, &mut elements, self.threads)?;
        Ok(elements)
    }

    fn vlen_columns(&self) -> Result<Vec<CoreColumn>, Error> {
        self.obj.read_vlen_columns(self.sel, self.threads)
    }
}

/// A compound attribute.
struct WholeAttribute<'a> {
    value: &'a AttributeValue,
    obj: &'a Object,
}

impl CompoundSource for WholeAttribute<'_> {
    fn elements(&self, _n: usize, _itemsize: usize) -> Result<Vec<u8>, Error> {
        self.value.numpy_bytes()
    }

    fn vlen_columns(&self) -> Result<Vec<CoreColumn>, Error> {
        columns_from_values(&self.value.datatype, self.value.vlen_values(self.obj.file())?)
    }
}

/// The columns of `n` elements of the compound type `datatype`.
fn read_columns(datatype: &Datatype, n: usize, source: &dyn CompoundSource) -> Result<Vec<Column>, Error> {
    let members = compound_members(datatype)?;
    let numpy = datatype.numpy_dtype()?;
    if !is_plain(&numpy) {
        return vlen_columns(source.vlen_columns()?, datatype, members, n);
    }
    let size = usize::try_from(numpy.itemsize()).map_err(|_| Error::unsupported("element too large"))?;
    let elements = source.elements(n, size)?;
    if n.checked_mul(size) != Some(elements.len()) {
        return Err(Error::format("compound values of an unexpected size"));
    }
    plain_columns(&elements, members, &member_fields(members, &numpy)?, size, n)
}

/// Every member has a fixed layout: each member cut out of the whole elements.
fn plain_columns(elements: &[u8], members: &[CompoundMember], fields: &[(NumpyDtype, usize)], size: usize, n: usize) -> Result<Vec<Column>, Error> {
    members
        .iter()
        .zip(fields)
        .map(|(m, (dtype, offset))| {
            let offset = *offset;
            let width = width_of(dtype)?;
            let outside = || Error::format(format!("compound member {:?} lies outside its element", m.name));
            let end = offset.checked_add(width).filter(|&e| e <= size).ok_or_else(outside)?;
            let mut bytes = zeroed_elements(n, width, "a member's values")?;
            for (value, element) in bytes.chunks_exact_mut(width.max(1)).zip(elements.chunks_exact(size.max(1))) {
                value.copy_from_slice(&element[offset..end]);
            }
            to_native(dtype, &mut bytes, n)?;
            Ok(Column::Fixed { bytes, width, string: is_fixed_string(m) })
        })
        .collect()
}

/// Some members have variable-length parts: the core reads the compound field by
/// field; its columns (in numpy field order) go to their members.
fn vlen_columns(read: Vec<CoreColumn>, dt: &Datatype, members: &[CompoundMember], n: usize) -> Result<Vec<Column>, Error> {
    let layout = memory_layout(dt).ok_or_else(|| Error::format("a compound without its layout"))?;
    let mut columns: Vec<Option<Column>> = members.iter().map(|_| None).collect();
    for (&(index, _), column) in layout.fields.iter().zip(read) {
        let (Some(m), Some(slot)) = (members.get(index), columns.get_mut(index)) else {
            return Err(Error::format("a compound field without its member"));
        };
        *slot = Some(match column {
            CoreColumn::Fixed { itemsize, mut bytes } => {
                to_native(&m.datatype.numpy_dtype()?, &mut bytes, n)?;
                Column::Fixed { bytes, width: itemsize, string: is_fixed_string(m) }
            }
            CoreColumn::Strings(texts) => Column::Strings(texts),
            CoreColumn::Values(values) => match &m.datatype.class {
                DatatypeClass::VarLen { kind: VlenKind::Sequence, base } => Column::Sequences { values, base: (**base).clone() },
                _ => Column::NoLayout,
            },
            CoreColumn::Compound(_) => Column::NoLayout,
        });
    }
    columns.into_iter().map(|c| c.ok_or_else(|| Error::format("a compound member without its column"))).collect()
}

/// Run an entry point on columns: its errors (a NULL output too) name the file and
/// the dataset or attribute the columns were read from.
unsafe fn guard_columns(columns: *const h5turbo_columns, body: impl FnOnce() -> Result<(), Error>) -> c_int {
    let handle = crate::handles::live(columns);
    guard(|| body().map_err(|e| match handle {
        Some(c) => e.in_object(&c.what).in_file(&c.file),
        None => e,
    }))
}

impl h5turbo_columns {
    fn in_dataset<T>(&self, r: Result<T, Error>) -> Result<T, Error> {
        r.in_object(&self.what).in_file(&self.file)
    }

    fn column(&self, member: usize) -> Result<(&str, &Column), Error> {
        let out_of_range = || invalid(format!("member {} of a compound of {}", member, self.columns.len()));
        let column = self.in_dataset(self.columns.get(member).ok_or_else(out_of_range))?;
        Ok((&self.names[member], column))
    }

    /// Member `member`'s values into `out` (checked to hold them all).
    fn copy_values(&self, member: usize, out: *mut u8, out_size: usize) -> Result<(), Error> {
        let (name, column) = self.column(member)?;
        let Column::Fixed { bytes, .. } = column else {
            let why = match column {
                Column::Strings(_) => "is a variable-length string: read it with h5turbo_columns_member_strings",
                Column::Sequences { .. } => "is a variable-length sequence: read it with h5turbo_columns_member_sequences",
                _ => "has variable-length or reference parts: no fixed C layout",
            };
            return self.in_dataset(Err(Error::unsupported(format!("member {:?} {}", name, why))));
        };
        if out_size < bytes.len() {
            return self.in_dataset(Err(invalid(format!("buf_size is {} bytes, the member's values need {}", out_size, bytes.len()))));
        }
        if !bytes.is_empty() {
            let out = out_ptr(out, "buf")?;
            // SAFETY: the caller gives out_size bytes at out, checked to hold them.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len()) };
        }
        Ok(())
    }

    /// Member `member`'s values as texts (a fixed-length or variable-length string member).
    fn texts(&self, member: usize) -> Result<Vec<&[u8]>, Error> {
        let (name, column) = self.column(member)?;
        match column {
            Column::Strings(texts) => Ok(texts.iter().collect()),
            Column::Fixed { width: 0, string: true, .. } => Ok(vec![&[][..]; self.rows]),
            Column::Fixed { bytes, width, string: true } => Ok(bytes.chunks(*width).collect()),
            _ => self.in_dataset(Err(invalid(format!("member {:?} is not a string", name)))),
        }
    }
}

/// Read a hyperslab of a compound dataset once into columns, one per member (numbered
/// as h5turbo_datatype_member numbers them); `*columns` receives them. Then
/// h5turbo_columns_member gives a member with a fixed layout (packed, native byte
/// order; a fixed-length string member as its stored bytes) and
/// h5turbo_columns_member_strings a string member (fixed or variable length). Works
/// for compounds with variable-length members, which h5turbo_dataset_read cannot lay
/// out. start/count/stride and threads as for h5turbo_dataset_read. Free with
/// h5turbo_columns_free.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_dataset_read_columns(
    ds: *const h5turbo_object,
    start: *const u64,
    count: *const u64,
    stride: *const u64,
    columns: *mut *mut h5turbo_columns,
    threads: c_int,
) -> c_int {
    guard_in(ds, || {
        let out = out_handle(columns, "columns")?;
        let Selected { obj, dataset, sel, n, threads } = selected(ds, start, count, stride, threads)?;
        let names = member_names(&dataset.datatype);
        let read = in_object(obj, read_columns(&dataset.datatype, n, &Selection { obj, sel: &sel, threads }))?;
        let (what, file) = (obj.name().to_string(), obj.file().path().to_path_buf());
        give_handle(out, h5turbo_columns { what, file, names, columns: read, rows: n });
        Ok(())
    })
}

/// Read a compound attribute into columns, one per member, as
/// h5turbo_dataset_read_columns reads a dataset's (h5turbo_columns_member and the
/// others then give them); free with h5turbo_columns_free.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_attribute_read_columns(attr: *const h5turbo_attribute, columns: *mut *mut h5turbo_columns) -> c_int {
    guard_attr(attr, || {
        let out = out_handle(columns, "columns")?;
        let attr = deref(attr, "attr")?;
        let (obj, value) = (attr.object(), attr.value());
        let what = format!("{} (attribute '{}')", obj.name(), value.name);
        let file = obj.file().path().to_path_buf();
        let in_attribute = |e: Error| e.in_object(&what).in_file(&file);
        let n = value.len().map_err(in_attribute)?;
        let read = read_columns(&value.datatype, n, &WholeAttribute { value, obj }).map_err(in_attribute)?;
        give_handle(out, h5turbo_columns { names: member_names(&value.datatype), what, file, columns: read, rows: n });
        Ok(())
    })
}

/// The names of a compound's members (none for other types).
fn member_names(datatype: &Datatype) -> Vec<String> {
    compound_members(datatype).map(|m| m.iter().map(|m| m.name.clone()).collect()).unwrap_or_default()
}

/// The number of selected elements (each column's length).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_columns_rows(columns: *const h5turbo_columns, rows: *mut usize) -> c_int {
    guard_columns(columns, || {
        let rows = out_ptr(rows, "rows")?;
        *rows = deref(columns, "columns")?.rows;
        Ok(())
    })
}

/// Copy member `member`'s values (a member with a fixed layout) into `buf` (buf_size
/// bytes, checked): rows x its h5turbo_datatype_member size, native byte order.
#[no_mangle]
pub unsafe extern "C" fn h5turbo_columns_member(columns: *const h5turbo_columns, member: usize, buf: *mut c_void, buf_size: usize) -> c_int {
    guard_columns(columns, || deref(columns, "columns")?.copy_values(member, buf.cast::<u8>(), buf_size))
}

/// Member `member`'s values (a fixed- or variable-length string member) as
/// NUL-terminated C strings; free with h5turbo_strings_free(*strings, *n).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_columns_member_strings(
    columns: *const h5turbo_columns,
    member: usize,
    strings: *mut *mut *mut c_char,
    n: *mut usize,
) -> c_int {
    guard_columns(columns, || {
        let (strings, n) = out_strings(strings, "strings", n, "n")?;
        let texts = deref(columns, "columns")?.texts(member)?;
        give_strings(texts, strings, n)?;
        Ok(())
    })
}

/// Member `member`'s values (a variable-length sequence member of a fixed-layout base)
/// as one block of h5turbo_sequence, as h5turbo_dataset_read_sequences gives them;
/// free with h5turbo_sequences_free(*seqs, *n).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_columns_member_sequences(
    columns: *const h5turbo_columns,
    member: usize,
    seqs: *mut *mut h5turbo_sequence,
    n: *mut usize,
) -> c_int {
    guard_columns(columns, || {
        let (seqs, n) = out_sequences(seqs, n)?;
        let columns = deref(columns, "columns")?;
        match columns.column(member)? {
            (_, Column::Sequences { values, base }) => columns.in_dataset(give_sequences(values.clone(), base, seqs, n)),
            (name, _) => columns.in_dataset(Err(invalid(format!("member {:?} is not a variable-length sequence", name)))),
        }
    })
}

/// Free what h5turbo_dataset_read_columns gave (NULL is fine).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_columns_free(columns: *mut h5turbo_columns) {
    close_handle(columns, "columns")
}

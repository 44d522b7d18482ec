//! Which numpy dtype h5py gives each HDF5 datatype.
//!
//! Mirrors the `py_dtype` methods of h5py's `h5t.pyx` (h5py 3.16), class by class:
//! integers and bitfields by size and byte order only (precision is ignored), floats
//! by the first numpy float type able to hold the layout, enums as their base type
//! except FALSE/TRUE which become bool, compounds {r, i} of equal floats become complex,
//! opaque tags `"NUMPY:<typestr>"` become that dtype, everything else structured.

use crate::format::datatype::{ByteOrder, CharSet, Datatype, DatatypeClass, FloatLayout, ReferenceKind, VlenKind};
use crate::error::{Error, Result};

/// The numpy dtype h5py produces for a datatype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NumpyDtype {
    /// numpy array-protocol typestr with explicit byte order, e.g. "<i4", ">f8", "|u1",
    /// "|b1" (h5py's boolean enum), "<c8" (h5py's complex compound {r,i}), "|S10", "|V16".
    Simple(String),
    /// Compound: fields (name, dtype, byte offset) in HDF5 order, and the total itemsize.
    Structured { fields: Vec<(String, NumpyDtype, u64)>, itemsize: u64 },
    /// HDF5 array type: base dtype and shape (nested arrays flattened, as numpy does).
    SubArray { base: Box<NumpyDtype>, shape: Vec<u64> },
    /// Object dtype with metadata vlen=str (utf8) or vlen=bytes (ascii).
    VlenString { utf8: bool },
    /// Object dtype with metadata vlen=<base dtype>.
    VlenSequence(Box<NumpyDtype>),
    /// Object dtype with metadata ref=h5py.Reference (object) or h5py.RegionReference.
    Reference { region: bool },
}

/// h5py's default field names for complex compounds (`h5py.get_config().complex_names`).
const COMPLEX_NAMES: (&str, &str) = ("r", "i");
/// h5py's default names for the boolean enum (`h5py.get_config().bool_names`).
const BOOL_NAMES: (&str, &str) = ("FALSE", "TRUE");

impl Datatype {
    /// The numpy dtype h5py gives this type, or `Unsupported` where h5py raises.
    pub fn numpy_dtype(&self) -> Result<NumpyDtype> {
        numpy_dtype_of(self)
    }
}

fn numpy_dtype_of(dt: &Datatype) -> Result<NumpyDtype> {
    match &dt.class {
        DatatypeClass::FixedPoint { order, signed, .. } => integer(*order, if *signed { 'i' } else { 'u' }, dt.size),
        DatatypeClass::Bitfield { order, .. } => integer(*order, 'u', dt.size),
        DatatypeClass::FloatingPoint(layout) => float(layout, dt.size),
        DatatypeClass::Time { .. } => Err(Error::unsupported("HDF5 time datatype (h5py has no numpy equivalent)")),
        DatatypeClass::String { .. } => Ok(NumpyDtype::Simple(format!("|S{}", dt.size))),
        DatatypeClass::Opaque { tag } => opaque(tag, dt.size),
        DatatypeClass::Compound { .. } => compound(dt),
        DatatypeClass::Reference { kind } => reference(*kind),
        DatatypeClass::Enum { base, .. } => enumeration(dt, base),
        DatatypeClass::VarLen { kind: VlenKind::String { charset, .. }, .. } => {
            Ok(NumpyDtype::VlenString { utf8: *charset == CharSet::Utf8 })
        }
        DatatypeClass::VarLen { kind: VlenKind::Sequence, base } => {
            Ok(NumpyDtype::VlenSequence(Box::new(base.numpy_dtype()?)))
        }
        DatatypeClass::Array { dims, base } => array(dims, base),
        DatatypeClass::Complex { base } => complex(base, dt.size),
    }
}

fn order_char(order: ByteOrder, size: usize) -> Result<char> {
    // numpy writes '|' for one-byte types whatever the order h5py asked for.
    match order {
        _ if size == 1 => Ok('|'),
        ByteOrder::Little => Ok('<'),
        ByteOrder::Big => Ok('>'),
        ByteOrder::Vax => Err(Error::unsupported("VAX byte order (h5py has no numpy equivalent)")),
    }
}

fn integer(order: ByteOrder, kind: char, size: usize) -> Result<NumpyDtype> {
    if ![1, 2, 4, 8].contains(&size) {
        // h5py asks numpy for e.g. '<i3', which numpy rejects.
        return Err(Error::unsupported(format!("{}-byte integer (numpy has no such type)", size)));
    }
    Ok(NumpyDtype::Simple(format!("{}{}{}", order_char(order, size)?, kind, size)))
}

/// numpy float types as h5py's `_available_ftypes` sees them on this platform:
/// (itemsize, mantissa bits, maxexp, minexp), smallest first.
const NUMPY_FLOATS: &[(usize, i64, i64, i64)] = &[
    (2, 10, 16, -14),
    (4, 23, 128, -126),
    (8, 52, 1024, -1022),
    // long double: x87 80-bit extended stored in 16 bytes (h5py adds the explicit
    // mantissa bit: nmant 63 + 1).
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    (16, 64, 16384, -16382),
    // long double: IEEE binary128 on 64-bit ARM Linux.
    #[cfg(all(target_arch = "aarch64", target_os = "linux"))]
    (16, 112, 16384, -16382),
];

fn float(layout: &FloatLayout, size: usize) -> Result<NumpyDtype> {
    let order = order_char(layout.order, size.max(2))?;
    let bias = layout.exponent_bias as i64;
    let exp_size = layout.exponent_size as u32;
    // h5py: first type with itemsize >= size, enough mantissa bits and exponent range.
    let max_exp = if exp_size < 62 { Some((1i64 << exp_size) - bias - 1) } else { None };
    for &(itemsize, nmant, maxexp, minexp) in NUMPY_FLOATS {
        let fits = itemsize >= size
            && (layout.mantissa_size as i64) <= nmant
            && max_exp.is_some_and(|m| m <= maxexp)
            && 1 - bias >= minexp;
        if fits {
            return Ok(NumpyDtype::Simple(format!("{}f{}", order, itemsize)));
        }
    }
    Err(Error::unsupported(format!(
        "floating-point layout (size {}, exponent {} bits bias {}, mantissa {} bits) has no numpy equivalent",
        size, layout.exponent_size, layout.exponent_bias, layout.mantissa_size
    )))
}

fn opaque(tag: &str, size: usize) -> Result<NumpyDtype> {
    match tag.strip_prefix("NUMPY:") {
        Some(typestr) => numpy_tag_dtype(typestr, size),
        None => Ok(NumpyDtype::Simple(format!("|V{}", size))),
    }
}

/// h5py stores numpy types HDF5 lacks (datetime64, timedelta64) as opaque with tag
/// "NUMPY:<typestr>" and reads them back as `np.dtype(typestr)`. We accept typestrs
/// of the form `[<>|=]?<kind><itemsize>[unit]` whose itemsize matches the opaque size.
fn numpy_tag_dtype(typestr: &str, size: usize) -> Result<NumpyDtype> {
    let unsupported = || Error::unsupported(format!("opaque tag 'NUMPY:{}' of {} bytes", typestr, size));
    let (order, rest) = match typestr.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &typestr[1..]),
        _ => ('=', typestr),
    };
    let kind = rest.chars().next().filter(|c| "biufcmMSV".contains(*c)).ok_or_else(unsupported)?;
    let (digits, unit) = match rest[1..].find('[') {
        Some(i) => (&rest[1..1 + i], &rest[1 + i..]),
        None => (&rest[1..], ""),
    };
    let itemsize: usize = digits.parse().map_err(|_| unsupported())?;
    let unit_ok = unit.is_empty() || (unit.ends_with(']') && "mM".contains(kind));
    if itemsize != size || !unit_ok {
        return Err(unsupported());
    }
    let order = match order {
        _ if itemsize == 1 || "SVb".contains(kind) => '|',
        '=' | '|' => native_order(),
        c => c,
    };
    Ok(NumpyDtype::Simple(format!("{}{}{}{}", order, kind, itemsize, unit)))
}

fn native_order() -> char {
    if cfg!(target_endian = "little") {
        '<'
    } else {
        '>'
    }
}

fn compound(dt: &Datatype) -> Result<NumpyDtype> {
    let layout = memory_layout(dt).ok_or_else(|| Error::format("not a compound type"))?;
    let DatatypeClass::Compound { members } = &dt.class else {
        return Err(Error::format("not a compound type"));
    };
    let fields = layout
        .fields
        .iter()
        .map(|&(index, offset)| Ok((members[index].name.clone(), members[index].datatype.numpy_dtype()?, offset)))
        .collect::<Result<Vec<_>>>()?;
    if let Some(c) = complex_from_fields(&fields) {
        return Ok(c);
    }
    Ok(NumpyDtype::Structured { fields, itemsize: layout.size as u64 })
}

/// True if libhdf5 gives the type a different layout in memory than in the file
/// ("force_conv"): vlen data becomes pointers, references become fixed structs.
pub fn has_objects(dt: &Datatype) -> bool {
    match &dt.class {
        DatatypeClass::VarLen { .. } | DatatypeClass::Reference { .. } => true,
        DatatypeClass::Compound { members } => members.iter().any(|m| has_objects(&m.datatype)),
        DatatypeClass::Array { base, .. } => has_objects(base),
        _ => false,
    }
}

/// Size of one element in libhdf5's memory layout, the one h5py's dtype describes:
/// vlen strings are `char*`, vlen sequences `hvl_t` {size_t, void*}, object
/// references `hobj_ref_t` (8 bytes), region references `hdset_reg_ref_t` (12 bytes).
pub fn memory_size(dt: &Datatype) -> usize {
    let pointer = std::mem::size_of::<usize>();
    match &dt.class {
        DatatypeClass::VarLen { kind: VlenKind::String { .. }, .. } => pointer,
        DatatypeClass::VarLen { kind: VlenKind::Sequence, .. } => 2 * pointer,
        DatatypeClass::Reference { kind: ReferenceKind::Object } => 8,
        DatatypeClass::Reference { kind: ReferenceKind::DatasetRegion } => 12,
        DatatypeClass::Array { dims, base } if has_objects(base) => {
            dims.iter().fold(memory_size(base), |acc, &d| acc.saturating_mul(d as usize))
        }
        DatatypeClass::Compound { .. } if has_objects(dt) => memory_layout(dt).map_or(dt.size, |l| l.size),
        _ => dt.size,
    }
}

/// A compound as h5py sees it: (member index, offset) in h5py's field order, and size.
pub struct CompoundLayout {
    pub fields: Vec<(usize, u64)>,
    pub size: usize,
}

/// libhdf5 (H5T_set_loc to memory) gives a compound holding vlen or reference members
/// a new layout: members sorted by file offset, each shifted by how much the members
/// before it grew or shrank, the size adjusted alike. Other compounds keep the file
/// layout and member order.
pub fn memory_layout(dt: &Datatype) -> Option<CompoundLayout> {
    let DatatypeClass::Compound { members } = &dt.class else { return None };
    if !has_objects(dt) {
        let fields = members.iter().enumerate().map(|(i, m)| (i, m.offset)).collect();
        return Some(CompoundLayout { fields, size: dt.size });
    }
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by_key(|&i| members[i].offset);
    let mut change: i128 = 0;
    let mut fields = Vec::with_capacity(order.len());
    for i in order {
        let m = &members[i];
        fields.push((i, (m.offset as i128 + change).max(0) as u64));
        change += memory_size(&m.datatype) as i128 - m.datatype.size as i128;
    }
    let size = (dt.size as i128 + change).max(0) as usize;
    Some(CompoundLayout { fields, size })
}

/// The dtype of the numpy arrays h5py returns for the elements of a vlen sequence.
/// h5py builds them from the numpy type number for numeric kinds, which drops the
/// byte order: a big-endian base comes back as a native-order array holding the
/// file's (big-endian) bytes unswapped. Other kinds keep the base dtype.
pub fn vlen_element_dtype(base: &NumpyDtype) -> NumpyDtype {
    match base {
        NumpyDtype::Simple(s) if s.len() > 1 && "biufc".contains(&s[1..2]) && !s.starts_with('|') => {
            NumpyDtype::Simple(format!("{}{}", native_order(), &s[1..]))
        }
        other => other.clone(),
    }
}

/// h5py turns a two-field compound named (r, i) with identical float fields of 4, 8
/// or 16 bytes into complex, whatever the offsets (libhdf5 converts on read).
fn complex_from_fields(fields: &[(String, NumpyDtype, u64)]) -> Option<NumpyDtype> {
    let [(rn, NumpyDtype::Simple(rt), _), (in_, NumpyDtype::Simple(it), _)] = fields else {
        return None;
    };
    if (rn.as_str(), in_.as_str()) != COMPLEX_NAMES || rt != it {
        return None;
    }
    let (order, rest) = rt.split_at(1);
    let width: usize = rest.strip_prefix('f')?.parse().ok()?;
    if ![4, 8, 16].contains(&width) {
        return None;
    }
    Some(NumpyDtype::Simple(format!("{}c{}", order, 2 * width)))
}

fn reference(kind: ReferenceKind) -> Result<NumpyDtype> {
    match kind {
        ReferenceKind::Object => Ok(NumpyDtype::Reference { region: false }),
        ReferenceKind::DatasetRegion => Ok(NumpyDtype::Reference { region: true }),
        ReferenceKind::Other(k) => Err(Error::unsupported(format!("reference type {} (HDF5 1.12+ references)", k))),
    }
}

/// True for the enum h5py reads as numpy bool: exactly {FALSE: 0, TRUE: 1}.
pub fn is_bool_enum(dt: &Datatype) -> bool {
    let Some(mut members) = dt.enum_members() else {
        return false;
    };
    members.sort_by_key(|m| m.1);
    members.len() == 2
        && (members[0].0.as_str(), members[0].1) == (BOOL_NAMES.0, 0)
        && (members[1].0.as_str(), members[1].1) == (BOOL_NAMES.1, 1)
}

fn enumeration(dt: &Datatype, base: &Datatype) -> Result<NumpyDtype> {
    if is_bool_enum(dt) {
        return Ok(NumpyDtype::Simple("|b1".to_string()));
    }
    base.numpy_dtype()
}

fn array(dims: &[u64], base: &Datatype) -> Result<NumpyDtype> {
    // numpy folds a subarray of a subarray into one subarray with the shapes joined.
    match base.numpy_dtype()? {
        NumpyDtype::SubArray { base, shape } => {
            Ok(NumpyDtype::SubArray { base, shape: dims.iter().chain(shape.iter()).copied().collect() })
        }
        inner => Ok(NumpyDtype::SubArray { base: Box::new(inner), shape: dims.to_vec() }),
    }
}

fn complex(base: &Datatype, size: usize) -> Result<NumpyDtype> {
    let DatatypeClass::FloatingPoint(layout) = &base.class else {
        return Err(Error::format("complex base type is not floating-point"));
    };
    if ![8, 16, 32].contains(&size) {
        return Err(Error::unsupported(format!("{}-byte complex (numpy has no such type)", size)));
    }
    Ok(NumpyDtype::Simple(format!("{}c{}", order_char(layout.order, size)?, size)))
}

impl NumpyDtype {
    /// Bytes per element of this dtype (numpy `itemsize`; object dtypes are pointers).
    pub fn itemsize(&self) -> u64 {
        match self {
            NumpyDtype::Simple(s) => simple_itemsize(s),
            NumpyDtype::Structured { itemsize, .. } => *itemsize,
            NumpyDtype::SubArray { base, shape } => shape.iter().fold(base.itemsize(), |acc, &d| acc.saturating_mul(d)),
            _ => std::mem::size_of::<usize>() as u64,
        }
    }

    /// A canonical text form, the same that `tests/data/datatypes/gen_fixtures.py`
    /// computes from an h5py dtype: typestr for simple types, `{name:dtype@offset,...}/itemsize`
    /// for structured ones, `(d0,d1)base` for subarrays, `vlen-str`, `vlen-bytes`,
    /// `vlen[base]`, `ref-object`, `ref-region`.
    pub fn to_descr_string(&self) -> String {
        match self {
            NumpyDtype::Simple(s) => s.clone(),
            NumpyDtype::Structured { fields, itemsize } => {
                let parts: Vec<String> =
                    fields.iter().map(|(n, d, o)| format!("{}:{}@{}", n, d.to_descr_string(), o)).collect();
                format!("{{{}}}/{}", parts.join(","), itemsize)
            }
            NumpyDtype::SubArray { base, shape } => {
                let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
                format!("({}){}", dims.join(","), base.to_descr_string())
            }
            NumpyDtype::VlenString { utf8: true } => "vlen-str".to_string(),
            NumpyDtype::VlenString { utf8: false } => "vlen-bytes".to_string(),
            NumpyDtype::VlenSequence(base) => format!("vlen[{}]", base.to_descr_string()),
            NumpyDtype::Reference { region: false } => "ref-object".to_string(),
            NumpyDtype::Reference { region: true } => "ref-region".to_string(),
        }
    }
}

fn simple_itemsize(typestr: &str) -> u64 {
    let digits: String = typestr.chars().skip(2).take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().unwrap_or(0)
}

/// Metadata h5py attaches to the top-level numpy dtype, beyond what [`NumpyDtype`] says
/// (vlen and reference metadata are NumpyDtype variants already).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DtypeMetadata {
    /// Fixed-length strings: `h5py_encoding` ('ascii' or 'utf-8').
    StringEncoding(CharSet),
    /// Enums other than h5py's bool: `enum` = {name: value}.
    Enum(Vec<(String, i128)>),
    /// Opaque types tagged "NUMPY:...": `h5py_opaque` = True.
    NumpyOpaque,
}

impl Datatype {
    /// The dtype metadata h5py gives this type (`h5py.check_string_dtype`,
    /// `h5py.check_enum_dtype`, `h5py_opaque`), if any.
    pub fn h5py_metadata(&self) -> Option<DtypeMetadata> {
        match &self.class {
            DatatypeClass::String { charset, .. } => Some(DtypeMetadata::StringEncoding(*charset)),
            DatatypeClass::Enum { .. } if !is_bool_enum(self) => self.enum_members().map(DtypeMetadata::Enum),
            DatatypeClass::Opaque { tag } if tag.starts_with("NUMPY:") => Some(DtypeMetadata::NumpyOpaque),
            _ => None,
        }
    }
}

impl DtypeMetadata {
    /// Canonical text, as `gen_fixtures.py` writes it: `enc:ascii`, `enc:utf-8`,
    /// `enum:NAME=value,...` (sorted by value, then name), `opaque`.
    pub fn to_descr_string(&self) -> String {
        match self {
            DtypeMetadata::StringEncoding(CharSet::Ascii) => "enc:ascii".to_string(),
            DtypeMetadata::StringEncoding(CharSet::Utf8) => "enc:utf-8".to_string(),
            DtypeMetadata::Enum(members) => {
                let mut sorted: Vec<&(String, i128)> = members.iter().collect();
                sorted.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
                let parts: Vec<String> = sorted.iter().map(|(n, v)| format!("{}={}", n, v)).collect();
                format!("enum:{}", parts.join(","))
            }
            DtypeMetadata::NumpyOpaque => "opaque".to_string(),
        }
    }
}

//! Oxford Nanopore fast5 files over the object model: where the reads are.
//!
//! Multi-read files hold `read_<id>/Raw` (the `Signal` dataset, the read's attributes)
//! and `read_<id>/channel_id` per read; single-read files (v0.6 to 2.x) hold
//! `Raw/Reads/Read_<n>` and one `UniqueGlobalKey/channel_id`. The layout is decided as
//! ont_fast5_api decides it: the root's `file_type` attribute, else the top-level
//! groups. The Python reader (python/h5turbo/formats/fast5.py) turns these into reads;
//! this module lets the bindings walk many files without the GIL.

use crate::engine::reduce::half_to_f32;
use crate::engine::AxisSelection;
use crate::error::{Error, ErrorKind, Result, ResultExt};
use crate::file::{AttributeValue, Dataset, File, Object};
use crate::format::dataspace::DataspaceKind;
use crate::format::datatype::{ByteOrder, DatatypeClass, FloatLayout, StringPadding};
use crate::format::links::LinkTarget;
use crate::convert::values::VlenValue;
use crate::io::{FileSource, MemSource, ReadAt};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// Files up to this size are read whole with one read and parsed from memory: a
/// single-read file's metadata is some sixty small structures, each otherwise its own
/// pread (more kernel time than decoding its signal). Larger (multi-read) files are
/// read where needed, as any HDF5 file.
const READ_WHOLE_BYTES: u64 = 1 << 20;

/// Files opened ahead at most (each holds a descriptor until its turn).
const MAX_FILES_AHEAD: usize = 64;

/// Open a fast5 file for reading its reads (see `READ_WHOLE_BYTES`).
pub fn open_file(path: &Path) -> Result<File> {
    file_from_source(FileSource::open(path)?, path)
}

/// Open a fast5 file's bytes and hint its first `hint` bytes to the system: for
/// callers that open many files first and parse them after (`file_from_source`), so
/// that a cold file is read while the ones before it are parsed.
pub fn open_hinted(path: &Path, hint: u64) -> Result<FileSource> {
    let source = FileSource::open(path)?;
    source.prefetch(0, hint.min(source.len()));
    Ok(source)
}

/// A fast5 file over opened bytes (see `READ_WHOLE_BYTES`).
pub fn file_from_source(source: FileSource, path: &Path) -> Result<File> {
    if source.len() > READ_WHOLE_BYTES {
        return File::from_source(Arc::new(source), path);
    }
    let bytes = source.read_whole()?;
    File::from_source(Arc::new(MemSource::new(bytes)), path)
}

/// Fast5 files opened in turn, the next ones opened early and their bytes hinted to
/// the system (`ReadAt::prefetch`, from the start of each file: the superblock, the
/// object headers and the chunk index come first, then the signals) while the current
/// ones are parsed and decoded: files ahead up to `window` bytes of hints, and at most
/// `MAX_FILES_AHEAD` files. A window of 0 opens each file only when its turn comes.
pub struct OpenAhead<I> {
    paths: I,
    window: u64,
    queue: std::collections::VecDeque<(std::path::PathBuf, Result<FileSource>, u64)>,
    /// Bytes hinted for the files in `queue`.
    hinted: u64,
}

impl<I: Iterator<Item = std::path::PathBuf>> OpenAhead<I> {
    pub fn new(paths: I, window: u64) -> Self {
        OpenAhead { paths, window, queue: Default::default(), hinted: 0 }
    }

    fn fill(&mut self) {
        while self.queue.is_empty() || (self.queue.len() < MAX_FILES_AHEAD && self.hinted < self.window) {
            let Some(path) = self.paths.next() else { return };
            let source = open_hinted(&path, self.window);
            let hint = source.as_ref().map_or(0, |s| s.len().min(self.window));
            self.hinted += hint;
            self.queue.push_back((path, source, hint));
        }
    }
}

impl<I: Iterator<Item = std::path::PathBuf>> Iterator for OpenAhead<I> {
    /// A file's path and the file opened for its reads.
    type Item = (std::path::PathBuf, Result<File>);

    fn next(&mut self) -> Option<Self::Item> {
        self.fill();
        let (path, source, hint) = self.queue.pop_front()?;
        self.hinted -= hint;
        let file = source.and_then(|s| file_from_source(s, &path));
        Some((path, file))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    SingleRead,
    MultiRead,
}

/// The read groups of one open fast5 file, in h5py's iteration order.
pub struct Fast5Index {
    pub layout: Layout,
    /// Names of the read groups inside `container` (root or `Raw/Reads`).
    pub names: Vec<String>,
    /// Where each read group's object header lies (None: a soft link), from the
    /// container's listing: reads taken in this order find their metadata together.
    addresses: Vec<Option<u64>>,
    container: Object,
    /// A single-read file's one channel group.
    shared_channel: Option<Object>,
}

/// One read's groups: `raw` holds `Signal` and the read's attributes.
pub struct ReadGroups {
    /// The read group's path in the file, by the link it is listed under (a group
    /// reached by a soft or a second hard link is that read, as ont_fast5_api names it).
    pub name: String,
    pub raw: Result<Object>,
    pub channel: Option<Object>,
}

impl Fast5Index {
    pub fn open(file: &File) -> Result<Fast5Index> {
        let root = file.root()?;
        let top = read_links(&root)?;
        let top_names: Vec<String> = top.iter().map(|(name, _)| name.clone()).collect();
        match layout_of(&root, &top_names)? {
            Layout::MultiRead => {
                let (names, addresses) = top.into_iter().filter(|(n, _)| n.starts_with("read_")).unzip();
                Ok(Fast5Index { layout: Layout::MultiRead, names, addresses, container: root, shared_channel: None })
            }
            Layout::SingleRead => {
                let channel = child_if_present(&file.get("/UniqueGlobalKey")?, "channel_id")?;
                if !top_names.iter().any(|n| n == "Raw") {
                    return Err(not_found(file, "no Raw/Reads group (a file without raw signal)"));
                }
                let container = file.get("/Raw/Reads")?;
                let (names, addresses) = read_links(&container)?.into_iter().unzip();
                Ok(Fast5Index { layout: Layout::SingleRead, names, addresses, container, shared_channel: channel })
            }
        }
    }

    /// The read groups `names` of a multi-read file (read i of the index is names[i]),
    /// each found by name when it is read (a lookup in the root group's own index),
    /// without listing the file's reads: for fetching reads by id from files indexed
    /// once. Listing a multi-read file again for every read fetched made each fetch
    /// cost a walk of thousands of links.
    pub fn multi_reads_named(file: &File, names: Vec<String>) -> Result<Fast5Index> {
        let addresses = vec![None; names.len()];
        Ok(Fast5Index { layout: Layout::MultiRead, names, addresses, container: file.root()?, shared_channel: None })
    }

    /// The reads `asked` (id, number in the file's listing when it was indexed) of a
    /// file indexed before as `layout`, and where each is in the index returned: a
    /// multi-read file's groups (`read_<id>`) looked up by name in the order asked,
    /// without listing the file again; a single-read file listed, its numbers kept.
    pub fn for_reads(file: &File, layout: Layout, asked: &[(&str, usize)]) -> Result<(Fast5Index, Vec<usize>)> {
        match layout {
            Layout::MultiRead => {
                let names = asked.iter().map(|(id, _)| format!("read_{}", id)).collect();
                Ok((Fast5Index::multi_reads_named(file, names)?, (0..asked.len()).collect()))
            }
            Layout::SingleRead => {
                let index = Fast5Index::open(file)?;
                let numbers = index.numbers_of(asked)?;
                Ok((index, numbers))
            }
        }
    }

    /// Where the reads `asked` (id, number in the file's listing when it was indexed)
    /// are in this listed index: their numbers, each checked to still hold the id asked
    /// (a file rewritten since it was indexed would otherwise give another read under
    /// that id).
    pub fn numbers_of(&self, asked: &[(&str, usize)]) -> Result<Vec<usize>> {
        let changed = |what: String| Error::format(format!("{}: the file changed since it was indexed", what)).in_file(self.container.file().path());
        asked
            .iter()
            .map(|&(id, i)| {
                if i >= self.len() {
                    return Err(changed(format!("read '{}' was read {} of the file, which now has {}", id, i, self.len())));
                }
                let now = self.read_id(i)?;
                if now != id {
                    return Err(changed(format!("read {} of the file is now '{}', not '{}'", i, now, id)));
                }
                Ok(i)
            })
            .collect()
    }

    /// The read ids of the reads, in order (see `read_id`).
    pub fn read_ids(&self) -> Result<Vec<String>> {
        (0..self.len()).map(|i| self.read_id(i)).collect()
    }

    /// Read `i`'s id: a multi-read file's from its group name (`read_<id>`, what a
    /// fetch looks up), a single-read file's from the read's `read_id` attribute.
    fn read_id(&self, i: usize) -> Result<String> {
        match self.names[i].strip_prefix("read_") {
            Some(id) if self.layout == Layout::MultiRead => Ok(id.to_string()),
            _ => {
                let raw = self.read_groups(i)?.raw?;
                if !raw.has_attribute("read_id")? {
                    if let Some(id) = legacy_read_id(&raw) {
                        return Ok(id);
                    }
                }
                id_text(&raw, &raw.attribute("read_id")?)
                    .ok_or_else(|| Error::format(format!("{}: read_id is not a string or an integer", raw.name())))
            }
        }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Reads `reads` in the order their groups lie in the file (soft links last, in
    /// file order). A multi-read file lists its reads by name, which scatters them
    /// across the file; taken by address, neighbouring reads share metadata blocks
    /// (fewer and sequential metadata reads, warm and cold).
    pub fn by_address(&self, reads: std::ops::Range<usize>) -> Vec<usize> {
        let mut order: Vec<usize> = reads.filter(|&i| i < self.names.len()).collect();
        order.sort_by_key(|&i| (self.position(i), i));
        order
    }

    /// Where read `i`'s group lies in the file, to take reads in: its address (a soft
    /// link, or no such read, after every stored group).
    pub fn position(&self, i: usize) -> u64 {
        self.addresses.get(i).copied().flatten().unwrap_or(u64::MAX)
    }

    /// The path of the read group listed as `name` (by that link, not its target's).
    fn path_of(&self, name: &str) -> String {
        match self.container.name() {
            "/" => format!("/{}", name),
            parent => format!("{}/{}", parent, name),
        }
    }

    /// The groups of read `i` (0 <= i < len()).
    pub fn read_groups(&self, i: usize) -> Result<ReadGroups> {
        let name = self.names.get(i).ok_or_else(|| Error::invalid_argument(format!("no read {}", i)))?;
        let path = self.path_of(name);
        let group = self.container.child(name)?;
        Ok(match self.layout {
            Layout::SingleRead => ReadGroups { name: path, raw: Ok(group), channel: self.shared_channel.clone() },
            Layout::MultiRead => {
                let channel = child_if_present(&group, "channel_id")?;
                let raw = child_if_present(&group, "Raw")?
                    .ok_or_else(|| Error::not_found(format!("no Raw group in {}", path)));
                ReadGroups { name: path, raw, channel }
            }
        })
    }
}

/// A fast5 file's layout and read ids (`Fast5Index::read_ids`), for `ReadLocations`.
pub fn file_read_ids(path: &Path) -> Result<(Layout, Vec<String>)> {
    let ids = || {
        let file = open_file(path)?;
        let index = Fast5Index::open(&file)?;
        Ok((index.layout, index.read_ids()?))
    };
    ids().in_file(path)
}

/// Where each read of many fast5 files is, by id: built once from every file's read
/// ids (`file_read_ids`, which the bindings run in parallel), then looked up to fetch
/// reads in any order. Files that could not be indexed are left out; the first of
/// their errors explains a read id not found.
#[derive(Default)]
pub struct ReadLocations {
    /// read id -> (file, read in the file's listing); the first file holding an id wins.
    reads: HashMap<Box<str>, (usize, usize)>,
    /// Each file's layout (None: it could not be indexed).
    layouts: Vec<Option<Layout>>,
    /// The files that could not be indexed (by number), each with its error.
    unindexed: Vec<(usize, String)>,
}

impl ReadLocations {
    /// From each file's `file_read_ids`, in file order.
    pub fn from_files(files: Vec<Result<(Layout, Vec<String>)>>) -> ReadLocations {
        let mut index = ReadLocations { layouts: vec![None; files.len()], ..Default::default() };
        for (file_no, ids) in files.into_iter().enumerate() {
            match ids {
                Ok((layout, ids)) => {
                    index.layouts[file_no] = Some(layout);
                    for (read, id) in ids.into_iter().enumerate() {
                        index.reads.entry(id.into_boxed_str()).or_insert((file_no, read));
                    }
                }
                Err(e) => index.unindexed.push((file_no, e.to_string())),
            }
        }
        index
    }

    /// (file, read in the file's listing) of read `id`.
    pub fn find(&self, id: &str) -> Result<(usize, usize)> {
        self.reads.get(id).copied().ok_or_else(|| {
            let mut message = format!("no read '{}' in the fast5 files", id);
            if let Some((_, first)) = self.unindexed.first() {
                message += &format!(" ({} files could not be indexed, the first: {})", self.unindexed.len(), first);
            }
            Error::not_found(message)
        })
    }

    /// File `file_no`'s layout; None when it could not be indexed (or there is no such file).
    pub fn layout(&self, file_no: usize) -> Option<Layout> {
        self.layouts.get(file_no).copied().flatten()
    }

    /// The reads indexed (distinct ids).
    pub fn len(&self) -> usize {
        self.reads.len()
    }

    pub fn is_empty(&self) -> bool {
        self.reads.is_empty()
    }

    /// Files that could not be indexed, and the first one's error.
    pub fn unindexed(&self) -> (usize, Option<&str>) {
        (self.unindexed.len(), self.unindexed.first().map(|(_, e)| e.as_str()))
    }

    /// Each file that could not be indexed (its number in file order) and its error.
    pub fn unindexed_files(&self) -> &[(usize, String)] {
        &self.unindexed
    }

    pub fn contains(&self, id: &str) -> bool {
        self.reads.contains_key(id)
    }

    /// Every read id with its place, in file order then read order.
    pub fn in_file_order(&self) -> Vec<(&str, usize, usize)> {
        let mut all: Vec<(&str, usize, usize)> = self.reads.iter().map(|(id, &(f, r))| (&**id, f, r)).collect();
        all.sort_unstable_by_key(|&(_, f, r)| (f, r));
        all
    }
}

/// One read's values as every binding needs them: its group path, its signal, the
/// attributes of its raw group (`read_id`, `read_number`, `start_time`, `duration` ...)
/// and of its channel group (`digitisation`, `offset`, `range`, `sampling_rate`,
/// `channel_number` ...). The objects stay with the attributes for values that need
/// the file (variable-length strings). `S` is the signal: decoded samples
/// (`read_record`), or the dataset still to decode (`locate_record`), so a caller can
/// decode every signal of a batch into memory of its own.
pub struct ReadRecord<S = Vec<i16>> {
    pub name: String,
    pub layout: Layout,
    pub signal: Result<S>,
    pub attrs: Option<(Object, Vec<AttributeValue>)>,
    pub channel: Option<(Object, Vec<AttributeValue>)>,
}

impl<S> ReadRecord<S> {
    /// A read whose groups could not be read: the error in place of its signal.
    pub fn failed(index: &Fast5Index, i: usize, error: Error) -> ReadRecord<S> {
        let name = index.names.get(i).map(|n| index.path_of(n)).unwrap_or_default();
        ReadRecord { name, layout: index.layout, signal: Err(error), attrs: None, channel: None }
    }

    /// The same read with its signal turned into another (decoded, say); the
    /// attributes go along unchanged.
    pub fn map_signal<T>(self, f: impl FnOnce(S) -> Result<T>) -> ReadRecord<T> {
        ReadRecord { name: self.name, layout: self.layout, signal: self.signal.and_then(f), attrs: self.attrs, channel: self.channel }
    }

    /// A raw-group attribute by name.
    pub fn attribute(&self, name: &str) -> Option<&AttributeValue> {
        self.attrs.as_ref()?.1.iter().find(|v| v.name == name)
    }

    /// A channel-group attribute by name.
    pub fn channel_attribute(&self, name: &str) -> Option<&AttributeValue> {
        self.channel.as_ref()?.1.iter().find(|v| v.name == name)
    }

    /// A channel-group attribute as text: a fixed- or variable-length string's bytes,
    /// or a number in decimal, a float's whole part as ont_fast5_api's int() takes it
    /// (files store `channel_number` each of these ways).
    pub fn channel_text(&self, name: &str) -> Option<Vec<u8>> {
        let value = self.channel_attribute(name)?;
        match single_value(value) {
            Some(Scalar::Text(bytes)) => Some(bytes),
            Some(number) => match number.as_integer() {
                Some(v) => Some(v.to_string().into_bytes()),
                None => number.as_f64().filter(|f| f.is_finite()).map(|f| format!("{}", f.trunc()).into_bytes()),
            },
            None => attribute_text(&self.channel.as_ref()?.0, value),
        }
    }

    /// The read's id as `Fast5Index::read_ids` gives it: a multi-read file's from its
    /// group's name (`read_<id>`, what ont_fast5_api and a fetch by id go by, whatever
    /// the group's `read_id` attribute says), a single-read file's `read_id` attribute
    /// (a fixed- or variable-length string; bytes that are not UTF-8 replaced by U+FFFD;
    /// where it has none, in files before format 1.1, the file's name: see
    /// `legacy_read_id`).
    pub fn read_id(&self) -> Option<String> {
        if self.layout == Layout::MultiRead {
            if let Some(id) = self.name.strip_prefix("/read_") {
                return Some(id.to_string());
            }
        }
        let (obj, _) = self.attrs.as_ref()?;
        let Some(value) = self.attribute("read_id") else {
            return if self.layout == Layout::SingleRead { legacy_read_id(obj) } else { None };
        };
        id_text(obj, value)
    }
}

/// A `read_id` attribute as the id: a string (bytes that are not UTF-8 replaced by
/// U+FFFD), or an integer in decimal (ont_fast5_api gives it as that int).
fn id_text(obj: &Object, value: &AttributeValue) -> Option<String> {
    match attribute_text(obj, value) {
        Some(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        None => Some(single_value(value)?.as_integer()?.to_string()),
    }
}

/// The id ont_fast5_api gives a single-read file's read that has no `read_id`
/// attribute: in files before format 1.1 (a root `file_version` below 1.1, or none)
/// the file's name, `ch3_read7.fast5`; None in later files, which ont_fast5_api
/// refuses, and where the version cannot be read.
fn legacy_read_id(obj: &Object) -> Option<String> {
    let root = obj.file().root().ok()?;
    if root.has_attribute("file_version").ok()? {
        let value = root.attribute("file_version").ok()?;
        let text = match single_value(&value) {
            Some(Scalar::Text(bytes)) => String::from_utf8(bytes).ok()?,
            Some(number) => format!("{}", number.as_f64()?),
            None => String::from_utf8(attribute_text(&root, &value)?).ok()?,
        };
        if !version_before_1_1(&text)? {
            return None;
        }
    }
    obj.file().path().file_name().map(|name| name.to_string_lossy().into_owned())
}

/// Whether a version "major.minor[...]" is below 1.1; None if it is not one.
fn version_before_1_1(text: &str) -> Option<bool> {
    let mut parts = text.trim().split('.');
    let major: u64 = parts.next()?.parse().ok()?;
    let minor: u64 = match parts.next() {
        Some(minor) => minor.parse().ok()?,
        None => 0,
    };
    Some((major, minor) < (1, 1))
}

/// A string attribute of `obj` as bytes: a scalar NUL-padded fixed-length one without
/// its trailing NULs, or a single variable-length one (from the file's global heap).
fn attribute_text(obj: &Object, value: &AttributeValue) -> Option<Vec<u8>> {
    match scalar(value) {
        Some(Scalar::Text(bytes)) => Some(bytes),
        Some(_) => None,
        None => match value.vlen_values(obj.file()).ok()?.as_slice() {
            [VlenValue::String(bytes)] => Some(bytes.clone()),
            _ => None,
        },
    }
}

/// Read `i` of `index`: signal, raw-group and channel attributes. An error here is a
/// broken group or attribute; a broken signal alone is kept in `signal`.
pub fn read_record(index: &Fast5Index, i: usize) -> Result<ReadRecord> {
    Ok(locate_record(index, i)?.map_signal(|signal| signal.read()))
}

/// As `read_record`, with the signal found and checked but not yet decoded.
pub fn locate_record(index: &Fast5Index, i: usize) -> Result<ReadRecord<SignalDataset>> {
    let groups = index.read_groups(i)?;
    let channel = match groups.channel {
        Some(obj) => Some(with_attributes(obj)?),
        None => None,
    };
    let raw = groups.raw?;
    let signal = SignalDataset::find(&raw);
    Ok(ReadRecord { name: groups.name, layout: index.layout, signal, attrs: Some(with_attributes(raw)?), channel })
}

fn with_attributes(obj: Object) -> Result<(Object, Vec<AttributeValue>)> {
    let values = obj.all_attributes()?;
    Ok((obj, values))
}

/// A scalar attribute of the kinds fast5 files carry, decoded without the general path.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    /// value, and the byte size (1, 2, 4 or 8)
    Signed(i64, usize),
    Unsigned(u64, usize),
    F32(f32),
    F64(f64),
    /// a NUL-padded fixed-length string without its trailing NULs, as numpy drops them
    Text(Vec<u8>),
}

impl Scalar {
    /// The value as a float64 (text: None).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Scalar::Signed(v, _) => Some(v as f64),
            Scalar::Unsigned(v, _) => Some(v as f64),
            Scalar::F32(v) => Some(f64::from(v)),
            Scalar::F64(v) => Some(v),
            Scalar::Text(_) => None,
        }
    }

    /// An integer value as i128 (floats and text: None).
    pub fn as_integer(&self) -> Option<i128> {
        match *self {
            Scalar::Signed(v, _) => Some(i128::from(v)),
            Scalar::Unsigned(v, _) => Some(i128::from(v)),
            _ => None,
        }
    }
}

/// A scalar integer, IEEE float (half, single, double; either byte order) or
/// NUL-padded fixed-length string; None for anything else (arrays, other layouts,
/// variable-length strings).
pub fn scalar(value: &AttributeValue) -> Option<Scalar> {
    if value.dataspace.kind != DataspaceKind::Scalar {
        return None;
    }
    decode_one(value)
}

/// As `scalar`, also for an array of one element (some writers store the channel's
/// numbers so; h5py gives them as 1-element arrays, C takes their one value).
pub fn single_value(value: &AttributeValue) -> Option<Scalar> {
    match value.dataspace.kind {
        DataspaceKind::Simple if value.dataspace.dims.iter().product::<u64>() == 1 => decode_one(value),
        _ => scalar(value),
    }
}

/// The first element of `value` decoded (see `scalar`).
fn decode_one(value: &AttributeValue) -> Option<Scalar> {
    let size = value.datatype.size;
    let stored = value.raw.get(..size)?;
    let mut le = [0u8; 8];
    if size <= 8 {
        le[..size].copy_from_slice(stored);
        if byte_order(&value.datatype.class) == Some(ByteOrder::Big) {
            le[..size].reverse();
        }
    }
    let raw = &le[..size.min(8)];
    match &value.datatype.class {
        DatatypeClass::FixedPoint { signed, bit_offset: 0, precision, .. }
            if usize::from(*precision) == size * 8 && matches!(size, 1 | 2 | 4 | 8) =>
        {
            let fill = if *signed && raw[size - 1] & 0x80 != 0 { 0xff } else { 0 };
            le[size..].fill(fill);
            Some(if *signed {
                Scalar::Signed(i64::from_le_bytes(le), size)
            } else {
                Scalar::Unsigned(u64::from_le_bytes(le), size)
            })
        }
        DatatypeClass::String { padding: StringPadding::NullTerminate | StringPadding::NullPad, .. } => {
            // the bytes the general path would put in a numpy 'S' array
            let mut bytes = value.numpy_bytes().ok()?;
            let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            bytes.truncate(end);
            Some(Scalar::Text(bytes))
        }
        DatatypeClass::FloatingPoint(layout) if is_ieee(layout, size) => match *raw {
            [a, b] => Some(Scalar::F32(half_to_f32(u16::from_le_bytes([a, b])))),
            [a, b, c, d] => Some(Scalar::F32(f32::from_le_bytes([a, b, c, d]))),
            [a, b, c, d, e, f, g, h] => Some(Scalar::F64(f64::from_le_bytes([a, b, c, d, e, f, g, h]))),
            _ => None,
        },
        _ => None,
    }
}

/// The byte order of an integer or a float type.
fn byte_order(class: &DatatypeClass) -> Option<ByteOrder> {
    match class {
        DatatypeClass::FixedPoint { order, .. } => Some(*order),
        DatatypeClass::FloatingPoint(layout) => Some(layout.order),
        _ => None,
    }
}

/// IEEE binary16, binary32 or binary64, laid out as everyone writes them (in either
/// byte order).
fn is_ieee(l: &FloatLayout, size: usize) -> bool {
    let (precision, sign, exponent_size, mantissa_size, bias) = match size {
        2 => (16, 15, 5, 10, 15),
        4 => (32, 31, 8, 23, 127),
        8 => (64, 63, 11, 52, 1023),
        _ => return false,
    };
    l.bit_offset == 0
        && l.precision == precision
        && l.sign_location == sign
        && l.exponent_location == mantissa_size
        && l.exponent_size == exponent_size
        && l.mantissa_location == 0
        && l.mantissa_size == mantissa_size
        && l.exponent_bias == bias
        && l.normalization == 2
}

/// The raw signal of a read: the 1-d integer `Signal` dataset in `raw`, as int16.
pub fn read_signal(raw: &Object) -> Result<Vec<i16>> {
    SignalDataset::find(raw)?.read()
}

/// A read's `Signal` dataset, checked to be 1-d int16, its length known: decoded
/// into a fresh vector (`read`) or into the caller's memory (`read_into`).
pub struct SignalDataset {
    signal: Object,
    dataset: Arc<Dataset>,
    order: ByteOrder,
    len: usize,
}

impl SignalDataset {
    /// The `Signal` dataset in `raw`.
    pub fn find(raw: &Object) -> Result<SignalDataset> {
        let signal = match raw.child("Signal") {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(Error::not_found(format!("no Raw Signal dataset in {}", raw.name())))
            }
            other => other?,
        };
        let dataset = signal.dataset()?;
        let order = match dataset.datatype.class {
            DatatypeClass::FixedPoint { order, signed: true, .. } if dataset.datatype.size == 2 => order,
            _ => return Err(Error::unsupported(format!("{}: Signal is not int16", signal.name()))),
        };
        let &[len] = dataset.shape() else {
            return Err(Error::format(format!("{}: Signal is not 1-d (shape {:?})", signal.name(), dataset.shape())));
        };
        let len = usize::try_from(len)
            .ok()
            .filter(|n| n.checked_mul(2).is_some())
            .ok_or_else(|| Error::format(format!("{}: Signal too long ({} samples)", signal.name(), len)))?;
        // The chunk index read now, beside the read's other metadata (in the blocks
        // just read), not when the signal is decoded, by then most likely evicted.
        dataset.chunk_index(signal.file()).in_object(signal.name()).in_file(signal.file().path())?;
        Ok(SignalDataset { signal, dataset, order, len })
    }

    /// The number of samples.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The dataset's path in the file.
    pub fn name(&self) -> &str {
        self.signal.name()
    }

    /// The samples in a new vector.
    pub fn read(self) -> Result<Vec<i16>> {
        let mut values = crate::buffer::zeroed_vec(self.len, self.signal.name())?;
        self.read_into(&mut values)?;
        Ok(values)
    }

    /// The samples into `out` (exactly `len()` of them).
    pub fn read_into(&self, out: &mut [i16]) -> Result<()> {
        if out.len() != self.len {
            return Err(Error::invalid_argument(format!("{} samples to read into {}", self.len, out.len())));
        }
        // Decoded straight into the result (no second buffer), past the decoded-chunk
        // cache: each signal is read once.
        let sel = [AxisSelection::Range { start: 0, count: self.len as u64, step: 1 }];
        let file = self.signal.file();
        self.dataset.read_raw_once(file, &sel, as_bytes_mut(out), 1).in_object(self.signal.name()).in_file(file.path())?;
        if self.order == ByteOrder::Big {
            out.iter_mut().for_each(|v| *v = i16::from_be(*v));
        } else if cfg!(target_endian = "big") {
            out.iter_mut().for_each(|v| *v = i16::from_le(*v));
        }
        Ok(())
    }
}

/// The bytes of an int16 slice, to decode into.
fn as_bytes_mut(values: &mut [i16]) -> &mut [u8] {
    // SAFETY: u8 has no alignment or validity requirement, every byte pattern is a
    // valid i16, and the length covers exactly the slice's memory.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(values)) }
}

fn layout_of(root: &Object, top: &[String]) -> Result<Layout> {
    if root.attribute_names()?.iter().any(|n| n == "file_type") {
        match string_attribute(root, "file_type")?.as_str() {
            "multi-read" => return Ok(Layout::MultiRead),
            "single-read" => return Ok(Layout::SingleRead),
            other => return Err(Error::unsupported(format!("fast5 file_type '{}' (only single-read and multi-read)", other))),
        }
    }
    if top.is_empty() || top.iter().any(|n| n.starts_with("read_")) {
        return Ok(Layout::MultiRead);
    }
    if top.iter().any(|n| n == "UniqueGlobalKey") {
        return Ok(Layout::SingleRead);
    }
    Err(Error::format("neither a single-read (UniqueGlobalKey) nor a multi-read (read_*) fast5 file")
        .in_file(root.file().path()))
}

/// A scalar string attribute (fixed or variable length), NULs and padding trimmed.
fn string_attribute(obj: &Object, name: &str) -> Result<String> {
    let value = obj.attribute(name)?;
    let bytes = match value.datatype.class {
        DatatypeClass::String { .. } => value.numpy_bytes()?,
        DatatypeClass::VarLen { .. } => match value.vlen_values(obj.file())?.into_iter().next() {
            Some(VlenValue::String(b)) => b,
            _ => return Err(Error::format(format!("attribute '{}' is not a string", name))),
        },
        _ => return Err(Error::format(format!("attribute '{}' is not a string", name))),
    };
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.trim_end_matches(['\0', ' ']).to_string())
}

/// The group's links in h5py's order, with each hard link's object header address
/// (None for soft and external links: an external one is listed, as ont_fast5_api
/// lists it, and is that read's error when read: fast5 reads do not follow them).
fn read_links(group: &Object) -> Result<Vec<(String, Option<u64>)>> {
    Ok(group
        .links()?
        .into_iter()
        .map(|l| match l.target {
            LinkTarget::Hard(address) => (l.name, Some(address)),
            LinkTarget::Soft(_) | LinkTarget::External { .. } | LinkTarget::Unreadable { .. } => (l.name, None),
        })
        .collect())
}

fn child_if_present(group: &Object, name: &str) -> Result<Option<Object>> {
    match group.child(name) {
        Ok(obj) => Ok(Some(obj)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn not_found(file: &File, what: &str) -> Error {
    Error::not_found(what).in_file(file.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn read_locations_find_the_first_file_holding_an_id_and_explain_a_missing_one() {
        let files = vec![
            Ok((Layout::MultiRead, ids(&["b", "a"]))),
            Err(Error::format("x.fast5: broken")),
            Ok((Layout::SingleRead, ids(&["c"]))),
            Ok((Layout::MultiRead, ids(&["a", "d"]))),
            Err(Error::format("y.fast5: broken too")),
        ];
        let index = ReadLocations::from_files(files);
        assert_eq!(index.len(), 4);
        assert_eq!(index.find("a").unwrap(), (0, 1)); // file 3's "a" comes later
        assert_eq!(index.find("d").unwrap(), (3, 1));
        assert_eq!(index.find("c").unwrap(), (2, 0));
        assert_eq!((index.layout(0), index.layout(1), index.layout(2), index.layout(9)),
                   (Some(Layout::MultiRead), None, Some(Layout::SingleRead), None));
        let missing = index.find("z").unwrap_err();
        assert_eq!(missing.kind(), ErrorKind::NotFound);
        assert!(missing.to_string().contains("no read 'z'") && missing.to_string().contains("2 files could not be indexed, the first: x.fast5: broken"),
                "{}", missing);
        assert_eq!(index.unindexed(), (2, Some("x.fast5: broken")));
        let order: Vec<&str> = index.in_file_order().into_iter().map(|(id, _, _)| id).collect();
        assert_eq!(order, ["b", "a", "c", "d"]);
    }
}

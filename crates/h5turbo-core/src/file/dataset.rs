//! Dataset metadata (dataspace, datatype, layout, filters, fill value) and the read
//! path: layouts are presented to the engine as chunk grids.

use super::attrs::committed_datatype;
use super::File;
use crate::engine::{self, AxisSelection, ChunkStore, StoredChunk};
use crate::buffer::{zeroed, zeroed_elements};
use crate::convert::columns::{columns_from_values, resolve_vlen_columns_on, Column};
use crate::error::{Error, Result};
use crate::filters;
use crate::format::chunk_index::{read_chunk_index, ChunkIndex, ChunkLocation, ChunkLookup, FoundChunks};
use crate::format::dataspace::{Dataspace, DataspaceKind};
use crate::format::datatype::Datatype;
use crate::format::shared::parse_shared_message;
use crate::format::external::{parse_external_files, Segment};
use crate::format::fill_value::{FillValue, FILL_TIME_IFSET, FILL_TIME_NEVER};
use crate::format::filter_pipeline::FilterPipeline;
use crate::format::layout::Layout;
use crate::format::object_header::{msg, HeaderMessage, ObjectHeader};
use crate::convert::values::{self, VlenValue};
use crate::format::FormatContext;
use crate::io::MemSource;
use super::external::ExternalSource;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// A read touching at most FEW_CHUNKS chunks finds them in the index one by one
/// while the whole index has not been read: reading every node of a 200,000-chunk
/// index for one row took 10-30 ms warm (a random read per node cold), a descent per
/// chunk about a microsecond. Once a dataset's lookups reach 1/FEW_CHUNKS_SHARE of its
/// chunk grid (about what reading the whole index costs), the next read loads it whole.
const FEW_CHUNKS: u64 = 4096;
const FEW_CHUNKS_SHARE: u64 = 16;

/// Contiguous data is read in virtual chunks of about this many bytes.
const VIRTUAL_CHUNK_BYTES: u64 = 1 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutKind {
    Compact,
    Contiguous,
    Chunked,
    Virtual,
}

/// Space a dataset occupies in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Storage {
    pub chunks: u64,
    pub bytes: u64,
}

pub struct Dataset {
    pub dataspace: Dataspace,
    pub datatype: Datatype,
    pub layout: Layout,
    pub pipeline: FilterPipeline,
    /// One element of fill value (zeros when the file defines none).
    pub fill: Vec<u8>,
    /// Whether the file defines a fill value.
    pub fill_defined: bool,
    /// What elements never written read as: the fill value, or zeros when the fill
    /// time is "never" (libhdf5 then leaves the caller's buffer alone, and h5py's
    /// buffers start as zeros). None: the fill value itself, not copied (an element may
    /// be up to 2 GiB, its zeros lazily backed; a copy would touch every byte).
    unwritten: Option<Vec<u8>>,
    /// The filter pipeline parsed for decoding, on first read, then shared.
    decoder: OnceLock<filters::DecodePipeline>,
    /// The chunk index, read on first use and kept.
    chunk_index: OnceLock<Arc<ChunkIndex>>,
    /// Finds a few chunks without the whole index (small reads before any large one).
    chunk_lookup: OnceLock<Option<Arc<ChunkLookup>>>,
    /// Chunks looked up so far that way.
    chunks_looked_up: AtomicU64,
    /// Compact data as a byte source.
    compact: Option<MemSource>,
    /// Its object header's address: its chunks' key in the file's chunk cache.
    header_address: u64,
    /// Raw data in other files (contiguous layout only), and those files once opened.
    pub(super) external: Option<Vec<Segment>>,
    external_source: OnceLock<Arc<ExternalSource>>,
    /// A virtual dataset's mappings and open source files, on first read.
    virtual_sources: OnceLock<Arc<super::vds::VirtualSources>>,
}

impl LayoutKind {
    pub fn name(self) -> &'static str {
        match self {
            LayoutKind::Compact => "compact",
            LayoutKind::Contiguous => "contiguous",
            LayoutKind::Chunked => "chunked",
            LayoutKind::Virtual => "virtual",
        }
    }
}

impl Dataset {
    pub(super) fn parse(file: &File, header: &ObjectHeader) -> Result<Dataset> {
        let ctx = file.ctx();
        let dm = required(header, msg::DATASPACE, "dataspace")?;
        let dataspace = Dataspace::parse(&dm.data, dm.address, ctx.sizes())?;
        let datatype = dataset_datatype(ctx, required(header, msg::DATATYPE, "datatype")?)?;
        let lm = required(header, msg::LAYOUT, "data layout")?;
        let layout = Layout::parse(&lm.data, lm.address, ctx.sizes())?;
        let external = match header.find(msg::EXTERNAL_FILES) {
            Some(m) if matches!(layout, Layout::Contiguous { .. }) => Some(parse_external_files(ctx, &m.data, m.address)?),
            Some(_) => return Err(Error::format("external raw data files on a dataset that is not contiguous")),
            None => None,
        };
        let pipeline = match header.find(msg::FILTER_PIPELINE) {
            Some(m) => FilterPipeline::parse(&mut m.reader(ctx))?,
            None => FilterPipeline::default(),
        };
        let element_size = datatype.size();
        check_element_size(&layout, element_size)?;
        if external.is_none() {
            check_contiguous_size(&layout, &dataspace, element_size)?;
        }
        let (fill_value, fill_time) = fill_value(header, ctx)?;
        let fill_defined = fill_value.as_ref().is_some_and(|v| !v.is_empty());
        let fill = match fill_value {
            Some(v) if v.len() == element_size => v,
            Some(v) if !v.is_empty() => {
                return Err(Error::format(format!(
                    "fill value has {} bytes, the datatype {}",
                    v.len(),
                    element_size
                )))
            }
            _ => zeroed(element_size, "the fill value of the datatype")?,
        };
        let compact = match &layout {
            Layout::Compact { data } => Some(MemSource::new(data.clone())),
            _ => None,
        };
        Ok(Dataset {
            dataspace,
            datatype,
            layout,
            pipeline,
            unwritten: match fill_time {
                FILL_TIME_NEVER => Some(zeroed(element_size, "the fill value of the datatype")?),
                _ => None,
            },
            fill,
            fill_defined,
            decoder: OnceLock::new(),
            chunk_index: OnceLock::new(),
            chunk_lookup: OnceLock::new(),
            chunks_looked_up: AtomicU64::new(0),
            compact,
            header_address: header.address,
            external,
            external_source: OnceLock::new(),
            virtual_sources: OnceLock::new(),
        })
    }

    pub fn layout_kind(&self) -> LayoutKind {
        match self.layout {
            Layout::Compact { .. } => LayoutKind::Compact,
            Layout::Contiguous { .. } => LayoutKind::Contiguous,
            Layout::Chunked(_) => LayoutKind::Chunked,
            Layout::Virtual { .. } => LayoutKind::Virtual,
        }
    }

    pub fn shape(&self) -> &[u64] {
        &self.dataspace.dims
    }

    pub fn element_size(&self) -> usize {
        self.datatype.size()
    }

    /// A virtual dataset's mappings as stored (h5py's `virtual_sources()`): source file
    /// name ("." for this file), source dataset, source and virtual selections; None
    /// for other layouts.
    pub fn virtual_mappings(&self, file: &File) -> Result<Option<Vec<crate::format::vds::Mapping>>> {
        let Layout::Virtual { heap_address, heap_index } = self.layout else { return Ok(None) };
        file.check_open()?;
        let sources = self.virtual_sources(|| super::vds::VirtualSources::read(file, heap_address, heap_index))?;
        Ok(Some(sources.mappings().to_vec()))
    }

    /// A virtual dataset's mappings and source files, made by `make` on first use.
    pub(super) fn virtual_sources(
        &self,
        make: impl FnOnce() -> Result<super::vds::VirtualSources>,
    ) -> Result<Arc<super::vds::VirtualSources>> {
        if let Some(sources) = self.virtual_sources.get() {
            return Ok(sources.clone());
        }
        let made = Arc::new(make()?);
        Ok(self.virtual_sources.get_or_init(|| made).clone())
    }

    /// The segments of raw data in other files, for a dataset stored externally.
    pub fn external_files(&self) -> Option<&[Segment]> {
        self.external.as_deref()
    }

    pub fn chunk_dims(&self) -> Option<&[u64]> {
        match &self.layout {
            Layout::Chunked(c) => Some(&c.chunk_dims),
            _ => None,
        }
    }

    /// How the chunks are indexed ("btree_v1", "single_chunk", "implicit",
    /// "fixed_array", "extensible_array", "btree_v2"); None when not chunked.
    pub fn chunk_index_type(&self) -> Option<&'static str> {
        use crate::format::layout::ChunkIndexKind as K;
        let Layout::Chunked(c) = &self.layout else { return None };
        Some(match c.index {
            K::BTreeV1 { .. } => "btree_v1",
            K::SingleChunk { .. } => "single_chunk",
            K::Implicit { .. } => "implicit",
            K::FixedArray { .. } => "fixed_array",
            K::ExtensibleArray { .. } => "extensible_array",
            K::BTreeV2 { .. } => "btree_v2",
        })
    }

    /// What the dataset occupies in the file: allocated chunks (1 for written
    /// contiguous or compact data) and stored bytes. Virtual datasets store nothing.
    pub fn storage(&self, file: &File) -> Result<Storage> {
        let (chunks, bytes) = match &self.layout {
            Layout::Chunked(_) => {
                let index = self.chunk_index(file)?;
                index.map_or((0, 0), |i| (i.len() as u64, i.stored_bytes()))
            }
            // external raw data: libhdf5 counts it as stored, written or not, at the size
            // its layout message records (not grown by a later set_extent)
            Layout::Contiguous { size, .. } if self.external.is_some() => (1, *size),
            Layout::Contiguous { address: Some(_), size } => (1, *size),
            Layout::Contiguous { address: None, .. } | Layout::Virtual { .. } => (0, 0),
            Layout::Compact { data } => (1, data.len() as u64),
        };
        Ok(Storage { chunks, bytes })
    }

    /// The filter pipeline ready to decode chunks (parsed once, then shared); an
    /// `Unsupported` error names a filter h5turbo does not decode.
    pub fn decoder(&self) -> Result<&filters::DecodePipeline> {
        if let Some(decoder) = self.decoder.get() {
            return Ok(decoder);
        }
        let parsed = filters::DecodePipeline::new(&self.pipeline, self.element_size())?;
        Ok(self.decoder.get_or_init(|| parsed))
    }

    /// The chunk index (read once, then shared).
    pub fn chunk_index(&self, file: &File) -> Result<Option<Arc<ChunkIndex>>> {
        let Layout::Chunked(chunked) = &self.layout else { return Ok(None) };
        if let Some(index) = self.chunk_index.get() {
            return Ok(Some(index.clone()));
        }
        let dims = &self.dataspace.dims;
        let index = read_chunk_index(file.ctx(), chunked, dims, &self.dataspace.max_dims, !self.pipeline.is_empty())?;
        let _ = self.chunk_index.set(Arc::new(index)); // a racing thread may have won; same result
        Ok(self.chunk_index.get().cloned())
    }

    /// The stored chunks a small selection touches, found one by one in the index,
    /// when the whole index has not been read yet; `None` when the read should use
    /// the whole index (a large or invalid selection, an index read whole anyway).
    fn find_few_chunks(&self, file: &File, sel: &[AxisSelection]) -> Result<Option<FoundChunks>> {
        let Layout::Chunked(chunked) = &self.layout else { return Ok(None) };
        let dims = &self.dataspace.dims;
        let chunk_dims = &chunked.chunk_dims;
        let fits = sel.len() == dims.len() && chunk_dims.len() == dims.len() && !sel.is_empty();
        if !fits || self.chunk_index.get().is_some() {
            return Ok(None);
        }
        if sel.iter().enumerate().any(|(d, s)| s.validate(dims[d], d).is_err() || chunk_dims[d] == 0) {
            return Ok(None); // the engine reports it
        }
        let touched = sel.iter().zip(chunk_dims).fold(1u64, |n, (s, &c)| n.saturating_mul(s.chunks_touched_at_most(c)));
        let cells = dims.iter().zip(chunk_dims).fold(1u64, |n, (&d, &c)| n.saturating_mul(d.div_ceil(c)));
        if touched > FEW_CHUNKS {
            return Ok(None);
        }
        let so_far = self.chunks_looked_up.fetch_add(touched, Ordering::Relaxed).saturating_add(touched);
        if so_far.saturating_mul(FEW_CHUNKS_SHARE) > cells {
            return Ok(None);
        }
        let Some(lookup) = self.chunk_lookup(file, chunked)? else { return Ok(None) };
        let per_axis: Vec<Vec<u64>> = sel
            .iter()
            .zip(chunk_dims)
            .map(|(s, &c)| Ok(engine::selection::axis_pieces(s, c)?.into_iter().map(|p| p.chunk).collect()))
            .collect::<Result<_>>()?;
        lookup.find_all(file.ctx(), &per_axis).map(Some)
    }

    fn chunk_lookup(&self, file: &File, chunked: &crate::format::layout::ChunkedLayout) -> Result<Option<Arc<ChunkLookup>>> {
        if let Some(lookup) = self.chunk_lookup.get() {
            return Ok(lookup.clone());
        }
        let (dims, max_dims) = (&self.dataspace.dims, &self.dataspace.max_dims);
        let lookup = ChunkLookup::new(file.ctx(), chunked, dims, max_dims, !self.pipeline.is_empty())?;
        Ok(self.chunk_lookup.get_or_init(|| lookup.map(Arc::new)).clone())
    }

    /// Read `sel` into `out` laid out as the numpy dtype h5py gives: straight from the
    /// chunks when the stored bytes already are that layout, else through a conversion.
    pub fn read_numpy(&self, file: &File, sel: &[AxisSelection], out: &mut [u8], threads: usize) -> Result<()> {
        if values::is_identity(&self.datatype) {
            return self.read_raw(file, sel, out, threads);
        }
        let n = selection_len(sel)?;
        let mut raw = zeroed_elements(n, self.element_size(), "the selection's stored values")?;
        self.read_raw(file, sel, &mut raw, threads)?;
        out.fill(0);
        values::convert_elements(&self.datatype, &raw, out, n)
    }

    /// Read `sel` of a datatype with variable-length parts, resolved from the global heap.
    pub fn read_vlen(&self, file: &File, sel: &[AxisSelection], threads: usize) -> Result<Vec<VlenValue>> {
        if let Layout::Virtual { heap_address, heap_index } = self.layout {
            // heap ids name the heaps of the sources' files: resolved mapping by mapping
            file.check_open()?;
            let (dims, sel) = self.engine_selection(sel)?;
            return super::vds::read_vlen(self, file, (heap_address, heap_index), &dims, &sel, threads);
        }
        let n = selection_len(sel)?;
        let mut raw = zeroed_elements(n, self.element_size(), "the selection's stored values")?;
        self.read_raw(file, sel, &mut raw, threads)?;
        values::resolve_vlen_elements_on(file.ctx(), file.global_heap(), &self.datatype, &raw, n, threads)
    }

    /// Read `sel` of a compound with variable-length parts field by field: one column
    /// per numpy field (see convert::columns).
    pub fn read_vlen_columns(&self, file: &File, sel: &[AxisSelection], threads: usize) -> Result<Vec<Column>> {
        if let Layout::Virtual { .. } = self.layout {
            // values come mapping by mapping: gathered, then laid out in columns
            return columns_from_values(&self.datatype, self.read_vlen(file, sel, threads)?);
        }
        let n = selection_len(sel)?;
        let mut raw = zeroed_elements(n, self.element_size(), "the selection's stored values")?;
        self.read_raw(file, sel, &mut raw, threads)?;
        resolve_vlen_columns_on(file.ctx(), file.global_heap(), &self.datatype, &raw, n, threads)
    }

    /// The fill value in numpy layout (None for types with variable-length parts).
    pub fn fill_numpy(&self) -> Result<Option<Vec<u8>>> {
        if crate::convert::numpy_dtype::has_objects(&self.datatype) {
            return Ok(None);
        }
        values::to_numpy_bytes(&self.datatype, &self.fill, 1).map(Some)
    }

    /// Read `sel` (one entry per axis; empty for scalars) as raw element bytes into `out`.
    pub fn read_raw(&self, file: &File, sel: &[AxisSelection], out: &mut [u8], threads: usize) -> Result<()> {
        self.read_raw_with(file, sel, out, threads, true)
    }

    /// As `read_raw`, bypassing the decoded-chunk cache: for one-shot reads (every
    /// signal of many fast5 files) that would only fill it with chunks never read again
    /// and pay for a fresh decoded copy of each.
    pub fn read_raw_once(&self, file: &File, sel: &[AxisSelection], out: &mut [u8], threads: usize) -> Result<()> {
        self.read_raw_with(file, sel, out, threads, false)
    }

    fn read_raw_with(&self, file: &File, sel: &[AxisSelection], out: &mut [u8], threads: usize, use_cache: bool) -> Result<()> {
        file.check_open()?;
        let (dims, sel) = self.engine_selection(sel)?;
        if let Layout::Virtual { heap_address, heap_index } = self.layout {
            return super::vds::read(self, file, (heap_address, heap_index), &dims, &sel, out, threads);
        }
        let cache = use_cache.then(|| file.chunk_cache().slot(self.header_address));
        self.with_source(file, &dims, &sel, |src| {
            engine::read_selection(&engine::ArraySource { cache, ..*src }, &sel, out, threads)
        })
    }

    /// The dataset's shape and `sel` as the engine reads them: arrays of rank >= 1, a
    /// scalar being a 1-element array; errors for a null dataspace.
    fn engine_selection(&self, sel: &[AxisSelection]) -> Result<(Vec<u64>, Vec<AxisSelection>)> {
        match self.dataspace.kind {
            DataspaceKind::Null => Err(Error::invalid_argument("the dataset has a null dataspace and holds no data")),
            DataspaceKind::Scalar if !sel.is_empty() => {
                Err(Error::invalid_argument("a scalar dataset takes an empty selection"))
            }
            DataspaceKind::Scalar => Ok((vec![1], vec![AxisSelection::all(1)])),
            _ => Ok((self.dataspace.dims.clone(), sel.to_vec())),
        }
    }

    /// Reduce `sel` (one entry per axis) along the axes flagged in `reduce_axis`,
    /// chunk by chunk in parallel (see `engine::reduce`). Integer, float and boolean
    /// datasets; elements stored in another layout than numpy's (integers using fewer
    /// bits than their size, custom floats) are reduced as the values reads give. A
    /// scalar dataset takes an empty `sel` and `reduce_axis` and gives its one value.
    pub fn reduce(
        &self,
        file: &File,
        sel: &[AxisSelection],
        reduce_axis: &[bool],
        op: engine::reduce::ReduceOp,
        threads: usize,
    ) -> Result<engine::reduce::Reduced> {
        file.check_open()?;
        let kind = self.element_kind()?;
        let (dims, sel) = self.engine_selection(sel)?;
        if dims.is_empty() {
            return Err(Error::invalid_argument("reductions need a dataset of rank >= 1 or a scalar"));
        }
        // a scalar is reduced as the one-element array reads give: its one value
        let scalar_axes = [true];
        let reduce_axis = if self.dataspace.kind == DataspaceKind::Scalar { &scalar_axes[..] } else { reduce_axis };
        let sel = &sel[..];
        if values::is_identity(&self.datatype) {
            return self.with_source(file, &dims, sel, |src| engine::reduce::reduce_selection(src, kind, sel, reduce_axis, op, threads));
        }
        // As reads: the stored elements converted to the numpy layout h5py gives.
        let converter = values::ElementConverter::new(&self.datatype)?;
        let convert = |src: &[u8], dst: &mut [u8], n: usize| converter.convert(src, dst, n);
        self.with_source(file, &dims, sel, |src| {
            engine::reduce::reduce_converted(src, kind, &convert, sel, reduce_axis, op, threads)
        })
    }

    /// The number type of the elements, for the reductions.
    pub fn element_kind(&self) -> Result<engine::reduce::ElementKind> {
        use crate::format::datatype::{ByteOrder, DatatypeClass};
        use engine::reduce::{ElementKind, NumberClass};
        let unsupported = || Error::unsupported("reductions need integer, float or boolean elements");
        if !values::is_identity(&self.datatype) {
            return self.converted_kind().ok_or_else(unsupported);
        }
        let (class, order) = match &self.datatype.class {
            DatatypeClass::FixedPoint { order, signed, .. } => (if *signed { NumberClass::Signed } else { NumberClass::Unsigned }, *order),
            DatatypeClass::Enum { base, .. } => match &base.class {
                DatatypeClass::FixedPoint { order, signed, .. } => (if *signed { NumberClass::Signed } else { NumberClass::Unsigned }, *order),
                _ => return Err(unsupported()),
            },
            DatatypeClass::FloatingPoint(layout) if matches!(self.datatype.size, 2 | 4 | 8) => (NumberClass::Float, layout.order),
            // read as the unsigned integers h5py gives (np.uint8 ...): reduced as those
            DatatypeClass::Bitfield { order, .. } => (NumberClass::Unsigned, *order),
            _ => return Err(unsupported()),
        };
        let big_endian = match order {
            ByteOrder::Little => false,
            ByteOrder::Big => true,
            ByteOrder::Vax => return Err(unsupported()),
        };
        Ok(ElementKind { class, size: self.datatype.size, big_endian })
    }

    /// The number type that reads give for a numeric datatype stored in another layout
    /// (integers using fewer bits than their size, float layouts numpy lacks): numpy's
    /// typestr of the read, as "<i4", ">u2", "<f8", "|b1".
    fn converted_kind(&self) -> Option<engine::reduce::ElementKind> {
        use crate::format::datatype::DatatypeClass;
        use engine::reduce::{ElementKind, NumberClass};
        let numeric = match &self.datatype.class {
            DatatypeClass::FixedPoint { .. } | DatatypeClass::FloatingPoint(_) | DatatypeClass::Bitfield { .. } => true,
            DatatypeClass::Enum { base, .. } => matches!(base.class, DatatypeClass::FixedPoint { .. }),
            _ => false,
        };
        if !numeric {
            return None;
        }
        let crate::convert::numpy_dtype::NumpyDtype::Simple(typestr) = self.datatype.numpy_dtype().ok()? else { return None };
        let bytes = typestr.as_bytes();
        let (order, code, size) = (*bytes.first()?, *bytes.get(1)?, typestr.get(2..)?.parse::<usize>().ok()?);
        let class = match code {
            b'i' => NumberClass::Signed,
            b'u' | b'b' => NumberClass::Unsigned,
            b'f' if matches!(size, 2 | 4 | 8) => NumberClass::Float,
            _ => return None,
        };
        if !matches!(size, 1 | 2 | 4 | 8) {
            return None;
        }
        Some(ElementKind { class, size, big_endian: order == b'>' })
    }

    /// Present the layout to the engine as a chunked array and call `f` with it.
    /// `sel` is what the read will select: a small selection may find its chunks
    /// without reading the whole chunk index.
    fn with_source<R>(
        &self,
        file: &File,
        dims: &[u64],
        sel: &[AxisSelection],
        f: impl FnOnce(&engine::ArraySource) -> Result<R>,
    ) -> Result<R> {
        let decoder = self.decoder()?;
        match &self.layout {
            Layout::Chunked(chunked) => {
                let chunk_dims = if chunked.chunk_dims.is_empty() { vec![1] } else { chunked.chunk_dims.clone() };
                let source = file.ctx().source().as_ref();
                let base = file.ctx().base();
                if let Some(found) = self.find_few_chunks(file, sel)? {
                    let store = LocatedStore { find: |chunk: &[u64]| found.get(chunk), base };
                    return f(&self.array_source(source, dims, &chunk_dims, &store, decoder));
                }
                let index = self.chunk_index(file)?.ok_or_else(|| Error::format("chunked dataset without index"))?;
                let store = LocatedStore { find: |chunk: &[u64]| index.get(chunk), base };
                f(&self.array_source(source, dims, &chunk_dims, &store, decoder))
            }
            Layout::Contiguous { .. } if self.external.is_some() => self.with_external(file, dims, f),
            Layout::Contiguous { address, size } => self.with_contiguous(file, *address, *size, dims, f),
            Layout::Compact { data } => {
                let source = self.compact.as_ref().ok_or_else(|| Error::format("compact data missing"))?;
                let store = WholeArray { address: 0, size: data.len() as u64 };
                // One chunk, the whole array; an empty axis still makes a chunk of size 1
                // (a chunk dimension of zero is an error to the engine).
                let chunk_dims: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
                f(&self.array_source(source, dims, &chunk_dims, &store, filters::DecodePipeline::unfiltered()))
            }
            Layout::Virtual { .. } => {
                Err(Error::unsupported("reductions and chunk access on virtual datasets (read them, then reduce)"))
            }
        }
    }

    fn array_source<'a>(
        &'a self,
        source: &'a dyn crate::io::ReadAt,
        dims: &'a [u64],
        chunk_dims: &'a [u64],
        store: &'a dyn ChunkStore,
        pipeline: &'a filters::DecodePipeline,
    ) -> engine::ArraySource<'a> {
        engine::ArraySource {
            source,
            dims,
            chunk_dims,
            element_size: self.element_size(),
            pipeline,
            store,
            fill: self.unwritten.as_deref().unwrap_or(&self.fill),
            allow_short_chunks: false,
            cache: None, // reads set it: see read_raw_with
        }
    }

    fn with_contiguous<R>(
        &self,
        file: &File,
        address: Option<u64>,
        size: u64,
        dims: &[u64],
        f: impl FnOnce(&engine::ArraySource) -> Result<R>,
    ) -> Result<R> {
        let elem = self.element_size() as u64;
        let chunk_dims = virtual_chunk_dims(dims, elem);
        let total = dims.iter().try_fold(elem, |acc, &d| acc.checked_mul(d)).ok_or_else(|| Error::format("dataset size overflows"))?;
        let store = match address {
            Some(a) => {
                if size < total {
                    return Err(Error::format(format!("contiguous storage holds {} bytes, the dataspace needs {}", size, total)));
                }
                Some(file.ctx().absolute(a, total, "contiguous dataset storage")?)
            }
            None => None,
        };
        let store = ContiguousStore { address: store, dims: dims.to_vec(), chunk_dims: chunk_dims.clone(), element_size: elem };
        let mut src = self.array_source(file.ctx().source().as_ref(), dims, &chunk_dims, &store, filters::DecodePipeline::unfiltered());
        src.allow_short_chunks = true;
        f(&src)
    }

    /// Contiguous data in external files: their segments as one source, read as any
    /// contiguous dataset (the files are opened on the first read and kept).
    fn with_external<R>(&self, file: &File, dims: &[u64], f: impl FnOnce(&engine::ArraySource) -> Result<R>) -> Result<R> {
        let elem = self.element_size() as u64;
        let total = dims.iter().try_fold(elem, |acc, &d| acc.checked_mul(d)).ok_or_else(|| Error::format("dataset size overflows"))?;
        let source = match self.external_source.get() {
            Some(source) => source.clone(),
            None => {
                let segments = self.external.as_deref().unwrap_or_default();
                let opened = Arc::new(ExternalSource::open(segments, file.path(), total)?);
                self.external_source.get_or_init(|| opened).clone()
            }
        };
        let chunk_dims = virtual_chunk_dims(dims, elem);
        let store = ContiguousStore { address: Some(0), dims: dims.to_vec(), chunk_dims: chunk_dims.clone(), element_size: elem };
        let mut src = self.array_source(source.as_ref(), dims, &chunk_dims, &store, filters::DecodePipeline::unfiltered());
        src.allow_short_chunks = true;
        f(&src)
    }
}

/// The chunked layout repeats the element size; libhdf5 refuses a mismatch, and
/// the engine sizes chunk buffers from the datatype, so a corrupt one must stop here.
fn check_element_size(layout: &Layout, element_size: usize) -> Result<()> {
    match layout {
        Layout::Chunked(c) if c.element_size != element_size as u64 => Err(Error::format(format!(
            "chunked layout stores {}-byte elements, the datatype has {} bytes",
            c.element_size, element_size
        ))),
        _ => Ok(()),
    }
}

/// Stored contiguous data must hold every element, checked when the dataset is opened
/// (as libhdf5 does): a damaged size in the dataspace would otherwise have a reader
/// allocate for elements that are not in the file.
fn check_contiguous_size(layout: &Layout, dataspace: &Dataspace, element_size: usize) -> Result<()> {
    let Layout::Contiguous { address: Some(_), size } = layout else { return Ok(()) };
    let needed = dataspace.num_elements()?.checked_mul(element_size as u64);
    match needed {
        Some(needed) if needed <= *size => Ok(()),
        _ => Err(Error::format(format!(
            "contiguous storage holds {} bytes, the dataspace {:?} of {}-byte elements needs more (a damaged dataspace or layout)",
            size, dataspace.dims, element_size
        ))),
    }
}

/// Elements in a selection (1 for the empty selection of a scalar).
fn selection_len(sel: &[AxisSelection]) -> Result<usize> {
    sel.iter()
        .try_fold(1u64, |acc, s| acc.checked_mul(s.count()))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Error::invalid_argument("selection size overflows"))
}

fn required<'a>(header: &'a ObjectHeader, type_id: u16, what: &str) -> Result<&'a HeaderMessage> {
    header.find(type_id).ok_or_else(|| Error::format(format!("dataset has no {} message", what)).at(header.address))
}

fn dataset_datatype(ctx: &FormatContext, m: &HeaderMessage) -> Result<Datatype> {
    if m.is_shared() {
        let shared = parse_shared_message(&m.data, m.address, ctx.sizes())?;
        return committed_datatype(ctx, &shared);
    }
    Datatype::parse(&m.data, m.address, ctx.sizes())
}

/// The fill value bytes and fill time, from the new message if present, else the old one.
fn fill_value(header: &ObjectHeader, ctx: &FormatContext) -> Result<(Option<Vec<u8>>, u8)> {
    let message = if let Some(m) = header.find(msg::FILL_VALUE) {
        FillValue::parse_new(&m.data, m.address, ctx.sizes())?
    } else if let Some(m) = header.find(msg::FILL_VALUE_OLD) {
        FillValue::parse_old(&m.data, m.address, ctx.sizes())?
    } else {
        return Ok((None, FILL_TIME_IFSET));
    };
    Ok((message.value, message.fill_time))
}

/// Rows of whole trailing extents, about VIRTUAL_CHUNK_BYTES each: contiguous data
/// split into pieces the engine can read and copy in parallel.
fn virtual_chunk_dims(dims: &[u64], elem: u64) -> Vec<u64> {
    let mut chunk = vec![1u64; dims.len()];
    let mut bytes = elem.max(1);
    for d in (0..dims.len()).rev() {
        let len = dims[d].max(1);
        if bytes.saturating_mul(len) <= VIRTUAL_CHUNK_BYTES {
            chunk[d] = len;
            bytes *= len;
        } else {
            chunk[d] = (VIRTUAL_CHUNK_BYTES / bytes).clamp(1, len);
            break;
        }
    }
    chunk
}

/// Chunks located by `find` (the whole chunk index, or the few chunks of a small read
/// found one by one), seen by the engine with absolute addresses.
struct LocatedStore<F> {
    find: F,
    base: u64,
}

impl<F: Fn(&[u64]) -> Option<ChunkLocation> + Sync> ChunkStore for LocatedStore<F> {
    fn locate(&self, chunk: &[u64]) -> Option<StoredChunk> {
        (self.find)(chunk).map(|loc| StoredChunk {
            address: loc.address + self.base,
            size: loc.size,
            filter_mask: loc.filter_mask,
        })
    }
}

/// Contiguous storage seen as a grid of virtual chunks. A virtual chunk spans whole
/// trailing extents (see `virtual_chunk_dims`), so it is one run of the storage: it
/// starts at its origin element and holds its clipped extent; edge chunks are short.
struct ContiguousStore {
    address: Option<u64>,
    dims: Vec<u64>,
    chunk_dims: Vec<u64>,
    element_size: u64,
}

impl ChunkStore for ContiguousStore {
    fn locate(&self, chunk: &[u64]) -> Option<StoredChunk> {
        let address = self.address?;
        let strides = crate::engine::plan::strides(&self.dims);
        let mut first = 0u64;
        let mut elements = 1u64;
        for d in 0..chunk.len() {
            let origin = chunk[d] * self.chunk_dims[d];
            first += origin * strides[d];
            elements *= self.chunk_dims[d].min(self.dims[d].saturating_sub(origin));
        }
        Some(StoredChunk { address: address + first * self.element_size, size: elements * self.element_size, filter_mask: 0 })
    }
}

/// A whole array stored as one unfiltered chunk (compact data).
struct WholeArray {
    address: u64,
    size: u64,
}

impl ChunkStore for WholeArray {
    fn locate(&self, _chunk: &[u64]) -> Option<StoredChunk> {
        Some(StoredChunk { address: self.address, size: self.size, filter_mask: 0 })
    }
}

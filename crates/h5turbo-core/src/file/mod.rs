//! The object model: an open file, paths to objects, groups, attributes and
//! datasets, built from the format parsers and read through the engine.
//!
//! Everything here is immutable after construction or behind a short lock used
//! only to fill a cache, so one `File` serves any number of threads.

mod attrs;
mod chunk_info;
mod dataset;
mod dimension_scales;
mod external;
mod group;
mod link_targets;
mod lookup;
mod refs;
mod vds;

pub use attrs::AttributeValue;
pub use chunk_info::ChunkInfo;
pub use lookup::{find_named_file, NamedFile};
pub use dataset::{Dataset, LayoutKind, Storage};

use crate::engine::cache::{ChunkCache, FILE_CACHE_BYTES};
use crate::error::{Error, Result, ResultExt};
use crate::format::global_heap::GlobalHeapCache;
use crate::format::object_header::{msg, ObjectHeader};
use crate::format::superblock::Superblock;
use crate::format::FormatContext;
use crate::io::{FileSource, ReadAt};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Soft links followed while resolving one path, at most (h5py/libhdf5 use 16 too).
const MAX_SOFT_LINK_HOPS: usize = 16;

/// How a path is being resolved: links followed so far, and whether external links
/// are followed into their files.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Walk {
    pub hops: usize,
    pub external: bool,
}

impl Walk {
    fn next_hop(self) -> Walk {
        Walk { hops: self.hops + 1, ..self }
    }
}

/// An open HDF5 file (read-only). Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct File {
    inner: Arc<FileInner>,
}

struct FileInner {
    ctx: FormatContext,
    path: PathBuf,
    /// `path` made absolute when the file was opened: external links are looked for
    /// next to it, as libhdf5 does (its "extpath"), even after the program changes
    /// folder, and the files they lead to are named absolutely, as H5Fget_name names them.
    absolute_path: PathBuf,
    superblock: Superblock,
    closed: AtomicBool,
    global_heap: GlobalHeapCache,
    /// Parsed dataset metadata (and chunk indexes) by object header address.
    datasets: Mutex<HashMap<u64, Arc<Dataset>>>,
    /// Each group's links, parsed once, by object header address: path lookups in a
    /// group of n members would otherwise re-read all n links every time.
    groups: Mutex<HashMap<u64, Arc<group::GroupLinks>>>,
    /// Names looked up one by one in each group not yet listed, by object header address.
    group_lookups: Mutex<HashMap<u64, u32>>,
    /// The path libhdf5 gives each object when dereferencing, by object header
    /// address: walked once, on the first dereference (refs.rs).
    object_paths: Mutex<Option<Arc<HashMap<u64, String>>>>,
    /// The files its external links lead into, opened once and kept (link_targets.rs).
    link_targets: link_targets::LinkTargets,
    /// Decoded chunks of its datasets, for small repeated reads (engine/cache.rs).
    chunk_cache: ChunkCache,
}

/// What an object is, decided by the messages in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    Group,
    Dataset,
    Datatype,
}

/// A group, dataset or committed datatype reached by a path.
#[derive(Clone)]
pub struct Object {
    file: File,
    name: String,
    header: Arc<ObjectHeader>,
    /// The attributes, parsed on first use and kept (see attrs::AttributeCache).
    attributes: Arc<attrs::AttributeCache>,
}

impl File {
    pub fn open(path: &Path) -> Result<File> {
        let source = match FileSource::open(path) {
            // out of descriptors: the external link targets kept by every File (those
            // no object holds) are closed, then the open is tried once more
            Err(e) if link_targets::out_of_descriptors(&e) => {
                link_targets::let_go_of_every_kept_target();
                FileSource::open(path)?
            }
            other => other?,
        };
        Self::from_source(Arc::new(source), path)
    }

    /// Open from any positional-read source (`path` is used in messages).
    pub fn from_source(source: Arc<dyn ReadAt>, path: &Path) -> Result<File> {
        let superblock = Superblock::find_and_read(source.as_ref()).in_file(path)?;
        let ctx = FormatContext::new(source, path, superblock.sizes, superblock.base_address);
        if let Some(ext) = superblock.extension_address {
            // Validated; its shared message table (if any) is recorded in the context.
            check_extension(&ctx, ext).in_object("superblock extension").in_file(path)?;
        }
        let inner = FileInner {
            ctx,
            path: path.to_path_buf(),
            absolute_path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            superblock,
            closed: AtomicBool::new(false),
            global_heap: GlobalHeapCache::default(),
            datasets: Mutex::new(HashMap::new()),
            groups: Mutex::new(HashMap::new()),
            group_lookups: Mutex::new(HashMap::new()),
            object_paths: Mutex::new(None),
            link_targets: link_targets::LinkTargets::default(),
            chunk_cache: ChunkCache::new(FILE_CACHE_BYTES),
        };
        let file = File { inner: Arc::new(inner) };
        // fail at open, not at first use, if the root group is unreadable or is no group
        // (a superblock pointing at a dataset's header: every walk would fail on it)
        if file.root()?.kind() != ObjectKind::Group {
            return Err(Error::format("the superblock's root object is not a group").in_file(file.path()));
        }
        Ok(file)
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The file's path made absolute when it was opened: what files it names
    /// (external links, virtual dataset sources) are looked for next to it.
    pub fn absolute_path(&self) -> &Path {
        &self.inner.absolute_path
    }

    /// Whether `other` is this same open file (an external link's target opened
    /// separately, even of the same path, is not).
    pub fn same_file(&self, other: &File) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub fn userblock_size(&self) -> u64 {
        self.inner.superblock.base_address
    }

    /// The file an external link of this file names, found as libhdf5 finds it.
    pub fn external_link_file(&self, name: &str) -> Result<PathBuf> {
        find_named_file(NamedFile::ExternalLink, self.absolute_path(), name).ok_or_else(|| {
            Error::not_found(format!("external link target file '{}' not found", name)).in_file(self.path())
        })
    }

    /// The file on disk as it was when opened (None for bytes in memory): a binding that
    /// opens it again by path checks it is still the same file.
    pub fn version(&self) -> Option<crate::io::FileVersion> {
        self.inner.ctx.source().version()
    }

    pub fn superblock(&self) -> &Superblock {
        &self.inner.superblock
    }

    /// Marks the file closed: later operations fail with a Closed error. The
    /// descriptor (unless another open File of the same file shares it: io/open_files.rs),
    /// the cached chunk indexes and the decoded chunks are given back now, not when the
    /// last object of the file is dropped; reads in flight on other threads finish first.
    pub fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        self.inner.ctx.source().close();
        self.inner.datasets.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.inner.chunk_cache.clear();
        self.inner.groups.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.inner.object_paths.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.inner.link_targets.clear();
    }

    /// The file as it is now, for one a SWMR writer is appending to: its size, superblock,
    /// object headers and chunk indexes read again (none of this file's caches are
    /// used), through the same descriptor (closing this file closes the new one too).
    pub fn refreshed(&self) -> Result<File> {
        self.check_open()?;
        let source = self.ctx().source();
        let source = source.refreshed().in_file(self.path())?.unwrap_or_else(|| source.clone());
        File::from_source(source, self.path())
    }

    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::closed().in_file(&self.inner.path));
        }
        Ok(())
    }

    pub(crate) fn ctx(&self) -> &FormatContext {
        &self.inner.ctx
    }

    pub(crate) fn chunk_cache(&self) -> &ChunkCache {
        &self.inner.chunk_cache
    }

    pub(crate) fn global_heap(&self) -> &GlobalHeapCache {
        &self.inner.global_heap
    }

    pub fn root(&self) -> Result<Object> {
        self.object_at(self.inner.superblock.root_object_header, "/".to_string())
    }

    /// The object header at `address`, reached as `name`.
    pub(crate) fn object_at(&self, address: u64, name: String) -> Result<Object> {
        self.check_open()?;
        let header = ObjectHeader::read(self.ctx(), address).in_object(&name).in_file(self.path())?;
        Ok(Object { file: self.clone(), name, header: Arc::new(header), attributes: Arc::default() })
    }

    /// Resolve an absolute path ("/", "/a/b"), following soft links; an external link
    /// on the way is an `Unsupported` error (the Python layer opens its targets itself).
    pub fn get(&self, path: &str) -> Result<Object> {
        self.resolve(path, Walk { hops: 0, external: false })
    }

    /// Resolve an absolute path following soft and external links, as libhdf5's
    /// H5Oopen: the target file is found as libhdf5 finds it (HDF5_EXT_PREFIX, next to
    /// this file, the working folder; regular files only) and opened; the object
    /// returned holds it open, named by its path there.
    pub fn get_following_external(&self, path: &str) -> Result<Object> {
        self.resolve(path, Walk { hops: 0, external: true })
    }

    fn resolve(&self, path: &str, walk: Walk) -> Result<Object> {
        if walk.hops > MAX_SOFT_LINK_HOPS {
            let message = format!("too many soft or external links while resolving '{}' (a cycle?)", path);
            return Err(Error::new(crate::error::ErrorKind::TooManyLinks, message)
                .in_file(self.path()));
        }
        let mut obj = self.root()?;
        for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
            if obj.kind() != ObjectKind::Group {
                // a path through a dataset names nothing (libhdf5: component not found),
                // and a soft link along it dangles
                let message = format!("'{}' is not a group: no member '{}'", obj.name, part);
                return Err(Error::not_found(message).in_file(self.path()));
            }
            obj = obj.child_following(part, walk)?;
        }
        Ok(obj)
    }

    /// The links of the group at `header`, parsed once and cached.
    pub(crate) fn group_links(&self, header: &ObjectHeader, read: impl FnOnce() -> Result<Vec<crate::format::links::Link>>) -> Result<Arc<group::GroupLinks>> {
        if let Some(links) = self.inner.groups.lock().unwrap_or_else(|p| p.into_inner()).get(&header.address) {
            return Ok(links.clone());
        }
        // Parsed outside the lock: another thread may do the same work, never wait on it.
        let links = Arc::new(group::GroupLinks::new(read()?));
        let mut cache = self.inner.groups.lock().unwrap_or_else(|p| p.into_inner());
        Ok(cache.entry(header.address).or_insert(links).clone())
    }

    /// The links of the group at `header` if they were read already.
    pub(crate) fn listed_links(&self, header: &ObjectHeader) -> Option<Arc<group::GroupLinks>> {
        self.inner.groups.lock().unwrap_or_else(|p| p.into_inner()).get(&header.address).cloned()
    }

    /// Count one more name looked up by itself in the group at `header`; returns the count.
    pub(crate) fn count_lookup(&self, header: &ObjectHeader) -> u32 {
        let mut lookups = self.inner.group_lookups.lock().unwrap_or_else(|p| p.into_inner());
        let count = lookups.entry(header.address).or_insert(0);
        *count = count.saturating_add(1);
        *count
    }

    /// Metadata of the dataset at `header`, parsed once and cached.
    pub(crate) fn dataset_meta(&self, name: &str, header: &ObjectHeader) -> Result<Arc<Dataset>> {
        let mut cache = self.inner.datasets.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ds) = cache.get(&header.address) {
            return Ok(ds.clone());
        }
        let ds = Arc::new(Dataset::parse(self, header).in_object(name).in_file(self.path())?);
        cache.insert(header.address, ds.clone());
        Ok(ds)
    }
}

/// The superblock extension is an object header; reading it validates its structure.
/// Its messages (B-tree K values, file space info, driver info) do not affect reading;
/// a shared object header message table would, and is reported as unsupported.
fn check_extension(ctx: &FormatContext, address: u64) -> Result<()> {
    let header = ObjectHeader::read(ctx, address)?;
    if let Some(m) = header.find(msg::METADATA_CACHE_IMAGE) {
        // libhdf5 may leave the newest metadata only in the image, not in place
        return Err(Error::unsupported(
            "the file keeps its metadata in a metadata cache image (H5Pset_mdc_image_config), which h5turbo does not read",
        )
        .at(m.address));
    }
    if let Some(m) = header.find(msg::SHARED_MESSAGE_TABLE) {
        let table = crate::format::sohm::SharedMessages::read(ctx, &m.data, m.address)?;
        ctx.set_shared_messages(table);
    }
    Ok(())
}

/// Tries at reading an object again from a file a SWMR writer is changing: a read that
/// meets metadata the writer is rewriting fails (a checksum, an address past the end
/// the reader saw), and a later try finds it whole. libhdf5 tries such reads 100 times.
const REFRESH_TRIES: u32 = 100;

impl Object {
    /// This object as the file holds it now (see `File::refreshed`), reached by the same
    /// path: for a dataset its shape, layout and chunk index as the writer left them. A
    /// try that fails on the file's format is made again, 1 ms later, up to
    /// REFRESH_TRIES times.
    pub fn refreshed(&self) -> Result<Object> {
        let mut tries = 1;
        loop {
            match self.read_again() {
                Err(e) if e.kind() == crate::error::ErrorKind::Format && tries < REFRESH_TRIES => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                outcome => return outcome,
            }
        }
    }

    /// One try. The chunk index is read here, right after the file's size was taken,
    /// not at the first read: a SWMR writer writes a chunk before the index entry that
    /// points to it, so an index read now points only inside that size, or (an entry
    /// written since) fails this try and the next takes the size again. Read later, it
    /// could point past the size this view was given.
    fn read_again(&self) -> Result<Object> {
        let object = self.file.refreshed()?.get(&self.name)?;
        if object.kind() == ObjectKind::Dataset {
            object.dataset()?.chunk_index(&object.file).in_object(&object.name).in_file(object.file.path())?;
        }
        Ok(object)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn address(&self) -> u64 {
        self.header.address
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn header(&self) -> &ObjectHeader {
        &self.header
    }

    pub fn kind(&self) -> ObjectKind {
        let h = &self.header;
        if h.has(msg::LAYOUT) || (h.has(msg::DATASPACE) && h.has(msg::DATATYPE) && !h.has(msg::LINK_INFO)) {
            ObjectKind::Dataset
        } else if h.has(msg::DATATYPE) && !h.has(msg::SYMBOL_TABLE) && !h.has(msg::LINK_INFO) && !h.has(msg::LINK) {
            ObjectKind::Datatype
        } else {
            ObjectKind::Group
        }
    }

    /// The dataset behind this object, or an error if it is not one.
    pub fn dataset(&self) -> Result<Arc<Dataset>> {
        self.file.check_open()?;
        if self.kind() != ObjectKind::Dataset {
            return Err(Error::invalid_argument(format!("'{}' is not a dataset", self.name)));
        }
        self.file.dataset_meta(&self.name, &self.header)
    }

    /// Read a selection of this dataset into `out` in the numpy layout of its dtype;
    /// errors name the file and the dataset.
    pub fn read_numpy(&self, sel: &[crate::engine::AxisSelection], out: &mut [u8], threads: usize) -> Result<()> {
        let ds = self.dataset()?;
        ds.read_numpy(&self.file, sel, out, threads).in_object(&self.name).in_file(self.file.path())
    }

    /// Read a selection of a dataset with variable-length parts; errors name the file
    /// and the dataset.
    pub fn read_vlen(&self, sel: &[crate::engine::AxisSelection], threads: usize) -> Result<Vec<crate::convert::values::VlenValue>> {
        let ds = self.dataset()?;
        ds.read_vlen(&self.file, sel, threads).in_object(&self.name).in_file(self.file.path())
    }

    /// Read a selection of a compound dataset with variable-length parts field by
    /// field (see convert::columns); errors name the file and the dataset.
    pub fn read_vlen_columns(&self, sel: &[crate::engine::AxisSelection], threads: usize) -> Result<Vec<crate::convert::columns::Column>> {
        let ds = self.dataset()?;
        ds.read_vlen_columns(&self.file, sel, threads).in_object(&self.name).in_file(self.file.path())
    }

    /// The datatype a committed (named) datatype object stores.
    pub fn stored_datatype(&self) -> Result<crate::format::datatype::Datatype> {
        self.file.check_open()?;
        if self.kind() != ObjectKind::Datatype {
            return Err(Error::invalid_argument(format!("'{}' is not a committed datatype", self.name)));
        }
        let m = self
            .header
            .find(msg::DATATYPE)
            .ok_or_else(|| Error::format("committed datatype without a datatype message").at(self.header.address))?;
        crate::format::datatype::Datatype::parse(&m.data, m.address, self.file.ctx().sizes())
            .in_object(&self.name)
            .in_file(self.file.path())
    }

    fn child_path(&self, name: &str) -> String {
        if self.name.ends_with('/') {
            format!("{}{}", self.name, name)
        } else {
            format!("{}/{}", self.name, name)
        }
    }
}

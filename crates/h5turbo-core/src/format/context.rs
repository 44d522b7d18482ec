//! What every parser needs to read metadata: the byte source, the field widths from
//! the superblock and the base address that file addresses are relative to.

use super::reader::{ByteReader, Located, Sizes};
use crate::error::{Error, ErrorKind, Result};
use crate::io::ReadAt;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Metadata reads up to SMALL_READ bytes are served from per-thread copies of the
/// META_BLOCK-aligned blocks around them: parsing one object touches a dozen small
/// structures (header prefix, messages, heap, B-tree node) that lie close together,
/// and a pread per structure costs more kernel time than copying the block once.
/// A thread keeps the META_BLOCKS blocks it used last: objects that are read together
/// (a fast5 read's group, its Raw and channel_id groups, the Signal dataset) sit in a
/// few blocks visited in turn, which one block alone read again and again (4926 block
/// reads for 1415 distinct blocks in three multi-read files; with 8 blocks and the
/// reads taken in file order, 2025).
const SMALL_READ: u64 = 4 << 10;
const META_BLOCK: u64 = 16 << 10;
const META_BLOCKS: usize = 8;

/// Tells sources apart in the per-thread block (clones of a context share the id).
static NEXT_SOURCE_ID: AtomicU64 = AtomicU64::new(1);

struct MetaBlock {
    source: u64,
    start: u64,
    bytes: Vec<u8>,
    /// When it was last used (a per-thread counter), to replace the oldest.
    used: u64,
}

#[derive(Default)]
struct MetaBlocks {
    blocks: Vec<MetaBlock>,
    clock: u64,
}

impl MetaBlocks {
    /// The cached block (source, start), or the slot to read it into (a new one, or
    /// the least recently used), emptied; and whether it still has to be read.
    fn slot(&mut self, source: u64, start: u64) -> (&mut MetaBlock, bool) {
        self.clock += 1;
        let clock = self.clock;
        let found = self.blocks.iter().position(|b| b.source == source && b.start == start && !b.bytes.is_empty());
        let (at, fresh) = match found {
            Some(at) => (at, false),
            None if self.blocks.len() < META_BLOCKS => {
                self.blocks.push(MetaBlock { source, start, bytes: Vec::new(), used: 0 });
                (self.blocks.len() - 1, true)
            }
            None => ((0..self.blocks.len()).min_by_key(|&i| self.blocks[i].used).unwrap_or(0), true),
        };
        let block = &mut self.blocks[at];
        block.used = clock;
        if fresh {
            (block.source, block.start) = (source, start);
            block.bytes.clear();
        }
        (block, fresh)
    }
}

thread_local! {
    static RECENT_BLOCKS: RefCell<MetaBlocks> = RefCell::new(MetaBlocks::default());
}

/// Shared, immutable view of an open HDF5 file for the format parsers.
#[derive(Clone)]
pub struct FormatContext {
    source: Arc<dyn ReadAt>,
    path: Arc<PathBuf>,
    sizes: Sizes,
    /// Absolute file position that HDF5 address 0 refers to (non-zero after a userblock).
    base: u64,
    /// This source's id in the per-thread metadata block.
    id: u64,
    /// The shared object header message indexes, when the file has them (set once
    /// the superblock extension is read).
    shared_messages: Arc<std::sync::OnceLock<super::sohm::SharedMessages>>,
}

impl FormatContext {
    pub fn new(source: Arc<dyn ReadAt>, path: &Path, sizes: Sizes, base: u64) -> Self {
        let id = NEXT_SOURCE_ID.fetch_add(1, Ordering::Relaxed);
        FormatContext { source, path: Arc::new(path.to_path_buf()), sizes, base, id, shared_messages: Arc::default() }
    }

    /// Record the file's shared message indexes (the first call wins).
    pub fn set_shared_messages(&self, messages: super::sohm::SharedMessages) {
        let _ = self.shared_messages.set(messages);
    }

    /// The body of a message of type `type_id` kept in the shared message heap, with
    /// its address: parse it with `body.reader(sizes)` (or at `body.address()`) so
    /// that its errors name its place in the heap.
    pub fn shared_message(&self, type_id: u16, heap_id: &[u8; 8]) -> Result<Located<Vec<u8>>> {
        match self.shared_messages.get() {
            Some(messages) => messages.message(self, type_id, heap_id),
            None => Err(Error::format("a message in the shared message heap, but the file has no shared message table")),
        }
    }

    pub fn sizes(&self) -> Sizes {
        self.sizes
    }
    pub fn base(&self) -> u64 {
        self.base
    }
    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn source(&self) -> &Arc<dyn ReadAt> {
        &self.source
    }

    /// Bytes available from HDF5 address `addr` to the end of the file.
    pub fn available_from(&self, addr: u64) -> u64 {
        match addr.checked_add(self.base) {
            Some(abs) => self.source.len().saturating_sub(abs),
            None => 0,
        }
    }

    /// Absolute file position of HDF5 address `addr`, checked against the file size.
    pub fn absolute(&self, addr: u64, len: u64, what: &str) -> Result<u64> {
        let abs = addr.checked_add(self.base);
        match abs.and_then(|a| a.checked_add(len)) {
            Some(end) if end <= self.source.len() => Ok(abs.unwrap_or(0)),
            _ => Err(Error::format(format!(
                "{} of {} bytes at address {} lies beyond the end of the file ({} bytes)",
                what,
                len,
                addr,
                self.source.len()
            ))
            .at(addr)),
        }
    }

    /// Read `len` bytes of metadata at HDF5 address `addr`. The length is checked
    /// against the file size before anything is allocated.
    pub fn read(&self, addr: u64, len: u64, what: &str) -> Result<Vec<u8>> {
        let abs = self.absolute(addr, len, what)?;
        if let Some(buf) = self.read_from_block(abs, len as usize).map_err(|e| e.at(addr))? {
            return Ok(buf);
        }
        let mut buf = vec![0u8; len as usize];
        self.source.read_exact_at(&mut buf, abs).map_err(|e| e.at(addr))?;
        Ok(buf)
    }

    /// `len` bytes at `abs` from this thread's metadata blocks (reading a block first if
    /// it is not among them; a read across a block boundary takes the end of one and the
    /// start of the next), copied once into a buffer not zeroed first; None when the read
    /// is not small or a block cannot be read whole (a file cut short since it was
    /// opened: the caller then reads just those bytes and reports what fails). A failure of the source itself (the system, a file
    /// object's exception, Ctrl-C in its read) is the read's error, not retried: a
    /// second read that succeeded would hide it.
    fn read_from_block(&self, abs: u64, len: usize) -> Result<Option<Vec<u8>>> {
        if len as u64 > SMALL_READ || self.source.in_memory() {
            return Ok(None);
        }
        let fill = |blocks: &mut MetaBlocks| -> Result<Option<Vec<u8>>> {
            let mut buf = Vec::with_capacity(len);
            while buf.len() < len {
                let at = abs + buf.len() as u64;
                let start = at - at % META_BLOCK;
                let (block, fresh) = blocks.slot(self.id, start);
                if fresh {
                    // absolute() checked abs + len <= source.len(), so the blocks cover it
                    let end = (start + META_BLOCK).min(self.source.len());
                    block.bytes.resize((end - start) as usize, 0);
                    if let Err(e) = self.source.read_exact_at(&mut block.bytes, start) {
                        block.bytes.clear();
                        return match e.kind() {
                            ErrorKind::Io | ErrorKind::Closed => Err(e),
                            _ => Ok(None),
                        };
                    }
                }
                let from = (at - start) as usize;
                let take = (len - buf.len()).min(block.bytes.len().saturating_sub(from));
                match block.bytes.get(from..from + take) {
                    Some(bytes) if take > 0 => buf.extend_from_slice(bytes),
                    _ => return Ok(None),
                }
            }
            Ok(Some(buf))
        };
        RECENT_BLOCKS
            .try_with(|cell| match cell.try_borrow_mut() {
                Ok(mut blocks) => fill(&mut blocks),
                Err(_) => Ok(None),
            })
            .unwrap_or(Ok(None))
    }

    /// Read at least `min_len` and up to `max_len` bytes at `addr`, for a structure
    /// read speculatively before its length is known: fewer when the file ends first,
    /// or when the metadata block holding `addr` ends first and still holds `min_len`
    /// (the rest of a speculative read is often raw data no one needs).
    pub fn read_speculative(&self, addr: u64, min_len: u64, max_len: u64, what: &str) -> Result<Vec<u8>> {
        let mut len = max_len.min(self.available_from(addr)).max(min_len);
        if let Some(abs) = addr.checked_add(self.base) {
            let in_block = META_BLOCK - abs % META_BLOCK;
            if !self.source.in_memory() && in_block >= min_len {
                len = len.min(in_block);
            }
        }
        self.read(addr, len, what)
    }

    /// Read up to `max_len` bytes at `addr` (fewer if the file ends first): for
    /// structures whose length is only known after parsing their prefix.
    pub fn read_up_to(&self, addr: u64, max_len: u64, what: &str) -> Result<Vec<u8>> {
        let len = max_len.min(self.available_from(addr));
        if len == 0 {
            return Err(Error::format(format!("{} at address {} is past the end of the file", what, addr)).at(addr));
        }
        self.read(addr, len, what)
    }

    /// A cursor over `data`, which was read from HDF5 address `addr`.
    pub fn reader<'a>(&self, data: &'a [u8], addr: u64) -> ByteReader<'a> {
        ByteReader::new(data, addr, self.sizes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemSource;
    use std::sync::Mutex;

    /// A source that reads like a file (not in memory) and records every read.
    struct Recorded {
        inner: MemSource,
        reads: Mutex<Vec<(u64, usize)>>,
    }

    impl ReadAt for Recorded {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
            self.reads.lock().unwrap().push((offset, buf.len()));
            self.inner.read_exact_at(buf, offset)
        }
        fn len(&self) -> u64 {
            self.inner.len()
        }
    }

    fn context(len: usize) -> (FormatContext, Arc<Recorded>, Vec<u8>) {
        let bytes: Vec<u8> = (0..len).map(|i| (i * 131 % 251) as u8).collect();
        let source = Arc::new(Recorded { inner: MemSource::new(bytes.clone()), reads: Mutex::default() });
        let ctx = FormatContext::new(source.clone(), Path::new("recorded"), Sizes::DEFAULT, 0);
        (ctx, source, bytes)
    }

    #[test]
    fn a_small_read_across_two_blocks_is_served_from_both() {
        let (ctx, source, bytes) = context(3 * META_BLOCK as usize);
        let at = META_BLOCK - 100;
        assert_eq!(ctx.read(at, 300, "x").unwrap(), &bytes[at as usize..at as usize + 300]);
        assert_eq!(*source.reads.lock().unwrap(), [(0, META_BLOCK as usize), (META_BLOCK, META_BLOCK as usize)]);
        // both blocks are kept: reads inside either need no more reads
        assert_eq!(ctx.read(10, 20, "x").unwrap(), &bytes[10..30]);
        assert_eq!(ctx.read(META_BLOCK + 10, 20, "x").unwrap(), &bytes[META_BLOCK as usize + 10..META_BLOCK as usize + 30]);
        assert_eq!(source.reads.lock().unwrap().len(), 2);
    }

    #[test]
    fn a_read_across_into_the_files_last_short_block_ends_at_the_end() {
        let len = META_BLOCK as usize + 50;
        let (ctx, _, bytes) = context(len);
        let at = META_BLOCK - 30;
        assert_eq!(ctx.read(at, 80, "x").unwrap(), &bytes[at as usize..]);
        assert!(ctx.read(at, 81, "x").is_err());
    }

    #[test]
    fn a_speculative_read_stops_at_its_blocks_end_when_that_holds_the_minimum() {
        let (ctx, _, bytes) = context(3 * META_BLOCK as usize);
        let at = META_BLOCK - 600;
        assert_eq!(ctx.read_speculative(at, 40, 4096, "x").unwrap(), &bytes[at as usize..META_BLOCK as usize]);
        // too little left in the block: the whole length, across the boundary
        let at = META_BLOCK - 20;
        assert_eq!(ctx.read_speculative(at, 40, 4096, "x").unwrap(), &bytes[at as usize..at as usize + 4096]);
        // the file's end bounds it as well; less than the minimum left is an error
        let end = 3 * META_BLOCK;
        assert_eq!(ctx.read_speculative(end - 50, 40, 4096, "x").unwrap(), &bytes[end as usize - 50..]);
        assert!(ctx.read_speculative(end - 30, 40, 4096, "x").is_err());
    }
}

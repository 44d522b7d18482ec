//! Test-only helpers for the chunk-index tests: inflate fixtures, a small JSON
//! reader, the superblock field widths, an object-header message walker and a
//! minimal v2 B-tree traversal. None of this is the crate's object model; it only
//! gets the tests to the layout message and the index structures.
#![allow(dead_code)]

use h5turbo_core::format::chunk_index::ChunkRecordSource;
use h5turbo_core::format::{FormatContext, Sizes};
use h5turbo_core::io::MemSource;
use h5turbo_core::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/chunkindex")
}

/// Bytes of a gzipped fixture.
pub fn gunzip(path: &Path) -> Vec<u8> {
    let gz = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e));
    let isize = u32::from_le_bytes(gz[gz.len() - 4..].try_into().unwrap()) as usize;
    let mut out = vec![0u8; isize];
    let n = libdeflater::Decompressor::new().gzip_decompress(&gz, &mut out).expect("gzip");
    out.truncate(n);
    out
}

/// Offset and length widths from a superblock at file offset 0 (versions 0 to 3).
pub fn sizes_of(bytes: &[u8]) -> Sizes {
    assert_eq!(&bytes[..8], b"\x89HDF\r\n\x1a\n", "fixtures have no user block");
    match bytes[8] {
        0 | 1 => Sizes { offset: bytes[13], length: bytes[14] },
        _ => Sizes { offset: bytes[9], length: bytes[10] },
    }
}

/// File offset of the superblock: 0, or after a user block of 512, 1024, 2048... bytes.
pub fn superblock_offset(bytes: &[u8]) -> u64 {
    let mut at = 0usize;
    while bytes.get(at..at + 8) != Some(b"\x89HDF\r\n\x1a\n") {
        at = if at == 0 { 512 } else { at * 2 };
        assert!(at < bytes.len(), "no HDF5 superblock");
    }
    at as u64
}

/// A context whose base address is the superblock's offset (files with a user block).
pub fn context_with_base(bytes: Vec<u8>) -> FormatContext {
    let base = superblock_offset(&bytes);
    let sizes = sizes_of(&bytes[base as usize..]);
    FormatContext::new(Arc::new(MemSource::new(bytes)), Path::new("corpus"), sizes, base)
}

pub fn context(bytes: Vec<u8>) -> FormatContext {
    let sizes = sizes_of(&bytes);
    FormatContext::new(Arc::new(MemSource::new(bytes)), Path::new("fixture"), sizes, 0)
}

// ---------------------------------------------------------------- JSON

#[derive(Debug, Clone)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i128),
    Str(String),
    Arr(Vec<Json>),
    Obj(BTreeMap<String, Json>),
}

impl Json {
    pub fn parse(text: &str) -> Json {
        let mut p = Parser { s: text.as_bytes(), i: 0 };
        p.value()
    }
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(m) => m.get(key),
            _ => None,
        }
    }
    pub fn obj(&self) -> &BTreeMap<String, Json> {
        match self {
            Json::Obj(m) => m,
            other => panic!("not an object: {:?}", other),
        }
    }
    pub fn arr(&self) -> &[Json] {
        match self {
            Json::Arr(a) => a,
            other => panic!("not an array: {:?}", other),
        }
    }
    pub fn int(&self) -> i128 {
        match self {
            Json::Int(v) => *v,
            other => panic!("not an integer: {:?}", other),
        }
    }
    pub fn u64(&self) -> u64 {
        self.int() as u64
    }
    pub fn str(&self) -> &str {
        match self {
            Json::Str(s) => s,
            other => panic!("not a string: {:?}", other),
        }
    }
    pub fn bool(&self) -> bool {
        matches!(self, Json::Bool(true))
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) {
        self.ws();
        assert_eq!(self.s[self.i], c, "JSON: expected {:?} at {}", c as char, self.i);
        self.i += 1;
    }
    fn value(&mut self) -> Json {
        self.ws();
        match self.s[self.i] {
            b'{' => {
                self.i += 1;
                let mut m = BTreeMap::new();
                self.ws();
                if self.s[self.i] == b'}' {
                    self.i += 1;
                    return Json::Obj(m);
                }
                loop {
                    self.ws();
                    let Json::Str(k) = self.value() else { panic!("JSON key") };
                    self.eat(b':');
                    let v = self.value();
                    m.insert(k, v);
                    self.ws();
                    self.i += 1;
                    if self.s[self.i - 1] == b'}' {
                        return Json::Obj(m);
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.s[self.i] == b']' {
                    self.i += 1;
                    return Json::Arr(a);
                }
                loop {
                    a.push(self.value());
                    self.ws();
                    self.i += 1;
                    if self.s[self.i - 1] == b']' {
                        return Json::Arr(a);
                    }
                }
            }
            b'"' => {
                self.i += 1;
                let start = self.i;
                while self.s[self.i] != b'"' {
                    assert_ne!(self.s[self.i], b'\\', "JSON escapes are not used by the fixtures");
                    self.i += 1;
                }
                self.i += 1;
                Json::Str(String::from_utf8(self.s[start..self.i - 1].to_vec()).unwrap())
            }
            b't' => {
                self.i += 4;
                Json::Bool(true)
            }
            b'f' => {
                self.i += 5;
                Json::Bool(false)
            }
            b'n' => {
                self.i += 4;
                Json::Null
            }
            _ => {
                let start = self.i;
                while self.i < self.s.len() && (self.s[self.i] == b'-' || self.s[self.i].is_ascii_digit()) {
                    self.i += 1;
                }
                Json::Int(std::str::from_utf8(&self.s[start..self.i]).unwrap().parse().unwrap())
            }
        }
    }
}

// ---------------------------------------------------------------- object headers

/// (message type, body bytes, body address) of every message of an object header.
pub fn header_messages(bytes: &[u8], sizes: Sizes, address: u64) -> Vec<(u16, Vec<u8>, u64)> {
    let a = address as usize;
    let mut out = Vec::new();
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    let v2 = &bytes[a..a + 4] == b"OHDR";
    if v2 {
        let flags = bytes[a + 5];
        let mut p = a + 6;
        if flags & 0x20 != 0 {
            p += 16;
        }
        if flags & 0x10 != 0 {
            p += 4;
        }
        let width = 1usize << (flags & 3);
        let len = le(&bytes[p..p + width]) as usize;
        p += width;
        blocks.push((p, p + len));
        walk_v2(bytes, sizes, flags, &mut blocks, &mut out);
    } else {
        assert_eq!(bytes[a], 1, "object header version");
        let len = le(&bytes[a + 8..a + 12]) as usize;
        blocks.push((a + 16, a + 16 + len));
        walk_v1(bytes, sizes, &mut blocks, &mut out);
    }
    out
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0, |acc, &x| (acc << 8) | x as u64)
}

fn continuation(body: &[u8], sizes: Sizes) -> (usize, usize) {
    let o = sizes.offset as usize;
    (le(&body[..o]) as usize, le(&body[o..o + sizes.length as usize]) as usize)
}

fn walk_v1(bytes: &[u8], sizes: Sizes, blocks: &mut Vec<(usize, usize)>, out: &mut Vec<(u16, Vec<u8>, u64)>) {
    while let Some((mut p, end)) = blocks.pop() {
        while p + 8 <= end {
            let kind = le(&bytes[p..p + 2]) as u16;
            let size = le(&bytes[p + 2..p + 4]) as usize;
            let body = &bytes[p + 8..p + 8 + size];
            if kind == 0x10 {
                let (addr, len) = continuation(body, sizes);
                blocks.push((addr, addr + len));
            }
            out.push((kind, body.to_vec(), (p + 8) as u64));
            p += 8 + size;
        }
    }
}

fn walk_v2(bytes: &[u8], sizes: Sizes, flags: u8, blocks: &mut Vec<(usize, usize)>, out: &mut Vec<(u16, Vec<u8>, u64)>) {
    let header_len = if flags & 0x04 != 0 { 6 } else { 4 };
    let mut first = true;
    while let Some((mut p, end)) = blocks.pop() {
        if !first {
            assert_eq!(&bytes[p..p + 4], b"OCHK");
            p += 4;
        }
        first = false;
        // Chunk 0's length excludes its checksum; continuation lengths were cut above.
        while p + header_len <= end {
            let kind = bytes[p] as u16;
            let size = le(&bytes[p + 1..p + 3]) as usize;
            let body_at = p + header_len;
            if body_at + size > end {
                break;
            }
            let body = &bytes[body_at..body_at + size];
            if kind == 0x10 {
                let (addr, len) = continuation(body, sizes);
                // Continuation blocks: "OCHK", messages, checksum.
                blocks.push((addr, addr + len - 4));
            }
            out.push((kind, body.to_vec(), body_at as u64));
            p = body_at + size;
        }
    }
}

pub fn message(messages: &[(u16, Vec<u8>, u64)], kind: u16) -> Option<(&[u8], u64)> {
    messages.iter().find(|m| m.0 == kind).map(|m| (m.1.as_slice(), m.2))
}

// ---------------------------------------------------------------- v2 B-tree (test only)

/// Just enough of a v2 B-tree walk to feed chunk records to the index code in tests;
/// the crate's own reader lives in format/btree_v2.rs.
pub struct TestBTreeV2 {
    record_type: u8,
    record_size: usize,
    node_size: usize,
    depth: u16,
    root: Option<u64>,
    root_records: u64,
}

impl TestBTreeV2 {
    pub fn open(ctx: &FormatContext, address: u64) -> Result<Self> {
        let s = ctx.sizes();
        let len = 4 + 1 + 1 + 4 + 2 + 2 + 1 + 1 + s.offset as u64 + 2 + s.length as u64 + 4;
        let b = ctx.read(address, len, "BTHD")?;
        h5turbo_core::format::checksum::verify_trailing(&b, "BTHD", address)?;
        let mut r = ctx.reader(&b, address);
        r.signature(b"BTHD", "v2 B-tree header")?;
        r.u8()?;
        let record_type = r.u8()?;
        let node_size = r.u32()? as usize;
        let record_size = r.u16()? as usize;
        let depth = r.u16()?;
        r.skip(2)?;
        let root = r.address_field()?;
        let root_records = r.u16()? as u64;
        Ok(TestBTreeV2 { record_type, record_size, node_size, depth, root, root_records })
    }

    fn enc_size(v: u64) -> usize {
        (63 - v.max(1).leading_zeros() as usize) / 8 + 1
    }

    fn bad(what: &str) -> h5turbo_core::Error {
        h5turbo_core::Error::format(format!("test v2 B-tree: {}", what))
    }

    /// (max records, cumulative max records, width of cumulative count) per depth.
    fn node_info(&self, offset_size: usize) -> Result<Vec<(u64, u64, usize)>> {
        if self.record_size == 0 || self.node_size <= 10 || self.depth > 16 {
            return Err(Self::bad("impossible header"));
        }
        let leaf_max = ((self.node_size - 10) / self.record_size) as u64;
        let mut info = vec![(leaf_max, leaf_max, 0usize)];
        let nrec_size = Self::enc_size(leaf_max);
        for d in 1..=self.depth as usize {
            let ptr = offset_size + nrec_size + if d > 1 { info[d - 1].2 } else { 0 };
            let room = self.node_size.checked_sub(10 + ptr).ok_or_else(|| Self::bad("node too small"))?;
            let max = (room / (self.record_size + ptr)) as u64;
            let cum = (max + 1).checked_mul(info[d - 1].1).and_then(|v| v.checked_add(max));
            let cum = cum.ok_or_else(|| Self::bad("record count overflow"))?;
            info.push((max, cum, Self::enc_size(cum)));
        }
        Ok(info)
    }

    fn visit(
        &self,
        ctx: &FormatContext,
        address: u64,
        nrec: u64,
        depth: usize,
        info: &[(u64, u64, usize)],
        f: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let o = ctx.sizes().offset as usize;
        let nrec_size = Self::enc_size(info[0].0);
        if nrec > info[depth].0 {
            return Err(Self::bad("too many records in node"));
        }
        let b = ctx.read(address, self.node_size as u64, "v2 B-tree node")?;
        let records_at = 6;
        let rec = |i: usize| &b[records_at + i * self.record_size..records_at + (i + 1) * self.record_size];
        let used = records_at + nrec as usize * self.record_size;
        if depth == 0 {
            if &b[..4] != b"BTLF" || used + 4 > b.len() {
                return Err(Self::bad("bad leaf"));
            }
            h5turbo_core::format::checksum::verify_trailing(&b[..used + 4], "BTLF", address)?;
            for i in 0..nrec as usize {
                f(rec(i))?;
            }
            return Ok(());
        }
        let total_size = if depth > 1 { info[depth - 1].2 } else { 0 };
        let ptr_size = o + nrec_size + total_size;
        let ptrs_end = used + (nrec as usize + 1) * ptr_size;
        if &b[..4] != b"BTIN" || ptrs_end + 4 > b.len() {
            return Err(Self::bad("bad internal node"));
        }
        h5turbo_core::format::checksum::verify_trailing(&b[..ptrs_end + 4], "BTIN", address)?;
        for i in 0..=nrec as usize {
            let p = used + i * ptr_size;
            let child = le(&b[p..p + o]);
            let child_nrec = le(&b[p + o..p + o + nrec_size]);
            self.visit(ctx, child, child_nrec, depth - 1, info, f)?;
            if i < nrec as usize {
                f(rec(i))?;
            }
        }
        Ok(())
    }
}

impl ChunkRecordSource for TestBTreeV2 {
    fn record_type(&self) -> u8 {
        self.record_type
    }
    fn record_size(&self) -> usize {
        self.record_size
    }
    fn for_each_record(&self, ctx: &FormatContext, f: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let Some(root) = self.root else { return Ok(()) };
        let info = self.node_info(ctx.sizes().offset as usize)?;
        self.visit(ctx, root, self.root_records, self.depth as usize, &info, f)
    }
}

/// FNV-1a 64 over "c0,c1:address:size:mask;" per chunk (matches make_corpus_expected.py).
pub fn digest(chunks: &[(Vec<u64>, u64, u64, u32)]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for (c, a, s, m) in chunks {
        let coords: Vec<String> = c.iter().map(|v| v.to_string()).collect();
        for b in format!("{}:{}:{}:{};", coords.join(","), a, s, m).bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
    }
    format!("{:016x}", h)
}

//! Test support: a minimal JSON reader and a minimal object header walker, enough to
//! find the messages of a dataset or attribute whose header address h5py reported.
//! (The real object header reader lives in the format layer; this one only serves
//! the datatype tests and checks nothing beyond what they need.)

#![allow(dead_code)]

use h5turbo_core::format::{FormatContext, Sizes};
use h5turbo_core::io::MemSource;
use std::path::Path;
use std::sync::Arc;

// ---------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// Kept as text: addresses and sizes must not pass through f64.
    Num(String),
    Str(String),
    Arr(Vec<Json>),
    /// Keys in file order (the generator sorts them).
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    pub fn str(&self, key: &str) -> Option<&str> {
        match self.get(key) {
            Some(Json::Str(s)) => Some(s),
            _ => None,
        }
    }
    pub fn u64(&self, key: &str) -> Option<u64> {
        match self.get(key) {
            Some(Json::Num(n)) => n.parse().ok(),
            _ => None,
        }
    }
    pub fn array(&self) -> &[Json] {
        match self {
            Json::Arr(items) => items,
            _ => &[],
        }
    }
}

pub fn parse_json(text: &str) -> Json {
    let mut p = JsonParser { s: text.as_bytes(), i: 0 };
    let v = p.value();
    p.ws();
    assert_eq!(p.i, p.s.len(), "trailing data in JSON");
    v
}

struct JsonParser<'a> {
    s: &'a [u8],
    i: usize,
}

impl JsonParser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn value(&mut self) -> Json {
        self.ws();
        match self.s[self.i] {
            b'{' => {
                self.i += 1;
                let mut fields = Vec::new();
                if !self.eat(b'}') {
                    loop {
                        self.ws();
                        let k = self.string();
                        assert!(self.eat(b':'));
                        fields.push((k, self.value()));
                        if self.eat(b'}') {
                            break;
                        }
                        assert!(self.eat(b','));
                    }
                }
                Json::Obj(fields)
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                if !self.eat(b']') {
                    loop {
                        items.push(self.value());
                        if self.eat(b']') {
                            break;
                        }
                        assert!(self.eat(b','));
                    }
                }
                Json::Arr(items)
            }
            b'"' => Json::Str(self.string()),
            b't' => self.word("true", Json::Bool(true)),
            b'f' => self.word("false", Json::Bool(false)),
            b'n' => self.word("null", Json::Null),
            _ => {
                let start = self.i;
                while self.i < self.s.len() && b"+-0123456789.eE".contains(&self.s[self.i]) {
                    self.i += 1;
                }
                Json::Num(String::from_utf8(self.s[start..self.i].to_vec()).unwrap())
            }
        }
    }
    fn word(&mut self, w: &str, v: Json) -> Json {
        assert!(self.s[self.i..].starts_with(w.as_bytes()));
        self.i += w.len();
        v
    }
    fn string(&mut self) -> String {
        assert_eq!(self.s[self.i], b'"');
        self.i += 1;
        let mut out = String::new();
        loop {
            let c = self.s[self.i];
            self.i += 1;
            match c {
                b'"' => return out,
                b'\\' => {
                    let e = self.s[self.i];
                    self.i += 1;
                    match e {
                        b'n' => out.push('\n'),
                        b't' => out.push('\t'),
                        b'r' => out.push('\r'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'u' => out.push(self.unicode_escape()),
                        other => out.push(other as char),
                    }
                }
                _ => {
                    // Copy a whole UTF-8 sequence.
                    let start = self.i - 1;
                    let len = match c {
                        0xF0..=0xFF => 4,
                        0xE0..=0xEF => 3,
                        0xC0..=0xDF => 2,
                        _ => 1,
                    };
                    self.i = start + len;
                    out.push_str(std::str::from_utf8(&self.s[start..start + len]).unwrap());
                }
            }
        }
    }
    fn hex4(&mut self) -> u32 {
        let h = std::str::from_utf8(&self.s[self.i..self.i + 4]).unwrap();
        self.i += 4;
        u32::from_str_radix(h, 16).unwrap()
    }
    fn unicode_escape(&mut self) -> char {
        let hi = self.hex4();
        if (0xD800..0xDC00).contains(&hi) && self.s[self.i..].starts_with(b"\\u") {
            self.i += 2;
            let lo = self.hex4();
            return char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).unwrap_or('\u{fffd}');
        }
        char::from_u32(hi).unwrap_or('\u{fffd}')
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{:02x}", b)).collect()
}

/// FNV-1a 64, as the generator computes it for large values.
pub fn fnv1a(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h = (h ^ b as u64).wrapping_mul(0x100000001b3);
    }
    format!("{:016x}", h)
}

// ---------------------------------------------------------------------------
// Files and object headers
// ---------------------------------------------------------------------------

/// Open a file in memory; sizes and base come from the superblock.
pub fn open(path: &Path) -> FormatContext {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e));
    let (sizes, base) = superblock(&bytes);
    FormatContext::new(Arc::new(MemSource::new(bytes)), path, sizes, base)
}

fn superblock(bytes: &[u8]) -> (Sizes, u64) {
    let mut at = 0usize;
    while at + 16 <= bytes.len() {
        if &bytes[at..at + 8] == b"\x89HDF\r\n\x1a\n" {
            let (o, l) = match bytes[at + 8] {
                0 | 1 => (bytes[at + 13], bytes[at + 14]),
                _ => (bytes[at + 9], bytes[at + 10]),
            };
            return (Sizes { offset: o, length: l }, at as u64);
        }
        at = if at == 0 { 512 } else { at * 2 };
    }
    panic!("no HDF5 superblock");
}

#[derive(Debug, Clone)]
pub struct Message {
    pub kind: u16,
    pub flags: u8,
    pub address: u64,
    pub body: Vec<u8>,
}

pub const MSG_DATASPACE: u16 = 0x0001;
pub const MSG_DATATYPE: u16 = 0x0003;
pub const MSG_FILL_OLD: u16 = 0x0004;
pub const MSG_FILL_NEW: u16 = 0x0005;
pub const MSG_LAYOUT: u16 = 0x0008;
pub const MSG_ATTRIBUTE: u16 = 0x000C;
const MSG_CONTINUATION: u16 = 0x0010;

fn read(ctx: &FormatContext, addr: u64, len: u64) -> Vec<u8> {
    ctx.read(addr, len, "test read").unwrap()
}

fn uint(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |acc, &x| (acc << 8) | x as u64)
}

/// All messages of the object header at `addr` (versions 1 and 2), continuations followed.
pub fn messages(ctx: &FormatContext, addr: u64) -> Vec<Message> {
    let head = read(ctx, addr, 16.min(ctx.available_from(addr)));
    let mut out = Vec::new();
    let mut blocks = Vec::new();
    let v2 = &head[..4] == b"OHDR";
    let mut creation_order = false;
    if v2 {
        let flags = head[5];
        creation_order = flags & 0x04 != 0;
        let mut pos = 6 + if flags & 0x20 != 0 { 16 } else { 0 } + if flags & 0x10 != 0 { 4 } else { 0 };
        let width = 1usize << (flags & 3);
        let prefix = read(ctx, addr, (pos + width) as u64);
        let size = uint(&prefix[pos..pos + width]);
        pos += width;
        blocks.push((addr + pos as u64, size));
    } else {
        let size = uint(&head[8..12]);
        blocks.push((addr + 16, size));
    }
    while let Some((start, len)) = blocks.pop() {
        let data = read(ctx, start, len);
        let mut pos = if v2 && &data[..4.min(data.len())] == b"OCHK" { 4 } else { 0 };
        let end = if v2 && pos == 4 { data.len() - 4 } else { data.len() };
        let header = if v2 { 4 + if creation_order { 2 } else { 0 } } else { 8 };
        while pos + header <= end {
            let (kind, size, flags) = if v2 {
                (data[pos] as u16, uint(&data[pos + 1..pos + 3]) as usize, data[pos + 3])
            } else {
                (uint(&data[pos..pos + 2]) as u16, uint(&data[pos + 2..pos + 4]) as usize, data[pos + 4])
            };
            let body_at = pos + header;
            if body_at + size > end {
                break;
            }
            let body = data[body_at..body_at + size].to_vec();
            if kind == MSG_CONTINUATION {
                let o = ctx.sizes().offset as usize;
                let l = ctx.sizes().length as usize;
                blocks.push((uint(&body[..o]), uint(&body[o..o + l])));
            } else if kind != 0 {
                out.push(Message { kind, flags, address: start + body_at as u64, body });
            }
            pos = body_at + size;
        }
    }
    out
}

pub fn find(msgs: &[Message], kind: u16) -> Option<&Message> {
    msgs.iter().find(|m| m.kind == kind)
}

/// Raw data bytes of a dataset from its layout message, if compact or contiguous
/// and allocated; `None` for chunked or unallocated data.
pub fn raw_data(ctx: &FormatContext, layout: &Message, nbytes: u64) -> Option<Vec<u8>> {
    let b = &layout.body;
    let o = ctx.sizes().offset as usize;
    let l = ctx.sizes().length as usize;
    match (b[0], b[1]) {
        (3 | 4, 0) => {
            let size = uint(&b[2..4]) as usize;
            Some(b[4..4 + size].to_vec())
        }
        (3 | 4, 1) => {
            let addr = uint(&b[2..2 + o]);
            let size = uint(&b[2 + o..2 + o + l]);
            (addr != u64::MAX >> (64 - 8 * o as u32) && size >= nbytes).then(|| read(ctx, addr, nbytes))
        }
        (1 | 2, _) if b[2] == 1 => {
            let addr = uint(&b[8..8 + o]);
            (addr != u64::MAX >> (64 - 8 * o as u32)).then(|| read(ctx, addr, nbytes))
        }
        _ => None,
    }
}

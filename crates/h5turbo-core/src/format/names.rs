//! Names as the file stores them: bytes, which libhdf5 neither checks nor decodes.
//! They are UTF-8 almost always; an old C program may have written Latin-1. Such a name
//! must still be listed, looked up, ordered and hashed by its own bytes (two names that
//! differ only in a Latin-1 byte are two members), so it is kept losslessly in a
//! `String`: each byte that is not part of valid UTF-8 (always 0x80-0xFF) stands as one
//! code point of U+10FF80-U+10FFFF, the end of supplementary private use area B, as
//! Python's "surrogateescape" keeps such bytes in a str. `stored_bytes` gives the bytes
//! back for every comparison with the file (name hashes, B-tree keys, name order) and
//! for the front ends, which hand such a name to their users as bytes. The one name
//! this cannot tell apart is a UTF-8 name holding those very code points (unassigned
//! private-use characters no writer is known to use).

use std::borrow::Cow;

/// The code point that stands for the stray byte 0x80 + k is ESCAPE_BASE + 0x80 + k.
const ESCAPE_BASE: u32 = 0x10FF00;
const FIRST_ESCAPE: char = '\u{10FF80}';

/// The name stored as `bytes`: its text when they are UTF-8, else the text with each
/// stray byte escaped.
pub fn name_from_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => escape_stray_bytes(bytes),
    }
}

fn escape_stray_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for &b in chunk.invalid() {
            out.push(escape(b));
        }
    }
    out
}

fn escape(byte: u8) -> char {
    // bytes below 0x80 are ASCII, always valid UTF-8, so never escaped
    char::from_u32(ESCAPE_BASE + u32::from(byte)).expect("U+10FF80..U+10FFFF are code points")
}

/// Whether `name` holds escaped bytes (was not UTF-8 in the file).
pub fn has_stray_bytes(name: &str) -> bool {
    !name.is_ascii() && name.chars().any(|c| c >= FIRST_ESCAPE)
}

/// The bytes the file stores for `name` (the inverse of `name_from_bytes`).
pub fn stored_bytes(name: &str) -> Cow<'_, [u8]> {
    if !has_stray_bytes(name) {
        return Cow::Borrowed(name.as_bytes());
    }
    let mut out = Vec::with_capacity(name.len());
    let mut utf8 = [0u8; 4];
    for c in name.chars() {
        if c >= FIRST_ESCAPE {
            out.push((c as u32 - ESCAPE_BASE) as u8);
        } else {
            out.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
        }
    }
    Cow::Owned(out)
}

/// `text` (a message, a path) for people: each escaped byte shown as \xNN.
pub fn shown(text: String) -> String {
    if !has_stray_bytes(&text) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c >= FIRST_ESCAPE {
            out.push_str(&format!("\\x{:02x}", c as u32 - ESCAPE_BASE));
        } else {
            out.push(c);
        }
    }
    out
}

/// Names in the order libhdf5 keeps them: by their stored bytes.
pub fn stored_order(a: &str, b: &str) -> std::cmp::Ordering {
    if has_stray_bytes(a) || has_stray_bytes(b) {
        stored_bytes(a).cmp(&stored_bytes(b))
    } else {
        a.as_bytes().cmp(b.as_bytes())
    }
}

/// Sort `items` by the stored bytes of their names: a plain byte sort unless some
/// name holds escaped bytes (looked at once, not at every comparison).
pub fn sort_by_stored_name<T>(items: &mut [T], name: impl Fn(&T) -> &str) {
    if items.iter().any(|item| has_stray_bytes(name(item))) {
        items.sort_by(|a, b| stored_order(name(a), name(b)));
    } else {
        items.sort_by(|a, b| name(a).as_bytes().cmp(name(b).as_bytes()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_names_are_their_text() {
        for name in ["x", "λ/日本", ""] {
            assert_eq!(name_from_bytes(name.as_bytes()), name);
            assert_eq!(stored_bytes(name), name.as_bytes());
            assert!(!has_stray_bytes(name));
        }
    }

    #[test]
    fn stray_bytes_round_trip_and_stay_apart() {
        let e9 = name_from_bytes(b"caf\xe9");
        let e8 = name_from_bytes(b"caf\xe8");
        assert_ne!(e9, e8);
        assert!(has_stray_bytes(&e9));
        assert_eq!(&*stored_bytes(&e9), b"caf\xe9");
        // valid UTF-8 around and between stray bytes is kept as text
        let mixed: &[u8] = b"\xff\xc3\xa9x\xe0\x80\xc3";
        let name = name_from_bytes(mixed);
        assert!(name.contains('é'));
        assert_eq!(&*stored_bytes(&name), mixed);
        assert_eq!(shown(format!("no '{}'", e9)), "no 'caf\\xe9'");
    }

    #[test]
    fn order_is_byte_order() {
        let latin = name_from_bytes(b"\xe0 la carte");
        // the raw byte E0 sorts before UTF-8's E6 lead byte, whatever the escape's text
        assert_eq!(stored_order(&latin, "日本"), std::cmp::Ordering::Less);
        assert_eq!(stored_order("z", &latin), std::cmp::Ordering::Less);
    }
}

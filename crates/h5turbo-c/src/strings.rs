//! Arrays of C strings handed to the caller (names, string values), freed by
//! `h5turbo_strings_free`.

use crate::errors::{c_string_lossy, guard_void};
use std::ffi::{c_char, CString};

/// Give `items` to the caller as an array of NUL-terminated strings (each cut at its
/// first NUL) through `out` and `count`. An empty list is a NULL array.
pub(crate) unsafe fn give_strings<I, B>(items: I, out: *mut *mut *mut c_char, count: *mut usize)
where
    I: IntoIterator<Item = B>,
    B: AsRef<[u8]>,
{
    give_optional_strings(items.into_iter().map(Some).collect(), out, count);
}

/// As give_strings, with a NULL pointer for each `None`.
pub(crate) unsafe fn give_optional_strings<B: AsRef<[u8]>>(items: Vec<Option<B>>, out: *mut *mut *mut c_char, count: *mut usize) {
    let strings: Vec<*mut c_char> = items
        .into_iter()
        .map(|s| s.map_or(std::ptr::null_mut(), |s| c_string_lossy(s.as_ref()).into_raw()))
        .collect();
    *count = strings.len();
    *out = if strings.is_empty() {
        std::ptr::null_mut()
    } else {
        Box::into_raw(strings.into_boxed_slice()).cast::<*mut c_char>()
    };
}

/// Free an array of `count` strings returned by h5turbo (NULL is fine).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_strings_free(strings: *mut *mut c_char, count: usize) {
    if strings.is_null() {
        return;
    }
    guard_void(|| {
        // SAFETY: `strings` came from give_strings with this count: a boxed slice of
        // pointers from CString::into_raw.
        let slice = Box::from_raw(std::ptr::slice_from_raw_parts_mut(strings, count));
        for &s in slice.iter() {
            if !s.is_null() {
                drop(CString::from_raw(s));
            }
        }
    });
}

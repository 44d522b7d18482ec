//! Arrays of C strings handed to the caller (names, string values), freed by
//! `h5turbo_strings_free`.

use crate::errors::{c_string_lossy, guard_void};
use h5turbo_core::prelude::{vec_with_capacity, Error};
use std::ffi::{c_char, CString};

/// Give `items` to the caller as an array of NUL-terminated strings (each cut at its
/// first NUL) through `out` and `count`. An empty list is a NULL array. An array that
/// cannot be allocated is an error (nothing given), not the host program aborted.
pub(crate) unsafe fn give_strings<I, B>(items: I, out: *mut *mut *mut c_char, count: *mut usize) -> Result<(), Error>
where
    I: IntoIterator<Item = B>,
    B: AsRef<[u8]>,
{
    give_optional_strings(items.into_iter().map(Some), out, count)
}

/// As give_strings, with a NULL pointer for each `None`.
pub(crate) unsafe fn give_optional_strings<I, B>(items: I, out: *mut *mut *mut c_char, count: *mut usize) -> Result<(), Error>
where
    I: IntoIterator<Item = Option<B>>,
    B: AsRef<[u8]>,
{
    let items = items.into_iter();
    let mut made = Made(vec_with_capacity(items.size_hint().0, "the strings")?);
    for item in items {
        made.0.try_reserve(1).map_err(|_| Error::out_of_memory(format!("cannot allocate {} strings", made.0.len() + 1)))?;
        made.0.push(item.map_or(std::ptr::null_mut(), |s| c_string_lossy(s.as_ref()).into_raw()));
    }
    let strings = std::mem::take(&mut made.0);
    *count = strings.len();
    *out = if strings.is_empty() {
        std::ptr::null_mut()
    } else {
        crate::handles::register(Box::into_raw(strings.into_boxed_slice()).cast::<*mut c_char>())
    };
    Ok(())
}

/// Strings made for the caller, freed if the array is not given after all.
struct Made(Vec<*mut c_char>);

impl Drop for Made {
    fn drop(&mut self) {
        for &s in &self.0 {
            if !s.is_null() {
                // SAFETY: each came from CString::into_raw above and was never given out.
                drop(unsafe { CString::from_raw(s) });
            }
        }
    }
}

/// Free an array of `count` strings returned by h5turbo (NULL is fine).
#[no_mangle]
pub unsafe extern "C" fn h5turbo_strings_free(strings: *mut *mut c_char, count: usize) {
    if strings.is_null() || !crate::handles::unregister(strings, "strings") {
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

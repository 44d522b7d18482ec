//! Buffers whose size comes from a file (a dataset's shape, a datatype's size):
//! allocated fallibly, so a huge size in a damaged file is an error for that object,
//! never an abort of the host program.

use crate::error::{Error, Result};

/// `len` zero bytes, or an error naming `what` when they cannot be had.
///
/// ```
/// use h5turbo_core::prelude::zeroed;
/// assert_eq!(zeroed(3, "a buffer").unwrap(), vec![0u8; 3]);
/// assert!(zeroed(isize::MAX as usize, "a huge buffer").is_err());
/// ```
pub fn zeroed(len: usize, what: &str) -> Result<Vec<u8>> {
    let err = || Error::format(format!("cannot allocate {} ({} bytes)", what, len));
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(len).map_err(|_| err())?;
    // Zeroed allocation (as vec![0; len]) keeps untouched pages unbacked; unlike it, a
    // failure is reported. SAFETY: `layout` has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(err());
    }
    // SAFETY: `ptr` came from the global allocator with `layout` (len bytes, align 1)
    // and holds `len` initialised (zero) bytes.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// `n` elements of `element_size` bytes each, zeroed; an overflowing or unobtainable
/// size is an error naming `what`.
pub fn zeroed_elements(n: usize, element_size: usize, what: &str) -> Result<Vec<u8>> {
    let len = n
        .checked_mul(element_size)
        .ok_or_else(|| Error::format(format!("cannot allocate {}: {} elements of {} bytes overflow", what, n, element_size)))?;
    zeroed(len, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Found by fuzzing (open_read): a ~2 GiB string datatype aborted under a memory
    // limit when its fill value was allocated with vec![0; len].
    #[test]
    fn sizes_that_cannot_be_had_are_errors() {
        assert!(zeroed(isize::MAX as usize, "x").is_err());
        assert!(zeroed_elements(usize::MAX / 2, 4, "x").unwrap_err().to_string().contains("overflow"));
        assert!(zeroed(0, "x").unwrap().is_empty());
        assert_eq!(zeroed_elements(2, 3, "x").unwrap(), vec![0u8; 6]);
    }
}

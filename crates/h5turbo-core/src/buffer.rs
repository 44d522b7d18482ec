//! Buffers whose size comes from a file (a dataset's shape, a datatype's size):
//! allocated fallibly, so a huge size in a damaged file is an error for that object,
//! never an abort of the host program.

use crate::error::{Error, Result};

/// Ask the system to back `buf` with ordinary pages, not transparent huge ones, before
/// it is first written (advisory: ignored where it fails or the buffer is small). For
/// buffers kept a while, a MiB at a time (the chunk cache's): where huge pages are on
/// for all memory (THP `always`; the bindings' allocator no longer asks for them, see
/// benchmarks/results/huge_pages.md), the first write of one can stall for tens of
/// milliseconds compacting fragmented memory (benchmarks/results/small_reads.md).
pub fn advise_small_pages(buf: &mut [u8]) {
    const PAGE: usize = 4096;
    const MADV_NOHUGEPAGE: i32 = 15;
    if buf.len() < 64 * PAGE {
        return;
    }
    let start = (buf.as_mut_ptr() as usize).next_multiple_of(PAGE);
    let end = (buf.as_mut_ptr() as usize + buf.len()) / PAGE * PAGE;
    if end > start {
        // SAFETY: start..end lies inside `buf`, page-aligned; the advice changes no data.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, MADV_NOHUGEPAGE) };
    }
}

/// `len` zero bytes, or an error naming `what` when they cannot be had.
///
/// ```
/// use h5turbo_core::prelude::zeroed;
/// assert_eq!(zeroed(3, "a buffer").unwrap(), vec![0u8; 3]);
/// assert!(zeroed(isize::MAX as usize, "a huge buffer").is_err());
/// ```
pub fn zeroed(len: usize, what: &str) -> Result<Vec<u8>> {
    zeroed_vec(len, what)
}

/// Element types whose all-zero bytes are the value zero.
pub trait Zero: Copy + sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! zero_types {
    ($($t:ty),*) => { $(impl sealed::Sealed for $t {} impl Zero for $t {})* };
}
zero_types!(u8, i8, u16, i16, u32, i32, u64, i64, f32, f64);

/// `n` zero values of `T`, or an error naming `what` when they cannot be had.
pub fn zeroed_vec<T: Zero>(n: usize, what: &str) -> Result<Vec<T>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let layout = layout_that_fits::<T>(n, what)?;
    // Zeroed allocation (as vec![0; n]) keeps untouched pages unbacked; unlike it, a
    // failure is reported. SAFETY: `layout` has a non-zero size.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(cannot_allocate::<T>(n, what));
    }
    // SAFETY: `ptr` came from the global allocator with `layout` (n values of T, T's
    // alignment) and holds n zero values (all-zero bytes are zero for every Zero type).
    Ok(unsafe { Vec::from_raw_parts(ptr.cast::<T>(), n, n) })
}

/// An empty vector with room for `n` values of `T`, or an error naming `what` when the
/// room cannot be had. A vector collected or grown element by element past what the
/// allocator gives aborts the host program (Rust's allocation failure), which a memory
/// limit makes likely for the one vector per selected element of a large read (strings,
/// sequences, references: `ulimit -v`, strict overcommit, a cgroup's limit).
pub fn vec_with_capacity<T>(n: usize, what: &str) -> Result<Vec<T>> {
    layout_that_fits::<T>(n, what)?;
    let mut values = Vec::new();
    values.try_reserve_exact(n).map_err(|_| cannot_allocate::<T>(n, what))?;
    Ok(values)
}

/// Whether `n` values of `T` fit in the machine's memory and swap. Growing a vector
/// fallibly (`try_reserve`) is not enough: the bindings' allocator (mimalloc) maps large
/// blocks without reserving them (MAP_NORESERVE), so the kernel's overcommit check never
/// refuses them, and filling one larger than memory ends in the out-of-memory killer.
pub fn fits_in_memory<T>(n: usize) -> bool {
    std::alloc::Layout::array::<T>(n).is_ok_and(|layout| layout.size() as u64 <= physical_memory())
}

/// The layout of `n` values of `T`, checked against the machine's memory.
fn layout_that_fits<T>(n: usize, what: &str) -> Result<std::alloc::Layout> {
    let layout = std::alloc::Layout::array::<T>(n).map_err(|_| cannot_allocate::<T>(n, what))?;
    check_fits_in_memory(layout.size() as u64, what)?;
    Ok(layout)
}

fn cannot_allocate<T>(n: usize, what: &str) -> Error {
    Error::out_of_memory(format!("cannot allocate {} ({} x {} bytes)", what, n, std::mem::size_of::<T>()))
}

/// More bytes than the machine has are refused before asking the allocator: with the
/// kernel's overcommit the allocation would succeed, and filling it (with a fill value,
/// say: a dataset of 2^36 elements that stores no chunk) would run until the
/// out-of-memory killer ends the host program.
fn check_fits_in_memory(bytes: u64, what: &str) -> Result<()> {
    let memory = physical_memory();
    if bytes <= memory {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    Err(Error::out_of_memory(format!(
        "cannot allocate {}: {:.1} GiB, more than this machine's memory and swap ({:.1} GiB)",
        what,
        gib(bytes),
        gib(memory)
    )))
}

/// The machine's memory and swap in bytes, as the kernel's overcommit heuristic counts
/// them (no bound where the system cannot say).
fn physical_memory() -> u64 {
    static MEMORY: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *MEMORY.get_or_init(|| system_memory().unwrap_or(u64::MAX))
}

#[cfg(target_os = "linux")]
fn system_memory() -> Option<u64> {
    // SAFETY: sysinfo fills the struct it is given; zeroed is a valid start.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return None;
    }
    let unit = u64::from(info.mem_unit.max(1));
    (info.totalram as u64).checked_add(info.totalswap as u64)?.checked_mul(unit)
}

#[cfg(not(target_os = "linux"))]
fn system_memory() -> Option<u64> {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    (pages > 0 && page_size > 0).then(|| (pages as u64).saturating_mul(page_size as u64))
}

/// `n` elements of `element_size` bytes each, zeroed; an overflowing or unobtainable
/// size is an error naming `what`.
pub fn zeroed_elements(n: usize, element_size: usize, what: &str) -> Result<Vec<u8>> {
    let len = n
        .checked_mul(element_size)
        .ok_or_else(|| Error::out_of_memory(format!("cannot allocate {}: {} elements of {} bytes overflow", what, n, element_size)))?;
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
        assert_eq!(zeroed_vec::<i16>(3, "x").unwrap(), vec![0i16; 3]);
        assert!(zeroed_vec::<i16>(usize::MAX / 2, "x").is_err());
    }

    // Found exploring the C library: 2^26 strings under `ulimit -v` aborted the program.
    #[test]
    fn room_that_cannot_be_had_is_an_error() {
        assert!(vec_with_capacity::<u64>(3, "x").unwrap().capacity() >= 3);
        assert!(vec_with_capacity::<u64>(usize::MAX / 4, "x").is_err());
        let too_many = usize::try_from(physical_memory() / 24 + 1).unwrap_or(usize::MAX);
        assert!(vec_with_capacity::<Vec<u8>>(too_many, "strings").unwrap_err().to_string().contains("strings"));
    }

    // Found by fuzzing the C library: 2^36 elements of an unwritten dataset were
    // allocated (overcommit) and filled until the out-of-memory killer came.
    #[test]
    fn more_than_the_machine_holds_is_refused_before_allocating() {
        let too_much = physical_memory().saturating_add(1 << 20);
        let err = zeroed(usize::try_from(too_much).unwrap_or(usize::MAX), "a huge read").unwrap_err();
        assert!(err.to_string().contains("more than this machine's memory and swap"), "{}", err);
    }
}

//! The library's allocator: mimalloc, or the system's when the environment variable
//! H5TURBO_SYSTEM_MALLOC is set (read once, at the first allocation).
//!
//! mimalloc keeps freed memory for reuse: with the system allocator each fast5 file's
//! buffers were fresh pages from the kernel, and zeroing them was a quarter of the
//! time of a single-read file walk (perf, 2026-11-23). The system allocator is there
//! for AddressSanitizer's leak checker, which sees only malloc: the C tests run the
//! sanitizer builds with it, so a batch or string array the library fails to free
//! is caught. Memory handed to the caller goes back through h5turbo's own *_free
//! functions, so it never meets the caller's free().

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_char;
use std::sync::atomic::{AtomicU8, Ordering};

pub struct Allocator;

const UNDECIDED: u8 = 0;
const MIMALLOC: u8 = 1;
const SYSTEM: u8 = 2;
static CHOICE: AtomicU8 = AtomicU8::new(UNDECIDED);

extern "C" {
    fn getenv(name: *const c_char) -> *const c_char;
}

/// The allocator in use, decided at the first call (getenv allocates nothing, so it
/// can run inside the allocator). Threads racing here read the same environment.
#[inline]
fn choice() -> u8 {
    let chosen = CHOICE.load(Ordering::Relaxed);
    if chosen != UNDECIDED {
        return chosen;
    }
    // SAFETY: a NUL-terminated name; getenv only reads.
    let system = unsafe { !getenv(b"H5TURBO_SYSTEM_MALLOC\0".as_ptr().cast()).is_null() };
    let decided = if system { SYSTEM } else { MIMALLOC };
    match CHOICE.compare_exchange(UNDECIDED, decided, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => decided,
        Err(first) => first,
    }
}

/// One GlobalAlloc call, made on the allocator chosen for the process.
macro_rules! forward {
    ($method:ident($($arg:expr),*)) => {
        if choice() == SYSTEM {
            System.$method($($arg),*)
        } else {
            mimalloc::MiMalloc.$method($($arg),*)
        }
    };
}

// SAFETY: every call is forwarded to one of two allocators, the same one for the
// whole life of the process, so memory is always freed by the allocator that made it.
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        forward!(alloc(layout))
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        forward!(alloc_zeroed(layout))
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        forward!(dealloc(ptr, layout))
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        forward!(realloc(ptr, layout, new_size))
    }
}

//! The caller's output pointers and the handles given through them, done one way for
//! every entry point: an output pointer is checked before anything else, handle and
//! array outputs are cleared first (a failed call leaves NULL behind, never a stale
//! value), and a handle is a boxed Rust value dropped by its `*_close` / `*_free`.
//! Every handle given out is registered until it is closed, so a handle closed twice
//! or used after its close is an error (libhdf5 checks its ids so), not a free or a
//! read of freed memory (a double close corrupted the allocator: the program hung at
//! exit). Each handle is registered with its kind, so one of another kind (a file
//! handle where a dataset's is expected: the C compiler warns, a binding's FFI with
//! untyped pointers does not) is an error too, not a read of the wrong memory. A
//! pointer the library never gave, or one whose memory a later handle of the same kind
//! reuses, cannot be told apart: handles are pointers, not ids.

use crate::errors::{guard_attr, guard_in, guard_void, out_ptr, set_last_error};
use h5turbo_core::prelude::Error;
use std::any::TypeId;
use std::collections::HashMap;
use std::ffi::{c_char, c_int};
use std::sync::{LazyLock, RwLock};

/// The handles given out and not yet closed: address -> the Rust type behind it. Every
/// call on a handle looks it up: a read lock, so threads sharing handles do not wait
/// for each other.
static LIVE: LazyLock<RwLock<HashMap<usize, TypeId>>> = LazyLock::new(Default::default);

/// Record a new handle as open; returns it.
pub(crate) fn register<T: 'static>(handle: *mut T) -> *mut T {
    LIVE.write().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(handle as usize, TypeId::of::<T>());
    handle
}

/// Forget a handle being closed: false (and h5turbo_last_error says so) when it is not
/// an open handle of this kind, and must not be freed here.
pub(crate) fn unregister<T: 'static>(handle: *const T, what: &str) -> bool {
    let mut live = LIVE.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    match live.get(&(handle as usize)) {
        Some(&kind) if kind == TypeId::of::<T>() => {
            live.remove(&(handle as usize));
            true
        }
        found => {
            set_last_error(&format!("{}: nothing closed", not_open(found.is_some(), what)));
            false
        }
    }
}

/// Why a pointer is not a handle to use: another kind's, or none open (closed already).
pub(crate) fn not_open(of_another_kind: bool, what: &str) -> String {
    if of_another_kind {
        format!("{} is a handle of another kind (a file's, an object's, an attribute's ...)", what)
    } else {
        format!("{} is not an open handle (closed already?)", what)
    }
}

/// Whether `ptr` is a handle of this kind given out and not yet closed; false with
/// whether it is a live handle of another kind.
pub(crate) fn lookup<T: 'static>(ptr: *const T) -> Result<(), bool> {
    if ptr.is_null() {
        return Err(false);
    }
    match LIVE.read().unwrap_or_else(|poisoned| poisoned.into_inner()).get(&(ptr as usize)) {
        Some(&kind) if kind == TypeId::of::<T>() => Ok(()),
        found => Err(found.is_some()),
    }
}

/// Whether `ptr` is a handle of this kind given out and not yet closed.
pub(crate) fn is_live<T: 'static>(ptr: *const T) -> bool {
    lookup(ptr).is_ok()
}

/// The handle behind `ptr` when it is open, for naming a failure's file and object.
pub(crate) unsafe fn live<'a, T: 'static>(ptr: *const T) -> Option<&'a T> {
    // SAFETY: an open handle points at the value give_handle boxed, dropped only by close_handle.
    if is_live(ptr) { ptr.as_ref() } else { None }
}

/// Run an entry point whose result is one value written through `out`, given an object
/// handle: the pointer is checked first, then `value` computes what it receives; its
/// errors (a NULL `out` too) name the handle's file and object (see errors::guard_in).
pub(crate) unsafe fn guard_put_in<T>(
    obj: *const crate::objects::h5turbo_object,
    out: *mut T,
    what: &str,
    value: impl FnOnce() -> Result<T, Error>,
) -> c_int {
    guard_in(obj, || {
        let out = out_ptr(out, what)?;
        out.write(value()?);
        Ok(())
    })
}

/// `guard_put_in` for an entry point given an attribute handle (see errors::guard_attr).
pub(crate) unsafe fn guard_put_attr<T>(
    attr: *const crate::attribute::h5turbo_attribute,
    out: *mut T,
    what: &str,
    value: impl FnOnce() -> Result<T, Error>,
) -> c_int {
    guard_attr(attr, || {
        let out = out_ptr(out, what)?;
        out.write(value()?);
        Ok(())
    })
}

/// Write what an optional output asks for: nothing (and no work) when it is NULL.
pub(crate) unsafe fn put_wanted<T>(out: *mut T, value: impl FnOnce() -> Result<T, Error>) -> Result<(), Error> {
    if !out.is_null() {
        out.write(value()?);
    }
    Ok(())
}

/// Check the pointer a new handle is given through and set the handle to NULL until
/// the call succeeds.
pub(crate) unsafe fn out_handle<T>(handle: *mut *mut T, what: &str) -> Result<*mut *mut T, Error> {
    let out = out_ptr(handle, what)?;
    *out = std::ptr::null_mut();
    Ok(out)
}

/// Give `value` to the caller as a new handle through `out` (checked by out_handle).
pub(crate) unsafe fn give_handle<T: 'static>(out: *mut *mut T, value: T) {
    *out = register(Box::into_raw(Box::new(value)));
}

/// Drop a handle made by give_handle (NULL is fine); a panic while dropping it stays
/// inside the library. A handle not open (closed already) is left alone, and
/// h5turbo_last_error says so.
pub(crate) unsafe fn close_handle<T: 'static>(handle: *mut T, what: &str) {
    if handle.is_null() || !unregister(handle, what) {
        return;
    }
    guard_void(|| drop(Box::from_raw(handle)));
}

/// Check the pointers a string array (for strings::give_strings) and its count are
/// given through, and set them to NULL and 0 until the call succeeds.
pub(crate) unsafe fn out_strings(
    strings: *mut *mut *mut c_char,
    strings_what: &str,
    count: *mut usize,
    count_what: &str,
) -> Result<(*mut *mut *mut c_char, *mut usize), Error> {
    let strings = out_ptr(strings, strings_what)?;
    let count = out_ptr(count, count_what)?;
    *strings = std::ptr::null_mut();
    *count = 0;
    Ok((strings, count))
}

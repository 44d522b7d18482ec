//! Settings read from the environment (H5TURBO_THREADS, H5TURBO_IO_DEPTH): a value
//! that cannot be read falls back to the default, as documented, and says so once on
//! standard error, naming the variable, so that a typo ("64X") is seen rather than
//! silently changing nothing. An error instead would fail every read of a host
//! program for a setting that only tunes speed.

use std::collections::HashSet;
use std::sync::Mutex;

/// The variable's value, trimmed; None when unset or empty.
pub(crate) fn env_setting(var: &str) -> Option<String> {
    let value = std::env::var(var).ok()?;
    let value = value.trim();
    (!value.is_empty()).then(|| value.to_string())
}

/// Tell, once per variable and value, that `value` of `var` was not understood.
pub(crate) fn warn_unreadable(var: &str, value: &str, expected: &str, fallback: &str) {
    static WARNED: Mutex<Option<HashSet<(String, String)>>> = Mutex::new(None);
    let mut warned = WARNED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if warned.get_or_insert_with(HashSet::new).insert((var.to_string(), value.to_string())) {
        eprintln!("h5turbo: {}={:?} is not {}; using {}", var, value, expected, fallback);
    }
}

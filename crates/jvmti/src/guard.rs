//! The panic policy at the FFI boundary: unwinding into the JVM is undefined behaviour, so every
//! `extern "C"` entry point runs its body through [`ffi_guard`], which turns a panic into a logged error
//! and a safe default return value.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `body`; if it panics, logs the panic (target `ferrofluid::panic`) naming `entry` and returns
/// `on_panic` instead.
pub fn ffi_guard<R>(entry: &'static str, on_panic: R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => r,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic payload".to_owned());
            log::error!(target: "ferrofluid::panic", "panic in {entry}: {message}");
            on_panic
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panics_become_the_default() {
        assert_eq!(ffi_guard("ok", -1, || 7), 7);
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {})); // keep test output clean
        assert_eq!(ffi_guard("boom", -1, || panic!("bad class")), -1);
        assert_eq!(
            ffi_guard("boom", 0u8, || panic!("{}", String::from("owned"))),
            0
        );
        std::panic::set_hook(prev);
    }
}

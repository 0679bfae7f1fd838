//! The C ABI: `#[no_mangle] extern "C"` functions with the names, types and parameter order of
//! `include/arinc653/*.h`, each a thin wrapper over [`partix_runtime::partition`].
//!
//! Every entry point
//! - runs its body inside [`std::panic::catch_unwind`]: a panic becomes `INVALID_CONFIG` and a line
//!   on stderr, never an unwind into C;
//! - answers `INVALID_PARAM` to a null pointer parameter or an out-of-range enumeration value, and
//!   does nothing when the `RETURN_CODE` pointer itself is null (except a line on stderr);
//! - translates [`ApexError`] with the one exhaustive `match` in [`return_code`].
//!
//! `unsafe` is allowed only in this module; every block says why it is sound.
#![allow(unsafe_code, non_snake_case)]

pub mod types;

mod error;
mod partition;
mod ports;
mod process;
mod schedules;
mod time;

use partix_runtime::partition::ApexError;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};
use types::*;

/// Translate an APEX error into the C `RETURN_CODE_TYPE` (the one place this happens).
pub fn return_code(e: ApexError) -> RETURN_CODE_TYPE {
    match e {
        ApexError::NoAction => NO_ACTION,
        ApexError::NotAvailable => NOT_AVAILABLE,
        ApexError::InvalidParam => INVALID_PARAM,
        ApexError::InvalidConfig => INVALID_CONFIG,
        ApexError::InvalidMode => INVALID_MODE,
        ApexError::TimedOut => TIMED_OUT,
    }
}

/// A failed service on its way to C: a `RETURN_CODE_TYPE` other than `NO_ERROR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rc(RETURN_CODE_TYPE);

impl From<ApexError> for Rc {
    fn from(e: ApexError) -> Self {
        Rc(return_code(e))
    }
}

/// `INVALID_PARAM`, the answer to a null pointer or an out-of-range enumeration value.
const BAD_PARAM: Rc = Rc(INVALID_PARAM);

/// Return code for a service whose body panicked.
const PANICKED: RETURN_CODE_TYPE = INVALID_CONFIG;

/// Run a service body and store its outcome in `*rc`.
///
/// A null `rc` is reported on stderr and the body is not run (the caller could not learn what
/// happened). A panic in the body is caught, reported on stderr and returned as [`PANICKED`].
fn service(name: &str, rc: *mut RETURN_CODE_TYPE, body: impl FnOnce() -> Result<(), Rc>) {
    if rc.is_null() {
        eprintln!("partix-apex: {name}: RETURN_CODE is a null pointer; the service was not called");
        return;
    }
    let code = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => NO_ERROR,
        Ok(Err(Rc(code))) => code,
        Err(payload) => {
            report_panic(name, payload.as_ref());
            PANICKED
        }
    };
    // SAFETY: rc is non-null (checked above) and the caller passes a pointer to a writable
    // RETURN_CODE_TYPE, as every APEX service requires.
    unsafe { rc.write(code) };
}

/// Print a caught panic's message on stderr.
fn report_panic(name: &str, payload: &(dyn std::any::Any + Send)) {
    let msg = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)");
    eprintln!("partix-apex: {name} failed internally ({msg}); returning INVALID_CONFIG");
}

/// Store `value` through an out-parameter, or fail with `INVALID_PARAM` if it is null.
fn put<T>(out: *mut T, value: T) -> Result<(), Rc> {
    if out.is_null() {
        return Err(BAD_PARAM);
    }
    // SAFETY: out is non-null and the C caller passes a pointer to a writable, properly aligned
    // T (the prototype in the header says so).
    unsafe { out.write(value) };
    Ok(())
}

/// Fail with `INVALID_PARAM` if an out-parameter is null (checked before the service acts, so a
/// bad call has no effect).
fn non_null<T>(p: *const T) -> Result<(), Rc> {
    if p.is_null() {
        Err(BAD_PARAM)
    } else {
        Ok(())
    }
}

/// Read a `NAME_TYPE` parameter: up to [`MAX_NAME_LENGTH`] bytes, stopping at the first NUL (so a
/// short string literal is not read past its end). Invalid UTF-8 is replaced (a name that no
/// object has).
fn read_name(p: *const c_char) -> Result<String, Rc> {
    non_null(p)?;
    let mut bytes = Vec::with_capacity(MAX_NAME_LENGTH);
    for i in 0..MAX_NAME_LENGTH {
        // SAFETY: p is non-null and points to a NAME_TYPE (30 chars) or a shorter NUL-terminated
        // string; we stop at the NUL, so every byte read is inside the caller's object.
        let b = unsafe { p.add(i).read() } as u8;
        if b == 0 {
            break;
        }
        bytes.push(b);
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Build a `NAME_TYPE`: the name's bytes (at most 30), NUL-padded.
fn name_type(name: &str) -> NAME_TYPE {
    let mut out: NAME_TYPE = [0; MAX_NAME_LENGTH];
    for (o, b) in out.iter_mut().zip(name.bytes()) {
        *o = b as c_char;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_codes_agree_with_the_runtime() {
        for e in [
            ApexError::NoAction,
            ApexError::NotAvailable,
            ApexError::InvalidParam,
            ApexError::InvalidConfig,
            ApexError::InvalidMode,
            ApexError::TimedOut,
        ] {
            assert_eq!(return_code(e), e.return_code(), "{e:?}");
            assert_ne!(return_code(e), NO_ERROR);
        }
    }

    #[test]
    fn a_panic_becomes_a_return_code() {
        let mut rc: RETURN_CODE_TYPE = 99;
        service("TEST", &mut rc, || panic!("boom"));
        assert_eq!(rc, PANICKED);
        service("TEST", &mut rc, || Ok(()));
        assert_eq!(rc, NO_ERROR);
        service("TEST", &mut rc, || Err(ApexError::TimedOut.into()));
        assert_eq!(rc, TIMED_OUT);
        // A null RETURN_CODE: the body is not run.
        let mut ran = false;
        service("TEST", std::ptr::null_mut(), || {
            ran = true;
            Ok(())
        });
        assert!(!ran);
    }

    #[test]
    fn names_stop_at_nul_or_30_bytes() {
        let short = c"GnC";
        assert_eq!(read_name(short.as_ptr()).unwrap(), "GnC");
        let full = name_type("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
        assert_eq!(
            read_name(full.as_ptr()).unwrap(),
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123"
        );
        assert_eq!(read_name(std::ptr::null()), Err(BAD_PARAM));
    }
}

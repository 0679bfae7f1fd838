//! The C ABI: `#[no_mangle] extern "C"` functions with the names, types and parameter order of
//! `include/arinc653/*.h`, each a thin wrapper over [`partix_runtime::partition`].
//!
//! Every entry point
//! - runs its body inside [`std::panic::catch_unwind`]: a panic becomes `INVALID_CONFIG` and a line
//!   on stderr, never an unwind into C;
//! - answers `INVALID_PARAM` to a null pointer parameter, and to an out-of-range enumeration value
//!   or a null entry point where the service's standard order of checks reaches it (after the
//!   table and name checks of `CREATE_PROCESS`, `CREATE_SEMAPHORE` and `CREATE_BUFFER`, after
//!   `CREATE_ERROR_HANDLER`'s NO_ACTION); `CREATE_SAMPLING_PORT` and `CREATE_QUEUING_PORT` answer
//!   `INVALID_CONFIG` to a direction or discipline outside its type (it matches no configured
//!   port), or `NO_ACTION` if the port exists already;
//! - does nothing when the `RETURN_CODE` pointer itself is null (except a line on stderr);
//! - translates [`ApexError`] with the one exhaustive `match` in [`return_code`].
//!
//! `unsafe` is allowed only in this module; every block says why it is sound.
#![allow(unsafe_code, non_snake_case)]

pub mod types;

mod blackboard;
mod buffer;
mod error;
mod event;
mod partition;
mod ports;
mod process;
mod schedules;
mod semaphore;
mod time;

use partix_runtime::partition::{ApexError, QueuingDiscipline};
use std::ffi::c_char;
use std::io::Write;
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
        // Not `eprintln!`: it panics when stderr fails (a full disk, EPIPE), and a panic here,
        // outside `catch_unwind`, would abort the partition (found by review).
        let _ = writeln!(
            std::io::stderr(),
            "partix-apex: {name}: RETURN_CODE is a null pointer; the service was not called"
        );
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

/// Run the body of a service that never returns to its caller (`STOP_SELF`).
///
/// The body ends the calling thread; should it panic (or return) instead, the report goes to
/// stderr and the partition aborts: returning would run the C code after the call, which its
/// author wrote as unreachable (`for (;;) STOP_SELF();` would spin, an error handler would fall
/// off its end; review 27, finding 3). The abort ends the partition's process, which the
/// executive's health monitoring handles as a partition failure.
fn service_never_returns(name: &str, body: impl FnOnce()) -> ! {
    let why = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(()) => "returned",
        Err(payload) => {
            let _ = writeln!(
                std::io::stderr(),
                "partix-apex: {name} failed internally ({})",
                panic_message(payload.as_ref())
            );
            "failed"
        }
    };
    let _ = writeln!(
        std::io::stderr(),
        "partix-apex: {name} {why} but must not return; aborting the partition"
    );
    std::process::abort()
}

/// The message of a caught panic.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// Print a caught panic's message on stderr.
fn report_panic(name: &str, payload: &(dyn std::any::Any + Send)) {
    let _ = writeln!(
        std::io::stderr(),
        "partix-apex: {name} failed internally ({}); returning INVALID_CONFIG",
        panic_message(payload)
    );
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

/// Translate a C `QUEUING_DISCIPLINE_TYPE`; `None` for an out-of-range value, which the runtime
/// refuses with `INVALID_PARAM` in the standard's order of checks (CREATE_SEMAPHORE,
/// CREATE_BUFFER: after the table, name and value checks).
fn discipline_or_none(d: ports::QUEUING_DISCIPLINE_TYPE) -> Option<QueuingDiscipline> {
    match d {
        ports::FIFO => Some(QueuingDiscipline::Fifo),
        ports::PRIORITY => Some(QueuingDiscipline::Priority),
        _ => None,
    }
}

/// Borrow the `len` bytes of a message the caller passes in (`len` already checked: 1..=max).
fn message_in<'a>(addr: MESSAGE_ADDR_TYPE, len: usize) -> Result<&'a [u8], Rc> {
    non_null(addr)?;
    // SAFETY: addr is non-null and the caller passes a message of LENGTH bytes (the prototype
    // says so); len is LENGTH, checked to be positive and at most the object's maximum.
    Ok(unsafe { std::slice::from_raw_parts(addr, len) })
}

/// Borrow the caller's buffer of the object's `max` bytes for a message to be copied into.
///
/// The whole `max` bytes are borrowed (the message's length is not known yet), so the caller's
/// buffer must be that large: blackboard.h and buffer.h require it of READ_BLACKBOARD and
/// RECEIVE_BUFFER (ARINC 653 itself states no size for MESSAGE_ADDR).
fn message_out<'a>(addr: MESSAGE_ADDR_TYPE, max: u32) -> Result<&'a mut [u8], Rc> {
    non_null(addr)?;
    // SAFETY: addr is non-null, and the partix headers (blackboard.h, buffer.h) require
    // MESSAGE_ADDR to point to at least the object's MAX_MESSAGE_SIZE (= max) writable bytes;
    // nothing else refers to them during the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(addr, max as usize) })
}

/// Read a `NAME_TYPE` parameter: up to [`MAX_NAME_LENGTH`] bytes, stopping at the first NUL (so a
/// short string literal is not read past its end).
///
/// The bytes must be UTF-8 (ASCII, as ARINC 653 names are in practice), else `INVALID_PARAM`,
/// like a null pointer: so distinct byte strings stay distinct names (a lossy conversion would
/// map every invalid byte to U+FFFD) and a name is at most 30 bytes however it is converted.
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
    String::from_utf8(bytes).map_err(|_| BAD_PARAM)
}

/// Read the `NAME_TYPE` parameter of a `GET_*_ID` service: as [`read_name`], but a name that is
/// not UTF-8 names no object, which those services answer with `INVALID_CONFIG` (the standard's
/// code for "no object of that name"; `INVALID_PARAM` is not among their codes).
fn lookup_name(p: *const c_char) -> Result<String, Rc> {
    non_null(p)?;
    read_name(p).map_err(|_| Rc::from(ApexError::InvalidConfig))
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

    /// `STOP_SELF` is `-> !` (the C ABI is the same as `void`), so its Rust body cannot return.
    const _: extern "C" fn() -> ! = process::STOP_SELF;

    /// Set by [`service_never_returns_aborts_the_partition`] for the child it runs.
    const NEVER_RETURNS_CHILD: &str = "PARTIX_APEX_TEST_NEVER_RETURNS";

    /// The child's side of [`service_never_returns_aborts_the_partition`]: a no-return service
    /// whose body panics (`how` = panic) or returns. Does nothing when run by the test harness.
    #[test]
    fn service_never_returns_child() {
        match std::env::var(NEVER_RETURNS_CHILD).as_deref() {
            Ok("panic") => service_never_returns("TEST_STOP", || panic!("boom")),
            Ok("return") => service_never_returns("TEST_STOP", || {}),
            _ => {}
        }
    }

    /// A no-return service (STOP_SELF) whose body panics or returns aborts the partition with a
    /// report on stderr: it used to return to the C caller (review 27, finding 3).
    #[test]
    fn service_never_returns_aborts_the_partition() {
        use std::os::unix::process::ExitStatusExt;
        let exe = std::env::current_exe().unwrap();
        for (how, report) in [
            ("panic", "TEST_STOP failed internally (boom)"),
            ("return", "TEST_STOP returned but must not return"),
        ] {
            let out = std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "ffi::tests::service_never_returns_child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(NEVER_RETURNS_CHILD, how)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{how}: {stderr}");
            assert!(stderr.contains(report), "{how}: {stderr}");
            assert!(stderr.contains("aborting the partition"), "{how}: {stderr}");
        }
    }

    /// The intra-partition types (blackboard.h, buffer.h, semaphore.h, event.h) against the C
    /// compiler: `tests/c/layout.c` built with `-DAPEX_LAYOUT_INTRA` prints only them.
    #[test]
    fn intra_mirrors_match_the_c_headers() {
        use blackboard::*;
        use buffer::*;
        use event::*;
        use semaphore::*;
        use std::collections::BTreeMap;
        use std::mem::{align_of, offset_of, size_of};
        let mut rust = BTreeMap::new();
        macro_rules! size {
            ($($t:ident),* $(,)?) => {$(
                rust.insert(format!("size {}", stringify!($t)), size_of::<$t>() as i64);
                rust.insert(format!("align {}", stringify!($t)), align_of::<$t>() as i64);
            )*};
        }
        macro_rules! offset {
            ($t:ident: $($f:ident),*) => {$(
                rust.insert(format!("offset {}.{}", stringify!($t), stringify!($f)), offset_of!($t, $f) as i64);
            )*};
        }
        size!(
            BLACKBOARD_ID_TYPE,
            EMPTY_INDICATOR_TYPE,
            BLACKBOARD_STATUS_TYPE,
            BUFFER_ID_TYPE,
            BUFFER_STATUS_TYPE,
            SEMAPHORE_ID_TYPE,
            SEMAPHORE_VALUE_TYPE,
            SEMAPHORE_STATUS_TYPE,
            EVENT_ID_TYPE,
            EVENT_STATE_TYPE,
            EVENT_STATUS_TYPE,
        );
        offset!(BLACKBOARD_STATUS_TYPE: EMPTY_INDICATOR, MAX_MESSAGE_SIZE, WAITING_PROCESSES);
        offset!(BUFFER_STATUS_TYPE: NB_MESSAGE, MAX_NB_MESSAGE, MAX_MESSAGE_SIZE, WAITING_PROCESSES);
        offset!(SEMAPHORE_STATUS_TYPE: CURRENT_VALUE, MAXIMUM_VALUE, WAITING_PROCESSES);
        offset!(EVENT_STATUS_TYPE: EVENT_STATE, WAITING_PROCESSES);
        use partix_runtime::partition as apex;
        for (k, v) in [
            ("EMPTY", i64::from(EMPTY)),
            ("OCCUPIED", OCCUPIED.into()),
            ("DOWN", DOWN.into()),
            ("UP", UP.into()),
            ("MAX_SEMAPHORE_VALUE", apex::MAX_SEMAPHORE_VALUE.into()),
            (
                "MAX_NUMBER_OF_BLACKBOARDS",
                apex::MAX_NUMBER_OF_BLACKBOARDS as i64,
            ),
            ("MAX_NUMBER_OF_BUFFERS", apex::MAX_NUMBER_OF_BUFFERS as i64),
            (
                "MAX_NUMBER_OF_SEMAPHORES",
                apex::MAX_NUMBER_OF_SEMAPHORES as i64,
            ),
            ("MAX_NUMBER_OF_EVENTS", apex::MAX_NUMBER_OF_EVENTS as i64),
            (
                "SYSTEM_LIMIT_MESSAGE_SIZE",
                apex::MAX_INTRA_MESSAGE_SIZE.into(),
            ),
            (
                "SYSTEM_LIMIT_NUMBER_OF_MESSAGES",
                apex::MAX_NUMBER_OF_MESSAGES.into(),
            ),
            (
                "PARTIX_LIMIT_SAMPLING_MESSAGE_SIZE",
                partix_config::MAX_SAMPLING_MESSAGE_SIZE.into(),
            ),
            (
                "PARTIX_LIMIT_QUEUING_MESSAGE_SIZE",
                partix_config::MAX_QUEUING_MESSAGE_SIZE.into(),
            ),
            (
                "PARTIX_LIMIT_NUMBER_OF_QUEUED_MESSAGES",
                partix_config::MAX_NB_MESSAGES.into(),
            ),
        ] {
            rust.insert(format!("value {k}"), v);
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let exe = std::env::temp_dir().join(format!("intra-layout-{}", std::process::id()));
        let out = std::process::Command::new("cc")
            .args([
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-DAPEX_LAYOUT_INTRA",
                "-I",
            ])
            .arg(dir.join("include"))
            .arg(dir.join("tests/c/layout.c"))
            .arg("-o")
            .arg(&exe)
            .output()
            .expect("run cc (install gcc: scripts/deps/apexc.txt)");
        assert!(
            out.status.success(),
            "cc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = std::process::Command::new(&exe)
            .output()
            .expect("run layout");
        std::fs::remove_file(&exe).ok();
        assert!(run.status.success());
        let mut c = BTreeMap::new();
        for line in String::from_utf8(run.stdout).unwrap().lines() {
            let (k, v) = line.rsplit_once(' ').unwrap();
            c.insert(k.to_string(), v.parse::<i64>().unwrap());
        }
        assert_eq!(
            c, rust,
            "layout.c (-DAPEX_LAYOUT_INTRA) and the Rust mirrors differ"
        );
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

    #[test]
    fn names_must_be_utf8() {
        // 15 two-byte characters: 30 bytes, accepted as they are.
        let e_acute = name_type(&"é".repeat(15));
        assert_eq!(read_name(e_acute.as_ptr()).unwrap(), "é".repeat(15));
        for bad in [c"\xff", c"\xfe", c"A\xe9", c"\xc3"] {
            assert_eq!(read_name(bad.as_ptr()), Err(BAD_PARAM), "{bad:?}");
        }
        // A 30-byte field that cuts a two-byte character in half is not UTF-8 either.
        let mut cut = name_type(&"x".repeat(29));
        cut[29] = 0xc3_u8 as c_char;
        assert_eq!(read_name(cut.as_ptr()), Err(BAD_PARAM));
        // A lookup by such a name finds nothing: INVALID_CONFIG; a null name stays INVALID_PARAM.
        assert_eq!(
            lookup_name(c"\xff".as_ptr()),
            Err(Rc::from(ApexError::InvalidConfig))
        );
        assert_eq!(lookup_name(std::ptr::null()), Err(BAD_PARAM));
        assert_eq!(lookup_name(c"ok".as_ptr()).unwrap(), "ok");
    }
}

//! `include/arinc653/process.h`: process management services.

use super::types::*;
use super::{
    lookup_name, name_type, non_null, put, read_name, service, service_never_returns, Rc, BAD_PARAM,
};
use partix_runtime::partition::{
    self as apex, Deadline, EntryPoint, ProcessAttributes, ProcessId, ProcessState, ProcessStatus,
};
use std::ffi::c_char;

/// Convert a C entry point (`SYSTEM_ADDRESS_TYPE`) into a function pointer; null is
/// `INVALID_PARAM`.
pub(super) fn entry_point(addr: SYSTEM_ADDRESS_TYPE) -> Result<EntryPoint, Rc> {
    if addr.is_null() {
        return Err(BAD_PARAM);
    }
    // SAFETY: SYSTEM_ADDRESS_TYPE carries the address of a C function `void f(void)` (the
    // standard's ENTRY_POINT); data and function pointers have the same size and representation
    // on the Linux targets we support, and the address is non-null.
    Ok(unsafe { std::mem::transmute::<SYSTEM_ADDRESS_TYPE, EntryPoint>(addr) })
}

/// Stands for a null ENTRY_POINT in a CREATE_PROCESS or CREATE_ERROR_HANDLER that is refused
/// (never called).
pub(super) extern "C" fn placeholder_entry() {}

fn deadline(d: DEADLINE_TYPE) -> Result<Deadline, Rc> {
    match d {
        SOFT => Ok(Deadline::Soft),
        HARD => Ok(Deadline::Hard),
        _ => Err(BAD_PARAM),
    }
}

fn deadline_type(d: Deadline) -> DEADLINE_TYPE {
    match d {
        Deadline::Soft => SOFT,
        Deadline::Hard => HARD,
    }
}

fn process_state_type(s: ProcessState) -> PROCESS_STATE_TYPE {
    match s {
        ProcessState::Dormant => 0,
        ProcessState::Ready => 1,
        ProcessState::Running => 2,
        ProcessState::Waiting => 3,
        ProcessState::Faulted => 4,
    }
}

fn attributes_type(a: &ProcessAttributes) -> PROCESS_ATTRIBUTE_TYPE {
    PROCESS_ATTRIBUTE_TYPE {
        PERIOD: a.period,
        TIME_CAPACITY: a.time_capacity,
        ENTRY_POINT: a.entry_point as SYSTEM_ADDRESS_TYPE,
        STACK_SIZE: a.stack_size,
        BASE_PRIORITY: a.base_priority,
        DEADLINE: deadline_type(a.deadline),
        NAME: name_type(&a.name),
    }
}

fn status_type(s: &ProcessStatus) -> PROCESS_STATUS_TYPE {
    PROCESS_STATUS_TYPE {
        DEADLINE_TIME: s.deadline_time,
        CURRENT_PRIORITY: s.current_priority,
        PROCESS_STATE: process_state_type(s.process_state),
        ATTRIBUTES: attributes_type(&s.attributes),
    }
}

/// `GET_PROCESS_ID`.
#[no_mangle]
pub extern "C" fn GET_PROCESS_ID(
    PROCESS_NAME: *const c_char,
    PROCESS_ID: *mut PROCESS_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_PROCESS_ID", RETURN_CODE, || {
        let name = lookup_name(PROCESS_NAME)?;
        non_null(PROCESS_ID)?;
        let id = apex::get_process_id(&name)?;
        put(PROCESS_ID, id.0)
    });
}

/// `GET_PROCESS_STATUS`.
#[no_mangle]
pub extern "C" fn GET_PROCESS_STATUS(
    PROCESS_ID: PROCESS_ID_TYPE,
    PROCESS_STATUS: *mut PROCESS_STATUS_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_PROCESS_STATUS", RETURN_CODE, || {
        non_null(PROCESS_STATUS)?;
        let status = apex::get_process_status(ProcessId(PROCESS_ID))?;
        put(PROCESS_STATUS, status_type(&status))
    });
}

/// `CREATE_PROCESS`.
#[no_mangle]
pub extern "C" fn CREATE_PROCESS(
    ATTRIBUTES: *const PROCESS_ATTRIBUTE_TYPE,
    PROCESS_ID: *mut PROCESS_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("CREATE_PROCESS", RETURN_CODE, || {
        non_null(ATTRIBUTES)?;
        non_null(PROCESS_ID)?;
        // SAFETY: non-null, and the caller passes a pointer to an initialised
        // PROCESS_ATTRIBUTE_TYPE (whose every bit pattern is valid for our mirror: integers and
        // a raw pointer); read_unaligned tolerates any alignment.
        let a = unsafe { ATTRIBUTES.read_unaligned() };
        // A name that is not UTF-8, a null ENTRY_POINT and an out-of-range DEADLINE are
        // INVALID_PARAM in the standard's order, after the table and name checks: the runtime
        // gets placeholders and is told they stand for bad values.
        let name = read_name(a.NAME.as_ptr());
        let entry = entry_point(a.ENTRY_POINT);
        let dl = deadline(a.DEADLINE);
        let c_invalid = name.is_err() || entry.is_err() || dl.is_err();
        let attr = ProcessAttributes {
            name: name.unwrap_or_default(),
            entry_point: entry.unwrap_or(placeholder_entry),
            stack_size: a.STACK_SIZE,
            base_priority: a.BASE_PRIORITY,
            period: a.PERIOD,
            time_capacity: a.TIME_CAPACITY,
            deadline: dl.unwrap_or(Deadline::Soft),
        };
        let id = apex::create_process_with(&attr, c_invalid)?;
        put(PROCESS_ID, id.0)
    });
}

/// `SET_PRIORITY`.
#[no_mangle]
pub extern "C" fn SET_PRIORITY(
    PROCESS_ID: PROCESS_ID_TYPE,
    PRIORITY: PRIORITY_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("SET_PRIORITY", RETURN_CODE, || {
        Ok(apex::set_priority(ProcessId(PROCESS_ID), PRIORITY)?)
    });
}

/// `SUSPEND_SELF`.
#[no_mangle]
pub extern "C" fn SUSPEND_SELF(TIME_OUT: SYSTEM_TIME_TYPE, RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("SUSPEND_SELF", RETURN_CODE, || {
        Ok(apex::suspend_self(TIME_OUT)?)
    });
}

/// `SUSPEND`.
#[no_mangle]
pub extern "C" fn SUSPEND(PROCESS_ID: PROCESS_ID_TYPE, RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("SUSPEND", RETURN_CODE, || {
        Ok(apex::suspend(ProcessId(PROCESS_ID))?)
    });
}

/// `RESUME`.
#[no_mangle]
pub extern "C" fn RESUME(PROCESS_ID: PROCESS_ID_TYPE, RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("RESUME", RETURN_CODE, || {
        Ok(apex::resume(ProcessId(PROCESS_ID))?)
    });
}

/// `STOP_SELF`: the calling process becomes DORMANT; never returns (`-> !`, the same C ABI as
/// `void`). Should the runtime fail internally, the partition aborts rather than return to code
/// written as unreachable ([`service_never_returns`]).
#[no_mangle]
pub extern "C" fn STOP_SELF() -> ! {
    service_never_returns("STOP_SELF", || apex::stop_self())
}

/// `STOP`.
#[no_mangle]
pub extern "C" fn STOP(PROCESS_ID: PROCESS_ID_TYPE, RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("STOP", RETURN_CODE, || {
        Ok(apex::stop(ProcessId(PROCESS_ID))?)
    });
}

/// `START`.
#[no_mangle]
pub extern "C" fn START(PROCESS_ID: PROCESS_ID_TYPE, RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("START", RETURN_CODE, || {
        Ok(apex::start(ProcessId(PROCESS_ID))?)
    });
}

/// `DELAYED_START`.
#[no_mangle]
pub extern "C" fn DELAYED_START(
    PROCESS_ID: PROCESS_ID_TYPE,
    DELAY_TIME: SYSTEM_TIME_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("DELAYED_START", RETURN_CODE, || {
        Ok(apex::delayed_start(ProcessId(PROCESS_ID), DELAY_TIME)?)
    });
}

/// `LOCK_PREEMPTION`.
#[no_mangle]
pub extern "C" fn LOCK_PREEMPTION(
    LOCK_LEVEL: *mut LOCK_LEVEL_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("LOCK_PREEMPTION", RETURN_CODE, || {
        non_null(LOCK_LEVEL)?;
        let level = apex::lock_preemption()?;
        put(LOCK_LEVEL, level)
    });
}

/// `UNLOCK_PREEMPTION`.
#[no_mangle]
pub extern "C" fn UNLOCK_PREEMPTION(
    LOCK_LEVEL: *mut LOCK_LEVEL_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("UNLOCK_PREEMPTION", RETURN_CODE, || {
        non_null(LOCK_LEVEL)?;
        let level = apex::unlock_preemption()?;
        put(LOCK_LEVEL, level)
    });
}

/// `GET_MY_ID`.
#[no_mangle]
pub extern "C" fn GET_MY_ID(PROCESS_ID: *mut PROCESS_ID_TYPE, RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("GET_MY_ID", RETURN_CODE, || {
        non_null(PROCESS_ID)?;
        let id = apex::get_my_id()?;
        put(PROCESS_ID, id.0)
    });
}

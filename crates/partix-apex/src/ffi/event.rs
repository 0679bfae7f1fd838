//! `include/arinc653/event.h`: event services and the `#[repr(C)]` mirrors of their types.
#![allow(non_camel_case_types, clippy::upper_case_acronyms)]

use super::ports::WAITING_RANGE_TYPE;
use super::types::*;
use super::{lookup_name, non_null, put, read_name, service};
use partix_runtime::partition::{self as apex, EventId, EventState};
use std::ffi::c_char;
use std::mem::{offset_of, size_of};

/// `EVENT_ID_TYPE`.
pub type EVENT_ID_TYPE = APEX_INTEGER;
/// `EVENT_STATE_TYPE` (a C enumeration).
pub type EVENT_STATE_TYPE = u32;
/// `DOWN`.
pub const DOWN: EVENT_STATE_TYPE = 0;
/// `UP`.
pub const UP: EVENT_STATE_TYPE = 1;

/// `EVENT_STATUS_TYPE`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EVENT_STATUS_TYPE {
    /// `EVENT_STATE`.
    pub EVENT_STATE: EVENT_STATE_TYPE,
    /// `WAITING_PROCESSES`.
    pub WAITING_PROCESSES: WAITING_RANGE_TYPE,
}

// Layout as gcc lays out event.h (checked against the C compiler by `ffi::tests`).
const _: () = {
    assert!(size_of::<EVENT_STATUS_TYPE>() == 8);
    assert!(offset_of!(EVENT_STATUS_TYPE, WAITING_PROCESSES) == 4);
};

/// `CREATE_EVENT`.
#[no_mangle]
pub extern "C" fn CREATE_EVENT(
    EVENT_NAME: *const c_char,
    EVENT_ID: *mut EVENT_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("CREATE_EVENT", RETURN_CODE, || {
        non_null(EVENT_ID)?;
        let name = read_name(EVENT_NAME)?;
        put(EVENT_ID, apex::create_event(&name)?.0)
    });
}

/// `SET_EVENT`.
#[no_mangle]
pub extern "C" fn SET_EVENT(EVENT_ID: EVENT_ID_TYPE, RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("SET_EVENT", RETURN_CODE, || {
        Ok(apex::set_event(EventId(EVENT_ID))?)
    });
}

/// `RESET_EVENT`.
#[no_mangle]
pub extern "C" fn RESET_EVENT(EVENT_ID: EVENT_ID_TYPE, RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("RESET_EVENT", RETURN_CODE, || {
        Ok(apex::reset_event(EventId(EVENT_ID))?)
    });
}

/// `WAIT_EVENT`.
#[no_mangle]
pub extern "C" fn WAIT_EVENT(
    EVENT_ID: EVENT_ID_TYPE,
    TIME_OUT: SYSTEM_TIME_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("WAIT_EVENT", RETURN_CODE, || {
        Ok(apex::wait_event(EventId(EVENT_ID), TIME_OUT)?)
    });
}

/// `GET_EVENT_ID`.
#[no_mangle]
pub extern "C" fn GET_EVENT_ID(
    EVENT_NAME: *const c_char,
    EVENT_ID: *mut EVENT_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_EVENT_ID", RETURN_CODE, || {
        non_null(EVENT_ID)?;
        let name = lookup_name(EVENT_NAME)?;
        put(EVENT_ID, apex::get_event_id(&name)?.0)
    });
}

/// `GET_EVENT_STATUS`.
#[no_mangle]
pub extern "C" fn GET_EVENT_STATUS(
    EVENT_ID: EVENT_ID_TYPE,
    EVENT_STATUS: *mut EVENT_STATUS_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_EVENT_STATUS", RETURN_CODE, || {
        non_null(EVENT_STATUS)?;
        let st = apex::get_event_status(EventId(EVENT_ID))?;
        put(
            EVENT_STATUS,
            EVENT_STATUS_TYPE {
                EVENT_STATE: match st.event_state {
                    EventState::Down => DOWN,
                    EventState::Up => UP,
                },
                WAITING_PROCESSES: st.waiting_processes as WAITING_RANGE_TYPE,
            },
        )
    });
}

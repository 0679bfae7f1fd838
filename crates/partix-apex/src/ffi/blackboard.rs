//! `include/arinc653/blackboard.h`: blackboard services and the `#[repr(C)]` mirrors of their
//! types.
//!
//! `MESSAGE_ADDR` of DISPLAY_BLACKBOARD is read for `LENGTH` bytes only after `LENGTH` was checked
//! against the blackboard's maximum; that of READ_BLACKBOARD must hold the blackboard's
//! `MAX_MESSAGE_SIZE` bytes, as `blackboard.h` documents (ARINC 653 states no size).
#![allow(non_camel_case_types, clippy::upper_case_acronyms)]

use super::ports::WAITING_RANGE_TYPE;
use super::types::*;
use super::{lookup_name, message_in, message_out, non_null, put, read_name, service, BAD_PARAM};
use partix_runtime::partition::{self as apex, BlackboardId, EmptyIndicator};
use std::ffi::c_char;
use std::mem::{offset_of, size_of};

/// `BLACKBOARD_ID_TYPE`.
pub type BLACKBOARD_ID_TYPE = APEX_INTEGER;
/// `EMPTY_INDICATOR_TYPE` (a C enumeration).
pub type EMPTY_INDICATOR_TYPE = u32;
/// `EMPTY`.
pub const EMPTY: EMPTY_INDICATOR_TYPE = 0;
/// `OCCUPIED`.
pub const OCCUPIED: EMPTY_INDICATOR_TYPE = 1;

/// `BLACKBOARD_STATUS_TYPE`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BLACKBOARD_STATUS_TYPE {
    /// `EMPTY_INDICATOR`.
    pub EMPTY_INDICATOR: EMPTY_INDICATOR_TYPE,
    /// `MAX_MESSAGE_SIZE`.
    pub MAX_MESSAGE_SIZE: MESSAGE_SIZE_TYPE,
    /// `WAITING_PROCESSES`.
    pub WAITING_PROCESSES: WAITING_RANGE_TYPE,
}

// Layout as gcc lays out blackboard.h (checked against the C compiler by `ffi::tests`).
const _: () = {
    assert!(size_of::<BLACKBOARD_STATUS_TYPE>() == 12);
    assert!(offset_of!(BLACKBOARD_STATUS_TYPE, MAX_MESSAGE_SIZE) == 4);
    assert!(offset_of!(BLACKBOARD_STATUS_TYPE, WAITING_PROCESSES) == 8);
};

/// `CREATE_BLACKBOARD`.
#[no_mangle]
pub extern "C" fn CREATE_BLACKBOARD(
    BLACKBOARD_NAME: *const c_char,
    MAX_MESSAGE_SIZE: MESSAGE_SIZE_TYPE,
    BLACKBOARD_ID: *mut BLACKBOARD_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("CREATE_BLACKBOARD", RETURN_CODE, || {
        non_null(BLACKBOARD_ID)?;
        let name = read_name(BLACKBOARD_NAME)?;
        // A negative size is out of range like 0 (INVALID_PARAM, after the standard's earlier
        // checks).
        let max = u32::try_from(MAX_MESSAGE_SIZE).unwrap_or(0);
        put(BLACKBOARD_ID, apex::create_blackboard(&name, max)?.0)
    });
}

/// `DISPLAY_BLACKBOARD`.
#[no_mangle]
pub extern "C" fn DISPLAY_BLACKBOARD(
    BLACKBOARD_ID: BLACKBOARD_ID_TYPE,
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTH: MESSAGE_SIZE_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("DISPLAY_BLACKBOARD", RETURN_CODE, || {
        let id = BlackboardId(BLACKBOARD_ID);
        let max = apex::blackboard_max_message_size(id)?;
        if LENGTH <= 0 || LENGTH as u32 > max {
            return Err(BAD_PARAM);
        }
        let msg = message_in(MESSAGE_ADDR, LENGTH as usize)?;
        Ok(apex::display_blackboard(id, msg)?)
    });
}

/// `READ_BLACKBOARD`.
#[no_mangle]
pub extern "C" fn READ_BLACKBOARD(
    BLACKBOARD_ID: BLACKBOARD_ID_TYPE,
    TIME_OUT: SYSTEM_TIME_TYPE,
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTH: *mut MESSAGE_SIZE_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("READ_BLACKBOARD", RETURN_CODE, || {
        non_null(LENGTH)?;
        let id = BlackboardId(BLACKBOARD_ID);
        let max = apex::blackboard_max_message_size(id)?;
        let buf = message_out(MESSAGE_ADDR, max)?;
        put(LENGTH, 0)?;
        let n = apex::read_blackboard(id, TIME_OUT, buf)?;
        put(LENGTH, n as MESSAGE_SIZE_TYPE)
    });
}

/// `CLEAR_BLACKBOARD`.
#[no_mangle]
pub extern "C" fn CLEAR_BLACKBOARD(
    BLACKBOARD_ID: BLACKBOARD_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("CLEAR_BLACKBOARD", RETURN_CODE, || {
        Ok(apex::clear_blackboard(BlackboardId(BLACKBOARD_ID))?)
    });
}

/// `GET_BLACKBOARD_ID`.
#[no_mangle]
pub extern "C" fn GET_BLACKBOARD_ID(
    BLACKBOARD_NAME: *const c_char,
    BLACKBOARD_ID: *mut BLACKBOARD_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_BLACKBOARD_ID", RETURN_CODE, || {
        non_null(BLACKBOARD_ID)?;
        let name = lookup_name(BLACKBOARD_NAME)?;
        put(BLACKBOARD_ID, apex::get_blackboard_id(&name)?.0)
    });
}

/// `GET_BLACKBOARD_STATUS`.
#[no_mangle]
pub extern "C" fn GET_BLACKBOARD_STATUS(
    BLACKBOARD_ID: BLACKBOARD_ID_TYPE,
    BLACKBOARD_STATUS: *mut BLACKBOARD_STATUS_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_BLACKBOARD_STATUS", RETURN_CODE, || {
        non_null(BLACKBOARD_STATUS)?;
        let st = apex::get_blackboard_status(BlackboardId(BLACKBOARD_ID))?;
        put(
            BLACKBOARD_STATUS,
            BLACKBOARD_STATUS_TYPE {
                EMPTY_INDICATOR: match st.empty_indicator {
                    EmptyIndicator::Empty => EMPTY,
                    EmptyIndicator::Occupied => OCCUPIED,
                },
                MAX_MESSAGE_SIZE: st.max_message_size as MESSAGE_SIZE_TYPE,
                WAITING_PROCESSES: st.waiting_processes as WAITING_RANGE_TYPE,
            },
        )
    });
}

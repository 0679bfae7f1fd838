//! `include/arinc653/semaphore.h`: semaphore services and the `#[repr(C)]` mirrors of their types.
#![allow(non_camel_case_types, clippy::upper_case_acronyms)]

use super::ports::{QUEUING_DISCIPLINE_TYPE, WAITING_RANGE_TYPE};
use super::types::*;
use super::{discipline_or_none, lookup_name, non_null, put, read_name, service};
use partix_runtime::partition::{self as apex, SemaphoreId};
use std::ffi::c_char;
use std::mem::{offset_of, size_of};

/// `SEMAPHORE_ID_TYPE`.
pub type SEMAPHORE_ID_TYPE = APEX_INTEGER;
/// `SEMAPHORE_VALUE_TYPE`.
pub type SEMAPHORE_VALUE_TYPE = APEX_INTEGER;

/// `SEMAPHORE_STATUS_TYPE`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SEMAPHORE_STATUS_TYPE {
    /// `CURRENT_VALUE`.
    pub CURRENT_VALUE: SEMAPHORE_VALUE_TYPE,
    /// `MAXIMUM_VALUE`.
    pub MAXIMUM_VALUE: SEMAPHORE_VALUE_TYPE,
    /// `WAITING_PROCESSES`.
    pub WAITING_PROCESSES: WAITING_RANGE_TYPE,
}

// Layout as gcc lays out semaphore.h (checked against the C compiler by `ffi::tests`).
const _: () = {
    assert!(size_of::<SEMAPHORE_STATUS_TYPE>() == 12);
    assert!(offset_of!(SEMAPHORE_STATUS_TYPE, MAXIMUM_VALUE) == 4);
    assert!(offset_of!(SEMAPHORE_STATUS_TYPE, WAITING_PROCESSES) == 8);
};

/// `CREATE_SEMAPHORE`.
#[no_mangle]
pub extern "C" fn CREATE_SEMAPHORE(
    SEMAPHORE_NAME: *const c_char,
    CURRENT_VALUE: SEMAPHORE_VALUE_TYPE,
    MAXIMUM_VALUE: SEMAPHORE_VALUE_TYPE,
    QUEUING_DISCIPLINE: QUEUING_DISCIPLINE_TYPE,
    SEMAPHORE_ID: *mut SEMAPHORE_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("CREATE_SEMAPHORE", RETURN_CODE, || {
        non_null(SEMAPHORE_ID)?;
        let name = read_name(SEMAPHORE_NAME)?;
        // An out-of-range discipline is INVALID_PARAM after the table, name and value checks.
        let d = discipline_or_none(QUEUING_DISCIPLINE);
        let id = apex::create_semaphore_with(&name, CURRENT_VALUE, MAXIMUM_VALUE, d)?;
        put(SEMAPHORE_ID, id.0)
    });
}

/// `WAIT_SEMAPHORE`.
#[no_mangle]
pub extern "C" fn WAIT_SEMAPHORE(
    SEMAPHORE_ID: SEMAPHORE_ID_TYPE,
    TIME_OUT: SYSTEM_TIME_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("WAIT_SEMAPHORE", RETURN_CODE, || {
        Ok(apex::wait_semaphore(SemaphoreId(SEMAPHORE_ID), TIME_OUT)?)
    });
}

/// `SIGNAL_SEMAPHORE`.
#[no_mangle]
pub extern "C" fn SIGNAL_SEMAPHORE(
    SEMAPHORE_ID: SEMAPHORE_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("SIGNAL_SEMAPHORE", RETURN_CODE, || {
        Ok(apex::signal_semaphore(SemaphoreId(SEMAPHORE_ID))?)
    });
}

/// `GET_SEMAPHORE_ID`.
#[no_mangle]
pub extern "C" fn GET_SEMAPHORE_ID(
    SEMAPHORE_NAME: *const c_char,
    SEMAPHORE_ID: *mut SEMAPHORE_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_SEMAPHORE_ID", RETURN_CODE, || {
        non_null(SEMAPHORE_ID)?;
        let name = lookup_name(SEMAPHORE_NAME)?;
        put(SEMAPHORE_ID, apex::get_semaphore_id(&name)?.0)
    });
}

/// `GET_SEMAPHORE_STATUS`.
#[no_mangle]
pub extern "C" fn GET_SEMAPHORE_STATUS(
    SEMAPHORE_ID: SEMAPHORE_ID_TYPE,
    SEMAPHORE_STATUS: *mut SEMAPHORE_STATUS_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_SEMAPHORE_STATUS", RETURN_CODE, || {
        non_null(SEMAPHORE_STATUS)?;
        let st = apex::get_semaphore_status(SemaphoreId(SEMAPHORE_ID))?;
        put(
            SEMAPHORE_STATUS,
            SEMAPHORE_STATUS_TYPE {
                CURRENT_VALUE: st.current_value,
                MAXIMUM_VALUE: st.maximum_value,
                WAITING_PROCESSES: st.waiting_processes as WAITING_RANGE_TYPE,
            },
        )
    });
}

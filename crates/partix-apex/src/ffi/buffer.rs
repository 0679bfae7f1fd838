//! `include/arinc653/buffer.h`: buffer services and the `#[repr(C)]` mirrors of their types.
//!
//! `MESSAGE_ADDR` of SEND_BUFFER is read for `LENGTH` bytes only after `LENGTH` was checked
//! against the buffer's maximum; that of RECEIVE_BUFFER must hold the buffer's
//! `MAX_MESSAGE_SIZE` bytes, as `buffer.h` documents (ARINC 653 states no size).
#![allow(non_camel_case_types, clippy::upper_case_acronyms)]

use super::ports::{MESSAGE_RANGE_TYPE, QUEUING_DISCIPLINE_TYPE, WAITING_RANGE_TYPE};
use super::types::*;
use super::{
    discipline_or_none, lookup_name, message_in, message_out, non_null, put, read_name, service,
    BAD_PARAM,
};
use partix_runtime::partition::{self as apex, BufferId};
use std::ffi::c_char;
use std::mem::{offset_of, size_of};

/// `BUFFER_ID_TYPE`.
pub type BUFFER_ID_TYPE = APEX_INTEGER;

/// `BUFFER_STATUS_TYPE`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BUFFER_STATUS_TYPE {
    /// `NB_MESSAGE`.
    pub NB_MESSAGE: MESSAGE_RANGE_TYPE,
    /// `MAX_NB_MESSAGE`.
    pub MAX_NB_MESSAGE: MESSAGE_RANGE_TYPE,
    /// `MAX_MESSAGE_SIZE`.
    pub MAX_MESSAGE_SIZE: MESSAGE_SIZE_TYPE,
    /// `WAITING_PROCESSES`.
    pub WAITING_PROCESSES: WAITING_RANGE_TYPE,
}

// Layout as gcc lays out buffer.h (checked against the C compiler by `ffi::tests`).
const _: () = {
    assert!(size_of::<BUFFER_STATUS_TYPE>() == 16);
    assert!(offset_of!(BUFFER_STATUS_TYPE, MAX_NB_MESSAGE) == 4);
    assert!(offset_of!(BUFFER_STATUS_TYPE, MAX_MESSAGE_SIZE) == 8);
    assert!(offset_of!(BUFFER_STATUS_TYPE, WAITING_PROCESSES) == 12);
};

/// `CREATE_BUFFER`.
#[no_mangle]
pub extern "C" fn CREATE_BUFFER(
    BUFFER_NAME: *const c_char,
    MAX_MESSAGE_SIZE: MESSAGE_SIZE_TYPE,
    MAX_NB_MESSAGE: MESSAGE_RANGE_TYPE,
    QUEUING_DISCIPLINE: QUEUING_DISCIPLINE_TYPE,
    BUFFER_ID: *mut BUFFER_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("CREATE_BUFFER", RETURN_CODE, || {
        non_null(BUFFER_ID)?;
        let name = read_name(BUFFER_NAME)?;
        // An out-of-range discipline is INVALID_PARAM after the table, name and size checks.
        let d = discipline_or_none(QUEUING_DISCIPLINE);
        // Negative sizes are out of range like 0 (INVALID_PARAM, after the earlier checks).
        let max = u32::try_from(MAX_MESSAGE_SIZE).unwrap_or(0);
        let nb = u32::try_from(MAX_NB_MESSAGE).unwrap_or(0);
        put(BUFFER_ID, apex::create_buffer_with(&name, max, nb, d)?.0)
    });
}

/// `SEND_BUFFER`.
#[no_mangle]
pub extern "C" fn SEND_BUFFER(
    BUFFER_ID: BUFFER_ID_TYPE,
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTH: MESSAGE_SIZE_TYPE,
    TIME_OUT: SYSTEM_TIME_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("SEND_BUFFER", RETURN_CODE, || {
        let id = BufferId(BUFFER_ID);
        let max = apex::buffer_max_message_size(id)?;
        if LENGTH <= 0 || LENGTH as u32 > max {
            return Err(BAD_PARAM);
        }
        let msg = message_in(MESSAGE_ADDR, LENGTH as usize)?;
        Ok(apex::send_buffer(id, msg, TIME_OUT)?)
    });
}

/// `RECEIVE_BUFFER`.
#[no_mangle]
pub extern "C" fn RECEIVE_BUFFER(
    BUFFER_ID: BUFFER_ID_TYPE,
    TIME_OUT: SYSTEM_TIME_TYPE,
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTH: *mut MESSAGE_SIZE_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("RECEIVE_BUFFER", RETURN_CODE, || {
        non_null(LENGTH)?;
        let id = BufferId(BUFFER_ID);
        let max = apex::buffer_max_message_size(id)?;
        let buf = message_out(MESSAGE_ADDR, max)?;
        put(LENGTH, 0)?;
        let n = apex::receive_buffer(id, TIME_OUT, buf)?;
        put(LENGTH, n as MESSAGE_SIZE_TYPE)
    });
}

/// `GET_BUFFER_ID`.
#[no_mangle]
pub extern "C" fn GET_BUFFER_ID(
    BUFFER_NAME: *const c_char,
    BUFFER_ID: *mut BUFFER_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_BUFFER_ID", RETURN_CODE, || {
        non_null(BUFFER_ID)?;
        let name = lookup_name(BUFFER_NAME)?;
        put(BUFFER_ID, apex::get_buffer_id(&name)?.0)
    });
}

/// `GET_BUFFER_STATUS`.
#[no_mangle]
pub extern "C" fn GET_BUFFER_STATUS(
    BUFFER_ID: BUFFER_ID_TYPE,
    BUFFER_STATUS: *mut BUFFER_STATUS_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_BUFFER_STATUS", RETURN_CODE, || {
        non_null(BUFFER_STATUS)?;
        let st = apex::get_buffer_status(BufferId(BUFFER_ID))?;
        put(
            BUFFER_STATUS,
            BUFFER_STATUS_TYPE {
                NB_MESSAGE: st.nb_message as MESSAGE_RANGE_TYPE,
                MAX_NB_MESSAGE: st.max_nb_message as MESSAGE_RANGE_TYPE,
                MAX_MESSAGE_SIZE: st.max_message_size as MESSAGE_SIZE_TYPE,
                WAITING_PROCESSES: st.waiting_processes as WAITING_RANGE_TYPE,
            },
        )
    });
}

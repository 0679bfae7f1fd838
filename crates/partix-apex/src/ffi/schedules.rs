//! `include/arinc653/schedules.h`: ARINC 653 Part 2 multiple module schedules.

use super::types::*;
use super::{lookup_name, non_null, put, service};
use partix_runtime::partition::{self as apex, ScheduleId};
use std::ffi::c_char;

/// `SET_MODULE_SCHEDULE`.
#[no_mangle]
pub extern "C" fn SET_MODULE_SCHEDULE(
    SCHEDULE_ID: SCHEDULE_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("SET_MODULE_SCHEDULE", RETURN_CODE, || {
        Ok(apex::set_module_schedule(ScheduleId(SCHEDULE_ID))?)
    });
}

/// `GET_MODULE_SCHEDULE_STATUS`.
#[no_mangle]
pub extern "C" fn GET_MODULE_SCHEDULE_STATUS(
    SCHEDULE_STATUS: *mut SCHEDULE_STATUS_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_MODULE_SCHEDULE_STATUS", RETURN_CODE, || {
        let s = apex::get_module_schedule_status();
        put(
            SCHEDULE_STATUS,
            SCHEDULE_STATUS_TYPE {
                TIME_OF_LAST_SCHEDULE_SWITCH: s.time_of_last_schedule_switch,
                CURRENT_SCHEDULE: s.current_schedule.0,
                NEXT_SCHEDULE: s.next_schedule.0,
            },
        )
    });
}

/// `GET_MODULE_SCHEDULE_ID`.
#[no_mangle]
pub extern "C" fn GET_MODULE_SCHEDULE_ID(
    SCHEDULE_NAME: *const c_char,
    SCHEDULE_ID: *mut SCHEDULE_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_MODULE_SCHEDULE_ID", RETURN_CODE, || {
        let name = lookup_name(SCHEDULE_NAME)?;
        non_null(SCHEDULE_ID)?;
        let id = apex::get_module_schedule_id(&name)?;
        put(SCHEDULE_ID, id.0)
    });
}

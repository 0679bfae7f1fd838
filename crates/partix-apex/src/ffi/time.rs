//! `include/arinc653/time.h`: time management services.

use super::types::*;
use super::{put, service};
use partix_runtime::partition as apex;

/// `TIMED_WAIT`.
#[no_mangle]
pub extern "C" fn TIMED_WAIT(DELAY_TIME: SYSTEM_TIME_TYPE, RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("TIMED_WAIT", RETURN_CODE, || {
        Ok(apex::timed_wait(DELAY_TIME)?)
    });
}

/// `PERIODIC_WAIT`.
#[no_mangle]
pub extern "C" fn PERIODIC_WAIT(RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("PERIODIC_WAIT", RETURN_CODE, || Ok(apex::periodic_wait()?));
}

/// `GET_TIME`.
#[no_mangle]
pub extern "C" fn GET_TIME(SYSTEM_TIME: *mut SYSTEM_TIME_TYPE, RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("GET_TIME", RETURN_CODE, || {
        put(SYSTEM_TIME, apex::get_time())
    });
}

/// `REPLENISH`.
#[no_mangle]
pub extern "C" fn REPLENISH(BUDGET_TIME: SYSTEM_TIME_TYPE, RETURN_CODE: *mut RETURN_CODE_TYPE) {
    service("REPLENISH", RETURN_CODE, || {
        Ok(apex::replenish(BUDGET_TIME)?)
    });
}

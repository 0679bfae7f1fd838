//! `include/arinc653/error.h`: health monitoring services.

use super::process::{entry_point, placeholder_entry};
use super::types::*;
use super::{non_null, put, service, Rc, BAD_PARAM};
use partix_runtime::partition::{self as apex, ErrorCode};

fn error_code(c: ERROR_CODE_TYPE) -> Result<ErrorCode, Rc> {
    Ok(match c {
        0 => ErrorCode::DeadlineMissed,
        1 => ErrorCode::ApplicationError,
        2 => ErrorCode::NumericError,
        3 => ErrorCode::IllegalRequest,
        4 => ErrorCode::StackOverflow,
        5 => ErrorCode::MemoryViolation,
        6 => ErrorCode::HardwareFault,
        7 => ErrorCode::PowerFail,
        _ => return Err(BAD_PARAM),
    })
}

fn error_code_type(c: ErrorCode) -> ERROR_CODE_TYPE {
    match c {
        ErrorCode::DeadlineMissed => 0,
        ErrorCode::ApplicationError => 1,
        ErrorCode::NumericError => 2,
        ErrorCode::IllegalRequest => 3,
        ErrorCode::StackOverflow => 4,
        ErrorCode::MemoryViolation => 5,
        ErrorCode::HardwareFault => 6,
        ErrorCode::PowerFail => 7,
    }
}

/// Borrow a message parameter: `INVALID_PARAM` for a negative length, a length above
/// `MAX_ERROR_MESSAGE_SIZE` (checked here so that no byte past the limit is read) or a null
/// address with a non-zero length.
fn message<'a>(addr: *const APEX_BYTE, len: APEX_INTEGER) -> Result<&'a [u8], Rc> {
    let len = usize::try_from(len).map_err(|_| BAD_PARAM)?;
    if len > MAX_ERROR_MESSAGE_SIZE {
        return Err(BAD_PARAM);
    }
    if len == 0 {
        return Ok(&[]);
    }
    non_null(addr)?;
    // SAFETY: addr is non-null and the caller passes a message of LENGTH readable bytes (the
    // service's contract); len ≤ 128, and the slice is only used during the call.
    Ok(unsafe { std::slice::from_raw_parts(addr, len) })
}

/// `REPORT_APPLICATION_MESSAGE`.
#[no_mangle]
pub extern "C" fn REPORT_APPLICATION_MESSAGE(
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTH: MESSAGE_SIZE_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("REPORT_APPLICATION_MESSAGE", RETURN_CODE, || {
        let msg = message(MESSAGE_ADDR, LENGTH)?;
        Ok(apex::report_application_message(msg)?)
    });
}

/// `CREATE_ERROR_HANDLER`.
#[no_mangle]
pub extern "C" fn CREATE_ERROR_HANDLER(
    ENTRY_POINT: SYSTEM_ADDRESS_TYPE,
    STACK_SIZE: STACK_SIZE_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("CREATE_ERROR_HANDLER", RETURN_CODE, || {
        // A null ENTRY_POINT is INVALID_PARAM after the standard's NO_ACTION (the handler
        // exists), as CREATE_PROCESS orders its C-only errors: the runtime gets a placeholder and
        // is told it stands for a bad value (review 27, finding 2).
        let entry = entry_point(ENTRY_POINT);
        let c_invalid = entry.is_err();
        let entry = entry.unwrap_or(placeholder_entry);
        Ok(apex::create_error_handler_with(
            entry, STACK_SIZE, c_invalid,
        )?)
    });
}

/// `GET_ERROR_STATUS`.
#[no_mangle]
pub extern "C" fn GET_ERROR_STATUS(
    ERROR_STATUS: *mut ERROR_STATUS_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_ERROR_STATUS", RETURN_CODE, || {
        non_null(ERROR_STATUS)?;
        let s = apex::get_error_status()?;
        let mut msg: ERROR_MESSAGE_TYPE = [0; MAX_ERROR_MESSAGE_SIZE];
        let n = s.message.len().min(MAX_ERROR_MESSAGE_SIZE);
        msg[..n].copy_from_slice(&s.message[..n]);
        put(
            ERROR_STATUS,
            ERROR_STATUS_TYPE {
                ERROR_CODE: error_code_type(s.error_code),
                LENGTH: n as ERROR_MESSAGE_SIZE_TYPE,
                FAILED_PROCESS_ID: s.failed_process_id.0,
                FAILED_ADDRESS: s.failed_address as SYSTEM_ADDRESS_TYPE,
                MESSAGE: msg,
            },
        )
    });
}

/// `RAISE_APPLICATION_ERROR`.
#[no_mangle]
pub extern "C" fn RAISE_APPLICATION_ERROR(
    ERROR_CODE: ERROR_CODE_TYPE,
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTH: ERROR_MESSAGE_SIZE_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("RAISE_APPLICATION_ERROR", RETURN_CODE, || {
        let code = error_code(ERROR_CODE)?;
        let msg = message(MESSAGE_ADDR, LENGTH)?;
        Ok(apex::raise_application_error(code, msg)?)
    });
}

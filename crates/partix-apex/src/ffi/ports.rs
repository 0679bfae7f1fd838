//! `include/arinc653/sampling.h` and `include/arinc653/queueing.h`: sampling and queuing port
//! services, and the `#[repr(C)]` mirrors of their types; `include/arinc653/partix_ports.h`:
//! the partix extensions (receive modes, waiting for a newer sampling message).
//!
//! A `MESSAGE_ADDR` that the service reads (`WRITE_SAMPLING_MESSAGE`, `SEND_QUEUING_MESSAGE`) is
//! read for `LENGTH` bytes only after `LENGTH` was checked against the port's maximum; one that
//! it writes (`READ_SAMPLING_MESSAGE`, `RECEIVE_QUEUING_MESSAGE`) must hold the port's
//! `MAX_MESSAGE_SIZE` bytes, as the standard requires.
#![allow(non_camel_case_types, clippy::upper_case_acronyms)]

use super::types::*;
use super::{lookup_name, non_null, put, service, Rc, BAD_PARAM};
use partix_runtime::partition::{
    self as apex, ApexError, PortDirection, QueuingDiscipline, QueuingPortId, RecvMode,
    SamplingPortId, Validity,
};
use std::ffi::c_char;
use std::mem::{offset_of, size_of};

/// `PORT_DIRECTION_TYPE` (a C enumeration).
pub type PORT_DIRECTION_TYPE = u32;
/// `SOURCE`.
pub const SOURCE: PORT_DIRECTION_TYPE = 0;
/// `DESTINATION`.
pub const DESTINATION: PORT_DIRECTION_TYPE = 1;
/// `QUEUING_DISCIPLINE_TYPE` (a C enumeration).
pub type QUEUING_DISCIPLINE_TYPE = u32;
/// `FIFO`.
pub const FIFO: QUEUING_DISCIPLINE_TYPE = 0;
/// `PRIORITY`.
pub const PRIORITY: QUEUING_DISCIPLINE_TYPE = 1;
/// `MESSAGE_RANGE_TYPE`.
pub type MESSAGE_RANGE_TYPE = APEX_INTEGER;
/// `WAITING_RANGE_TYPE`.
pub type WAITING_RANGE_TYPE = APEX_INTEGER;
/// `VALIDITY_TYPE` (a C enumeration).
pub type VALIDITY_TYPE = u32;
/// `INVALID`.
pub const INVALID: VALIDITY_TYPE = 0;
/// `VALID`.
pub const VALID: VALIDITY_TYPE = 1;
/// `SAMPLING_PORT_ID_TYPE`.
pub type SAMPLING_PORT_ID_TYPE = APEX_INTEGER;
/// `QUEUING_PORT_ID_TYPE`.
pub type QUEUING_PORT_ID_TYPE = APEX_INTEGER;

/// `PARTIX_RECV_MODE_TYPE` (a C enumeration; partix extension).
pub type PARTIX_RECV_MODE_TYPE = u32;
/// `PARTIX_RECV_SPIN`: busy-poll.
pub const PARTIX_RECV_SPIN: PARTIX_RECV_MODE_TYPE = 0;
/// `PARTIX_RECV_SPIN_THEN_PARK`: poll `SPINS` times, then park.
pub const PARTIX_RECV_SPIN_THEN_PARK: PARTIX_RECV_MODE_TYPE = 1;
/// `PARTIX_RECV_BLOCKING`: park at once.
pub const PARTIX_RECV_BLOCKING: PARTIX_RECV_MODE_TYPE = 2;

/// `SAMPLING_PORT_STATUS_TYPE`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SAMPLING_PORT_STATUS_TYPE {
    /// `REFRESH_PERIOD` (ns).
    pub REFRESH_PERIOD: SYSTEM_TIME_TYPE,
    /// `MAX_MESSAGE_SIZE`.
    pub MAX_MESSAGE_SIZE: MESSAGE_SIZE_TYPE,
    /// `PORT_DIRECTION`.
    pub PORT_DIRECTION: PORT_DIRECTION_TYPE,
    /// `LAST_MSG_VALIDITY`.
    pub LAST_MSG_VALIDITY: VALIDITY_TYPE,
}

/// `QUEUING_PORT_STATUS_TYPE`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QUEUING_PORT_STATUS_TYPE {
    /// `NB_MESSAGE`.
    pub NB_MESSAGE: MESSAGE_RANGE_TYPE,
    /// `MAX_NB_MESSAGE`.
    pub MAX_NB_MESSAGE: MESSAGE_RANGE_TYPE,
    /// `MAX_MESSAGE_SIZE`.
    pub MAX_MESSAGE_SIZE: MESSAGE_SIZE_TYPE,
    /// `PORT_DIRECTION`.
    pub PORT_DIRECTION: PORT_DIRECTION_TYPE,
    /// `WAITING_PROCESSES`.
    pub WAITING_PROCESSES: WAITING_RANGE_TYPE,
}

// Layout as gcc lays out sampling.h / queueing.h on LP64 Linux; the unit test below compiles a
// C program that prints the same numbers and compares.
const _: () = {
    assert!(size_of::<SAMPLING_PORT_STATUS_TYPE>() == 24);
    assert!(offset_of!(SAMPLING_PORT_STATUS_TYPE, MAX_MESSAGE_SIZE) == 8);
    assert!(offset_of!(SAMPLING_PORT_STATUS_TYPE, PORT_DIRECTION) == 12);
    assert!(offset_of!(SAMPLING_PORT_STATUS_TYPE, LAST_MSG_VALIDITY) == 16);
    assert!(size_of::<QUEUING_PORT_STATUS_TYPE>() == 20);
    assert!(offset_of!(QUEUING_PORT_STATUS_TYPE, MAX_NB_MESSAGE) == 4);
    assert!(offset_of!(QUEUING_PORT_STATUS_TYPE, MAX_MESSAGE_SIZE) == 8);
    assert!(offset_of!(QUEUING_PORT_STATUS_TYPE, PORT_DIRECTION) == 12);
    assert!(offset_of!(QUEUING_PORT_STATUS_TYPE, WAITING_PROCESSES) == 16);
};

fn direction(d: PORT_DIRECTION_TYPE) -> Option<PortDirection> {
    match d {
        SOURCE => Some(PortDirection::Source),
        DESTINATION => Some(PortDirection::Destination),
        _ => None,
    }
}

fn direction_type(d: PortDirection) -> PORT_DIRECTION_TYPE {
    match d {
        PortDirection::Source => SOURCE,
        PortDirection::Destination => DESTINATION,
    }
}

fn validity_type(v: Validity) -> VALIDITY_TYPE {
    match v {
        Validity::Invalid => INVALID,
        Validity::Valid => VALID,
    }
}

fn discipline(d: QUEUING_DISCIPLINE_TYPE) -> Option<QueuingDiscipline> {
    match d {
        FIFO => Some(QueuingDiscipline::Fifo),
        PRIORITY => Some(QueuingDiscipline::Priority),
        _ => None,
    }
}

/// A configured size from C: negative or zero sizes match no configuration.
fn size(n: APEX_INTEGER) -> Option<u32> {
    u32::try_from(n).ok().filter(|&n| n > 0)
}

/// The answer of `CREATE_*_PORT` to an argument that no configuration can match (a direction or
/// queuing discipline that is none of its type's values, a size ≤ 0): `INVALID_CONFIG`, as for
/// any argument that differs from the configuration, unless the port is already created
/// (`created`), which the standard checks first: `NO_ACTION`.
fn unmatched(created: bool) -> Rc {
    if created {
        ApexError::NoAction.into()
    } else {
        ApexError::InvalidConfig.into()
    }
}

/// Borrow the `len` bytes of a message the caller passes in (`len` already checked: 1..=max).
fn message_in<'a>(addr: MESSAGE_ADDR_TYPE, len: usize) -> Result<&'a [u8], Rc> {
    non_null(addr)?;
    // SAFETY: addr is non-null and the caller passes a message of LENGTH bytes (the prototype
    // says so); len is LENGTH, checked to be positive and at most the port's maximum.
    Ok(unsafe { std::slice::from_raw_parts(addr, len) })
}

/// Borrow the caller's buffer of the port's `max` bytes for a message to be copied into.
fn message_out<'a>(addr: MESSAGE_ADDR_TYPE, max: u32) -> Result<&'a mut [u8], Rc> {
    non_null(addr)?;
    // SAFETY: addr is non-null, and the partix headers (sampling.h, queueing.h) require
    // MESSAGE_ADDR to point to at least the port's MAX_MESSAGE_SIZE (= max) writable bytes (the
    // standard itself states no size); nothing else refers to them during the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(addr, max as usize) })
}

/// Check a message length against a port's maximum: > max is `INVALID_CONFIG`, ≤ 0 is
/// `INVALID_PARAM` (in that order, as the standard lists them).
fn message_len(len: MESSAGE_SIZE_TYPE, max: u32) -> Result<usize, Rc> {
    if i64::from(len) > i64::from(max) {
        return Err(ApexError::InvalidConfig.into());
    }
    if len <= 0 {
        return Err(BAD_PARAM);
    }
    Ok(len as usize)
}

/// `CREATE_SAMPLING_PORT`.
#[no_mangle]
pub extern "C" fn CREATE_SAMPLING_PORT(
    SAMPLING_PORT_NAME: *const c_char,
    MAX_MESSAGE_SIZE: MESSAGE_SIZE_TYPE,
    PORT_DIRECTION: PORT_DIRECTION_TYPE,
    REFRESH_PERIOD: SYSTEM_TIME_TYPE,
    SAMPLING_PORT_ID: *mut SAMPLING_PORT_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("CREATE_SAMPLING_PORT", RETURN_CODE, || {
        non_null(SAMPLING_PORT_ID)?;
        // A name that is not UTF-8 cannot be configured: INVALID_CONFIG, no such port.
        let name = lookup_name(SAMPLING_PORT_NAME)?;
        let unmatched = || unmatched(apex::get_sampling_port_id(&name).is_ok());
        let dir = direction(PORT_DIRECTION).ok_or_else(unmatched)?;
        let max = size(MAX_MESSAGE_SIZE).ok_or_else(unmatched)?;
        let id = apex::create_sampling_port(&name, max, dir, REFRESH_PERIOD)?;
        put(SAMPLING_PORT_ID, id.0)
    });
}

/// `WRITE_SAMPLING_MESSAGE`.
#[no_mangle]
pub extern "C" fn WRITE_SAMPLING_MESSAGE(
    SAMPLING_PORT_ID: SAMPLING_PORT_ID_TYPE,
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTH: MESSAGE_SIZE_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("WRITE_SAMPLING_MESSAGE", RETURN_CODE, || {
        let id = SamplingPortId(SAMPLING_PORT_ID);
        let max = apex::sampling_port_max_message_size(id)?;
        let len = message_len(LENGTH, max)?;
        let msg = message_in(MESSAGE_ADDR, len)?;
        Ok(apex::write_sampling_message(id, msg)?)
    });
}

/// `READ_SAMPLING_MESSAGE`.
#[no_mangle]
pub extern "C" fn READ_SAMPLING_MESSAGE(
    SAMPLING_PORT_ID: SAMPLING_PORT_ID_TYPE,
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTH: *mut MESSAGE_SIZE_TYPE,
    VALIDITY: *mut VALIDITY_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("READ_SAMPLING_MESSAGE", RETURN_CODE, || {
        non_null(LENGTH)?;
        non_null(VALIDITY)?;
        let id = SamplingPortId(SAMPLING_PORT_ID);
        let max = apex::sampling_port_max_message_size(id)?;
        let buf = message_out(MESSAGE_ADDR, max)?;
        // What an empty port answers (with NO_ACTION), as the standard gives them.
        put(LENGTH, 0)?;
        put(VALIDITY, INVALID)?;
        let (n, v) = apex::read_sampling_message(id, buf)?;
        put(LENGTH, n as MESSAGE_SIZE_TYPE)?;
        put(VALIDITY, validity_type(v))
    });
}

/// `GET_SAMPLING_PORT_ID`.
#[no_mangle]
pub extern "C" fn GET_SAMPLING_PORT_ID(
    SAMPLING_PORT_NAME: *const c_char,
    SAMPLING_PORT_ID: *mut SAMPLING_PORT_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_SAMPLING_PORT_ID", RETURN_CODE, || {
        non_null(SAMPLING_PORT_ID)?;
        let name = lookup_name(SAMPLING_PORT_NAME)?;
        put(SAMPLING_PORT_ID, apex::get_sampling_port_id(&name)?.0)
    });
}

/// `GET_SAMPLING_PORT_STATUS`.
#[no_mangle]
pub extern "C" fn GET_SAMPLING_PORT_STATUS(
    SAMPLING_PORT_ID: SAMPLING_PORT_ID_TYPE,
    SAMPLING_PORT_STATUS: *mut SAMPLING_PORT_STATUS_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_SAMPLING_PORT_STATUS", RETURN_CODE, || {
        non_null(SAMPLING_PORT_STATUS)?;
        let st = apex::get_sampling_port_status(SamplingPortId(SAMPLING_PORT_ID))?;
        put(
            SAMPLING_PORT_STATUS,
            SAMPLING_PORT_STATUS_TYPE {
                REFRESH_PERIOD: st.refresh_period,
                MAX_MESSAGE_SIZE: st.max_message_size as MESSAGE_SIZE_TYPE,
                PORT_DIRECTION: direction_type(st.port_direction),
                LAST_MSG_VALIDITY: validity_type(st.last_msg_validity),
            },
        )
    });
}

/// `CREATE_QUEUING_PORT`.
#[no_mangle]
pub extern "C" fn CREATE_QUEUING_PORT(
    QUEUING_PORT_NAME: *const c_char,
    MAX_MESSAGE_SIZE: MESSAGE_SIZE_TYPE,
    MAX_NB_MESSAGE: MESSAGE_RANGE_TYPE,
    PORT_DIRECTION: PORT_DIRECTION_TYPE,
    QUEUING_DISCIPLINE: QUEUING_DISCIPLINE_TYPE,
    QUEUING_PORT_ID: *mut QUEUING_PORT_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("CREATE_QUEUING_PORT", RETURN_CODE, || {
        non_null(QUEUING_PORT_ID)?;
        // A name that is not UTF-8 cannot be configured: INVALID_CONFIG, no such port.
        let name = lookup_name(QUEUING_PORT_NAME)?;
        let unmatched = || unmatched(apex::get_queuing_port_id(&name).is_ok());
        let dir = direction(PORT_DIRECTION).ok_or_else(unmatched)?;
        let disc = discipline(QUEUING_DISCIPLINE).ok_or_else(unmatched)?;
        let max = size(MAX_MESSAGE_SIZE).ok_or_else(unmatched)?;
        let nb = size(MAX_NB_MESSAGE).ok_or_else(unmatched)?;
        let id = apex::create_queuing_port(&name, max, nb, dir, disc)?;
        put(QUEUING_PORT_ID, id.0)
    });
}

/// `SEND_QUEUING_MESSAGE`.
#[no_mangle]
pub extern "C" fn SEND_QUEUING_MESSAGE(
    QUEUING_PORT_ID: QUEUING_PORT_ID_TYPE,
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTH: MESSAGE_SIZE_TYPE,
    TIME_OUT: SYSTEM_TIME_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("SEND_QUEUING_MESSAGE", RETURN_CODE, || {
        let id = QueuingPortId(QUEUING_PORT_ID);
        let max = apex::queuing_port_max_message_size(id)?;
        if TIME_OUT < 0 && TIME_OUT != apex::INFINITE_TIME_VALUE {
            return Err(BAD_PARAM);
        }
        let len = message_len(LENGTH, max)?;
        let msg = message_in(MESSAGE_ADDR, len)?;
        Ok(apex::send_queuing_message(id, msg, TIME_OUT)?)
    });
}

/// `RECEIVE_QUEUING_MESSAGE`.
#[no_mangle]
pub extern "C" fn RECEIVE_QUEUING_MESSAGE(
    QUEUING_PORT_ID: QUEUING_PORT_ID_TYPE,
    TIME_OUT: SYSTEM_TIME_TYPE,
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTH: *mut MESSAGE_SIZE_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("RECEIVE_QUEUING_MESSAGE", RETURN_CODE, || {
        non_null(LENGTH)?;
        let id = QueuingPortId(QUEUING_PORT_ID);
        let max = apex::queuing_port_max_message_size(id)?;
        let buf = message_out(MESSAGE_ADDR, max)?;
        put(LENGTH, 0)?;
        let n = apex::receive_queuing_message(id, buf, TIME_OUT)?;
        put(LENGTH, n as MESSAGE_SIZE_TYPE)
    });
}

/// Messages one `PARTIX_SEND_QUEUING_MESSAGES` / `PARTIX_RECEIVE_QUEUING_MESSAGES` call handles
/// at most (a larger `COUNT` is served in part; the counts say how much).
const BATCH_MAX: usize = 64;

/// `PARTIX_SEND_QUEUING_MESSAGES` (partix extension): send up to `COUNT` messages in order with
/// one lock, one publication and one wake-up check; `SENT` is how many were sent.
#[no_mangle]
pub extern "C" fn PARTIX_SEND_QUEUING_MESSAGES(
    QUEUING_PORT_ID: QUEUING_PORT_ID_TYPE,
    MESSAGE_ADDRS: *const MESSAGE_ADDR_TYPE,
    LENGTHS: *const MESSAGE_SIZE_TYPE,
    COUNT: APEX_INTEGER,
    TIME_OUT: SYSTEM_TIME_TYPE,
    SENT: *mut APEX_INTEGER,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("PARTIX_SEND_QUEUING_MESSAGES", RETURN_CODE, || {
        non_null(SENT)?;
        put(SENT, 0)?;
        non_null(MESSAGE_ADDRS)?;
        non_null(LENGTHS)?;
        let id = QueuingPortId(QUEUING_PORT_ID);
        let max = apex::queuing_port_max_message_size(id)?;
        if TIME_OUT < 0 && TIME_OUT != apex::INFINITE_TIME_VALUE {
            return Err(BAD_PARAM);
        }
        let n = usize::try_from(COUNT)
            .ok()
            .filter(|&n| n > 0)
            .ok_or(BAD_PARAM)?
            .min(BATCH_MAX);
        // SAFETY: both pointers are non-null and the caller passes COUNT (>= n) entries.
        let (addrs, lens) = unsafe {
            (
                std::slice::from_raw_parts(MESSAGE_ADDRS, n),
                std::slice::from_raw_parts(LENGTHS, n),
            )
        };
        // Any message too long (INVALID_CONFIG) before any empty one or a null address
        // (INVALID_PARAM), whatever their positions: the order of the Rust API
        // (`send_queuing_messages`) and, for one message, of the standard's SEND_QUEUING_MESSAGE.
        // Checked one message at a time, {0, MAX + 1} was INVALID_PARAM here and INVALID_CONFIG
        // in Rust (review 27, finding 5).
        if lens.iter().any(|&len| i64::from(len) > i64::from(max)) {
            return Err(ApexError::InvalidConfig.into());
        }
        let mut msgs: [&[u8]; BATCH_MAX] = [&[]; BATCH_MAX];
        for i in 0..n {
            let len = message_len(lens[i], max)?;
            msgs[i] = message_in(addrs[i], len)?;
        }
        let sent = apex::send_queuing_messages(id, &msgs[..n], TIME_OUT)?;
        put(SENT, sent as APEX_INTEGER)
    });
}

/// `PARTIX_RECEIVE_QUEUING_MESSAGES` (partix extension): receive up to `COUNT` messages at once,
/// message `i` at `MESSAGE_ADDR + i * MAX_MESSAGE_SIZE` and its length in `LENGTHS[i]`;
/// `RECEIVED` is how many.
#[no_mangle]
pub extern "C" fn PARTIX_RECEIVE_QUEUING_MESSAGES(
    QUEUING_PORT_ID: QUEUING_PORT_ID_TYPE,
    TIME_OUT: SYSTEM_TIME_TYPE,
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTHS: *mut MESSAGE_SIZE_TYPE,
    COUNT: APEX_INTEGER,
    RECEIVED: *mut APEX_INTEGER,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("PARTIX_RECEIVE_QUEUING_MESSAGES", RETURN_CODE, || {
        non_null(RECEIVED)?;
        put(RECEIVED, 0)?;
        non_null(LENGTHS)?;
        non_null(MESSAGE_ADDR)?;
        let id = QueuingPortId(QUEUING_PORT_ID);
        let max = apex::queuing_port_max_message_size(id)?;
        let n = usize::try_from(COUNT)
            .ok()
            .filter(|&n| n > 0)
            .ok_or(BAD_PARAM)?
            .min(BATCH_MAX);
        // SAFETY: MESSAGE_ADDR is non-null and the caller passes COUNT (>= n) buffers of the
        // port's MAX_MESSAGE_SIZE bytes back to back; nothing else refers to them during the call.
        let buf = unsafe { std::slice::from_raw_parts_mut(MESSAGE_ADDR, n * max as usize) };
        let mut lens = [0usize; BATCH_MAX];
        let got = apex::receive_queuing_messages(id, buf, &mut lens[..n], TIME_OUT)?;
        for (i, &len) in lens.iter().enumerate().take(got) {
            // SAFETY: LENGTHS is non-null with COUNT (>= got) entries.
            unsafe { LENGTHS.add(i).write(len as MESSAGE_SIZE_TYPE) };
        }
        put(RECEIVED, got as APEX_INTEGER)
    });
}

/// `GET_QUEUING_PORT_ID`.
#[no_mangle]
pub extern "C" fn GET_QUEUING_PORT_ID(
    QUEUING_PORT_NAME: *const c_char,
    QUEUING_PORT_ID: *mut QUEUING_PORT_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_QUEUING_PORT_ID", RETURN_CODE, || {
        non_null(QUEUING_PORT_ID)?;
        let name = lookup_name(QUEUING_PORT_NAME)?;
        put(QUEUING_PORT_ID, apex::get_queuing_port_id(&name)?.0)
    });
}

/// `GET_QUEUING_PORT_STATUS`.
#[no_mangle]
pub extern "C" fn GET_QUEUING_PORT_STATUS(
    QUEUING_PORT_ID: QUEUING_PORT_ID_TYPE,
    QUEUING_PORT_STATUS: *mut QUEUING_PORT_STATUS_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_QUEUING_PORT_STATUS", RETURN_CODE, || {
        non_null(QUEUING_PORT_STATUS)?;
        let st = apex::get_queuing_port_status(QueuingPortId(QUEUING_PORT_ID))?;
        put(
            QUEUING_PORT_STATUS,
            QUEUING_PORT_STATUS_TYPE {
                NB_MESSAGE: st.nb_message as MESSAGE_RANGE_TYPE,
                MAX_NB_MESSAGE: st.max_nb_message as MESSAGE_RANGE_TYPE,
                MAX_MESSAGE_SIZE: st.max_message_size as MESSAGE_SIZE_TYPE,
                PORT_DIRECTION: direction_type(st.port_direction),
                WAITING_PROCESSES: st.waiting_processes as WAITING_RANGE_TYPE,
            },
        )
    });
}

/// `CLEAR_QUEUING_PORT`.
#[no_mangle]
pub extern "C" fn CLEAR_QUEUING_PORT(
    QUEUING_PORT_ID: QUEUING_PORT_ID_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("CLEAR_QUEUING_PORT", RETURN_CODE, || {
        Ok(apex::clear_queuing_port(QueuingPortId(QUEUING_PORT_ID))?)
    });
}

fn recv_mode(mode: PARTIX_RECV_MODE_TYPE, spins: APEX_INTEGER) -> Result<RecvMode, Rc> {
    match mode {
        PARTIX_RECV_SPIN => Ok(RecvMode::Spin),
        PARTIX_RECV_SPIN_THEN_PARK => Ok(RecvMode::SpinThenPark {
            spins: u32::try_from(spins).map_err(|_| BAD_PARAM)?,
        }),
        PARTIX_RECV_BLOCKING => Ok(RecvMode::Blocking),
        _ => Err(BAD_PARAM),
    }
}

/// `PARTIX_SET_QUEUING_PORT_RECV_MODE` (partix extension): how processes waiting on a queuing
/// port wait (`SPINS` is used by `PARTIX_RECV_SPIN_THEN_PARK` only).
#[no_mangle]
pub extern "C" fn PARTIX_SET_QUEUING_PORT_RECV_MODE(
    QUEUING_PORT_ID: QUEUING_PORT_ID_TYPE,
    MODE: PARTIX_RECV_MODE_TYPE,
    SPINS: APEX_INTEGER,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("PARTIX_SET_QUEUING_PORT_RECV_MODE", RETURN_CODE, || {
        let mode = recv_mode(MODE, SPINS)?;
        Ok(apex::set_queuing_port_recv_mode(
            QueuingPortId(QUEUING_PORT_ID),
            mode,
        )?)
    });
}

/// `PARTIX_SET_SAMPLING_PORT_RECV_MODE` (partix extension): how
/// `PARTIX_WAIT_SAMPLING_MESSAGE` waits on a destination sampling port.
#[no_mangle]
pub extern "C" fn PARTIX_SET_SAMPLING_PORT_RECV_MODE(
    SAMPLING_PORT_ID: SAMPLING_PORT_ID_TYPE,
    MODE: PARTIX_RECV_MODE_TYPE,
    SPINS: APEX_INTEGER,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("PARTIX_SET_SAMPLING_PORT_RECV_MODE", RETURN_CODE, || {
        let mode = recv_mode(MODE, SPINS)?;
        Ok(apex::set_sampling_port_recv_mode(
            SamplingPortId(SAMPLING_PORT_ID),
            mode,
        )?)
    });
}

/// Write `mode` to `MODE` and its polls (spin-then-park; 0 otherwise) to `SPINS`.
fn put_recv_mode(
    mode: RecvMode,
    MODE: *mut PARTIX_RECV_MODE_TYPE,
    SPINS: *mut APEX_INTEGER,
) -> Result<(), Rc> {
    non_null(MODE)?;
    non_null(SPINS)?;
    let (m, n) = match mode {
        RecvMode::Spin => (PARTIX_RECV_SPIN, 0),
        RecvMode::SpinThenPark { spins } => (
            PARTIX_RECV_SPIN_THEN_PARK,
            APEX_INTEGER::try_from(spins).unwrap_or(APEX_INTEGER::MAX),
        ),
        RecvMode::Blocking => (PARTIX_RECV_BLOCKING, 0),
    };
    put(MODE, m)?;
    put(SPINS, n)
}

/// `PARTIX_GET_QUEUING_PORT_RECV_MODE` (partix extension): how processes waiting on a queuing
/// port wait (the configuration's `partix:ReceiveMode`, the default, or the last SET).
#[no_mangle]
pub extern "C" fn PARTIX_GET_QUEUING_PORT_RECV_MODE(
    QUEUING_PORT_ID: QUEUING_PORT_ID_TYPE,
    MODE: *mut PARTIX_RECV_MODE_TYPE,
    SPINS: *mut APEX_INTEGER,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("PARTIX_GET_QUEUING_PORT_RECV_MODE", RETURN_CODE, || {
        let mode = apex::queuing_port_recv_mode(QueuingPortId(QUEUING_PORT_ID))?;
        put_recv_mode(mode, MODE, SPINS)
    });
}

/// `PARTIX_GET_SAMPLING_PORT_RECV_MODE` (partix extension): how `PARTIX_WAIT_SAMPLING_MESSAGE`
/// waits on a sampling port (the configuration's `partix:ReceiveMode`, the default, or the
/// last SET).
#[no_mangle]
pub extern "C" fn PARTIX_GET_SAMPLING_PORT_RECV_MODE(
    SAMPLING_PORT_ID: SAMPLING_PORT_ID_TYPE,
    MODE: *mut PARTIX_RECV_MODE_TYPE,
    SPINS: *mut APEX_INTEGER,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("PARTIX_GET_SAMPLING_PORT_RECV_MODE", RETURN_CODE, || {
        let mode = apex::sampling_port_recv_mode(SamplingPortId(SAMPLING_PORT_ID))?;
        put_recv_mode(mode, MODE, SPINS)
    });
}

/// `PARTIX_WAIT_SAMPLING_MESSAGE` (partix extension): wait up to `TIME_OUT` ns for a message
/// newer than the last one the port returned, then read it as `READ_SAMPLING_MESSAGE` does.
#[no_mangle]
pub extern "C" fn PARTIX_WAIT_SAMPLING_MESSAGE(
    SAMPLING_PORT_ID: SAMPLING_PORT_ID_TYPE,
    TIME_OUT: SYSTEM_TIME_TYPE,
    MESSAGE_ADDR: MESSAGE_ADDR_TYPE,
    LENGTH: *mut MESSAGE_SIZE_TYPE,
    VALIDITY: *mut VALIDITY_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("PARTIX_WAIT_SAMPLING_MESSAGE", RETURN_CODE, || {
        non_null(LENGTH)?;
        non_null(VALIDITY)?;
        let id = SamplingPortId(SAMPLING_PORT_ID);
        let max = apex::sampling_port_max_message_size(id)?;
        let buf = message_out(MESSAGE_ADDR, max)?;
        put(LENGTH, 0)?;
        put(VALIDITY, INVALID)?;
        let (n, v) = apex::wait_sampling_message(id, TIME_OUT, buf)?;
        put(LENGTH, n as MESSAGE_SIZE_TYPE)?;
        put(VALIDITY, validity_type(v))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// The C compiler lays the status structs out as the Rust mirrors.
    #[test]
    fn status_layouts_agree_with_the_c_headers() {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let src = std::env::temp_dir().join(format!("ports-layout-{}.c", std::process::id()));
        let exe = src.with_extension("bin");
        std::fs::write(
            &src,
            r#"#include <arinc653/apex.h>
#include <stddef.h>
#include <stdio.h>
int main(void) {
    printf("%zu %zu %zu %zu\n", sizeof(SAMPLING_PORT_STATUS_TYPE),
           offsetof(SAMPLING_PORT_STATUS_TYPE, MAX_MESSAGE_SIZE),
           offsetof(SAMPLING_PORT_STATUS_TYPE, PORT_DIRECTION),
           offsetof(SAMPLING_PORT_STATUS_TYPE, LAST_MSG_VALIDITY));
    printf("%zu %zu %zu %zu %zu\n", sizeof(QUEUING_PORT_STATUS_TYPE),
           offsetof(QUEUING_PORT_STATUS_TYPE, MAX_NB_MESSAGE),
           offsetof(QUEUING_PORT_STATUS_TYPE, MAX_MESSAGE_SIZE),
           offsetof(QUEUING_PORT_STATUS_TYPE, PORT_DIRECTION),
           offsetof(QUEUING_PORT_STATUS_TYPE, WAITING_PROCESSES));
    printf("%zu %zu\n", sizeof(VALIDITY_TYPE), sizeof(SAMPLING_PORT_ID_TYPE));
    return 0;
}
"#,
        )
        .unwrap();
        let cc = Command::new("cc")
            .args(["-std=c99", "-Wall", "-Werror", "-I"])
            .arg(dir.join("include"))
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .output()
            .expect("run cc");
        assert!(
            cc.status.success(),
            "{}",
            String::from_utf8_lossy(&cc.stderr)
        );
        let out = Command::new(&exe).output().expect("run the layout program");
        let _ = std::fs::remove_file(&src);
        let _ = std::fs::remove_file(&exe);
        let rust = format!(
            "{} {} {} {}\n{} {} {} {} {}\n{} {}\n",
            size_of::<SAMPLING_PORT_STATUS_TYPE>(),
            offset_of!(SAMPLING_PORT_STATUS_TYPE, MAX_MESSAGE_SIZE),
            offset_of!(SAMPLING_PORT_STATUS_TYPE, PORT_DIRECTION),
            offset_of!(SAMPLING_PORT_STATUS_TYPE, LAST_MSG_VALIDITY),
            size_of::<QUEUING_PORT_STATUS_TYPE>(),
            offset_of!(QUEUING_PORT_STATUS_TYPE, MAX_NB_MESSAGE),
            offset_of!(QUEUING_PORT_STATUS_TYPE, MAX_MESSAGE_SIZE),
            offset_of!(QUEUING_PORT_STATUS_TYPE, PORT_DIRECTION),
            offset_of!(QUEUING_PORT_STATUS_TYPE, WAITING_PROCESSES),
            size_of::<VALIDITY_TYPE>(),
            size_of::<SAMPLING_PORT_ID_TYPE>(),
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), rust);
    }

    #[test]
    fn lengths_are_checked_before_any_byte_is_read() {
        assert_eq!(message_len(9, 8), Err(Rc(INVALID_CONFIG)));
        assert_eq!(message_len(0, 8), Err(BAD_PARAM));
        assert_eq!(message_len(-3, 8), Err(BAD_PARAM));
        assert_eq!(message_len(8, 8), Ok(8));
        assert_eq!(size(0), None);
        assert_eq!(size(-4), None);
        assert_eq!(size(16), Some(16));
        assert_eq!(direction(7), None);
        assert_eq!(discipline(2), None);
        assert_eq!(unmatched(false), Rc(INVALID_CONFIG));
        assert_eq!(unmatched(true), Rc(NO_ACTION));
    }

    /// A null output pointer is refused before anything is looked up (the null message buffers
    /// of READ and RECEIVE on real ports are in `tests/c/ports_codes.c`).
    #[test]
    fn null_output_pointers_are_refused_first() {
        let mut rc: RETURN_CODE_TYPE = 99;
        CREATE_SAMPLING_PORT(c"X".as_ptr(), 8, SOURCE, 0, std::ptr::null_mut(), &mut rc);
        assert_eq!(rc, INVALID_PARAM);
        CREATE_QUEUING_PORT(
            c"X".as_ptr(),
            8,
            4,
            SOURCE,
            FIFO,
            std::ptr::null_mut(),
            &mut rc,
        );
        assert_eq!(rc, INVALID_PARAM);
        CLEAR_QUEUING_PORT(42, &mut rc);
        assert_eq!(rc, INVALID_PARAM);
    }
}

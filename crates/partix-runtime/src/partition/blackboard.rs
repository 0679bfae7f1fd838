//! Blackboards (ARINC 653 Part 1): CREATE_BLACKBOARD, DISPLAY_BLACKBOARD, READ_BLACKBOARD,
//! CLEAR_BLACKBOARD, GET_BLACKBOARD_ID, GET_BLACKBOARD_STATUS.
//!
//! A blackboard holds at most one message, which reads do not consume. READ_BLACKBOARD on an
//! empty blackboard queues the caller; DISPLAY_BLACKBOARD replaces the message and releases every
//! waiting reader, each with a copy of the new message (a CLEAR before a released reader runs does
//! not take the message away from it).

use super::error::{ApexError, ApexResult};
use super::ports::QueuingDiscipline;
use super::time::SystemTime;
use super::waitq::{self, block, check_name, check_timeout, may_wait, Inbox, Step, WaitQueue};

/// `BLACKBOARD_ID_TYPE` (1, 2, ... in creation order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlackboardId(pub i32);

/// `EMPTY_INDICATOR_TYPE` (EMPTY = 0, OCCUPIED = 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmptyIndicator {
    /// `EMPTY`: no message displayed.
    Empty,
    /// `OCCUPIED`: a message is displayed.
    Occupied,
}

/// `MAX_NUMBER_OF_BLACKBOARDS` of this implementation (per partition).
pub const MAX_NUMBER_OF_BLACKBOARDS: usize = 256;

/// `SYSTEM_LIMIT_MESSAGE_SIZE`: the largest message of a blackboard or buffer (bytes).
pub const MAX_INTRA_MESSAGE_SIZE: u32 = 8192;

/// `BLACKBOARD_STATUS_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlackboardStatus {
    /// `EMPTY_INDICATOR`.
    pub empty_indicator: EmptyIndicator,
    /// `MAX_MESSAGE_SIZE` (bytes).
    pub max_message_size: u32,
    /// `WAITING_PROCESSES`.
    pub waiting_processes: u32,
}

pub(crate) struct Blackboard {
    name: String,
    max: u32,
    /// The displayed message (capacity `max`, allocated at creation).
    message: Vec<u8>,
    occupied: bool,
    /// Waiting readers; the displayed message is copied into each one's buffer.
    queue: WaitQueue<Inbox>,
}

fn index(id: BlackboardId, n: usize) -> ApexResult<usize> {
    usize::try_from(id.0)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .filter(|&i| i < n)
        .ok_or(ApexError::InvalidParam)
}

/// Create an empty blackboard for messages of up to `max_message_size` bytes
/// (`CREATE_BLACKBOARD`), in COLD_START or WARM_START mode.
///
/// # Errors
/// - `InvalidConfig`: [`MAX_NUMBER_OF_BLACKBOARDS`] blackboards exist already; the partition's
///   memory cannot hold the blackboard's `max_message_size` bytes and its wait queue (checked
///   after the parameters, before the mode).
/// - `NoAction`: a blackboard of this name exists.
/// - `InvalidParam`: `name` is empty or longer than 30 bytes; `max_message_size` is 0 or larger
///   than [`MAX_INTRA_MESSAGE_SIZE`].
/// - `InvalidMode`: the partition is in NORMAL mode.
pub fn create_blackboard(name: &str, max_message_size: u32) -> ApexResult<BlackboardId> {
    waitq::with_objects(|objs, _, _, _| {
        if objs.blackboards.len() >= MAX_NUMBER_OF_BLACKBOARDS {
            return Err(ApexError::InvalidConfig);
        }
        if objs.blackboards.iter().any(|b| b.name == name) {
            return Err(ApexError::NoAction);
        }
        check_name(name)?;
        if max_message_size == 0 || max_message_size > MAX_INTRA_MESSAGE_SIZE {
            return Err(ApexError::InvalidParam);
        }
        // Insufficient storage is INVALID_CONFIG, not an abort of the partition.
        let message = waitq::try_capacity(max_message_size as usize)?;
        let queue = WaitQueue::try_new(QueuingDiscipline::Fifo)?;
        let name = waitq::try_name(name)?;
        waitq::try_room(&mut objs.blackboards)?;
        waitq::creation_mode()?;
        objs.blackboards.push(Blackboard {
            name,
            max: max_message_size,
            message,
            occupied: false,
            queue,
        });
        let id = objs.blackboards.len() as i32;
        MAX_SIZES.set(id, max_message_size);
        Ok(BlackboardId(id))
    })
}

/// Each blackboard's maximum message size, for [`blackboard_max_message_size`].
static MAX_SIZES: waitq::MaxSizes<MAX_NUMBER_OF_BLACKBOARDS> = waitq::MaxSizes::new();

/// The maximum message size of blackboard `id`: GET_BLACKBOARD_STATUS's `MAX_MESSAGE_SIZE`,
/// without the runtime lock (partix extension; the C API's DISPLAY_BLACKBOARD and
/// READ_BLACKBOARD check every message's length against it).
///
/// # Errors
/// `InvalidParam`: no such blackboard.
pub fn blackboard_max_message_size(id: BlackboardId) -> ApexResult<u32> {
    MAX_SIZES.get(id.0)
}

/// Display a message on a blackboard (`DISPLAY_BLACKBOARD`): it replaces the previous one and
/// every waiting reader is released with a copy (one of higher priority preempts the caller).
///
/// # Errors
/// - `InvalidParam`: no such blackboard; `message` is empty or longer than the maximum.
pub fn display_blackboard(id: BlackboardId, message: &[u8]) -> ApexResult<()> {
    waitq::with_objects(|objs, inner, now, wake| {
        let b = waitq::by_id(&mut objs.blackboards, id.0)?;
        if message.is_empty() || message.len() > b.max as usize {
            return Err(ApexError::InvalidParam);
        }
        b.message.clear();
        b.message.extend_from_slice(message);
        b.occupied = true;
        // Each reader gets a copy of the stored message, not of `message`: a C caller may
        // display from memory that overlaps a waiting reader's buffer, which the first copies
        // change (review 27, finding 4).
        let Blackboard {
            message: stored,
            queue,
            ..
        } = b;
        queue.grant_all(inner, now, wake, |m| m.fill(stored));
        Ok(())
    })
}

/// Read the message of a blackboard into `buf` (`READ_BLACKBOARD`), waiting up to `timeout` ns
/// while it is empty (0: do not wait; `INFINITE_TIME_VALUE`: no limit); return its length. The
/// message stays displayed.
///
/// # Errors
/// - `InvalidParam`: no such blackboard; `timeout` negative and not infinite; `buf` shorter than
///   the blackboard's maximum message size.
/// - `NotAvailable`: empty and `timeout` is 0.
/// - `InvalidMode`: empty, `timeout` ≠ 0, and the caller holds the preemption lock, is the error
///   handler or is not a process.
/// - `TimedOut`: nothing was displayed within `timeout`.
pub fn read_blackboard(id: BlackboardId, timeout: SystemTime, buf: &mut [u8]) -> ApexResult<usize> {
    check_timeout(timeout)?;
    let step = waitq::with_objects(|objs, inner, now, _| {
        let i = index(id, objs.blackboards.len())?;
        let b = &mut objs.blackboards[i];
        if buf.len() < b.max as usize {
            return Err(ApexError::InvalidParam);
        }
        if b.occupied {
            let n = b.message.len();
            buf[..n].copy_from_slice(&b.message);
            return Ok(Step::Done(n));
        }
        if timeout == 0 {
            return Err(ApexError::NotAvailable);
        }
        let me = may_wait(inner, timeout, now)?;
        // SAFETY: `buf` (at least `max` bytes) stays borrowed by this call, untouched, until
        // `block` below returns or this incarnation ends; DISPLAY copies the message into it.
        let inbox = unsafe { Inbox::new(buf) };
        Ok(Step::Wait(objs.enqueue(inner, me, inbox, |o| {
            &mut o.blackboards[i].queue
        })))
    })?;
    match step {
        Step::Done(n) => Ok(n),
        Step::Wait(t) => {
            let i = id.0 as usize - 1;
            block(t, |o| &mut o.blackboards[i].queue).map(|m| m.len())
        }
    }
}

/// Remove the message of a blackboard (`CLEAR_BLACKBOARD`).
///
/// # Errors
/// `InvalidParam`: no such blackboard.
pub fn clear_blackboard(id: BlackboardId) -> ApexResult<()> {
    waitq::with_objects(|objs, _, _, _| {
        let b = waitq::by_id(&mut objs.blackboards, id.0)?;
        b.occupied = false;
        b.message.clear();
        Ok(())
    })
}

/// Return the id of the blackboard `name` (`GET_BLACKBOARD_ID`).
///
/// # Errors
/// `InvalidConfig`: no blackboard has this name.
pub fn get_blackboard_id(name: &str) -> ApexResult<BlackboardId> {
    waitq::with_objects(|objs, _, _, _| {
        objs.blackboards
            .iter()
            .position(|b| b.name == name)
            .map(|i| BlackboardId(i as i32 + 1))
            .ok_or(ApexError::InvalidConfig)
    })
}

/// Return the status of a blackboard (`GET_BLACKBOARD_STATUS`).
///
/// # Errors
/// `InvalidParam`: no such blackboard.
pub fn get_blackboard_status(id: BlackboardId) -> ApexResult<BlackboardStatus> {
    waitq::with_objects(|objs, _, now, _| {
        let b = waitq::by_id(&mut objs.blackboards, id.0)?;
        Ok(BlackboardStatus {
            empty_indicator: if b.occupied {
                EmptyIndicator::Occupied
            } else {
                EmptyIndicator::Empty
            },
            max_message_size: b.max,
            waiting_processes: b.queue.waiting(now),
        })
    })
}

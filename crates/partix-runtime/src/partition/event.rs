//! Events (ARINC 653 Part 1): CREATE_EVENT, SET_EVENT, RESET_EVENT, WAIT_EVENT, GET_EVENT_ID,
//! GET_EVENT_STATUS.
//!
//! An event is UP or DOWN (DOWN at creation). WAIT_EVENT returns at once while it is UP and
//! queues the caller while it is DOWN; SET_EVENT sets it UP and releases every waiting process.
//! Waiters of an event are all released together, so their queue order does not matter (FIFO).

use super::error::{ApexError, ApexResult};
use super::ports::QueuingDiscipline;
use super::time::SystemTime;
use super::waitq::{self, block, check_name, check_timeout, may_wait, Step, WaitQueue};

/// `EVENT_ID_TYPE` (1, 2, ... in creation order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventId(pub i32);

/// `EVENT_STATE_TYPE` (DOWN = 0, UP = 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventState {
    /// `DOWN`.
    Down,
    /// `UP`.
    Up,
}

/// `MAX_NUMBER_OF_EVENTS` of this implementation (per partition).
pub const MAX_NUMBER_OF_EVENTS: usize = 256;

/// `EVENT_STATUS_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventStatus {
    /// `EVENT_STATE`.
    pub event_state: EventState,
    /// `WAITING_PROCESSES`.
    pub waiting_processes: u32,
}

pub(crate) struct Event {
    name: String,
    up: bool,
    queue: WaitQueue<()>,
}

fn index(id: EventId, n: usize) -> ApexResult<usize> {
    usize::try_from(id.0)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .filter(|&i| i < n)
        .ok_or(ApexError::InvalidParam)
}

/// Create an event, DOWN (`CREATE_EVENT`), in COLD_START or WARM_START mode.
///
/// # Errors
/// - `InvalidConfig`: [`MAX_NUMBER_OF_EVENTS`] events exist already; no memory is left for it
///   (checked after the name, before the mode).
/// - `NoAction`: an event of this name exists.
/// - `InvalidParam`: `name` is empty or longer than 30 bytes.
/// - `InvalidMode`: the partition is in NORMAL mode.
pub fn create_event(name: &str) -> ApexResult<EventId> {
    waitq::with_objects(|objs, _, _, _| {
        if objs.events.len() >= MAX_NUMBER_OF_EVENTS {
            return Err(ApexError::InvalidConfig);
        }
        if objs.events.iter().any(|e| e.name == name) {
            return Err(ApexError::NoAction);
        }
        check_name(name)?;
        let queue = WaitQueue::try_new(QueuingDiscipline::Fifo)?;
        let name = waitq::try_name(name)?;
        waitq::try_room(&mut objs.events)?;
        waitq::creation_mode()?;
        objs.events.push(Event {
            name,
            up: false,
            queue,
        });
        Ok(EventId(objs.events.len() as i32))
    })
}

/// Set an event UP (`SET_EVENT`) and release every process waiting on it (a released process of
/// higher priority preempts the caller).
///
/// # Errors
/// `InvalidParam`: no such event.
pub fn set_event(id: EventId) -> ApexResult<()> {
    waitq::with_objects(|objs, inner, now, wake| {
        let e = waitq::by_id(&mut objs.events, id.0)?;
        e.up = true;
        e.queue.grant_all(inner, now, wake, |_| {});
        Ok(())
    })
}

/// Set an event DOWN (`RESET_EVENT`).
///
/// # Errors
/// `InvalidParam`: no such event.
pub fn reset_event(id: EventId) -> ApexResult<()> {
    waitq::with_objects(|objs, _, _, _| {
        waitq::by_id(&mut objs.events, id.0)?.up = false;
        Ok(())
    })
}

/// Wait until an event is UP (`WAIT_EVENT`), up to `timeout` ns (0: do not wait;
/// `INFINITE_TIME_VALUE`: no limit).
///
/// # Errors
/// - `InvalidParam`: no such event; `timeout` negative and not infinite.
/// - `NotAvailable`: the event is DOWN and `timeout` is 0.
/// - `InvalidMode`: the event is DOWN, `timeout` ≠ 0, and the caller holds the preemption lock,
///   is the error handler or is not a process.
/// - `TimedOut`: the event was not set within `timeout`.
pub fn wait_event(id: EventId, timeout: SystemTime) -> ApexResult<()> {
    check_timeout(timeout)?;
    let step = waitq::with_objects(|objs, inner, now, _| {
        let i = index(id, objs.events.len())?;
        if objs.events[i].up {
            return Ok(Step::Done(()));
        }
        if timeout == 0 {
            return Err(ApexError::NotAvailable);
        }
        let me = may_wait(inner, timeout, now)?;
        Ok(Step::Wait(
            objs.enqueue(inner, me, (), |o| &mut o.events[i].queue),
        ))
    })?;
    match step {
        Step::Done(()) => Ok(()),
        Step::Wait(t) => {
            let i = id.0 as usize - 1;
            block(t, |o| &mut o.events[i].queue)
        }
    }
}

/// Return the id of the event `name` (`GET_EVENT_ID`).
///
/// # Errors
/// `InvalidConfig`: no event has this name.
pub fn get_event_id(name: &str) -> ApexResult<EventId> {
    waitq::with_objects(|objs, _, _, _| {
        objs.events
            .iter()
            .position(|e| e.name == name)
            .map(|i| EventId(i as i32 + 1))
            .ok_or(ApexError::InvalidConfig)
    })
}

/// Return the status of an event (`GET_EVENT_STATUS`).
///
/// # Errors
/// `InvalidParam`: no such event.
pub fn get_event_status(id: EventId) -> ApexResult<EventStatus> {
    waitq::with_objects(|objs, _, now, _| {
        let e = waitq::by_id(&mut objs.events, id.0)?;
        Ok(EventStatus {
            event_state: if e.up {
                EventState::Up
            } else {
                EventState::Down
            },
            waiting_processes: e.queue.waiting(now),
        })
    })
}

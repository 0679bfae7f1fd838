//! Semaphores (ARINC 653 Part 1): CREATE_SEMAPHORE, WAIT_SEMAPHORE, SIGNAL_SEMAPHORE,
//! GET_SEMAPHORE_ID, GET_SEMAPHORE_STATUS.
//!
//! A counting semaphore of the partition. WAIT takes a unit or queues the caller (FIFO or
//! PRIORITY, the semaphore's discipline); SIGNAL hands its unit to the first waiter, else adds it
//! to the count. How waiting works: `docs/intra.md`.

use super::error::{ApexError, ApexResult};
use super::ports::QueuingDiscipline;
use super::time::SystemTime;
use super::waitq::{self, block, check_name, check_timeout, may_wait, Step, WaitQueue};

/// `SEMAPHORE_ID_TYPE` (1, 2, ... in creation order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SemaphoreId(pub i32);

/// `SEMAPHORE_VALUE_TYPE`.
pub type SemaphoreValue = i32;

/// `MAX_SEMAPHORE_VALUE`: the largest count and maximum value.
pub const MAX_SEMAPHORE_VALUE: SemaphoreValue = 32767;

/// `MAX_NUMBER_OF_SEMAPHORES` of this implementation (per partition).
pub const MAX_NUMBER_OF_SEMAPHORES: usize = 256;

/// `SEMAPHORE_STATUS_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SemaphoreStatus {
    /// `CURRENT_VALUE`.
    pub current_value: SemaphoreValue,
    /// `MAXIMUM_VALUE`.
    pub maximum_value: SemaphoreValue,
    /// `WAITING_PROCESSES`.
    pub waiting_processes: u32,
}

pub(crate) struct Semaphore {
    name: String,
    value: SemaphoreValue,
    max: SemaphoreValue,
    queue: WaitQueue<()>,
}

fn index(id: SemaphoreId, n: usize) -> ApexResult<usize> {
    usize::try_from(id.0)
        .ok()
        .and_then(|i| i.checked_sub(1))
        .filter(|&i| i < n)
        .ok_or(ApexError::InvalidParam)
}

/// Create a semaphore (`CREATE_SEMAPHORE`) in COLD_START or WARM_START mode.
///
/// # Errors
/// - `InvalidConfig`: [`MAX_NUMBER_OF_SEMAPHORES`] semaphores exist already; no memory is left for
///   it (checked after the parameters, before the mode).
/// - `NoAction`: a semaphore of this name exists.
/// - `InvalidParam`: `name` is empty or longer than 30 bytes; `current_value` or `maximum_value`
///   outside 0..=[`MAX_SEMAPHORE_VALUE`]; `current_value` > `maximum_value`.
/// - `InvalidMode`: the partition is in NORMAL mode.
pub fn create_semaphore(
    name: &str,
    current_value: SemaphoreValue,
    maximum_value: SemaphoreValue,
    discipline: QueuingDiscipline,
) -> ApexResult<SemaphoreId> {
    create_semaphore_with(name, current_value, maximum_value, Some(discipline))
}

/// [`create_semaphore`] with a discipline that may be out of range (`None`: a C
/// `QUEUING_DISCIPLINE_TYPE` that is neither FIFO nor PRIORITY), refused with `InvalidParam` in
/// the standard's order: after the table, name and value checks, before the mode check (partix
/// extension, for the C API's CREATE_SEMAPHORE).
///
/// # Errors
/// Those of [`create_semaphore`]; `InvalidParam` also for a `None` discipline.
pub fn create_semaphore_with(
    name: &str,
    current_value: SemaphoreValue,
    maximum_value: SemaphoreValue,
    discipline: Option<QueuingDiscipline>,
) -> ApexResult<SemaphoreId> {
    waitq::with_objects(|objs, _, _, _| {
        if objs.semaphores.len() >= MAX_NUMBER_OF_SEMAPHORES {
            return Err(ApexError::InvalidConfig);
        }
        if objs.semaphores.iter().any(|s| s.name == name) {
            return Err(ApexError::NoAction);
        }
        check_name(name)?;
        let range = 0..=MAX_SEMAPHORE_VALUE;
        if !range.contains(&current_value)
            || !range.contains(&maximum_value)
            || current_value > maximum_value
        {
            return Err(ApexError::InvalidParam);
        }
        let discipline = discipline.ok_or(ApexError::InvalidParam)?;
        let queue = WaitQueue::try_new(discipline)?;
        let name = waitq::try_name(name)?;
        waitq::try_room(&mut objs.semaphores)?;
        waitq::creation_mode()?;
        objs.semaphores.push(Semaphore {
            name,
            value: current_value,
            max: maximum_value,
            queue,
        });
        Ok(SemaphoreId(objs.semaphores.len() as i32))
    })
}

/// Take a unit of a semaphore (`WAIT_SEMAPHORE`), waiting up to `timeout` ns while the count is 0
/// (0: do not wait; `INFINITE_TIME_VALUE`: no limit).
///
/// # Errors
/// - `InvalidParam`: no such semaphore; `timeout` negative and not infinite.
/// - `NotAvailable`: the count is 0 and `timeout` is 0.
/// - `InvalidMode`: the count is 0, `timeout` ≠ 0, and the caller holds the preemption lock, is
///   the error handler or is not a process.
/// - `TimedOut`: no unit came within `timeout`.
pub fn wait_semaphore(id: SemaphoreId, timeout: SystemTime) -> ApexResult<()> {
    check_timeout(timeout)?;
    let step = waitq::with_objects(|objs, inner, now, _| {
        let i = index(id, objs.semaphores.len())?;
        let s = &mut objs.semaphores[i];
        if s.value > 0 {
            s.value -= 1;
            return Ok(Step::Done(()));
        }
        if timeout == 0 {
            return Err(ApexError::NotAvailable);
        }
        let me = may_wait(inner, timeout, now)?;
        Ok(Step::Wait(
            objs.enqueue(inner, me, (), |o| &mut o.semaphores[i].queue),
        ))
    })?;
    match step {
        Step::Done(()) => Ok(()),
        Step::Wait(t) => {
            let i = id.0 as usize - 1;
            block(t, |o| &mut o.semaphores[i].queue)
        }
    }
}

/// Release a unit of a semaphore (`SIGNAL_SEMAPHORE`): the first waiting process (in the
/// semaphore's discipline) gets it and becomes ready (it preempts the caller if its priority is
/// higher); without waiters the count grows.
///
/// The count is checked first, as ARINC 653 Part 1 does: a semaphore whose count is at its
/// maximum answers `NO_ACTION` even when processes wait. Waiters imply a count of 0, so this
/// matters only for a semaphore of `MAXIMUM_VALUE` 0, whose waiters are never released (they
/// wait until their time-out).
///
/// # Errors
/// - `InvalidParam`: no such semaphore.
/// - `NoAction`: the count is at its maximum (for a maximum of 0: even if processes wait).
pub fn signal_semaphore(id: SemaphoreId) -> ApexResult<()> {
    waitq::with_objects(|objs, inner, now, wake| {
        let i = index(id, objs.semaphores.len())?;
        let s = &mut objs.semaphores[i];
        if s.value >= s.max {
            return Err(ApexError::NoAction);
        }
        if s.queue.grant_next(inner, now, wake, |_| {}) {
            return Ok(());
        }
        s.value += 1;
        Ok(())
    })
}

/// Return the id of the semaphore `name` (`GET_SEMAPHORE_ID`).
///
/// # Errors
/// `InvalidConfig`: no semaphore has this name.
pub fn get_semaphore_id(name: &str) -> ApexResult<SemaphoreId> {
    waitq::with_objects(|objs, _, _, _| {
        objs.semaphores
            .iter()
            .position(|s| s.name == name)
            .map(|i| SemaphoreId(i as i32 + 1))
            .ok_or(ApexError::InvalidConfig)
    })
}

/// Return the status of a semaphore (`GET_SEMAPHORE_STATUS`).
///
/// # Errors
/// `InvalidParam`: no such semaphore.
pub fn get_semaphore_status(id: SemaphoreId) -> ApexResult<SemaphoreStatus> {
    waitq::with_objects(|objs, _, now, _| {
        let s = waitq::by_id(&mut objs.semaphores, id.0)?;
        Ok(SemaphoreStatus {
            current_value: s.value,
            maximum_value: s.max,
            waiting_processes: s.queue.waiting(now),
        })
    })
}

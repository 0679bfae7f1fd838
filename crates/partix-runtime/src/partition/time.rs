//! Time services: GET_TIME, TIMED_WAIT, PERIODIC_WAIT, REPLENISH.
//!
//! Times are module time: nanoseconds since the module's epoch (`ModuleState::epoch_ns`), read
//! from `CLOCK_MONOTONIC` without a system call (vDSO). Waits are absolute `clock_nanosleep`s.

use super::error::{ApexError, ApexResult};
use super::rt::{self, rt, EH_INDEX, W_PERIOD, W_TIMED};
use crate::state::mode;
use std::sync::atomic::Ordering;

/// `SYSTEM_TIME_TYPE`: signed 64-bit nanoseconds.
pub type SystemTime = i64;
/// `INFINITE_TIME_VALUE`.
pub const INFINITE_TIME_VALUE: SystemTime = -1;

/// Return the module time in nanoseconds (`GET_TIME`; never fails).
pub fn get_time() -> SystemTime {
    rt().now() as SystemTime
}

/// Check that the caller is a process that may block (not the error handler, no preemption lock).
fn blocking_caller() -> ApexResult<usize> {
    let r = rt();
    match rt::self_index() {
        None | Some(EH_INDEX) => Err(ApexError::InvalidMode),
        Some(idx) => {
            if r.ctx.partition().lock_level.load(Ordering::Acquire) > 0 {
                let owner = r.with_inner(|i| i.lock_owner);
                if owner == Some(idx) {
                    return Err(ApexError::InvalidMode);
                }
            }
            Ok(idx)
        }
    }
}

/// Suspend the calling process for `delay` nanoseconds (`TIMED_WAIT`); 0 yields the CPU to the
/// other ready processes of the same priority.
///
/// # Errors
/// - `InvalidMode`: the caller is not a process (initialisation code), is the error handler, or
///   holds the preemption lock.
/// - `InvalidParam`: `delay` is negative (including `INFINITE_TIME_VALUE`).
pub fn timed_wait(delay: SystemTime) -> ApexResult<()> {
    let idx = blocking_caller()?;
    if delay < 0 {
        return Err(ApexError::InvalidParam);
    }
    let r = rt();
    if delay == 0 {
        // SAFETY: sched_yield has no preconditions.
        unsafe { libc::sched_yield() };
        return Ok(());
    }
    let until = r.now().saturating_add(delay as u64);
    r.with_inner(|inner| {
        let p = &mut inner.procs[idx];
        p.wait_for(W_TIMED, Some(until));
        r.publish(idx, p);
    });
    rt::sleep_until(r.ctx, until);
    r.with_inner(|inner| {
        let p = &mut inner.procs[idx];
        p.reasons &= !W_TIMED;
        r.publish(idx, p);
    });
    Ok(())
}

/// End the current job of the calling periodic process and wait for its next release point
/// (`PERIODIC_WAIT`). The next release is the previous one plus the period; the deadline becomes
/// that release plus the time capacity.
///
/// Records the job's completion and response time in the shared process slot.
///
/// # Errors
/// - `InvalidMode`: the caller is not a process, is the error handler, holds the preemption lock,
///   or is not periodic.
pub fn periodic_wait() -> ApexResult<()> {
    let idx = blocking_caller()?;
    let r = rt();
    // Claim the job's deadline before reading the clock: a monitor that wakes at it meanwhile
    // (it preempts this process) skips it, and this call reports it below if the job was late.
    // Read after the claim, `now` is on time only if the monitor had not found the deadline
    // passed. (The monitor used to report a miss for a job that had read its completion time
    // before the deadline and was preempted before it published the next one.)
    let periodic = r.attrs[idx]
        .get()
        .is_some_and(|a| a.period != INFINITE_TIME_VALUE);
    let d = r.slot(idx).deadline_ns.load(Ordering::SeqCst);
    let claimed = periodic && d != u64::MAX && super::hm::claim_deadline(idx, d);
    let now = r.now();
    let next = r.with_inner(|inner| {
        let p = &mut inner.procs[idx];
        if p.attrs.period == INFINITE_TIME_VALUE {
            return Err(ApexError::InvalidMode);
        }
        let release = p.release_ns.unwrap_or(now);
        let old_deadline = p.deadline_ns;
        let next = release.saturating_add(p.attrs.period as u64);
        p.release_ns = Some(next);
        p.deadline_ns = if p.attrs.time_capacity == INFINITE_TIME_VALUE {
            u64::MAX
        } else {
            next.saturating_add(p.attrs.time_capacity as u64)
        };
        p.wait_for(W_PERIOD, Some(next));
        r.publish(idx, p);
        Ok((release, next, old_deadline))
    });
    let (release, next, old_deadline) = next?;
    // A monitor that skipped the claimed deadline while the new one was not published yet
    // sleeps past it: wake it (only then: it normally sleeps until the old deadline, earlier).
    r.kick_monitor(r.slot(idx).deadline_ns.load(Ordering::SeqCst));
    if now > old_deadline {
        if claimed && old_deadline == d {
            super::hm::raise_deadline_miss(idx);
        } else {
            super::hm::report_deadline_miss(idx, old_deadline);
        }
    }
    let s = r.slot(idx);
    let response = now.saturating_sub(release);
    s.last_completion_ns.store(now, Ordering::Relaxed);
    s.last_response_ns.store(response, Ordering::Relaxed);
    s.total_response_ns.fetch_add(response, Ordering::Relaxed);
    s.worst_response_ns.fetch_max(response, Ordering::Relaxed);
    s.jobs.fetch_add(1, Ordering::Release);
    rt::sleep_until(r.ctx, next);
    r.with_inner(|inner| {
        let p = &mut inner.procs[idx];
        p.reasons &= !W_PERIOD;
        r.publish(idx, p);
    });
    r.job_started(idx, next);
    Ok(())
}

/// Move the calling process's deadline to now + `budget` (`REPLENISH`).
/// `INFINITE_TIME_VALUE` removes the deadline (aperiodic processes only). A process whose
/// TIME_CAPACITY is infinite keeps its infinite deadline.
///
/// # Errors
/// - `NoAction`: the caller is not a process, is the error handler, or the partition is not in
///   NORMAL mode.
/// - `InvalidParam`: `budget` is negative and not `INFINITE_TIME_VALUE`.
/// - `InvalidMode`: the caller is periodic and the new deadline would pass its next release
///   point (or is infinite).
pub fn replenish(budget: SystemTime) -> ApexResult<()> {
    let r = rt();
    let idx = match rt::self_index() {
        Some(i) if i != EH_INDEX => i,
        _ => return Err(ApexError::NoAction),
    };
    if r.mode() != mode::NORMAL {
        return Err(ApexError::NoAction);
    }
    if budget < 0 && budget != INFINITE_TIME_VALUE {
        return Err(ApexError::InvalidParam);
    }
    r.with_inner(|inner| {
        // Under the lock: a reading taken before it shortened the new deadline by however long
        // the caller waited for the lock or was kept off the CPU (review of session 26).
        let now = r.now();
        let p = &mut inner.procs[idx];
        let new_deadline = if budget == INFINITE_TIME_VALUE {
            u64::MAX
        } else {
            // A deadline past SYSTEM_TIME's range is a budget out of range (it would read
            // negative in GET_PROCESS_STATUS; found by review).
            match now.checked_add(budget as u64) {
                Some(d) if d <= i64::MAX as u64 => d,
                _ => return Err(ApexError::InvalidParam),
            }
        };
        if p.attrs.period != INFINITE_TIME_VALUE {
            let next_release = p
                .release_ns
                .unwrap_or(now)
                .saturating_add(p.attrs.period as u64);
            if new_deadline > next_release {
                return Err(ApexError::InvalidMode);
            }
        }
        // ARINC 653: a process whose TIME_CAPACITY is infinite keeps an infinite deadline (it
        // was given now + budget, and then a DEADLINE_MISSED; found by review).
        p.deadline_ns = if p.attrs.time_capacity == INFINITE_TIME_VALUE {
            u64::MAX
        } else {
            new_deadline
        };
        r.publish(idx, p);
        Ok(())
    })?;
    r.kick_monitor(r.slot(idx).deadline_ns.load(Ordering::SeqCst));
    Ok(())
}

/// Return the CPU time the calling thread has used, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`;
/// a partix extension, not an APEX service). Time the partition spends stopped outside its
/// windows, or preempted, does not count: use it to burn a CPU budget in demos and benchmarks.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; the thread CPU clock always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

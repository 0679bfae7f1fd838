//! Process services: CREATE_PROCESS, START, DELAYED_START, STOP, STOP_SELF, SUSPEND,
//! SUSPEND_SELF, RESUME, SET_PRIORITY, GET_PROCESS_ID, GET_MY_ID, GET_PROCESS_STATUS,
//! LOCK_PREEMPTION, UNLOCK_PREEMPTION.
//!
//! A process is a thread of the partition process. Its SCHED_FIFO priority is its APEX priority
//! plus one (2..97); a process holding the preemption lock and the error handler run at 97, the
//! partition's deadline monitor at 98 (the executive at 99). The executive pins the partition
//! process to one CPU, so SCHED_FIFO gives the standard's uniprocessor priority preemption.
//!
//! Process states: DORMANT (created or stopped) → START → READY/RUNNING → (TIMED_WAIT,
//! PERIODIC_WAIT, SUSPEND, delayed release) WAITING → READY … → STOP / STOP_SELF / return from
//! the entry point → DORMANT. Processes started before NORMAL mode wait for it.

use super::error::{ApexError, ApexResult};
use super::rt::{
    self, rt, Proc, EH_INDEX, FIFO_LOCK, SUSP, SUSP_SELF, SUSP_SEQ, W_RELEASE, W_SUSPEND,
};
use super::time::{SystemTime, INFINITE_TIME_VALUE};
use crate::state::{mode, process_state, MAX_PROCESSES, NAME_LEN};
use partix_shm::futex;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// `PROCESS_ID_TYPE`: identifies a process of the partition (1..=64; 0 is never valid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProcessId(pub i32);

impl ProcessId {
    /// Return the table index of this id, if it is in range.
    fn index(self) -> Option<usize> {
        let i = usize::try_from(self.0).ok()?.checked_sub(1)?;
        (i < MAX_PROCESSES).then_some(i)
    }
}

/// `PRIORITY_TYPE`.
pub type Priority = i32;
/// `MIN_PRIORITY_VALUE`.
pub const MIN_PRIORITY_VALUE: Priority = 1;
/// `MAX_PRIORITY_VALUE`. Priority p runs at SCHED_FIFO p + 1, so the highest (94, at 95) stays below
/// the two-sided and socket manager threads (96), the error handler and the preemption lock
/// (97) and the deadline monitor (98). With 96, the highest priority ran at 97: the error
/// handler did not preempt it, and it could starve a manager that feeds its ports (found by
/// review).
pub const MAX_PRIORITY_VALUE: Priority = 94;
const _: () = assert!(MAX_PRIORITY_VALUE + 1 < crate::transport::MANAGER_FIFO_PRIORITY);
const _: () = assert!(crate::transport::MANAGER_FIFO_PRIORITY < super::rt::FIFO_ERROR_HANDLER);
/// `MAX_LOCK_LEVEL`: deepest preemption lock nesting.
pub const MAX_LOCK_LEVEL: LockLevel = 16;
/// `MAX_NAME_LENGTH`: longest process name in bytes.
pub const MAX_NAME_LENGTH: usize = 30;
/// Largest stack a process may ask for (bytes).
pub const MAX_STACK_SIZE: u32 = 64 * 1024 * 1024;
/// Stack of a process that asks for 0 (bytes).
pub const DEFAULT_STACK_SIZE: u32 = 1024 * 1024;

/// `SYSTEM_ADDRESS_TYPE` of an entry point: the function a process (or the error handler) runs.
pub type EntryPoint = extern "C" fn();

/// `DEADLINE_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    /// `SOFT` (0).
    Soft,
    /// `HARD` (1).
    Hard,
}

/// `PROCESS_STATE_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessState {
    /// `DORMANT` (0).
    Dormant,
    /// `READY` (1).
    Ready,
    /// `RUNNING` (2).
    Running,
    /// `WAITING` (3).
    Waiting,
    /// `FAULTED` (4).
    Faulted,
}

/// `PROCESS_ATTRIBUTE_TYPE`.
#[derive(Debug, Clone)]
pub struct ProcessAttributes {
    /// Name, at most [`MAX_NAME_LENGTH`] bytes, unique in the partition.
    pub name: String,
    /// Entry point.
    pub entry_point: EntryPoint,
    /// Stack size in bytes; 0 = [`DEFAULT_STACK_SIZE`].
    pub stack_size: u32,
    /// Base priority ([`MIN_PRIORITY_VALUE`]..=[`MAX_PRIORITY_VALUE`]).
    pub base_priority: Priority,
    /// Period in ns; [`INFINITE_TIME_VALUE`] = aperiodic.
    pub period: SystemTime,
    /// Time capacity in ns; [`INFINITE_TIME_VALUE`] = none.
    pub time_capacity: SystemTime,
    /// Deadline kind.
    pub deadline: Deadline,
}

/// `PROCESS_STATUS_TYPE`.
#[derive(Debug, Clone)]
pub struct ProcessStatus {
    /// Absolute deadline (module ns); [`INFINITE_TIME_VALUE`] when none.
    pub deadline_time: SystemTime,
    /// Current priority.
    pub current_priority: Priority,
    /// State.
    pub process_state: ProcessState,
    /// Attributes given at creation.
    pub attributes: ProcessAttributes,
}

/// `LOCK_LEVEL_TYPE`.
pub type LockLevel = i32;

fn check_time(t: SystemTime) -> bool {
    t > 0 || t == INFINITE_TIME_VALUE
}

/// Create a process in the DORMANT state (`CREATE_PROCESS`). Its thread is created now and parks
/// until START.
///
/// # Errors
/// In the standard's order:
/// - `InvalidConfig`: [`crate::state::MAX_PROCESSES`] processes exist already;
/// - `NoAction`: a process with this name already exists;
/// - `InvalidParam`: empty name or longer than [`MAX_NAME_LENGTH`]; stack larger than
///   [`MAX_STACK_SIZE`]; priority out of range; period neither positive nor infinite;
/// - `InvalidConfig`: the period is not a multiple of the partition's period;
/// - `InvalidParam`: time capacity neither positive nor infinite; a periodic process with a time
///   capacity that is infinite or larger than its period;
/// - `InvalidMode`: the partition is in NORMAL mode;
/// - `InvalidConfig`: the thread cannot be created.
pub fn create_process(attr: &ProcessAttributes) -> ApexResult<ProcessId> {
    create_process_with(attr, false)
}

/// [`create_process`] with attributes a C caller got wrong (`c_invalid`: a null entry point, an
/// out-of-range `DEADLINE`, a name that is not UTF-8), refused with `InvalidParam` in the
/// standard's order: after the table and name checks (partix extension, for the C API's
/// CREATE_PROCESS, which passes placeholders for those attributes).
///
/// # Errors
/// Those of [`create_process`]; `InvalidParam` also for `c_invalid`.
pub fn create_process_with(attr: &ProcessAttributes, c_invalid: bool) -> ApexResult<ProcessId> {
    let r = rt();
    let name = attr.name.as_bytes();
    let part_period = r.ctx.partition().period_ns.load(Ordering::Acquire);
    let mut a = attr.clone();
    if a.stack_size == 0 {
        a.stack_size = DEFAULT_STACK_SIZE;
    }
    r.with_inner(|inner| {
        if inner.procs.len() >= MAX_PROCESSES {
            return Err(ApexError::InvalidConfig);
        }
        if !name.is_empty() && inner.procs.iter().any(|p| p.attrs.name == a.name) {
            return Err(ApexError::NoAction);
        }
        if c_invalid
            || name.is_empty()
            || name.len() > MAX_NAME_LENGTH
            || name.contains(&0)
            || attr.stack_size > MAX_STACK_SIZE
            || !(MIN_PRIORITY_VALUE..=MAX_PRIORITY_VALUE).contains(&attr.base_priority)
            || !check_time(attr.period)
        {
            return Err(ApexError::InvalidParam);
        }
        if attr.period != INFINITE_TIME_VALUE
            && part_period > 0
            && !(attr.period as u64).is_multiple_of(part_period)
        {
            return Err(ApexError::InvalidConfig);
        }
        if !check_time(attr.time_capacity)
            || (attr.period != INFINITE_TIME_VALUE
                && (attr.time_capacity == INFINITE_TIME_VALUE || attr.time_capacity > attr.period))
        {
            return Err(ApexError::InvalidParam);
        }
        if r.mode() == mode::NORMAL {
            return Err(ApexError::InvalidMode);
        }
        let idx = inner.procs.len();
        let prio = a.base_priority + 1;
        r.spawn_incarnation(idx, a.stack_size as usize, prio)?;
        let s = r.slot(idx);
        let mut nb = [0u8; NAME_LEN];
        nb[..name.len()].copy_from_slice(name);
        rt::write_slot_name(s, &nb);
        s.state.store(process_state::DORMANT, Ordering::Relaxed);
        s.base_priority
            .store(a.base_priority as u32, Ordering::Relaxed);
        s.current_priority
            .store(a.base_priority as u32, Ordering::Relaxed);
        s.period_ns.store(
            if a.period == INFINITE_TIME_VALUE {
                0
            } else {
                a.period as u64
            },
            Ordering::Relaxed,
        );
        s.time_capacity_ns.store(
            if a.time_capacity == INFINITE_TIME_VALUE {
                u64::MAX
            } else {
                a.time_capacity as u64
            },
            Ordering::Relaxed,
        );
        s.deadline_ns.store(u64::MAX, Ordering::Relaxed);
        let _ = r.attrs[idx].set(a.clone());
        inner.procs.push(Proc {
            current_priority: a.base_priority,
            applied_fifo: prio,
            attrs: a,
            dormant: true,
            reasons: 0,
            timed: 0,
            wait_ends: 0,
            self_suspend_timed_out: false,
            release_ns: None,
            start_delay: 0,
            deadline_ns: u64::MAX,
        });
        r.ctx
            .partition()
            .n_processes
            .store(idx as u32 + 1, Ordering::Release);
        Ok(ProcessId(idx as i32 + 1))
    })
}

/// Return the index of an existing process.
fn existing(pid: ProcessId) -> ApexResult<usize> {
    let r = rt();
    let idx = pid.index().ok_or(ApexError::InvalidParam)?;
    if r.attrs[idx].get().is_none() {
        return Err(ApexError::InvalidParam);
    }
    Ok(idx)
}

/// Start a DORMANT process (`START`): equivalent to [`delayed_start`] with delay 0.
///
/// # Errors
/// As [`delayed_start`].
pub fn start(pid: ProcessId) -> ApexResult<()> {
    delayed_start(pid, 0)
}

/// Start a DORMANT process after `delay` ns (`DELAYED_START`).
///
/// An aperiodic process becomes READY at now + delay, a periodic one WAITING until its first
/// release point: the next partition period start (the next multiple of the partition's period
/// after the NORMAL-mode anchor; of its own period standalone) plus `delay`. The deadline is that
/// release plus the time capacity. During initialisation (COLD_START/WARM_START) the release is
/// counted from the first window in NORMAL mode. The current priority is reset to the base one.
///
/// # Errors
/// - `InvalidParam`: `pid` names no process; `delay` is negative or infinite; a periodic process
///   with `delay` not less than its period.
/// - `NoAction`: the process is not DORMANT.
/// - `InvalidConfig`: the deadline (release + time capacity) is beyond the range of
///   `SYSTEM_TIME_TYPE`.
pub fn delayed_start(pid: ProcessId, delay: SystemTime) -> ApexResult<()> {
    let r = rt();
    let idx = existing(pid)?;
    // Wake the process before releasing the lock (a higher-priority one preempts us there, then
    // waits for the lock, which we hand over at once: `Runtime::with_inner_then`), and before a
    // STOP or SUSPEND of the caller takes effect. The clock is read under the lock: a
    // reading taken before it (the caller preempted, waiting for the lock, or its window closed
    // in between) released a periodic process at a period start already past, one period early,
    // and shortened an aperiodic one's deadline by the delay (review of session 26).
    r.with_inner_then(
        |inner| start_locked(inner, idx, delay, r.now()),
        |started| {
            if started.is_ok() {
                futex::wake_all(&r.ctl[idx].gen);
                r.kick_monitor(r.slot(idx).deadline_ns.load(Ordering::SeqCst));
            }
        },
    )
}

/// The body of DELAYED_START for process `idx`, with the runtime lock held. The caller wakes the
/// process (`futex::wake_all(&ctl[idx].gen)`) before releasing the lock.
pub(crate) fn start_locked(
    inner: &mut rt::Inner,
    idx: usize,
    delay: SystemTime,
    now: u64,
) -> ApexResult<()> {
    let r = rt();
    let p = &mut inner.procs[idx];
    let periodic = p.attrs.period != INFINITE_TIME_VALUE;
    // The standard's order: not DORMANT, then the delay (out of range or infinite, then not
    // less than the period).
    if !p.dormant {
        return Err(ApexError::NoAction);
    }
    if delay < 0 || (periodic && delay >= p.attrs.period) {
        return Err(ApexError::InvalidParam);
    }
    if r.ctl[idx].thread.load(Ordering::Relaxed) == 0 {
        // The thread of its last STOP could not be made (no memory, thread limit): make it
        // now, or refuse, rather than mark READY a process that nothing runs (found by review).
        p.applied_fifo = if idx == EH_INDEX {
            rt::FIFO_ERROR_HANDLER
        } else {
            p.attrs.base_priority + 1
        };
        let (stack, prio) = (p.attrs.stack_size as usize, p.applied_fifo);
        r.spawn_incarnation(idx, stack, prio)?;
    }
    let p = &mut inner.procs[idx];
    let cap = p.attrs.time_capacity;
    let release = if r.gate.load(Ordering::Acquire) == 0 {
        // Counted from the NORMAL anchor; checked for range against "now" meanwhile.
        None
    } else if periodic {
        let anchor = r.anchor_ns.load(Ordering::Acquire);
        let pp = r.ctx.partition().period_ns.load(Ordering::Acquire);
        let grid = if pp > 0 { pp } else { p.attrs.period as u64 };
        let k = now.saturating_sub(anchor).div_ceil(grid);
        // Checked: a period and a delay near the range of SYSTEM_TIME wrapped to a release
        // in the past (found by review).
        Some(
            k.checked_mul(grid)
                .and_then(|o| o.checked_add(anchor))
                .and_then(|t| t.checked_add(delay as u64))
                .ok_or(ApexError::InvalidConfig)?,
        )
    } else {
        Some(now.saturating_add(delay as u64))
    };
    let base = release.unwrap_or(now.saturating_add(delay as u64));
    let deadline = if cap == INFINITE_TIME_VALUE {
        u64::MAX
    } else {
        let d = i64::try_from(base)
            .ok()
            .and_then(|b| b.checked_add(cap))
            .ok_or(ApexError::InvalidConfig)?;
        d as u64
    };
    p.dormant = false;
    p.current_priority = p.attrs.base_priority;
    p.start_delay = delay as u64;
    p.release_ns = release;
    p.deadline_ns = if release.is_some() {
        deadline
    } else {
        u64::MAX
    };
    p.reasons = 0;
    if release.is_none() || delay > 0 || periodic {
        // Its release ends the wait (once NORMAL mode sets it, for a start in initialisation).
        p.wait_for(W_RELEASE, release);
    }
    r.publish(idx, p);
    r.apply_priority(inner, idx);
    r.ctl[idx]
        .reported_deadline
        .store(u64::MAX, Ordering::Release);
    r.ctl[idx].gen.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

/// Stop another process (`STOP`): it becomes DORMANT at once, wherever it is; a later START runs
/// its entry point from the beginning. A held preemption lock is released.
///
/// The stopped thread is abandoned (it ends at once, with signals blocked) and a fresh thread takes
/// its place; locks it held (stdout, allocator) stay held, as with any asynchronous stop.
///
/// # Errors
/// - `InvalidParam`: `pid` names no process, or the calling process (use [`stop_self`]).
/// - `NoAction`: the process is DORMANT already.
/// - `InvalidConfig`: the replacement thread cannot be created.
pub fn stop(pid: ProcessId) -> ApexResult<()> {
    let r = rt();
    let idx = existing(pid)?;
    if rt::self_index() == Some(idx) {
        return Err(ApexError::InvalidParam);
    }
    r.with_inner(|inner| {
        if inner.procs[idx].dormant {
            return Err(ApexError::NoAction);
        }
        r.make_dormant(inner, idx);
        // The process is stopped either way: a next thread that cannot be made now is made by
        // the next START, which reports the failure (`start_locked`). STOP has no error for it.
        let _ = r.replace_incarnation(inner, idx);
        Ok(())
    })
}

/// Stop the calling process (`STOP_SELF`); it becomes DORMANT and this call never returns.
/// Called by the error handler, it ends the handler's current activation. Called from
/// initialisation code (not a process), it does nothing but block the caller forever.
pub fn stop_self() -> ! {
    let r = rt();
    match rt::self_index() {
        Some(idx) => {
            r.with_inner(|inner| {
                r.make_dormant(inner, idx);
                // The old thread is this one: replace_incarnation does not signal it.
                let replaced = r.replace_incarnation(inner, idx).is_ok();
                if replaced && idx == EH_INDEX && !inner.errors.is_empty() {
                    // More errors pending: the next incarnation runs at once (woken inside the
                    // lock: leaving it ends this incarnation).
                    if let Some(p) = inner.eh.as_mut() {
                        p.dormant = false;
                    }
                    r.ctl[idx].gen.fetch_add(1, Ordering::AcqRel);
                    futex::wake_all(&r.ctl[idx].gen);
                }
            });
            rt::end_incarnation()
        }
        None => rt::park_forever(),
    }
}

/// Suspend another aperiodic process (`SUSPEND`) until RESUME; it stops running at once, or keeps
/// waiting suspended if it was waiting.
///
/// # Errors
/// - `InvalidParam`: `pid` names no process, or the calling process.
/// - `InvalidMode`: the process is DORMANT or periodic, or holds the preemption lock.
/// - `NoAction`: the process is already suspended.
pub fn suspend(pid: ProcessId) -> ApexResult<()> {
    let r = rt();
    let idx = existing(pid)?;
    if rt::self_index() == Some(idx) {
        return Err(ApexError::InvalidParam);
    }
    // The signal goes out before a STOP or SUSPEND of the caller takes effect: sent after
    // `with_inner` returned, it was lost when the caller was suspended or stopped meanwhile
    // (`with_inner` honours such a request on its way out), and the target, marked suspended,
    // ran on (found by review).
    r.with_inner_then(
        |inner| {
            if inner.lock_owner == Some(idx) {
                return Err(ApexError::InvalidMode);
            }
            let p = &mut inner.procs[idx];
            if p.dormant || p.attrs.period != INFINITE_TIME_VALUE {
                return Err(ApexError::InvalidMode);
            }
            if p.reasons & W_SUSPEND != 0 {
                if !p.timed_out(W_SUSPEND, r.now()) {
                    return Err(ApexError::NoAction);
                }
                // Its SUSPEND_SELF timed out (it is READY) but its thread has not run since to
                // return TIMED_OUT: suspended by this call where it is, it returns TIMED_OUT once
                // resumed.
                p.self_suspend_timed_out = true;
            }
            p.wait_for(W_SUSPEND, None);
            r.publish(idx, p);
            let c = &r.ctl[idx];
            let s = c.suspend.load(Ordering::Acquire);
            c.suspend
                .store(((s & !SUSP_SELF) + SUSP_SEQ) | SUSP, Ordering::Release);
            Ok(c.tid.load(Ordering::Acquire))
        },
        |tid| {
            if let Ok(tid) = *tid {
                // SAFETY: tgkill to a thread of this process; the control handler is installed.
                unsafe {
                    libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, rt::control_signal())
                };
            }
        },
    )
    .map(|_| ())
}

/// Suspend the calling aperiodic process until RESUME or `timeout` ns (`SUSPEND_SELF`);
/// `timeout` 0 returns at once, `INFINITE_TIME_VALUE` waits for RESUME only.
///
/// # Errors
/// - `InvalidMode`: the caller is not a process, is the error handler, holds the preemption lock,
///   or is periodic.
/// - `InvalidParam`: `timeout` is negative and not infinite.
/// - `TimedOut`: the time-out expired before a RESUME.
pub fn suspend_self(timeout: SystemTime) -> ApexResult<()> {
    let r = rt();
    let idx = match rt::self_index() {
        Some(i) if i != EH_INDEX => i,
        _ => return Err(ApexError::InvalidMode),
    };
    let c = &r.ctl[idx];
    let word = loop {
        let word = r.with_inner(|inner| {
            // The standard's order: the preemption lock (and the error handler, above), the
            // time-out, then a periodic caller.
            if inner.lock_owner == Some(idx) {
                return Err(ApexError::InvalidMode);
            }
            if timeout < 0 && timeout != INFINITE_TIME_VALUE {
                return Err(ApexError::InvalidParam);
            }
            let p = &mut inner.procs[idx];
            if p.attrs.period != INFINITE_TIME_VALUE {
                return Err(ApexError::InvalidMode);
            }
            if timeout == 0 {
                return Ok(Some(None));
            }
            if p.reasons & W_SUSPEND != 0 {
                // Suspended by another process while this call waited for the lock (its
                // signal deferred by the section): that suspension parks the caller when the
                // section ends, and the call goes on once it is resumed. Overwritten here, it
                // was lost: the caller ran after its own time-out (found by review).
                return Ok(None);
            }
            let until =
                (timeout != INFINITE_TIME_VALUE).then(|| r.now().saturating_add(timeout as u64));
            p.wait_for(W_SUSPEND, until);
            p.self_suspend_timed_out = false;
            r.publish(idx, p);
            let s = c.suspend.load(Ordering::Acquire);
            let w = (s + SUSP_SEQ) | SUSP | SUSP_SELF;
            c.suspend.store(w, Ordering::Release);
            Ok(Some(Some((w, until))))
        })?;
        if let Some(w) = word {
            break w;
        }
    };
    let Some((word, until)) = word else {
        return Ok(());
    };
    loop {
        if c.suspend.load(Ordering::Acquire) != word {
            // Resumed, or stopped: a stopped incarnation ends here and never returns to the
            // application (the STOP's signal normally ends it first). Or suspended after its
            // time-out expired: parked here until resumed, then TIMED_OUT.
            r.honour_commands();
            return r.with_inner(|inner| {
                if std::mem::take(&mut inner.procs[idx].self_suspend_timed_out) {
                    Err(ApexError::TimedOut)
                } else {
                    Ok(())
                }
            });
        }
        let left = match until {
            None => None,
            Some(u) => {
                let now = r.now();
                if now >= u {
                    break;
                }
                Some(Duration::from_nanos(u - now))
            }
        };
        futex::wait(&c.suspend, word, left);
    }
    // Timed out, unless a RESUME raced with the expiry (or a SUSPEND came after it: the
    // section defers its signal, which parks the thread when the section ends).
    r.with_inner(|inner| {
        if c.suspend.load(Ordering::Acquire) != word {
            if std::mem::take(&mut inner.procs[idx].self_suspend_timed_out) {
                return Err(ApexError::TimedOut);
            }
            return Ok(());
        }
        c.suspend
            .store((word & !(SUSP | SUSP_SELF)) + SUSP_SEQ, Ordering::Release);
        let p = &mut inner.procs[idx];
        p.reasons &= !W_SUSPEND;
        r.publish(idx, p);
        Err(ApexError::TimedOut)
    })
}

/// Resume a suspended process (`RESUME`); it stays WAITING if it also waits for something else.
///
/// # Errors
/// - `InvalidParam`: `pid` names no process, or the calling process.
/// - `InvalidMode`: the process is DORMANT, or periodic.
/// - `NoAction`: the process is not suspended.
pub fn resume(pid: ProcessId) -> ApexResult<()> {
    let r = rt();
    let idx = existing(pid)?;
    if rt::self_index() == Some(idx) {
        return Err(ApexError::InvalidParam);
    }
    // The wake comes before the unlock (`Runtime::with_inner_then`), so before a STOP or
    // SUSPEND of the caller takes effect.
    r.with_inner_then(
        |inner| {
            let p = &mut inner.procs[idx];
            if p.dormant || p.attrs.period != INFINITE_TIME_VALUE {
                return Err(ApexError::InvalidMode);
            }
            if p.reasons & W_SUSPEND == 0 || p.timed_out(W_SUSPEND, r.now()) {
                // Not suspended, or its SUSPEND_SELF's time-out expired (it returns TIMED_OUT
                // when it runs again).
                return Err(ApexError::NoAction);
            }
            p.reasons &= !W_SUSPEND;
            r.publish(idx, p);
            let c = &r.ctl[idx];
            let s = c.suspend.load(Ordering::Acquire);
            c.suspend
                .store((s & !(SUSP | SUSP_SELF)) + SUSP_SEQ, Ordering::Release);
            Ok(())
        },
        |resumed| {
            if resumed.is_ok() {
                futex::wake_all(&r.ctl[idx].suspend);
            }
        },
    )
}

/// Set the current priority of a process (`SET_PRIORITY`); it moves behind the other ready
/// processes of the new priority, and, if it waits in a PRIORITY queue (an intra-partition
/// object's or a queuing port's), to its new place in that queue. A process holding the
/// preemption lock keeps running at the lock's priority until it unlocks.
///
/// # Errors
/// - `InvalidParam`: `pid` names no process, or `priority` is out of range.
/// - `InvalidMode`: the process is DORMANT.
pub fn set_priority(pid: ProcessId, priority: Priority) -> ApexResult<()> {
    let r = rt();
    let idx = existing(pid)?;
    if !(MIN_PRIORITY_VALUE..=MAX_PRIORITY_VALUE).contains(&priority) {
        return Err(ApexError::InvalidParam);
    }
    let caller = rt::self_index() == Some(idx);
    // A process waiting on a queuing port with the PRIORITY discipline moves in its line (the
    // order is read at every look); its line is woken so that the new order takes effect now,
    // with the runtime lock still held (`with_inner_then`: before a control request that
    // reached the caller is honoured).
    let (yield_after, _) = r.with_inner_then(
        |inner| {
            let p = &mut inner.procs[idx];
            if p.dormant {
                return Err(ApexError::InvalidMode);
            }
            let changed = p.current_priority != priority;
            p.current_priority = priority;
            r.publish(idx, p);
            let want = r.fifo_priority(inner, idx);
            if let Some(p) = inner.proc_mut(idx) {
                p.applied_fifo = want;
            }
            // Behind the other ready processes of its new priority. Linux puts a thread whose
            // priority is lowered at the head of its new list, and leaves one whose priority is
            // unchanged in place: the caller yields after the call, and another process is taken
            // down to the lowest priority first, so that it rises to its new one (a raise puts it
            // at the tail). Before, a process that lowered itself kept running ahead of the
            // processes already READY at its new priority.
            if caller {
                r.set_fifo(0, want);
                Ok((want != FIFO_LOCK, changed))
            } else {
                let tid = r.ctl[idx].tid.load(Ordering::Acquire);
                if tid != 0 {
                    if want > 1 {
                        r.set_fifo(tid, 1);
                    }
                    r.set_fifo(tid, want);
                }
                Ok((false, changed))
            }
        },
        |res| {
            if let Ok((_, true)) = res {
                super::ports::priority_changed(idx);
            }
        },
    )?;
    if yield_after {
        // SAFETY: sched_yield has no preconditions.
        unsafe { libc::sched_yield() };
    }
    Ok(())
}

/// Return the id of the process named `name` (`GET_PROCESS_ID`). Lock-free.
///
/// # Errors
/// - `InvalidConfig`: no process has this name.
pub fn get_process_id(name: &str) -> ApexResult<ProcessId> {
    let r = rt();
    let n = r.ctx.partition().n_processes.load(Ordering::Acquire) as usize;
    r.attrs[..n.min(MAX_PROCESSES)]
        .iter()
        .position(|a| a.get().is_some_and(|a| a.name == name))
        .map(|i| ProcessId(i as i32 + 1))
        .ok_or(ApexError::InvalidConfig)
}

/// Return the id of the calling process (`GET_MY_ID`). Lock-free.
///
/// # Errors
/// - `InvalidMode`: the caller is not a process (initialisation code, the error handler, a thread
///   the runtime did not create).
pub fn get_my_id() -> ApexResult<ProcessId> {
    match rt::self_index() {
        Some(i) if i != EH_INDEX => Ok(ProcessId(i as i32 + 1)),
        _ => Err(ApexError::InvalidMode),
    }
}

/// Return the status of a process (`GET_PROCESS_STATUS`): plain loads from the shared process
/// slot, no lock. The calling process sees itself RUNNING; other ready processes are READY (on
/// one CPU only the caller runs).
///
/// # Errors
/// - `InvalidParam`: `pid` names no process.
pub fn get_process_status(pid: ProcessId) -> ApexResult<ProcessStatus> {
    let r = rt();
    let idx = pid.index().ok_or(ApexError::InvalidParam)?;
    let attributes = r.attrs[idx].get().ok_or(ApexError::InvalidParam)?.clone();
    let s = r.slot(idx);
    let st = s.state.load(Ordering::Acquire);
    // A wait that ended by itself (its time-out, its release point) leaves the process READY
    // although its thread, kept off the CPU by a process of higher priority, has not left the
    // wait yet (ARINC 653: the time-out makes it READY).
    let ends = s.wait_ends_ns.load(Ordering::Relaxed);
    // So does a queuing port wait that another call served in its place (the message received,
    // or sent, for it), unless the process is also suspended.
    let served = || {
        let c = &r.ctl[idx];
        let v = c.port_served.load(Ordering::Acquire);
        v != 0
            && v == c.incarnation.load(Ordering::Acquire).wrapping_add(1)
            && c.suspend.load(Ordering::Acquire) & rt::SUSP == 0
    };
    let process_state = match st {
        process_state::DORMANT => ProcessState::Dormant,
        process_state::WAITING if (ends == 0 || r.now() < ends) && !served() => {
            ProcessState::Waiting
        }
        process_state::FAULTED => ProcessState::Faulted,
        _ if rt::self_index() == Some(idx) => ProcessState::Running,
        _ => ProcessState::Ready,
    };
    let d = s.deadline_ns.load(Ordering::Acquire);
    Ok(ProcessStatus {
        deadline_time: if d == u64::MAX {
            INFINITE_TIME_VALUE
        } else {
            d as SystemTime
        },
        current_priority: s.current_priority.load(Ordering::Relaxed) as Priority,
        process_state,
        attributes,
    })
}

/// Forbid preemption of the calling process by the other processes (`LOCK_PREEMPTION`); return
/// the new lock level. The caller runs at SCHED_FIFO 97, above every process.
///
/// # Errors
/// - `NoAction`: the partition is not in NORMAL mode, or the caller is the error handler or not a
///   process.
/// - `InvalidConfig`: the lock level is at [`MAX_LOCK_LEVEL`].
pub fn lock_preemption() -> ApexResult<LockLevel> {
    let r = rt();
    let idx = match rt::self_index() {
        Some(i) if i != EH_INDEX => i,
        _ => return Err(ApexError::NoAction),
    };
    if r.mode() != mode::NORMAL {
        return Err(ApexError::NoAction);
    }
    let word = &r.ctx.partition().lock_level;
    loop {
        let got = r.with_inner(|inner| {
            let level = word.load(Ordering::Acquire);
            if level > 0 && inner.lock_owner.is_some_and(|o| o != idx) {
                // Another process holds the lock: it runs above every process, so the caller
                // runs only because the holder blocked outside APEX (a system call, a mutex of
                // its own). Taking the lock over made the holder's UNLOCK answer NO_ACTION and
                // left it at the lock's priority for good (found by review); the caller waits
                // for the level to come back to 0 instead.
                return Ok(Err(level));
            }
            if level as LockLevel >= MAX_LOCK_LEVEL {
                return Err(ApexError::InvalidConfig);
            }
            inner.lock_owner = Some(idx);
            word.store(level + 1, Ordering::Release);
            r.apply_priority(inner, idx);
            Ok(Ok(level as LockLevel + 1))
        })?;
        match got {
            Ok(level) => return Ok(level),
            // Woken when the level returns to 0; the slice bounds a wake missed for a holder
            // that ended another way.
            Err(level) => {
                futex::wait(word, level, Some(Duration::from_millis(50)));
            }
        }
    }
}

/// Decrement the preemption lock level (`UNLOCK_PREEMPTION`); at 0 the caller returns to its
/// current priority and may be preempted at once. Return the new lock level.
///
/// # Errors
/// - `NoAction`: the partition is not in NORMAL mode, the caller is the error handler or not a
///   process, or preemption is not locked (by the caller).
pub fn unlock_preemption() -> ApexResult<LockLevel> {
    let r = rt();
    let idx = match rt::self_index() {
        Some(i) if i != EH_INDEX => i,
        _ => return Err(ApexError::NoAction),
    };
    if r.mode() != mode::NORMAL {
        return Err(ApexError::NoAction);
    }
    r.with_inner(|inner| {
        let level = r.ctx.partition().lock_level.load(Ordering::Acquire) as LockLevel;
        if level == 0 || inner.lock_owner != Some(idx) {
            return Err(ApexError::NoAction);
        }
        r.ctx
            .partition()
            .lock_level
            .store(level as u32 - 1, Ordering::Release);
        if level == 1 {
            inner.lock_owner = None;
            r.apply_priority(inner, idx);
            // Processes that called LOCK_PREEMPTION while the caller was blocked outside APEX.
            futex::wake_all(&r.ctx.partition().lock_level);
        }
        Ok(level - 1)
    })
}

//! Asymmetric memory barriers: a *light* side that costs nothing on the message path and a
//! *heavy* side, paid only by a thread about to sleep, that makes up for it with `membarrier(2)`.
//!
//! Two places need a store-load barrier on both sides of a Dekker-style handshake:
//! - the [`crate::notifier`]: a writer publishes, then checks for parked receivers; a receiver
//!   registers as parked, then checks for data;
//! - a lock biased to one thread (in `partix-runtime`): the owner marks itself inside, then checks
//!   that the bias still holds; a thread revoking the bias clears it, then checks whether the
//!   owner is inside.
//!
//! The frequent side (the writer, the owner) calls [`light`]; the rare side (the parker, the
//! revoker) calls [`heavy_global`] or [`heavy_private`]. With asymmetric barriers enabled in the
//! process ([`enable`]), [`light`] is only a compiler fence, and the heavy side's `membarrier`
//! makes every running thread of the registered processes execute a full barrier between the
//! heavy side's store and its load: either the light side's store is before that barrier (the
//! heavy side's load sees it) or its load is after it (it sees the heavy side's store). This is
//! the argument of the kernel's `membarrier(2)` page and of `sys_membarrier`'s user-space RCU.
//!
//! Without asymmetric barriers (no `membarrier` in the kernel, the registration refused, or a
//! loom build) both sides are `SeqCst` fences, as before.
//!
//! # When a heavy barrier's `membarrier` fails
//! The expedited commands can fail after a successful registration (`ENOMEM`: the kernel
//! allocates a CPU mask for each call; or a seccomp filter installed later). The heavy side then
//! cannot count on its barrier, and ignoring that (as until a review of 2026-11-27) left a light
//! side that is only a compiler fence unpaired: a lost wake-up in the notifier, two threads
//! inside a biased lock. So a failed expedited barrier is not taken for done:
//! 1. the heavy side falls back to `MEMBARRIER_CMD_GLOBAL`, which makes every running thread of
//!    the system execute a barrier through an RCU grace period (milliseconds, but it allocates
//!    nothing: only `nohz_full` CPUs or a filter refuse it). That is sound, as the expedited one.
//! 2. If that fails too, no barrier can be had from the kernel: the process switches to
//!    symmetric barriers for good (as when the registration is refused: its [`light`] sides are
//!    `SeqCst` fences from then on), counts the failure ([`failures`]), and the heavy side says
//!    so. The light sides already past their flag check, and those of other processes, are not
//!    covered by that: the notifier's parker then parks at most [`DEGRADED_PARK`] at a time
//!    (a wake-up it misses costs that much, not its whole time-out), and the biased lock's
//!    revoker pauses as long before it looks whether the owner is inside (the owner's store is
//!    visible by then on every real machine, though no memory model promises it). The light
//!    side's cost is unchanged: the same flag it always checked.
//!
//! A private barrier refused with `EPERM` in a process that never registered is no failure: its
//! light sides are `SeqCst` fences.
//!
//! Why: on a 2-vCPU AMD EPYC VM a one-sided queuing port moved 19 M messages per call and second
//! with the fences and lock instructions on its path, 51 M without them (`docs/bench-rtt.md`,
//! session 13). A `membarrier` costs the heavy side 0.3-0.5 µs when the other CPU runs nothing
//! registered, about 9.5 µs when it does (an inter-processor interrupt), and the interrupted
//! thread a few µs.
#![allow(unsafe_code)]

use crate::sync::{fence, Ordering};

#[cfg(not(loom))]
use std::sync::atomic::{compiler_fence, AtomicU32, AtomicU64, AtomicU8};
use std::time::Duration;

/// How long a notifier's parker whose heavy barrier failed ([`heavy_global`] returned false)
/// parks at most before it checks again (see the module docs), and how long the biased lock's
/// revoker pauses after its heavy barrier failed.
pub const DEGRADED_PARK: Duration = Duration::from_millis(1);

/// `MEMBARRIER_CMD_GLOBAL`: a barrier on every running thread of the system through an RCU
/// grace period (slow, allocation-free): the fallback of a failed expedited barrier.
#[cfg(not(loom))]
const CMD_GLOBAL: libc::c_int = 1;

/// `MEMBARRIER_CMD_QUERY` of `linux/membarrier.h`.
#[cfg(not(loom))]
const CMD_QUERY: libc::c_int = 0;
/// `MEMBARRIER_CMD_GLOBAL_EXPEDITED`.
#[cfg(not(loom))]
const CMD_GLOBAL_EXPEDITED: libc::c_int = 1 << 1;
/// `MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED`.
#[cfg(not(loom))]
const CMD_REGISTER_GLOBAL_EXPEDITED: libc::c_int = 1 << 2;
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`.
#[cfg(not(loom))]
const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`.
#[cfg(not(loom))]
const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

/// Whether this process's [`light`] barriers are compiler fences (set once by [`enable`]).
#[cfg(not(loom))]
static LIGHT: AtomicU8 = AtomicU8::new(0);

/// The commands the kernel offers (`MEMBARRIER_CMD_QUERY`'s answer, 0 if it has none), plus
/// [`ASKED`] once asked.
#[cfg(not(loom))]
static COMMANDS: AtomicU32 = AtomicU32::new(0);

/// The flag of [`COMMANDS`] that says the kernel was asked (no command uses that bit).
#[cfg(not(loom))]
const ASKED: u32 = 1 << 31;

/// Whether [`enable`] registered this process for the expedited barriers (never cleared: a
/// failed heavy barrier clears [`LIGHT`] only).
#[cfg(not(loom))]
static REGISTERED: AtomicU8 = AtomicU8::new(0);

/// Heavy barriers for which every `membarrier` failed (see the module docs).
#[cfg(not(loom))]
static FAILED: AtomicU64 = AtomicU64::new(0);

#[cfg(not(loom))]
fn membarrier(cmd: libc::c_int) -> libc::c_long {
    // SAFETY: membarrier takes no pointers; an unknown command only fails with EINVAL.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_uint,
            0 as libc::c_int,
        )
    }
}

/// Issue `cmd`; `Err(errno)` when it fails.
#[cfg(not(loom))]
fn membarrier_checked(cmd: libc::c_int) -> Result<(), i32> {
    if membarrier(cmd) == 0 {
        return Ok(());
    }
    Err(std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL))
}

/// Return the commands the kernel offers (asked once).
#[cfg(not(loom))]
fn commands() -> u32 {
    let c = COMMANDS.load(Ordering::Relaxed);
    if c & ASKED != 0 {
        return c;
    }
    let q = membarrier(CMD_QUERY);
    let c = ASKED | if q >= 0 { q as u32 & !ASKED } else { 0 };
    COMMANDS.store(c, Ordering::Relaxed);
    c
}

/// Return whether the kernel offers the expedited global barrier (asked once).
#[cfg(not(loom))]
fn global_supported() -> bool {
    commands() & CMD_GLOBAL_EXPEDITED as u32 != 0
}

/// Switch this process to asymmetric barriers: register it as a target of the expedited
/// global and private barriers and, if both registrations succeed, make [`light`] a compiler
/// fence. Return whether it did (never after a heavy barrier found every `membarrier` failing:
/// the process then stays symmetric, see the module docs).
///
/// Neither heavy side depends on whether the calling process enabled them, so threads may
/// run while this is called.
#[cfg(not(loom))]
pub fn enable() -> bool {
    if !global_supported() {
        return false;
    }
    if membarrier(CMD_REGISTER_GLOBAL_EXPEDITED) != 0
        || membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) != 0
    {
        return false;
    }
    // A forked child keeps both the registration (the kernel copies it with the memory map:
    // `MEMBARRIER_CMD_GET_REGISTRATIONS` in the child answers the same, kernel 6.18) and these
    // flags; `exec` clears both.
    REGISTERED.store(1, Ordering::Relaxed);
    // After a failed heavy barrier switched the process to symmetric barriers, it stays so.
    if FAILED.load(Ordering::Relaxed) != 0 {
        return false;
    }
    LIGHT.store(1, Ordering::Relaxed);
    true
}

/// Loom models check the symmetric protocol: nothing to enable.
#[cfg(loom)]
pub fn enable() -> bool {
    false
}

/// Return whether this process's [`light`] barriers are compiler fences.
#[cfg(not(loom))]
pub fn asymmetric() -> bool {
    LIGHT.load(Ordering::Relaxed) != 0
}

/// Loom models check the symmetric protocol.
#[cfg(loom)]
pub fn asymmetric() -> bool {
    false
}

/// The frequent side's store-load barrier: a compiler fence once [`enable`] succeeded (the
/// heavy side's `membarrier` stands in for it), a `SeqCst` fence otherwise.
#[inline]
pub fn light() {
    #[cfg(not(loom))]
    if LIGHT.load(Ordering::Relaxed) != 0 {
        compiler_fence(Ordering::SeqCst);
        return;
    }
    fence(Ordering::SeqCst);
}

/// The rare side's barrier against [`light`] barriers of *other processes*: a `SeqCst` fence,
/// then, if the kernel has one, an expedited global `membarrier` (every CPU running a registered
/// process executes a full barrier before it returns). Does not need [`enable`]: an
/// unregistered process may wait for registered writers.
///
/// Return whether the barrier is certain: false when every `membarrier` failed (module docs,
/// "When a heavy barrier's `membarrier` fails"); the caller must not then sleep longer than
/// [`DEGRADED_PARK`] on a wake-up that depends on it.
#[must_use]
pub fn heavy_global() -> bool {
    fence(Ordering::SeqCst);
    #[cfg(not(loom))]
    if global_supported() {
        return heavy_with(
            CMD_GLOBAL_EXPEDITED,
            commands(),
            false,
            &LIGHT,
            &FAILED,
            membarrier_checked,
        );
    }
    true
}

/// The rare side's barrier against [`light`] barriers of *this process's* threads: a `SeqCst`
/// fence, then, if the kernel has them, an expedited private `membarrier` (which fails
/// harmlessly in a process that did not register: its [`light`] barriers are full fences). It
/// does not look at whether [`enable`] succeeded, so a thread that has not seen that yet still
/// pairs with one whose [`light`] has.
///
/// Return whether the barrier is certain: false when every `membarrier` failed; it then paused
/// for [`DEGRADED_PARK`] first (module docs, "When a heavy barrier's `membarrier` fails").
pub fn heavy_private() -> bool {
    fence(Ordering::SeqCst);
    #[cfg(not(loom))]
    if global_supported() {
        let registered = REGISTERED.load(Ordering::Relaxed) != 0;
        if !heavy_with(
            CMD_PRIVATE_EXPEDITED,
            commands(),
            registered,
            &LIGHT,
            &FAILED,
            membarrier_checked,
        ) {
            // A light side that read the flag before the switch finishes its window.
            std::thread::sleep(DEGRADED_PARK);
            fence(Ordering::SeqCst);
            return false;
        }
    }
    true
}

/// Return how many heavy barriers found every `membarrier` failing in this process (see the
/// module docs; 0 on a sound kernel).
#[cfg(not(loom))]
pub fn failures() -> u64 {
    FAILED.load(Ordering::Relaxed)
}

/// The system calls of a heavy barrier whose `SeqCst` fence is done: `sys(cmd)` (the expedited
/// command); if it fails, the allocation-free `MEMBARRIER_CMD_GLOBAL` when `commands` has it;
/// if that fails too, switch `light` to symmetric barriers, count the failure in `failed` and
/// return false. A private barrier refused with `EPERM` while the process never `registered`
/// needs nothing (its light sides are `SeqCst` fences).
#[cfg(not(loom))]
fn heavy_with(
    cmd: libc::c_int,
    commands: u32,
    registered: bool,
    light: &AtomicU8,
    failed: &AtomicU64,
    mut sys: impl FnMut(libc::c_int) -> Result<(), i32>,
) -> bool {
    match sys(cmd) {
        Ok(()) => return true,
        Err(libc::EPERM) if cmd == CMD_PRIVATE_EXPEDITED && !registered => return true,
        Err(_) => {}
    }
    if commands & CMD_GLOBAL as u32 != 0 && sys(CMD_GLOBAL).is_ok() {
        return true;
    }
    light.store(0, Ordering::Relaxed);
    failed.fetch_add(1, Ordering::Relaxed);
    fence(Ordering::SeqCst);
    false
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_answers_and_the_barriers_run() {
        // Either way the calls must be callable; with the registration, light is a compiler
        // fence and the heavy sides do a system call.
        let on = enable();
        assert_eq!(on, asymmetric());
        assert!(!on || global_supported());
        light();
        assert!(heavy_global());
        assert!(heavy_private());
    }

    /// A heavy barrier whose expedited `membarrier` fails is not taken for done: it falls back
    /// to the allocation-free global barrier, and when that fails too it switches the process
    /// to symmetric barriers, counts the failure and says so. A private barrier refused with
    /// EPERM in a process that never registered needs nothing. (The return value was ignored:
    /// a light side that is a compiler fence stayed unpaired; found by review.)
    #[test]
    fn a_failed_membarrier_is_never_taken_for_done() {
        let all = CMD_GLOBAL as u32 | CMD_GLOBAL_EXPEDITED as u32 | CMD_PRIVATE_EXPEDITED as u32;
        let run = |cmd, commands, registered, answer: &dyn Fn(libc::c_int) -> Result<(), i32>| {
            let (light, failed) = (AtomicU8::new(1), AtomicU64::new(0));
            let mut calls = Vec::new();
            let sure = heavy_with(cmd, commands, registered, &light, &failed, |c| {
                calls.push(c);
                answer(c)
            });
            (
                sure,
                calls,
                light.load(Ordering::Relaxed),
                failed.load(Ordering::Relaxed),
            )
        };
        let ok = |_| Ok(());
        let enomem = |c| {
            if c == CMD_GLOBAL {
                Ok(())
            } else {
                Err(libc::ENOMEM)
            }
        };
        let refused = |_| Err(libc::EPERM);
        for cmd in [CMD_GLOBAL_EXPEDITED, CMD_PRIVATE_EXPEDITED] {
            // Done at once.
            assert_eq!(run(cmd, all, true, &ok), (true, vec![cmd], 1, 0));
            // The expedited one fails: the global one stands in.
            assert_eq!(
                run(cmd, all, true, &enomem),
                (true, vec![cmd, CMD_GLOBAL], 1, 0)
            );
            // Both fail, or there is no global one: symmetric from now on, counted, not sure.
            assert_eq!(
                run(cmd, all, true, &refused),
                (false, vec![cmd, CMD_GLOBAL], 0, 1)
            );
            assert_eq!(
                run(cmd, all & !(CMD_GLOBAL as u32), true, &enomem),
                (false, vec![cmd], 0, 1)
            );
        }
        // A process that never registered: its light sides are fences already.
        assert_eq!(
            run(CMD_PRIVATE_EXPEDITED, all, false, &refused),
            (true, vec![CMD_PRIVATE_EXPEDITED], 1, 0)
        );
        // But not the global barrier, which needs no registration.
        assert_eq!(
            run(CMD_GLOBAL_EXPEDITED, all, false, &refused),
            (false, vec![CMD_GLOBAL_EXPEDITED, CMD_GLOBAL], 0, 1)
        );
        // The real calls on this kernel: certain, and nothing failed.
        assert!(heavy_global());
        assert!(heavy_private());
        assert_eq!(failures(), 0);
    }

    #[test]
    fn a_forked_child_keeps_the_registration() {
        if !enable() {
            eprintln!("skipped: no expedited membarrier here");
            return;
        }
        /// `MEMBARRIER_CMD_GET_REGISTRATIONS` (Linux 6.3).
        const CMD_GET_REGISTRATIONS: libc::c_int = 1 << 9;
        let want =
            libc::c_long::from(CMD_REGISTER_GLOBAL_EXPEDITED | CMD_REGISTER_PRIVATE_EXPEDITED);
        let here = membarrier(CMD_GET_REGISTRATIONS);
        if here < 0 {
            eprintln!("skipped: the kernel cannot list registrations");
            return;
        }
        assert_eq!(here & want, want);
        // SAFETY: the child only makes system calls and exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let ok = membarrier(CMD_GET_REGISTRATIONS) & want == want && asymmetric();
            // SAFETY: _exit ends the child without running the parent's destructors.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    }
}

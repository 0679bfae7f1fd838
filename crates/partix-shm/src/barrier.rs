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
//! Why: on a 2-vCPU AMD EPYC VM a one-sided queuing port moved 19 M messages per call and second
//! with the fences and lock instructions on its path, 51 M without them (`docs/bench-rtt.md`,
//! session 13). A `membarrier` costs the heavy side 0.3-0.5 µs when the other CPU runs nothing
//! registered, about 9.5 µs when it does (an inter-processor interrupt), and the interrupted
//! thread a few µs.
#![allow(unsafe_code)]

use crate::sync::{fence, Ordering};

#[cfg(not(loom))]
use std::sync::atomic::{compiler_fence, AtomicU8};

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

/// What the kernel offers: 0 not asked yet, 1 no expedited global barrier, 2 there is one.
#[cfg(not(loom))]
static GLOBAL: AtomicU8 = AtomicU8::new(0);

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

/// Return whether the kernel offers the expedited global barrier (asked once).
#[cfg(not(loom))]
fn global_supported() -> bool {
    match GLOBAL.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let q = membarrier(CMD_QUERY);
            let ok = q >= 0 && q & libc::c_long::from(CMD_GLOBAL_EXPEDITED) != 0;
            GLOBAL.store(if ok { 2 } else { 1 }, Ordering::Relaxed);
            ok
        }
    }
}

/// Switch this process to asymmetric barriers: register it as a target of the expedited
/// global and private barriers and, if both registrations succeed, make [`light`] a compiler
/// fence. Return whether it did.
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
    // `MEMBARRIER_CMD_GET_REGISTRATIONS` in the child answers the same, kernel 6.18) and this
    // flag; `exec` clears both.
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
pub fn heavy_global() {
    fence(Ordering::SeqCst);
    #[cfg(not(loom))]
    if global_supported() {
        membarrier(CMD_GLOBAL_EXPEDITED);
    }
}

/// The rare side's barrier against [`light`] barriers of *this process's* threads: a `SeqCst`
/// fence, then, if the kernel has them, an expedited private `membarrier` (which fails
/// harmlessly in a process that did not register: its [`light`] barriers are full fences). It
/// does not look at whether [`enable`] succeeded, so a thread that has not seen that yet still
/// pairs with one whose [`light`] has.
pub fn heavy_private() {
    fence(Ordering::SeqCst);
    #[cfg(not(loom))]
    if global_supported() {
        membarrier(CMD_PRIVATE_EXPEDITED);
    }
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
        heavy_global();
        heavy_private();
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

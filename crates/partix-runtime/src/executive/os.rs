//! The Linux side of the executive: partition processes, signals, absolute-timer sleeps,
//! real-time priority, and [`run_module`].
//!
//! # Mechanism: a SCHED_FIFO 99 thread on the partitions' CPU and a futex gate per partition
//! The scheduling thread runs `SCHED_FIFO` 99 pinned to the same CPU as the partitions (a new
//! partition process keeps that priority only until its stop before exec, then becomes a normal
//! task). It sleeps with `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to the planned point
//! (before a point that opens a window: to the point minus the lead, then it pre-wakes the
//! incoming partition and busy-waits for the point). Because it preempts everything on that CPU,
//! the outgoing partition is not running when it is closed and the hand-off is a same-CPU context
//! switch instead of a cross-CPU interrupt. With [`SwitchMechanism::Gate`] (default) a closed
//! partition's threads wait on a futex word of its region, with `SIGSTOP` as the backstop for a
//! partition that does not park in time ([`OsSwitcher`]); with [`SwitchMechanism::Signals`] it
//! is `SIGSTOP`/`SIGCONT`. `docs/executive.md` has the numbers and the alternatives.
#![allow(unsafe_code)]

use super::cgroup::PartitionCgroup;
use super::hm::Death;
use super::log::Logger;
use super::shared::SharedState;
use super::{
    Clock, EndReason, Executive, HmEvents, Options, Overheads, PartitionStats, StartError,
    SwitchMechanism, Switcher,
};
use crate::attach::{monotonic_ns, park_signal};
use crate::channels::{ChannelSet, ENV_PORT_FDS};
use crate::partition::hm::{ENV_CONFIG, ENV_CONFIG_FD};
use crate::state::{
    PartitionState, ENV_DESCRIPTOR_TABLE, ENV_DUMPABLE, ENV_MODULE_FD, ENV_PARTITION_FD,
    ENV_PARTITION_ID, MAX_TIDS,
};
use crate::trace::Trace;
use partix_config::model::{DescriptorTable, Module};
use partix_config::ConfigError;
use partix_shm::futex;
use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::Duration;

/// File descriptor number of the module region in a partition process.
pub const MODULE_FD_NUM: i32 = 500;
/// File descriptor number of the partition region in a partition process.
pub const PARTITION_FD_NUM: i32 = 501;
/// Descriptor number of the module configuration in every partition process (read-only; named
/// by [`ENV_CONFIG_FD`]): partitions read their HM tables through it, whatever their user may
/// open by path.
pub const CONFIG_FD_NUM: i32 = 502;

/// Sleep with `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` until `t` (retried on EINTR).
fn nanosleep_abs(t: u64) {
    let ts = libc::timespec {
        tv_sec: (t / 1_000_000_000) as libc::time_t,
        tv_nsec: (t % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: ts is a valid timespec; no remaining-time pointer is needed for
        // TIMER_ABSTIME.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r != libc::EINTR {
            break;
        }
    }
}

/// The real clock: `CLOCK_MONOTONIC`, `clock_nanosleep(TIMER_ABSTIME)`, futex waits, and a
/// `timerfd` for wake-ups armed ahead ([`Clock::arm`]).
///
/// `sleep_until(t)` after `arm(t)` is a `read` of the armed timerfd: the timer was started (and
/// the clock-event device reprogrammed, if it is the earliest timer — a TSC-deadline MSR write,
/// i.e. a VM exit on a VM) when it was armed, so the sleep itself only blocks. Any other
/// `sleep_until` is a `clock_nanosleep`.
#[derive(Debug)]
pub struct OsClock {
    /// `timerfd_create(CLOCK_MONOTONIC)` (-1: none, every sleep is a `clock_nanosleep`).
    tfd: i32,
    /// The absolute time the timerfd is armed for, until a sleep consumes it.
    armed: Option<u64>,
    /// Sleeps that only blocked on an armed timer (for tests and reports).
    pub armed_sleeps: u64,
}

impl Default for OsClock {
    fn default() -> Self {
        OsClock::new()
    }
}

impl OsClock {
    /// Return a clock with its timerfd (without one if the kernel refuses it: then `arm` does
    /// nothing).
    pub fn new() -> OsClock {
        // SAFETY: plain syscall; the result is checked.
        let tfd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
        OsClock {
            tfd: tfd.max(-1),
            armed: None,
            armed_sleeps: 0,
        }
    }
}

impl Drop for OsClock {
    fn drop(&mut self) {
        if self.tfd >= 0 {
            // SAFETY: our own descriptor, closed once.
            unsafe { libc::close(self.tfd) };
        }
    }
}

impl Clock for OsClock {
    fn now(&mut self) -> u64 {
        monotonic_ns()
    }

    fn sleep_until(&mut self, t: u64) -> u64 {
        if self.armed == Some(t) {
            self.armed = None;
            let mut ticks = 0u64;
            loop {
                // SAFETY: tfd is our timerfd; ticks is an 8-byte buffer as read(2) on a timerfd
                // needs. It blocks until the armed expiry (returns at once if it has passed).
                let n = unsafe { libc::read(self.tfd, (&mut ticks as *mut u64).cast(), 8) };
                if n == 8 {
                    self.armed_sleeps += 1;
                    return monotonic_ns();
                }
                // SAFETY: reading errno of this thread.
                if n < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
                    continue;
                }
                break;
            }
        }
        nanosleep_abs(t);
        monotonic_ns()
    }

    fn arm(&mut self, t: u64) {
        if self.tfd < 0 {
            return;
        }
        let its = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (t / 1_000_000_000) as libc::time_t,
                tv_nsec: (t % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: tfd is our timerfd; its is a valid itimerspec; the old value is not wanted.
        // Re-arming discards a pending expiry of an earlier arm that no sleep consumed.
        let r = unsafe {
            libc::timerfd_settime(
                self.tfd,
                libc::TFD_TIMER_ABSTIME,
                &its,
                std::ptr::null_mut(),
            )
        };
        self.armed = (r == 0).then_some(t);
    }

    fn spin_until(&mut self, t: u64) -> u64 {
        loop {
            let now = monotonic_ns();
            if now >= t {
                return now;
            }
            std::hint::spin_loop();
        }
    }

    fn wait_word(&mut self, word: &AtomicU32, expected: u32, until: u64) {
        let now = monotonic_ns();
        if until > now {
            futex::wait(word, expected, Some(Duration::from_nanos(until - now)));
        }
    }
}

static SIGCHLD_GEN: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_sigchld(_: libc::c_int) {
    SIGCHLD_GEN.fetch_add(1, Ordering::Relaxed);
}

fn install_sigchld() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        // SAFETY: a zeroed sigaction with our handler and an empty mask; the handler only does an
        // atomic add (async-signal-safe). SA_NOCLDSTOP: stops (ours) do not raise it.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigchld as *const () as usize;
            sa.sa_flags = libc::SA_RESTART | libc::SA_NOCLDSTOP;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(libc::SIGCHLD, &sa, std::ptr::null_mut());
        }
    });
}

/// The program a partition runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The executable.
    pub path: PathBuf,
    /// Its arguments (without `argv[0]`).
    pub args: Vec<String>,
}

struct Prepared {
    /// The program, opened `O_PATH` (-1: it could not be): the child runs it through this
    /// descriptor (`execveat`), so a partition under its own user needs the right to execute
    /// the file, not to reach it by its path.
    exe_fd: i32,
    argv: Vec<CString>,
    envp: Vec<CString>,
    cpus: libc::cpu_set_t,
    mem_limit: Option<u64>,
    part_fd: i32,
    /// Channel regions to inherit: (descriptor here, descriptor number in the partition).
    port_fds: Vec<(i32, i32)>,
    /// `partix:User`: (uid, gid) the process takes before exec.
    user: Option<(u32, u32)>,
    /// The CPUs of `cpus`, for the partition's cpuset.
    cpu_list: Vec<usize>,
    /// Under `user`, keep `CAP_SYS_NICE` (as an ambient capability): `RLIMIT_RTPRIO` cannot be
    /// raised to [`PARTITION_RTPRIO_MAX`], and without either the partition's threads could not
    /// use `SCHED_FIFO` at all.
    keep_nice: bool,
    /// The partition's name, for messages.
    name: String,
}

/// `struct __user_cap_header_struct` of `capset(2)`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

/// `struct __user_cap_data_struct` of `capset(2)` (two of them for version 3: capabilities
/// 0-31, 32-63).
#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// `_LINUX_CAPABILITY_VERSION_3`.
const CAP_VERSION_3: u32 = 0x2008_0522;
/// `CAP_SYS_NICE`.
const CAP_SYS_NICE: u32 = 23;
/// `CAP_SYS_PTRACE`: what lets a process open another's `/proc/PID/fd/N` and `/proc/PID/mem`, or
/// `ptrace` it, whatever its credentials and dumpability.
const CAP_SYS_PTRACE: u32 = 19;

/// The calling thread's capability sets (version 3: two data structs, capabilities 0..31 in the
/// first), with the header for a `capset`; `None` if `capget` failed (errno set). A raw system
/// call: async-signal-safe, for the forked child.
fn capget_self() -> Option<(CapHeader, [CapData; 2])> {
    let mut header = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capget writes the two data structs of version 3 and may update the header.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    (r == 0).then_some((header, data))
}

/// Drop `CAP_SYS_PTRACE` from the calling process's bounding, ambient, inheritable, permitted
/// and effective sets, for a partition process before it execs (`docs/ports.md`, "Region
/// isolation"). Raw system calls only: async-signal-safe, for the forked child.
///
/// `Err(errno)` if the process still has it in its permitted set afterwards, or in its bounding
/// set while it has it permitted (an executive without `CAP_SETPCAP`). A bounding set the process
/// cannot change is not an error when the capability is not permitted: with `NO_NEW_PRIVS`
/// (which every partition gets) an exec cannot add to the permitted set.
///
/// # Safety
/// Only changes the calling process's capabilities.
unsafe fn drop_ptrace_capability() -> Result<(), i32> {
    let errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    let cap = CAP_SYS_PTRACE as libc::c_ulong;
    let Some((header, mut data)) = capget_self() else {
        return Err(errno());
    };
    let bit = 1u32 << CAP_SYS_PTRACE;
    let permitted = data[0].permitted & bit != 0;
    let mut bounding_error = 0;
    if libc::prctl(libc::PR_CAPBSET_READ, cap, 0, 0, 0) == 1
        && libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
    {
        bounding_error = errno();
    }
    // EINVAL only on kernels without ambient capabilities (before 4.3), which then have none.
    libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_LOWER, cap, 0, 0);
    if (data[0].effective | data[0].permitted | data[0].inheritable) & bit != 0 {
        data[0].effective &= !bit;
        data[0].permitted &= !bit;
        data[0].inheritable &= !bit;
        if libc::syscall(libc::SYS_capset, &header, data.as_ptr()) != 0 {
            return Err(errno());
        }
    }
    if permitted && bounding_error != 0 {
        return Err(bounding_error);
    }
    Ok(())
}

/// `LANDLOCK_ACCESS_FS_MAKE_BLOCK`: the only access right the partitions' Landlock rulesets
/// handle, allowed beneath `/` (see [`enter_landlock_domain`]).
const LANDLOCK_ACCESS_FS_MAKE_BLOCK: u64 = 1 << 11;

/// `struct landlock_ruleset_attr`, its first field (Landlock ABI 1; the kernel takes the size).
#[repr(C)]
struct LandlockRulesetAttr {
    handled_access_fs: u64,
}

/// `struct landlock_path_beneath_attr` (packed in the kernel's header).
#[repr(C, packed)]
struct LandlockPathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version of the running kernel (`landlock_create_ruleset` with
/// `LANDLOCK_CREATE_RULESET_VERSION`), or why there is none (a kernel before 5.13, or one that
/// does not enable the Landlock LSM).
fn landlock_abi() -> Result<i64, String> {
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call only returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<LandlockRulesetAttr>(),
            0usize,
            1u32,
        )
    };
    if v < 1 {
        return Err(format!(
            "no Landlock in this kernel ({})",
            std::io::Error::last_os_error()
        ));
    }
    Ok(v)
}

/// Put the calling process (a partition's, before exec, with `NO_NEW_PRIVS` set) in a Landlock
/// domain of its own. Landlock keeps a process in a domain from every `ptrace` access check on a
/// process outside it, whatever its capabilities and the other's dumpability: so the partition
/// can open neither `/proc/PID/fd/N` nor `/proc/PID/mem` of the executive (in no domain) or of
/// another partition (in another domain), nor `ptrace`, `pidfd_getfd` or `process_vm_writev`
/// them, from its first instruction on. Its own processes share its domain. The ruleset handles
/// only `MAKE_BLOCK` and allows it beneath `/`: no file access changes. Raw system calls only
/// (async-signal-safe). `Err(errno)` of the call that failed.
///
/// # Safety
/// Only restricts the calling process (and what it execs and forks).
unsafe fn enter_landlock_domain() -> Result<(), i32> {
    let errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    let attr = LandlockRulesetAttr {
        handled_access_fs: LANDLOCK_ACCESS_FS_MAKE_BLOCK,
    };
    let ruleset = libc::syscall(
        libc::SYS_landlock_create_ruleset,
        &attr,
        std::mem::size_of::<LandlockRulesetAttr>(),
        0u32,
    ) as i32;
    if ruleset < 0 {
        return Err(errno());
    }
    let root = libc::open(
        c"/".as_ptr(),
        libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
    );
    let mut result = Ok(());
    if root < 0 {
        result = Err(errno());
    } else {
        let rule = LandlockPathBeneathAttr {
            allowed_access: LANDLOCK_ACCESS_FS_MAKE_BLOCK,
            parent_fd: root,
        };
        // LANDLOCK_RULE_PATH_BENEATH = 1.
        if libc::syscall(libc::SYS_landlock_add_rule, ruleset, 1u32, &rule, 0u32) != 0
            || libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0
        {
            result = Err(errno());
        }
        libc::close(root);
    }
    libc::close(ruleset);
    result
}

/// Make the calling process dumpable (`true`) or not: `prctl(PR_SET_DUMPABLE)`. A process that
/// is not dumpable has its `/proc/PID` files owned by root, and another process needs
/// `CAP_SYS_PTRACE` to open its `/proc/PID/fd/N` or `/proc/PID/mem`, even under the same user.
///
/// # Errors
/// The `prctl` error.
pub fn set_dumpable(dumpable: bool) -> std::io::Result<()> {
    // SAFETY: PR_SET_DUMPABLE takes no pointer.
    if unsafe {
        libc::prctl(
            libc::PR_SET_DUMPABLE,
            libc::c_ulong::from(dumpable),
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the calling process is dumpable (`prctl(PR_GET_DUMPABLE)` is 1).
pub fn is_dumpable() -> bool {
    // SAFETY: PR_GET_DUMPABLE takes no pointer.
    unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) == 1 }
}

/// Whether the calling thread has capability `cap` (< 32) in its effective set.
fn has_capability(cap: u32) -> bool {
    capget_self().is_some_and(|(_, data)| data[0].effective & (1 << cap) != 0)
}

/// Make sure partition processes can get `RLIMIT_RTPRIO` [`PARTITION_RTPRIO_MAX`]: the hard
/// limit is that already, or the executive raises its own (inherited by its children; root
/// itself does not need it). `Err` says why not (no `CAP_SYS_RESOURCE`, as in some containers).
fn ensure_rtprio_limit() -> Result<(), String> {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes old.
    unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut old) };
    let want = PARTITION_RTPRIO_MAX as libc::rlim_t;
    if old.rlim_max >= want {
        return Ok(());
    }
    let new = libc::rlimit {
        rlim_cur: old.rlim_cur,
        rlim_max: want,
    };
    // SAFETY: setrlimit only reads new.
    if unsafe { libc::setrlimit(libc::RLIMIT_RTPRIO, &new) } == 0 {
        return Ok(());
    }
    Err(format!(
        "RLIMIT_RTPRIO cannot be raised from {} to {want} ({}; raising it needs CAP_SYS_RESOURCE)",
        old.rlim_max,
        std::io::Error::last_os_error()
    ))
}

/// `RLIMIT_RTPRIO` of every partition process: the highest `SCHED_FIFO` priority its threads may
/// take without `CAP_SYS_NICE` (a partition under its own `partix:User` has none). It is the
/// runtime's highest (its monitor thread), one below the executive's 99, so no partition thread
/// can ever run ahead of the executive on its CPU.
pub const PARTITION_RTPRIO_MAX: i32 = 98;

/// Exit status of a new partition process that could not take its `partix:User` credentials.
const EXIT_CREDENTIALS: i32 = 124;

/// The switcher's view of one partition process for the gate mechanism.
#[derive(Debug, Clone, Copy)]
struct GateState {
    /// The process is held: SIGSTOPped (its pre-exec stop, or the signals mechanism) or, as a
    /// backstop, frozen in its cgroup (SIGSTOPped where it has none).
    held: bool,
    /// The hold is a SIGSTOP (a `SIGCONT` ends it).
    by_signal: bool,
    /// Threads of the process at the last count (`/proc/PID/stat`).
    threads: u32,
    /// `threads` was counted (not the initial guess).
    counted: bool,
    /// The process's CPU time (ns) when its park was verified; audited before it next runs.
    cpu_at_park: Option<u64>,
    /// The process ran while it claimed to be parked: it is stopped with SIGSTOP from now on.
    distrusted: bool,
    /// `/proc/PID/stat`, open while the process lives (-1: none).
    stat_fd: i32,
    /// A close waiting to be verified: (closed gate value, deadline in `CLOCK_MONOTONIC` ns).
    check: Option<(u32, u64)>,
    /// `prepare_open` woke a parked thread (it parks again unless the gate opens).
    prewoken: bool,
    /// `PartitionState::gate_waits` when `prepare_open` woke it.
    waits_at_prewake: u32,
    /// The last close signalled every thread itself (`PartitionState::gate_broadcast`).
    broadcast: bool,
    /// `gate_parked` at the close or at the last verification, and the extensions granted.
    parked_seen: u32,
    extensions: u32,
    /// The last verified close found its park signal still queued (blocked): the next close
    /// sends none ([`OsSwitcher::park_signal_queued`]).
    withhold: bool,
    /// A verified close found threads waiting for the CPU with their park signal pending: the
    /// next closes read the process's CPU time (`cpu_at_close`), which shows whether they did.
    waits_for_cpu: bool,
    /// The process's CPU time at the last close, when `waits_for_cpu`.
    cpu_at_close: Option<u64>,
    /// The last verified close was accepted as a pending park (its audit turns pending parks
    /// off, rather than distrusting the partition).
    accepted_pending: bool,
    /// No more pending parks for this process (an audit after one failed).
    no_pending: bool,
    /// The process's CPU time (ns) when its current window opened (read in the lead, or just
    /// after the open), for [`Switcher::woken_but_not_run`]; reset at the close.
    cpu_at_open: Option<u64>,
    /// The reading taken in the lead (`prepare_open`), which becomes `cpu_at_open` at the
    /// open. Kept apart: the lead of a window may come before the close of the partition's
    /// previous one (back-to-back windows), whose check needs that window's reading.
    cpu_at_prepare: Option<u64>,
}

/// Most extensions of `park_bound` for a close whose every thread was signalled and whose
/// parked count keeps growing (threads waiting for the CPU behind higher-priority ones).
const PARK_EXTENSIONS: u32 = 3;

/// Copy the distinct entries of partition `st`'s thread table into `out` (negative: a thread
/// parked for good or still in the park handler, not to be signalled); return how many. The
/// table is the partition's own memory: whatever it holds, the executive only counts and
/// signals entries with the partition's pid.
fn thread_table(st: &PartitionState, out: &mut [i32; MAX_TIDS]) -> usize {
    let mut n = 0;
    for (e, parked) in st.tids.iter().zip(&st.tid_parked) {
        let t = e.load(Ordering::Acquire);
        if t != 0 && t != i32::MIN {
            // A thread still in the park handler (signal blocked) counts but is not signalled.
            out[n] = if parked.load(Ordering::Acquire) != 0 {
                -t.abs()
            } else {
                t
            };
            n += 1;
        }
    }
    out[..n].sort_unstable_by_key(|t| t.unsigned_abs());
    let mut d = 0;
    for i in 0..n {
        if d == 0 || out[d - 1].unsigned_abs() != out[i].unsigned_abs() {
            out[d] = out[i];
            d += 1;
        }
    }
    d
}

impl GateState {
    const NONE: GateState = GateState {
        held: false,
        by_signal: false,
        threads: 1,
        counted: false,
        cpu_at_park: None,
        distrusted: false,
        stat_fd: -1,
        check: None,
        prewoken: false,
        waits_at_prewake: 0,
        broadcast: false,
        parked_seen: 0,
        extensions: 0,
        withhold: false,
        waits_for_cpu: false,
        cpu_at_close: None,
        accepted_pending: false,
        no_pending: false,
        cpu_at_open: None,
        cpu_at_prepare: None,
    };
}

/// Controls partition processes with fork/exec, the futex gate or SIGSTOP/SIGCONT, and SIGKILL.
///
/// # The gate (default mechanism)
/// Close: the executive counts the process's threads (`gate_expect`, from the last count), makes
/// the partition's `gate` word even (closed) and sends the park signal ([`park_signal`]) to the
/// process. The partition's handler (installed by `PartitionContext::get`) parks the thread on
/// the gate with `FUTEX_WAIT` and passes the signal on until every thread is parked, then sets
/// `gate_acked`. `park_bound` after the close the executive verifies the acknowledgement against
/// the kernel's thread count and that the partition's cgroup holds no process it forked; a
/// partition that did not park by then (signal blocked or ignored, threads that never got the
/// CPU, a handler replaced, a forked process) is held — the backstop: its cgroup frozen
/// ([`super::cgroup`]), or `SIGSTOP` where it has none.
/// Open: the gate is made odd and one `FUTEX_WAKE` wakes the highest-priority parked thread,
/// which stamps the resume and wakes the next; a held process is thawed (or gets `SIGCONT`).
pub struct OsSwitcher<'s> {
    prepared: Vec<Prepared>,
    pids: Vec<i32>,
    module_fd: i32,
    /// The module configuration, read-only, for [`CONFIG_FD_NUM`] in every partition.
    config_fd: Option<OwnedFd>,
    seen_gen: u64,
    deaths: Vec<(usize, Death)>,
    /// Killed processes that had not ended yet when last looked at: (partition, pid).
    ending: Vec<(usize, i32)>,
    /// What new processes born in their cgroup report about joining their v1 holds.
    joins: ChildJoins,
    /// Whether new processes are made in their cgroup ([`Options::spawn_into_cgroup`]).
    into_cgroup: bool,
    /// How long each call of `spawn` took (bounded: [`SpawnTimes`]).
    pub spawns: SpawnTimes,
    shared: &'s SharedState,
    mechanism: SwitchMechanism,
    park_bound_ns: u64,
    gates: Vec<GateState>,
    /// Signals that failed (ESRCH on a process that just died is expected and not counted).
    pub signal_errors: u64,
    /// Closes done through the gate.
    pub parks: u64,
    /// Gate closes that were not acknowledged in time and ended with a hold.
    pub backstops: u64,
    /// [`OsSwitcher::backstops`] per partition.
    pub backstops_by_partition: Vec<u64>,
    /// Gate closes per partition at which the executive sent the park signal to each of the
    /// partition's threads itself (its thread table held them all).
    pub direct_closes_by_partition: Vec<u64>,
    /// Verified closes per partition that found threads not parked yet but with the park
    /// signal still pending (they had not run since the close: waiting for the CPU behind
    /// higher-priority threads): accepted, with the CPU-time audit, instead of a hold.
    pub pending_parks_by_partition: Vec<u64>,
    /// Closes per partition at which no park signal was sent, the last one still being queued
    /// (blocked by the partition; see `OsSwitcher::park_signal_queued`).
    pub withheld_by_partition: Vec<u64>,
    /// Partitions whose pending parks were turned off (an audit after one found more CPU time
    /// used than parking takes).
    pub pending_off_by_partition: Vec<bool>,
    /// Partitions that ran while they claimed to be parked (see `audit`): held at every close
    /// since.
    pub distrusted_by_partition: Vec<bool>,
    /// Each partition's cgroup (`None`: none could be made; its holds are SIGSTOPs).
    cgroups: Vec<Option<PartitionCgroup>>,
    /// Why partitions have no cgroup, if they have none.
    pub cgroup_error: Option<String>,
    /// Verified closes per partition at which its cgroup held another process than the
    /// partition's own (one it forked): held at once.
    pub strays_by_partition: Vec<u64>,
    /// Per partition with a memory limit: the control file of the memory cgroup that enforces
    /// it (`None`: only `RLIMIT_DATA` does; see [`PartitionCgroup::limit_memory`]).
    pub memory_cgroups: Vec<Option<&'static str>>,
    /// Why a partition's memory limit has no memory cgroup, if one has none.
    pub memory_error: Option<String>,
    /// Why a partition's CPUs are held by `sched_setaffinity` only (which it may change), if
    /// one's are.
    pub cpuset_error: Option<String>,
    /// Why partitions under `partix:User` keep `CAP_SYS_NICE` (`None`: they have no capability).
    pub users_keep_nice: Option<String>,
    /// Why partitions under `partix:User` cannot use `SCHED_FIFO` at all (`None`: they can).
    pub users_no_fifo: Option<String>,
    /// Confine partitions against `/proc` (`true`, the default; [`Options::debuggable`] is the
    /// opposite): each new process is non-dumpable until its exec, drops `CAP_SYS_PTRACE` and
    /// enters a Landlock domain of its own, and one that shares the executive's credentials is
    /// asked ([`ENV_DUMPABLE`]) to be non-dumpable again once it runs.
    confine: bool,
    /// Why a partition kept `CAP_SYS_PTRACE` or is not in a Landlock domain of its own
    /// (`None`: every partition dropped it and has one, or confinement is off).
    pub confine_error: Option<String>,
    /// Why partitions get no Landlock domain (`None`: they do, see `enter_landlock_domain`).
    pub landlock_error: Option<String>,
}

/// CPU time a partition may use between the verification of its park and its next open (the
/// last parked thread finishing its `FUTEX_WAIT` call) before the audit distrusts it.
const AUDIT_SLACK_NS: u64 = 100_000;

/// CPU time a partition whose unparked threads have their park signal pending may have used
/// since the close, besides [`PARK_CPU_NS`] per parked thread, for the close to be accepted as
/// a pending park (see `OsSwitcher::verify`).
const PENDING_SLACK_NS: u64 = 20_000;
/// CPU time allowed per parked thread for taking the park signal and parking.
const PARK_CPU_NS: u64 = 20_000;

/// Return whether signal `sig` is pending for the thread and not blocked by it, in a
/// `/proc/PID/task/TID/status` text (`SigPnd`, `SigBlk`: hexadecimal masks, bit `sig − 1`).
fn pending_unblocked(status: &[u8], sig: i32) -> bool {
    matches!(
        (
            has_signal(status, b"SigPnd", sig),
            has_signal(status, b"SigBlk", sig)
        ),
        (Some(true), Some(false))
    )
}

/// Whether the signal mask `key` (`SigPnd`, `ShdPnd`, `SigBlk`, …) of a `/proc/…/status` text
/// holds `sig` (`None`: no such line).
fn has_signal(status: &[u8], key: &[u8], sig: i32) -> Option<bool> {
    let at = status
        .windows(key.len() + 2)
        .position(|w| w[0] == b'\n' && &w[1..=key.len()] == key && w[key.len() + 1] == b':')?
        + key.len()
        + 2;
    let v = status[at..].split(|&b| b == b'\n').next()?;
    let mask = u64::from_str_radix(std::str::from_utf8(v).ok()?.trim(), 16).ok()?;
    Some(mask & (1u64 << (sig - 1)) != 0)
}

/// Read `/proc/{pid}/status` (`tid` 0) or `/proc/{pid}/task/{tid}/status` into `buf` without
/// allocating; return the bytes read (`None`: no such process or thread).
fn read_status(pid: i32, tid: i32, buf: &mut [u8; 2048]) -> Option<usize> {
    use std::io::Write as _;
    // The path in a stack buffer, NUL-terminated (no allocation on the executive's path).
    let mut path = [0u8; 64];
    let mut w = &mut path[..];
    let ok = if tid == 0 {
        write!(w, "/proc/{pid}/status\0")
    } else {
        write!(w, "/proc/{pid}/task/{tid}/status\0")
    };
    ok.ok()?;
    // SAFETY: path is NUL-terminated, buf a writable buffer of its length; the descriptor is
    // closed before returning.
    let n = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        n
    };
    (n > 0).then_some(n as usize)
}

/// Return the number of threads in a `/proc/PID/stat` text (field 20), if it parses.
fn stat_threads(text: &[u8]) -> Option<u32> {
    let close = text.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&text[close + 1..]).ok()?;
    rest.split_ascii_whitespace().nth(17)?.parse().ok()
}

/// Return the state letter of a `/proc/PID/status` text (`State:\tR (running)`: `R` running or
/// runnable, `S` sleeping, ...), if it has one.
fn status_state(text: &[u8]) -> Option<u8> {
    const KEY: &[u8] = b"\nState:";
    let at = text.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    text[at..]
        .iter()
        .copied()
        .find(|b| !b.is_ascii_whitespace())
}

/// CPU time (ns) a process may use in a window and still count as not having run in it
/// ([`Switcher::woken_but_not_run`]): a woken thread that finds the gate closed and waits again
/// uses a few µs.
const STARVED_CPU_NS: u64 = 50_000;

fn cstr(s: &OsStr) -> Result<CString, String> {
    CString::new(s.as_bytes()).map_err(|_| format!("{:?} contains a NUL byte", s))
}

impl<'s> OsSwitcher<'s> {
    /// Prepare to start `programs[i]` for `module.partitions[i]` on the CPUs of the partition's
    /// `partix:Affinity` or `default_cpus`.
    ///
    /// # Errors
    /// A message if a path or argument contains a NUL byte.
    pub fn new(
        module: &Module,
        shared: &'s SharedState,
        programs: &[Program],
        default_cpus: &[usize],
    ) -> Result<OsSwitcher<'s>, String> {
        install_sigchld();
        let base_env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
            .filter(|(k, _)| {
                k != ENV_MODULE_FD
                    && k != ENV_PARTITION_FD
                    && k != ENV_PARTITION_ID
                    && k != ENV_DESCRIPTOR_TABLE
                    && k != ENV_CONFIG
                    && k != ENV_CONFIG_FD
                    && k != ENV_DUMPABLE
            })
            .collect();
        // Partitions read their HM tables (and schedule names) from the configuration file.
        // They get it as a read-only descriptor too (a partition under its own user may not be
        // able to open the path); the path stays for messages.
        let mut config_fd = None;
        let config_env = match module.source.as_deref() {
            Some(src) => {
                let abs = std::fs::canonicalize(src).unwrap_or_else(|_| src.to_path_buf());
                config_fd = std::fs::File::open(&abs).ok().map(OwnedFd::from);
                let mut kv = format!("{ENV_CONFIG}=").into_bytes();
                kv.extend_from_slice(abs.as_os_str().as_bytes());
                Some(CString::new(kv).map_err(|_| format!("{}: NUL in path", abs.display()))?)
            }
            None => None,
        };
        // Partitions under their own user get SCHED_FIFO through RLIMIT_RTPRIO if it can be
        // raised, else by keeping CAP_SYS_NICE if the executive has it, else not at all.
        let mut users_no_fifo = None;
        let users_keep_nice = if module.partitions.iter().any(|p| p.user.is_some()) {
            match ensure_rtprio_limit() {
                Ok(()) => None,
                Err(why) if has_capability(CAP_SYS_NICE) => Some(why),
                Err(why) => {
                    users_no_fifo = Some(format!(
                        "{why}, and the executive has no CAP_SYS_NICE to leave them"
                    ));
                    None
                }
            }
        } else {
            None
        };
        let mut prepared = Vec::with_capacity(programs.len());
        for (i, (part, prog)) in module.partitions.iter().zip(programs).enumerate() {
            let path = cstr(prog.path.as_os_str())?;
            let mut argv = vec![path.clone()];
            for a in &prog.args {
                argv.push(cstr(OsStr::new(a))?);
            }
            let mut envp = Vec::with_capacity(base_env.len() + 5);
            for (k, v) in &base_env {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                if let Ok(c) = CString::new(kv) {
                    envp.push(c);
                }
            }
            envp.push(CString::new(format!("{ENV_MODULE_FD}={MODULE_FD_NUM}")).expect("no NUL"));
            envp.push(
                CString::new(format!("{ENV_PARTITION_FD}={PARTITION_FD_NUM}")).expect("no NUL"),
            );
            envp.push(CString::new(format!("{ENV_PARTITION_ID}={}", part.id.0)).expect("no NUL"));
            if part.descriptor_table == DescriptorTable::PerProcess {
                envp.push(
                    CString::new(format!("{ENV_DESCRIPTOR_TABLE}=per-process")).expect("no NUL"),
                );
            }
            if let Some(c) = &config_env {
                envp.push(c.clone());
            }
            if config_fd.is_some() {
                envp.push(
                    CString::new(format!("{ENV_CONFIG_FD}={CONFIG_FD_NUM}")).expect("no NUL"),
                );
            }
            // SAFETY: path is a valid C string; the descriptor (if any) is closed with the
            // switcher (`Drop`).
            let exe_fd = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
            // SAFETY: an all-zero cpu_set_t is the empty set.
            let mut cpus: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            let cpu_list = part.affinity.as_deref().unwrap_or(default_cpus).to_vec();
            for &c in &cpu_list {
                if c < libc::CPU_SETSIZE as usize {
                    // SAFETY: c is inside the set.
                    unsafe { libc::CPU_SET(c, &mut cpus) };
                }
            }
            let mut user = part.user.map(|u| (u.uid, u.gid));
            if let Some((uid, gid)) = user {
                // SAFETY: geteuid and getegid have no preconditions.
                let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
                if euid != 0 && (uid, gid) != (euid, egid) {
                    return Err(format!(
                        "partition `{}` has partix:User=\"{uid}:{gid}\", but the executive runs as user {euid}: \
                         run it as root to give partitions their own users",
                        part.name
                    ));
                }
                if euid != 0 {
                    // Already that user (and unprivileged): nothing to change, and nothing the
                    // child could change (dropping supplementary groups needs CAP_SETGID).
                    user = None;
                }
            }
            if user.is_none() {
                // It shares the executive's credentials: only its dumpability keeps the other
                // partitions out of its /proc/PID/fd and /proc/PID/mem (a partition under a
                // user of its own is out of their reach without CAP_SYS_PTRACE). execve makes
                // it dumpable again: its runtime makes it non-dumpable when it attaches.
                envp.push(CString::new(format!("{ENV_DUMPABLE}=0")).expect("no NUL"));
            }
            prepared.push(Prepared {
                exe_fd,
                argv,
                envp,
                cpus,
                mem_limit: part.memory_limit_bytes(),
                part_fd: shared.partition_fd(i),
                port_fds: Vec::new(),
                user,
                cpu_list,
                keep_nice: users_keep_nice.is_some(),
                name: part.name.clone(),
            });
        }
        let mut cgroup_error = None;
        let mut cgroups: Vec<Option<PartitionCgroup>> = (0..prepared.len())
            .map(|i| {
                PartitionCgroup::create(i)
                    .map_err(|e| cgroup_error = Some(e.to_string()))
                    .ok()
            })
            .collect();
        let mut memory_error = None;
        let mut memory_cgroups = vec![None; prepared.len()];
        for ((cg, pr), mem) in cgroups.iter_mut().zip(&prepared).zip(&mut memory_cgroups) {
            let Some(bytes) = pr.mem_limit else {
                continue;
            };
            match cg.as_mut().map(|cg| cg.limit_memory(bytes)) {
                Some(Ok(how)) => *mem = Some(how),
                Some(Err(e)) => memory_error = Some(e.to_string()),
                None => memory_error = cgroup_error.clone(),
            }
        }
        // The kernel holds each partition to its CPUs (a cpuset), not only its first
        // sched_setaffinity.
        let mut cpuset_error = None;
        for (cg, pr) in cgroups.iter_mut().zip(&prepared) {
            match cg.as_mut().map(|cg| cg.confine_cpus(&pr.cpu_list)) {
                Some(Ok(_)) => {}
                Some(Err(e)) => cpuset_error = Some(e.to_string()),
                None => cpuset_error = cgroup_error.clone(),
            }
        }
        Ok(OsSwitcher {
            cgroups,
            cgroup_error,
            memory_cgroups,
            memory_error,
            cpuset_error,
            users_keep_nice,
            users_no_fifo,
            confine: true,
            confine_error: None,
            landlock_error: landlock_abi().err(),
            strays_by_partition: vec![0; programs.len()],
            pids: vec![0; prepared.len()],
            gates: vec![GateState::NONE; prepared.len()],
            prepared,
            module_fd: shared.module_ro_fd(),
            config_fd,
            seen_gen: SIGCHLD_GEN.load(Ordering::Relaxed),
            deaths: Vec::with_capacity(programs.len()),
            ending: Vec::with_capacity(programs.len()),
            joins: ChildJoins::new(programs.len())?,
            into_cgroup: true,
            spawns: SpawnTimes::new(programs.len()),
            shared,
            mechanism: SwitchMechanism::default(),
            park_bound_ns: Options::default().park_bound.as_nanos() as u64,
            signal_errors: 0,
            parks: 0,
            backstops: 0,
            backstops_by_partition: vec![0; programs.len()],
            direct_closes_by_partition: vec![0; programs.len()],
            pending_parks_by_partition: vec![0; programs.len()],
            withheld_by_partition: vec![0; programs.len()],
            pending_off_by_partition: vec![false; programs.len()],
            distrusted_by_partition: vec![false; programs.len()],
        })
    }

    /// Make new processes in their cgroup (`true`, the default) or fork and move them
    /// ([`Options::spawn_into_cgroup`]).
    pub fn with_spawn_into_cgroup(mut self, into: bool) -> Self {
        self.into_cgroup = into;
        self
    }

    /// Confine partitions against `/proc` (`true`, the default) or leave them dumpable and
    /// with `CAP_SYS_PTRACE` for debugging (`false`, [`Options::debuggable`]).
    pub fn with_confinement(mut self, confine: bool) -> Self {
        self.confine = confine;
        if !confine {
            self.landlock_error = None;
            let var = format!("{ENV_DUMPABLE}=");
            for pr in &mut self.prepared {
                pr.envp
                    .retain(|kv| !kv.to_bytes().starts_with(var.as_bytes()));
            }
        }
        self
    }

    /// Use `mechanism` to stop and resume partitions; with the gate, a partition not parked
    /// `park_bound` after its close is SIGSTOPped.
    pub fn with_mechanism(mut self, mechanism: SwitchMechanism, park_bound: Duration) -> Self {
        self.mechanism = mechanism;
        self.park_bound_ns = park_bound.as_nanos() as u64;
        self
    }

    /// Count the threads of partition `p`'s process (`None`: unknown).
    fn count_threads(&self, p: usize) -> Option<u32> {
        let fd = self.gates[p].stat_fd;
        if fd < 0 {
            return None;
        }
        let mut buf = [0u8; 1024];
        // SAFETY: fd is our open /proc/PID/stat; buf is a valid writable buffer of its length.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n <= 0 {
            return None;
        }
        stat_threads(&buf[..n as usize])
    }

    /// [`Switcher::spawn`] without its timing.
    fn spawn_process(&mut self, p: usize) -> Result<i32, String> {
        if self.pids[p] > 0 || self.gates[p].stat_fd >= 0 {
            self.forget(p);
        }
        // The gate starts open and unused: the new process has not installed its park handler.
        let st = self.shared.partition(p);
        st.gate_ready.store(0, Ordering::Release);
        st.gate.store(1, Ordering::Relaxed);
        st.gate_expect.store(0, Ordering::Relaxed);
        st.gate_parked.store(0, Ordering::Relaxed);
        st.gate_broadcast.store(0, Ordering::Relaxed);
        // The previous process's threads are gone with it.
        for (e, parked) in st.tids.iter().zip(&st.tid_parked) {
            e.store(0, Ordering::Relaxed);
            parked.store(0, Ordering::Relaxed);
        }
        st.gate_acked.store(0, Ordering::Release);
        // What the previous process of the partition reported, before its slots are reused.
        self.collect_joins();
        let into_cgroup = self.into_cgroup;
        // Thawed first (a kill leaves it frozen): a process born in a frozen cgroup would never
        // reach its stop, and the wait for it would hold the executive. One that cannot be
        // thawed is given up (as one that cannot be made).
        if let Some(cg) = self.cgroups[p].as_mut() {
            cg.thaw();
            if cg.is_frozen() {
                let why = format!("{}: cannot thaw it", cg.path().display());
                self.give_up_cgroup(p, why);
            }
        }
        let into = self.cgroups[p]
            .as_ref()
            .and_then(|cg| cg.dir_fd().map(|fd| (fd, cg.v1_tasks_fds())));
        let v1 = into.map_or([-1, -1], |(_, v1)| v1);
        let pr = &self.prepared[p];
        let mut argv: Vec<*const libc::c_char> = pr.argv.iter().map(|c| c.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = pr.envp.iter().map(|c| c.as_ptr()).collect();
        envp.push(std::ptr::null());
        let (mfd, pfd) = (self.module_fd, pr.part_fd);
        let cfd = self.config_fd.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        let efd = pr.exe_fd;
        let port_fds = &pr.port_fds;
        let mut port_tmp = vec![-1i32; port_fds.len()];
        let high = descriptor_floor(port_fds);
        let cpus = pr.cpus;
        let lim = pr.mem_limit.map(|b| libc::rlimit {
            rlim_cur: b as libc::rlim_t,
            rlim_max: b as libc::rlim_t,
        });
        let user = pr.user;
        let keep_nice = pr.keep_nice;
        let cap_header = CapHeader {
            version: CAP_VERSION_3,
            pid: 0,
        };
        let nice = CapData {
            effective: 1 << CAP_SYS_NICE,
            permitted: 1 << CAP_SYS_NICE,
            inheritable: 1 << CAP_SYS_NICE,
        };
        let none = CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        };
        let cap_data = [nice, none];
        let rtprio = libc::rlimit {
            rlim_cur: PARTITION_RTPRIO_MAX as libc::rlim_t,
            rlim_max: PARTITION_RTPRIO_MAX as libc::rlim_t,
        };
        let join_errors = self.joins.slots(p);
        let confine = self.confine;
        let landlock = confine && self.landlock_error.is_none();
        let [confine_slot, landlock_slot] = self.joins.confine_slots(p);
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: between fork (or clone3) and execve the child only calls async-signal-safe
        // functions (sigprocmask, signal, setpgid, prctl, getppid, fcntl, dup2, close, setrlimit,
        // sched_setaffinity, raw capget/capset/setgroups/setresgid/setresuid/landlock system
        // calls, open and close of `/`, raise, write,
        // execve, _exit), reads errno and stores into the shared `ChildJoins` atomics, all on
        // data prepared before the fork; the parent only waits for the child. After a raw
        // clone3, libc's cached thread id in the child is the parent thread's: none of these
        // calls uses it (glibc's raise asks the kernel for the thread id; a libc whose raise
        // used the cache would stop the executive's thread instead).
        unsafe {
            // Born in the partition's cgroup where the kernel can (Linux 5.7), else forked and
            // moved there below.
            let (pid, born_in_cgroup) = match into
                .filter(|_| into_cgroup)
                .and_then(|(fd, _)| clone_into_cgroup(fd))
            {
                Some(pid) => (pid, true),
                None => (libc::fork(), false),
            };
            if pid < 0 {
                return Err(format!("fork failed: {}", std::io::Error::last_os_error()));
            }
            if pid == 0 {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
                // Its own process group: a Ctrl-C on the terminal reaches the executive only
                // (which then ends the run cleanly), not the partitions.
                libc::setpgid(0, 0);
                // Nothing of partix's own process state beyond what the partition is given: the
                // Rust runtime ignores SIGPIPE, and an ignored signal stays ignored across
                // execve; and descriptors partix inherited without close-on-exec would reach
                // every partition, under its own user too (found by review). The descriptors
                // the partition gets are made below, after this.
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                // Likewise the job-control signals `stop_on_signals` ignores.
                libc::signal(libc::SIGTTOU, libc::SIG_DFL);
                libc::signal(libc::SIGTTIN, libc::SIG_DFL);
                mark_inherited_cloexec(true);
                // If the executive dies without cleaning up, the partition dies with it.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(125);
                }
                // Every descriptor the child keeps goes first above every target number, then
                // onto its target: a source numbered like a target (an executive with some
                // hundred descriptors open) was overwritten by the dup2 onto that target before
                // it was moved, and the partition got another region (found by review).
                let tm = libc::fcntl(mfd, libc::F_DUPFD_CLOEXEC, high);
                let tp = libc::fcntl(pfd, libc::F_DUPFD_CLOEXEC, high);
                let tc = if cfd >= 0 {
                    libc::fcntl(cfd, libc::F_DUPFD_CLOEXEC, high)
                } else {
                    -2
                };
                let te = if efd >= 0 {
                    libc::fcntl(efd, libc::F_DUPFD_CLOEXEC, high)
                } else {
                    -2
                };
                if tm < 0 || tp < 0 || tc == -1 || te == -1 {
                    libc::_exit(126);
                }
                for (t, &(src, _)) in port_tmp.iter_mut().zip(port_fds) {
                    *t = libc::fcntl(src, libc::F_DUPFD_CLOEXEC, high);
                    if *t < 0 {
                        libc::_exit(126);
                    }
                }
                // The v1 holds' `tasks` files too, which the child writes after the moves: one
                // numbered like a target wrote its "0" into the region dup2 put there (the
                // partition's magic became "0ARTIX01", and it refused to attach).
                let mut v1 = v1;
                for fd in v1.iter_mut().filter(|fd| **fd >= 0) {
                    *fd = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, high);
                    if *fd < 0 {
                        libc::_exit(126);
                    }
                }
                if libc::dup2(tm, MODULE_FD_NUM) < 0
                    || libc::dup2(tp, PARTITION_FD_NUM) < 0
                    || (tc >= 0 && libc::dup2(tc, CONFIG_FD_NUM) < 0)
                {
                    libc::_exit(126);
                }
                libc::close(tm);
                libc::close(tp);
                if tc >= 0 {
                    libc::close(tc);
                }
                for (&t, &(_, dst)) in port_tmp.iter().zip(port_fds) {
                    if libc::dup2(t, dst) < 0 {
                        libc::_exit(126);
                    }
                    libc::close(t);
                }
                let efd = if te >= 0 { te } else { efd };
                if let Some(l) = lim {
                    libc::setrlimit(libc::RLIMIT_DATA, &l);
                }
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &cpus);
                libc::setrlimit(libc::RLIMIT_RTPRIO, &rtprio);
                if confine {
                    // Out of every other process's reach through /proc while it holds its
                    // descriptors before exec (it inherited the non-dumpable executive's flag;
                    // set again in case it did not), and unable to reach theirs: without
                    // CAP_SYS_PTRACE, not even from its bounding set, so that no exec gives it
                    // back. The exec makes the process dumpable again; its runtime undoes that.
                    libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
                    if let Err(e) = drop_ptrace_capability() {
                        confine_slot.store(e, Ordering::Release);
                    }
                }
                if let Some((uid, gid)) = user {
                    // partix:User: no supplementary groups, then the group, then the user (which
                    // drops every capability). Raw system calls: glibc's wrappers would try to
                    // change the credentials of threads this forked child does not have.
                    if keep_nice {
                        libc::prctl(libc::PR_SET_KEEPCAPS, 1, 0, 0, 0);
                    }
                    if libc::syscall(libc::SYS_setgroups, 0, std::ptr::null::<libc::gid_t>()) != 0
                        || libc::syscall(libc::SYS_setresgid, gid, gid, gid) != 0
                        || libc::syscall(libc::SYS_setresuid, uid, uid, uid) != 0
                    {
                        libc::_exit(EXIT_CREDENTIALS);
                    }
                    // Without RLIMIT_RTPRIO, CAP_SYS_NICE alone, made ambient so that it
                    // survives the exec of an ordinary program.
                    if keep_nice
                        && (libc::syscall(libc::SYS_capset, &cap_header, cap_data.as_ptr()) != 0
                            || libc::prctl(
                                libc::PR_CAP_AMBIENT,
                                libc::PR_CAP_AMBIENT_RAISE,
                                CAP_SYS_NICE as libc::c_ulong,
                                0,
                                0,
                            ) != 0)
                    {
                        libc::_exit(EXIT_CREDENTIALS);
                    }
                    // A change of credentials clears the parent-death signal: set it again, and
                    // check the executive did not die in between.
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    if libc::getppid() != parent {
                        libc::_exit(125);
                    }
                }
                // Neither a set-user-ID program nor file capabilities can give the partition
                // more privileges than it has now.
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                // A Landlock domain of its own (which needs NO_NEW_PRIVS): out of reach of
                // every other partition, and the executive out of its reach, through /proc.
                if landlock {
                    if let Err(e) = enter_landlock_domain() {
                        landlock_slot.store(e, Ordering::Release);
                    }
                }
                // Until here the child runs at the executive's SCHED_FIFO 99, so it reaches the
                // stop at once even when other real-time load shares the CPU; once let go it
                // becomes a normal task before exec (the partition runtime raises its threads).
                libc::raise(libc::SIGSTOP);
                // Born in its cgroup: it joins its v1 holds (memory, cpuset) itself, once let
                // go, in its own window, before its program runs. Each join moves it between
                // cgroups, which can wait for an RCU grace period (see
                // `PartitionCgroup::dir_fd`); the executive made that wait until now.
                if born_in_cgroup {
                    for (fd, slot) in v1.iter().zip(join_errors) {
                        if *fd >= 0 && libc::write(*fd, b"0".as_ptr().cast(), 1) != 1 {
                            let e = std::io::Error::last_os_error().raw_os_error();
                            slot.store(e.unwrap_or(libc::EIO), Ordering::Release);
                        }
                    }
                }
                let normal = libc::sched_param { sched_priority: 0 };
                libc::sched_setscheduler(0, libc::SCHED_OTHER, &normal);
                // The executive's RT watchdog (RLIMIT_RTTIME, see RtThread) is not the
                // partition's: its threads may run in their windows as long as they like.
                let mut rt = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::getrlimit(libc::RLIMIT_RTTIME, &mut rt);
                rt.rlim_cur = rt.rlim_max;
                libc::setrlimit(libc::RLIMIT_RTTIME, &rt);
                if efd >= 0 {
                    libc::syscall(
                        libc::SYS_execveat,
                        efd,
                        c"".as_ptr(),
                        argv.as_ptr(),
                        envp.as_ptr(),
                        libc::AT_EMPTY_PATH,
                    );
                }
                // No descriptor, or a script (its interpreter cannot open a close-on-exec
                // descriptor): by path.
                libc::execve(argv[0], argv.as_ptr(), envp.as_ptr());
                libc::_exit(127);
            }
            let mut status = 0;
            let r = libc::waitpid(pid, &mut status, libc::WUNTRACED);
            if r != pid || !libc::WIFSTOPPED(status) {
                if r == pid
                    && libc::WIFEXITED(status)
                    && libc::WEXITSTATUS(status) == EXIT_CREDENTIALS
                {
                    let (uid, gid) = user.unwrap_or_default();
                    return Err(format!(
                        "the new process could not take user {uid} and group {gid} (partix:User): \
                         the executive needs root (CAP_SETUID, CAP_SETGID)"
                    ));
                }
                return Err(format!(
                    "the new process ended before exec ({})",
                    Death::from_wait_status(status).map_or("?".into(), |d| d.to_string())
                ));
            }
            self.pids[p] = pid;
            let e = landlock_slot.swap(0, Ordering::AcqRel);
            if e != 0 {
                self.confine_error = Some(format!(
                    "partition `{}` has no Landlock domain ({}): it can open the executive's \
                     and other partitions' descriptors through /proc while they are dumpable",
                    self.prepared[p].name,
                    std::io::Error::from_raw_os_error(e)
                ));
            }
            let e = confine_slot.swap(0, Ordering::AcqRel);
            if e != 0 {
                self.confine_error = Some(format!(
                    "partition `{}` keeps CAP_SYS_PTRACE ({}): it can open the executive's and \
                     other partitions' descriptors through /proc",
                    self.prepared[p].name,
                    std::io::Error::from_raw_os_error(e)
                ));
            }
            // Into the partition's cgroup before exec: every thread and process it makes later
            // is born there.
            if let Some(cg) = self.cgroups[p].as_mut().filter(|_| !born_in_cgroup) {
                if let Err(e) = cg.add(pid) {
                    // Not in the cgroup: dropping it (and its v1 holds) touches nothing of
                    // the process.
                    let why = format!("{}: {e}", cg.path().display());
                    self.give_up_cgroup(p, why);
                } else {
                    // A v1 hold that refuses the process is given up alone: the cgroup, with
                    // the process in it, stays (dropping it would kill the process).
                    let (memory, cpuset) = cg.add_v1(pid);
                    if let Some(e) = memory {
                        self.memory_error = Some(format!("v1 memory cgroup: {e}"));
                        self.memory_cgroups[p] = None;
                    }
                    if let Some(e) = cpuset {
                        self.cpuset_error = Some(format!("v1 cpuset cgroup: {e}"));
                    }
                }
            }
            let path = CString::new(format!("/proc/{pid}/stat")).expect("no NUL in a number");
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            // What the audits learnt about the partition survives its restarts (a restart it
            // asks for itself must not clear them): a partition found running while it claimed
            // to be parked stays held at every close, and one whose pending parks were turned
            // off keeps them off.
            self.gates[p] = GateState {
                held: true,
                by_signal: true,
                stat_fd: fd,
                distrusted: self.distrusted_by_partition[p],
                no_pending: self.pending_off_by_partition[p],
                ..GateState::NONE
            };
            Ok(pid)
        }
    }

    /// Give up partition `p`'s cgroup (`why`: it could not be thawed, or the process could not
    /// be put in it) and everything it held: its memory limit (`memory.max`, or its v1 memory
    /// cgroup) and its cpuset go with it, so the report must no longer claim them (found by
    /// review: `memory_cgroups[p]` stayed `Some`, and no `cpuset_error` was set).
    fn give_up_cgroup(&mut self, p: usize, why: String) {
        if self.memory_cgroups[p].take().is_some() {
            self.memory_error = Some(format!("partition cgroup given up: {why}"));
        }
        self.cpuset_error = Some(format!("partition cgroup given up: {why}"));
        self.cgroup_error = Some(why);
        self.cgroups[p] = None;
    }

    /// The directory of partition `p`'s cgroup, if it has one.
    pub fn cgroup_path(&self, p: usize) -> Option<&std::path::Path> {
        self.cgroups[p].as_ref().map(PartitionCgroup::path)
    }

    /// Take what processes born in their cgroup reported about joining their v1 holds: a hold
    /// one could not join is given up, as when the executive moves a process itself.
    pub fn collect_joins(&mut self) {
        for p in 0..self.cgroups.len() {
            let [memory, cpuset] = self.joins.slots(p);
            let (m, c) = (
                memory.swap(0, Ordering::AcqRel),
                cpuset.swap(0, Ordering::AcqRel),
            );
            if m == 0 && c == 0 {
                continue;
            }
            if let Some(cg) = self.cgroups[p].as_mut() {
                cg.give_up_v1(m != 0, c != 0);
            }
            if m != 0 {
                let e = std::io::Error::from_raw_os_error(m);
                self.memory_error = Some(format!("v1 memory cgroup: {e}"));
                self.memory_cgroups[p] = None;
            }
            if c != 0 {
                let e = std::io::Error::from_raw_os_error(c);
                self.cpuset_error = Some(format!("v1 cpuset cgroup: {e}"));
            }
        }
    }

    /// Drop the killed processes that have ended from [`OsSwitcher::ending`], and reap them.
    fn look_at_ending(&mut self) {
        self.ending.retain(|&(_, pid)| match peek_child(pid) {
            Child::Running => true,
            Child::Ended(_) => {
                reap_later(pid);
                false
            }
            Child::Gone => false,
        });
    }

    /// Wait until every killed process has ended, at most until `deadline` (`CLOCK_MONOTONIC`
    /// ns), with short real sleeps (they need this CPU to die). One still alive then is
    /// reaped by a thread of its own whenever it ends.
    fn settle(&mut self, deadline: u64) {
        loop {
            self.look_at_ending();
            if self.ending.is_empty() {
                return;
            }
            if monotonic_ns() > deadline {
                break;
            }
            nanosleep_abs(monotonic_ns() + 100_000);
        }
        for (_, pid) in self.ending.drain(..) {
            // Without a thread, it stays a zombie until the executive's process ends.
            let _ = std::thread::Builder::new()
                .name("partix-reap-late".into())
                .spawn(move || {
                    become_normal_task();
                    reap(pid, 0);
                });
        }
    }

    /// Forget partition `p`'s process (it ended, or was just killed); processes it forked are
    /// killed too: its cgroup's, and its process group's (the partition's process leads a
    /// group of its own; a process it forked stays in it unless it moves), which also reaches
    /// them where the partition has no cgroup (before, nothing ended them there: they ran on
    /// beside a restarted partition, and after the run; review 26). The process has not been
    /// reaped yet (a zombie at most), so its pid, and so its group's id, cannot have been
    /// reused.
    fn forget(&mut self, p: usize) {
        if let Some(cg) = self.cgroups[p].as_mut() {
            cg.kill();
        }
        let pid = self.pids[p];
        if pid > 0 {
            // SAFETY: kill has no memory preconditions; -pid is the group the partition's
            // unreaped process leads (setpgid in the child before exec).
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let fd = self.gates[p].stat_fd;
        if fd >= 0 {
            // SAFETY: closing our own descriptor once.
            unsafe { libc::close(fd) };
        }
        self.gates[p] = GateState::NONE;
        self.pids[p] = 0;
    }

    /// Return the CPU time (ns) partition `p`'s process has used, if it can be read.
    fn cpu_time(&self, p: usize) -> Option<u64> {
        let pid = self.pids[p];
        if pid <= 0 {
            return None;
        }
        let mut clk: libc::clockid_t = 0;
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid out-pointers; pid is our child.
        let ok = unsafe {
            libc::clock_getcpuclockid(pid, &mut clk) == 0 && libc::clock_gettime(clk, &mut ts) == 0
        };
        ok.then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    /// Audit partition `p` before its gate opens: a process whose park was verified must not
    /// have used CPU time since (beyond a few µs of leaving the handler). One that did — its
    /// acknowledgement was forged, or a thread it hid kept running — is stopped with SIGSTOP at
    /// every close from now on.
    /// Return the CPU time it read, if any.
    fn audit(&mut self, p: usize) -> Option<u64> {
        let before = self.gates[p].cpu_at_park.take()?;
        let read = self.cpu_time(p);
        if let Some(now) = read {
            if now.saturating_sub(before) > AUDIT_SLACK_NS {
                if self.gates[p].accepted_pending {
                    // The park was accepted as pending, and the threads then used more than
                    // parking takes. Seen with benign partitions too (the demo's VSP under
                    // load: 100–180 µs between taking the signal and the futex wait, not
                    // explained), so not distrust: no more pending parks for this process;
                    // its waiting closes are held, as before they existed.
                    self.gates[p].no_pending = true;
                    self.pending_off_by_partition[p] = true;
                } else {
                    self.gates[p].distrusted = true;
                    self.distrusted_by_partition[p] = true;
                }
            }
        }
        read
    }

    /// Open partition `p`: its gate with the start time `at` (`CLOCK_MONOTONIC` ns, 0: at once;
    /// a thread woken earlier busy-waits for it in the park handler), or `SIGCONT`.
    fn open_gate(&mut self, p: usize, at: u64) {
        if self.pids[p] <= 0 {
            return;
        }
        // A close still waiting for its check is moot: the window opens now.
        self.gates[p].check = None;
        let mut cpu = self.gates[p].cpu_at_prepare.take();
        if !self.gates[p].prewoken && !self.gates[p].held {
            // Not audited in prepare_open (no lead, or an early switch): audit now.
            if let Some(c) = self.audit(p) {
                cpu.get_or_insert(c);
            }
        }
        if self.mechanism == SwitchMechanism::Gate {
            let st = self.shared.partition(p);
            let g = st.gate.load(Ordering::Relaxed);
            if g & 1 == 0 {
                st.gate_open_at_ns.store(at, Ordering::Relaxed);
                // SYNC POINT: Release pairs with the park handler's Acquire load of the gate;
                // gate_open_at_ns is visible with it.
                st.gate.store(g.wrapping_add(1), Ordering::Release);
                // A thread woken ahead of the open (`prepare_open`) that found the gate still
                // closed (it ran on another CPU, or this thread blocked in the point) waits
                // again: wake it too. The fence pairs with the waiter's SeqCst count before
                // its wait (see `PartitionState::gate_waits`).
                std::sync::atomic::fence(Ordering::SeqCst);
                let rewaited =
                    st.gate_waits.load(Ordering::Relaxed) != self.gates[p].waits_at_prewake;
                if !self.gates[p].prewoken || rewaited {
                    futex::wake(&st.gate, 1);
                }
            }
        }
        self.gates[p].prewoken = false;
        if self.gates[p].held {
            self.release(p);
        }
        if self.mechanism == SwitchMechanism::Gate {
            // Not read in the lead (none, or a hold): read it now, after the wake, off the
            // partition's path.
            self.gates[p].cpu_at_open = cpu.or_else(|| self.cpu_time(p));
        }
    }

    /// Hold partition `p` outside its windows whatever its threads do (the backstop): freeze
    /// its cgroup, or `SIGSTOP` it where it has none (or the freeze failed).
    fn hold(&mut self, p: usize) {
        if self.pids[p] <= 0 || self.gates[p].held {
            return;
        }
        let frozen = self.cgroups[p]
            .as_mut()
            .is_some_and(|cg| cg.freeze().is_ok());
        if !frozen {
            self.signal(p, libc::SIGSTOP);
            self.gates[p].by_signal = true;
        }
        self.gates[p].held = true;
    }

    /// End the hold of partition `p`: thaw its cgroup, and `SIGCONT` it. After a `SIGSTOP` the
    /// `SIGCONT` resumes it; after a freeze it only runs the runtime's handler, which stamps the
    /// resume (a thread that never parked passes no gate to stamp it), so that the windows that
    /// open after a hold still have their PtswO sample.
    fn release(&mut self, p: usize) {
        let frozen = self.cgroups[p].as_ref().is_some_and(|cg| cg.is_frozen());
        if let Some(cg) = self.cgroups[p].as_mut() {
            cg.thaw();
            // A cgroup the kernel refuses to thaw keeps the partition held, and nothing here can
            // undo that: it is reported (in the run's report and summary), not silently kept
            // (found by review).
            if cg.is_frozen() && self.cgroup_error.is_none() {
                self.cgroup_error = Some(format!(
                    "{}: cannot thaw it: the partition stays held",
                    cg.path().display()
                ));
            }
        }
        if self.gates[p].by_signal || frozen {
            self.signal(p, libc::SIGCONT);
        }
        self.gates[p].held = false;
        self.gates[p].by_signal = false;
    }

    /// Verify the close of partition `p` (closed gate value `closed`): every thread the kernel
    /// counts is parked, the partition acknowledged this close, and its cgroup holds no other
    /// process. Otherwise hold it (freeze or SIGSTOP).
    fn verify(&mut self, p: usize, closed: u32) {
        let st = self.shared.partition(p);
        let threads = self.count_threads(p);
        if let Some(t) = threads {
            self.gates[p].threads = t;
            self.gates[p].counted = true;
        }
        let acked = st.gate_acked.load(Ordering::Acquire) == closed;
        let parked = st.gate_parked.load(Ordering::Acquire);
        // A process the partition forked: no park reaches it.
        let stray = self.cgroups[p]
            .as_ref()
            .and_then(|cg| cg.holds_only(self.pids[p]))
            == Some(false);
        if stray {
            self.strays_by_partition[p] += 1;
        }
        let ok = acked && !stray && threads.is_some_and(|t| parked >= t);
        let g = &mut self.gates[p];
        if !ok
            && !stray
            && !acked
            && g.broadcast
            && parked > g.parked_seen
            && g.extensions < PARK_EXTENSIONS
            && !g.held
        {
            // Every thread was signalled (none runs partition code before it parks, bar the
            // end of a sampling write) and more parked since the last look: threads waiting
            // for the CPU behind higher-priority ones. Look again one park bound later.
            g.parked_seen = parked;
            g.extensions += 1;
            g.check = Some((closed, monotonic_ns() + self.park_bound_ns));
            return;
        }
        let (broadcast, held) = (g.broadcast, g.held);
        if ok {
            self.gates[p].waits_for_cpu = false;
        }
        self.gates[p].accepted_pending = false;
        if !ok && !stray && broadcast && !held && !self.gates[p].no_pending && self.parks_pending(p)
        {
            // Every thread not parked still has its park signal pending: none has been back in
            // user space since the close (the kernel delivers a pending, unblocked signal on
            // every return to it), so each parks before it runs partition code again. But a
            // thread inside a long system call has it pending too, while it runs in the
            // kernel: so only if the process has used no more CPU time since the close than
            // the parking of the others takes (they wait for the CPU). Accepted like a park,
            // under the same CPU-time audit before the next open. The close's CPU time is only
            // read for a partition that waited like this before: its first such close is held.
            let now = self.cpu_time(p);
            let slack = PENDING_SLACK_NS + PARK_CPU_NS * u64::from(parked);
            let idle = matches!((self.gates[p].cpu_at_close, now),
                (Some(c), Some(n)) if n.saturating_sub(c) <= slack);
            self.gates[p].waits_for_cpu = true;
            if idle {
                self.gates[p].accepted_pending = true;
                self.pending_parks_by_partition[p] += 1;
                self.gates[p].cpu_at_park = now;
                return;
            }
        }
        self.gates[p].cpu_at_park = if ok { self.cpu_time(p) } else { None };
        if !ok && !self.gates[p].held {
            self.gates[p].withhold = self.park_signal_queued(p);
            self.hold(p);
            self.backstops += 1;
            self.backstops_by_partition[p] += 1;
        }
    }

    /// Return whether every thread of partition `p` not parked (by its thread table, which must
    /// hold exactly the threads the kernel counted) has the park signal pending and unblocked:
    /// one `pread` of `/proc/PID/task/TID/status` per such thread, on a verification that found
    /// the close not acknowledged. The table is the partition's memory: a tid that is not one of
    /// the partition's threads fails the read; a thread it marks parked while it runs is the
    /// CPU-time audit's to catch, as a forged `gate_parked` is.
    fn parks_pending(&self, p: usize) -> bool {
        self.each_unparked_thread(p, |status| pending_unblocked(status, park_signal()))
    }

    /// Return whether `f` holds for the `/proc/PID/task/TID/status` of every thread of partition
    /// `p` not parked, by its thread table, which must hold exactly the threads the kernel
    /// counted (false otherwise, or if a status cannot be read).
    fn each_unparked_thread(&self, p: usize, mut f: impl FnMut(&[u8]) -> bool) -> bool {
        let st = self.shared.partition(p);
        let mut tids = [0i32; MAX_TIDS];
        let n = thread_table(st, &mut tids);
        if !self.gates[p].counted || n != self.gates[p].threads as usize {
            return false;
        }
        let pid = self.pids[p];
        tids[..n].iter().filter(|&&t| t > 0).all(|&tid| {
            let mut buf = [0u8; 2048];
            read_status(pid, tid, &mut buf).is_some_and(|n| f(&buf[..n]))
        })
    }

    /// Return whether partition `p`'s park signal is still queued from the close just verified
    /// and not taken: for each unparked thread (a close that signalled them one by one), or
    /// for the process (the handlers' chain). Sending another would only queue a second one:
    /// real-time signals queue one entry each, against the limit of pending signals that every
    /// process of the same user shares (`RLIMIT_SIGPENDING`, 96365 here), so a partition that
    /// blocks the park signal would otherwise use up, one close at a time, what other
    /// partitions' park signals need.
    fn park_signal_queued(&self, p: usize) -> bool {
        let sig = park_signal();
        if self.gates[p].broadcast {
            self.each_unparked_thread(p, |status| has_signal(status, b"SigPnd", sig) == Some(true))
        } else {
            let mut buf = [0u8; 2048];
            read_status(self.pids[p], 0, &mut buf)
                .is_some_and(|n| has_signal(&buf[..n], b"ShdPnd", sig) == Some(true))
        }
    }

    /// Hand each partition exactly its ports' channel regions (descriptors and
    /// [`ENV_PORT_FDS`]); `channels` must outlive the switcher.
    pub fn with_channels(mut self, channels: &ChannelSet) -> OsSwitcher<'s> {
        for (p, pr) in self.prepared.iter_mut().enumerate() {
            let key = format!("{ENV_PORT_FDS}=");
            pr.envp
                .retain(|kv| !kv.as_bytes().starts_with(key.as_bytes()));
            let v = format!("{key}{}", channels.env_value(p));
            pr.envp
                .push(CString::new(v).expect("port names are percent-encoded"));
            pr.port_fds = channels.child_fds(p);
        }
        self
    }

    /// Return the descriptor numbers a partition's process may need: above the highest target
    /// (`descriptor_floor`), room for the temporary copies the child makes, and for the
    /// partition's own copies of its ports' descriptors and its work.
    pub fn descriptor_need(&self) -> u64 {
        self.prepared
            .iter()
            .map(|pr| descriptor_floor(&pr.port_fds) as u64 + 2 * pr.port_fds.len() as u64 + 256)
            .max()
            .unwrap_or(0)
    }

    /// Processes of each partition the kernel killed for its memory limit.
    pub fn oom_kills(&self) -> Vec<u64> {
        self.cgroups
            .iter()
            .map(|cg| {
                cg.as_ref()
                    .and_then(PartitionCgroup::oom_kills)
                    .unwrap_or(0)
            })
            .collect()
    }

    /// Return the pid of partition `p`'s process (0 if none).
    pub fn pid(&self, p: usize) -> i32 {
        self.pids[p]
    }

    fn signal(&mut self, p: usize, sig: i32) {
        let pid = self.pids[p];
        if pid > 0 && sig == libc::SIGSTOP {
            // Also to each thread of the partition's thread table. A process-directed SIGSTOP is
            // taken by one thread the kernel picks (the main thread first), and the group stops
            // only when that thread runs: behind a spinning thread of the same SCHED_FIFO
            // priority on the partition's CPU it never does. Sent to the thread that runs, it
            // stops the group at once.
            for e in self.shared.partition(p).tids.iter() {
                let tid = e.load(Ordering::Acquire).unsigned_abs() as i32;
                if tid > 0 {
                    // SAFETY: tgkill has no memory preconditions; with the partition's pid it
                    // reaches only the partition's own threads.
                    unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGSTOP) };
                }
            }
        }
        if pid > 0 {
            // SAFETY: kill has no memory-safety preconditions; pid is our own child.
            if unsafe { libc::kill(pid, sig) } != 0 {
                self.signal_errors += 1;
            }
        }
    }
}

impl Switcher for OsSwitcher<'_> {
    fn spawn(&mut self, p: usize) -> Result<i32, String> {
        let t0 = monotonic_ns();
        let r = self.spawn_process(p);
        self.spawns.record(monotonic_ns() - t0);
        r
    }

    fn stop(&mut self, p: usize) {
        self.gates[p].prewoken = false;
        self.gates[p].cpu_at_open = None;
        if self.pids[p] <= 0 || self.gates[p].held {
            return;
        }
        let st = self.shared.partition(p);
        if self.mechanism == SwitchMechanism::Signals {
            self.signal(p, libc::SIGSTOP);
            self.gates[p].held = true;
            self.gates[p].by_signal = true;
            return;
        }
        if self.gates[p].distrusted || st.gate_ready.load(Ordering::Acquire) == 0 {
            self.hold(p);
            return;
        }
        if !self.gates[p].counted {
            // The first close of this process (at the end of its initialisation): count its
            // threads now rather than let the first park chain stop short.
            if let Some(t) = self.count_threads(p) {
                self.gates[p].threads = t;
                self.gates[p].counted = true;
            }
        }
        let g = st.gate.load(Ordering::Relaxed);
        let closed = if g & 1 == 1 {
            g.wrapping_add(1)
        } else {
            g.wrapping_add(2)
        };
        // The partition's thread table, when it holds every thread the kernel counted: then the
        // park signal goes to each thread at once, not along the handlers' chain (one thread
        // after the other, each needing the CPU in turn: with 30 processes that chain outlasts
        // the park bound when the next partition runs on the same CPU).
        let mut tids = [0i32; MAX_TIDS];
        let n = thread_table(st, &mut tids);
        let broadcast = self.gates[p].counted && n == self.gates[p].threads as usize;
        st.gate_broadcast
            .store(u32::from(broadcast), Ordering::Relaxed);
        self.gates[p].broadcast = broadcast;
        self.gates[p].parked_seen = st.gate_parked.load(Ordering::Relaxed);
        self.gates[p].extensions = 0;
        st.gate_expect
            .store(self.gates[p].threads, Ordering::Relaxed);
        // SYNC POINT: the Release store of the closed gate pairs with the park handler's Acquire
        // load; gate_expect and gate_broadcast are visible with it.
        st.gate.store(closed, Ordering::Release);
        if std::mem::take(&mut self.gates[p].withhold) {
            // The last close's park signal is still queued, blocked: it parks the partition
            // when taken (the gate is closed again), and the backstop holds it meanwhile.
            self.withheld_by_partition[p] += 1;
        } else if broadcast {
            self.direct_closes_by_partition[p] += 1;
            let pid = self.pids[p];
            let mut missed = false;
            // Negative entries (parked for good, or still parked from an earlier close, with
            // the signal blocked) are counted in gate_parked already.
            for &tid in tids[..n].iter().filter(|&&t| t > 0) {
                // SAFETY: tgkill has no memory preconditions; with the partition's pid it can
                // reach only the partition's own threads, and fails for a thread that ended.
                missed |= unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, park_signal()) } != 0;
            }
            if missed {
                // An entry of a thread that ended stood for one the table lacks (the counts
                // matched): the process-directed signal reaches that one.
                self.signal(p, park_signal());
            }
        } else {
            self.signal(p, park_signal());
        }
        self.gates[p].cpu_at_close = if self.gates[p].waits_for_cpu {
            self.cpu_time(p)
        } else {
            None
        };
        self.gates[p].check = Some((closed, monotonic_ns() + self.park_bound_ns));
        self.parks += 1;
    }

    fn stop_overdue(&mut self, p: usize) {
        // Close the gate as usual (its threads park when they run again), but do not let the
        // partition run for the grace of a park: stop it now.
        self.stop(p);
        if self.pids[p] > 0 && !self.gates[p].held {
            self.gates[p].check = None;
            self.hold(p);
            self.backstops += 1;
            self.backstops_by_partition[p] += 1;
        }
    }

    fn cont(&mut self, p: usize) {
        self.open_gate(p, 0);
    }

    fn can_open_at(&self, p: usize) -> bool {
        let g = &self.gates[p];
        self.mechanism == SwitchMechanism::Gate
            && self.pids[p] > 0
            && !g.held
            && !g.distrusted
            && self.shared.partition(p).gate_ready.load(Ordering::Acquire) != 0
    }

    fn cont_at(&mut self, p: usize, at: u64) {
        // A thread pre-woken by prepare_open on another CPU may already have found the gate
        // closed and parked again: wake one more (it busy-waits for `at` like the first).
        self.gates[p].prewoken = false;
        self.open_gate(p, at);
    }

    fn woken_but_not_run(&self, p: usize) -> bool {
        if self.mechanism != SwitchMechanism::Gate || self.pids[p] <= 0 || self.gates[p].held {
            return false;
        }
        // The process used no CPU time since the open (beyond what leaving a wait takes): none
        // of its threads ran in the window. Not known (no reading at the open): say no.
        let Some(at_open) = self.gates[p].cpu_at_open else {
            return false;
        };
        if self
            .cpu_time(p)
            .is_none_or(|now| now.saturating_sub(at_open) > STARVED_CPU_NS)
        {
            return false;
        }
        // And a thread of it is runnable: it was woken (a parked one by the open, one that
        // never parked by the end of its hold) and has waited for a CPU since. At most
        // `LOOKS` reads of `/proc` (each some µs of the point's time, no allocation).
        const LOOKS: usize = 8;
        let st = self.shared.partition(p);
        let pid = self.pids[p];
        let mut buf = [0u8; 2048];
        st.tids
            .iter()
            .map(|t| t.load(Ordering::Acquire))
            .filter(|&tid| tid > 0)
            .take(LOOKS)
            .any(|tid| {
                read_status(pid, tid, &mut buf)
                    .is_some_and(|n| status_state(&buf[..n]) == Some(b'R'))
            })
    }

    fn prepare_open(&mut self, p: usize) {
        let g = &self.gates[p];
        if self.mechanism != SwitchMechanism::Gate || self.pids[p] <= 0 || g.held {
            return;
        }
        // The CPU time at the open, for `woken_but_not_run` (here in the lead, off the point).
        let cpu = match self.audit(p) {
            Some(cpu) => Some(cpu),
            None => self.cpu_time(p),
        };
        self.gates[p].cpu_at_prepare = cpu;
        // The highest-priority parked thread becomes runnable, but this thread holds the CPU
        // until the point; if the gate is still closed when it runs, it parks again.
        let st = self.shared.partition(p);
        if st.gate.load(Ordering::Relaxed) & 1 == 0 {
            self.gates[p].waits_at_prewake = st.gate_waits.load(Ordering::SeqCst);
            self.gates[p].prewoken = futex::wake(&st.gate, 1) > 0;
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        self.gates
            .iter()
            .filter_map(|g| g.check.map(|(_, d)| d))
            .min()
    }

    fn enforce(&mut self, now: u64) {
        for p in 0..self.gates.len() {
            if let Some((closed, d)) = self.gates[p].check {
                if d <= now {
                    self.gates[p].check = None;
                    self.verify(p, closed);
                }
            }
        }
    }

    fn audit_parked(&mut self) {
        for p in 0..self.gates.len() {
            let g = self.gates[p];
            let Some(before) = g.cpu_at_park else {
                continue;
            };
            if self.pids[p] <= 0 || g.held || g.distrusted {
                continue;
            }
            if self
                .cpu_time(p)
                .is_some_and(|now| now.saturating_sub(before) > AUDIT_SLACK_NS)
            {
                self.gates[p].distrusted = true;
                self.distrusted_by_partition[p] = true;
                self.gates[p].cpu_at_park = None;
                self.hold(p);
            }
        }
    }

    fn kill(&mut self, p: usize) {
        let pid = self.pids[p];
        if pid > 0 {
            // No wait here: the victim needs this CPU to die (this thread outranks it), and
            // one of its threads may sit in a system call that a SIGKILL does not interrupt
            // (a FUSE or NFS request its server has taken) for as long as that lasts. The
            // executive goes on; `ending` tells when the process has ended, and it is reaped
            // then (by the reaper thread, not here).
            // SAFETY: pid is our child; kill has no memory preconditions.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            self.forget(p);
            match peek_child(pid) {
                Child::Running => self.ending.push((p, pid)),
                Child::Ended(_) => reap_later(pid),
                Child::Gone => {}
            }
        }
    }

    fn ending_after(&mut self, p: usize, grace_ns: u64) -> bool {
        // Real sleeps (the victim may need this CPU to die), short at first; the verifications
        // of earlier closes that fall due meanwhile are made at their time.
        let t0 = monotonic_ns();
        let deadline = t0 + grace_ns;
        while self.ending(p) {
            let now = monotonic_ns();
            if now >= deadline {
                return true;
            }
            if self.next_deadline().is_some_and(|d| d <= now) {
                self.enforce(now);
            }
            let step = if now - t0 < 200_000 { 20_000 } else { 100_000 };
            let mut until = (now + step).min(deadline);
            if let Some(d) = self.next_deadline() {
                until = until.min(d.max(now));
            }
            nanosleep_abs(until);
        }
        false
    }

    fn has_process(&self, p: usize) -> bool {
        self.pids[p] > 0
    }

    fn ending(&mut self, p: usize) -> bool {
        self.look_at_ending();
        if self.ending.iter().any(|&(q, _)| q == p) {
            return true;
        }
        // What the process forked must be gone too: one born while the cgroup was killed
        // (frozen, so it never ran) or one not ended yet is killed (again) and waited for.
        self.cgroups[p]
            .as_ref()
            .is_some_and(PartitionCgroup::kill_rest)
    }

    fn poll_death(&mut self) -> Option<(usize, Death)> {
        if self.deaths.is_empty() {
            let g = SIGCHLD_GEN.load(Ordering::Acquire);
            if g == self.seen_gen {
                return None;
            }
            self.seen_gen = g;
            self.look_at_ending();
            for p in 0..self.pids.len() {
                let pid = self.pids[p];
                if pid <= 0 {
                    continue;
                }
                if let Child::Ended(d) = peek_child(pid) {
                    self.forget(p);
                    self.deaths.push((p, d));
                    reap_later(pid);
                }
            }
            self.deaths.reverse();
        }
        self.deaths.pop()
    }
}

/// Two words per partition in memory shared with the processes the executive forks, which
/// they lose at exec (a partition's program never sees it): where a new process born in its
/// cgroup reports the `errno` of a v1 hold it could not join (memory, cpuset; 0: joined).
struct ChildJoins {
    words: *mut AtomicI32,
    len: usize,
}

// SAFETY: the mapping is owned by this value and accessed only through atomics.
unsafe impl Send for ChildJoins {}
// SAFETY: as for Send.
unsafe impl Sync for ChildJoins {}

impl ChildJoins {
    fn new(partitions: usize) -> Result<ChildJoins, String> {
        let len = (4 * partitions).max(1) * std::mem::size_of::<AtomicI32>();
        // SAFETY: a fresh anonymous shared mapping, checked below; zero-filled, which is a
        // valid AtomicI32.
        let words = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if words == libc::MAP_FAILED {
            return Err(format!(
                "mmap of the spawn reports: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(ChildJoins {
            words: words.cast(),
            len,
        })
    }

    /// Partition `p`'s words: memory, cpuset.
    fn slots(&self, p: usize) -> [&AtomicI32; 2] {
        [self.word(p, 0), self.word(p, 1)]
    }

    /// Partition `p`'s words for the errno of a failed drop of `CAP_SYS_PTRACE`
    /// (`drop_ptrace_capability`) and of a failed `enter_landlock_domain`, written before the
    /// child's stop.
    fn confine_slots(&self, p: usize) -> [&AtomicI32; 2] {
        [self.word(p, 2), self.word(p, 3)]
    }

    /// Word `i` (< 4) of partition `p`.
    fn word(&self, p: usize, i: usize) -> &AtomicI32 {
        assert!(i < 4 && 4 * p + i < self.len / std::mem::size_of::<AtomicI32>());
        // SAFETY: in bounds (asserted); the mapping lives as long as `self`.
        unsafe { &*self.words.add(4 * p + i) }
    }
}

impl Drop for ChildJoins {
    fn drop(&mut self) {
        // SAFETY: our own mapping of `len` bytes, unmapped once.
        unsafe { libc::munmap(self.words.cast(), self.len) };
    }
}

/// `clone3` with `CLONE_INTO_CGROUP`: fork the calling process into the cgroup of directory
/// descriptor `cgroup`. Return the child's pid (0 in the child), or `None` where the kernel
/// cannot (before Linux 5.7, or a cgroup it refuses), for a `fork` and a move instead.
///
/// # Safety
/// As `fork`: in a multi-threaded process the child may only call async-signal-safe functions
/// until it execs. It returns through this function like `fork` does (no `CLONE_VM`, no new
/// stack: the child runs on its copy of the caller's stack).
unsafe fn clone_into_cgroup(cgroup: i32) -> Option<i32> {
    /// `struct clone_args` (Linux `include/uapi/linux/sched.h`), up to `cgroup`.
    #[repr(C)]
    struct CloneArgs {
        flags: u64,
        pidfd: u64,
        child_tid: u64,
        parent_tid: u64,
        exit_signal: u64,
        stack: u64,
        stack_size: u64,
        tls: u64,
        set_tid: u64,
        set_tid_size: u64,
        cgroup: u64,
    }
    const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
    let args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        pidfd: 0,
        child_tid: 0,
        parent_tid: 0,
        exit_signal: libc::SIGCHLD as u64,
        stack: 0,
        stack_size: 0,
        tls: 0,
        set_tid: 0,
        set_tid_size: 0,
        cgroup: cgroup as u64,
    };
    // SAFETY: `args` is a valid clone_args of the size given; the caller upholds fork's rules.
    let r = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    (r >= 0).then_some(r as i32)
}

/// What [`peek_child`] found.
enum Child {
    /// The child has not ended.
    Running,
    /// The child has ended (a zombie, not reaped yet).
    Ended(Death),
    /// Not a child of this process (any more).
    Gone,
}

/// Look at child `pid` without reaping it (`waitid(WEXITED | WNOHANG | WNOWAIT)`).
///
/// The executive never reaps a partition itself. Reaping runs kernel work (`release_task`
/// flushing the process's `/proc` entries) that can wait for other tasks of its CPU, which the
/// executive at `SCHED_FIFO` 99 outranks: seen once (session 10, `edges_stop` two-sided test
/// under CPU load) as a `waitpid` that spun in `shrink_dcache_parent` for over six minutes after
/// a partition of about 1000 threads (one per STOPped incarnation) exited, while the other
/// partition's runnable threads on the same CPU got nothing; moving the thread to
/// `SCHED_OTHER` from outside (`chrt -o -p 0 TID`) ended it at once. So the executive only
/// looks, and [`reap_later`] reaps in a normal thread.
fn peek_child(pid: i32) -> Child {
    // SAFETY: siginfo_t is plain data; all-zero is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: info is a valid out-pointer; waitid has no other memory preconditions.
    let r = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
    };
    if r != 0 {
        return Child::Gone;
    }
    // SAFETY: waitid filled `info` for a SIGCHLD, or left it zeroed (si_pid 0: still running).
    let (who, status) = unsafe { (info.si_pid(), info.si_status()) };
    if who == 0 {
        return Child::Running;
    }
    match info.si_code {
        libc::CLD_EXITED => Child::Ended(Death::Exited(status)),
        libc::CLD_KILLED | libc::CLD_DUMPED => Child::Ended(Death::Signaled(status)),
        _ => Child::Running,
    }
}

/// Reap child `pid`, which has ended, in the reaper thread: a `SCHED_OTHER` thread allowed on
/// every CPU, started at the first call (see [`peek_child`]). If it cannot be started, reap
/// here.
fn reap_later(pid: i32) {
    static REAPER: OnceLock<Option<Mutex<mpsc::Sender<i32>>>> = OnceLock::new();
    let tx = REAPER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<i32>();
        std::thread::Builder::new()
            .name("partix-reaper".into())
            .spawn(move || {
                become_normal_task();
                for pid in rx {
                    reap(pid, 0);
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let sent = tx.as_ref().is_some_and(|tx| {
        tx.lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(pid)
            .is_ok()
    });
    if !sent {
        reap(pid, libc::WNOHANG);
    }
}

/// `waitpid(pid, flags)`, retried after `EINTR`.
fn reap(pid: i32, flags: libc::c_int) {
    loop {
        let mut st = 0;
        // SAFETY: st is a valid out-pointer; waitpid has no other memory preconditions.
        let r = unsafe { libc::waitpid(pid, &mut st, flags) };
        if r >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Make the calling thread a normal task: `SCHED_OTHER`, allowed on every CPU.
pub(crate) fn become_normal_task() {
    let normal = libc::sched_param { sched_priority: 0 };
    // SAFETY: plain syscalls on the calling thread with valid pointers.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_OTHER, &normal);
        let mut all: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 0..libc::CPU_SETSIZE as usize {
            libc::CPU_SET(cpu, &mut all);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &all);
    }
}

impl Drop for OsSwitcher<'_> {
    fn drop(&mut self) {
        for p in 0..self.pids.len() {
            self.kill(p);
        }
        // The run is over: wait (up to 2 s) for the killed processes to end, so that their
        // cgroups can be removed.
        self.settle(monotonic_ns() + 2_000_000_000);
        for pr in &self.prepared {
            if pr.exe_fd >= 0 {
                // SAFETY: our own descriptor, closed once.
                unsafe { libc::close(pr.exe_fd) };
            }
        }
    }
}

/// Mark every descriptor from 3 up close-on-exec, in a new process before its `exec`: the
/// descriptors partix inherited without close-on-exec (CI pipes, a socket-activation
/// descriptor, a caller's open files) must not reach a partition. With `close_range(2)`
/// (`use_close_range`, Linux 5.11); where that fails (Linux 5.4 to 5.10, whose other fallbacks
/// partix keeps), each descriptor listed in `/proc/self/fd`, or without `/proc` every number
/// below the soft `RLIMIT_NOFILE` (at most 2^20). Before, a failed `close_range` was ignored
/// and every inherited descriptor reached every partition (found by review).
///
/// # Safety
/// Async-signal-safe (`close_range`, `open`, `getdents64`, `fcntl`, `close`, `getrlimit`
/// system calls on a stack buffer): callable between `fork` and `exec`.
pub unsafe fn mark_inherited_cloexec(use_close_range: bool) {
    // SAFETY: system calls with integer arguments and a stack buffer of the length given.
    unsafe {
        if use_close_range
            && libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            ) == 0
        {
            return;
        }
        let dir = libc::open(
            c"/proc/self/fd".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if dir >= 0 {
            let mut buf = [0u8; 2048];
            let mut listed = false;
            loop {
                let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
                if n <= 0 {
                    listed |= n == 0;
                    break;
                }
                // struct linux_dirent64: d_ino u64, d_off i64, d_reclen u16, d_type u8, d_name.
                let mut off = 0usize;
                while off + 19 < n as usize {
                    let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
                    if reclen == 0 {
                        break;
                    }
                    let mut fd: i64 = 0;
                    let mut digits = 0;
                    for &b in &buf[off + 19..(off + reclen).min(n as usize)] {
                        if !b.is_ascii_digit() || fd > i64::from(i32::MAX) {
                            break;
                        }
                        fd = fd * 10 + i64::from(b - b'0');
                        digits += 1;
                    }
                    if digits > 0 && fd >= 3 && fd != i64::from(dir) {
                        libc::fcntl(fd as i32, libc::F_SETFD, libc::FD_CLOEXEC);
                    }
                    off += reclen;
                }
            }
            libc::close(dir);
            if listed {
                return;
            }
        }
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        let top = lim.rlim_cur.min(1 << 20) as i32;
        for fd in 3..top {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
}

/// Puts the calling thread on `SCHED_FIFO` 99 pinned to one CPU;
/// restores the previous policy and affinity on drop.
pub struct RtThread {
    old_policy: i32,
    old_param: libc::sched_param,
    old_cpus: libc::cpu_set_t,
    old_rttime: libc::rlimit,
    /// Whether SCHED_FIFO could be set (needs root or CAP_SYS_NICE).
    pub realtime: bool,
    /// Whether the thread could be pinned to its CPU (see [`check_cpus`]).
    pub pinned: bool,
}

impl RtThread {
    /// Enter real-time mode on `cpu` (one that [`check_cpus`] accepts, or the thread is not
    /// pinned: `pinned` says so).
    pub fn enter(cpu: usize) -> RtThread {
        // SAFETY: plain syscalls on the calling thread with valid pointers.
        unsafe {
            let old_policy = libc::sched_getscheduler(0);
            let mut old_param: libc::sched_param = std::mem::zeroed();
            libc::sched_getparam(0, &mut old_param);
            let mut old_cpus: libc::cpu_set_t = std::mem::zeroed();
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old_cpus);
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let pinned = cpu < libc::CPU_SETSIZE as usize && {
                libc::CPU_SET(cpu, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
            };
            // Watchdog: the executive blocks at every scheduling point, so a real-time thread of
            // this process that runs for seconds without blocking is a bug that would starve the
            // partitions' CPU. The kernel then sends SIGXCPU (whose default action ends the
            // process) instead of letting it spin at FIFO 99. Partitions reset it before exec.
            let mut old_rttime = libc::rlimit {
                rlim_cur: libc::RLIM_INFINITY,
                rlim_max: libc::RLIM_INFINITY,
            };
            libc::getrlimit(libc::RLIMIT_RTTIME, &mut old_rttime);
            let watchdog = libc::rlimit {
                rlim_cur: RT_WATCHDOG_SOFT_US.min(old_rttime.rlim_max),
                rlim_max: old_rttime.rlim_max,
            };
            libc::setrlimit(libc::RLIMIT_RTTIME, &watchdog);
            let param = libc::sched_param { sched_priority: 99 };
            let realtime = libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0;
            RtThread {
                old_policy,
                old_param,
                old_cpus,
                old_rttime,
                realtime,
                pinned,
            }
        }
    }
}

impl Drop for RtThread {
    fn drop(&mut self) {
        // SAFETY: restoring values read in `enter`, on the same thread.
        unsafe {
            libc::sched_setscheduler(
                0,
                self.old_policy & !libc::SCHED_RESET_ON_FORK,
                &self.old_param,
            );
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.old_cpus);
            libc::setrlimit(libc::RLIMIT_RTTIME, &self.old_rttime);
        }
    }
}

/// CPU time (µs) a real-time thread of the executive may use without blocking before the kernel
/// sends SIGXCPU (`RLIMIT_RTTIME` soft limit): a watchdog against a spinning executive.
pub const RT_WATCHDOG_SOFT_US: libc::rlim_t = 2_000_000;

/// Path of the kernel's real-time throttling budget.
pub const RT_RUNTIME_PATH: &str = "/proc/sys/kernel/sched_rt_runtime_us";

/// Sets `sched_rt_runtime_us` to -1 (no RT throttling) and restores the old value
/// ([`RtUnthrottle::restore`], or on drop, which prints a failure to stderr).
#[derive(Debug)]
pub struct RtUnthrottle {
    path: std::path::PathBuf,
    old: Option<String>,
}

impl RtUnthrottle {
    /// Disable RT throttling.
    ///
    /// # Errors
    /// The I/O error if the file cannot be read or written (not root).
    pub fn enter() -> std::io::Result<RtUnthrottle> {
        Self::enter_at(RT_RUNTIME_PATH)
    }

    /// [`RtUnthrottle::enter`] with the control file at `path` (tests).
    ///
    /// # Errors
    /// As [`RtUnthrottle::enter`].
    pub fn enter_at(path: impl Into<std::path::PathBuf>) -> std::io::Result<RtUnthrottle> {
        let path = path.into();
        let old = std::fs::read_to_string(&path)?;
        std::fs::write(&path, "-1\n")?;
        Ok(RtUnthrottle {
            path,
            old: Some(old),
        })
    }

    /// Write the old value back (once; later calls and the drop do nothing).
    ///
    /// # Errors
    /// What was not restored: the path, the value and the I/O error. The host is then left
    /// without RT throttling (found by review: the error was ignored).
    pub fn restore(&mut self) -> Result<(), String> {
        let Some(old) = self.old.take() else {
            return Ok(());
        };
        std::fs::write(&self.path, &old).map_err(|e| {
            format!(
                "cannot restore {} to {}: {e}; RT throttling stays disabled until it is written",
                self.path.display(),
                old.trim()
            )
        })
    }
}

impl Drop for RtUnthrottle {
    fn drop(&mut self) {
        use std::io::Write as _;
        // After the run, not at a scheduling point: stderr may block here.
        if let Err(e) = self.restore() {
            let _ = writeln!(std::io::stderr(), "partix: {e}");
        }
    }
}

/// Return the CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: valid out-pointer of the right size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Return the default CPU of the executive and the partitions: the last CPU allowed.
pub fn default_cpu() -> usize {
    allowed_cpus().last().copied().unwrap_or(0)
}

/// The executive's CPU: `cpu` if this process may use it, else an error saying which it may
/// use; `None`: the last CPU allowed ([`default_cpu`]).
///
/// # Errors
/// `cpu` is not one of [`allowed_cpus`].
pub fn pick_cpu(cpu: Option<usize>) -> Result<usize, String> {
    let allowed = allowed_cpus();
    match cpu {
        None => Ok(allowed.last().copied().unwrap_or(0)),
        Some(c) if allowed.contains(&c) => Ok(c),
        Some(c) => Err(not_allowed(c, &allowed)),
    }
}

fn not_allowed(cpu: usize, allowed: &[usize]) -> String {
    format!(
        "--cpu {cpu}: not a CPU this process may use (allowed: {}); choose one of them",
        cpu_list_text(allowed)
    )
}

/// Failure of [`check_cpus`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuError {
    /// `--cpu` names a CPU this process may not use: the message says which it may use.
    Executive(String),
    /// A partition's `partix:Affinity` names a CPU this process may not use: the error is
    /// located at the attribute in the configuration and says which CPUs it may use.
    Affinity(ConfigError),
}

impl std::fmt::Display for CpuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CpuError::Executive(m) => write!(f, "{m}"),
            CpuError::Affinity(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CpuError {}

/// Check the executive's CPU (`--cpu`) and every partition's `partix:Affinity` against the CPUs
/// this process may use (`allowed`, [`allowed_cpus`] read before any pinning). A CPU outside
/// them would leave the executive or a partition unpinned: the premise that a partition never
/// runs while the executive works on its CPU would fail silently.
///
/// # Errors
/// The first CPU refused: `--cpu`, or a partition's `partix:Affinity` (located at the
/// attribute), naming the CPUs allowed.
pub fn check_cpus(module: &Module, cpu: usize, allowed: &[usize]) -> Result<(), CpuError> {
    let list = || cpu_list_text(allowed);
    if !allowed.contains(&cpu) {
        return Err(CpuError::Executive(not_allowed(cpu, allowed)));
    }
    for part in &module.partitions {
        for &c in part.affinity.as_deref().unwrap_or_default() {
            if !allowed.contains(&c) {
                return Err(CpuError::Affinity(module.error_at(
                    part.affinity_location.unwrap_or(part.location),
                    format!(
                        "partition `{}`: partix:Affinity CPU {c} is not one this process may use \
                         (allowed: {})",
                        part.name,
                        list()
                    ),
                    format!(
                        "name only CPUs among {} in partix:Affinity, or run partix where CPU {c} \
                         is allowed (more CPUs, or a wider CPU set: taskset, the cgroup's cpuset)",
                        list()
                    ),
                )));
            }
        }
    }
    Ok(())
}

/// `0-3,6` for CPUs 0, 1, 2, 3 and 6 (sorted input).
fn cpu_list_text(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    if out.is_empty() {
        "none".into()
    } else {
        out.join(",")
    }
}

/// Failure of [`resolve_program`]. Each variant holds the error located in the configuration
/// (at `partix:Executable`, or at the `<Partition>` without one), with what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProgramError {
    /// The partition has no `partix:Executable`: there is no program to start. (The model
    /// allows it: a module can be checked, or scheduled on a mock clock, without programs.)
    NoExecutable(ConfigError),
    /// The executable is a path (absolute, or with a `/`; relative ones are resolved against
    /// the configuration's directory) where there is no file.
    NoSuchFile(ConfigError),
    /// The executable is a bare name found neither beside the `partix` binary nor in `PATH`
    /// (it depends on the machine, not on the configuration alone).
    NotFound(ConfigError),
}

impl ProgramError {
    /// Return the located error.
    pub fn error(&self) -> &ConfigError {
        match self {
            ProgramError::NoExecutable(e)
            | ProgramError::NoSuchFile(e)
            | ProgramError::NotFound(e) => e,
        }
    }

    /// Return the located error, by value.
    pub fn into_error(self) -> ConfigError {
        match self {
            ProgramError::NoExecutable(e)
            | ProgramError::NoSuchFile(e)
            | ProgramError::NotFound(e) => e,
        }
    }
}

impl std::fmt::Display for ProgramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.error())
    }
}

impl std::error::Error for ProgramError {}

/// Return whether `partix:Executable` value `exe` is a path (used as given: absolute, or with a
/// `/`) rather than a name looked up beside `partix` and in `PATH`.
pub fn is_program_path(exe: &std::path::Path) -> bool {
    exe.components().count() > 1 || exe.is_absolute()
}

/// Return the error for partition `p`'s `partix:Executable` path `path` where there is no file
/// (also used by the command line for a `.c` source).
pub fn no_such_program_file(module: &Module, p: usize, path: &std::path::Path) -> ProgramError {
    let part = &module.partitions[p];
    ProgramError::NoSuchFile(module.error_at(
        part.executable_location.unwrap_or(part.location),
        format!(
            "partition `{}`: executable {}: no such file",
            part.name,
            path.display()
        ),
        "correct the path, or build the program there (a relative path is resolved against the \
         configuration's directory)",
    ))
}

/// Find the program of a partition: `partix:Executable` as given when it is a path
/// ([`is_program_path`]), otherwise beside the running executable, then in `PATH`.
///
/// # Errors
/// A [`ProgramError`] located in the configuration, saying what is missing and what to do.
pub fn resolve_program(module: &Module, p: usize) -> Result<Program, ProgramError> {
    let part = &module.partitions[p];
    let Some(exe) = &part.executable else {
        return Err(ProgramError::NoExecutable(module.error_at(
            part.location,
            format!(
                "partition `{}` has no partix:Executable: there is no program to run for it",
                part.name
            ),
            "add partix:Executable=\"PROGRAM\" to the <Partition>: a name found beside partix or \
             in PATH, a path (relative to this file), or a .c file partix builds",
        )));
    };
    if is_program_path(exe) {
        return match exe.is_file() {
            true => Ok(Program {
                path: exe.clone(),
                args: part.args.clone(),
            }),
            false => Err(no_such_program_file(module, p, exe)),
        };
    }
    let beside_dir = std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(std::path::Path::to_path_buf));
    let beside = beside_dir
        .as_ref()
        .map(|d| d.join(exe))
        .filter(|p| p.is_file());
    let found = beside.or_else(|| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(exe))
                .find(|p| p.is_file())
        })
    });
    match found {
        Some(path) => Ok(Program {
            path,
            args: part.args.clone(),
        }),
        None => Err(ProgramError::NotFound(module.error_at(
            part.executable_location.unwrap_or(part.location),
            format!(
                "partition `{}`: executable `{}` not found beside partix ({}) or in PATH",
                part.name,
                exe.display(),
                beside_dir.map_or("?".into(), |d| d.display().to_string())
            ),
            "build it beside partix (`cargo build --release --workspace` builds the partition \
             programs of this source tree; `scripts/demo.sh` the demo's), put it in PATH, or give \
             its path",
        ))),
    }
}

/// How to run a module with [`run_module`].
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Program of each partition (config order).
    pub programs: Vec<Program>,
    /// CPU of the executive and default CPU of the partitions (`None`: [`default_cpu`]).
    pub cpu: Option<usize>,
    /// Executive options.
    pub options: Options,
    /// Set `sched_rt_runtime_us` to -1 for the run.
    pub rt_unthrottle: bool,
}

/// One APEX process's counters at the end of a run (from the partition's process slots).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessReport {
    /// Partition index.
    pub partition: usize,
    /// Process name.
    pub name: String,
    /// Jobs completed.
    pub jobs: u64,
    /// Deadline misses.
    pub deadline_misses: u64,
    /// Worst response time (ns).
    pub worst_response_ns: u64,
    /// Mean response time (ns; 0 without jobs).
    pub mean_response_ns: u64,
    /// Worst CtswO (ns).
    pub worst_ctsw_ns: u64,
    /// Mean CtswO (ns; 0 without releases).
    pub mean_ctsw_ns: u64,
}

/// Per-partition end-of-run figures.
#[derive(Debug, Clone)]
pub struct PartitionReport {
    /// Name.
    pub name: String,
    /// Counters.
    pub stats: PartitionStats,
    /// Final operating mode, as the executive knows it ([`super::Executive::partition_mode`]; not
    /// read from the partition's region, which the partition can write).
    pub mode: u32,
    /// Respawns of the partition after its first start (during the initialisation too), counted
    /// by the executive once the new process exists (= `stats.restarts`; the partition's region
    /// also holds a count, which the partition can write).
    pub restarts: u64,
    /// Closes at which the partition did not park in time and was held (gate backstop: its
    /// cgroup frozen, or SIGSTOP).
    pub backstops: u64,
    /// Verified closes at which the partition's cgroup held a process other than its own (one
    /// it forked), which no park reaches: held at once.
    pub strays: u64,
    /// Verified closes whose threads had not parked yet but had not run since the close either
    /// (the park signal still pending: they wait for the CPU behind higher-priority threads of
    /// the next partition); accepted under the CPU-time audit instead of a hold.
    pub pending_parks: u64,
    /// Closes at which the executive sent no park signal because the partition had not taken
    /// the last one (it blocks it): real-time signals queue, against a limit every process of
    /// the same user shares.
    pub withheld_signals: u64,
    /// Pending parks were turned off for the partition: after one, its threads used more CPU
    /// time before the next open than parking takes (a forged handler would; the demo's VSP
    /// under load did too, unexplained). Its waiting closes are held since.
    pub pending_off: bool,
    /// The control file of the memory cgroup that enforced the partition's memory limit
    /// (`None`: no limit, or only `RLIMIT_DATA`).
    pub memory_cgroup: Option<&'static str>,
    /// Processes of the partition the kernel killed for its memory limit.
    pub oom_kills: u64,
    /// Closes at which the executive sent the park signal to each of the partition's threads
    /// itself (its thread table held every thread), not once to the process for the handlers'
    /// chain.
    pub direct_closes: u64,
    /// The partition ran while it claimed to be parked on its gate and is held at every close
    /// since (the gate's CPU-time audit).
    pub distrusted: bool,
}

/// What a run produced.
#[derive(Debug)]
pub struct RunReport {
    /// Why it ended.
    pub end: EndReason,
    /// Module epoch (`CLOCK_MONOTONIC` ns).
    pub epoch_ns: u64,
    /// Startup time to all partitions NORMAL (ns), from the first spawn.
    pub startup_ns: u64,
    /// Time from entering [`run_module`] (before the shared regions exist) to all partitions
    /// NORMAL (ns): the module's launch time.
    pub launch_to_normal_ns: u64,
    /// Major frames started.
    pub frames: u64,
    /// The schedule trace.
    pub trace: Trace,
    /// Overhead histograms.
    pub overheads: Overheads,
    /// HM events (bounded: the first and last [`super::HM_EVENTS_KEPT`], and counts).
    pub hm_events: HmEvents,
    /// Per partition.
    pub partitions: Vec<PartitionReport>,
    /// Per process.
    pub processes: Vec<ProcessReport>,
    /// Whether the executive ran SCHED_FIFO.
    pub realtime: bool,
    /// The CPU the executive ran on.
    pub cpu: usize,
    /// The late/overrun threshold used.
    pub late_threshold: Duration,
    /// The switch mechanism used.
    pub switch: SwitchMechanism,
    /// Closes done through the gate.
    pub parks: u64,
    /// Gate closes that were not acknowledged in time and ended with a hold (the backstop).
    pub backstops: u64,
    /// Why the partitions ran without cgroups, their holds being SIGSTOPs (`None`: each ran in
    /// its own, see [`super::cgroup`]).
    pub cgroup_error: Option<String>,
    /// Why a partition's memory limit was enforced by `RLIMIT_DATA` only (`None`: every limit
    /// had a memory cgroup, or no partition had one).
    pub memory_error: Option<String>,
    /// Why a partition's CPUs (`partix:Affinity`, or the executive's) were held by
    /// `sched_setaffinity` only, which the partition may change (`None`: each had a cpuset).
    pub cpuset_error: Option<String>,
    /// Why partitions under `partix:User` kept `CAP_SYS_NICE` for their `SCHED_FIFO` threads
    /// (`None`: they ran without capabilities, or no partition has a user).
    pub users_keep_nice: Option<String>,
    /// Why partitions under `partix:User` ran their processes under `SCHED_OTHER`, with no
    /// priority preemption among them: neither `RLIMIT_RTPRIO` nor `CAP_SYS_NICE` could be
    /// given (`None`: they could use `SCHED_FIFO`, or no partition has a user).
    pub users_no_fifo: Option<String>,
    /// Sleeps of the scheduling thread that only blocked on a timer armed ahead
    /// ([`Options::arm_ahead`]).
    pub armed_sleeps: u64,
    /// How long each partition process's spawn held the executive: the startup's, then a
    /// histogram of the restarts' (bounded: [`SpawnTimes`]).
    pub spawns: SpawnTimes,
    /// `sched_rt_runtime_us` (disabled for the run by `RunConfig::rt_unthrottle`) could not be
    /// restored: the path, the old value and the error. The host has no RT throttling.
    pub rt_restore_error: Option<String>,
    /// Log lines (HM events, mode changes) dropped because stderr did not take them as fast
    /// as they came (see [`super::log`]); they are in the trace and the HM events all the same.
    pub log_dropped: u64,
    /// Whether the run confined partitions against `/proc` (not [`Options::debuggable`]).
    pub confined: bool,
    /// Why the confinement is not whole: the kernel has no Landlock, the executive could not be
    /// made non-dumpable, or a partition kept `CAP_SYS_PTRACE` or got no Landlock domain
    /// (`None`: it is whole, or the run was debuggable).
    pub confine_error: Option<String>,
}

/// How long the spawns of a run held the executive (ns), bounded: the first spawn of each
/// partition (the startup's, in order) and a histogram of every later one (the respawns of
/// restarts). A partition restarted in every window respawns once per window: a list of every
/// spawn grew without limit in a long run.
#[derive(Debug, Clone)]
pub struct SpawnTimes {
    /// The first spawns, up to one per partition (the startup's), in order.
    pub startup_ns: Vec<u64>,
    /// Every later spawn (1 ns .. 100 s, 3 significant digits; longer ones saturate).
    pub respawn_ns: hdrhistogram::Histogram<u64>,
    partitions: usize,
}

impl SpawnTimes {
    /// Return an empty record for a module of `partitions` partitions (allocated now).
    pub fn new(partitions: usize) -> SpawnTimes {
        SpawnTimes {
            startup_ns: Vec::with_capacity(partitions),
            respawn_ns: hdrhistogram::Histogram::new_with_bounds(1, 100_000_000_000, 3)
                .expect("valid bounds"),
            partitions,
        }
    }

    /// Record a spawn that took `ns` (no allocation).
    pub fn record(&mut self, ns: u64) {
        if self.startup_ns.len() < self.partitions {
            self.startup_ns.push(ns);
        } else {
            self.respawn_ns.saturating_record(ns.max(1));
        }
    }

    /// Return how many spawns were recorded.
    pub fn total(&self) -> u64 {
        self.startup_ns.len() as u64 + self.respawn_ns.len()
    }
}

/// Failure of [`run_module`].
#[derive(Debug)]
pub enum RunError {
    /// The shared regions could not be created.
    Shared(partix_shm::RegionError),
    /// A program path or argument is unusable.
    Program(String),
    /// The schedule is unusable.
    Plan(super::table::PlanError),
    /// Startup failed.
    Start(StartError),
    /// The channels could not be built.
    Channels(crate::channels::ChannelError),
    /// The executive's CPU is not one this process may use, or its thread could not be pinned.
    Cpu(String),
    /// A partition's `partix:Affinity` names a CPU this process may not use (located at the
    /// attribute).
    Affinity(ConfigError),
}

impl From<CpuError> for RunError {
    fn from(e: CpuError) -> RunError {
        match e {
            CpuError::Executive(m) => RunError::Cpu(m),
            CpuError::Affinity(e) => RunError::Affinity(e),
        }
    }
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Shared(e) => write!(f, "{e}"),
            RunError::Program(e) => write!(f, "{e}"),
            RunError::Plan(e) => write!(f, "{e}"),
            RunError::Start(e) => write!(f, "{e}"),
            RunError::Channels(e) => write!(f, "{e}"),
            RunError::Cpu(e) => write!(f, "{e}"),
            RunError::Affinity(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RunError {}

/// The lowest descriptor number above every number a partition's process gets (the module,
/// partition and configuration descriptors, and its ports'): where the child puts its
/// descriptors before it moves them onto their numbers.
/// The same floor as every other child that is handed ports
/// ([`crate::channels::above_port_targets`]), which is above the module, partition and
/// configuration numbers too.
fn descriptor_floor(port_fds: &[(i32, i32)]) -> i32 {
    const _: () = assert!(
        MODULE_FD_NUM < crate::channels::PORT_FD_BASE
            && PARTITION_FD_NUM < crate::channels::PORT_FD_BASE
            && CONFIG_FD_NUM < crate::channels::PORT_FD_BASE
    );
    crate::channels::above_port_targets(port_fds)
}

/// Raise the soft descriptor limit (`RLIMIT_NOFILE`) to the hard one if it is below `need`
/// (the partitions inherit it): their descriptors are numbered from 500 up, above the usual soft
/// limit of 1024 for a module with many ports, and `fcntl(F_DUPFD)` and `dup2` refuse numbers at
/// or above the soft limit.
///
/// # Errors
/// A message when even the hard limit is below `need`.
fn raise_descriptor_limit(need: u64) -> Result<(), String> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: l is a valid out-parameter.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } != 0 || l.rlim_cur >= need {
        return Ok(());
    }
    if l.rlim_max < need {
        return Err(format!(
            "the partitions need descriptors numbered up to {need}, but the hard limit on open \
             descriptors (RLIMIT_NOFILE) is {}: raise it (`ulimit -Hn {need}` as root, or \
             LimitNOFILE= in a systemd unit)",
            l.rlim_max
        ));
    }
    l.rlim_cur = l.rlim_max;
    // SAFETY: l is a valid rlimit; raising the soft limit up to the hard one needs no privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) } != 0 {
        return Err(format!(
            "cannot raise the soft limit on open descriptors to {}: {}",
            l.rlim_max,
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Run `module`: create the shared state, start the partitions, schedule them until
/// `max_frames`, `stop` or an HM shutdown, and return the trace and counters.
///
/// Call it on a thread of its own: the thread becomes SCHED_FIFO 99 pinned to the partitions'
/// CPU for the run (restored afterwards).
///
/// # Errors
/// [`RunError`] if the module cannot be started.
pub fn run_module(
    module: &Module,
    cfg: RunConfig,
    stop: &AtomicBool,
) -> Result<RunReport, RunError> {
    let launched = monotonic_ns();
    let allowed = allowed_cpus();
    let cpu = cfg
        .cpu
        .unwrap_or_else(|| allowed.last().copied().unwrap_or(0));
    // Before anything changes the system's state (the RT throttling) or this thread's.
    check_cpus(module, cpu, &allowed)?;
    let shared = SharedState::create(module, monotonic_ns()).map_err(RunError::Shared)?;
    let late_threshold = cfg.options.late_threshold;
    let switch = cfg.options.switch;
    let (mechanism, park_bound, into_cgroup) = (
        cfg.options.switch,
        cfg.options.park_bound,
        cfg.options.spawn_into_cgroup,
    );
    // Confinement against /proc (docs/ports.md, "Region isolation"): the executive holds every
    // region read-write, so no partition may open its /proc/PID/fd/N or /proc/PID/mem. Not
    // dumpable, another process needs CAP_SYS_PTRACE for that (which partitions drop).
    let confined = !cfg.options.debuggable;
    let was_dumpable = is_dumpable();
    let mut confine_error = None;
    if confined {
        if let Err(e) = set_dumpable(false) {
            let why = format!("the executive could not be made non-dumpable: {e}");
            eprintln!("partix: warning: {why}");
            confine_error = Some(why);
        }
    }
    let mut ex = Executive::new(module, &shared, cfg.options).map_err(RunError::Plan)?;
    // The thread that writes the executive's log lines, started while this thread is still a
    // normal task (it inherits the policy and the CPUs).
    let logger = ex.log_ring().map(|ring| {
        Logger::start(
            ring,
            module.partitions.iter().map(|p| p.name.clone()).collect(),
        )
    });
    let mut unthrottle = if cfg.rt_unthrottle {
        match RtUnthrottle::enter() {
            Ok(g) => Some(g),
            Err(e) => {
                eprintln!("partix: cannot disable RT throttling ({RT_RUNTIME_PATH}): {e}");
                None
            }
        }
    } else {
        None
    };
    let rt = RtThread::enter(cpu);
    if !rt.pinned {
        return Err(RunError::Cpu(format!(
            "--cpu {cpu}: the executive's thread could not be pinned to it"
        )));
    }
    if !rt.realtime {
        eprintln!("partix: warning: cannot use SCHED_FIFO (needs root or CAP_SYS_NICE); windows will be imprecise");
    }
    // Channel regions: created once per run, they outlive partition restarts.
    let channels = ChannelSet::create(module).map_err(RunError::Channels)?;
    let mut sw = OsSwitcher::new(module, &shared, &cfg.programs, &[cpu])
        .map_err(RunError::Program)?
        .with_channels(&channels)
        .with_mechanism(mechanism, park_bound)
        .with_spawn_into_cgroup(into_cgroup)
        .with_confinement(confined);
    raise_descriptor_limit(sw.descriptor_need()).map_err(RunError::Program)?;
    let mut clock = OsClock::new();
    let started = ex.startup_until(&mut clock, &mut sw, stop);
    let launch_to_normal_ns = monotonic_ns() - launched;
    // An HM shutdown or a stop during the initialisation ends the run as one during the run
    // does (the summary, the trace, exit status 3 for a shutdown), not as a failure to start.
    let end = match started {
        Ok(()) => ex.run(&mut clock, &mut sw, stop),
        Err(StartError::HmShutdown) => {
            ex.wind_down(&mut clock, &mut sw);
            EndReason::HmShutdown
        }
        Err(StartError::Stopped) => {
            ex.wind_down(&mut clock, &mut sw);
            EndReason::Stopped
        }
        Err(e) => return Err(RunError::Start(e)),
    };
    // Tear down as a normal task: killing and reaping partitions has no deadline, and an
    // executive spinning at FIFO 99 there would starve the dying partitions' threads on its CPU.
    let realtime = rt.realtime;
    drop(rt);
    let (parks, backstops) = (sw.parks, sw.backstops);
    let backstops_by_partition = std::mem::take(&mut sw.backstops_by_partition);
    let direct_closes_by_partition = std::mem::take(&mut sw.direct_closes_by_partition);
    let pending_parks_by_partition = std::mem::take(&mut sw.pending_parks_by_partition);
    let withheld_by_partition = std::mem::take(&mut sw.withheld_by_partition);
    let pending_off_by_partition = std::mem::take(&mut sw.pending_off_by_partition);
    let distrusted_by_partition = std::mem::take(&mut sw.distrusted_by_partition);
    let strays_by_partition = std::mem::take(&mut sw.strays_by_partition);
    sw.collect_joins();
    let cgroup_error = sw.cgroup_error.take();
    let memory_error = sw.memory_error.take();
    let cpuset_error = sw.cpuset_error.take();
    let users_keep_nice = sw.users_keep_nice.take();
    let users_no_fifo = sw.users_no_fifo.take();
    if let Some(e) = sw.landlock_error.take() {
        let e = format!(
            "{e}: a partition can open another's descriptors through /proc between the other's \
             exec and its runtime's attach (see docs/ports.md, \"Region isolation\")"
        );
        confine_error = Some(confine_error.map_or(e.clone(), |c| format!("{c}; {e}")));
    }
    if let Some(e) = sw.confine_error.take() {
        confine_error = Some(confine_error.map_or(e.clone(), |c| format!("{c}; {e}")));
    }
    let memory_cgroups = std::mem::take(&mut sw.memory_cgroups);
    let oom_kills = sw.oom_kills();
    let spawns = std::mem::replace(&mut sw.spawns, SpawnTimes::new(0));
    drop(sw);
    // The partitions are gone: RT throttling back on, and a failure to restore it reported.
    let rt_restore_error = unthrottle.as_mut().and_then(|u| u.restore().err());
    // And the executive dumpable again if it was (an executive run inside another program).
    if confined && was_dumpable {
        let _ = set_dumpable(true);
    }
    // What is left of the log is written (unless stderr does not take it within a second).
    let log_dropped = logger.map_or(0, |l| l.finish(Duration::from_secs(1)));
    let mut processes = Vec::new();
    let mut partitions = Vec::new();
    for (i, p) in module.partitions.iter().enumerate() {
        partitions.push(PartitionReport {
            name: p.name.clone(),
            stats: ex.partition_stats(i).clone(),
            mode: ex.partition_mode(i),
            restarts: ex.partition_stats(i).restarts,
            backstops: backstops_by_partition.get(i).copied().unwrap_or(0),
            direct_closes: direct_closes_by_partition.get(i).copied().unwrap_or(0),
            pending_parks: pending_parks_by_partition.get(i).copied().unwrap_or(0),
            withheld_signals: withheld_by_partition.get(i).copied().unwrap_or(0),
            pending_off: pending_off_by_partition.get(i).copied().unwrap_or(false),
            strays: strays_by_partition.get(i).copied().unwrap_or(0),
            memory_cgroup: memory_cgroups.get(i).copied().flatten(),
            oom_kills: oom_kills.get(i).copied().unwrap_or(0),
            distrusted: distrusted_by_partition.get(i).copied().unwrap_or(false),
        });
    }
    for t in ex.process_totals() {
        processes.push(ProcessReport {
            partition: t.partition,
            name: t.name,
            jobs: t.jobs,
            mean_response_ns: t.total_response_ns / t.jobs.max(1),
            worst_ctsw_ns: t.worst_ctsw_ns,
            mean_ctsw_ns: t.total_ctsw_ns / t.releases.max(1),
            deadline_misses: t.deadline_misses,
            worst_response_ns: t.worst_response_ns,
        });
    }
    Ok(RunReport {
        end,
        epoch_ns: ex.epoch(),
        startup_ns: ex.startup_ns,
        launch_to_normal_ns,
        frames: ex.frames,
        trace: std::mem::replace(&mut ex.trace, Trace::with_capacity(0, "", Vec::new())),
        overheads: ex.overheads.clone(),
        hm_events: std::mem::replace(&mut ex.hm_events, HmEvents::new(0)),
        partitions,
        processes,
        realtime,
        cpu,
        late_threshold,
        switch,
        parks,
        backstops,
        cgroup_error,
        memory_error,
        cpuset_error,
        users_keep_nice,
        users_no_fifo,
        armed_sleeps: clock.armed_sleeps,
        spawns,
        rt_restore_error,
        log_dropped,
        confined,
        confine_error,
    })
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Return a flag set by SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGTSTP (installing the handlers
/// on first use): pass it to [`run_module`] so Ctrl-C ends the run at the next scheduling point
/// with a summary. SIGHUP (the terminal or ssh session went away) and SIGQUIT (`Ctrl-\`) end
/// the run the same way: their default action killed the executive on the spot, so the
/// partitions' wind-down and [`RtUnthrottle`]'s restore of `sched_rt_runtime_us` never ran,
/// leaving the whole host without RT throttling.
///
/// SIGTSTP (`Ctrl-Z`) ends the run too: its default action stopped the executive alone (the
/// partitions are in process groups of their own), and the window open then never closed —
/// the partition ran on without limit, and at `fg` every missed point ran back to back
/// (review 26). SIGTTOU and SIGTTIN are ignored: a background run (`stty tostop`) was stopped
/// the same way at its first log line; now the line is written (or the read fails). Partition
/// processes get both back at their default. `SIGSTOP` (`kill -STOP`) cannot be caught: it
/// still stops the executive alone.
pub fn stop_on_signals() -> &'static AtomicBool {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        for sig in [libc::SIGTTOU, libc::SIGTTIN] {
            // SAFETY: setting a signal's disposition to SIG_IGN.
            unsafe { libc::signal(sig, libc::SIG_IGN) };
        }
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGTSTP,
        ] {
            // SAFETY: a zeroed sigaction with a handler that only stores an atomic.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_stop_signal as *const () as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(sig, &sa, std::ptr::null_mut());
            }
        }
    });
    &STOP
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Make a process that only sleeps in `cg` with `clone3(CLONE_INTO_CGROUP)`, if the kernel
    /// can.
    fn sleeper_born_in(cg: &PartitionCgroup) -> Option<i32> {
        // SAFETY: the child only calls pause and _exit (async-signal-safe).
        let pid = unsafe { clone_into_cgroup(cg.dir_fd()?)? };
        if pid == 0 {
            loop {
                // SAFETY: pause has no preconditions.
                unsafe { libc::pause() };
            }
        }
        Some(pid)
    }

    /// Wait for child `pid`; return whether SIGKILL ended it.
    fn killed(pid: i32) -> bool {
        let mut st = 0;
        // SAFETY: pid is our child; st a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        r == pid && libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGKILL
    }

    /// A restarted partition's process is born in the cgroup of the process killed before it.
    /// After a `cgroup.kill`, Linux 6.18 kills such a process at birth, so the restart failed
    /// ("the new process ended before exec (killed by SIGKILL)"): `PartitionCgroup::kill`
    /// kills without it.
    /// `--cpu` and `partix:Affinity` are checked against the CPUs the process may use, before
    /// anything is pinned: a CPU outside them (or beyond the kernel's CPU set: `CPU_SET`
    /// panicked where it could not unwind) is refused with a message naming it.
    #[test]
    fn cpus_outside_the_allowed_set_are_refused_with_the_allowed_list() {
        let xml = |affinity: &str| {
            format!(
                r#"<ARINC_653_Module xmlns:partix="urn:partix:config:1">
  <Partition PartitionIdentifier="1" PartitionName="A" EntryPoint="main" {affinity}/>
  <Module_Schedule MajorFrameSeconds="0.01">
    <Partition_Schedule PartitionIdentifier="1" PeriodSeconds="0.01" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0" WindowDurationSeconds="0.01"/>
    </Partition_Schedule>
  </Module_Schedule>
</ARINC_653_Module>"#
            )
        };
        let plain = partix_config::parse_str(&xml(""), None).unwrap();
        let pinned = partix_config::parse_str(&xml(r#"partix:Affinity="3""#), None).unwrap();
        let allowed = [0, 1, 2, 5];
        assert_eq!(check_cpus(&plain, 1, &allowed), Ok(()));
        let e = check_cpus(&plain, 4, &allowed).unwrap_err().to_string();
        assert!(e.contains("--cpu 4") && e.contains("allowed: 0-2,5"), "{e}");
        let e = check_cpus(&plain, libc::CPU_SETSIZE as usize, &allowed)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a CPU this process may use"), "{e}");
        let Err(CpuError::Affinity(e)) = check_cpus(&pinned, 1, &allowed) else {
            panic!("partix:Affinity=\"3\" accepted")
        };
        assert!(
            e.message.contains("partition `A`") && e.message.contains("CPU 3"),
            "{e}"
        );
        // At the attribute's value, with what to do.
        assert_eq!((e.location.line, e.location.col), (2, 91), "{e}");
        assert!(e.help.contains("0-2,5"), "{e}");
        assert_eq!(cpu_list_text(&[]), "none");
        // The process's own CPUs: the last is the default, one beyond them is refused.
        let own = allowed_cpus();
        assert_eq!(pick_cpu(None), Ok(*own.last().unwrap()));
        assert!(pick_cpu(Some(own.last().unwrap() + 1)).is_err());
        assert!(pick_cpu(Some(4096)).is_err());
    }

    /// A program that cannot be found is reported at `partix:Executable` (or at the
    /// `<Partition>` without one) in the configuration's file, with what to do; each kind of
    /// failure is its own variant (`partix check` refuses the first two, which do not depend on
    /// the machine).
    #[test]
    fn programs_not_found_are_reported_at_the_attribute() {
        let xml = |exe: &str| {
            format!(
                r#"<ARINC_653_Module xmlns:partix="urn:partix:config:1">
  <Partition PartitionIdentifier="1" PartitionName="A" EntryPoint="main" {exe}/>
  <Module_Schedule MajorFrameSeconds="0.01">
    <Partition_Schedule PartitionIdentifier="1" PeriodSeconds="0.01" PeriodDurationSeconds="0.01">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0" WindowDurationSeconds="0.01"/>
    </Partition_Schedule>
  </Module_Schedule>
</ARINC_653_Module>"#
            )
        };
        let load = |exe: &str| {
            partix_config::parse_str(&xml(exe), Some(std::path::Path::new("/nonexistent/m.xml")))
                .unwrap()
        };
        let m = load("");
        let Err(ProgramError::NoExecutable(e)) = resolve_program(&m, 0) else {
            panic!("no partix:Executable accepted")
        };
        assert_eq!((e.location.line, e.location.col), (2, 3), "{e}");
        assert!(
            e.to_string().starts_with(
                "/nonexistent/m.xml:2:3: error: partition `A` has no partix:Executable"
            ),
            "{e}"
        );
        assert!(e.help.contains("partix:Executable="), "{e}");
        // A path (relative: resolved against the file's directory) where there is no file.
        let m = load(r#"partix:Executable="bin/a""#);
        let Err(ProgramError::NoSuchFile(e)) = resolve_program(&m, 0) else {
            panic!("a missing path accepted")
        };
        assert_eq!((e.location.line, e.location.col), (2, 93), "{e}");
        assert!(
            e.message.contains("/nonexistent/bin/a: no such file"),
            "{e}"
        );
        // A bare name found nowhere.
        let m = load(r#"partix:Executable="partix-no-such-program""#);
        let Err(ProgramError::NotFound(e)) = resolve_program(&m, 0) else {
            panic!("a missing program accepted")
        };
        assert_eq!((e.location.line, e.location.col), (2, 93), "{e}");
        assert!(
            e.message
                .contains("`partix-no-such-program` not found beside partix"),
            "{e}"
        );
        assert!(e.help.contains("cargo build --release --workspace"), "{e}");
        // Found: an absolute path, and a name in PATH.
        let m = load(r#"partix:Executable="/bin/sh" partix:Arguments="-c true""#);
        let p = resolve_program(&m, 0).unwrap();
        assert_eq!(
            (p.path.as_path(), p.args.len()),
            (std::path::Path::new("/bin/sh"), 2)
        );
        let m = load(r#"partix:Executable="sh""#);
        assert!(resolve_program(&m, 0).unwrap().path.ends_with("sh"));
    }

    /// A thread cannot be pinned to a CPU beyond the kernel's CPU set: `enter` says so instead
    /// of panicking in `CPU_SET`.
    /// Held by the tests that enter an [`RtThread`]: entering and leaving one saves and
    /// restores the process's `RLIMIT_RTTIME`, which `rt_thread_arms_the_rttime_watchdog_...`
    /// checks (found by review).
    static RT_THREADS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn an_rt_thread_on_a_cpu_beyond_the_set_is_not_pinned() {
        let _rt = RT_THREADS.lock().unwrap_or_else(|e| e.into_inner());
        let t = std::thread::spawn(|| RtThread::enter(libc::CPU_SETSIZE as usize).pinned);
        assert!(!t.join().unwrap());
    }

    #[test]
    fn a_process_born_in_a_cgroup_after_its_kill_lives() {
        const TEST: &str = "a_process_born_in_a_cgroup_after_its_kill_lives";
        let mut cg = match PartitionCgroup::create(0) {
            Ok(cg) => cg,
            Err(e) => {
                eprintln!("SKIPPED {TEST}: no writable cgroup v2 hierarchy ({e})");
                return;
            }
        };
        let Some(first) = sleeper_born_in(&cg) else {
            eprintln!("SKIPPED {TEST}: no clone3(CLONE_INTO_CGROUP) (Linux before 5.7)");
            return;
        };
        assert_eq!(cg.holds_only(first), Some(true));
        cg.kill();
        assert!(killed(first));
        // As a respawn does: the kill leaves the cgroup frozen.
        cg.thaw();
        let second = sleeper_born_in(&cg).expect("clone3 worked before");
        std::thread::sleep(Duration::from_millis(50));
        let mut st = 0;
        // SAFETY: second is our child; WNOHANG only looks.
        let r = unsafe { libc::waitpid(second, &mut st, libc::WNOHANG) };
        assert_eq!(
            r, 0,
            "the process born after the kill ended (status {st:#x})"
        );
        assert_eq!(cg.holds_only(second), Some(true));
        cg.kill();
        assert!(killed(second));
    }

    #[test]
    fn the_thread_table_is_read_distinct_with_parked_threads_negative() {
        let layout = std::alloc::Layout::new::<PartitionState>();
        // SAFETY: PartitionState is atomics and plain integers, for which all-zero is valid.
        let st = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<PartitionState>();
        assert!(!st.is_null());
        // SAFETY: st is a valid, zeroed, exclusively owned PartitionState.
        let s = unsafe { &*st };
        let mut out = [0i32; MAX_TIDS];
        assert_eq!(thread_table(s, &mut out), 0);
        // A thread entered twice (a forged table), one parked for good, one in the park
        // handler, one running, a free entry in between, a nonsense entry.
        s.tids[0].store(300, Ordering::Relaxed);
        s.tids[2].store(-100, Ordering::Relaxed);
        s.tids[3].store(200, Ordering::Relaxed);
        s.tid_parked[3].store(1, Ordering::Relaxed);
        s.tids[5].store(300, Ordering::Relaxed);
        s.tids[MAX_TIDS - 1].store(400, Ordering::Relaxed);
        s.tids[7].store(i32::MIN, Ordering::Relaxed);
        let n = thread_table(s, &mut out);
        assert_eq!(&out[..n], &[-100, -200, 300, 400]);
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(st.cast(), layout) };
    }

    /// A child of this test process that runs `sh -c SCRIPT`.
    fn child(script: &str) -> i32 {
        std::process::Command::new("sh")
            .args(["-c", script])
            .spawn()
            .expect("spawn sh")
            .id() as i32
    }

    /// Wait (up to 10 s) until `pid` is no longer our child: the reaper took it.
    fn reaped(pid: i32) -> bool {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if matches!(peek_child(pid), Child::Gone) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn the_executive_looks_at_a_dead_partition_and_the_reaper_reaps_it() {
        // An exit status, seen without reaping: a second look sees the same zombie.
        let pid = child("exit 3");
        let t0 = std::time::Instant::now();
        let death = loop {
            match peek_child(pid) {
                Child::Ended(d) => break d,
                Child::Running if t0.elapsed() < Duration::from_secs(10) => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                _ => panic!("child {pid} did not end"),
            }
        };
        assert_eq!(death, Death::Exited(3));
        assert!(matches!(peek_child(pid), Child::Ended(Death::Exited(3))));
        reap_later(pid);
        assert!(reaped(pid), "the reaper did not reap {pid}");
        // A running child, then killed.
        let pid = child("sleep 30");
        assert!(matches!(peek_child(pid), Child::Running));
        // SAFETY: pid is our child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let t0 = std::time::Instant::now();
        while matches!(peek_child(pid), Child::Running) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "SIGKILL did not end {pid}"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(matches!(
            peek_child(pid),
            Child::Ended(Death::Signaled(libc::SIGKILL))
        ));
        reap_later(pid);
        assert!(reaped(pid), "the reaper did not reap {pid}");
        // Not a child at all.
        assert!(matches!(peek_child(1), Child::Gone));
    }

    fn rttime() -> libc::rlimit {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: r is a valid out-pointer.
        unsafe { libc::getrlimit(libc::RLIMIT_RTTIME, &mut r) };
        r
    }

    #[test]
    fn a_pending_unblocked_signal_is_read_from_the_status_masks() {
        let status = |pnd: &str, blk: &str| {
            format!(
                "Name:\tapex-1\nState:\tR (running)\nSigQ:\t1/96365\nSigPnd:\t{pnd}\n\
                 ShdPnd:\t0000000000000000\nSigBlk:\t{blk}\nSigIgn:\t0000000000000000\n"
            )
        };
        // Signal 37 (SIGRTMIN+3 with glibc's SIGRTMIN 34) is bit 36.
        let bit = "0000001000000000";
        let none = "0000000000000000";
        assert!(pending_unblocked(status(bit, none).as_bytes(), 37));
        assert!(!pending_unblocked(status(bit, bit).as_bytes(), 37));
        assert!(!pending_unblocked(status(none, none).as_bytes(), 37));
        assert!(!pending_unblocked(status(bit, none).as_bytes(), 36));
        assert!(!pending_unblocked(b"Name:\tx\nSigPnd:\tzz\n", 37));
        assert!(!pending_unblocked(b"", 37));
        // The real file of this thread: nothing pending.
        let own = std::fs::read(format!(
            "/proc/self/task/{}/status",
            crate::attach::gettid()
        ))
        .unwrap();
        assert!(!pending_unblocked(&own, 37));
    }

    #[test]
    fn stat_threads_reads_field_20_after_the_command_name() {
        // The command name may hold spaces and parentheses: fields count from the last ')'.
        let line = b"4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 33 0 1234 \
                     10000 200 18446744073709551615";
        assert_eq!(stat_threads(line), Some(33));
        assert_eq!(stat_threads(b"4242 (x) S 1 2 3"), None);
        assert_eq!(stat_threads(b"no parenthesis"), None);
    }

    #[test]
    fn status_state_reads_the_state_line() {
        assert_eq!(
            status_state(b"Name:\tx\nUmask:\t0022\nState:\tR (running)\n"),
            Some(b'R')
        );
        assert_eq!(
            status_state(b"Name:\tsleep\nState:\tS (sleeping)\n"),
            Some(b'S')
        );
        assert_eq!(status_state(b"Name:\tx\nState:"), None);
        assert_eq!(status_state(b"no state"), None);
        // This thread is running as it reads its own status.
        let mut buf = [0u8; 2048];
        let n = read_status(std::process::id() as i32, crate::attach::gettid(), &mut buf).unwrap();
        assert_eq!(status_state(&buf[..n]), Some(b'R'));
    }

    #[test]
    fn own_thread_count_is_readable_from_proc() {
        let fd = {
            let path = CString::new(format!("/proc/{}/stat", std::process::id())).unwrap();
            // SAFETY: valid C string; the descriptor is closed below.
            unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) }
        };
        assert!(fd >= 0);
        let mut buf = [0u8; 1024];
        // SAFETY: valid buffer of its length; fd is open.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        // SAFETY: closing our descriptor.
        unsafe { libc::close(fd) };
        assert!(n > 0);
        assert!(stat_threads(&buf[..n as usize]).is_some_and(|t| t >= 1));
    }

    #[test]
    fn rt_thread_arms_the_rttime_watchdog_and_restores_it() {
        let _rt = RT_THREADS.lock().unwrap_or_else(|e| e.into_inner());
        let before = rttime();
        let cpu = default_cpu();
        let rt = RtThread::enter(cpu);
        let armed = rttime();
        assert_eq!(armed.rlim_cur, RT_WATCHDOG_SOFT_US.min(before.rlim_max));
        assert_eq!(armed.rlim_max, before.rlim_max);
        drop(rt);
        let after = rttime();
        assert_eq!(
            (after.rlim_cur, after.rlim_max),
            (before.rlim_cur, before.rlim_max)
        );
    }

    /// The fallback of [`mark_inherited_cloexec`] for kernels without `close_range` (before
    /// 5.11): a descriptor this process holds without close-on-exec does not reach a program a
    /// child runs after it (a shell that looks for it in its `/proc/self/fd`), with `/proc`'s
    /// listing as with `close_range`.
    #[test]
    fn inherited_descriptors_are_closed_at_exec_without_close_range() {
        for use_close_range in [false, true] {
            // SAFETY: a plain open without O_CLOEXEC; closed below.
            let stray = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY) };
            assert!(stray >= 0);
            let script = CString::new(format!("test ! -e /proc/self/fd/{stray}")).unwrap();
            let argv = [
                c"/bin/sh".as_ptr(),
                c"-c".as_ptr(),
                script.as_ptr(),
                std::ptr::null(),
            ];
            let envp = [std::ptr::null::<libc::c_char>()];
            // SAFETY: the child only makes async-signal-safe calls on data made before the fork.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // SAFETY: as above.
                unsafe {
                    mark_inherited_cloexec(use_close_range);
                    libc::execve(argv[0], argv.as_ptr(), envp.as_ptr());
                    libc::_exit(127);
                }
            }
            assert!(pid > 0);
            let mut st = 0;
            // SAFETY: pid is our child; st a valid out-pointer.
            assert_eq!(unsafe { libc::waitpid(pid, &mut st, 0) }, pid);
            // SAFETY: stray is ours.
            unsafe { libc::close(stray) };
            assert!(
                libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
                "close_range {use_close_range}: descriptor {stray} reached the program \
                 (status {st:#x})"
            );
        }
    }

    /// A process in a Landlock domain of its own (`enter_landlock_domain`, as every partition)
    /// cannot open `/proc/PID/fd/N` or `/proc/PID/mem` of a process in another domain (another
    /// partition) or in none (the executive), even as root with `CAP_SYS_PTRACE` and with both
    /// dumpable; its own descriptors and ordinary files it still opens.
    #[test]
    fn a_landlocked_process_cannot_reach_other_processes_through_proc() {
        if let Err(why) = landlock_abi() {
            eprintln!(
                "a_landlocked_process_cannot_reach_other_processes_through_proc: skipped ({why})"
            );
            return;
        }
        // SAFETY: a plain open; closed below.
        let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        assert!(fd >= 0);
        let mut ready = [0i32; 2];
        // SAFETY: pipe writes two descriptors.
        assert_eq!(unsafe { libc::pipe(ready.as_mut_ptr()) }, 0);
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // Child A: a domain of its own, then waits to be killed.
        // SAFETY: the children only make async-signal-safe calls on data made before the fork.
        let a = unsafe { libc::fork() };
        if a == 0 {
            // SAFETY: as above.
            unsafe {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                let ok = enter_landlock_domain().is_ok();
                libc::write(ready[1], [u8::from(ok)].as_ptr().cast(), 1);
                loop {
                    libc::pause();
                }
            }
        }
        assert!(a > 0);
        let mut b = [0u8];
        // SAFETY: b is a valid buffer of 1 byte.
        assert_eq!(unsafe { libc::read(ready[0], b.as_mut_ptr().cast(), 1) }, 1);
        assert_eq!(b[0], 1, "child A could not enter a Landlock domain");
        let paths: Vec<CString> = [
            format!("/proc/{a}/fd/{fd}"),
            format!("/proc/{a}/mem"),
            format!("/proc/{parent}/fd/{fd}"),
            format!("/proc/{parent}/mem"),
        ]
        .iter()
        .map(|p| CString::new(p.as_str()).unwrap())
        .collect();
        let own = CString::new(format!("/proc/self/fd/{fd}")).unwrap();
        let null = c"/dev/null";
        // Child B: first the paths with no domain (they open: root, or the same user and
        // dumpable), then in a domain of its own (refused). Exit status: bit i set if path i was
        // opened in the domain, 64 if one was refused without, 128 if its own failed.
        // SAFETY: as above.
        let pb = unsafe { libc::fork() };
        if pb == 0 {
            // SAFETY: as above.
            unsafe {
                let open = |p: &std::ffi::CStr| {
                    let r = libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
                    if r >= 0 {
                        libc::close(r);
                    }
                    r >= 0
                };
                let mut status = 0;
                if !paths.iter().all(|p| open(p)) {
                    status |= 64;
                }
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                if enter_landlock_domain().is_err() {
                    libc::_exit(255);
                }
                for (i, p) in paths.iter().enumerate() {
                    if open(p) {
                        status |= 1 << i;
                    }
                }
                if !open(&own) || !open(null) {
                    status |= 128;
                }
                libc::_exit(status);
            }
        }
        assert!(pb > 0);
        let mut st = 0;
        // SAFETY: pb is our child; st a valid out-pointer.
        assert_eq!(unsafe { libc::waitpid(pb, &mut st, 0) }, pb);
        // SAFETY: a is our child.
        unsafe {
            libc::kill(a, libc::SIGKILL);
            libc::waitpid(a, std::ptr::null_mut(), 0);
            libc::close(fd);
            libc::close(ready[0]);
            libc::close(ready[1]);
        }
        assert!(libc::WIFEXITED(st), "status {st:#x}");
        let code = libc::WEXITSTATUS(st);
        assert_eq!(
            code & 64,
            0,
            "without a domain the paths were refused: {paths:?}"
        );
        assert_eq!(
            code & 128,
            0,
            "in its domain, its own descriptor or /dev/null was refused"
        );
        assert_eq!(
            code & 15,
            0,
            "in its domain it opened (bit i: path i) {code:#b}: {paths:?}"
        );
    }

    /// `sched_rt_runtime_us` is restored after the run; a restore that fails is reported with
    /// the path and the value (it was ignored: the host silently kept no RT throttling).
    #[test]
    fn a_failed_restore_of_rt_throttling_is_reported() {
        let dir = std::env::temp_dir().join(format!("partix-rt-restore-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("sched_rt_runtime_us");
        std::fs::write(&file, "950000\n").unwrap();
        let mut u = RtUnthrottle::enter_at(&file).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "-1\n");
        assert_eq!(u.restore(), Ok(()));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "950000\n");
        // Once restored, nothing more is written.
        assert_eq!(u.restore(), Ok(()));
        // A write that fails (the file's directory is now a plain file: ENOTDIR).
        let mut u = RtUnthrottle::enter_at(&file).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::write(&dir, "").unwrap();
        let e = u.restore().unwrap_err();
        assert!(
            e.contains(&*file.to_string_lossy()) && e.contains("950000"),
            "{e}"
        );
        drop(u);
        std::fs::remove_file(&dir).unwrap();
    }

    /// The spawn times of a restart loop stay bounded: the startup's (one per partition) are
    /// kept in order, every later one is counted in a fixed-size histogram (a list of every
    /// spawn grew by one per restarted window).
    #[test]
    fn spawn_times_are_bounded() {
        let mut t = SpawnTimes::new(3);
        let cap = t.startup_ns.capacity();
        for ns in [10, 20, 30] {
            t.record(ns);
        }
        for i in 0..100_000u64 {
            t.record(500_000 + i % 1000);
        }
        assert_eq!(t.startup_ns, [10, 20, 30]);
        assert_eq!(t.startup_ns.capacity(), cap);
        assert_eq!(t.respawn_ns.len(), 100_000);
        assert_eq!(t.total(), 100_003);
        assert!(t.respawn_ns.max() >= 500_999 && t.respawn_ns.min() <= 500_000);
    }
}

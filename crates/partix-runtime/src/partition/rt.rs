//! Internal: the runtime's state, process threads, control signal, priorities and sleeps.
//!
//! One [`Runtime`] per partition process, built on the first APEX call. It holds:
//! - the process table (`Inner`, behind a mutex that only APEX calls take, never a status read);
//! - one [`ProcCtl`] of atomics per process (futex words and the thread id), which the control
//!   signal handler reads;
//! - the NORMAL-mode gate and the release anchor.
//!
//! A process is a thread (an *incarnation*) that waits on `ProcCtl::gen` until START. STOP of
//! another process and STOP_SELF abandon the incarnation: a fresh incarnation (a new thread,
//! parked until the next START) replaces it, so a later START runs the entry point from its
//! beginning without unwinding foreign frames (forced unwinding through Rust and C frames is not
//! sound).
//!
//! The abandoned thread ends with a bare `exit` system call ([`end_incarnation`]): no unwinding,
//! no thread-local destructors, so nothing of the application runs after the STOP. The kernel
//! frees the task; the thread's glibc stack is taken back when the next spawn joins it
//! (`pthread_tryjoin_np` on the abandoned `pthread_t`s). Process threads are made with
//! `pthread_create` directly, not `std::thread`, because std gives each thread a signal alternate
//! stack (its own mapping) that only its normal end frees. So a partition that STOPs and STARTs
//! its processes forever keeps a bounded number of threads and mappings; what a stopped thread
//! leaks is only its small heap records (Rust's per-thread data, an allocator cache).
//!
//! SUSPEND and STOP of another process reach it asynchronously through [`control_signal`]: its
//! handler (futex syscalls and atomics only) parks the thread while it is suspended, or forever when
//! its incarnation was stopped. A thread inside an APEX call's critical section defers the request
//! until it leaves the section, so the runtime's own lock is never held by a parked thread.
//!
//! # Deferral of control signals
//! A critical section is a [`Deferral`] (from [`defer_control`]; [`Runtime::with_inner`] opens
//! one around the runtime lock, and the port layer around every port lock). It costs no system
//! call: entering and leaving bump a per-thread depth counter (a thread-local `Cell`, separated
//! from the handler only by compiler fences: the handler runs on the same thread). The handler,
//! finding the depth non-zero, only sets a per-thread *pending* flag and returns; the outermost
//! section acts on the flag when it ends (parks while suspended, or forever when stopped). A
//! request that arrives outside every section is honoured by the handler at once, as before. So a
//! thread is never parked while it holds a lock the rest of the partition needs, and a STOP or
//! SUSPEND that arrives inside a section takes effect right after it.
//!
//! A section that waits (`wait_sampling_message` waits on the channel under the port lock) polls
//! [`control_pending`] on each spin and before each park and leaves the section when it turns
//! true: the request takes effect at once, not at the end of the wait, and a resumed process
//! takes the lock again and waits for what is left of its time-out.
#![allow(unsafe_code)]

use super::error::{ApexError, ApexResult};
use super::hm::ErrorStatus;
use super::process::ProcessAttributes;
pub(crate) use crate::attach::gettid;
use crate::attach::{monotonic_ns, PartitionContext};
use crate::state::{process_state, ProcessSlot, ENV_DESCRIPTOR_TABLE, MAX_PROCESSES};
use partix_shm::futex;
use std::cell::Cell;
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Index of the error handler's control block (after the regular processes).
pub(crate) const EH_INDEX: usize = MAX_PROCESSES;
const NO_INDEX: u32 = u32::MAX;

/// SCHED_FIFO priority of a process holding the preemption lock (above every process).
pub(crate) const FIFO_LOCK: i32 = 97;
/// SCHED_FIFO priority of the error handler process.
pub(crate) const FIFO_ERROR_HANDLER: i32 = 97;
/// SCHED_FIFO priority of the partition's timer / deadline-monitor / HM thread.
pub(crate) const FIFO_MONITOR: i32 = 98;
// A partition under its own user gets SCHED_FIFO up to RLIMIT_RTPRIO only.
const _: () = assert!(FIFO_MONITOR <= crate::executive::os::PARTITION_RTPRIO_MAX);

/// Wait reason: waiting for its release (DELAYED_START, first periodic release, NORMAL mode).
pub(crate) const W_RELEASE: u32 = 1;
/// Wait reason: TIMED_WAIT.
pub(crate) const W_TIMED: u32 = 2;
/// Wait reason: PERIODIC_WAIT.
pub(crate) const W_PERIOD: u32 = 4;
/// Wait reason: suspended (SUSPEND or SUSPEND_SELF).
pub(crate) const W_SUSPEND: u32 = 8;
/// Wait reason: blocked on a resource (a port, buffer, semaphore, event...): see
/// [`Runtime::enter_resource_wait`].
pub(crate) const W_RESOURCE: u32 = 16;

/// `ProcCtl::suspend` bit: suspended.
pub(crate) const SUSP: u32 = 1;
/// `ProcCtl::suspend` bit: the process suspended itself and waits with its own time-out.
pub(crate) const SUSP_SELF: u32 = 2;
/// `ProcCtl::suspend` sequence increment (the upper bits count changes).
pub(crate) const SUSP_SEQ: u32 = 4;

/// A mutex with priority inheritance (`FUTEX_LOCK_PI`): a low-priority process inside an APEX
/// call's critical section runs at the priority of the highest process waiting for the lock, so a
/// medium-priority process cannot prolong the wait (bounded priority inversion).
///
/// The uncontended paths are one compare-and-swap each; the kernel takes over only on contention.
pub(crate) struct PiMutex<T> {
    word: AtomicU32,
    data: UnsafeCell<T>,
}

// SAFETY: the data is only reached through a guard, and a guard exists only while the lock word
// holds the owner's thread id (mutual exclusion by the futex protocol).
unsafe impl<T: Send> Sync for PiMutex<T> {}

/// Exclusive access to a [`PiMutex`]'s data; unlocks on drop.
pub(crate) struct PiGuard<'a, T> {
    m: &'a PiMutex<T>,
}

thread_local! {
    static TID: Cell<u32> = const { Cell::new(0) };
}

/// The calling thread's kernel thread id, cached in a thread-local (one `%fs`-relative load
/// once known: it is on every port call's path).
#[inline(always)]
pub(crate) fn cached_tid() -> u32 {
    let t = TID.get();
    if t != 0 {
        t
    } else {
        cache_tid()
    }
}

#[cold]
#[inline(never)]
fn cache_tid() -> u32 {
    let t = gettid() as u32;
    TID.set(t);
    t
}

impl<T> PiMutex<T> {
    /// Return an unlocked mutex holding `v`.
    pub const fn new(v: T) -> PiMutex<T> {
        PiMutex {
            word: AtomicU32::new(0),
            data: UnsafeCell::new(v),
        }
    }

    /// Lock, blocking with priority inheritance while another thread holds the lock.
    pub fn lock(&self) -> PiGuard<'_, T> {
        let tid = cached_tid();
        // SYNC POINT: Acquire on taking the lock pairs with the Release of `unlock`.
        if self
            .word
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            loop {
                // SAFETY: the word is a live, aligned u32 used only with the PI futex protocol.
                let r = unsafe {
                    libc::syscall(
                        libc::SYS_futex,
                        self.word.as_ptr(),
                        libc::FUTEX_LOCK_PI | libc::FUTEX_PRIVATE_FLAG,
                        0u32,
                        std::ptr::null::<libc::timespec>(),
                        std::ptr::null::<u32>(),
                        0u32,
                    )
                };
                if r == 0 {
                    break;
                }
                // EINTR/EAGAIN: retry. Any other error (not expected) falls back to spinning
                // on the compare-and-swap so the lock stays correct.
                if self
                    .word
                    .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        PiGuard { m: self }
    }

    fn unlock(&self) {
        let tid = cached_tid();
        // SYNC POINT: Release pairs with the Acquire of `lock`.
        if self
            .word
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // Waiters (FUTEX_WAITERS set): the kernel hands the lock over.
            // SAFETY: as in `lock`; we own the lock.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.word.as_ptr(),
                    libc::FUTEX_UNLOCK_PI | libc::FUTEX_PRIVATE_FLAG,
                    0u32,
                    std::ptr::null::<libc::timespec>(),
                    std::ptr::null::<u32>(),
                    0u32,
                )
            };
        }
    }
}

impl<T> std::ops::Deref for PiGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves this thread holds the lock.
        unsafe { &*self.m.data.get() }
    }
}

impl<T> std::ops::DerefMut for PiGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves this thread holds the lock, and `&mut self` is unique.
        unsafe { &mut *self.m.data.get() }
    }
}

impl<T> Drop for PiGuard<'_, T> {
    fn drop(&mut self) {
        self.m.unlock();
    }
}

/// Return the real-time signal the runtime uses to SUSPEND/STOP another process (`SIGRTMIN+2`).
pub fn control_signal() -> libc::c_int {
    libc::SIGRTMIN() + 2
}

/// Per-process atomics, readable from the control signal handler.
pub(crate) struct ProcCtl {
    /// Activation futex word: bumped by START (and by the HM for the error handler).
    pub gen: AtomicU32,
    /// Incarnation number: bumped when the process is stopped from outside or stops itself.
    pub incarnation: AtomicU32,
    /// Suspension futex word ([`SUSP`], [`SUSP_SELF`], sequence).
    pub suspend: AtomicU32,
    /// Kernel thread id of the current incarnation.
    pub tid: AtomicI32,
    /// Start-up handshake of a new incarnation.
    pub ready: AtomicU32,
    /// Deadline (module ns) already reported as missed.
    pub reported_deadline: AtomicU64,
    /// `pthread_t` of the current incarnation (0: none yet). Only touched under the runtime lock.
    pub thread: AtomicU64,
    /// The queuing port wait with a time-out the process is in, for the deadline monitor's look
    /// at its deadline: 0 = none, else the port's and the wait's word
    /// (`ports::port_wait_word`). Set by the process when it joins the port's line, cleared
    /// under the port lock by whoever takes it out of the line.
    pub port_wait: AtomicU64,
    /// When the time-out of the wait in `port_wait` expires (module ns); written before it.
    pub port_wait_until: AtomicU64,
    /// The queuing port whose line the process is in (its index in the registry plus 1; 0:
    /// none), with or without a time-out: SET_PRIORITY wakes that port's waiters, whose
    /// PRIORITY order may have changed (`ports::priority_changed`). Stored when the process
    /// joins the line, cleared when its wait returns; a process stopped while it waited leaves
    /// it set, which costs at most one needless wake-up of that port's waiters.
    pub port_line: AtomicU32,
    /// The queuing port wait the process is in was served in its place (its message received,
    /// or sent, for it: `ports::QueuingPort::serve_waiters`): the incarnation it was served in,
    /// plus 1 (0: not served). ARINC 653 makes the process READY then, before its thread runs to
    /// collect what it was given: GET_PROCESS_STATUS shows it READY unless it is suspended.
    /// Cleared when the process joins a line and after its wait returns.
    pub port_served: AtomicU32,
}

impl ProcCtl {
    const fn new() -> ProcCtl {
        ProcCtl {
            gen: AtomicU32::new(0),
            incarnation: AtomicU32::new(0),
            suspend: AtomicU32::new(0),
            tid: AtomicI32::new(0),
            ready: AtomicU32::new(0),
            reported_deadline: AtomicU64::new(u64::MAX),
            thread: AtomicU64::new(0),
            port_wait: AtomicU64::new(0),
            port_wait_until: AtomicU64::new(u64::MAX),
            port_line: AtomicU32::new(0),
            port_served: AtomicU32::new(0),
        }
    }
}

/// A process as the runtime tracks it (under the runtime lock).
pub(crate) struct Proc {
    /// Attributes given at creation.
    pub attrs: ProcessAttributes,
    /// DORMANT.
    pub dormant: bool,
    /// Wait reasons (`W_*`); none = READY/RUNNING.
    pub reasons: u32,
    /// The wait reasons among `reasons` that end by themselves at `wait_ends` (a time-out, a
    /// release point): set by [`Proc::wait_for`].
    pub timed: u32,
    /// Module time (ns) at which the `timed` reasons end.
    pub wait_ends: u64,
    /// SUSPEND came after the process's SUSPEND_SELF had timed out but before its thread ran
    /// to return TIMED_OUT: it returns TIMED_OUT once resumed.
    pub self_suspend_timed_out: bool,
    /// Current priority.
    pub current_priority: i32,
    /// SCHED_FIFO priority last applied to the thread.
    pub applied_fifo: i32,
    /// Release time of the pending or current job (module ns); `None` until NORMAL is entered for
    /// a process started during initialisation.
    pub release_ns: Option<u64>,
    /// Delay of a start during initialisation, applied from the NORMAL anchor.
    pub start_delay: u64,
    /// Current absolute deadline (module ns; `u64::MAX` = none).
    pub deadline_ns: u64,
}

/// The process table and everything else APEX calls change.
pub(crate) struct Inner {
    /// Regular processes by index (`ProcessId` = index + 1).
    pub procs: Vec<Proc>,
    /// The error handler, once created.
    pub eh: Option<Proc>,
    /// Index of the process holding the preemption lock.
    pub lock_owner: Option<usize>,
    /// Errors waiting for GET_ERROR_STATUS.
    pub errors: VecDeque<ErrorStatus>,
    /// Errors dropped because the queue was full.
    pub errors_dropped: u64,
}

impl Inner {
    /// Return the process (or the error handler) at `idx`.
    pub fn proc_mut(&mut self, idx: usize) -> Option<&mut Proc> {
        if idx == EH_INDEX {
            self.eh.as_mut()
        } else {
            self.procs.get_mut(idx)
        }
    }
}

/// The partition runtime.
pub(crate) struct Runtime {
    /// The module state.
    pub ctx: &'static PartitionContext,
    /// The lock of the process table.
    pub inner: PiMutex<Inner>,
    /// Control blocks, `MAX_PROCESSES` processes then the error handler.
    pub ctl: [ProcCtl; MAX_PROCESSES + 1],
    /// Attributes by index, published once at creation (lock-free reads for status services).
    pub attrs: [OnceLock<ProcessAttributes>; MAX_PROCESSES],
    /// Non-zero once NORMAL mode is entered and the release anchor is known (futex word).
    pub gate: AtomicU32,
    /// Release anchor: the first window start in NORMAL mode (module ns).
    pub anchor_ns: AtomicU64,
    /// Bumped when a deadline moves earlier (futex word of the deadline monitor).
    pub kick: AtomicU32,
    /// The deadline the monitor sleeps until (0 while it scans, `u64::MAX` = none).
    pub monitor_until: AtomicU64,
    /// SCHED_FIFO is in use (false after the first EPERM).
    pub fifo: AtomicBool,
}

static RT: OnceLock<Runtime> = OnceLock::new();

thread_local! {
    static SELF_IDX: Cell<u32> = const { Cell::new(NO_INDEX) };
    static SELF_INC: Cell<u32> = const { Cell::new(0) };
    /// Depth of the critical sections the thread is in (control signals deferred while > 0).
    static DEFER_DEPTH: Cell<u32> = const { Cell::new(0) };
    /// A control signal arrived inside a critical section: honour it when the last one ends.
    static DEFER_PENDING: Cell<bool> = const { Cell::new(false) };
}

/// A critical section of the calling thread: while one exists, the control signal (SUSPEND /
/// STOP from another process) is deferred, and when the outermost one is dropped a deferred
/// request is honoured (the thread parks there). No system call; sections nest.
///
/// Hold it across every lock shared with other processes of the partition: create it before
/// taking the lock and drop it after releasing the lock (in a struct holding both, declare the
/// lock guard first: fields drop in declaration order).
pub(crate) struct Deferral {
    /// Tied to the thread (not `Send`): the depth counter is per thread.
    _thread: std::marker::PhantomData<*const ()>,
}

/// Enter a critical section (see [`Deferral`]).
#[inline(always)]
pub(crate) fn defer_control() -> Deferral {
    DEFER_DEPTH.with(|c| c.set(c.get() + 1));
    // The handler runs on this thread: the compiler must not move the section's memory accesses
    // (the lock word) above the depth store.
    compiler_fence(Ordering::SeqCst);
    Deferral {
        _thread: std::marker::PhantomData,
    }
}

impl Drop for Deferral {
    #[inline(always)]
    fn drop(&mut self) {
        compiler_fence(Ordering::SeqCst);
        let depth = DEFER_DEPTH.with(|c| {
            let d = c.get() - 1;
            c.set(d);
            d
        });
        compiler_fence(Ordering::SeqCst);
        // A signal from here on is honoured by the handler itself (it sets the flag only at a
        // non-zero depth); one that came inside the section left the flag. The common case is
        // one load.
        if depth == 0 && DEFER_PENDING.with(|c| c.get()) {
            DEFER_PENDING.with(|c| c.set(false));
            honour_pending();
        }
    }
}

#[cold]
fn honour_pending() {
    if let Some(r) = RT.get() {
        r.honour_commands();
    }
}

/// Return whether the calling thread is inside a critical section ([`Deferral`]).
fn deferring() -> bool {
    DEFER_DEPTH.with(|c| c.get()) != 0
}

/// Return whether the calling thread is outside every critical section: a section it opens next
/// is the outermost one, whose end honours a deferred control request.
pub(crate) fn outside_sections() -> bool {
    !deferring()
}

/// Return whether a control request (SUSPEND / STOP) reached the calling thread inside a critical
/// section and waits for the section to end. One thread-local load: cheap enough for every
/// iteration of a spin loop.
///
/// A wait performed inside a section (one that cannot drop its lock while it waits) polls this
/// on each spin and before each park, and gives up when it turns true so that its outermost
/// section ends and the request takes effect at once. The signal that set it also interrupts a
/// park in progress (a `futex` wait with a time-out and `poll` return `EINTR` after a handled
/// signal, even under `SA_RESTART`; a `futex` wait without one would be restarted: park with a
/// time-out), and the waiter re-checks before it parks again.
#[inline]
pub(crate) fn control_pending() -> bool {
    // The flag is set by the signal handler on this thread: the load must not be hoisted out of
    // the caller's loop.
    compiler_fence(Ordering::SeqCst);
    DEFER_PENDING.with(|c| c.get())
}

/// Return the runtime, building it on first use.
///
/// A partition whose module state cannot be mapped cannot run at all: the error is printed and
/// the process exits with status 70 (`EX_SOFTWARE`).
pub(crate) fn rt() -> &'static Runtime {
    if let Some(r) = RT.get() {
        return r;
    }
    RT.get_or_init(|| {
        let ctx = match PartitionContext::get() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("partix partition: {e}");
                std::process::exit(70);
            }
        };
        install_control_handler();
        // Light store-load barriers on the message paths (the notifier's, the port lock's);
        // before any process thread starts (partix_shm::barrier).
        partix_shm::barrier::enable();
        // The message paths' clock measures its TSC rate over the process's first millisecond
        // (partix_shm::clock): here, once, rather than by reading clock_gettime on the first
        // millisecond of messages.
        partix_shm::clock::calibrate();
        if ctx.is_standalone() {
            standalone_setup(ctx);
        }
        // A restarted partition may find the previous incarnation's process table in its region:
        // the fields the partition owns start afresh.
        let p = ctx.partition();
        p.n_processes.store(0, Ordering::Release);
        p.lock_level.store(0, Ordering::Release);
        for s in &p.processes {
            s.deadline_ns.store(u64::MAX, Ordering::Release);
            s.state.store(process_state::DORMANT, Ordering::Release);
        }
        Runtime {
            ctx,
            inner: PiMutex::new(Inner {
                procs: Vec::new(),
                eh: None,
                lock_owner: None,
                errors: VecDeque::new(),
                errors_dropped: 0,
            }),
            ctl: [const { ProcCtl::new() }; MAX_PROCESSES + 1],
            attrs: [const { OnceLock::new() }; MAX_PROCESSES],
            gate: AtomicU32::new(0),
            anchor_ns: AtomicU64::new(0),
            kick: AtomicU32::new(0),
            monitor_until: AtomicU64::new(0),
            fifo: AtomicBool::new(true),
        }
    })
}

/// Standalone: pin the process to the CPU it runs on (uniprocessor semantics for SCHED_FIFO, as
/// the executive does) and adopt the start condition of a standalone restart.
fn standalone_setup(ctx: &PartitionContext) {
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    if cpu >= 0 {
        // SAFETY: set is a valid, zeroed cpu_set_t; CPU_SET stays in bounds for cpu < 1024;
        // sched_setaffinity(0) affects the calling thread, inherited by threads it creates later.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
    // The module runs the configuration's initial schedule (without one: schedule 0).
    if let (Some(m), Some(ms)) = (super::hm::config(), ctx.standalone_module()) {
        let id = m.initial().id.0;
        ms.current_schedule.store(id, Ordering::Release);
        ms.next_schedule.store(id, Ordering::Release);
    }
    let p = ctx.partition();
    if let Some((mode, cond, restarts)) = std::env::var(super::partition::ENV_STANDALONE_RESTART)
        .ok()
        .and_then(|v| {
            let mut it = v.split(',').map(|x| x.parse::<u32>().ok());
            Some((it.next()??, it.next()??, it.next()??))
        })
    {
        p.operating_mode.store(mode, Ordering::Release);
        p.start_condition.store(cond, Ordering::Release);
        p.restarts.store(restarts, Ordering::Release);
    }
}

fn install_control_handler() {
    // SAFETY: an all-zero sigaction is a valid start; the handler is async-signal-safe (atomics,
    // thread-locals already initialised by the thread, futex and sigprocmask syscalls).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_control_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(control_signal(), &sa, std::ptr::null_mut());
    }
}

extern "C" fn on_control_signal(_sig: libc::c_int) {
    // SAFETY: __errno_location returns this thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    if deferring() {
        DEFER_PENDING.with(|c| c.set(true));
    } else if let Some(r) = RT.get() {
        r.honour_commands();
    }
    // SAFETY: as above; restore the interrupted code's errno.
    unsafe { *libc::__errno_location() = errno };
}

/// Block every signal in the calling thread.
fn block_all_signals() {
    // SAFETY: a filled sigset blocks everything blockable; rt_sigprocmask is async-signal-safe.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// End the calling thread, a stopped incarnation whose `pthread_t` its replacement queued for
/// joining ([`Runtime::replace_incarnation`]): block every signal, leave the gate's count, and
/// exit the thread with the bare system call (no unwinding, no destructors: nothing of the
/// application runs any more). The main thread is never an incarnation; it parks forever
/// instead. Async-signal-safe.
pub(crate) fn end_incarnation() -> ! {
    block_all_signals();
    // SAFETY: getpid has no preconditions.
    if gettid() == unsafe { libc::getpid() } {
        park_forever();
    }
    crate::attach::note_thread_ends();
    loop {
        // SAFETY: SYS_exit ends only the calling thread; nothing on its stack is referenced by
        // anybody else (the runtime's queues own their entries), and glibc frees the stack when
        // the thread is joined after the kernel cleared its tid.
        unsafe { libc::syscall(libc::SYS_exit, 0) };
    }
}

/// Block every signal in this thread and sleep forever (the main thread after the partition's
/// mode change, initialisation code that calls STOP_SELF).
pub(crate) fn park_forever() -> ! {
    block_all_signals();
    // It blocks the executive's park signal too: the gate must not wait for it.
    crate::attach::note_parked_for_good();
    static NEVER: AtomicU32 = AtomicU32::new(0);
    loop {
        futex::wait(&NEVER, 0, None);
    }
}

/// Abandoned incarnations whose threads are not joined yet.
fn abandoned() -> std::sync::MutexGuard<'static, Vec<libc::pthread_t>> {
    static ABANDONED: std::sync::Mutex<Vec<libc::pthread_t>> = std::sync::Mutex::new(Vec::new());
    ABANDONED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Join every abandoned incarnation that has ended (glibc takes its stack back); keep the rest
/// for a later spawn. Called under the runtime lock.
fn join_abandoned() {
    abandoned().retain(|&t| {
        // SAFETY: t came from pthread_create, is joinable and was joined by nobody: it leaves
        // the list the first time a join succeeds. A thread still running (or the caller itself)
        // makes tryjoin fail without side effects.
        unsafe { libc::pthread_tryjoin_np(t, std::ptr::null_mut()) != 0 }
    });
}

/// A process thread's body.
type ThreadBody = Box<dyn FnOnce() + Send + 'static>;

extern "C" fn thread_start(arg: *mut libc::c_void) -> *mut libc::c_void {
    // SAFETY: arg is the Box<ThreadBody> leaked by spawn_thread for this thread alone.
    let body = unsafe { Box::from_raw(arg.cast::<ThreadBody>()) };
    crate::attach::register_thread();
    // A panic ends this thread only, as in a std thread (the panic hook has reported it); the
    // thread stays joinable and is joined when its process is stopped.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || (*body)()));
    crate::attach::leave_thread_table();
    std::ptr::null_mut()
}

/// Start a joinable thread named `name` (at most 15 bytes) with a stack of `stack` bytes (at
/// least `PTHREAD_STACK_MIN`) running `body`; return its `pthread_t`.
fn spawn_thread(stack: usize, name: &str, body: ThreadBody) -> std::io::Result<libc::pthread_t> {
    let arg = Box::into_raw(Box::new(body));
    // SAFETY: attr is initialised before use and destroyed after; pthread_create gets a valid
    // start routine and the leaked box, which the thread (or the error path) takes back.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        let mut e = libc::pthread_attr_init(&mut attr);
        if e == 0 {
            e = libc::pthread_attr_setstacksize(&mut attr, stack.max(libc::PTHREAD_STACK_MIN));
        }
        let mut t: libc::pthread_t = 0;
        if e == 0 {
            e = libc::pthread_create(&mut t, &attr, thread_start, arg.cast());
        }
        libc::pthread_attr_destroy(&mut attr);
        if e != 0 {
            drop(Box::from_raw(arg));
            return Err(std::io::Error::from_raw_os_error(e));
        }
        let mut n = [0u8; 16];
        let len = name.len().min(15);
        n[..len].copy_from_slice(&name.as_bytes()[..len]);
        libc::pthread_setname_np(t, n.as_ptr().cast());
        Ok(t)
    }
}

/// Return whether each process of this partition runs with its own copy of the descriptor table
/// ([`ENV_DESCRIPTOR_TABLE`] = `per-process`, from `partix:DescriptorTable`); read once.
fn per_process_descriptors() -> bool {
    static PER_PROCESS: OnceLock<bool> = OnceLock::new();
    *PER_PROCESS.get_or_init(|| match std::env::var(ENV_DESCRIPTOR_TABLE) {
        Ok(v) if v == "per-process" => true,
        Ok(v) if v == "shared" || v.is_empty() => false,
        Ok(v) => {
            eprintln!(
                "partix partition: {ENV_DESCRIPTOR_TABLE}={v:?} is neither `shared` nor \
                 `per-process`; the processes share one descriptor table"
            );
            false
        }
        Err(_) => false,
    })
}

/// Give the calling process thread its own copy of the partition's descriptor table (called
/// once per incarnation, when it first runs in NORMAL mode, after every port exists): the
/// kernel then finds the thread's table unshared and takes no reference on a file for each
/// system call on a descriptor (`fdget`'s fast path). On this 2-vCPU VM a socket call in a
/// multi-threaded process costs about 70 ns more than in a single-threaded one (a `recv` loop:
/// 490 → 565 ns, and 490 ns again after the `unshare`); a udp round trip makes four such calls
/// on its path. Descriptors opened or closed by the process from then on are its own.
fn unshare_descriptors() {
    // SAFETY: unshare(CLONE_FILES) replaces only the calling thread's descriptor table by a copy
    // (every descriptor stays open, at the same number); no memory is passed.
    if unsafe { libc::unshare(libc::CLONE_FILES) } != 0 {
        eprintln!(
            "partix partition: unshare(CLONE_FILES): {}; this process shares the partition's \
             descriptor table",
            std::io::Error::last_os_error()
        );
    }
}

/// Return the index of the calling process (`EH_INDEX` for the error handler), if it is one.
pub(crate) fn self_index() -> Option<usize> {
    let i = SELF_IDX.with(|c| c.get());
    (i != NO_INDEX).then_some(i as usize)
}

/// Sleep until module time `module_ns` (absolute `CLOCK_MONOTONIC` sleep; returns early never,
/// but a control signal may park the thread in between).
pub(crate) fn sleep_until(ctx: &PartitionContext, module_ns: u64) {
    let target = ctx.to_monotonic_ns(module_ns);
    while monotonic_ns() < target {
        let ts = libc::timespec {
            tv_sec: (target / 1_000_000_000) as libc::time_t,
            tv_nsec: (target % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: ts is a valid timespec; the remainder pointer may be null with TIMER_ABSTIME.
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
    }
}

/// Write the name of a slot that is not published yet (index == `n_processes`, lock held).
pub(crate) fn write_slot_name(s: &ProcessSlot, bytes: &[u8; crate::state::NAME_LEN]) {
    // SAFETY: called by CREATE_PROCESS under the runtime lock for the slot at index
    // `n_processes`, before the Release store of `n_processes` publishes it; nobody reads an
    // unpublished slot.
    unsafe { s.name.write(bytes) }
}

impl Proc {
    /// Add wait reason `reason`, which ends by itself at module time `ends` (a time-out, a
    /// release point), or only by another process's action or an event (`None`).
    pub fn wait_for(&mut self, reason: u32, ends: Option<u64>) {
        self.reasons |= reason;
        match ends {
            Some(t) => {
                self.timed = reason;
                self.wait_ends = t;
            }
            None => self.timed &= !reason,
        }
    }

    /// The module time from which the process is READY without anyone's action (its every wait
    /// reason ends by itself), for [`ProcessSlot::wait_ends_ns`]; 0 = never (or not waiting).
    pub fn wait_ends_ns(&self) -> u64 {
        if !self.dormant && self.reasons != 0 && self.reasons & !self.timed == 0 {
            self.wait_ends.max(1)
        } else {
            0
        }
    }

    /// Whether the timed wait `reason` (from [`Proc::wait_for`]) has ended by itself at `now`,
    /// although the process has not run since to leave it.
    pub fn timed_out(&self, reason: u32, now: u64) -> bool {
        self.reasons & reason != 0 && self.timed & reason != 0 && now >= self.wait_ends
    }
}

/// Return the `process_state` value published for a process (WAITING also after its wait ended
/// by itself: the reader compares [`ProcessSlot::wait_ends_ns`] with the time).
pub(crate) fn state_of(p: &Proc) -> u32 {
    if p.dormant {
        process_state::DORMANT
    } else if p.reasons != 0 {
        process_state::WAITING
    } else {
        process_state::READY
    }
}

impl Runtime {
    /// Return the shared slot of process `idx` (not the error handler).
    pub fn slot(&self, idx: usize) -> &ProcessSlot {
        &self.ctx.partition().processes[idx]
    }

    /// Return the current operating mode (`state::mode`).
    pub fn mode(&self) -> u32 {
        self.ctx.partition().operating_mode.load(Ordering::Acquire)
    }

    /// Return the module time in ns.
    pub fn now(&self) -> u64 {
        self.ctx.now_ns()
    }

    /// Run `f` on the process table. A process thread defers control signals meanwhile and honours
    /// them on the way out; a stopped incarnation that reaches this ends instead (unless it is
    /// inside another critical section, e.g. holds a port lock: it then ends when that section
    /// ends).
    pub fn with_inner<R>(&self, f: impl FnOnce(&mut Inner) -> R) -> R {
        self.with_inner_then(f, |_| {})
    }

    /// [`Runtime::with_inner`], then `after(&result)` with the lock still held (and so before a
    /// control request that reached the caller meanwhile is honoured): the futex wakes (or the
    /// control signal) for the processes `f` made READY (a START, a RESUME, the error handler)
    /// or suspended go there.
    ///
    /// Woken before the unlock, a released process of higher priority than the caller preempts
    /// it, finds the lock held when it takes it (a process thread takes it before it goes on)
    /// and boosts the caller, which then unlocks at once, handing the lock over: the released
    /// process runs next. Woken after the unlock, it could sleep on, READY in the process table,
    /// while a process of middle priority ran, whenever the caller lost the CPU between the
    /// unlock and the wake (the lock handed to a higher process waiting for it, a release by a
    /// timer; review 27, finding 2). Woken after the control request is honoured, it would sleep
    /// on while the caller is suspended, or for good once it is stopped. `after` must not take
    /// the runtime lock.
    pub fn with_inner_then<R>(&self, f: impl FnOnce(&mut Inner) -> R, after: impl FnOnce(&R)) -> R {
        let outermost = !deferring();
        let section = defer_control();
        let r = {
            let mut g = self.inner.lock();
            if outermost && self.stale() {
                drop(g);
                end_incarnation();
            }
            let r = f(&mut g);
            after(&r);
            r
        };
        drop(section);
        if outermost {
            self.honour_commands();
        }
        r
    }

    /// Return whether the calling thread is a process incarnation that was stopped.
    pub fn stale(&self) -> bool {
        self_index().is_some_and(|idx| {
            self.ctl[idx].incarnation.load(Ordering::Acquire) != SELF_INC.with(|c| c.get())
        })
    }

    /// Honour pending control requests for the calling thread: end it if its incarnation was
    /// stopped, park while it is suspended by another process. Async-signal-safe.
    pub fn honour_commands(&self) {
        let i = SELF_IDX.with(|c| c.get());
        if i == NO_INDEX {
            return;
        }
        let inc = SELF_INC.with(|c| c.get());
        let c = &self.ctl[i as usize];
        loop {
            if c.incarnation.load(Ordering::Acquire) != inc {
                end_incarnation();
            }
            let s = c.suspend.load(Ordering::Acquire);
            if s & SUSP == 0 || s & SUSP_SELF != 0 {
                return;
            }
            futex::wait(&c.suspend, s, None);
        }
    }

    /// Publish the state of process `idx` to its shared slot.
    pub fn publish(&self, idx: usize, p: &Proc) {
        if idx < MAX_PROCESSES {
            let s = self.slot(idx);
            s.wait_ends_ns.store(p.wait_ends_ns(), Ordering::Relaxed);
            s.state.store(state_of(p), Ordering::Release);
            s.current_priority
                .store(p.current_priority as u32, Ordering::Relaxed);
            s.deadline_ns.store(p.deadline_ns, Ordering::SeqCst);
        }
    }

    /// Mark the calling process WAITING because it blocks on a resource (port, buffer,
    /// semaphore, event) until `deadline` (its time-out; `None`: no time-out); other services
    /// (SUSPEND, STOP, status) then see it as WAITING, and READY once the deadline passed.
    /// [`Runtime::leave_resource_wait`] ends it. Does nothing for the error handler or a thread
    /// that is not a process. Takes the runtime lock: call it around the blocking wait, not
    /// while holding another runtime lock.
    pub fn enter_resource_wait(&self, deadline: Option<std::time::Instant>) {
        let ends = deadline.map(|d| {
            let left = d.saturating_duration_since(std::time::Instant::now());
            self.now()
                .saturating_add(u64::try_from(left.as_nanos()).unwrap_or(u64::MAX))
        });
        self.mark_resource_wait(Some(ends));
    }

    /// End what [`Runtime::enter_resource_wait`] began.
    pub fn leave_resource_wait(&self) {
        self.mark_resource_wait(None);
    }

    fn mark_resource_wait(&self, waiting: Option<Option<u64>>) {
        let Some(idx) = self_index().filter(|&i| i < MAX_PROCESSES) else {
            return;
        };
        self.with_inner(|inner| {
            if self.stale() {
                // A stopped incarnation finishing a critical section: the process is DORMANT.
                return;
            }
            let p = &mut inner.procs[idx];
            match waiting {
                Some(ends) => p.wait_for(W_RESOURCE, ends),
                None => p.reasons &= !W_RESOURCE,
            }
            self.publish(idx, p);
        });
    }

    /// Wake the deadline monitor if `deadline` (module ns, already published in a slot) is
    /// earlier than what it sleeps until. The monitor sets `monitor_until` to 0 before each scan
    /// of the slots and to the earliest deadline after it, so a deadline published meanwhile is
    /// either seen by the scan or finds 0 here and kicks (SeqCst on both sides), which makes the
    /// monitor scan again instead of sleeping. (The test was `deadline < 0` during a scan,
    /// never true: a deadline published behind the scan was lost, found by review.)
    pub fn kick_monitor(&self, deadline: u64) {
        let until = self.monitor_until.load(Ordering::SeqCst);
        if until == 0 || deadline < until {
            self.kick.fetch_add(1, Ordering::SeqCst);
            futex::wake_all(&self.kick);
        }
    }

    /// Set the SCHED_FIFO priority of thread `tid` (0 = caller). Fall back to SCHED_OTHER, with
    /// one warning, when the process may not use real-time priorities.
    pub fn set_fifo(&self, tid: i32, prio: i32) {
        if !self.fifo.load(Ordering::Relaxed) {
            return;
        }
        let param = libc::sched_param {
            sched_priority: prio,
        };
        // SAFETY: param is a valid sched_param; tid names a thread of this process or 0.
        let r = unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO, &param) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EPERM) && self.fifo.swap(false, Ordering::Relaxed) {
                eprintln!(
                    "partix partition: no permission for SCHED_FIFO ({e}); processes run under \
                     SCHED_OTHER and priority preemption is not guaranteed"
                );
            }
        }
    }

    /// Return the SCHED_FIFO priority process `idx` should run at.
    pub fn fifo_priority(&self, inner: &Inner, idx: usize) -> i32 {
        if idx == EH_INDEX {
            FIFO_ERROR_HANDLER
        } else if inner.lock_owner == Some(idx) {
            FIFO_LOCK
        } else {
            inner.procs[idx].current_priority + 1
        }
    }

    /// Apply the SCHED_FIFO priority of process `idx` to its thread if it changed.
    pub fn apply_priority(&self, inner: &mut Inner, idx: usize) {
        let want = self.fifo_priority(inner, idx);
        let tid = self.ctl[idx].tid.load(Ordering::Acquire);
        if let Some(p) = inner.proc_mut(idx) {
            if p.applied_fifo != want {
                p.applied_fifo = want;
                self.set_fifo(tid, want);
            }
        }
    }

    /// Create a new incarnation (thread) of process `idx`, parked until the next START, and wait
    /// until it is registered.
    ///
    /// # Errors
    /// `InvalidConfig` if the thread cannot be created (no memory, thread limit).
    pub fn spawn_incarnation(&'static self, idx: usize, stack: usize, prio: i32) -> ApexResult<()> {
        let c = &self.ctl[idx];
        let inc = c.incarnation.load(Ordering::Acquire);
        let gen0 = c.gen.load(Ordering::Acquire);
        c.ready.store(0, Ordering::Release);
        join_abandoned();
        let name = if idx == EH_INDEX {
            "apex-error-hdlr".to_string()
        } else {
            format!("apex-{}", idx + 1)
        };
        let t = spawn_thread(
            stack,
            &name,
            Box::new(move || self.process_main(idx, inc, gen0)),
        )
        .map_err(|_| ApexError::InvalidConfig)?;
        c.thread.store(t as u64, Ordering::Relaxed);
        if self.fifo.load(Ordering::Relaxed) {
            // Until it has started, the new thread runs above every APEX process. The caller
            // often holds the runtime lock and sleeps until `ready`, and a thread gets its
            // creator's *normal* priority (a priority-inheritance boost is not passed on): a
            // low-priority process's STOP left the thread behind any CPU-bound process of
            // middle priority released meanwhile, and a high-priority process blocked on the
            // lock for that process's whole job (found by the review of session 26). It
            // registers and parks, a few microseconds, and gets its own priority below.
            let param = libc::sched_param {
                sched_priority: FIFO_LOCK,
            };
            // SAFETY: `t` is the thread just created (joinable, not joined: alive or a zombie
            // whose pthread_t stays valid); param is a valid sched_param.
            unsafe { libc::pthread_setschedparam(t, libc::SCHED_FIFO, &param) };
        }
        while c.ready.load(Ordering::Acquire) == 0 {
            futex::wait(&c.ready, 0, None);
        }
        // The new thread runs at FIFO_LOCK (above) until it parks, and gets its own priority
        // only now. Lowering itself before `ready`, it waited behind every READY thread
        // between the two priorities while the caller, often holding the runtime lock, waited
        // for it: a STOP of a low-priority process froze the partition's APEX calls until a
        // CPU-bound process of middle priority blocked (found by review).
        self.set_fifo(c.tid.load(Ordering::Acquire), prio);
        Ok(())
    }

    /// Stop every process of the partition and its error handler at once, for a mode change
    /// (SET_PARTITION_MODE(IDLE / COLD_START / WARM_START), an HM partition or module action):
    /// under the runtime lock each one becomes DORMANT (no deadline, so the deadline monitor
    /// reports nothing more) and its incarnation is abandoned, as a STOP does, but without a
    /// next one; its thread ends at once through the control signal, or when it leaves the
    /// critical section it is in (a port lock). The caller's own process is only made DORMANT:
    /// the caller parks for good next. Threads the application made itself are not reached.
    pub fn stop_all_processes(&'static self) {
        let me = self_index();
        self.with_inner(|inner| {
            let n = inner.procs.len();
            let eh = inner.eh.is_some().then_some(EH_INDEX);
            for idx in (0..n).chain(eh) {
                self.make_dormant(inner, idx);
                if Some(idx) == me {
                    continue;
                }
                let c = &self.ctl[idx];
                c.incarnation.fetch_add(1, Ordering::AcqRel);
                let tid = c.tid.load(Ordering::Acquire);
                if tid != 0 && tid != gettid() {
                    // SAFETY: tgkill to a thread of this process; the handler is installed.
                    unsafe {
                        libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, control_signal())
                    };
                }
                // A thread parked on these words re-checks and ends.
                futex::wake_all(&c.suspend);
                futex::wake_all(&c.gen);
            }
        });
    }

    /// Abandon the current incarnation of `idx` (called with the lock held) and create the next.
    pub fn replace_incarnation(&'static self, inner: &mut Inner, idx: usize) -> ApexResult<()> {
        let c = &self.ctl[idx];
        let old_tid = c.tid.load(Ordering::Acquire);
        c.incarnation.fetch_add(1, Ordering::AcqRel);
        // The old thread ends itself (end_incarnation); a later spawn joins it.
        let old = c.thread.swap(0, Ordering::Relaxed);
        if old != 0 {
            abandoned().push(old as libc::pthread_t);
        }
        // Signal the old thread before any wake: a thread woken from SUSPEND_SELF (or another
        // wait on these words) first runs the handler, which ends it. Woken first, one of
        // higher priority preempted the caller before the signal and returned from its call to
        // the application, DORMANT (found by review).
        if old_tid != 0 && old_tid != gettid() {
            // SAFETY: tgkill to a thread of this process; the handler is installed.
            unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), old_tid, control_signal()) };
        }
        // Clear any suspension so that a parked old thread re-checks and ends.
        let s = c.suspend.load(Ordering::Acquire);
        c.suspend
            .store((s & !(SUSP | SUSP_SELF)) + SUSP_SEQ, Ordering::Release);
        futex::wake_all(&c.suspend);
        futex::wake_all(&c.gen);
        let (stack, prio) = match inner.proc_mut(idx) {
            Some(p) => {
                p.applied_fifo = if idx == EH_INDEX {
                    FIFO_ERROR_HANDLER
                } else {
                    p.attrs.base_priority + 1
                };
                (p.attrs.stack_size as usize, p.applied_fifo)
            }
            None => return Err(ApexError::InvalidParam),
        };
        self.spawn_incarnation(idx, stack, prio)
    }

    fn process_main(&'static self, idx: usize, inc: u32, mut seen_gen: u32) {
        SELF_IDX.with(|c| c.set(idx as u32));
        SELF_INC.with(|c| c.set(inc));
        let c = &self.ctl[idx];
        c.tid.store(gettid(), Ordering::Release);
        // Its priority is set by its creator once this is stored (`spawn_incarnation`).
        c.ready.store(1, Ordering::Release);
        futex::wake_all(&c.ready);
        let mut rerun = false;
        let mut own_descriptors = false;
        loop {
            if !rerun {
                loop {
                    let g = c.gen.load(Ordering::Acquire);
                    if g != seen_gen {
                        seen_gen = g;
                        break;
                    }
                    futex::wait(&c.gen, g, None);
                    self.honour_commands();
                }
            }
            while self.gate.load(Ordering::Acquire) == 0 {
                futex::wait(&self.gate, 0, None);
            }
            if !own_descriptors && per_process_descriptors() {
                own_descriptors = true;
                unshare_descriptors();
            }
            let (release, entry) = self.with_inner(|inner| {
                let p = inner
                    .proc_mut(idx)
                    .expect("incarnation of a created process");
                (p.release_ns.unwrap_or(0), p.attrs.entry_point)
            });
            if idx != EH_INDEX {
                sleep_until(self.ctx, release);
                self.job_started(idx, release);
            }
            entry();
            rerun = self.with_inner(|inner| {
                if idx == EH_INDEX && !inner.errors.is_empty() {
                    return true;
                }
                self.make_dormant(inner, idx);
                false
            });
        }
    }

    /// Record the start of a job of process `idx` released at `release` (module ns).
    pub fn job_started(&self, idx: usize, release: u64) {
        let now = self.now();
        self.with_inner(|inner| {
            if let Some(p) = inner.proc_mut(idx) {
                p.reasons &= !W_RELEASE;
                self.publish(idx, p);
            }
        });
        let s = self.slot(idx);
        let resumed = self
            .ctx
            .partition()
            .resumed_at_ns
            .load(Ordering::Acquire)
            .saturating_sub(self.ctx.module().epoch_ns());
        let ctsw = now.saturating_sub(release.max(resumed));
        s.last_release_ns.store(release, Ordering::Relaxed);
        s.last_start_ns.store(now, Ordering::Relaxed);
        s.last_ctsw_ns.store(ctsw, Ordering::Relaxed);
        s.total_ctsw_ns.fetch_add(ctsw, Ordering::Relaxed);
        s.worst_ctsw_ns.fetch_max(ctsw, Ordering::Relaxed);
        s.releases.fetch_add(1, Ordering::Release);
    }

    /// Put process `idx` in DORMANT (lock held): no deadline, no lock, not suspended.
    pub fn make_dormant(&self, inner: &mut Inner, idx: usize) {
        if inner.lock_owner == Some(idx) {
            inner.lock_owner = None;
            self.ctx.partition().lock_level.store(0, Ordering::Release);
            futex::wake_all(&self.ctx.partition().lock_level);
        }
        let c = &self.ctl[idx];
        let s = c.suspend.load(Ordering::Acquire);
        if s & (SUSP | SUSP_SELF) != 0 {
            c.suspend
                .store((s & !(SUSP | SUSP_SELF)) + SUSP_SEQ, Ordering::Release);
        }
        if let Some(p) = inner.proc_mut(idx) {
            p.dormant = true;
            p.reasons = 0;
            p.release_ns = None;
            p.deadline_ns = u64::MAX;
            self.publish(idx, p);
        }
        c.reported_deadline.store(u64::MAX, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pi_mutex_excludes_under_contention() {
        static M: PiMutex<u64> = PiMutex::new(0);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                std::thread::spawn(|| {
                    for _ in 0..20_000 {
                        let mut g = M.lock();
                        let v = *g;
                        std::hint::black_box(());
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*M.lock(), 80_000);
        assert_eq!(M.word.load(Ordering::Acquire), 0, "unlocked at the end");
    }

    #[test]
    fn state_of_follows_dormant_and_wait_reasons() {
        extern "C" fn nop() {}
        let mut p = Proc {
            attrs: ProcessAttributes {
                name: "p".into(),
                entry_point: nop,
                stack_size: 0,
                base_priority: 1,
                period: -1,
                time_capacity: -1,
                deadline: super::super::process::Deadline::Soft,
            },
            dormant: true,
            reasons: W_SUSPEND,
            timed: 0,
            wait_ends: 0,
            self_suspend_timed_out: false,
            current_priority: 1,
            applied_fifo: 2,
            release_ns: None,
            start_delay: 0,
            deadline_ns: u64::MAX,
        };
        assert_eq!(state_of(&p), process_state::DORMANT);
        p.dormant = false;
        assert_eq!(state_of(&p), process_state::WAITING);
        p.reasons = 0;
        assert_eq!(state_of(&p), process_state::READY);
        assert_eq!(p.wait_ends_ns(), 0, "not waiting");

        // A timed wait ends by itself, unless an untimed reason is added.
        p.wait_for(W_RESOURCE, Some(500));
        assert_eq!(p.wait_ends_ns(), 500);
        assert!(!p.timed_out(W_RESOURCE, 499) && p.timed_out(W_RESOURCE, 500));
        p.wait_for(W_SUSPEND, None);
        assert_eq!(p.wait_ends_ns(), 0, "suspended by another process too");
        p.reasons &= !W_SUSPEND;
        assert_eq!(p.wait_ends_ns(), 500);
        // An untimed wait of the same reason forgets the old time-out.
        p.reasons = 0;
        p.wait_for(W_RESOURCE, None);
        assert_eq!(p.wait_ends_ns(), 0);
        assert!(!p.timed_out(W_RESOURCE, u64::MAX));
        // A wait ending at time 0 is published as 1 (0 means "no end").
        p.reasons = 0;
        p.wait_for(W_RELEASE, Some(0));
        assert_eq!(p.wait_ends_ns(), 1);
        p.dormant = true;
        assert_eq!(p.wait_ends_ns(), 0, "DORMANT");
    }
}

//! The partition side of the module-state contract: find and map this partition's regions.
//!
//! A partition process started by the executive inherits two file descriptors (named by
//! [`ENV_MODULE_FD`] and [`ENV_PARTITION_FD`]); [`PartitionContext::get`] maps them once per process.
//! A partition program started by hand (no executive) gets a *standalone* context: private regions
//! for a module of one partition, so partition code and its tests run without `partix run`.
#![allow(unsafe_code)]

use crate::state::{
    mode, ModuleState, ModuleView, PartitionState, ENV_DUMPABLE, ENV_MODULE_FD, ENV_PARTITION_FD,
    ENV_PARTITION_ID, LAYOUT_VERSION, MAGIC, MODULE_REGION_LEN, NO_REQUEST, PARTITION_REGION_LEN,
};
use partix_shm::{futex, Access, Region, RegionError};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

/// Failure of [`PartitionContext::get`].
#[derive(Debug)]
pub enum AttachError {
    /// An environment variable set by the executive is not a number.
    BadEnv(&'static str, String),
    /// Mapping a region failed.
    Region(RegionError),
    /// A region does not start with [`MAGIC`] / [`LAYOUT_VERSION`] (executive and partition built
    /// from different partix versions).
    BadLayout,
}

impl fmt::Display for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachError::BadEnv(k, v) => write!(f, "environment variable {k}={v:?} is not a number"),
            AttachError::Region(e) => write!(f, "cannot map the module state: {e}"),
            AttachError::BadLayout => write!(
                f,
                "module state layout mismatch: the partition and `partix run` come from different builds \
                 (rebuild both: in the source tree, `cargo build --release --workspace`)"
            ),
        }
    }
}

impl std::error::Error for AttachError {}

/// This process's view of the module state.
#[derive(Debug)]
pub struct PartitionContext {
    module: Region,
    partition: Region,
    standalone: bool,
}

static CONTEXT: OnceLock<Result<PartitionContext, String>> = OnceLock::new();

/// Return `CLOCK_MONOTONIC` in nanoseconds (`clock_gettime`, async-signal-safe).
pub use partix_shm::clock::monotonic_ns;

/// Stamp the partition's resume for the current window, once per window (the first thread to
/// run wins). Async-signal-safe: atomics and `clock_gettime`.
fn stamp_resume(p: &PartitionState) {
    let now = monotonic_ns();
    let w = p.window_seq.load(Ordering::Acquire);
    if p.resumed_seq.load(Ordering::Relaxed) != w && p.resumed_seq.swap(w, Ordering::AcqRel) != w {
        p.resumed_at_ns.store(now, Ordering::Release);
    }
}

extern "C" fn on_sigcont(_sig: libc::c_int) {
    // Only atomics and clock_gettime: async-signal-safe.
    if let Some(Ok(ctx)) = CONTEXT.get() {
        stamp_resume(ctx.partition());
    }
}

/// Make this process non-dumpable if the executive asked for it ([`ENV_DUMPABLE`] is `0`), and
/// take the variable out of the environment. A partition that shares the executive's
/// credentials is otherwise dumpable from its `execve` on, and any other such partition (they
/// have no `CAP_SYS_PTRACE`, but the same user and capabilities) could open its
/// `/proc/PID/fd/N` (re-opening its regions read-write) and `/proc/PID/mem`. A failure is
/// reported on stderr: the partition runs, less confined.
fn make_non_dumpable_if_asked() {
    let Some(v) = std::env::var_os(ENV_DUMPABLE) else {
        return;
    };
    std::env::remove_var(ENV_DUMPABLE);
    if v != "0" {
        return;
    }
    // SAFETY: PR_SET_DUMPABLE takes no pointer.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        eprintln!(
            "partix: warning: partition {}: cannot make it non-dumpable ({}): other partitions \
             without partix:User can open its descriptors through /proc",
            std::env::var(ENV_PARTITION_ID).unwrap_or_default(),
            std::io::Error::last_os_error()
        );
    }
}

/// Return the signal with which the executive asks a partition's threads to park on the gate
/// (`SIGRTMIN+3`; see [`crate::state::PartitionState::gate`]).
pub fn park_signal() -> libc::c_int {
    libc::SIGRTMIN() + 3
}

thread_local! {
    /// This thread is inside the park handler (counted in `gate_parked`).
    static PARKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

thread_local! {
    /// Depth of this thread's sections that hold off the park signal ([`hold_off_park`]).
    static PARK_HELD_OFF: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// A park signal came inside such a section: park when the outermost one ends.
    static PARK_PENDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The park handler: while the gate is closed, wait on it (see [`park_on_gate`]). Inside a
/// section made by [`hold_off_park`] (a shared-memory port write in progress) it only notes the
/// signal; the thread parks when the section ends.
extern "C" fn on_park(_sig: libc::c_int) {
    // SAFETY: __errno_location returns this thread's errno slot.
    let errno = unsafe { *libc::__errno_location() };
    if PARK_HELD_OFF.with(|c| c.get()) != 0 {
        PARK_PENDING.with(|c| c.set(true));
    } else {
        park_on_gate();
    }
    // SAFETY: as above; restore the interrupted code's errno.
    unsafe { *libc::__errno_location() = errno };
}

/// While the gate is closed, wait on it. The thread that finds the gate closed counts itself in
/// `gate_parked` and, unless the executive signalled every thread itself (`gate_broadcast`),
/// passes the park signal on to the process (the kernel delivers it to a thread that does not
/// block it, i.e. one not parked yet) until `gate_expect` threads are parked; the thread that
/// completes the count acknowledges the close in `gate_acked`. A gate opened ahead of the window
/// (`gate_open_at_ns` in the future) is left only at that time: the woken thread busy-waits for
/// it here. On leaving, the first thread stamps the resume and each one wakes the next waiter
/// (highest priority first: the kernel queues futex waiters of real-time threads by priority).
/// A thread that comes here only after the gate opened again — its park signal was pending
/// while it waited for the CPU behind another partition's threads, and the executive accepted
/// that as a park — also leaves only at the window's start.
/// Async-signal-safe; called with the park signal blocked (in its handler, or by
/// [`ParkHoldOff`]'s end), so a thread is never counted twice.
fn park_on_gate() {
    if let Some(Ok(ctx)) = CONTEXT.get() {
        let p = ctx.partition();
        let mut g = p.gate.load(Ordering::Acquire);
        while g & 1 == 1 {
            // Open, perhaps ahead of the window: hold the CPU here until its start, unless the
            // gate changes meanwhile (closed again: park).
            let at = p.gate_open_at_ns.load(Ordering::Acquire);
            if monotonic_ns() >= at {
                // The window has begun (a park signal that came after the open, e.g. one the
                // executive accepted as a pending park): this thread runs on in it, and that is
                // the partition's resume if no thread stamped it yet.
                stamp_resume(p);
                return;
            }
            while monotonic_ns() < at && p.gate.load(Ordering::Acquire) == g {
                std::hint::spin_loop();
            }
            let now = p.gate.load(Ordering::Acquire);
            if now == g {
                stamp_resume(p);
                return;
            }
            g = now;
        }
        {
            // The flag and the count change together: a control signal that ends this thread
            // (STOP, nested in this handler) between the two would take it out of the count
            // once too often (`note_thread_ends`), and the count would wrap. It waits for the
            // end of the section, as inside a port lock.
            let counting = crate::partition::defer_control();
            PARKED.with(|c| c.set(true));
            let slot = TID_SLOT.with(|c| c.get());
            if slot != NO_TID_SLOT {
                p.tid_parked[slot].store(1, Ordering::Release);
            }
            let n = p.gate_parked.fetch_add(1, Ordering::AcqRel) + 1;
            if n >= p.gate_expect.load(Ordering::Acquire) {
                p.gate_acked.store(g, Ordering::Release);
            } else if p.gate_broadcast.load(Ordering::Acquire) == 0 {
                // SAFETY: kill/getpid have no memory preconditions; the handler is installed.
                unsafe { libc::kill(libc::getpid(), park_signal()) };
            }
            drop(counting);
            'wait: loop {
                let cur = p.gate.load(Ordering::Acquire);
                if cur & 1 == 1 {
                    // Opened ahead of the window: hold the CPU here (runtime code, not the
                    // partition's) until the window's start, unless the gate changes meanwhile.
                    let at = p.gate_open_at_ns.load(Ordering::Acquire);
                    while monotonic_ns() < at {
                        if p.gate.load(Ordering::Acquire) != cur {
                            continue 'wait;
                        }
                        std::hint::spin_loop();
                    }
                    break;
                }
                // Counted before the wait (SeqCst: a full barrier, paired with the fence after
                // the executive's opening store): either the executive sees the count and wakes
                // this thread, or the wait finds the gate opened and returns at once.
                p.gate_waits.fetch_add(1, Ordering::SeqCst);
                futex::wait(&p.gate, cur, None);
            }
            // As on the way in: the count and the flag together.
            let counting = crate::partition::defer_control();
            p.gate_parked.fetch_sub(1, Ordering::AcqRel);
            if slot != NO_TID_SLOT {
                p.tid_parked[slot].store(0, Ordering::Release);
            }
            PARKED.with(|c| c.set(false));
            drop(counting);
            stamp_resume(p);
            futex::wake(&p.gate, 1);
        }
    }
}

/// A section of bounded, non-blocking work that a closing gate does not cut in two: a park
/// signal that comes inside it is honoured when it ends (the thread then parks as the handler
/// would have). Made by [`hold_off_park`].
///
/// The port layer holds off parking while it writes a sampling message: a writer parked between
/// `begin` and `end` would leave the slot mid-write for the rest of the major frame, and readers
/// in other partitions would get their last good copy instead of the newest message (measured
/// before: a writer writing 64 KiB messages back to back was cut mid-write at most window ends;
/// `tests/ports.rs`, `a_window_never_ends_inside_a_sampling_write`). The message's stamp is read
/// inside the section too (every transport, a socket send included: it never blocks), so a
/// writer parked at a window's end does not publish, in its next window, a message stamped in
/// the last one (`SamplingSource::write_with`). The delay is one message copy per destination.
/// Not for anything that may block: a section that does not end delays the park until the
/// executive's backstop (`SIGSTOP`).
#[derive(Debug)]
pub struct ParkHoldOff {
    _thread: std::marker::PhantomData<*const ()>,
}

/// Enter a [`ParkHoldOff`] section (nestable; thread-local, two stores).
#[inline]
pub fn hold_off_park() -> ParkHoldOff {
    PARK_HELD_OFF.with(|c| c.set(c.get() + 1));
    // The handler runs on this thread: keep the section's work after the depth store.
    std::sync::atomic::compiler_fence(Ordering::SeqCst);
    ParkHoldOff {
        _thread: std::marker::PhantomData,
    }
}

impl Drop for ParkHoldOff {
    #[inline]
    fn drop(&mut self) {
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        let depth = PARK_HELD_OFF.with(|c| {
            let d = c.get() - 1;
            c.set(d);
            d
        });
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        // A signal from here on parks in the handler itself; one that came inside the section
        // left the flag.
        if depth == 0 && PARK_PENDING.with(|c| c.get()) {
            park_held_off();
        }
    }
}

/// Park now for a signal that came inside a [`ParkHoldOff`] section, with the park signal
/// blocked meanwhile (one arriving while this thread waits must not count it a second time).
#[cold]
fn park_held_off() {
    // SAFETY: sigset operations on a local set; pthread_sigmask with valid pointers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, park_signal());
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        PARK_PENDING.with(|c| c.set(false));
        park_on_gate();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

thread_local! {
    /// This thread's entry in the partition's thread table (`NO_TID_SLOT`: none).
    static TID_SLOT: std::cell::Cell<usize> = const { std::cell::Cell::new(NO_TID_SLOT) };
}
const NO_TID_SLOT: usize = usize::MAX;

/// Return the calling thread's kernel thread id (async-signal-safe).
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

fn enter_thread_table(p: &PartitionState) {
    if TID_SLOT.with(|c| c.get()) != NO_TID_SLOT {
        return;
    }
    let tid = gettid();
    for (i, e) in p.tids.iter().enumerate() {
        if e.compare_exchange(0, tid, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            TID_SLOT.with(|c| c.set(i));
            return;
        }
    }
    // Table full: the handlers' chain reaches this thread (the executive then never signals
    // the threads one by one, since the table does not hold them all).
}

/// Enter the calling thread in the partition's thread table ([`PartitionState::tids`]), so the
/// executive can send it the park signal itself at a close. Every thread the runtime starts
/// calls this first thing (the attaching thread is entered at attach); call
/// [`leave_thread_table`] before it ends. A thread the application starts itself need not: the
/// handlers' chain reaches it.
pub fn register_thread() {
    if let Some(Ok(ctx)) = CONTEXT.get() {
        enter_thread_table(ctx.partition());
    }
}

/// Take the calling thread out of the thread table (it is about to end). Async-signal-safe.
pub fn leave_thread_table() {
    let i = TID_SLOT.with(|c| c.replace(NO_TID_SLOT));
    if i == NO_TID_SLOT {
        return;
    }
    if let Some(Ok(ctx)) = CONTEXT.get() {
        ctx.partition().tid_parked[i].store(0, Ordering::Release);
        ctx.partition().tids[i].store(0, Ordering::Release);
    }
}

/// Count the calling thread as parked for good (it blocks every signal and never runs again):
/// the gate's park chain does not wait for it, and its thread-table entry turns negative so the
/// executive counts it without signalling it (a blocked real-time signal would stay queued at
/// every close). Async-signal-safe.
pub fn note_parked_for_good() {
    if let Some(Ok(ctx)) = CONTEXT.get() {
        let i = TID_SLOT.with(|c| c.get());
        if i != NO_TID_SLOT {
            ctx.partition().tids[i].store(-gettid(), Ordering::Release);
        }
    }
    if PARKED.with(|c| c.replace(true)) {
        // Already counted by the park handler it is nested in, which will never return.
        return;
    }
    if let Some(Ok(ctx)) = CONTEXT.get() {
        ctx.partition().gate_parked.fetch_add(1, Ordering::AcqRel);
    }
}

/// The calling thread is about to exit (an abandoned incarnation, all signals blocked): if a park
/// handler it is nested in counted it in `gate_parked`, take it out and hand the gate's wake-up
/// on to the next parked thread, which that handler would have done on leaving. A close that
/// comes before the thread is gone from the kernel's count finds one thread too few parked and
/// takes the backstop (`SIGSTOP`): never a thread counted that runs. Async-signal-safe.
pub fn note_thread_ends() {
    leave_thread_table();
    if !PARKED.with(|c| c.replace(false)) {
        return;
    }
    if let Some(Ok(ctx)) = CONTEXT.get() {
        let p = ctx.partition();
        p.gate_parked.fetch_sub(1, Ordering::AcqRel);
        futex::wake(&p.gate, 1);
    }
}

impl PartitionContext {
    /// Return this process's context, attaching on first use.
    ///
    /// # Errors
    /// The attach error, rendered, if the executive's regions cannot be mapped (the same error on
    /// every call).
    pub fn get() -> Result<&'static PartitionContext, String> {
        let ctx = CONTEXT
            .get_or_init(|| {
                let ctx = Self::attach().map_err(|e| e.to_string())?;
                install_handlers();
                // The attaching thread (the main thread, which becomes the monitor in NORMAL).
                enter_thread_table(ctx.partition());
                Ok(ctx)
            })
            .as_ref()
            .map_err(|e| e.clone())?;
        // The handlers can see the context now: the executive may use the gate.
        ctx.partition().gate_ready.store(1, Ordering::Release);
        Ok(ctx)
    }

    fn attach() -> Result<PartitionContext, AttachError> {
        // First of all, before it maps anything: out of the other partitions' reach through
        // /proc, as the executive asks (see `ENV_DUMPABLE`).
        make_non_dumpable_if_asked();
        // Take the ports' variable out of the environment and make their descriptors
        // close-on-exec now, before the runtime starts a thread, whether or not the partition
        // creates a port.
        let _ = crate::channels::inherited_ports_value();
        // Likewise the module configuration's descriptor and variables.
        crate::partition::hm::take_config_env();
        let (Ok(mfd), Ok(pfd)) = (
            std::env::var(ENV_MODULE_FD),
            std::env::var(ENV_PARTITION_FD),
        ) else {
            return Self::standalone();
        };
        let mfd: i32 = mfd
            .parse()
            .map_err(|_| AttachError::BadEnv(ENV_MODULE_FD, mfd.clone()))?;
        let pfd: i32 = pfd
            .parse()
            .map_err(|_| AttachError::BadEnv(ENV_PARTITION_FD, pfd.clone()))?;
        // Out of the environment before the regions are mapped: a failed map closes the
        // descriptors, and a program the partition runs after that must not be told of them
        // (nor of the ports', taken above).
        std::env::remove_var(ENV_MODULE_FD);
        std::env::remove_var(ENV_PARTITION_FD);
        // The executive's `dup2` left them inheritable (for this program): not for a program the
        // partition runs. (They stay open, owned by the regions.)
        for fd in [mfd, pfd] {
            // SAFETY: FIOCLEX changes the descriptor's flags only; no memory is passed.
            unsafe { libc::ioctl(fd, libc::FIOCLEX) };
        }
        // SAFETY: the executive passed these descriptors to this process for exactly this use;
        // nothing else in the process owns them.
        let module = unsafe { Region::from_raw_fd(mfd, MODULE_REGION_LEN, Access::ReadOnly) }
            .map_err(AttachError::Region)?;
        // SAFETY: as above.
        let partition =
            unsafe { Region::from_raw_fd(pfd, PARTITION_REGION_LEN, Access::ReadWrite) }
                .map_err(AttachError::Region)?;
        let ctx = PartitionContext {
            module,
            partition,
            standalone: false,
        };
        if ctx.module().magic() != MAGIC
            || ctx.module().version() != LAYOUT_VERSION
            || ctx.partition().magic != MAGIC
            || ctx.partition().version != LAYOUT_VERSION
        {
            return Err(AttachError::BadLayout);
        }
        Ok(ctx)
    }

    /// Build private regions for a module of one partition (no executive).
    fn standalone() -> Result<PartitionContext, AttachError> {
        let module =
            Region::create("partix-module", MODULE_REGION_LEN).map_err(AttachError::Region)?;
        let partition = Region::create("partix-partition", PARTITION_REGION_LEN)
            .map_err(AttachError::Region)?;
        let id = std::env::var(ENV_PARTITION_ID)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        // SAFETY: both regions are fresh, zero-filled, large enough and exclusively ours; the
        // all-zero bit pattern is valid for every field (integers and atomics).
        unsafe {
            init_module_state(module.as_ptr().cast(), 1, monotonic_ns());
            init_partition_state(partition.as_ptr().cast(), id, 0);
        }
        let ctx = PartitionContext {
            module,
            partition,
            standalone: true,
        };
        ctx.partition()
            .operating_mode
            .store(mode::COLD_START, Ordering::Release);
        Ok(ctx)
    }

    /// Return whether this partition runs without an executive (started by hand).
    pub fn is_standalone(&self) -> bool {
        self.standalone
    }

    /// Return the module-wide state, which the partition maps read-only: a view that can only
    /// load ([`ModuleView`]; its `Relaxed` loads and `Acquire` fences are what read-only memory
    /// allows).
    pub fn module(&self) -> ModuleView<'_> {
        ModuleView::new(self.module_state())
    }

    /// Return the module-wide state of a standalone partition, its own region, mapped read-write
    /// (`None` under an executive, whose region this partition maps read-only: use
    /// [`PartitionContext::module`]).
    pub fn standalone_module(&self) -> Option<&ModuleState> {
        self.standalone.then(|| self.module_state())
    }

    fn module_state(&self) -> &ModuleState {
        // SAFETY: the region is at least MODULE_REGION_LEN bytes, page-aligned, initialised by the
        // executive (or by `standalone`) before this process started, and only accessed through
        // atomics after that (only loads where it is mapped read-only: `module` hands out a
        // `ModuleView`, `standalone_module` the state itself only for the read-write region).
        unsafe { &*self.module.as_ptr().cast::<ModuleState>() }
    }

    /// Return this partition's state.
    pub fn partition(&self) -> &PartitionState {
        // SAFETY: as for `module`, with PARTITION_REGION_LEN.
        unsafe { &*self.partition.as_ptr().cast::<PartitionState>() }
    }

    /// Return the module time: nanoseconds since the module's epoch (`GET_TIME`).
    pub fn now_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.module().epoch_ns())
    }

    /// Convert a module time to `CLOCK_MONOTONIC` nanoseconds.
    pub fn to_monotonic_ns(&self, module_ns: u64) -> u64 {
        module_ns.saturating_add(self.module().epoch_ns())
    }

    /// Enter NORMAL mode (SET_PARTITION_MODE(NORMAL)) and tell the executive.
    pub fn set_normal(&self) {
        let p = self.partition();
        p.operating_mode.store(mode::NORMAL, Ordering::Release);
        futex::wake_all(&p.operating_mode);
    }

    /// Ask the executive to put this partition in `mode` (IDLE, COLD_START or WARM_START), as
    /// SET_PARTITION_MODE does ([`PartitionContext::request_mode_for`] with
    /// `PARTITION_RESTART`).
    ///
    /// In standalone mode there is no executive: the request is recorded and the process exits for
    /// IDLE; restarts are not possible and are reported as such by the caller.
    pub fn request_mode(&self, requested: u32) {
        self.request_mode_for(requested, crate::state::start_condition::PARTITION_RESTART);
    }

    /// Ask the executive to put this partition in `mode` (IDLE, COLD_START or WARM_START) for
    /// the reason `cond` (a `start_condition` value: see
    /// [`PartitionState::requested_condition`]); a restart starts with `cond` as its start
    /// condition.
    pub fn request_mode_for(&self, requested: u32, cond: u32) {
        let p = self.partition();
        p.requested_condition.store(cond, Ordering::Release);
        // SYNC POINT: Release pairs with the executive's Acquire swap of `requested_mode`, after
        // which it reads `requested_condition`.
        p.requested_mode.store(requested, Ordering::Release);
        futex::wake_all(&p.operating_mode);
    }

    /// Ask the executive to switch to module schedule `id` at the next major-frame boundary.
    pub fn request_schedule(&self, id: u32) {
        self.partition()
            .requested_schedule
            .store(id, Ordering::Release);
    }
}

fn install_handlers() {
    for (sig, handler) in [
        (libc::SIGCONT, on_sigcont as *const () as usize),
        (park_signal(), on_park as *const () as usize),
    ] {
        // SAFETY: an all-zero sigaction is a valid starting point; we set the handler and an
        // empty mask, and the handlers only do async-signal-safe work (atomics, clock_gettime,
        // futex, kill).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Initialise a fresh, zero-filled module region.
///
/// # Safety
/// `m` must point to a writable, zero-filled region of at least [`MODULE_REGION_LEN`] bytes that no
/// other thread or process accesses yet.
pub unsafe fn init_module_state(m: *mut ModuleState, n_partitions: u32, epoch_ns: u64) {
    // SAFETY: the caller guarantees exclusive access to a large-enough zeroed region.
    unsafe {
        (*m).magic = MAGIC;
        (*m).version = LAYOUT_VERSION;
        (*m).n_partitions = n_partitions;
        (*m).epoch_ns.store(epoch_ns, Ordering::Relaxed);
    }
}

/// Initialise a fresh, zero-filled partition region.
///
/// # Safety
/// `p` must point to a writable, zero-filled region of at least [`PARTITION_REGION_LEN`] bytes that
/// no other thread or process accesses yet.
pub unsafe fn init_partition_state(p: *mut PartitionState, partition_id: u32, index: u32) {
    // SAFETY: the caller guarantees exclusive access to a large-enough zeroed region.
    unsafe {
        (*p).magic = MAGIC;
        (*p).version = LAYOUT_VERSION;
        (*p).partition_id = partition_id;
        (*p).index = index;
        (*p).requested_mode.store(NO_REQUEST, Ordering::Relaxed);
        (*p).requested_condition
            .store(NO_REQUEST, Ordering::Relaxed);
        (*p).requested_schedule.store(NO_REQUEST, Ordering::Relaxed);
    }
}

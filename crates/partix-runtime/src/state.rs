//! The module state in shared memory: the contract between the executive and partitions.
//!
//! Status services are plain loads from these structures (no IPC round trip).
//!
//! Two kinds of region, both memfds created by the executive:
//! - one [`ModuleState`] region, mapped read-write by the executive and **read-only** by every
//!   partition (module clock epoch, current/next module schedule);
//! - one [`PartitionState`] region per partition, mapped read-write by the executive and by that
//!   partition only (its mode, its windows, its requests, its process table).
//!
//! A partition process finds its regions through environment variables set by the executive:
//! [`ENV_MODULE_FD`], [`ENV_PARTITION_FD`] (inherited file descriptors) and [`ENV_PARTITION_ID`];
//! [`ENV_DESCRIPTOR_TABLE`] carries the partition's `partix:DescriptorTable`.
//!
//! All fields are atomics or written once before the partition starts; every field is `repr(C)`
//! so the layout does not depend on the compiler (C tools may read it).

use std::sync::atomic::{fence, AtomicI32, AtomicU32, AtomicU64, Ordering};

/// Environment variable holding the module region's file descriptor number in a partition.
pub const ENV_MODULE_FD: &str = "PARTIX_MODULE_FD";
/// Environment variable holding the partition region's file descriptor number in a partition.
pub const ENV_PARTITION_FD: &str = "PARTIX_PARTITION_FD";
/// Environment variable holding the partition's `PartitionIdentifier`.
pub const ENV_PARTITION_ID: &str = "PARTIX_PARTITION_ID";
/// Environment variable by which the executive asks a partition that shares its credentials (no
/// `partix:User`) to make itself non-dumpable (`0`) when it attaches: `PR_SET_DUMPABLE` 0, which
/// `execve` reset. Then a process without `CAP_SYS_PTRACE` (every other partition) can neither
/// open its descriptors through `/proc/PID/fd` nor its memory through `/proc/PID/mem`
/// (`docs/ports.md`, "Region isolation"). Unset under `partix run --debuggable`.
pub const ENV_DUMPABLE: &str = "PARTIX_DUMPABLE";
/// Environment variable telling a partition how its processes hold file descriptors:
/// `per-process` (each process copies the partition's table when it first runs in NORMAL mode,
/// `partix:DescriptorTable="per-process"`) or `shared` (one table, the default when unset).
pub const ENV_DESCRIPTOR_TABLE: &str = "PARTIX_DESCRIPTOR_TABLE";

/// Magic number at the start of both region kinds ("PARTIX01").
pub const MAGIC: u64 = u64::from_le_bytes(*b"PARTIX01");
/// Layout version; bump when a field changes.
pub const LAYOUT_VERSION: u32 = 8;
/// Most APEX processes a partition may create.
pub const MAX_PROCESSES: usize = 64;
/// Entries of a partition's thread table ([`PartitionState::tids`]): every process and the error
/// handler, the monitor, and the runtime's other threads.
pub const MAX_TIDS: usize = 128;
/// Bytes of a process name (`PROCESS_NAME_TYPE` is 30 characters, NUL-padded here).
pub const NAME_LEN: usize = 32;

/// ARINC 653 `OPERATING_MODE_TYPE` values (as in the standard's C headers).
pub mod mode {
    /// `IDLE`.
    pub const IDLE: u32 = 0;
    /// `COLD_START`.
    pub const COLD_START: u32 = 1;
    /// `WARM_START`.
    pub const WARM_START: u32 = 2;
    /// `NORMAL`.
    pub const NORMAL: u32 = 3;
}

/// ARINC 653 `START_CONDITION_TYPE` values.
pub mod start_condition {
    /// `NORMAL_START`.
    pub const NORMAL_START: u32 = 0;
    /// `PARTITION_RESTART` (the partition asked for it with SET_PARTITION_MODE).
    pub const PARTITION_RESTART: u32 = 1;
    /// `HM_MODULE_RESTART`.
    pub const HM_MODULE_RESTART: u32 = 2;
    /// `HM_PARTITION_RESTART`.
    pub const HM_PARTITION_RESTART: u32 = 3;
}

/// ARINC 653 `PROCESS_STATE_TYPE` values.
pub mod process_state {
    /// `DORMANT`.
    pub const DORMANT: u32 = 0;
    /// `READY`.
    pub const READY: u32 = 1;
    /// `RUNNING`.
    pub const RUNNING: u32 = 2;
    /// `WAITING`.
    pub const WAITING: u32 = 3;
    /// `FAULTED` (Part 1 supplement 3+).
    pub const FAULTED: u32 = 4;
}

/// No request pending (value of [`PartitionState::requested_mode`],
/// [`PartitionState::requested_condition`] and [`PartitionState::requested_schedule`]).
pub const NO_REQUEST: u32 = u32::MAX;

/// The module-wide region (executive writes, partitions read).
#[repr(C, align(64))]
pub struct ModuleState {
    /// [`MAGIC`].
    pub magic: u64,
    /// [`LAYOUT_VERSION`].
    pub version: u32,
    /// Number of partitions.
    pub n_partitions: u32,
    /// `CLOCK_MONOTONIC` nanoseconds of module time zero (GET_TIME = now − epoch).
    pub epoch_ns: AtomicU64,
    /// `ScheduleIdentifier` of the running module schedule.
    pub current_schedule: AtomicU32,
    /// `ScheduleIdentifier` to switch to at the next major-frame boundary (= current if none).
    pub next_schedule: AtomicU32,
    /// Module time (ns since epoch) of the last module-schedule switch (0 = never).
    pub last_schedule_switch_ns: AtomicU64,
    /// Number of major frames started so far.
    pub major_frames: AtomicU64,
    /// Non-zero once the module is shutting down.
    pub shutdown: AtomicU32,
}

/// A partition's view of the [`ModuleState`], which it maps **read-only** (`PROT_READ`): loads
/// only, through accessors ([`crate::attach::PartitionContext::module`]).
///
/// The fields of [`ModuleState`] are public atomics, so a `&ModuleState` would let safe code
/// store to the read-only mapping (SIGSEGV). And Rust guarantees only `Relaxed` atomic loads of at
/// most a register's width on read-only memory (`std::sync::atomic`, "Atomic accesses to
/// read-only memory"): each accessor is one `Relaxed` load followed by `fence(Acquire)` where the
/// value publishes something (a relaxed load and an acquire fence synchronise with a release
/// store as an acquire load does), as `partix_shm`'s read-only slot views do
/// (`docs/shm-channels.md`). The executive, and a standalone partition (whose module region is
/// its own, read-write), keep `&ModuleState`.
///
/// Nothing can be stored through the view:
/// ```compile_fail,E0615
/// use partix_runtime::attach::PartitionContext;
/// use std::sync::atomic::Ordering;
/// let ctx = PartitionContext::get().unwrap();
/// ctx.module().shutdown.store(1, Ordering::Relaxed); // SIGSEGV if it compiled
/// ```
/// It is read through its accessors:
/// ```no_run
/// use partix_runtime::attach::PartitionContext;
/// let ctx = PartitionContext::get().unwrap();
/// while !ctx.module().shutdown() {
///     std::thread::sleep(std::time::Duration::from_millis(1));
/// }
/// ```
#[derive(Clone, Copy)]
pub struct ModuleView<'a> {
    /// Never handed out: its atomics would allow stores.
    state: &'a ModuleState,
}

/// A `Relaxed` load then an `Acquire` fence: an acquire load that read-only memory allows.
#[inline]
fn load_u32(a: &AtomicU32) -> u32 {
    let v = a.load(Ordering::Relaxed);
    fence(Ordering::Acquire);
    v
}

/// See [`load_u32`].
#[inline]
fn load_u64(a: &AtomicU64) -> u64 {
    let v = a.load(Ordering::Relaxed);
    fence(Ordering::Acquire);
    v
}

impl<'a> ModuleView<'a> {
    /// View `state`, a module region that may be mapped read-only.
    pub fn new(state: &'a ModuleState) -> ModuleView<'a> {
        ModuleView { state }
    }

    /// [`ModuleState::magic`] (written before the partition started).
    pub fn magic(&self) -> u64 {
        self.state.magic
    }

    /// [`ModuleState::version`] (written before the partition started).
    pub fn version(&self) -> u32 {
        self.state.version
    }

    /// [`ModuleState::n_partitions`] (written before the partition started).
    pub fn n_partitions(&self) -> u32 {
        self.state.n_partitions
    }

    /// [`ModuleState::epoch_ns`]: one `Relaxed` load (written before the partition started; it
    /// publishes nothing, and GET_TIME reads it).
    #[inline]
    pub fn epoch_ns(&self) -> u64 {
        self.state.epoch_ns.load(Ordering::Relaxed)
    }

    /// [`ModuleState::current_schedule`].
    pub fn current_schedule(&self) -> u32 {
        load_u32(&self.state.current_schedule)
    }

    /// [`ModuleState::next_schedule`].
    pub fn next_schedule(&self) -> u32 {
        load_u32(&self.state.next_schedule)
    }

    /// [`ModuleState::last_schedule_switch_ns`].
    pub fn last_schedule_switch_ns(&self) -> u64 {
        load_u64(&self.state.last_schedule_switch_ns)
    }

    /// [`ModuleState::major_frames`].
    pub fn major_frames(&self) -> u64 {
        load_u64(&self.state.major_frames)
    }

    /// Whether the module is shutting down ([`ModuleState::shutdown`] non-zero).
    pub fn shutdown(&self) -> bool {
        load_u32(&self.state.shutdown) != 0
    }
}

impl std::fmt::Debug for ModuleView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleView")
            .field("n_partitions", &self.n_partitions())
            .field("epoch_ns", &self.epoch_ns())
            .field("current_schedule", &self.current_schedule())
            .field("next_schedule", &self.next_schedule())
            .field("major_frames", &self.major_frames())
            .field("shutdown", &self.shutdown())
            .finish()
    }
}

/// One partition's region (executive and that partition write, as documented per field).
#[repr(C, align(64))]
pub struct PartitionState {
    /// [`MAGIC`].
    pub magic: u64,
    /// [`LAYOUT_VERSION`].
    pub version: u32,
    /// `PartitionIdentifier` (written once by the executive).
    pub partition_id: u32,
    /// Index of the partition in the configuration (written once by the executive).
    pub index: u32,
    /// Executive: ARINC `OPERATING_MODE_TYPE` ([`mode`]). The partition also sets NORMAL itself
    /// when it calls SET_PARTITION_MODE(NORMAL); futex word the executive may wait on at startup.
    pub operating_mode: AtomicU32,
    /// Executive: [`start_condition`] of the current start.
    pub start_condition: AtomicU32,
    /// Executive: how many times the partition process was (re)started.
    pub restarts: AtomicU32,
    /// Executive: pid of the partition process (0 when none).
    pub pid: AtomicI32,
    /// Executive: period of the partition in the current module schedule (ns).
    pub period_ns: AtomicU64,
    /// Executive: duration of the partition in the current module schedule (ns).
    pub duration_ns: AtomicU64,
    /// Executive: 1 while one of the partition's windows is open.
    pub window_active: AtomicU32,
    /// Executive: windows opened so far.
    pub window_seq: AtomicU64,
    /// Executive: planned start of the current (or last) window, module time ns.
    pub window_start_ns: AtomicU64,
    /// Executive: planned end of the current (or last) window, module time ns.
    pub window_end_ns: AtomicU64,
    /// Executive: 1 when the current (or last) window starts a period of the partition: it is
    /// marked `PartitionPeriodStart="true"`, or the current schedule marks none of the
    /// partition's windows (then every window counts). Written before `window_active`'s opening
    /// store. SET_PARTITION_MODE(NORMAL) anchors the releases at such a window.
    pub window_period_start: AtomicU32,
    /// Partition: `CLOCK_MONOTONIC` ns at which the partition's first thread ran again after its
    /// window opened (stamped once per window, by the gate's park handler or the SIGCONT
    /// handler); the executive derives PtswO from it.
    pub resumed_at_ns: AtomicU64,
    /// Partition: the `window_seq` of the window whose resume `resumed_at_ns` holds.
    pub resumed_seq: AtomicU64,
    /// Executive: the partition's gate, a futex word: odd = open, even = closed. With the gate
    /// switch mechanism (`executive::os`), every thread of a closed partition waits on it inside
    /// the park signal's handler (`attach::park_signal`) until the executive opens it.
    pub gate: AtomicU32,
    /// Executive: threads the park chain should reach at a close (the executive's last count of
    /// the process's threads).
    pub gate_expect: AtomicU32,
    /// Partition: threads parked on the gate now, plus threads parked for good (the main thread
    /// after a mode change, which never runs again). An abandoned incarnation exits instead.
    pub gate_parked: AtomicU32,
    /// Partition: the closed `gate` value at which `gate_expect` threads were parked (the
    /// executive verifies it against the kernel's thread count before it trusts it).
    pub gate_acked: AtomicU32,
    /// Executive: `CLOCK_MONOTONIC` ns before which a thread that finds the gate open must not
    /// return to the partition's code (0: at once). The executive opens a gate ahead of the
    /// window's planned start (`executive` "early switch"); the woken thread busy-waits in the
    /// park handler until this time. Written before the gate's opening store (Release).
    pub gate_open_at_ns: AtomicU64,
    /// Partition: non-zero once the park handler is installed (until then the executive stops
    /// the partition with SIGSTOP: the park signal would end the process).
    pub gate_ready: AtomicU32,
    /// Executive: 1 when at this close the executive sends the park signal to every thread of
    /// the partition itself (the threads in `tids` are all the kernel counts), so the handlers
    /// do not pass it on; 0 when it signals the process once and the handlers pass it from
    /// thread to thread.
    pub gate_broadcast: AtomicU32,
    /// Partition: incremented by a thread of the park handler each time it is about to wait on
    /// the closed gate (before the `futex` wait). The executive compares it across the lead of
    /// a point (`prepare_open` to the opening store): a thread it woke ahead of the open that
    /// found the gate still closed (it ran on another CPU, or the executive blocked in the
    /// point) waits again, and must be woken by the open.
    pub gate_waits: AtomicU32,
    /// Partition: kernel thread ids of the runtime's threads (0: a free entry; negative: a
    /// thread parked for good, counted in `gate_parked` already, never signalled). Each thread
    /// enters itself when it starts and leaves when it ends. The executive signals these
    /// threads at a close when they are all the process's threads (`tgkill` with the
    /// partition's pid: an entry cannot name a thread of another process).
    pub tids: [AtomicI32; MAX_TIDS],
    /// Partition: 1 while the thread of the same `tids` entry is in the park handler with the
    /// park signal blocked; the executive does not signal it then (a blocked real-time signal
    /// queues: one more for every close it slept through).
    pub tid_parked: [AtomicU32; MAX_TIDS],
    /// Partition: mode asked for by SET_PARTITION_MODE(IDLE/COLD_START/WARM_START) or an HM
    /// partition action; [`NO_REQUEST`] when none. The executive carries it out and resets it.
    pub requested_mode: AtomicU32,
    /// Partition: who asked for `requested_mode`, as a [`start_condition`] value, stored before
    /// `requested_mode` (Release): `PARTITION_RESTART` for SET_PARTITION_MODE,
    /// `HM_PARTITION_RESTART` for an action of the partition's HM table (IDLE, COLD_START,
    /// WARM_START), `HM_MODULE_RESTART` for a module HM action the partition's error called
    /// for (RESET with COLD_START, SHUTDOWN with IDLE). The executive reads it with the request
    /// and resets it to [`NO_REQUEST`]; a value out of that range, or a module action the
    /// configuration's module HM table never takes, counts as `PARTITION_RESTART` resp.
    /// `HM_PARTITION_RESTART` (the partition writes it: it is not trusted further).
    pub requested_condition: AtomicU32,
    /// Partition: `ScheduleIdentifier` asked for by SET_MODULE_SCHEDULE (system partitions only);
    /// [`NO_REQUEST`] when none.
    pub requested_schedule: AtomicU32,
    /// Partition: `LOCK_LEVEL_TYPE` (preemption lock depth).
    pub lock_level: AtomicU32,
    /// Partition: number of processes created (entries valid in `processes`).
    pub n_processes: AtomicU32,
    /// Partition: count of HM errors raised in the partition (all levels).
    pub hm_errors: AtomicU64,
    /// Partition: count of deadline misses detected.
    pub deadline_misses: AtomicU64,
    /// Partition: the process table.
    pub processes: [ProcessSlot; MAX_PROCESSES],
}

/// One APEX process as seen from outside the partition (written by the partition runtime,
/// `partition::*`; read by `partix run` for its summary).
///
/// All times are module time in nanoseconds. Job data is recorded for periodic processes (one job
/// per period, ended by PERIODIC_WAIT) and for each activation of an aperiodic process (release =
/// the START/DELAYED_START release time).
///
/// Definitions (the partitioning paper's notation, section 4):
/// - *release* `r`: the nominal release time (periodic: anchor + k·period; aperiodic: the time the
///   process became ready, START time + delay);
/// - *start* `s`: the time the process's thread returned from its release wait, i.e. its first
///   instruction in the job (measured by the runtime just before user code runs);
/// - *completion* `f`: the PERIODIC_WAIT call that ends the job;
/// - *response* `R = f − r`;
/// - *CtswO* `= s − max(r, resume)`, where `resume` is the partition's last resume
///   (`PartitionState::resumed_at_ns`, module time): the delay from the later of the release and the
///   window's resume to the first instruction of the job. For the highest-priority released process
///   this is the paper's CtswO (plus the timer-expiry latency TmrO when the release falls inside a
///   window); for lower-priority processes it also contains the execution of higher ones.
#[repr(C, align(64))]
pub struct ProcessSlot {
    /// NUL-padded `PROCESS_NAME_TYPE` (reads as `[u8; NAME_LEN]`).
    pub name: SlotName,
    /// [`process_state`]. READY here means "ready or running" (the runtime reports RUNNING to the
    /// process itself: on one CPU only the caller is running).
    pub state: AtomicU32,
    /// While `state` is WAITING: the module time (ns) at which the wait ends by itself (a
    /// time-out, a release point), after which the process is READY even before its thread runs
    /// again to leave the wait; 0 = only another process or an event ends it (a wait ending at
    /// time 0 is stored as 1). Stored before `state` (which is stored with Release).
    pub wait_ends_ns: AtomicU64,
    /// Base priority.
    pub base_priority: AtomicU32,
    /// Current priority.
    pub current_priority: AtomicU32,
    /// Period in ns (0 = aperiodic; `INFINITE_TIME_VALUE` maps to 0 here).
    pub period_ns: AtomicU64,
    /// Time capacity in ns (u64::MAX = infinite).
    pub time_capacity_ns: AtomicU64,
    /// Current absolute deadline, module time ns (u64::MAX = none).
    pub deadline_ns: AtomicU64,
    /// Jobs completed (PERIODIC_WAIT calls).
    pub jobs: AtomicU64,
    /// Deadline misses of this process.
    pub deadline_misses: AtomicU64,
    /// Release time `r` of the current (or last) job.
    pub last_release_ns: AtomicU64,
    /// Start time `s` of the current (or last) job.
    pub last_start_ns: AtomicU64,
    /// Worst response time seen so far (ns).
    pub worst_response_ns: AtomicU64,
    /// Completion time `f` of the last completed job.
    pub last_completion_ns: AtomicU64,
    /// Response time of the last completed job (ns).
    pub last_response_ns: AtomicU64,
    /// Sum of the response times of all completed jobs (ns); mean = total / `jobs`.
    pub total_response_ns: AtomicU64,
    /// Jobs started (releases that reached their first instruction).
    pub releases: AtomicU64,
    /// CtswO of the last started job (ns).
    pub last_ctsw_ns: AtomicU64,
    /// Worst CtswO seen (ns).
    pub worst_ctsw_ns: AtomicU64,
    /// Sum of CtswO over all started jobs (ns); mean = total / `releases`.
    pub total_ctsw_ns: AtomicU64,
}

/// The name bytes of a [`ProcessSlot`]: written once by the partition runtime before the slot is
/// published (by `PartitionState::n_processes`, Release), read-only afterwards. Reads as
/// `[u8; NAME_LEN]` through `Deref`.
#[repr(transparent)]
pub struct SlotName(std::cell::UnsafeCell<[u8; NAME_LEN]>);

#[allow(unsafe_code)]
// SAFETY: the bytes are only written before the slot is published to other threads and
// processes (see `SlotName::write`), so shared reads never race with a write.
unsafe impl Sync for SlotName {}

impl SlotName {
    /// Write the name.
    ///
    /// # Safety
    /// The slot must not be published yet: no other thread or process may read the name while
    /// this runs (publish afterwards with a Release store of `n_processes`).
    #[allow(unsafe_code)]
    pub unsafe fn write(&self, bytes: &[u8; NAME_LEN]) {
        // SAFETY: exclusive access per the caller's contract; the cell holds plain bytes.
        unsafe { *self.0.get() = *bytes }
    }
}

impl std::ops::Deref for SlotName {
    type Target = [u8; NAME_LEN];
    #[allow(unsafe_code)]
    fn deref(&self) -> &[u8; NAME_LEN] {
        // SAFETY: writes happen only before publication (see `write`), so this shared borrow
        // never overlaps a write.
        unsafe { &*self.0.get() }
    }
}

/// Size in bytes of the module region.
pub const MODULE_REGION_LEN: usize = page_round(std::mem::size_of::<ModuleState>());
/// Size in bytes of a partition region.
pub const PARTITION_REGION_LEN: usize = page_round(std::mem::size_of::<PartitionState>());

const fn page_round(n: usize) -> usize {
    (n + 4095) & !4095
}

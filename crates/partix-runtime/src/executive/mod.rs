//! The module executive: startup manager, cyclic partition scheduler, health monitor and trace.
//!
//! - [`table`]: the schedule as a pure state machine ([`table::Planner`]).
//! - [`hm`]: HM decisions from the configuration's tables (pure).
//! - [`shared`]: the regions of the module state the executive creates.
//! - [`cgroup`]: a cgroup per partition, frozen by the gate's backstop.
//! - [`os`]: the Linux side: spawning partition processes, the futex gate and SIGSTOP/SIGCONT,
//!   absolute-timer sleeps, SCHED_FIFO, and [`os::run_module`], which ties everything together.
//! - [`summary`]: the end-of-run summary.
//!
//! The decision logic ([`Executive`]) only sees the OS through two traits, [`Clock`] and
//! [`Switcher`], so the golden tests drive it on a mock clock while `partix run` drives it with
//! `clock_nanosleep` and signals.
//!
//! # Bounded work per scheduling point
//! One sleep (two with the gate's lead; with `Options::arm_ahead` one `timerfd_settime` more in
//! the lead of an opening point), at most one park signal (one per thread of the partition's
//! thread table), `SIGSTOP` or cgroup freeze and one futex wake, `SIGCONT` or thaw, a `waitpid(WNOHANG)` per partition only after a `SIGCHLD`, O(partitions) loads of
//! request words, and O(processes of the closing partition) loads for the CtswO sample; a gate
//! close is verified once, `Options::park_bound` later (one `pread` of `/proc/PID/stat`, one of the
//! partition cgroup's `cgroup.procs`). One read of the opening partition's CPU clock (in the
//! lead, or after its wake); at the close of a window in which the partition did not resume
//! (rare), one more and, if it used no CPU time, up to 8 reads of `/proc/PID/task/TID/status`
//! ([`Switcher::woken_but_not_run`]). No allocation, except when a partition is respawned
//! (inside its own time budget). An HM event or mode change that is logged is pushed into a
//! bounded ring as a fixed-size record ([`log`]); a thread of normal priority writes it to
//! stderr, so a point never waits for, nor fails because of, its log output.

pub mod cgroup;
pub mod hm;
pub mod log;
pub mod os;
pub mod shared;
pub mod summary;
pub mod table;

use crate::state::{mode, start_condition, MAX_PROCESSES, NO_REQUEST};
use crate::trace::{Record, RecordKind, Trace};
use hdrhistogram::Histogram;
use hm::{Action, Death, Decision};
use partix_config::model::{ErrorCode, ErrorLevel, Module, ModuleAction, ScheduleId};
use partix_shm::futex;
use shared::SharedState;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;
use table::{Event, PlannedWindow, Planner};

/// Time source and sleeper of the executive (`CLOCK_MONOTONIC` ns).
pub trait Clock {
    /// Return the current time.
    fn now(&mut self) -> u64;
    /// Sleep until the absolute time `t` and return the time of waking up (≥ `t`).
    fn sleep_until(&mut self, t: u64) -> u64;
    /// Block while `*word == expected`, at most until absolute time `until` (may return early).
    fn wait_word(&mut self, word: &AtomicU32, expected: u32, until: u64);
    /// Busy-wait until the absolute time `t` and return the time (≥ `t`). The default sleeps
    /// (a clock that implements [`Clock::arm`] must not let this consume the armed wake-up).
    fn spin_until(&mut self, t: u64) -> u64 {
        self.sleep_until(t)
    }
    /// Program the wake-up of the next [`Clock::sleep_until`] now, for the absolute time `t`,
    /// so that a following `sleep_until(t)` only blocks (no timer is started or the clock-event
    /// device reprogrammed between the caller's last action and its block). A later
    /// `sleep_until` for another time must still sleep until that time. Default: nothing.
    fn arm(&mut self, _t: u64) {}
}

/// The executive's control over partition processes.
pub trait Switcher {
    /// Start partition `p`'s process, stopped before it runs anything; return its pid.
    ///
    /// # Errors
    /// A description of why the process could not be started.
    fn spawn(&mut self, p: usize) -> Result<i32, String>;
    /// Stop partition `p`'s process (its window closed).
    fn stop(&mut self, p: usize);
    /// Stop partition `p`'s process at once: its window closed longer ago than the grace a
    /// stop may take (the executive could not run, e.g. a stalled CPU). Default:
    /// [`Switcher::stop`].
    fn stop_overdue(&mut self, p: usize) {
        self.stop(p);
    }
    /// Let partition `p`'s process run (its window opened, or startup).
    fn cont(&mut self, p: usize);
    /// End partition `p`'s process: kill it and return at once, without waiting for it to end
    /// (a scheduling point must not wait for a process that a thread in an uninterruptible
    /// system call keeps alive). It is reaped once it has ended, and not reported by
    /// [`Switcher::poll_death`]; [`Switcher::ending`] tells whether it has.
    fn kill(&mut self, p: usize);
    /// Return whether a process of partition `p` that [`Switcher::kill`] ended has not ended
    /// yet (a new one must not start beside it). Default: no.
    fn ending(&mut self, _p: usize) -> bool {
        false
    }
    /// [`Switcher::ending`], but first wait up to `grace_ns` for the end (called where the
    /// partition's own window is about to open, so the wait is charged to it). Default: no
    /// wait.
    fn ending_after(&mut self, p: usize, _grace_ns: u64) -> bool {
        self.ending(p)
    }
    /// Return whether partition `p` has a process that has not been found ended (default:
    /// yes). A process found ended is reported by [`Switcher::poll_death`], if not yet.
    fn has_process(&self, _p: usize) -> bool {
        true
    }
    /// Return a partition process that ended by itself since the last call, if any.
    fn poll_death(&mut self) -> Option<(usize, Death)>;
    /// Observe a trace record as it is made (golden tests render them; default: nothing).
    fn note(&mut self, _record: &Record) {}
    /// Return the earliest time (`CLOCK_MONOTONIC` ns) at which [`Switcher::enforce`] has work
    /// (a stop to verify), if any (default: none).
    fn next_deadline(&self) -> Option<u64> {
        None
    }
    /// Do the work due by `now` (`CLOCK_MONOTONIC` ns): verify stops and enforce the ones not
    /// done (default: nothing).
    fn enforce(&mut self, _now: u64) {}
    /// Audit the partitions whose park was verified and that have not run since: one that used
    /// CPU time meanwhile forged its park and is stopped at once (called while partitions
    /// initialise, when a forged park would starve the others sharing the CPU; default:
    /// nothing).
    fn audit_parked(&mut self) {}
    /// Partition `p`'s window is about to open (the executive holds the CPU until then): do
    /// what can be done ahead without letting it run, e.g. wake its first parked thread, which
    /// stays parked unless [`Switcher::cont`] follows (default: nothing).
    fn prepare_open(&mut self, _p: usize) {}
    /// Return whether partition `p` can be opened ahead of its window with
    /// [`Switcher::cont_at`] (its threads hold themselves until the start time). Default: no.
    fn can_open_at(&self, _p: usize) -> bool {
        false
    }
    /// Open partition `p` now so that its threads resume at `at` (`CLOCK_MONOTONIC` ns, may be
    /// in the future: they busy-wait for it in the runtime, not in the partition's code).
    /// Default: [`Switcher::cont`].
    fn cont_at(&mut self, p: usize, _at: u64) {
        self.cont(p);
    }
    /// Return whether partition `p` was kept from running by want of a CPU in the window now
    /// closing: its process used no CPU time since the open, and one of its threads is
    /// runnable. Asked (before the park signal) at the close of a window in which the
    /// partition did not resume, to tell a CPU taken from it (on a VM, a virtual CPU the host
    /// stalled) from a wake that never came. Default: no.
    fn woken_but_not_run(&self, _p: usize) -> bool {
        false
    }
}

/// Settings of a run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Stop after this many major frames (`None`: until the stop flag is set).
    pub max_frames: Option<u64>,
    /// Longest time the startup phase waits for all partitions to reach NORMAL.
    pub init_timeout: Duration,
    /// Gap between the end of startup and the first major frame.
    pub start_lead: Duration,
    /// Records the trace buffer holds (allocated up front).
    pub trace_capacity: usize,
    /// A window whose partition resumed later than planned + this is counted late; a window
    /// closed later than planned + this is counted as an overrun.
    pub late_threshold: Duration,
    /// Log HM events and mode changes to stderr (through [`log::LogRing`]: the scheduling
    /// thread never writes to stderr itself; [`os::run_module`] starts the thread that does).
    pub log: bool,
    /// How partitions are stopped and resumed.
    pub switch: SwitchMechanism,
    /// With the gate: how long after a close the partition may take to park before it is held
    /// (the backstop: its cgroup frozen, or SIGSTOP without one); it may run at most this long
    /// after its window.
    pub park_bound: Duration,
    /// With the gate: before a point that opens a window, wake up this much early (default
    /// 100 µs, about 3× this VM's median timer latency) and switch then
    /// ([`Options::early_switch`]) or prepare the open ([`Switcher::prepare_open`]) and
    /// busy-wait for the point (0: sleep to the point). The time is taken from whatever runs
    /// before the point (nothing in a gap; the end of the previous window when back to back).
    pub switch_lead: Duration,
    /// With the gate's lead: program the wake-up after an opening point during the lead
    /// ([`Clock::arm`]), so that after the gate store the executive only blocks (no timer is
    /// started on the partition-switch path). Only when the next sleep is predictable (no close
    /// at the point, no park verification pending); otherwise the point sleeps as before.
    /// Off by default and experimental: it only helps windows shorter than the tick period,
    /// and with it on a partition held by the SIGSTOP backstop (before partitions had cgroups)
    /// was seen running outside its windows in a test (unexplained; `docs/executive.md`). Do
    /// not enable it in production.
    pub arm_ahead: bool,
    /// With the gate's lead: carry out a point that opens a window entirely at the early
    /// wake-up — close the outgoing partition, do the point's bookkeeping, and open the
    /// incoming one with the window's start time ([`Switcher::cont_at`]: its first thread
    /// busy-waits for the start in the runtime) — then sleep through the point. The incoming
    /// partition then starts on time without a context switch at the point. Only where the
    /// switcher can open ahead ([`Switcher::can_open_at`]) and the point has no module-schedule
    /// switch or respawn; otherwise the point runs as without it.
    pub early_switch: bool,
    /// With the gate's lead: wake this much before the lead's early wake-up too (default
    /// 300 µs; 0: not), so that the early wake-up comes from a short sleep. On this VM a CPU
    /// idle for milliseconds wakes 55–90 µs late (the host no longer polls the halted vCPU),
    /// after a short idle 20–30 µs; measured in docs/executive.md.
    pub switch_prewarm: Duration,
    /// Make each partition process in its cgroup (`clone3` with `CLONE_INTO_CGROUP`, Linux 5.7)
    /// where the kernel can; `false`: fork it and move it there, as before (a move can wait
    /// for an RCU grace period at the scheduling point; `partix bench restart` compares both).
    pub spawn_into_cgroup: bool,
    /// Leave the executive and the partitions dumpable, the partitions `CAP_SYS_PTRACE` and no
    /// Landlock domain, for debugging (`partix run --debuggable`: core dumps, a debugger of the
    /// same user, one partition tracing another). By default (`false`) every partition is put in
    /// a Landlock domain of its own and drops `CAP_SYS_PTRACE`, and the executive and every
    /// partition that shares its credentials are non-dumpable, so that no partition can reach
    /// the executive's or another partition's descriptors and memory through `/proc`
    /// (`docs/ports.md`, "Region isolation").
    pub debuggable: bool,
}

/// How the executive keeps a partition off the CPU outside its windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SwitchMechanism {
    /// The futex gate: at a close every thread of the partition parks on a futex word in its
    /// region (through a signal handler of the runtime) and one `FUTEX_WAKE` lets it run again;
    /// a partition not parked within [`Options::park_bound`] is held: its cgroup frozen
    /// ([`cgroup`]), or SIGSTOPped without one (`os::OsSwitcher`).
    #[default]
    Gate,
    /// `SIGSTOP` at a close, `SIGCONT` at an open.
    Signals,
}

impl SwitchMechanism {
    /// Return the name used on the command line and in reports (`gate`, `signals`).
    pub fn name(self) -> &'static str {
        match self {
            SwitchMechanism::Gate => "gate",
            SwitchMechanism::Signals => "signals",
        }
    }
}

impl std::str::FromStr for SwitchMechanism {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "gate" => Ok(SwitchMechanism::Gate),
            "signals" => Ok(SwitchMechanism::Signals),
            _ => Err(format!(
                "unknown switch mechanism {s:?}: use gate or signals"
            )),
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_frames: None,
            init_timeout: Duration::from_secs(5),
            start_lead: Duration::from_millis(1),
            trace_capacity: 1 << 20,
            late_threshold: Duration::from_micros(200),
            log: true,
            switch: SwitchMechanism::default(),
            park_bound: Duration::from_micros(500),
            switch_lead: Duration::from_micros(100),
            arm_ahead: false,
            early_switch: true,
            switch_prewarm: Duration::from_micros(300),
            spawn_into_cgroup: true,
            debuggable: false,
        }
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// `max_frames` frames ran.
    Frames,
    /// The stop flag was set (Ctrl-C).
    Stopped,
    /// An HM action shut the module down.
    HmShutdown,
}

/// Failure of [`Executive::startup`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// A partition process could not be started (partition name, reason).
    Spawn(String, String),
    /// An HM action (INIT_TIMEOUT or a crash) shut the module down during startup.
    HmShutdown,
    /// The stop flag was set during startup (Ctrl-C).
    Stopped,
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Spawn(p, e) => write!(f, "cannot start partition {p}: {e}"),
            StartError::HmShutdown => {
                write!(f, "the health monitor shut the module down during startup")
            }
            StartError::Stopped => write!(f, "stopped during startup"),
        }
    }
}

impl std::error::Error for StartError {}

/// One HM event, as kept for the summary and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HmEvent {
    /// Partition index.
    pub partition: usize,
    /// Module time (ns) it was handled at.
    pub at_ns: u64,
    /// How the process ended (`None` for INIT_TIMEOUT).
    pub death: Option<Death>,
    /// The decision.
    pub decision: Decision,
}

/// How many HM events [`HmEvents`] keeps at each end of a run: the first ones and the last ones.
pub const HM_EVENTS_KEPT: usize = 64;

/// The HM events of a run, bounded: the first [`HM_EVENTS_KEPT`] and the last
/// [`HM_EVENTS_KEPT`] events, the number of those in between that were left out, and exact
/// counts per partition and error code. A partition that crashes in every window (a restart
/// loop) has one event per window: kept all, a long run's events grew without limit. Allocated
/// when made, nothing after.
#[derive(Debug, Clone)]
pub struct HmEvents {
    head: Vec<HmEvent>,
    tail: std::collections::VecDeque<HmEvent>,
    total: u64,
    /// Per partition, per error code ([`hm::code_index`]).
    counts: Vec<[u64; hm::ERROR_CODES.len()]>,
}

impl HmEvents {
    /// Return an empty record for `partitions` partitions.
    pub fn new(partitions: usize) -> HmEvents {
        HmEvents {
            head: Vec::with_capacity(HM_EVENTS_KEPT),
            tail: std::collections::VecDeque::with_capacity(HM_EVENTS_KEPT),
            total: 0,
            counts: vec![[0; hm::ERROR_CODES.len()]; partitions],
        }
    }

    /// Record `e`: kept if among the first or (so far) the last [`HM_EVENTS_KEPT`], counted
    /// always.
    pub fn push(&mut self, e: HmEvent) {
        self.total += 1;
        if let Some(c) = self.counts.get_mut(e.partition) {
            c[hm::code_index(e.decision.code)] += 1;
        }
        if self.head.len() < HM_EVENTS_KEPT {
            self.head.push(e);
        } else {
            if self.tail.len() == HM_EVENTS_KEPT {
                self.tail.pop_front();
            }
            self.tail.push_back(e);
        }
    }

    /// Return how many events were kept (at most 2 × [`HM_EVENTS_KEPT`]).
    pub fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// Return whether no event happened.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Return how many events happened.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Return how many events happened between the first and the last kept ones, not kept.
    pub fn omitted(&self) -> u64 {
        self.total - self.len() as u64
    }

    /// Return the first events (up to [`HM_EVENTS_KEPT`]), in order.
    pub fn head(&self) -> &[HmEvent] {
        &self.head
    }

    /// Return the last events kept after [`HmEvents::head`] (up to [`HM_EVENTS_KEPT`]), in
    /// order; [`HmEvents::omitted`] events came between the two.
    pub fn tail(&self) -> impl Iterator<Item = &HmEvent> {
        self.tail.iter()
    }

    /// Return the kept events in order (the head, then the tail).
    pub fn iter(&self) -> impl Iterator<Item = &HmEvent> {
        self.head.iter().chain(self.tail.iter())
    }

    /// Return the first event.
    pub fn first(&self) -> Option<&HmEvent> {
        self.head.first()
    }

    /// Return how many events of partition `p` had error code `code` (exact).
    pub fn count(&self, p: usize, code: ErrorCode) -> u64 {
        self.counts.get(p).map_or(0, |c| c[hm::code_index(code)])
    }

    /// Return the nonzero counts: (partition, code, events).
    pub fn counts(&self) -> impl Iterator<Item = (usize, ErrorCode, u64)> + '_ {
        self.counts.iter().enumerate().flat_map(|(p, c)| {
            hm::ERROR_CODES
                .iter()
                .zip(c)
                .filter(|(_, &n)| n > 0)
                .map(move |(&code, &n)| (p, code, n))
        })
    }
}

impl std::ops::Index<usize> for HmEvents {
    type Output = HmEvent;

    /// The `i`-th kept event (in [`HmEvents::iter`]'s order).
    fn index(&self, i: usize) -> &HmEvent {
        match i.checked_sub(self.head.len()) {
            None => &self.head[i],
            Some(j) => &self.tail[j],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Running,
    Idle,
    Restart { mode: u32, cond: u32 },
}

/// How long the point that opens a restarting partition's window waits at least for its killed
/// process to end before it skips the window (charged to that window); up to the window's
/// length minus [`SPAWN_BUDGET_NS`] when that is longer.
const RESTART_GRACE_NS: u64 = 200_000;

/// What a respawn and the new process's start take at most in the window of a restart, as
/// planned for: the wait for the old process's end leaves this much of the window.
const SPAWN_BUDGET_NS: u64 = 2_000_000;

/// Per-partition counters of a run.
#[derive(Debug, Clone, Default)]
pub struct PartitionStats {
    /// Windows opened.
    pub windows: u64,
    /// Windows skipped because the partition was IDLE.
    pub skipped: u64,
    /// Windows skipped because the partition's restart waited for its previous process to end
    /// (killed, but not ended yet: e.g. a thread in a system call that a SIGKILL does not
    /// interrupt).
    pub deferred: u64,
    /// Windows whose partition resumed later than planned + the late threshold.
    pub late: u64,
    /// Windows closed later than planned + the late threshold.
    pub overruns: u64,
    /// Respawns of the partition after its first start (during the initialisation too),
    /// counted once the new process exists.
    pub restarts: u64,
    /// HM events: those the executive decided (a death, INIT_TIMEOUT), and the mode requests
    /// the partition's own health monitor made (an HM table action: IDLE, COLD_START,
    /// WARM_START, a module RESET or SHUTDOWN).
    pub hm_events: u64,
    /// Windows in which the partition did not resume because its woken thread waited for a
    /// CPU the whole window: runnable at the close, never run ([`Switcher::woken_but_not_run`];
    /// the trace record of such a window has the text [`STARVED`]). On a VM, a virtual CPU
    /// the host stalled with the thread queued on it (docs/executive.md).
    pub starved: u64,
}

/// The text of the trace record of a window whose partition waited for a CPU the whole window
/// ([`PartitionStats::starved`]).
pub const STARVED: &str = "woken, waited for a CPU";

struct PartRun {
    status: Status,
    opened: bool,
    /// A window was opened since the process was (re)started.
    opened_since_spawn: bool,
    open_wake: u64,
    seq_at_open: u64,
    seen_mode: u32,
    stats: PartitionStats,
    /// Its process is to be killed when its next window would open (a restart or IDLE decided
    /// while its window was closed: the killed process's exit, which runs on the CPU as it
    /// dies, is charged to its own window, not to the next partition's).
    kill_pending: bool,
}

/// Histograms of the scheduling overheads (ns).
#[derive(Debug, Clone)]
pub struct Overheads {
    /// Timer overhead: wake-up − planned time, per scheduling point.
    pub tmro: Histogram<u64>,
    /// Partition switch overhead: incoming partition resumed − wake-up, per window.
    pub ptswo: Histogram<u64>,
    /// Release delay inside partitions: a job's start − max(release, partition resume)
    /// (`ProcessSlot::last_ctsw_ns`), sampled at each window close per process. For the
    /// highest-priority job released at a window start this is the paper's CtswO; for a lower
    /// one it also holds the run time of the jobs before it (queueing), so it grows with the
    /// number of processes released together. See [`Overheads::ctswo_switch`].
    pub ctswo: Histogram<u64>,
    /// The paper's CtswO per job: start − max(release, partition resume, the latest completion of
    /// a job of the partition before that start) ([`switch_ctsw`]), sampled with
    /// [`Overheads::ctswo`]: the time from the later of the release, the window's start and the
    /// end of the previous job (PERIODIC_WAIT) to the job's first instruction, without the run
    /// time of higher-priority jobs.
    pub ctswo_switch: Histogram<u64>,
    /// TmrO at the points that open a window (with the gate's lead: the busy-wait's overshoot
    /// when the early timer was on time).
    pub tmro_open: Histogram<u64>,
    /// Latency of the early timer before an opening point (`Options::switch_lead`): wake-up −
    /// (planned − lead). When it is below the lead, the point itself starts on time.
    pub lead_timer: Histogram<u64>,
}

impl Overheads {
    fn new() -> Overheads {
        let h = || Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds");
        Overheads {
            tmro: h(),
            ptswo: h(),
            ctswo: h(),
            ctswo_switch: h(),
            lead_timer: h(),
            tmro_open: h(),
        }
    }
}

/// The paper's CtswO of a job that started at `start` (module ns) with the release delay `delay`
/// (`ProcessSlot::last_ctsw_ns` = start − max(release, partition resume)), given the
/// completion times of the partition's processes (`ProcessSlot::last_completion_ns`, sorted
/// ascending): start − max(release, resume, the latest completion at or before `start`).
///
/// On one CPU a job released together with higher-priority ones starts when the last of those
/// completes; the release delay then holds their run time (queueing), which this leaves out.
/// A completion before the release or the resume changes nothing; the job's own completion, if
/// it completed, comes after its start and is not counted.
pub fn switch_ctsw(start: u64, delay: u64, completions_sorted: &[u64]) -> u64 {
    let base = start.saturating_sub(delay);
    let k = completions_sorted.partition_point(|&c| c <= start);
    let prev = if k == 0 { 0 } else { completions_sorted[k - 1] };
    start - base.max(prev).min(start)
}

/// The executive's decision logic over a module, generic in how time and processes are handled.
pub struct Executive<'m> {
    module: &'m Module,
    shared: &'m SharedState,
    planner: Planner,
    parts: Vec<PartRun>,
    slot_seen: Vec<u64>,
    opts: Options,
    epoch: u64,
    /// The schedule trace.
    pub trace: Trace,
    /// The overhead histograms.
    pub overheads: Overheads,
    /// HM events handled (bounded: see [`HmEvents`]).
    pub hm_events: HmEvents,
    /// Time from the start of [`Executive::startup`] until every partition was NORMAL (or IDLE).
    pub startup_ns: u64,
    /// Major frames started.
    pub frames: u64,
    /// The run phase has begun: kills of partitions whose window is closed wait for their
    /// next window ([`PartRun::kill_pending`]).
    in_run: bool,
    /// The process counters of the partitions' ended incarnations, by partition and name
    /// (folded at each respawn, see [`ProcessTotals`]).
    pub retired: Vec<ProcessTotals>,
    /// By schedule index, by partition index: the schedule marks some of the partition's
    /// windows `PartitionPeriodStart` (then only those start its periods).
    period_marks: Vec<Vec<bool>>,
    /// Where log lines go, with [`Options::log`] (`None`: not logged).
    log_ring: Option<std::sync::Arc<log::LogRing>>,
}

/// What a partition's mode request ([`Executive::take_mode_request`]) came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Taken {
    /// None, or one of a partition that is not running.
    Nothing,
    /// The partition is IDLE.
    Idle,
    /// The partition restarts.
    Restart,
    /// Every partition restarts (module RESET from the partition's HM).
    ModuleReset,
    /// The module shuts down (module SHUTDOWN from the partition's HM).
    ModuleShutdown,
}

/// Most entries of one partition in [`Executive::retired`]: a partition whose incarnations
/// keep naming new processes has the rest of them folded into one entry named
/// [`OTHER_PROCESSES`].
pub const MAX_RETIRED: usize = 2 * MAX_PROCESSES;

/// The name of the entry that holds the processes beyond [`MAX_RETIRED`].
pub const OTHER_PROCESSES: &str = "(other processes)";

/// One APEX process's counters (from its process slot), summed over the incarnations of its
/// partition that created a process of that name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessTotals {
    /// Partition index.
    pub partition: usize,
    /// Process name.
    pub name: String,
    /// Jobs completed.
    pub jobs: u64,
    /// Deadline misses.
    pub deadline_misses: u64,
    /// Sum of the response times (ns).
    pub total_response_ns: u64,
    /// Worst response time (ns).
    pub worst_response_ns: u64,
    /// Jobs started.
    pub releases: u64,
    /// Sum of the CtswO values (ns).
    pub total_ctsw_ns: u64,
    /// Worst CtswO (ns).
    pub worst_ctsw_ns: u64,
}

impl ProcessTotals {
    /// The counters of `slot` of partition `partition`.
    pub fn from_slot(partition: usize, slot: &crate::state::ProcessSlot) -> ProcessTotals {
        let len = slot
            .name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(crate::state::NAME_LEN);
        ProcessTotals {
            partition,
            name: String::from_utf8_lossy(&slot.name[..len]).into_owned(),
            jobs: slot.jobs.load(Ordering::Acquire),
            deadline_misses: slot.deadline_misses.load(Ordering::Acquire),
            total_response_ns: slot.total_response_ns.load(Ordering::Acquire),
            worst_response_ns: slot.worst_response_ns.load(Ordering::Acquire),
            releases: slot.releases.load(Ordering::Acquire),
            total_ctsw_ns: slot.total_ctsw_ns.load(Ordering::Acquire),
            worst_ctsw_ns: slot.worst_ctsw_ns.load(Ordering::Acquire),
        }
    }

    /// Add `o`'s counters to these.
    pub fn add(&mut self, o: &ProcessTotals) {
        self.jobs = self.jobs.saturating_add(o.jobs);
        self.deadline_misses = self.deadline_misses.saturating_add(o.deadline_misses);
        self.total_response_ns = self.total_response_ns.saturating_add(o.total_response_ns);
        self.worst_response_ns = self.worst_response_ns.max(o.worst_response_ns);
        self.releases = self.releases.saturating_add(o.releases);
        self.total_ctsw_ns = self.total_ctsw_ns.saturating_add(o.total_ctsw_ns);
        self.worst_ctsw_ns = self.worst_ctsw_ns.max(o.worst_ctsw_ns);
    }

    /// Add `t` to the entry of its partition and name in `list`, or append it: at most
    /// `cap` entries per partition, the last of which, [`OTHER_PROCESSES`], holds the rest.
    pub fn merge_into(t: ProcessTotals, list: &mut Vec<ProcessTotals>, cap: usize) {
        if let Some(e) = list
            .iter_mut()
            .find(|e| e.partition == t.partition && e.name == t.name)
        {
            e.add(&t);
            return;
        }
        let held = list.iter().filter(|e| e.partition == t.partition).count();
        if held + 1 < cap {
            list.push(t);
            return;
        }
        if let Some(e) = list
            .iter_mut()
            .find(|e| e.partition == t.partition && e.name == OTHER_PROCESSES)
        {
            e.add(&t);
        } else {
            let mut other = ProcessTotals {
                partition: t.partition,
                name: OTHER_PROCESSES.into(),
                ..ProcessTotals::default()
            };
            other.add(&t);
            list.push(other);
        }
    }
}

fn mode_name(m: u32) -> &'static str {
    match m {
        mode::IDLE => "IDLE",
        mode::COLD_START => "COLD_START",
        mode::WARM_START => "WARM_START",
        mode::NORMAL => "NORMAL",
        _ => "?",
    }
}

impl<'m> Executive<'m> {
    /// Prepare to run `module` over `shared` (created for the same module).
    ///
    /// # Errors
    /// [`table::PlanError`] for unusable schedules (never for a validated module).
    pub fn new(
        module: &'m Module,
        shared: &'m SharedState,
        opts: Options,
    ) -> Result<Executive<'m>, table::PlanError> {
        let planner = Planner::new(module, 0)?;
        let n = module.partitions.len();
        let names = module.partitions.iter().map(|p| p.name.clone()).collect();
        Ok(Executive {
            module,
            shared,
            planner,
            parts: (0..n)
                .map(|_| PartRun {
                    kill_pending: false,
                    status: Status::Idle,
                    opened: false,
                    opened_since_spawn: false,
                    open_wake: 0,
                    seq_at_open: 0,
                    seen_mode: mode::IDLE,
                    stats: PartitionStats::default(),
                })
                .collect(),
            slot_seen: vec![0; n * MAX_PROCESSES],
            trace: Trace::with_capacity(opts.trace_capacity, &module.name, names),
            log_ring: opts
                .log
                .then(|| std::sync::Arc::new(log::LogRing::new(log::LOG_RING_LINES))),
            opts,
            epoch: shared.module().epoch_ns.load(Ordering::Relaxed),
            overheads: Overheads::new(),
            hm_events: HmEvents::new(n),
            startup_ns: 0,
            frames: 0,
            in_run: false,
            retired: Vec::new(),
            period_marks: module
                .schedules
                .iter()
                .map(|s| {
                    module
                        .partitions
                        .iter()
                        .map(|p| {
                            s.windows
                                .iter()
                                .any(|w| w.partition == p.id && w.period_start)
                        })
                        .collect()
                })
                .collect(),
        })
    }

    /// Return the module epoch (`CLOCK_MONOTONIC` ns of module time zero).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Return partition `p`'s counters.
    ///
    /// # Panics
    /// If `p` is out of range.
    pub fn partition_stats(&self, p: usize) -> &PartitionStats {
        &self.parts[p].stats
    }

    /// Return whether partition `p` is IDLE (gets no more windows).
    ///
    /// # Panics
    /// If `p` is out of range.
    pub fn is_idle(&self, p: usize) -> bool {
        self.parts[p].status == Status::Idle
    }

    /// Return partition `p`'s operating mode as the executive knows it: the mode it gave the
    /// partition (at a start, a restart, IDLE), or NORMAL once the partition reported the
    /// transition. Not read from the partition's region, which the partition can write.
    ///
    /// # Panics
    /// If `p` is out of range.
    pub fn partition_mode(&self, p: usize) -> u32 {
        self.parts[p].seen_mode
    }

    /// Return the ring the executive's log lines go to (with [`Options::log`]): hand it to a
    /// [`log::Logger`], which writes them to stderr.
    pub fn log_ring(&self) -> Option<std::sync::Arc<log::LogRing>> {
        self.log_ring.clone()
    }

    /// Log `line` (with [`Options::log`]): a push into the ring, which never blocks.
    fn log(&self, line: log::LogLine) {
        if let Some(r) = &self.log_ring {
            r.push(line);
        }
    }

    /// Return the module.
    pub fn module(&self) -> &'m Module {
        self.module
    }

    /// Return the shared state.
    pub fn shared(&self) -> &'m SharedState {
        self.shared
    }

    fn record<S: Switcher>(&mut self, sw: &mut S, r: Record) {
        sw.note(&r);
        self.trace.push(r);
    }

    fn set_period(&self, sched: usize) {
        let s = &self.module.schedules[sched];
        for (i, p) in self.module.partitions.iter().enumerate() {
            let st = self.shared.partition(i);
            let (per, dur) = s
                .partitions
                .iter()
                .find(|ps| ps.partition == p.id)
                .map_or((0, 0), |ps| {
                    (ps.period.as_nanos() as u64, ps.duration.as_nanos() as u64)
                });
            st.period_ns.store(per, Ordering::Relaxed);
            st.duration_ns.store(dur, Ordering::Relaxed);
        }
    }

    /// The running frame's index (0-based, as window and point records count frames; 0 during
    /// the initialisation): `frames` counts the frames started.
    fn frame_index(&self) -> u64 {
        self.frames.saturating_sub(1)
    }

    fn mode_record<S: Switcher>(
        &mut self,
        sw: &mut S,
        p: usize,
        m: u32,
        cause: &'static str,
        at: u64,
    ) {
        let mut r = Record::new(RecordKind::Mode, p as u32);
        r.text = mode_name(m);
        r.text2 = cause;
        r.actual_start = at;
        r.frame = self.frame_index();
        r.schedule = self.planner.schedule_id(self.planner.current()).0;
        self.parts[p].seen_mode = m;
        self.record(sw, r);
        if cause != "startup" && cause != "partition" {
            self.log(log::LogLine::Mode {
                p: p as u32,
                mode: m,
                cause,
            });
        }
    }

    /// Start every partition (COLD_START, running freely) and wait until each is NORMAL, IDLE, or
    /// the init timeout expired (HM error INIT_TIMEOUT); then stop them all and plan the first
    /// major frame `start_lead` later.
    ///
    /// # Errors
    /// [`StartError`] if a process cannot be started or the HM shuts the module down.
    pub fn startup<C: Clock, S: Switcher>(
        &mut self,
        clock: &mut C,
        sw: &mut S,
    ) -> Result<(), StartError> {
        self.startup_until(clock, sw, &AtomicBool::new(false))
    }

    /// [`Executive::startup`], ending with [`StartError::Stopped`] when `stop` is set (it used
    /// to be looked at only once the initialisation ended: a Ctrl-C waited up to the init
    /// time-out).
    ///
    /// # Errors
    /// As [`Executive::startup`]; [`StartError::Stopped`].
    pub fn startup_until<C: Clock, S: Switcher>(
        &mut self,
        clock: &mut C,
        sw: &mut S,
        stop: &AtomicBool,
    ) -> Result<(), StartError> {
        let t0 = clock.now();
        self.set_period(self.planner.current());
        // Every process exists (stopped before exec) before any of them runs, so a partition
        // spinning in its initialisation cannot starve the creation of the next one.
        for p in 0..self.parts.len() {
            self.respawn(sw, p, mode::COLD_START, start_condition::NORMAL_START)?;
            let at = clock.now() - self.epoch;
            self.mode_record(sw, p, mode::COLD_START, "startup", at);
        }
        for p in 0..self.parts.len() {
            sw.cont(p);
        }
        // A partition that reached NORMAL is stopped at once: it waits for its first window
        // and leaves the CPU to those still initialising.
        let mut stopped = vec![false; self.parts.len()];
        let deadline =
            t0.saturating_add(self.opts.init_timeout.as_nanos().min(u64::MAX as u128) as u64);
        loop {
            if stop.load(Ordering::Relaxed) {
                return Err(StartError::Stopped);
            }
            let now = clock.now();
            while let Some((p, death)) = sw.poll_death() {
                let d = hm::decide(self.module, p, death.error_code());
                self.hm_event(sw, p, Some(death), d, now - self.epoch);
                // As in the run loop: a restart waits for the old process (and whatever it
                // forked) to end, below; a module reset restarts every partition, not only the
                // one that died (found by review: the others went on from their NORMAL_START).
                if self.apply_death(sw, p, d, now - self.epoch) {
                    return Err(StartError::HmShutdown);
                }
                match d.action {
                    Action::ModuleReset => stopped.fill(false),
                    Action::ColdStart | Action::WarmStart => stopped[p] = false,
                    _ => {}
                }
            }
            for p in 0..self.parts.len() {
                // A restart asked for during the initialisation: carried out now, as the run
                // loop does at a point (the process that asked waits parked for it; dropping
                // the request left it so until the init time-out). The new process starts
                // below, once the old one has ended.
                match self.take_mode_request(sw, p, now - self.epoch) {
                    Taken::Restart => stopped[p] = false,
                    Taken::ModuleReset => stopped.fill(false),
                    Taken::ModuleShutdown => return Err(StartError::HmShutdown),
                    Taken::Idle | Taken::Nothing => {}
                }
                self.note_partition_mode(sw, p, now - self.epoch);
            }
            // Restarts whose old process has ended. One that cannot be spawned leaves its
            // partition IDLE, as in the run loop, and the others start (it aborted the run).
            for p in 0..self.parts.len() {
                if let Status::Restart { mode: m, cond } = self.parts[p].status {
                    if !sw.ending(p) {
                        if let Err(e) = self.start_process(clock, sw, p, m, cond) {
                            self.log(log::LogLine::spawn_failed(p, &e));
                            self.mode_record(
                                sw,
                                p,
                                mode::IDLE,
                                "spawn failed",
                                clock.now() - self.epoch,
                            );
                        }
                    }
                }
            }
            for (p, done) in stopped.iter_mut().enumerate() {
                if !*done
                    && self.parts[p].status == Status::Running
                    && self
                        .shared
                        .partition(p)
                        .operating_mode
                        .load(Ordering::Acquire)
                        == mode::NORMAL
                {
                    sw.stop(p);
                    *done = true;
                }
            }
            // A restart still waiting for its old process to end is waited for too (a partition
            // still restarting at the init time-out starts in its windows, once that has ended).
            let waiting = (0..self.parts.len()).find(|&p| match self.parts[p].status {
                Status::Running => {
                    self.shared
                        .partition(p)
                        .operating_mode
                        .load(Ordering::Acquire)
                        != mode::NORMAL
                }
                Status::Restart { .. } => true,
                Status::Idle => false,
            });
            let Some(wp) = waiting else { break };
            if now >= deadline {
                for p in 0..self.parts.len() {
                    let st = self.shared.partition(p);
                    if self.parts[p].status != Status::Running
                        || st.operating_mode.load(Ordering::Acquire) == mode::NORMAL
                    {
                        continue;
                    }
                    let d = hm::decide(self.module, p, ErrorCode::InitTimeout);
                    self.hm_event(sw, p, None, d, now - self.epoch);
                    match d.action {
                        Action::ModuleShutdown => return Err(StartError::HmShutdown),
                        // Leave it running windowed, still initialising.
                        Action::Ignore => {}
                        // A restart (of the partition or of the module) would time out again:
                        // the partition is idled, and the record says so.
                        _ => self.make_idle(
                            sw,
                            p,
                            "HM: INIT_TIMEOUT (a restart would time out again)",
                            now - self.epoch,
                        ),
                    }
                }
                break;
            }
            // Stops to verify (the gate's backstop) bound the wait too: a partition that does not
            // park must not keep the others from initialising; nor may one that forges its park
            // (the CPU-time audit, run here at every turn, not only before its first window).
            sw.enforce(now);
            sw.audit_parked();
            let until = deadline
                .min(now + 1_000_000)
                .min(sw.next_deadline().unwrap_or(u64::MAX));
            let st = self.shared.partition(wp);
            let cur = st.operating_mode.load(Ordering::Acquire);
            clock.wait_word(&st.operating_mode, cur, until);
        }
        let end = clock.now();
        self.startup_ns = end - t0;
        for (p, done) in stopped.iter().enumerate() {
            if !done && self.parts[p].status == Status::Running {
                sw.stop(p);
            }
        }
        let first = (end - self.epoch) + self.opts.start_lead.as_nanos() as u64;
        self.planner = Planner::new(self.module, first).expect("validated in new");
        Ok(())
    }

    fn start_process<C: Clock, S: Switcher>(
        &mut self,
        clock: &mut C,
        sw: &mut S,
        p: usize,
        m: u32,
        cond: u32,
    ) -> Result<(), StartError> {
        self.respawn(sw, p, m, cond)?;
        self.parts[p].stats.restarts += 1;
        let at = clock.now() - self.epoch;
        self.mode_record(sw, p, m, "startup", at);
        sw.cont(p);
        Ok(())
    }

    /// Before partition `p`'s next incarnation (its process has ended): fold the counters of
    /// its process slots into [`Executive::retired`] and zero them, so that a slot's counters
    /// are those of the process the new incarnation creates in it, and its `releases` start
    /// again from the zero `slot_seen` is reset to.
    fn retire_processes(&mut self, p: usize) {
        let st = self.shared.partition(p);
        let n = (st.n_processes.load(Ordering::Acquire) as usize).min(MAX_PROCESSES);
        for slot in &st.processes[..n] {
            ProcessTotals::merge_into(
                ProcessTotals::from_slot(p, slot),
                &mut self.retired,
                MAX_RETIRED,
            );
        }
        for slot in &st.processes {
            for c in [
                &slot.jobs,
                &slot.deadline_misses,
                &slot.last_release_ns,
                &slot.last_start_ns,
                &slot.worst_response_ns,
                &slot.last_completion_ns,
                &slot.last_response_ns,
                &slot.total_response_ns,
                &slot.releases,
                &slot.last_ctsw_ns,
                &slot.worst_ctsw_ns,
                &slot.total_ctsw_ns,
            ] {
                c.store(0, Ordering::Release);
            }
        }
    }

    /// The counters of every APEX process of the run, by partition and name: those of the
    /// partitions' ended incarnations ([`Executive::retired`]) and those of the running ones'
    /// process slots.
    pub fn process_totals(&self) -> Vec<ProcessTotals> {
        let mut totals = self.retired.clone();
        for p in 0..self.parts.len() {
            let st = self.shared.partition(p);
            let n = (st.n_processes.load(Ordering::Acquire) as usize).min(MAX_PROCESSES);
            for slot in &st.processes[..n] {
                ProcessTotals::merge_into(
                    ProcessTotals::from_slot(p, slot),
                    &mut totals,
                    MAX_RETIRED,
                );
            }
        }
        totals.sort_by_key(|t| t.partition);
        totals
    }

    /// Spawn partition `p` (stopped) and publish its start in shared memory.
    fn respawn<S: Switcher>(
        &mut self,
        sw: &mut S,
        p: usize,
        m: u32,
        cond: u32,
    ) -> Result<i32, StartError> {
        let st = self.shared.partition(p);
        self.retire_processes(p);
        st.operating_mode.store(m, Ordering::Release);
        st.start_condition.store(cond, Ordering::Release);
        st.requested_mode.store(NO_REQUEST, Ordering::Release);
        st.requested_condition.store(NO_REQUEST, Ordering::Release);
        st.requested_schedule.store(NO_REQUEST, Ordering::Release);
        st.n_processes.store(0, Ordering::Release);
        st.lock_level.store(0, Ordering::Release);
        st.window_active.store(0, Ordering::Release);
        self.slot_seen[p * MAX_PROCESSES..(p + 1) * MAX_PROCESSES].fill(0);
        self.parts[p].opened_since_spawn = false;
        match sw.spawn(p) {
            Ok(pid) => {
                st.pid.store(pid, Ordering::Release);
                if cond != start_condition::NORMAL_START {
                    st.restarts.fetch_add(1, Ordering::AcqRel);
                }
                self.parts[p].status = Status::Running;
                Ok(pid)
            }
            Err(e) => {
                st.pid.store(0, Ordering::Release);
                st.operating_mode.store(mode::IDLE, Ordering::Release);
                self.parts[p].status = Status::Idle;
                Err(StartError::Spawn(self.module.partitions[p].name.clone(), e))
            }
        }
    }

    /// End partition `p`'s running process: when its next window would open
    /// ([`PartRun::kill_pending`]) during the run, where its window is closed (always, at a
    /// point: windows do not overlap and a point closes before it decides), its process is
    /// still there, and the current schedule gives it a window; at once otherwise (during the
    /// initialisation; a process already ended, whose death is still to be reported; a
    /// partition without a window in this schedule).
    fn kill_or_defer<S: Switcher>(&mut self, sw: &mut S, p: usize) {
        if self.in_run
            && !self.parts[p].opened
            && sw.has_process(p)
            && self.has_window(self.planner.current(), p)
        {
            self.parts[p].kill_pending = true;
        } else {
            sw.kill(p);
        }
    }

    /// Return whether schedule `sched` (index) gives partition `p` a window.
    fn has_window(&self, sched: usize, p: usize) -> bool {
        let id = self.module.partitions[p].id;
        self.module
            .schedules
            .get(sched)
            .is_some_and(|s| s.windows.iter().any(|w| w.partition == id))
    }

    fn make_idle<S: Switcher>(&mut self, sw: &mut S, p: usize, cause: &'static str, at: u64) {
        if self.parts[p].status == Status::Running {
            self.kill_or_defer(sw, p);
        }
        self.parts[p].status = Status::Idle;
        let st = self.shared.partition(p);
        st.pid.store(0, Ordering::Release);
        st.operating_mode.store(mode::IDLE, Ordering::Release);
        self.mode_record(sw, p, mode::IDLE, cause, at);
    }

    fn schedule_restart<S: Switcher>(
        &mut self,
        sw: &mut S,
        p: usize,
        m: u32,
        cond: u32,
        cause: &'static str,
        at: u64,
    ) {
        if self.parts[p].status == Status::Running {
            self.kill_or_defer(sw, p);
        }
        self.parts[p].status = Status::Restart { mode: m, cond };
        let st = self.shared.partition(p);
        st.pid.store(0, Ordering::Release);
        st.operating_mode.store(m, Ordering::Release);
        st.start_condition.store(cond, Ordering::Release);
        self.mode_record(sw, p, m, cause, at);
    }

    fn hm_event<S: Switcher>(
        &mut self,
        sw: &mut S,
        p: usize,
        death: Option<Death>,
        d: Decision,
        at: u64,
    ) {
        self.parts[p].stats.hm_events += 1;
        self.log(log::LogLine::Hm {
            p: p as u32,
            death,
            decision: d,
        });
        let mut r = Record::new(RecordKind::Hm, p as u32);
        r.text = hm::code_name(d.code);
        r.text2 = d.action.name();
        r.detail = match death {
            Some(Death::Signaled(s)) => s as i64,
            Some(Death::Exited(c)) => -(c as i64) - 1000,
            None => 0,
        };
        r.actual_start = at;
        r.frame = self.frame_index();
        r.schedule = self.planner.schedule_id(self.planner.current()).0;
        self.record(sw, r);
        self.hm_events.push(HmEvent {
            partition: p,
            at_ns: at,
            death,
            decision: d,
        });
    }

    /// Apply an HM decision for a partition whose process has died. Return true to shut down.
    fn apply_death<S: Switcher>(&mut self, sw: &mut S, p: usize, d: Decision, at: u64) -> bool {
        // The process is gone: nothing to kill.
        self.parts[p].status = Status::Idle;
        match d.action {
            Action::Idle | Action::Ignore => self.make_idle(sw, p, "HM", at),
            Action::ColdStart => self.schedule_restart(
                sw,
                p,
                mode::COLD_START,
                start_condition::HM_PARTITION_RESTART,
                "HM",
                at,
            ),
            Action::WarmStart => self.schedule_restart(
                sw,
                p,
                mode::WARM_START,
                start_condition::HM_PARTITION_RESTART,
                "HM",
                at,
            ),
            Action::ModuleShutdown => return true,
            Action::ModuleReset => {
                for q in 0..self.parts.len() {
                    self.schedule_restart(
                        sw,
                        q,
                        mode::COLD_START,
                        start_condition::HM_MODULE_RESTART,
                        "HM module reset",
                        at,
                    );
                }
            }
        }
        false
    }

    /// Run major frames until `max_frames`, the stop flag, or an HM shutdown.
    pub fn run<C: Clock, S: Switcher>(
        &mut self,
        clock: &mut C,
        sw: &mut S,
        stop: &AtomicBool,
    ) -> EndReason {
        self.in_run = true;
        let reason = loop {
            if stop.load(Ordering::Relaxed) {
                break EndReason::Stopped;
            }
            let ev = self.planner.next_event();
            if let Some(r) = self.step(clock, sw, ev) {
                break r;
            }
        };
        self.wind_down(clock, sw);
        reason
    }

    /// End the module: verify the stops still due, tell the partitions, kill every process
    /// still running. The end of [`Executive::run`]; also after a startup that ended with
    /// [`StartError::HmShutdown`] or [`StartError::Stopped`].
    pub fn wind_down<C: Clock, S: Switcher>(&mut self, clock: &mut C, sw: &mut S) {
        // Stops still to be verified are verified at their time, as during the run (at most a
        // park bound and its extensions away): enforcing them now would hold, and count as
        // backstops, partitions that simply had not had their park bound yet.
        while let Some(d) = sw.next_deadline() {
            let t = clock.sleep_until(d);
            sw.enforce(t);
        }
        self.shared.module().shutdown.store(1, Ordering::Release);
        for p in 0..self.parts.len() {
            if self.parts[p].status == Status::Running || self.parts[p].kill_pending {
                sw.kill(p);
                self.parts[p].kill_pending = false;
                self.parts[p].status = Status::Idle;
                self.shared.partition(p).pid.store(0, Ordering::Release);
            }
        }
    }

    fn step<C: Clock, S: Switcher>(
        &mut self,
        clock: &mut C,
        sw: &mut S,
        mut ev: Event,
    ) -> Option<EndReason> {
        // At a frame boundary, the schedule requests are read once more when the boundary is
        // near (after the sleep below), and a switch they ask for takes effect at this
        // boundary (`Planner::replan_boundary`).
        let boundary = ev.point == 0 && ev.frame > 0;
        let planned_mono = self.epoch + ev.planned;
        // The lead only helps when the open can be prepared: with the gate.
        let lead = match self.opts.switch {
            SwitchMechanism::Gate => self.opts.switch_lead.as_nanos() as u64,
            SwitchMechanism::Signals => 0,
        };
        let target = match ev.open {
            Some(_) if lead > 0 => planned_mono.saturating_sub(lead),
            _ => planned_mono,
        };
        // Stops to verify before the point (the gate's backstop), each at its own time.
        while let Some(d) = sw.next_deadline() {
            if d >= target {
                break;
            }
            let t = clock.sleep_until(d);
            sw.enforce(t);
        }
        let mut open_at_mono = None;
        let wake_mono = if target < planned_mono {
            // Two-stage: a wake-up `prewarm` before the lead brings the CPU out of a long idle
            // (on a VM: a vCPU the host stopped polling); the short sleep after it ends in a
            // quick wake-up at the lead.
            let warm = self.opts.switch_prewarm.as_nanos() as u64;
            if warm > 0 && target > warm && clock.now() + warm < target {
                clock.sleep_until(target - warm);
            }
            let early = clock.sleep_until(target);
            self.overheads
                .lead_timer
                .saturating_record(early.saturating_sub(target).max(1));
            if boundary {
                ev = self.replan_boundary(sw, ev, early - self.epoch);
            }
            if self.can_switch_early(sw, ev) {
                // The open takes effect at the planned start (or now, if the early timer was
                // later than the lead). The incoming partition's first thread is woken before
                // the outgoing one is asked to park, so it is queued ahead of the parking
                // threads of the same priority.
                if let Some(w) = ev.open {
                    sw.prepare_open(w.partition);
                }
                open_at_mono = Some(early.max(planned_mono));
                early
            } else {
                self.lead_point(clock, sw, ev, lead, planned_mono)
            }
        } else {
            let t = clock.sleep_until(planned_mono);
            if boundary {
                ev = self.replan_boundary(sw, ev, t - self.epoch);
            }
            t
        };
        let wake = wake_mono - self.epoch;
        // TmrO: how late the point's work started; at an early switch, how late the open took
        // effect (0 when the early timer came in time).
        let tmro = open_at_mono
            .unwrap_or(wake_mono)
            .saturating_sub(planned_mono);
        self.overheads.tmro.saturating_record(tmro.max(1));
        if ev.open.is_some() {
            self.overheads.tmro_open.saturating_record(tmro.max(1));
        }
        let sched_id = self.planner.schedule_id(ev.schedule).0;
        let mut r = Record::new(
            RecordKind::Point,
            ev.open.map_or(u32::MAX, |w| w.partition as u32),
        );
        r.window = ev.open.map_or(u32::MAX, |w| w.window);
        r.detail = ev.close.map_or(-1, |w| w.partition as i64);
        r.frame = ev.frame;
        r.schedule = sched_id;
        r.planned_start = ev.planned;
        r.actual_start = wake;
        r.tmro_ns = tmro;
        self.record(sw, r);
        if let Some(end) = self.point_body(sw, ev, wake, sched_id) {
            return Some(end);
        }
        if let Some(w) = ev.open {
            let (wake, open_at) = match open_at_mono {
                Some(at) if self.can_switch_early(sw, ev) => (wake, Some(at - self.epoch)),
                // The point's work changed the partition (a death, a restart request): open it
                // the ordinary way, at the point.
                Some(_) => (clock.spin_until(planned_mono) - self.epoch, None),
                None => (wake, None),
            };
            self.open(sw, w, wake, open_at, ev.frame, sched_id);
        }
        None
    }

    /// Return whether point `ev` can be carried out at its early wake-up
    /// ([`Options::early_switch`]).
    fn can_switch_early<S: Switcher>(&self, sw: &S, ev: Event) -> bool {
        self.opts.early_switch
            && ev.switched_from.is_none()
            && ev.open.is_some_and(|w| {
                self.parts[w.partition].status == Status::Running && sw.can_open_at(w.partition)
            })
    }

    /// The lead of a point that opens a window, without an early switch: prepare the open, arm
    /// the next wake-up (`arm_ahead`), busy-wait for the point; return the time then.
    fn lead_point<C: Clock, S: Switcher>(
        &mut self,
        clock: &mut C,
        sw: &mut S,
        ev: Event,
        lead: u64,
        planned_mono: u64,
    ) -> u64 {
        {
            if let Some(w) = ev.open {
                if self.parts[w.partition].status == Status::Running {
                    sw.prepare_open(w.partition);
                }
            }
            // The next sleep after this point: the next point (minus the lead if it opens),
            // unless a close here or a pending verification comes first (not predicted: those
            // points sleep as before).
            if self.opts.arm_ahead && ev.close.is_none() && sw.next_deadline().is_none() {
                let (next, opens) = self.planner.peek_next();
                let next_mono = self.epoch + next;
                let next_target = if opens {
                    next_mono.saturating_sub(lead)
                } else {
                    next_mono
                };
                if next_target > planned_mono {
                    clock.arm(next_target);
                }
            }
            clock.spin_until(planned_mono)
        }
    }

    /// The work of a point from its wake-up (`wake`, module time) on, up to the open: close,
    /// frame count, deaths, requests, schedule switch.
    fn point_body<S: Switcher>(
        &mut self,
        sw: &mut S,
        ev: Event,
        wake: u64,
        sched_id: u32,
    ) -> Option<EndReason> {
        if let Some(w) = ev.close {
            // A window closed at a frame's first point opened in the frame before (no window
            // spans a frame boundary).
            let opened = if ev.point == 0 {
                ev.frame.saturating_sub(1)
            } else {
                ev.frame
            };
            self.close(sw, w, wake, opened, sched_id);
        }
        if ev.point == 0 {
            if let Some(max) = self.opts.max_frames {
                if ev.frame >= max {
                    return Some(EndReason::Frames);
                }
            }
            self.frames = ev.frame + 1;
            self.shared
                .module()
                .major_frames
                .store(ev.frame + 1, Ordering::Release);
        }
        // Deaths.
        while let Some((p, death)) = sw.poll_death() {
            if self.parts[p].kill_pending {
                // It was to be killed at its next window (restart or IDLE already decided):
                // ending by itself first changes nothing.
                self.parts[p].kill_pending = false;
                continue;
            }
            let d = hm::decide(self.module, p, death.error_code());
            self.hm_event(sw, p, Some(death), d, wake);
            if self.apply_death(sw, p, d, wake) {
                return Some(EndReason::HmShutdown);
            }
        }
        // Requests and mode changes made by the partitions.
        for p in 0..self.parts.len() {
            if self.take_mode_request(sw, p, wake) == Taken::ModuleShutdown {
                return Some(EndReason::HmShutdown);
            }
            self.take_schedule_request(sw, p, wake, ev.frame, sched_id);
            self.note_partition_mode(sw, p, wake);
        }
        if let Some(from) = ev.switched_from {
            // A kill waiting for a window the new schedule does not give: now.
            for q in 0..self.parts.len() {
                if self.parts[q].kill_pending && !self.has_window(ev.schedule, q) {
                    self.parts[q].kill_pending = false;
                    sw.kill(q);
                }
            }
            let ms = self.shared.module();
            ms.current_schedule.store(sched_id, Ordering::Release);
            ms.last_schedule_switch_ns
                .store(ev.planned, Ordering::Release);
            self.set_period(ev.schedule);
            let mut r = Record::new(RecordKind::ScheduleSwitch, u32::MAX);
            r.window = sched_id;
            r.detail = self.planner.schedule_id(from).0 as i64;
            r.actual_start = wake;
            r.frame = ev.frame;
            r.schedule = sched_id;
            self.record(sw, r);
        }
        None
    }

    /// Take partition `p`'s mode request, if any, and carry it out (at `at`, module time).
    ///
    /// The request's origin ([`crate::state::PartitionState::requested_condition`]) gives the
    /// restart's start condition: PARTITION_RESTART for SET_PARTITION_MODE, HM_PARTITION_RESTART
    /// for an action of the partition's HM table (counted as an HM event of the partition, and
    /// logged with the cause `partition HM`), HM_MODULE_RESTART for a module action the
    /// partition's error called for: RESET restarts every partition with it (as a module reset
    /// decided here does), SHUTDOWN ends the run. The word is the partition's: a value out of
    /// range is SET_PARTITION_MODE's, and a module action that no entry of the configuration's
    /// module HM table takes is treated as the partition's own HM action (it cannot have been
    /// decided; the partition gets no more than it could ask for itself).
    fn take_mode_request<S: Switcher>(&mut self, sw: &mut S, p: usize, at: u64) -> Taken {
        let st = self.shared.partition(p);
        // SYNC POINT: the Acquire swap pairs with the partition's Release store of the request,
        // made after the condition's.
        let req = st.requested_mode.swap(NO_REQUEST, Ordering::AcqRel);
        if req == NO_REQUEST {
            return Taken::Nothing;
        }
        let cond = st.requested_condition.swap(NO_REQUEST, Ordering::AcqRel);
        if self.parts[p].status != Status::Running
            || !matches!(req, mode::IDLE | mode::COLD_START | mode::WARM_START)
        {
            return Taken::Nothing;
        }
        let mut cond = match cond {
            start_condition::HM_PARTITION_RESTART | start_condition::HM_MODULE_RESTART => cond,
            _ => start_condition::PARTITION_RESTART,
        };
        if cond == start_condition::HM_MODULE_RESTART {
            let action = match req {
                mode::IDLE => Some(ModuleAction::Shutdown),
                mode::COLD_START => Some(ModuleAction::Reset),
                _ => None,
            };
            if !action.is_some_and(|a| self.module_action_configured(a)) {
                cond = start_condition::HM_PARTITION_RESTART;
            }
        }
        if cond != start_condition::PARTITION_RESTART {
            self.parts[p].stats.hm_events += 1;
        }
        match (cond, req) {
            (start_condition::HM_MODULE_RESTART, mode::IDLE) => {
                self.log(log::LogLine::ShutdownAsked { p: p as u32 });
                Taken::ModuleShutdown
            }
            (start_condition::HM_MODULE_RESTART, _) => {
                for q in 0..self.parts.len() {
                    self.schedule_restart(
                        sw,
                        q,
                        mode::COLD_START,
                        start_condition::HM_MODULE_RESTART,
                        "partition HM: module reset",
                        at,
                    );
                }
                Taken::ModuleReset
            }
            (_, mode::IDLE) => {
                let cause = if cond == start_condition::PARTITION_RESTART {
                    "SET_PARTITION_MODE"
                } else {
                    "partition HM"
                };
                self.make_idle(sw, p, cause, at);
                Taken::Idle
            }
            (_, m) => {
                let cause = if cond == start_condition::PARTITION_RESTART {
                    "SET_PARTITION_MODE"
                } else {
                    "partition HM"
                };
                self.schedule_restart(sw, p, m, cond, cause, at);
                Taken::Restart
            }
        }
    }

    /// Return whether the configuration's module HM table takes `action` for some error that
    /// the system HM table makes module level.
    fn module_action_configured(&self, action: ModuleAction) -> bool {
        self.module.system_hm.iter().any(|e| {
            e.level == ErrorLevel::Module
                && self
                    .module
                    .module_hm
                    .iter()
                    .any(|m| m.error_id == e.error_id && m.action == action)
        })
    }

    /// Record partition `p`'s own transition to NORMAL (from COLD_START or WARM_START), if it
    /// made it since the last look. The only change of `operating_mode` a partition makes:
    /// any other value it writes there is not taken (the executive's view of its mode,
    /// [`Executive::partition_mode`], stays what the executive made it).
    fn note_partition_mode<S: Switcher>(&mut self, sw: &mut S, p: usize, at: u64) {
        let m = self
            .shared
            .partition(p)
            .operating_mode
            .load(Ordering::Acquire);
        if m == mode::NORMAL
            && self.parts[p].status == Status::Running
            && matches!(self.parts[p].seen_mode, mode::COLD_START | mode::WARM_START)
        {
            self.mode_record(sw, p, m, "partition", at);
        }
    }

    /// Take partition `p`'s SET_MODULE_SCHEDULE request, if any (a system partition's only).
    fn take_schedule_request<S: Switcher>(
        &mut self,
        sw: &mut S,
        p: usize,
        wake: u64,
        frame: u64,
        sched_id: u32,
    ) {
        let st = self.shared.partition(p);
        let sreq = st.requested_schedule.load(Ordering::Acquire);
        if sreq == NO_REQUEST {
            return;
        }
        if self.module.partitions[p].system_partition {
            if let Some(idx) = self.planner.request_schedule(ScheduleId(sreq)) {
                self.shared
                    .module()
                    .next_schedule
                    .store(self.planner.schedule_id(idx).0, Ordering::Release);
                let mut r = Record::new(RecordKind::ScheduleRequest, p as u32);
                r.window = sreq;
                r.actual_start = wake;
                r.frame = frame;
                r.schedule = sched_id;
                self.record(sw, r);
            }
        }
        // Cleared after `next_schedule` is stored: a partition that finds its request gone
        // finds the schedule it asked for in GET_MODULE_SCHEDULE_STATUS. A request made
        // meanwhile stays for the next look.
        let _ = st.requested_schedule.compare_exchange(
            sreq,
            NO_REQUEST,
            Ordering::AcqRel,
            Ordering::Relaxed,
        );
    }

    /// At a frame boundary, when it is near (`wake`, module time): take the schedule requests
    /// made since the boundary's schedule was chosen, and switch at this boundary if they ask
    /// for another schedule (see [`Planner::replan_boundary`]).
    fn replan_boundary<S: Switcher>(&mut self, sw: &mut S, ev: Event, wake: u64) -> Event {
        let sched_id = self.planner.schedule_id(ev.schedule).0;
        for p in 0..self.parts.len() {
            self.take_schedule_request(sw, p, wake, ev.frame, sched_id);
        }
        self.planner.replan_boundary(ev)
    }

    fn close<S: Switcher>(
        &mut self,
        sw: &mut S,
        w: PlannedWindow,
        wake: u64,
        frame: u64,
        sched: u32,
    ) {
        let p = w.partition;
        if !self.parts[p].opened {
            return;
        }
        self.parts[p].opened = false;
        let st = self.shared.partition(p);
        // Looked at before the park signal goes out (a signalled thread is runnable too), and
        // only in a window without a resume so far (the look reads /proc).
        let starved = self.parts[p].status == Status::Running
            && st.resumed_seq.load(Ordering::Acquire) == self.parts[p].seq_at_open
            && sw.woken_but_not_run(p);
        if self.parts[p].status == Status::Running {
            if wake > w.end + self.opts.park_bound.as_nanos() as u64 {
                // The partition already ran past its window by more than a stop's grace.
                sw.stop_overdue(p);
            } else {
                sw.stop(p);
            }
        }
        st.window_active.store(0, Ordering::Release);
        let open_wake = self.parts[p].open_wake;
        let seq = st.resumed_seq.load(Ordering::Acquire);
        let ptswo = if seq != self.parts[p].seq_at_open {
            st.resumed_at_ns
                .load(Ordering::Acquire)
                .checked_sub(self.epoch + open_wake)
                .unwrap_or(u64::MAX)
        } else {
            u64::MAX
        };
        let thr = self.opts.late_threshold.as_nanos() as u64;
        let s = &mut self.parts[p].stats;
        let starved = starved && ptswo == u64::MAX;
        if starved {
            s.starved += 1;
        }
        if ptswo != u64::MAX {
            self.overheads.ptswo.saturating_record(ptswo.max(1));
            if open_wake + ptswo > w.start + thr {
                s.late += 1;
            }
        } else if open_wake > w.start + thr {
            s.late += 1;
        }
        if wake > w.end + thr {
            s.overruns += 1;
        }
        // CtswO samples from the partition's process slots (one per job started since the last
        // look; the runtime keeps only the last value, so a window with several jobs of one
        // process contributes its last one).
        let n = (st.n_processes.load(Ordering::Acquire) as usize).min(MAX_PROCESSES);
        // The partition's completions, sorted, for the switch-only CtswO of the new jobs.
        let mut done = [0u64; MAX_PROCESSES];
        for (d, slot) in done.iter_mut().zip(&st.processes[..n]) {
            *d = slot.last_completion_ns.load(Ordering::Acquire);
        }
        done[..n].sort_unstable();
        for (i, slot) in st.processes[..n].iter().enumerate() {
            let rel = slot.releases.load(Ordering::Acquire);
            let seen = &mut self.slot_seen[p * MAX_PROCESSES + i];
            if rel != *seen {
                *seen = rel;
                let c = slot.last_ctsw_ns.load(Ordering::Acquire);
                self.overheads.ctswo.saturating_record(c.max(1));
                let start = slot.last_start_ns.load(Ordering::Acquire);
                let sw = switch_ctsw(start, c, &done[..n]);
                self.overheads.ctswo_switch.saturating_record(sw.max(1));
            }
        }
        let mut r = Record::new(RecordKind::Window, p as u32);
        r.window = w.window;
        r.frame = frame;
        r.schedule = sched;
        r.planned_start = w.start;
        r.planned_end = w.end;
        r.actual_start = open_wake;
        r.actual_end = wake;
        r.ptswo_ns = ptswo;
        if starved {
            r.text = STARVED;
        }
        self.record(sw, r);
    }

    /// Record window `w` as skipped (`why`: empty for an IDLE partition).
    fn record_skip<S: Switcher>(
        &mut self,
        sw: &mut S,
        w: &PlannedWindow,
        frame: u64,
        sched: u32,
        why: &'static str,
    ) {
        let mut r = Record::new(RecordKind::Skipped, w.partition as u32);
        r.text = why;
        r.window = w.window;
        r.frame = frame;
        r.schedule = sched;
        r.planned_start = w.start;
        r.planned_end = w.end;
        self.record(sw, r);
    }

    /// Open window `w` at `wake` (module time), or, for an early switch, let the partition
    /// resume at `open_at` (module time; it is Running, so nothing is respawned).
    fn open<S: Switcher>(
        &mut self,
        sw: &mut S,
        w: PlannedWindow,
        wake: u64,
        open_at: Option<u64>,
        frame: u64,
        sched: u32,
    ) {
        let p = w.partition;
        if self.parts[p].kill_pending {
            // Its restart or IDLE was decided while its window was closed: its process ends
            // now, in its own time.
            self.parts[p].kill_pending = false;
            sw.kill(p);
        }
        match self.parts[p].status {
            Status::Idle => {
                self.parts[p].stats.skipped += 1;
                self.record_skip(sw, &w, frame, sched, "");
                return;
            }
            // A short grace first: a process killed at this very point usually ends within it
            // (it may need this CPU to die), and then starts in this window, not a frame later.
            Status::Restart { .. }
                if sw.ending_after(
                    p,
                    w.end
                        .saturating_sub(wake)
                        .saturating_sub(SPAWN_BUDGET_NS)
                        .max(RESTART_GRACE_NS),
                ) =>
            {
                // Its old process has not ended yet: the restart waits, window by window.
                let pr = &mut self.parts[p];
                pr.stats.deferred += 1;
                if pr.stats.deferred == 1 {
                    self.log(log::LogLine::RestartWaits { p: p as u32 });
                }
                self.record_skip(sw, &w, frame, sched, "ENDING");
                return;
            }
            Status::Restart { mode: m, cond } => {
                if let Err(e) = self.respawn(sw, p, m, cond) {
                    self.log(log::LogLine::spawn_failed(p, &e));
                    self.mode_record(sw, p, mode::IDLE, "spawn failed", wake);
                    return;
                }
                // Counted once the new process exists (a respawn that failed is none).
                self.parts[p].stats.restarts += 1;
                let mm = self
                    .shared
                    .partition(p)
                    .operating_mode
                    .load(Ordering::Acquire);
                self.mode_record(sw, p, mm, "restart", wake);
            }
            Status::Running => {}
        }
        let st = self.shared.partition(p);
        let marks = self
            .period_marks
            .get(self.planner.current())
            .and_then(|s| s.get(p))
            .copied()
            .unwrap_or(false);
        st.window_period_start
            .store(u32::from(w.period_start || !marks), Ordering::Relaxed);
        st.window_start_ns.store(w.start, Ordering::Relaxed);
        st.window_end_ns.store(w.end, Ordering::Relaxed);
        st.window_seq.fetch_add(1, Ordering::AcqRel);
        // SYNC POINT: window_active Release pairs with the partition runtime's Acquire load
        // before it reads window_start_ns/window_end_ns.
        st.window_active.store(1, Ordering::Release);
        let pr = &mut self.parts[p];
        if !pr.opened_since_spawn {
            // Only SET_PARTITION_MODE(NORMAL) waits for the word (for the release anchor), once
            // per process; later waiters are interrupted by the stop or park and see it set.
            pr.opened_since_spawn = true;
            futex::wake_all(&st.window_active);
        }
        pr.seq_at_open = st.resumed_seq.load(Ordering::Acquire);
        pr.open_wake = open_at.unwrap_or(wake);
        pr.opened = true;
        pr.stats.windows += 1;
        match open_at {
            Some(at) => sw.cont_at(p, self.epoch + at),
            None => sw.cont(p),
        }
    }
}

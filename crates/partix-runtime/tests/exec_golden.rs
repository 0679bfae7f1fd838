//! Golden schedule: the executive's decision logic on a mock clock, compared line by line with
//! `tests/golden/*.txt`. Set `PARTIX_BLESS=1` to rewrite the expected files after a deliberate
//! change (and review the diff).

mod exec_util;

use exec_util::*;
use partix_config::model::{ErrorCode, Module, PartitionAction};
use partix_runtime::executive::hm::Death;
use partix_runtime::executive::shared::SharedState;
use partix_runtime::executive::summary::render_hm_events;
use partix_runtime::executive::{
    Clock, Executive, HmEvents, Options, PartitionStats, ProcessTotals, Switcher, HM_EVENTS_KEPT,
};
use partix_runtime::state::{mode, NAME_LEN, NO_REQUEST};
use partix_runtime::trace::{Record, RecordKind};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

const EPOCH: u64 = 1_000_000_000;

#[derive(Debug, Clone, Copy)]
enum Act {
    RequestSchedule(usize, u32),
    RequestMode(usize, u32),
    Die(usize, Death),
    /// Partition, slot, name, jobs: as the partition runtime does, create the process in the
    /// slot (the name written before the slot is published) and count jobs started and
    /// completed on top of what the slot holds, with a CtswO of 7 µs each.
    Jobs(usize, usize, &'static str, u64),
    /// From now on, starting the partition's process fails.
    FailSpawns(usize),
    /// The partition writes what it cannot be into its region: the operating mode (here
    /// COLD_START, which only the executive gives) and the restart count.
    Forge(usize, u32, u32),
    /// Partition, slot, name, release delay, start, completion (module ns): one job started and
    /// completed, its stamps stored as the partition runtime does.
    Job(usize, usize, &'static str, u64, u64, u64),
}

struct World<'a> {
    now: u64,
    /// Extra lateness of every wake-up (ns).
    late: u64,
    log: Vec<String>,
    deaths: VecDeque<(usize, Death)>,
    script: VecDeque<(u64, Act)>,
    shared: &'a SharedState,
    names: Vec<String>,
    alive: Vec<bool>,
    /// Partitions that never finish their initialisation.
    stuck: Vec<bool>,
    /// Time the executive armed its next wake-up for ([`Clock::arm`]), not yet slept to.
    armed: Option<u64>,
    /// Arm-ahead bookkeeping of the run.
    arms: ArmStats,
    /// The switcher can open partitions ahead of their windows (`Switcher::can_open_at`).
    early: bool,
    /// Partitions whose processes cannot be started.
    spawn_fails: Vec<bool>,
}

/// How the executive's arm-ahead predictions ([`Clock::arm`]) matched its sleeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ArmStats {
    /// `arm` calls.
    arms: u64,
    /// Sleeps to exactly the armed time.
    hits: u64,
    /// Sleeps to another time while armed.
    misses: u64,
    /// `sleep_until` calls (armed or not).
    sleeps: u64,
}

impl World<'_> {
    fn t(&self) -> String {
        format!("t={:.3}ms", (self.now - EPOCH) as f64 / 1e6)
    }

    fn advance(&mut self, to: u64) {
        while let Some(&(at, act)) = self.script.front() {
            if EPOCH + at > to {
                break;
            }
            self.script.pop_front();
            match act {
                Act::RequestSchedule(p, id) => self
                    .shared
                    .partition(p)
                    .requested_schedule
                    .store(id, Ordering::Release),
                Act::RequestMode(p, m) => self
                    .shared
                    .partition(p)
                    .requested_mode
                    .store(m, Ordering::Release),
                Act::Die(p, d) => {
                    if self.alive[p] {
                        self.alive[p] = false;
                        self.deaths.push_back((p, d));
                    }
                }
                Act::Job(p, i, name, delay, start, done) => {
                    let st = self.shared.partition(p);
                    let slot = &st.processes[i];
                    publish_slot(st, i, name);
                    slot.last_start_ns.store(start, Ordering::Release);
                    slot.last_ctsw_ns.store(delay, Ordering::Release);
                    slot.last_completion_ns.store(done, Ordering::Release);
                    slot.jobs.fetch_add(1, Ordering::AcqRel);
                    slot.releases.fetch_add(1, Ordering::AcqRel);
                }
                Act::Jobs(p, i, name, jobs) => {
                    let st = self.shared.partition(p);
                    let slot = &st.processes[i];
                    if st.n_processes.load(Ordering::Acquire) as usize <= i {
                        let mut bytes = [0u8; NAME_LEN];
                        bytes[..name.len()].copy_from_slice(name.as_bytes());
                        // SAFETY: the slot is not published yet (n_processes ≤ i), and this
                        // test's thread is the only one that touches the region.
                        #[allow(unsafe_code)]
                        unsafe {
                            slot.name.write(&bytes)
                        };
                        st.n_processes.store(i as u32 + 1, Ordering::Release);
                    }
                    slot.jobs.fetch_add(jobs, Ordering::AcqRel);
                    slot.releases.fetch_add(jobs, Ordering::AcqRel);
                    slot.last_ctsw_ns.store(7_000, Ordering::Release);
                    slot.total_ctsw_ns.fetch_add(7_000 * jobs, Ordering::AcqRel);
                }
                Act::FailSpawns(p) => self.spawn_fails[p] = true,
                Act::Forge(p, m, restarts) => {
                    let st = self.shared.partition(p);
                    st.operating_mode.store(m, Ordering::Release);
                    st.restarts.store(restarts, Ordering::Release);
                }
            }
        }
        self.now = self.now.max(to);
    }
}

/// Create process `name` in slot `i` of partition state `st` if it is not published yet (the
/// name written before the slot is published, as the partition runtime does).
fn publish_slot(st: &partix_runtime::state::PartitionState, i: usize, name: &str) {
    if st.n_processes.load(Ordering::Acquire) as usize <= i {
        let mut bytes = [0u8; NAME_LEN];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        // SAFETY: the slot is not published yet (n_processes ≤ i), and this test's thread is
        // the only one that touches the region.
        #[allow(unsafe_code)]
        unsafe {
            st.processes[i].name.write(&bytes)
        };
        st.n_processes.store(i as u32 + 1, Ordering::Release);
    }
}

struct MockClock<'a>(Rc<RefCell<World<'a>>>);
struct MockSwitcher<'a>(Rc<RefCell<World<'a>>>);

impl Clock for MockClock<'_> {
    fn now(&mut self) -> u64 {
        self.0.borrow().now
    }
    fn sleep_until(&mut self, t: u64) -> u64 {
        let mut w = self.0.borrow_mut();
        w.arms.sleeps += 1;
        match w.armed.take() {
            Some(a) if a == t => w.arms.hits += 1,
            Some(_) => w.arms.misses += 1,
            None => {}
        }
        let late = w.late;
        w.advance(t + late);
        w.now
    }
    fn wait_word(&mut self, _word: &AtomicU32, _expected: u32, until: u64) {
        self.0.borrow_mut().advance(until);
    }
    fn spin_until(&mut self, t: u64) -> u64 {
        // As the default (a sleep, with the same lateness) but not a sleep that consumes an arm.
        let mut w = self.0.borrow_mut();
        let late = w.late;
        w.advance(t + late);
        w.now
    }
    fn arm(&mut self, t: u64) {
        let mut w = self.0.borrow_mut();
        assert!(t > w.now, "armed for a time already past: {t} <= {}", w.now);
        w.armed = Some(t);
        w.arms.arms += 1;
    }
}

impl Switcher for MockSwitcher<'_> {
    fn spawn(&mut self, p: usize) -> Result<i32, String> {
        let mut w = self.0.borrow_mut();
        if w.spawn_fails[p] {
            let line = format!("  spawn {} fails", w.names[p]);
            w.log.push(line);
            return Err("no process".into());
        }
        let line = format!("  spawn {}", w.names[p]);
        w.log.push(line);
        w.alive[p] = true;
        Ok(1000 + p as i32)
    }
    fn stop(&mut self, p: usize) {
        let mut w = self.0.borrow_mut();
        let line = format!("  stop {}", w.names[p]);
        w.log.push(line);
    }
    fn can_open_at(&self, p: usize) -> bool {
        // Deaths are only known once the executive polls them (at the point).
        let _ = p;
        self.0.borrow().early
    }
    fn cont_at(&mut self, p: usize, at: u64) {
        {
            let mut w = self.0.borrow_mut();
            let line = format!(
                "  open ahead {} from t={:.3}ms",
                w.names[p],
                (at - EPOCH) as f64 / 1e6
            );
            w.log.push(line);
        }
        self.cont(p);
    }
    fn cont(&mut self, p: usize) {
        let mut w = self.0.borrow_mut();
        let line = format!("  cont {}", w.names[p]);
        w.log.push(line);
        // The simulated partition finishes its initialisation as soon as it runs.
        let st = w.shared.partition(p);
        let m = st.operating_mode.load(Ordering::Acquire);
        if (m == mode::COLD_START || m == mode::WARM_START) && !w.stuck[p] {
            st.operating_mode.store(mode::NORMAL, Ordering::Release);
        }
    }
    fn kill(&mut self, p: usize) {
        let mut w = self.0.borrow_mut();
        let line = format!("  kill {}", w.names[p]);
        w.log.push(line);
        w.alive[p] = false;
    }
    fn poll_death(&mut self) -> Option<(usize, Death)> {
        self.0.borrow_mut().deaths.pop_front()
    }
    fn has_process(&self, p: usize) -> bool {
        self.0.borrow().alive[p]
    }
    fn note(&mut self, r: &Record) {
        let mut w = self.0.borrow_mut();
        let name = |p: u32| {
            w.names
                .get(p as usize)
                .cloned()
                .unwrap_or_else(|| "-".into())
        };
        let ms = |ns: u64| format!("{:.3}", ns as f64 / 1e6);
        let line = match r.kind {
            RecordKind::Point => {
                let mut s = format!("{} frame={} sched={}", w.t(), r.frame, r.schedule);
                if r.detail >= 0 {
                    s += &format!(" close {}", name(r.detail as u32));
                }
                if r.partition != u32::MAX {
                    s += &format!(" open {} win={}", name(r.partition), r.window);
                }
                s
            }
            RecordKind::Window => format!(
                "  window {} win={} frame={} planned=[{},{}] actual=[{},{}]",
                name(r.partition),
                r.window,
                r.frame,
                ms(r.planned_start),
                ms(r.planned_end),
                ms(r.actual_start),
                ms(r.actual_end)
            ),
            RecordKind::Skipped => format!(
                "  skip {} win={} ({})",
                name(r.partition),
                r.window,
                if r.text.is_empty() { "IDLE" } else { r.text }
            ),
            RecordKind::Hm => format!(
                "  HM {} {} -> {} frame={}",
                name(r.partition),
                r.text,
                r.text2,
                r.frame
            ),
            RecordKind::Mode => format!(
                "  mode {} {} ({}) frame={}",
                name(r.partition),
                r.text,
                r.text2,
                r.frame
            ),
            RecordKind::ScheduleSwitch => format!("  schedule {} -> {}", r.detail, r.window),
            RecordKind::ScheduleRequest => {
                format!("  request schedule {} by {}", r.window, name(r.partition))
            }
        };
        w.log.push(line);
    }
}

/// Three partitions; schedule 1 (20 ms: P1, P2, P3) and schedule 2 (10 ms, P1 twice, P2).
fn golden_module() -> Module {
    let mut p1 = partition(1, "P1", None, &[]);
    p1.system_partition = true;
    let mut p2 = partition(2, "P2", None, &[]);
    p2.hm = vec![hm(ErrorCode::MemoryViolation, PartitionAction::ColdStart)];
    let p3 = partition(3, "P3", None, &[]);
    module(
        vec![p1, p2, p3],
        vec![
            schedule(
                1,
                20,
                &[(101, 1, 0.0, 5.0), (102, 2, 5.0, 7.0), (103, 3, 14.0, 6.0)],
            ),
            schedule(
                2,
                10,
                &[(201, 1, 0.0, 2.0), (202, 2, 2.0, 2.0), (203, 1, 6.0, 2.0)],
            ),
        ],
    )
}

fn run_golden(module: &Module, script: Vec<(u64, Act)>, frames: u64, late: u64) -> Vec<String> {
    run_golden_stuck(module, script, frames, late, &[]).unwrap()
}

/// Run the golden scenario; partitions in `stuck` never reach NORMAL. `Err` carries the log when
/// startup fails.
fn run_golden_stuck(
    module: &Module,
    script: Vec<(u64, Act)>,
    frames: u64,
    late: u64,
    stuck: &[usize],
) -> Result<Vec<String>, (String, Vec<String>)> {
    run_golden_arms(module, script, frames, late, stuck, true, false).map(|(log, _)| log)
}

thread_local! {
    /// `Options::switch_prewarm` (µs) of the runs made by this test's thread.
    static PREWARM_US: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// The last run's process counters (`Executive::process_totals`) and CtswO sample count.
    static LAST_PROCESSES: RefCell<(Vec<ProcessTotals>, u64)> = const { RefCell::new((Vec::new(), 0)) };
    /// The last run's release delays (`Overheads::ctswo`) and switch-only CtswO
    /// (`Overheads::ctswo_switch`) samples, ascending (ns, to the histogram's precision).
    static LAST_CTSWO: RefCell<(Vec<u64>, Vec<u64>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// [`run_golden_stuck`], also returning how the arm-ahead predictions matched.
fn run_golden_arms(
    module: &Module,
    script: Vec<(u64, Act)>,
    frames: u64,
    late: u64,
    stuck: &[usize],
    arm_ahead: bool,
    early: bool,
) -> Result<(Vec<String>, ArmStats), (String, Vec<String>)> {
    run_outcome(module, script, frames, late, stuck, arm_ahead, early).map(|o| (o.log, o.arms))
}

/// What a run of the golden scenario left.
struct Outcome {
    /// The log (as in the golden files).
    log: Vec<String>,
    /// How the arm-ahead predictions matched.
    arms: ArmStats,
    /// The executive's HM events.
    hm_events: HmEvents,
    /// The executive's counters, by partition.
    stats: Vec<PartitionStats>,
    /// The partitions' modes at the end, as the executive knows them.
    modes: Vec<u32>,
}

/// Run the golden scenario (see [`run_golden_arms`]) and return all it left.
fn run_outcome(
    module: &Module,
    script: Vec<(u64, Act)>,
    frames: u64,
    late: u64,
    stuck: &[usize],
    arm_ahead: bool,
    early: bool,
) -> Result<Outcome, (String, Vec<String>)> {
    let shared = SharedState::create(module, EPOCH).unwrap();
    let world = Rc::new(RefCell::new(World {
        now: EPOCH,
        late,
        log: Vec::new(),
        deaths: VecDeque::new(),
        script: script.into(),
        shared: &shared,
        names: module.partitions.iter().map(|p| p.name.clone()).collect(),
        alive: vec![false; module.partitions.len()],
        stuck: (0..module.partitions.len())
            .map(|p| stuck.contains(&p))
            .collect(),
        armed: None,
        arms: ArmStats::default(),
        early,
        spawn_fails: vec![false; module.partitions.len()],
    }));
    let opts = Options {
        max_frames: Some(frames),
        start_lead: std::time::Duration::ZERO,
        // Fixed here (not the default) so the golden files do not depend on it.
        switch_lead: std::time::Duration::from_micros(50),
        switch_prewarm: std::time::Duration::from_micros(PREWARM_US.with(|c| c.get())),
        log: false,
        arm_ahead,
        ..Options::default()
    };
    let mut ex = Executive::new(module, &shared, opts).unwrap();
    let mut clock = MockClock(world.clone());
    let mut sw = MockSwitcher(world.clone());
    if let Err(e) = ex.startup(&mut clock, &mut sw) {
        let log = std::mem::take(&mut world.borrow_mut().log);
        return Err((e.to_string(), log));
    }
    world.borrow_mut().log.push("-- cyclic".into());
    ex.run(&mut clock, &mut sw, &AtomicBool::new(false));
    LAST_PROCESSES.with(|l| *l.borrow_mut() = (ex.process_totals(), ex.overheads.ctswo.len()));
    let values = |h: &hdrhistogram::Histogram<u64>| -> Vec<u64> {
        h.iter_recorded()
            .flat_map(|v| {
                std::iter::repeat_n(
                    h.highest_equivalent(v.value_iterated_to()),
                    v.count_at_value() as usize,
                )
            })
            .collect()
    };
    LAST_CTSWO.with(|l| {
        *l.borrow_mut() = (
            values(&ex.overheads.ctswo),
            values(&ex.overheads.ctswo_switch),
        )
    });
    let ms = shared.module();
    let status = format!(
        "-- end: current_schedule={} next_schedule={} last_switch={:.3}ms major_frames={} P1.restarts={} P2.restarts={} P3.mode={}",
        ms.current_schedule.load(Ordering::Relaxed),
        ms.next_schedule.load(Ordering::Relaxed),
        ms.last_schedule_switch_ns.load(Ordering::Relaxed) as f64 / 1e6,
        ms.major_frames.load(Ordering::Relaxed),
        shared.partition(0).restarts.load(Ordering::Relaxed),
        shared.partition(1).restarts.load(Ordering::Relaxed),
        shared.partition(2).operating_mode.load(Ordering::Relaxed),
    );
    assert_eq!(
        shared
            .partition(0)
            .requested_schedule
            .load(Ordering::Relaxed),
        NO_REQUEST
    );
    let mut log = std::mem::take(&mut world.borrow_mut().log);
    log.push(status);
    let arms = world.borrow().arms;
    Ok(Outcome {
        log,
        arms,
        hm_events: ex.hm_events.clone(),
        stats: (0..module.partitions.len())
            .map(|p| ex.partition_stats(p).clone())
            .collect(),
        modes: (0..module.partitions.len())
            .map(|p| ex.partition_mode(p))
            .collect(),
    })
}

fn compare(name: &str, got: &[String]) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let text = got.join("\n") + "\n";
    if std::env::var_os("PARTIX_BLESS").is_some() {
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with PARTIX_BLESS=1 to create it)",
            path.display()
        )
    });
    for (i, (w, g)) in want.lines().zip(got.iter()).enumerate() {
        assert_eq!(w, g, "{}:{}: golden line differs", path.display(), i + 1);
    }
    assert_eq!(
        want.lines().count(),
        got.len(),
        "{}: line count differs\n--- got:\n{text}",
        path.display()
    );
}

#[test]
fn golden_schedule_with_module_schedule_switch_and_hm() {
    let m = golden_module();
    let script = vec![
        // P3 (no HM table) is killed in its window: default IDLE, its later windows are skipped.
        (15_000_000, Act::Die(2, Death::Signaled(libc::SIGKILL))),
        // P1 (system partition) asks for schedule 2 in frame 1: takes effect at frame 2 (40 ms).
        (25_000_000, Act::RequestSchedule(0, 2)),
        // P2 is not a system partition: its request is ignored.
        (26_000_000, Act::RequestSchedule(1, 1)),
        // P2 segfaults: its table says COLD_START, done inside its next window.
        (44_500_000, Act::Die(1, Death::Signaled(libc::SIGSEGV))),
        // P1 asks for WARM_START (SET_PARTITION_MODE), then the module goes back to schedule 1.
        (56_500_000, Act::RequestMode(0, mode::WARM_START)),
        (57_000_000, Act::RequestSchedule(0, 1)),
    ];
    let log = run_golden(&m, script, 6, 0);
    compare("schedule_switch_hm.txt", &log);
}

/// SET_MODULE_SCHEDULE takes effect at the end of the major frame in which it was made, also
/// when the system partition's window ends with the frame: its request, made in that window
/// after the frame's last scheduling point, is read at the boundary before the next frame's
/// schedule is used. (It used to take effect a frame later: at 40 ms, not 20 ms.)
#[test]
fn a_schedule_asked_for_in_the_frames_last_window_starts_at_the_next_frame() {
    let mut m = golden_module();
    // P3's window (14-20 ms) ends with the frame.
    m.partitions[2].system_partition = true;
    for late in [0, 30_000] {
        let log = run_golden(&m, vec![(15_000_000, Act::RequestSchedule(2, 2))], 3, late);
        let end = log.last().unwrap();
        assert!(
            end.contains("current_schedule=2") && end.contains("last_switch=20.000ms"),
            "late {late}: {end}\n{log:#?}"
        );
    }
}

/// A restart or IDLE that a partition asks for in its window ends its process when its next
/// window would open, not at the point that reads the request (the close of its window, which
/// opens the next partition's): the killed process's exit, which runs on the CPU as it dies,
/// is its own window's cost, not the next partition's.
#[test]
fn a_process_to_restart_or_idle_is_killed_when_its_own_window_would_open() {
    let m = golden_module();
    let script = vec![
        // Frame 0: P1 asks for COLD_START in its window (0-5 ms), P3 for IDLE in its (14-20).
        (2_000_000, Act::RequestMode(0, mode::COLD_START)),
        (15_000_000, Act::RequestMode(2, mode::IDLE)),
    ];
    let log = run_golden(&m, script, 3, 0);
    let mut point = String::new();
    let mut kills = Vec::new();
    for l in &log {
        if l.starts_with("t=") {
            point = l.clone();
        } else if let Some(who) = l.strip_prefix("  kill ") {
            kills.push((who.to_string(), point.clone()));
        }
    }
    // The end of the run kills what is still running (P1 and P2); before that, one kill each
    // for P1 and P3, at the points that open their windows of frame 1.
    let before_end: Vec<_> = kills
        .iter()
        .filter(|(_, pt)| !pt.contains("frame=3"))
        .collect();
    assert_eq!(before_end.len(), 2, "{log:#?}");
    for (who, pt) in before_end {
        assert!(
            pt.contains("frame=1") && pt.contains(&format!("open {who} ")),
            "{who} killed at {pt:?}, not when its own window would open: {log:#?}"
        );
    }
    // P1 starts again in that window; P3's window is skipped.
    let at = |needle: &str| log.iter().position(|l| l == needle);
    let k1 = at("  kill P1").unwrap();
    assert_eq!(log[k1 + 1], "  spawn P1", "{log:#?}");
    let k3 = at("  kill P3").unwrap();
    assert!(log[k3 + 1].starts_with("  skip P3"), "{log:#?}");
}

/// The kill waits for the partition's window only where that makes sense: a process that died
/// before its pending kill is not reported to the HM (its restart was decided already); one
/// that died before the decision is (a ModuleReset decided on another partition's death in the
/// same look); and a partition the next schedule gives no window is killed at the switch.
#[test]
fn a_pending_kill_gives_way_to_deaths_and_schedule_switches() {
    use partix_config::model::ModuleAction;
    let has = |log: &[String], line: &str| log.iter().any(|l| l == line);
    let hm_lines = |log: &[String], who: &str| {
        log.iter()
            .filter(|l| l.starts_with(&format!("  HM {who} ")))
            .count()
    };
    // P1 asks for COLD_START in its window (kill pending from 5 ms), then dies at 10 ms: no HM
    // event, and it starts again in its next window.
    let m = golden_module();
    let log = run_golden(
        &m,
        vec![
            (2_000_000, Act::RequestMode(0, mode::COLD_START)),
            (10_000_000, Act::Die(0, Death::Signaled(libc::SIGSEGV))),
        ],
        2,
        0,
    );
    assert_eq!(hm_lines(&log, "P1"), 0, "{log:#?}");
    assert!(has(&log, "  spawn P1"), "{log:#?}");
    // P3 (numeric error: module level, RESET) and P2 die in the same look: the reset restarts
    // every partition, and P2's death is still reported.
    let mut m = golden_module();
    module_level(&mut m, ErrorCode::NumericError, ModuleAction::Reset);
    let log = run_golden(
        &m,
        vec![
            (16_000_000, Act::Die(2, Death::Signaled(libc::SIGFPE))),
            (16_000_000, Act::Die(1, Death::Signaled(libc::SIGSEGV))),
        ],
        2,
        0,
    );
    assert_eq!(hm_lines(&log, "P3"), 1, "{log:#?}");
    assert_eq!(hm_lines(&log, "P2"), 1, "{log:#?}");
    // Schedule 2 gives P3 no window: P3's IDLE, asked for in its last window of schedule 1, is
    // carried out at the switch (40 ms), not never.
    let m = golden_module();
    let log = run_golden(
        &m,
        vec![
            (25_000_000, Act::RequestSchedule(0, 2)),
            (35_000_000, Act::RequestMode(2, mode::IDLE)),
        ],
        4,
        0,
    );
    let mut point = String::new();
    let mut killed_at = None;
    for l in &log {
        if l.starts_with("t=") {
            point = l.clone();
        } else if l == "  kill P3" && killed_at.is_none() {
            killed_at = Some(point.clone());
        }
    }
    let at = killed_at.unwrap_or_else(|| panic!("P3 never killed: {log:#?}"));
    assert!(
        at.starts_with("t=40.000ms frame=2"),
        "P3 killed at {at:?}: {log:#?}"
    );
}

/// A module reset decided on a death during the initialisation restarts every partition, as
/// during the run: not only the one that died (the others went on from their NORMAL_START).
#[test]
fn a_module_reset_during_the_initialisation_restarts_every_partition() {
    use partix_config::model::ModuleAction;
    let mut m = golden_module();
    module_level(&mut m, ErrorCode::NumericError, ModuleAction::Reset);
    // P3 dies of SIGFPE (numeric error: module level, RESET) while P1 and P2 wait in NORMAL.
    let log = run_golden_stuck(
        &m,
        vec![(1_000_000, Act::Die(2, Death::Signaled(libc::SIGFPE)))],
        2,
        0,
        &[2],
    )
    .unwrap();
    let cyclic = log.iter().position(|l| l == "-- cyclic").unwrap();
    for who in ["P1", "P2", "P3"] {
        let spawns = log[..cyclic]
            .iter()
            .filter(|l| *l == &format!("  spawn {who}"))
            .count();
        assert_eq!(spawns, 2, "{who}: {log:#?}");
    }
}

#[test]
fn golden_early_switch_opens_ahead_with_the_planned_start() {
    // The same scenario with a switcher that can open partitions ahead of their windows: every
    // opening point of a running partition is carried out at the early wake-up (50 µs ahead,
    // closes included) with the planned start as the resume time; points with a module-schedule
    // switch, respawns, and partitions that died at the point open the ordinary way.
    let m = golden_module();
    let script = vec![
        (15_000_000, Act::Die(2, Death::Signaled(libc::SIGKILL))),
        (25_000_000, Act::RequestSchedule(0, 2)),
        (26_000_000, Act::RequestSchedule(1, 1)),
        (44_500_000, Act::Die(1, Death::Signaled(libc::SIGSEGV))),
        (56_500_000, Act::RequestMode(0, mode::WARM_START)),
        (57_000_000, Act::RequestSchedule(0, 1)),
        // P1 asks for COLD_START just before the early wake-up of its window at 80 ms: the
        // request is read at that wake-up, so the open falls back to the ordinary one (the
        // respawn, at the point).
        (79_940_000, Act::RequestMode(0, mode::COLD_START)),
    ];
    let (log, _) = run_golden_arms(&m, script, 6, 0, &[], false, true).unwrap();
    compare("early_switch.txt", &log);
    // Late early timers (137 µs > the 50 µs lead): the open takes effect when the executive is
    // there, never before the planned start.
    let (late, _) = run_golden_arms(&m, Vec::new(), 4, 137_000, &[], false, true).unwrap();
    let mut ahead = 0;
    for l in &late {
        if let Some(rest) = l.strip_prefix("  open ahead ") {
            ahead += 1;
            assert!(rest.contains(".087ms"), "{l}");
        }
    }
    assert!(ahead >= 6, "{late:#?}");
}

#[test]
fn prewarm_wakeups_do_not_change_the_schedule() {
    // The extra wake-up before each lead only adds a sleep: the same records, on time and late.
    let m = golden_module();
    for late in [0, 137_000] {
        let (plain, plain_clock) =
            run_golden_arms(&m, Vec::new(), 4, late, &[], false, true).unwrap();
        PREWARM_US.with(|c| c.set(300));
        let (warm, warm_clock) =
            run_golden_arms(&m, Vec::new(), 4, late, &[], false, true).unwrap();
        PREWARM_US.with(|c| c.set(0));
        assert_eq!(plain, warm, "late={late}");
        // The pre-warm wake-ups happened (without them this compared two plain runs; found
        // by review).
        assert!(
            warm_clock.sleeps > plain_clock.sleeps,
            "late={late}: {} sleeps with pre-warm, {} without",
            warm_clock.sleeps,
            plain_clock.sleeps
        );
    }
}

#[test]
fn late_wakeups_do_not_shift_the_plan() {
    let m = golden_module();
    // Every wake-up is 137 µs late; planned times must stay on the 20 ms grid.
    let on_time = run_golden(&m, Vec::new(), 4, 0);
    let late = run_golden(&m, Vec::new(), 4, 137_000);
    let points = |log: &[String]| -> Vec<String> {
        log.iter()
            .filter(|l| l.starts_with("  window"))
            .map(|l| l.split(" actual").next().unwrap().to_string())
            .collect()
    };
    assert_eq!(points(&on_time), points(&late));
    assert!(points(&late).len() >= 12);
    assert!(
        late.iter().any(|l| l.contains("actual=[20.137,25.137]")),
        "{late:#?}"
    );
}

#[test]
fn arm_ahead_predicts_the_next_sleep_and_keeps_the_plan() {
    let m = golden_module();
    // Schedule 1 opens P3 at 14 ms after a gap (no close there): the executive arms its next
    // wake-up (the lead before the next frame's first open) during the lead and then sleeps to
    // exactly that time. Every prediction must match, on time and with late wake-ups, and the
    // schedule must be the same as without arming.
    for late in [0, 137_000] {
        let (log, arms) = run_golden_arms(&m, Vec::new(), 4, late, &[], true, false).unwrap();
        assert!(arms.arms >= 4, "late={late}: {arms:?}");
        assert_eq!(arms.hits, arms.arms, "late={late}: {arms:?}");
        assert_eq!(arms.misses, 0, "late={late}: {arms:?}");
        let (plain, none) = run_golden_arms(&m, Vec::new(), 4, late, &[], false, false).unwrap();
        assert_eq!((none.arms, none.hits, none.misses), (0, 0, 0), "{none:?}");
        assert_eq!(log, plain, "late={late}");
    }
}

#[test]
fn golden_init_timeout_idles_the_partition_by_default() {
    let m = golden_module();
    // P2 never reaches NORMAL: after the init timeout (5 s of mock time) the HM idles it
    // (INIT_TIMEOUT is module level; no table entry → IDLE) and the others are scheduled.
    let log = run_golden_stuck(&m, Vec::new(), 2, 0, &[1]).unwrap();
    compare("init_timeout.txt", &log);
}

#[test]
fn init_timeout_with_module_shutdown_fails_startup() {
    use partix_config::model::{ErrorLevel, ModuleAction, ModuleHmEntry, SystemHmEntry};
    let mut m = golden_module();
    m.system_hm = vec![SystemHmEntry {
        system_state: 1,
        error_id: 6,
        code: ErrorCode::InitTimeout,
        level: ErrorLevel::Module,
    }];
    m.module_hm = vec![ModuleHmEntry {
        system_state: 1,
        error_id: 6,
        action: ModuleAction::Shutdown,
    }];
    let (err, log) = run_golden_stuck(&m, Vec::new(), 2, 0, &[2]).unwrap_err();
    assert!(err.contains("shut the module down"), "{err}");
    assert!(
        log.iter()
            .any(|l| l == "  HM P3 INIT_TIMEOUT -> SHUTDOWN frame=0"),
        "{log:#?}"
    );
}

/// A restarted partition's processes keep their own counters: the executive folds the ended
/// incarnation's slots into its totals by name and zeroes them before the respawn. Before, a
/// slot reused by another process carried the first one's jobs under the new name, the first
/// one's figures vanished from the report, and the first close after the restart counted the
/// old incarnation's last CtswO again.
#[test]
fn a_restarted_partitions_processes_are_counted_by_name_across_incarnations() {
    let m = golden_module();
    let script = vec![
        // P2's first incarnation (window 5-12 ms): A in slot 0, B in slot 1.
        (6_000_000, Act::Jobs(1, 0, "A", 5)),
        (6_000_000, Act::Jobs(1, 1, "B", 1)),
        // It segfaults: COLD_START in its next window (25 ms).
        (8_000_000, Act::Die(1, Death::Signaled(libc::SIGSEGV))),
        // The second incarnation creates only B, in slot 0.
        (27_000_000, Act::Jobs(1, 0, "B", 2)),
    ];
    let log = run_golden(&m, script, 3, 0);
    assert!(
        log.iter().any(|l| l.contains("mode P2 COLD_START (HM)")),
        "{log:#?}"
    );
    let (totals, ctswo) = LAST_PROCESSES.with(|l| l.borrow().clone());
    let of = |name: &str| {
        totals
            .iter()
            .find(|t| t.partition == 1 && t.name == name)
            .unwrap_or_else(|| panic!("no {name}: {totals:#?}"))
    };
    assert_eq!((of("A").jobs, of("A").releases), (5, 5), "{totals:#?}");
    assert_eq!((of("B").jobs, of("B").releases), (3, 3), "{totals:#?}");
    assert_eq!(of("B").total_ctsw_ns, 21_000);
    assert_eq!(totals.len(), 2, "{totals:#?}");
    // One CtswO sample per process per close that saw new jobs: A and B at 12 ms, B at 32 ms.
    assert_eq!(ctswo, 3);
}

/// Jobs released together at a window start run one after the other: the release delay of the
/// k-th (start − max(release, resume)) holds the run time of the k − 1 before it, so it grew
/// with the number of processes and was compared with the paper's CtswO. `ctswo_switch` times
/// each job from the later of its release, the resume and the previous job's completion.
#[test]
fn ctswo_leaves_out_the_run_time_of_the_jobs_before() {
    let m = golden_module();
    // P2's window opens at 5 ms; three jobs released then, 1 ms of work each, 10 µs between
    // one's completion and the next one's first instruction.
    let script = vec![
        (9_000_000, Act::Job(1, 0, "A", 10_000, 5_010_000, 6_010_000)),
        (
            9_000_000,
            Act::Job(1, 1, "B", 1_020_000, 6_020_000, 7_020_000),
        ),
        (
            9_000_000,
            Act::Job(1, 2, "C", 2_030_000, 7_030_000, 8_030_000),
        ),
    ];
    run_golden(&m, script, 1, 0);
    let (delay, switch) = LAST_CTSWO.with(|l| l.borrow().clone());
    let near = |got: &[u64], want: &[u64]| {
        got.len() == want.len()
            && got
                .iter()
                .zip(want)
                .all(|(g, w)| g.abs_diff(*w) <= w / 500 + 1)
    };
    assert!(near(&delay, &[10_000, 1_020_000, 2_030_000]), "{delay:?}");
    assert!(near(&switch, &[10_000, 10_000, 10_000]), "{switch:?}");
}

/// `switch_ctsw` takes the latest completion at or before the start, and only if it is later than
/// the release or the resume.
#[test]
fn switch_ctsw_takes_the_latest_earlier_completion() {
    use partix_runtime::executive::switch_ctsw;
    // First job of the window: no completion after its resume.
    assert_eq!(switch_ctsw(1_010, 10, &[0, 500]), 10);
    // Behind a job that completed at 1_500.
    assert_eq!(switch_ctsw(1_520, 520, &[500, 1_500, 9_000]), 20);
    // Its own completion (after its start) is not counted.
    assert_eq!(switch_ctsw(1_520, 520, &[1_600]), 520);
    // A completion exactly at the start.
    assert_eq!(switch_ctsw(2_000, 1_000, &[2_000]), 0);
    assert_eq!(switch_ctsw(5, 0, &[]), 0);
}

/// A partition whose incarnations keep naming new processes holds at most `MAX_RETIRED`
/// entries; the last, "(other processes)", sums the rest, and other partitions keep theirs.
#[test]
fn process_totals_are_bounded_per_partition() {
    use partix_runtime::executive::{MAX_RETIRED, OTHER_PROCESSES};
    let one = |partition: usize, name: String| ProcessTotals {
        partition,
        name,
        jobs: 1,
        ..ProcessTotals::default()
    };
    let mut list = Vec::new();
    for i in 0..3 * MAX_RETIRED {
        ProcessTotals::merge_into(one(0, format!("p{i}")), &mut list, MAX_RETIRED);
    }
    ProcessTotals::merge_into(one(1, "q".into()), &mut list, MAX_RETIRED);
    ProcessTotals::merge_into(one(0, "p0".into()), &mut list, MAX_RETIRED);
    let of0: Vec<_> = list.iter().filter(|t| t.partition == 0).collect();
    assert_eq!(of0.len(), MAX_RETIRED);
    let other = of0.iter().find(|t| t.name == OTHER_PROCESSES).unwrap();
    assert_eq!(other.jobs, (3 * MAX_RETIRED - (MAX_RETIRED - 1)) as u64);
    assert_eq!(of0.iter().find(|t| t.name == "p0").unwrap().jobs, 2);
    assert_eq!(list.iter().filter(|t| t.partition == 1).count(), 1);
}

/// A partition that crashes in every window (a restart loop) has one HM event per window: the
/// executive keeps the first and the last [`HM_EVENTS_KEPT`] of them, counts every one (per
/// partition and error code), and the summary says how many it left out. Every event used to
/// be kept, and printed: a long crash loop grew them without limit.
#[test]
fn a_crash_loop_keeps_a_bounded_record_of_its_hm_events() {
    let m = golden_module();
    // P2 (MEMORY_VIOLATION → COLD_START) segfaults in each of its windows (5-12 ms), restarted
    // in the next one; P3 is killed once in its first window (PARTITION_CRASH → IDLE, no table
    // entry).
    const FRAMES: u64 = 1000;
    let mut script: Vec<(u64, Act)> = (0..FRAMES - 1)
        .map(|f| {
            (
                f * 20_000_000 + 8_000_000,
                Act::Die(1, Death::Signaled(libc::SIGSEGV)),
            )
        })
        .collect();
    script.insert(1, (15_000_000, Act::Die(2, Death::Signaled(libc::SIGKILL))));
    let o = run_outcome(&m, script, FRAMES, 0, &[], true, false).unwrap();
    let logged = o.log.iter().filter(|l| l.starts_with("  HM ")).count() as u64;
    assert_eq!(logged, FRAMES, "one death per frame of P2, one of P3");
    let ev = &o.hm_events;
    assert_eq!(ev.total(), FRAMES);
    assert_eq!(ev.len(), 2 * HM_EVENTS_KEPT);
    assert_eq!(ev.omitted(), FRAMES - 2 * HM_EVENTS_KEPT as u64);
    assert_eq!(ev.count(1, ErrorCode::MemoryViolation), FRAMES - 1);
    assert_eq!(ev.count(2, ErrorCode::PartitionCrash), 1);
    assert_eq!(ev.counts().count(), 2);
    assert_eq!(o.stats[1].hm_events, FRAMES - 1);
    assert_eq!(o.stats[1].restarts, FRAMES - 1);
    // The first ones (P2's first death, P3's, then P2's of frame 1...) and the last ones, in
    // order: P2's deaths of the last frames, each read at the close of its window (12 ms).
    assert_eq!(ev.head().len(), HM_EVENTS_KEPT);
    assert_eq!(
        (ev[0].partition, ev[1].partition, ev[2].partition),
        (1, 2, 1)
    );
    assert_eq!(
        (ev[0].at_ns, ev[1].at_ns, ev[2].at_ns),
        (12_000_000, 20_000_000, 32_000_000)
    );
    let tail: Vec<_> = ev.tail().collect();
    assert_eq!(tail.len(), HM_EVENTS_KEPT);
    for (i, e) in tail.iter().enumerate() {
        let frame = FRAMES - 1 - HM_EVENTS_KEPT as u64 + i as u64;
        assert_eq!((e.partition, e.at_ns), (1, frame * 20_000_000 + 12_000_000));
    }
    let text = render_hm_events(ev, &["P1", "P2", "P3"]);
    let omitted = FRAMES - 2 * HM_EVENTS_KEPT as u64;
    assert!(
        text.contains(&format!("  … {omitted} more HM events")),
        "{text}"
    );
    assert!(text.lines().count() < 2 * HM_EVENTS_KEPT + 8, "{text}");
    let count_line = |name: &str, code: &str, n: u64| {
        text.lines().any(|l| {
            l.split_whitespace().collect::<Vec<_>>() == [name, code, n.to_string().as_str()]
        })
    };
    assert!(count_line("P2", "MEMORY_VIOLATION", FRAMES - 1), "{text}");
    assert!(count_line("P3", "PARTITION_CRASH", 1), "{text}");
}

/// With few events everything is kept and the summary lists them all, with no count lines.
#[test]
fn few_hm_events_are_all_kept() {
    let m = golden_module();
    let script = vec![(15_000_000, Act::Die(2, Death::Signaled(libc::SIGKILL)))];
    let o = run_outcome(&m, script, 3, 0, &[], true, false).unwrap();
    assert_eq!((o.hm_events.total(), o.hm_events.len()), (1, 1));
    assert_eq!(o.hm_events.omitted(), 0);
    let text = render_hm_events(&o.hm_events, &["P1", "P2", "P3"]);
    assert_eq!(
        text,
        "HM events:\n  t=20.000ms P3 killed by SIGKILL: PARTITION_CRASH level=PARTITION -> IDLE\n"
    );
}

/// The counters of the run summary are the executive's own: a respawn that fails is no restart
/// (it was counted before the spawn), and what a partition writes into its own region — an
/// operating mode it cannot set, a restart count — changes neither its mode as the executive
/// knows it nor its restarts (the summary read both from the region; found by review).
#[test]
fn the_summary_counts_are_the_executives_own() {
    let m = golden_module();
    let script = vec![
        // P2 (MEMORY_VIOLATION → COLD_START) dies in its first window; its respawn fails.
        (6_000_000, Act::FailSpawns(1)),
        (8_000_000, Act::Die(1, Death::Signaled(libc::SIGSEGV))),
        // P3 claims COLD_START and 1000 restarts in its window.
        (15_000_000, Act::Forge(2, mode::COLD_START, 1000)),
    ];
    let o = run_outcome(&m, script, 3, 0, &[], true, false).unwrap();
    assert!(
        o.log.iter().any(|l| l == "  spawn P2 fails"),
        "{:#?}",
        o.log
    );
    assert_eq!(o.stats[1].restarts, 0, "{:?}", o.stats[1]);
    assert_eq!(o.modes[1], mode::IDLE);
    assert_eq!(o.stats[2].restarts, 0, "{:?}", o.stats[2]);
    assert_eq!(o.modes[2], mode::NORMAL);
    assert!(
        !o.log
            .iter()
            .any(|l| l.starts_with("  mode P3 COLD_START (partition)")),
        "{:#?}",
        o.log
    );
}

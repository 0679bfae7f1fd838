//! `partix bench restart`: what a partition restart costs the rest of the schedule.
//!
//! A module of two partitions on one CPU, major frame 20 ms: `RESTART` (window 0–W, W =
//! `--restart-window-us`, 1 ms by default) runs `partix-testpart request --mode cold
//! --after-ms A`, so each of its incarnations asks for a COLD_START `A` ms after it reached
//! NORMAL, and `STEADY` (a 4 ms window right after it) sleeps. The point that closes
//! `RESTART`'s window and opens `STEADY`'s reads the request; the kill waits for `RESTART`'s
//! next window (since session 21), and the point that opens it kills the process, waits for
//! it to end and respawns it. Work there longer than `RESTART`'s own window delays `STEADY`'s
//! opening.
//!
//! Classes, alternated per round (`--rounds`), each for `--seconds`:
//! - **born in cgroup**: the default spawn (`clone3(CLONE_INTO_CGROUP)`; the new process joins
//!   its v1 holds itself);
//! - **fork + move**: `Options::spawn_into_cgroup = false`, the executive forks and writes the
//!   new pid into the cgroup's `cgroup.procs` (and the v1 holds'), as partix did before;
//! - **no restart**: `RESTART` only sleeps, the schedule's own lateness.
//!
//! Measured per class: the time each respawn held the executive (`RunReport::spawns`), and
//! how late `STEADY` resumed (its partition's own resume stamp, as the executive's `late`
//! count takes it: the open's wake-up + PtswO − planned start) in three sets of frames: those
//! where `RESTART` was killed and respawned, those where its request was read, and the other
//! ("quiet") frames of the same runs; every frame for "no restart". Raw baseline in the same run, on the same CPU
//! at the same priority (SCHED_FIFO 99): `fork` of this process, the child stopping itself,
//! the parent's `waitpid(WUNTRACED)` — the floor of a spawn that makes a stopped process.

use crate::report::{self, Recorder};
use clap::Args;
use partix_config::model::*;
use partix_runtime::attach::monotonic_ns;
use partix_runtime::executive::os::{
    pick_cpu, resolve_program, run_module, RtThread, RunConfig, RunReport,
};
use partix_runtime::executive::Options;
use partix_runtime::trace::RecordKind;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Arguments of `partix bench restart`.
#[derive(Args, Debug)]
pub struct RestartArgs {
    /// Seconds of schedule per class and round.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=crate::sched::MAX_SECONDS))]
    pub seconds: u64,
    /// Rounds; the classes alternate within each.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: u32,
    /// Milliseconds each incarnation of `RESTART` runs after reaching NORMAL before it asks for
    /// a COLD_START.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub after_ms: u64,
    /// Length of `RESTART`'s window (µs); its respawn is charged to it.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(100..=10_000))]
    pub restart_window_us: u64,
    /// CPU of the executive and the partitions (default: the last CPU).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Write CDF plots (respawn time; STEADY's lateness) as SVG into this directory.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// The partition program (default: `partix-testpart` beside partix, or in PATH).
    #[arg(long)]
    pub testpart: Option<PathBuf>,
}

const FRAME_MS: u64 = 20;
/// `STEADY`'s window (ms).
const WINDOW_MS: u64 = 4;

/// The classes, in the order they run in each round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The default spawn (`clone3(CLONE_INTO_CGROUP)`).
    BornInCgroup,
    /// `Options::spawn_into_cgroup = false`.
    ForkAndMove,
    /// RESTART only sleeps.
    NoRestart,
}

impl Class {
    /// Every class, in the order of a round.
    pub const ALL: [Class; 3] = [Class::BornInCgroup, Class::ForkAndMove, Class::NoRestart];

    /// The class's name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Class::BornInCgroup => "born in cgroup",
            Class::ForkAndMove => "fork + move",
            Class::NoRestart => "no restart",
        }
    }
}

fn module(class: Class, args: &RestartArgs, exe: PathBuf) -> Module {
    let ms = Duration::from_millis;
    let us = Duration::from_micros;
    let after_ms = args.after_ms;
    let w1 = args.restart_window_us.clamp(100, 10_000);
    let part = |id: u32, name: &str, args: Vec<String>| {
        Partition::program(id, name, Some(exe.clone()), args)
    };
    let restarter = match class {
        Class::NoRestart => vec!["sleep".to_string()],
        _ => ["request", "--mode", "cold", "--after-ms"]
            .iter()
            .map(ToString::to_string)
            .chain([after_ms.to_string()])
            .collect(),
    };
    let win = |id: u32, off: Duration, len: Duration| Window {
        id,
        partition: PartitionId(id),
        offset: off,
        duration: len,
        period_start: true,
    };
    let ps = |id: u32, len: Duration| PartitionSchedule {
        partition: PartitionId(id),
        period: ms(FRAME_MS),
        duration: len,
    };
    Module {
        name: "bench-restart".into(),
        version: None,
        source: None,
        partitions: vec![
            part(1, "RESTART", restarter),
            part(2, "STEADY", vec!["sleep".into()]),
        ],
        schedules: vec![ModuleSchedule {
            id: ScheduleId(1),
            name: None,
            major_frame: ms(FRAME_MS),
            partitions: vec![ps(1, us(w1)), ps(2, ms(WINDOW_MS))],
            windows: vec![
                win(1, Duration::ZERO, us(w1)),
                win(2, us(w1), ms(WINDOW_MS)),
            ],
            location: Location::default(),
        }],
        initial_schedule: 0,
        channels: Vec::new(),
        system_hm: Vec::new(),
        module_hm: Vec::new(),
    }
}

fn run_class(class: Class, args: &RestartArgs, cpu: usize) -> anyhow::Result<RunReport> {
    let exe = args
        .testpart
        .clone()
        .unwrap_or_else(|| PathBuf::from("partix-testpart"));
    let m = module(class, args, exe);
    let programs = (0..m.partitions.len())
        .map(|p| resolve_program(&m, p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            anyhow::anyhow!(
                "{}: build the test partition beside partix with `cargo build --release -p partix-runtime --bins`",
                e.error().message
            )
        })?;
    let frames = args.seconds.max(1) * 1000 / FRAME_MS;
    let cfg = RunConfig {
        programs,
        cpu: Some(cpu),
        options: Options {
            max_frames: Some(frames),
            trace_capacity: (frames as usize + 2) * 16,
            log: false,
            spawn_into_cgroup: class != Class::ForkAndMove,
            ..Options::default()
        },
        rt_unthrottle: false,
    };
    std::thread::spawn(move || {
        static STOP: AtomicBool = AtomicBool::new(false);
        run_module(&m, cfg, &STOP)
    })
    .join()
    .map_err(|_| anyhow::anyhow!("executive thread panicked"))?
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// What one run of a class gave: respawn durations, how late STEADY resumed per kind of
/// frame, and the restarts.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// How long each respawn held the executive (ns).
    pub spawn: Recorder,
    /// How late STEADY resumed in frames where RESTART was respawned (ns).
    pub late_respawn: Recorder,
    /// How late STEADY resumed in frames where RESTART's restart request was read (ns; the kill
    /// itself is made in the respawn frame).
    pub late_request: Recorder,
    /// How late STEADY resumed in the other frames (ns; every frame for "no restart").
    pub late_quiet: Recorder,
    /// Restarts of RESTART.
    pub restarts: u64,
}

/// What [`measure`] gave.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    /// The raw `fork` + stop baseline (ns).
    pub base: Recorder,
    /// Every run, in order.
    pub samples: Vec<(Class, Sample)>,
}

impl Measured {
    /// The runs of `class` merged.
    pub fn merged(&self, class: Class) -> Sample {
        let mut m = Sample::default();
        for (_, s) in self.samples.iter().filter(|(c, _)| *c == class) {
            m.spawn.merge(&s.spawn);
            m.late_respawn.merge(&s.late_respawn);
            m.late_request.merge(&s.late_request);
            m.late_quiet.merge(&s.late_quiet);
            m.restarts += s.restarts;
        }
        m
    }
}

fn sample_of(r: &RunReport, restart_window_ns: u64) -> Sample {
    // The restarts' spawns (the startup's, one per partition, are apart).
    let mut spawn = Recorder::new();
    spawn.add_histogram(&r.spawns.respawn_ns);
    let records = r.trace.records();
    // Module times of RESTART's respawns (the point that opened its window, where its process
    // was also killed) and of the points that read its request (the ones that open STEADY's
    // window).
    let at = |cause: &str| -> Vec<u64> {
        records
            .iter()
            .filter(|x| x.kind == RecordKind::Mode && x.partition == 0 && x.text2 == cause)
            .map(|x| x.actual_start)
            .collect()
    };
    let (respawns, requests) = (at("restart"), at("SET_PARTITION_MODE"));
    let mut s = Sample {
        spawn,
        restarts: r.partitions[0].stats.restarts,
        ..Sample::default()
    };
    for x in records
        .iter()
        .filter(|x| x.kind == RecordKind::Window && x.partition == 1)
    {
        // Resumed: the open's wake-up plus the partition's own resume stamp (PtswO), where the
        // partition stamped one.
        let resumed = match x.ptswo_ns {
            u64::MAX => x.actual_start,
            d => x.actual_start + d,
        };
        let late = resumed.saturating_sub(x.planned_start);
        // The kill and respawn came at this frame's start (RESTART's window, up to 1 ms ahead
        // for the executive's early wake-up); the request was read at STEADY's own opening
        // point.
        let frame_start = x.planned_start.saturating_sub(restart_window_ns);
        let near = |t: u64, p: u64| t + 1_000_000 >= p && t <= p + 1_000_000;
        if respawns
            .iter()
            .any(|&t| t + 1_000_000 >= frame_start && t < x.planned_start)
        {
            s.late_respawn.record(late);
        } else if requests.iter().any(|&t| near(t, x.planned_start)) {
            s.late_request.record(late);
        } else {
            s.late_quiet.record(late);
        }
    }
    s
}

/// Baseline: `fork`, the child stops itself, `waitpid(WUNTRACED)`, on `cpu` at SCHED_FIFO 99;
/// the child is then killed and reaped outside the timing.
fn fork_baseline(cpu: usize, samples: u32) -> Recorder {
    std::thread::spawn(move || {
        let _rt = RtThread::enter(cpu);
        let mut r = Recorder::new();
        for _ in 0..samples {
            let t0 = monotonic_ns();
            // SAFETY: the child only raises SIGSTOP and exits (async-signal-safe).
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // SAFETY: raise and _exit are async-signal-safe.
                unsafe {
                    libc::raise(libc::SIGSTOP);
                    libc::_exit(0);
                }
            }
            if pid < 0 {
                break;
            }
            let mut st = 0;
            // SAFETY: pid is our child; st a valid out-pointer.
            unsafe { libc::waitpid(pid, &mut st, libc::WUNTRACED) };
            r.record(monotonic_ns() - t0);
            // SAFETY: as above.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut st, 0);
            }
        }
        r
    })
    .join()
    .unwrap_or_default()
}

/// Run every class `--rounds` times (alternated) and the raw baseline; progress on stderr.
///
/// # Errors
/// A partition program cannot be found, or a run fails.
pub fn measure(args: &RestartArgs) -> anyhow::Result<Measured> {
    let cpu = pick_cpu(args.cpu).map_err(anyhow::Error::msg)?;
    let mut m = Measured::default();
    let runs = args.rounds.max(1) as usize * Class::ALL.len();
    for round in 0..args.rounds.max(1) {
        for class in Class::ALL {
            eprintln!(
                "round {}/{}: {} ({}/{runs})",
                round + 1,
                args.rounds.max(1),
                class.name(),
                m.samples.len() + 1
            );
            let r = run_class(class, args, cpu)?;
            m.samples
                .push((class, sample_of(&r, args.restart_window_us * 1000)));
        }
        m.base.merge(&fork_baseline(cpu, 200));
    }
    Ok(m)
}

impl Measured {
    /// The restart classes that made no restart: their respawn rows are empty and their ratios
    /// 0 or NaN, which the bench reported with a success exit (found by review).
    pub fn classes_without_restarts(&self) -> Vec<Class> {
        [Class::BornInCgroup, Class::ForkAndMove]
            .into_iter()
            .filter(|&c| self.samples.iter().any(|(k, _)| *k == c) && self.merged(c).restarts == 0)
            .collect()
    }
}

/// Run the benchmark.
pub fn run(args: RestartArgs) -> anyhow::Result<ExitCode> {
    let cpu = pick_cpu(args.cpu).map_err(anyhow::Error::msg)?;
    let w1 = args.restart_window_us.clamp(100, 10_000);
    println!("# partix bench restart — what a partition's restart costs the next window");
    println!("{}", report::machine_line());
    println!(
        "module: RESTART (window 0-{w1} µs, COLD_START {} ms after each NORMAL) and STEADY \
         (the next {WINDOW_MS} ms), {FRAME_MS} ms frame, CPU {cpu}; {} s per class, {} rounds",
        args.after_ms, args.seconds, args.rounds
    );
    let m = measure(&args)?;
    let empty = m.classes_without_restarts();
    let (born, fork) = (m.merged(Class::BornInCgroup), m.merged(Class::ForkAndMove));
    let calm = m.merged(Class::NoRestart).late_quiet;
    println!();
    report::print_header();
    let raw = m.base.summary("raw fork + stop (baseline)");
    raw.print_row();
    let spawn_rows = [
        born.spawn.summary("respawn, born in cgroup"),
        fork.spawn.summary("respawn, fork + move"),
    ];
    for r in &spawn_rows {
        r.print_row();
    }
    let calm_row = calm.summary("STEADY late, no restart");
    calm_row.print_row();
    let mut late_rows = Vec::new();
    for (c, name) in [(&born, "born in cgroup"), (&fork, "fork + move")] {
        for (rec, when) in [
            (&c.late_quiet, "quiet"),
            (&c.late_request, "request"),
            (&c.late_respawn, "kill + respawn"),
        ] {
            let r = rec.summary(&format!("STEADY late, {name}, {when}"));
            r.print_row();
            late_rows.push(r);
        }
    }
    println!();
    for (r, c) in spawn_rows.iter().zip([&born, &fork]) {
        println!("{} ({} restarts)", r.ratio_to(&raw), c.restarts);
    }
    let us = |ns: u64, base: u64| (ns as f64 - base as f64) / 1000.0;
    for pair in late_rows.chunks(3) {
        let quiet = &pair[0];
        for r in &pair[1..] {
            println!(
                "{}: p50 {:+.1} µs, p99 {:+.1} µs over its quiet frames",
                r.name,
                us(r.p50, quiet.p50),
                us(r.p99, quiet.p99)
            );
        }
    }
    for class in [Class::BornInCgroup, Class::ForkAndMove] {
        let per_round: Vec<String> = m
            .samples
            .iter()
            .filter(|(c, _)| *c == class)
            .map(|(_, s)| format!("{:.2}", s.spawn.summary("").p50 as f64 / 1e6))
            .collect();
        println!(
            "respawn p50 per round, {}: {} ms",
            class.name(),
            per_round.join(" / ")
        );
    }
    if !empty.is_empty() {
        let names: Vec<&str> = empty.iter().map(|c| c.name()).collect();
        anyhow::bail!(
            "no restart happened in class(es) {}: their rows measure nothing (does RESTART's \
             partition program `{}` ask for COLD_START within --seconds {} after --after-ms {}?)",
            names.join(", "),
            args.testpart
                .as_deref()
                .unwrap_or(std::path::Path::new("partix-testpart"))
                .display(),
            args.seconds,
            args.after_ms
        );
    }
    if let Some(dir) = &args.plot {
        let path = dir.join("restart_respawn_cdf.svg");
        report::plot_cdf(
            &path,
            "partix respawn time at a scheduling point (CDF)",
            "respawn (µs)",
            &[
                ("raw fork + stop", &m.base),
                ("born in cgroup", &born.spawn),
                ("fork + move", &fork.spawn),
            ],
            1.0,
        )?;
        println!("plot: {}", path.display());
        let path = dir.join("restart_steady_late_cdf.svg");
        report::plot_cdf(
            &path,
            "STEADY resuming late in frames with RESTART's respawn (CDF)",
            "late (µs)",
            &[
                ("no restart", &calm),
                ("born in cgroup", &born.late_respawn),
                ("fork + move", &fork.late_respawn),
            ],
            1.0,
        )?;
        println!("plot: {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A restart class whose runs made no restart is reported (the bench then fails); one
    /// restart in any round is enough, and "no restart" needs none.
    #[test]
    fn a_restart_class_without_restarts_is_found() {
        let run = |class, restarts| {
            (
                class,
                Sample {
                    restarts,
                    ..Sample::default()
                },
            )
        };
        let mut m = Measured {
            samples: vec![
                run(Class::BornInCgroup, 0),
                run(Class::ForkAndMove, 0),
                run(Class::NoRestart, 0),
                run(Class::BornInCgroup, 3),
                run(Class::ForkAndMove, 0),
                run(Class::NoRestart, 0),
            ],
            ..Measured::default()
        };
        assert_eq!(m.classes_without_restarts(), vec![Class::ForkAndMove]);
        m.samples.push(run(Class::ForkAndMove, 1));
        assert!(m.classes_without_restarts().is_empty());
    }
}

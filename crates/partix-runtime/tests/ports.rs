//! Sampling and queuing ports across real partition processes: the modules of `tests/ports/*.xml`
//! run by the real executive ([`run_module`]) with the `ports-testpart` programs, which append
//! `PASS`/`FAIL`/`END` lines to a file per partition.

use partix_config::model::Module;
use partix_runtime::executive::os::{run_module, Program, RunConfig};
use partix_runtime::executive::Options;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The CPU of the executive and the partitions: `PARTIX_TEST_CPU`, else the first CPU allowed
/// (other runs on this machine tend to use the last one, the executive's default).
fn test_cpu() -> usize {
    std::env::var("PARTIX_TEST_CPU")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| partix_runtime::executive::os::allowed_cpus()[0])
}

/// One module at a time: every executive runs SCHED_FIFO 99 on the same CPU.
static SERIAL: Mutex<()> = Mutex::new(());

fn load(name: &str) -> Module {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/ports")
        .join(name);
    partix_config::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn testpart() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ports-testpart"))
}

fn out_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("partix-ports-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `module` with `roles[i]` = (role, extra args) for partition `i` until every partition
/// that is expected to finish wrote its `END` line (or `limit` passes); return each partition's
/// output lines.
fn run(
    module: &Module,
    tag: &str,
    roles: &[(&str, &[&str], bool)],
    limit: Duration,
) -> Vec<Vec<String>> {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = out_dir(tag);
    let outs: Vec<PathBuf> = (0..roles.len())
        .map(|i| dir.join(format!("p{i}.out")))
        .collect();
    let programs = roles
        .iter()
        .zip(&outs)
        .map(|((role, extra, _), out)| {
            let mut args = vec![role.to_string(), out.display().to_string()];
            args.extend(extra.iter().map(|s| s.to_string()));
            Program {
                path: testpart(),
                args,
            }
        })
        .collect();
    let cfg = RunConfig {
        programs,
        cpu: Some(test_cpu()),
        options: Options {
            max_frames: Some(100_000),
            ..Options::default()
        },
        rt_unthrottle: false,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        let waits: Vec<(PathBuf, bool)> = outs
            .iter()
            .cloned()
            .zip(roles.iter().map(|r| r.2))
            .collect();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while t0.elapsed() < limit && !stop.load(Ordering::Relaxed) {
                let done = waits.iter().all(|(p, wait)| {
                    !wait
                        || std::fs::read_to_string(p)
                            .map(|s| s.lines().any(|l| l.starts_with("END")))
                            .unwrap_or(false)
                });
                if done {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Ordering::Relaxed);
        })
    };
    let m = module.clone();
    let stop2 = stop.clone();
    let report = std::thread::spawn(move || run_module(&m, cfg, &stop2))
        .join()
        .expect("executive thread");
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    report.unwrap_or_else(|e| panic!("run_module: {e}"));
    let lines = outs
        .iter()
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect()
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    lines
}

/// Assert that `lines` contain `END` and no `FAIL`; return the `PASS` count.
fn all_pass(who: &str, lines: &[String]) -> usize {
    let fails: Vec<&String> = lines.iter().filter(|l| l.starts_with("FAIL")).collect();
    assert!(fails.is_empty(), "{who}: {fails:#?}\nall: {lines:#?}");
    assert!(
        lines.iter().any(|l| l.starts_with("END")),
        "{who} did not finish: {lines:#?}"
    );
    lines.iter().filter(|l| l.starts_with("PASS")).count()
}

#[test]
fn every_port_service_return_code_from_rust() {
    let m = load("codes.xml");
    let out = run(
        &m,
        "codes",
        &[("codes", &[], true), ("idle", &[], false)],
        Duration::from_secs(60),
    );
    let passes = all_pass("CODES", &out[0]);
    // Every check of codes_init and codes_process ran (keep in step with ports-testpart.rs).
    assert_eq!(passes, 58, "{:#?}", out[0]);
}

#[test]
fn sampling_latest_wins_not_consumed_turns_invalid_multicast_read_only() {
    let m = load("sampling.xml");
    let out = run(
        &m,
        "sampling",
        &[
            ("sampling-src", &[], true),
            ("sampling-dst", &[], true),
            ("sampling-dst", &[], true),
        ],
        Duration::from_secs(90),
    );
    all_pass("SRC", &out[0]);
    for (i, who) in [(1, "DST1"), (2, "DST2")] {
        let n = all_pass(who, &out[i]);
        assert_eq!(n, 7, "{who}: {:#?}", out[i]);
    }
}

#[test]
fn queuing_thousands_of_messages_in_order_without_loss_or_duplicates() {
    let m = load("queue.xml");
    let out = run(
        &m,
        "queue",
        &[
            ("queue-src", &["5000"], true),
            ("queue-dst", &["5000"], true),
        ],
        Duration::from_secs(120),
    );
    all_pass("QSRC", &out[0]);
    assert_eq!(all_pass("QDST", &out[1]), 4, "{:#?}", out[1]);
}

#[test]
fn a_source_killed_mid_write_leaves_the_last_good_message() {
    let m = load("kill.xml");
    let out = run(
        &m,
        "kill",
        &[("kill-src", &[], false), ("kill-dst", &[], true)],
        Duration::from_secs(90),
    );
    assert!(
        out[0].iter().any(|l| l.starts_with("END kill-src")),
        "{:#?}",
        out[0]
    );
    assert_eq!(all_pass("KDST", &out[1]), 2, "{:#?}", out[1]);
    let info = out[1].iter().find(|l| l.starts_with("INFO")).cloned();
    assert!(
        info.as_deref()
            .is_some_and(|l| l.ends_with("slot_left_mid_write=Some(true)")),
        "the slot should be left mid-write: {info:?}"
    );
}

fn waiting_order(discipline: &str) -> Vec<String> {
    let m = load("order.xml");
    let out = run(
        &m,
        discipline,
        &[("order-src", &[], true), ("order-dst", &[discipline], true)],
        Duration::from_secs(60),
    );
    all_pass("ORDER_SRC", &out[0]);
    assert_eq!(all_pass("ORDER_DST", &out[1]), 1, "{:#?}", out[1]);
    out[1]
        .iter()
        .filter(|l| l.starts_with("GOT"))
        .cloned()
        .collect()
}

#[test]
fn waiting_receivers_get_messages_in_fifo_or_priority_order() {
    // Priorities 7, 5, 10, 15 start waiting in that order; 7 is then stopped (STOP) while
    // waiting, and its place must not hold up the others.
    assert_eq!(
        waiting_order("fifo"),
        [
            "GOT priority 5 message 0",
            "GOT priority 10 message 1",
            "GOT priority 15 message 2"
        ]
    );
    assert_eq!(
        waiting_order("priority"),
        [
            "GOT priority 5 message 2",
            "GOT priority 10 message 1",
            "GOT priority 15 message 0"
        ]
    );
}

#[test]
fn a_restarted_partition_sees_the_last_message() {
    let m = load("restart.xml");
    let out = run(
        &m,
        "restart",
        &[("sampling-src", &[], true), ("restart-dst", &[], true)],
        Duration::from_secs(60),
    );
    all_pass("SRC", &out[0]);
    assert_eq!(all_pass("DST", &out[1]), 2, "{:#?}", out[1]);
}

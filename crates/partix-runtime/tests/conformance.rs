//! One conformance suite over every channel transport: the module template
//! `tests/ports/conformance.xml.in` is instantiated per transport (`@TRANSPORT@`), run by the
//! real executive with the `xport-testpart` partitions (real processes, real shared memory, real
//! loopback sockets), and the same checks must pass for each: port semantics, multicast to two
//! destinations, validity, full / empty with timeouts 0, finite and infinite, ordering, message
//! sizes 1 B..max, CLEAR_QUEUING_PORT, WAITING while blocked, and a checksummed queuing stress
//! between processes of two partitions.
//!
//! Every transport runs here (no RDMA device is involved), so none is skipped.

use partix_config::model::Module;
use partix_runtime::executive::os::{run_module, Program, RunConfig};
use partix_runtime::executive::Options;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Stress messages per transport.
const STRESS: &str = "3000";

fn test_cpu() -> usize {
    std::env::var("PARTIX_TEST_CPU")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| partix_runtime::executive::os::allowed_cpus()[0])
}

/// One module at a time: every executive runs SCHED_FIFO 99 on the same CPU.
static SERIAL: Mutex<()> = Mutex::new(());

/// Write the template for `transport` into `dir` and load it.
fn module(transport: &str, dir: &Path) -> Module {
    let tpl = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ports/conformance.xml.in");
    let text = std::fs::read_to_string(&tpl)
        .unwrap()
        .replace("@TRANSPORT@", transport);
    let path = dir.join(format!("conformance-{transport}.xml"));
    std::fs::write(&path, text).unwrap();
    partix_config::load(&path).unwrap_or_else(|e| panic!("{transport}: {e}"))
}

/// Run the conformance module over `transport`; return each partition's output lines.
fn run(transport: &str) -> Vec<Vec<String>> {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!(
        "partix-xport-conf-{transport}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let m = module(transport, &dir);
    let roles: [(&str, &[&str]); 3] = [
        ("conf-src", &[STRESS]),
        ("conf-dst1", &[STRESS]),
        ("conf-dst2", &[STRESS]),
    ];
    let outs: Vec<PathBuf> = (0..roles.len())
        .map(|i| dir.join(format!("p{i}.out")))
        .collect();
    let programs = roles
        .iter()
        .zip(&outs)
        .map(|((role, extra), out)| {
            let mut args = vec![role.to_string(), out.display().to_string()];
            args.extend(extra.iter().map(|s| s.to_string()));
            Program {
                path: PathBuf::from(env!("CARGO_BIN_EXE_xport-testpart")),
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
        let outs = outs.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(120) && !stop.load(Ordering::Relaxed) {
                let done = outs.iter().all(|p| {
                    std::fs::read_to_string(p)
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
    let stop2 = stop.clone();
    let report = std::thread::spawn(move || run_module(&m, cfg, &stop2))
        .join()
        .expect("executive thread");
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    report.unwrap_or_else(|e| panic!("{transport}: run_module: {e}"));
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

/// Assert that `lines` contain `END` and no `FAIL`; return the `PASS` lines.
fn passes(who: &str, lines: &[String]) -> Vec<String> {
    let fails: Vec<&String> = lines.iter().filter(|l| l.starts_with("FAIL")).collect();
    assert!(fails.is_empty(), "{who}: {fails:#?}\nall: {lines:#?}");
    assert!(
        lines.iter().any(|l| l.starts_with("END")),
        "{who} did not finish: {lines:#?}"
    );
    lines
        .iter()
        .filter(|l| l.starts_with("PASS"))
        .cloned()
        .collect()
}

/// The one test body, for every transport.
fn conformance(transport: &str) {
    let out = run(transport);
    let src = passes(&format!("{transport} SRC"), &out[0]);
    let dst1 = passes(&format!("{transport} DST1"), &out[1]);
    let dst2 = passes(&format!("{transport} DST2"), &out[2]);
    // Every check ran (keep in step with xport-testpart.rs).
    assert_eq!(src.len(), 12, "{transport} SRC: {src:#?}");
    assert_eq!(dst1.len(), 15, "{transport} DST1: {dst1:#?}");
    assert_eq!(dst2.len(), 4, "{transport} DST2: {dst2:#?}");
    for (who, lines, what) in [
        ("SRC", &src, "a process blocked on a port is WAITING"),
        ("DST1", &dst1, "a process blocked on a port is WAITING"),
        ("DST2", &dst2, "stress: 3000 messages in order"),
        ("DST2", &dst2, "DST2: sampling sizes 1..=64"),
    ] {
        assert!(
            lines.iter().any(|l| l.contains(what)),
            "{transport} {who}: no {what:?} in {lines:#?}"
        );
    }
}

#[test]
fn conformance_one_sided() {
    conformance("one-sided");
}

#[test]
fn conformance_two_sided() {
    conformance("two-sided");
}

#[test]
fn conformance_udp() {
    conformance("udp");
}

#[test]
fn conformance_tcp() {
    conformance("tcp");
}

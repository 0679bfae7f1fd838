//! STOP and SUSPEND of a process blocked in WAIT_SAMPLING_MESSAGE (docs in
//! `src/partition/ports.rs`, "Port locks and STOP / SUSPEND"): the wait holds the port lock,
//! which defers control signals, so the request must end the wait at once rather than when the
//! wait (or its slice) ends. The module template `tests/edges/wait.xml.in`, instantiated per
//! transport, runs two `waitstop-testpart` partitions under the real executive; in WB a process
//! blocks in a 30 s wait on a port whose wait slice is 60 s, in each receive mode, and is STOPped
//! or SUSPENDed: another process must then be able to use the port (bounded wait of 3 s, else
//! `FAIL ... port stuck`), and the waiter, started again or resumed, must get exactly the next
//! message.

use partix_config::model::Module;
use partix_runtime::executive::os::{run_module, Program, RunConfig};
use partix_runtime::executive::Options;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn test_cpu() -> usize {
    std::env::var("PARTIX_TEST_CPU")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| partix_runtime::executive::os::allowed_cpus()[0])
}

/// One module at a time: every executive runs SCHED_FIFO 99 on the same CPU.
static SERIAL: Mutex<()> = Mutex::new(());

fn module(transport: &str, dir: &Path) -> Module {
    let tpl = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/edges/wait.xml.in");
    let text = std::fs::read_to_string(&tpl)
        .unwrap()
        .replace("@TRANSPORT@", transport);
    let path = dir.join(format!("edges-wait-{transport}.xml"));
    std::fs::write(&path, text).unwrap();
    partix_config::load(&path).unwrap_or_else(|e| panic!("{transport}: {e}"))
}

/// Run the module over `transport` until WB wrote `END` (or 120 s pass); return each
/// partition's output lines.
fn run(transport: &str) -> Vec<Vec<String>> {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!(
        "partix-edges-wait-{transport}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let m = module(transport, &dir);
    let roles = ["wait-src", "wait-dst"];
    let outs: Vec<PathBuf> = (0..roles.len())
        .map(|i| dir.join(format!("p{i}.out")))
        .collect();
    let programs = roles
        .iter()
        .zip(&outs)
        .map(|(role, out)| Program {
            path: PathBuf::from(env!("CARGO_BIN_EXE_waitstop-testpart")),
            args: vec![role.to_string(), out.display().to_string()],
        })
        .collect();
    let cfg = RunConfig {
        programs,
        cpu: Some(test_cpu()),
        options: Options {
            max_frames: Some(6_000),
            ..Options::default()
        },
        rt_unthrottle: false,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        let done_file = outs[1].clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(120) && !stop.load(Ordering::Relaxed) {
                let done = std::fs::read_to_string(&done_file)
                    .map(|s| s.lines().any(|l| l.starts_with("END")))
                    .unwrap_or(false);
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

fn stop_and_suspend_inside_sampling_wait(transport: &str) {
    let out = run(transport);
    for (who, lines) in ["WA (writer)", "WB (waiter)"].iter().zip(&out) {
        let fails: Vec<&String> = lines.iter().filter(|l| l.starts_with("FAIL")).collect();
        assert!(
            fails.is_empty(),
            "{transport} {who}: {fails:#?}\nall: {lines:#?}"
        );
        for l in lines.iter().filter(|l| l.starts_with("INFO")) {
            println!("{transport} {who}: {l}");
        }
    }
    let wb = &out[1];
    assert!(
        wb.iter().any(|l| l.starts_with("END")),
        "{transport} WB did not finish: {wb:#?}"
    );
    // Three receive modes, STOP and SUSPEND each (keep in step with waitstop-testpart.rs).
    let passes = wb.iter().filter(|l| l.starts_with("PASS")).count();
    assert_eq!(passes, 6, "{transport} WB: {wb:#?}");
}

#[test]
fn edges_wait_stop_suspend_one_sided() {
    stop_and_suspend_inside_sampling_wait("one-sided");
}

#[test]
fn edges_wait_stop_suspend_two_sided() {
    stop_and_suspend_inside_sampling_wait("two-sided");
}

#[test]
fn edges_wait_stop_suspend_udp() {
    stop_and_suspend_inside_sampling_wait("udp");
}

#[test]
fn edges_wait_stop_suspend_tcp() {
    stop_and_suspend_inside_sampling_wait("tcp");
}

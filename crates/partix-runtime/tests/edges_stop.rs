//! STOP and SUSPEND of a process in the middle of a port operation (docs/ports.md, "Port locks
//! and STOP / SUSPEND"): the module template `tests/edges/stop.xml.in`, instantiated per
//! transport, runs two `edges-testpart` partitions under the real executive. In each, a victim
//! process loops on 16 KiB port operations (so it is mostly copying under a port lock), a
//! stopper process STOPs/STARTs and SUSPENDs/RESUMEs it thousands of times at pseudo-random
//! points, and after each STOP or SUSPEND a third process must be able to use the same ports
//! (bounded wait, else `FAIL port stuck`).

use partix_config::model::Module;
use partix_runtime::executive::os::{run_module, Program, RunConfig};
use partix_runtime::executive::Options;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// STOP + SUSPEND requests per partition (half each).
const ROUNDS: &str = "2000";

fn test_cpu() -> usize {
    std::env::var("PARTIX_TEST_CPU")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| partix_runtime::executive::os::allowed_cpus()[0])
}

/// One module at a time: every executive runs SCHED_FIFO 99 on the same CPU.
static SERIAL: Mutex<()> = Mutex::new(());

fn module(transport: &str, dir: &Path) -> Module {
    let tpl = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/edges/stop.xml.in");
    let text = std::fs::read_to_string(&tpl)
        .unwrap()
        .replace("@TRANSPORT@", transport);
    let path = dir.join(format!("edges-stop-{transport}.xml"));
    std::fs::write(&path, text).unwrap();
    partix_config::load(&path).unwrap_or_else(|e| panic!("{transport}: {e}"))
}

/// Run the module over `transport` until both partitions wrote `END` (or 240 s pass); return
/// each partition's output lines.
fn run(transport: &str) -> Vec<Vec<String>> {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!(
        "partix-edges-stop-{transport}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let m = module(transport, &dir);
    let roles = ["stop-src", "stop-dst"];
    let outs: Vec<PathBuf> = (0..roles.len())
        .map(|i| dir.join(format!("p{i}.out")))
        .collect();
    let programs = roles
        .iter()
        .zip(&outs)
        .map(|(role, out)| Program {
            path: PathBuf::from(env!("CARGO_BIN_EXE_edges-testpart")),
            args: vec![
                role.to_string(),
                out.display().to_string(),
                ROUNDS.to_string(),
            ],
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
            while t0.elapsed() < Duration::from_secs(240) && !stop.load(Ordering::Relaxed) {
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

fn stop_and_suspend_inside_port_operations(transport: &str) {
    let out = run(transport);
    for (who, lines) in ["EA (source)", "EB (destination)"].iter().zip(&out) {
        let fails: Vec<&String> = lines.iter().filter(|l| l.starts_with("FAIL")).collect();
        assert!(
            fails.is_empty(),
            "{transport} {who}: {fails:#?}\nall: {lines:#?}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with("END")),
            "{transport} {who} did not finish: {lines:#?}"
        );
        for l in lines.iter().filter(|l| l.starts_with("INFO")) {
            println!("{transport} {who}: {l}");
        }
        let passes = lines.iter().filter(|l| l.starts_with("PASS")).count();
        assert_eq!(passes, 3, "{transport} {who}: {lines:#?}");
    }
}

#[test]
fn edges_stop_suspend_one_sided() {
    stop_and_suspend_inside_port_operations("one-sided");
}

#[test]
fn edges_stop_suspend_two_sided() {
    stop_and_suspend_inside_port_operations("two-sided");
}

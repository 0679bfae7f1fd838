//! a653rs partitions on partix: `partix-a653rs-pair` (written against a653rs's abstractions
//! only) and `partix-a653rs-hello` (written with a653rs's `#[partition]` macro) each run as two
//! real partitions under the real executive, once per channel transport, and exchange sampling
//! and queuing messages through the module's channels.

use partix_runtime::executive::os::{allowed_cpus, run_module, Program, RunConfig};
use partix_runtime::executive::Options;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One executive at a time (each runs SCHED_FIFO 99 on the same CPU).
static SERIAL: Mutex<()> = Mutex::new(());

/// The module of `examples/a653rs` (its channels get `partix:Transport` here).
fn module_text(transport: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/a653rs/module.xml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let with = text.replace(
        "<Channel ChannelIdentifier=",
        &format!("<Channel partix:Transport=\"{transport}\" ChannelIdentifier="),
    );
    assert_eq!(
        with.matches("partix:Transport").count(),
        2 + text.matches("partix:Transport").count()
    );
    with
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn ended(p: &Path) -> bool {
    lines(p).iter().any(|l| l == "END")
}

/// Run the program `exe` as the pair, both channels on `transport`; return each partition's
/// lines.
fn run_pair(exe: &str, transport: &str) -> [Vec<String>; 2] {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir =
        std::env::temp_dir().join(format!("partix-a653rs-{transport}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let xml = dir.join("module.xml");
    std::fs::write(&xml, module_text(transport)).unwrap();
    let module = partix_config::load(&xml).unwrap_or_else(|e| panic!("{transport}: {e}"));
    let outs: Vec<PathBuf> = ["send", "recv"]
        .iter()
        .map(|r| dir.join(format!("{r}.out")))
        .collect();
    let programs = ["send", "recv"]
        .iter()
        .zip(&outs)
        .map(|(role, out)| Program {
            path: PathBuf::from(exe),
            args: vec![role.to_string(), out.display().to_string()],
        })
        .collect();
    let cfg = RunConfig {
        programs,
        cpu: Some(allowed_cpus()[0]),
        options: Options {
            max_frames: Some(4000),
            ..Options::default()
        },
        rt_unthrottle: false,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (stop, outs) = (stop.clone(), outs.clone());
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(60) && !stop.load(Ordering::Relaxed) {
                if outs.iter().all(|p| ended(p)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Ordering::Relaxed);
        })
    };
    let report = run_module(&module, cfg, &stop);
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    report.unwrap_or_else(|e| panic!("{transport}: run_module: {e}"));
    let got = [lines(&outs[0]), lines(&outs[1])];
    let _ = std::fs::remove_dir_all(&dir);
    got
}

const PAIR: &str = env!("CARGO_BIN_EXE_partix-a653rs-pair");
const HELLO: &str = env!("CARGO_BIN_EXE_partix-a653rs-hello");

/// Run `exe` on `transport` and check that each side wrote `passes` PASS lines, then END, and
/// nothing else.
fn check_pair(exe: &str, transport: &str, passes: [usize; 2]) {
    let [send, recv] = run_pair(exe, transport);
    for (who, l, passes) in [("send", &send, passes[0]), ("recv", &recv, passes[1])] {
        let fails: Vec<&String> = l.iter().filter(|l| !l.starts_with("PASS")).collect();
        assert!(
            l.last().is_some_and(|l| l == "END"),
            "{transport} {who}: no END: {l:?}"
        );
        assert_eq!(
            fails,
            vec!["END"],
            "{transport} {who}: lines other than PASS: {l:?}"
        );
        assert_eq!(l.len() - 1, passes, "{transport} {who}: {l:?}");
    }
}

#[test]
fn an_a653rs_pair_talks_over_one_sided_channels() {
    check_pair(PAIR, "one-sided", [7, 19]);
}

#[test]
fn an_a653rs_pair_talks_over_two_sided_channels() {
    check_pair(PAIR, "two-sided", [7, 19]);
}

#[test]
fn an_a653rs_pair_talks_over_udp_channels() {
    check_pair(PAIR, "udp", [7, 19]);
}

#[test]
fn an_a653rs_pair_talks_over_tcp_channels() {
    check_pair(PAIR, "tcp", [7, 19]);
}

#[test]
fn a_macro_written_a653rs_pair_talks_over_one_sided_channels() {
    check_pair(HELLO, "one-sided", [2, 3]);
}

#[test]
fn a_macro_written_a653rs_pair_talks_over_two_sided_channels() {
    check_pair(HELLO, "two-sided", [2, 3]);
}

#[test]
fn a_macro_written_a653rs_pair_talks_over_udp_channels() {
    check_pair(HELLO, "udp", [2, 3]);
}

#[test]
fn a_macro_written_a653rs_pair_talks_over_tcp_channels() {
    check_pair(HELLO, "tcp", [2, 3]);
}

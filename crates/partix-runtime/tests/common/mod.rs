//! The real-partition harness shared by the port, edge-case and intra-partition tests: load or
//! instantiate a module configuration, run it with the real executive ([`run_module`]) and test
//! partition programs (real processes) that append `PASS`/`FAIL`/`INFO`/`END` lines to a file per
//! partition, watch those files until the partitions are done, and check the lines.

use partix_config::model::Module;
use partix_runtime::executive::os::{run_module, Program, RunConfig, RunError, RunReport};
use partix_runtime::executive::Options;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The CPU of the executive and the partitions: `PARTIX_TEST_CPU`, else the first CPU allowed
/// (other runs on this machine tend to use the last one, the executive's default).
pub fn test_cpu() -> usize {
    std::env::var("PARTIX_TEST_CPU")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| partix_runtime::executive::os::allowed_cpus()[0])
}

/// One module at a time: every executive runs SCHED_FIFO 99 on the same CPU.
static SERIAL: Mutex<()> = Mutex::new(());

/// Hold this while an executive runs (a test that failed while holding it does not poison it).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Load the configuration at `rel` (relative to this crate's directory).
#[allow(dead_code)] // used by the tests of fixed configurations only
pub fn load(rel: &str) -> Module {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    partix_config::load(&path).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `tests/ports/NAME` with its queuing channel `order-q` on `transport` (`partix:Transport`),
/// and its channels `order-s`, `order-b` and `order-c` if it has them, written as
/// `dir/<transport>-<name>` and loaded.
#[allow(dead_code)] // used by the port tests only
pub fn on_transport(name: &str, transport: &str, dir: &Path) -> Module {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/ports")
            .join(name),
    )
    .unwrap();
    // `two-sided-manager`: two-sided with `partix:Delivery="manager"` (only the destination's
    // manager thread moves messages).
    let attrs = match transport {
        "two-sided-manager" => r#"partix:Transport="two-sided" partix:Delivery="manager""#.into(),
        t => format!(r#"partix:Transport="{t}""#),
    };
    let with = text.replace(
        r#"ChannelName="order-q">"#,
        &format!(r#"ChannelName="order-q" {attrs}>"#),
    );
    assert_ne!(with, text, "{name}'s queuing channel not found");
    // More channels under test, if any: a sampling one and a queuing one the other way.
    let with = ["order-s", "order-b", "order-c"].iter().fold(with, |t, c| {
        t.replace(
            &format!(r#"ChannelName="{c}">"#),
            &format!(r#"ChannelName="{c}" {attrs}>"#),
        )
    });
    let path = dir.join(format!("{transport}-{name}"));
    std::fs::write(&path, with).unwrap();
    partix_config::load(&path).unwrap_or_else(|e| panic!("{name} on {transport}: {e}"))
}

/// Instantiate the template `tpl` (relative to this crate's directory) for `transport`
/// (`@TRANSPORT@`) as `dir/<name>-<transport>.xml` and load it.
#[allow(dead_code)] // used by the tests of templates only
pub fn instantiate(tpl: &str, name: &str, transport: &str, dir: &Path) -> Module {
    let tpl = Path::new(env!("CARGO_MANIFEST_DIR")).join(tpl);
    let text = std::fs::read_to_string(&tpl)
        .unwrap()
        .replace("@TRANSPORT@", transport);
    let path = dir.join(format!("{name}-{transport}.xml"));
    std::fs::write(&path, text).unwrap();
    partix_config::load(&path).unwrap_or_else(|e| panic!("{transport}: {e}"))
}

/// A new empty directory `partix-<tag>-<pid>` in the temporary directory.
pub fn out_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("partix-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The lines of the file at `p` (none if it does not exist).
pub fn read_lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Whether the file at `p` has a line for which `end` holds.
pub fn has_line(p: &Path, end: fn(&str) -> bool) -> bool {
    std::fs::read_to_string(p)
        .map(|s| s.lines().any(end))
        .unwrap_or(false)
}

/// Whether `l` is an `END` line of a test partition program.
pub fn is_end(l: &str) -> bool {
    l.starts_with("END")
}

/// Run `module` with `programs` on the test CPU (at most `max_frames` major frames) until `done`
/// holds (polled every 20 ms) or `limit` passes, then stop the executive; return its result.
#[allow(dead_code)] // not used by every test that includes this module
pub fn run_until(
    module: Module,
    programs: Vec<Program>,
    max_frames: u64,
    limit: Duration,
    done: impl Fn() -> bool + Send + 'static,
) -> Result<RunReport, RunError> {
    let options = Options {
        max_frames: Some(max_frames),
        ..Options::default()
    };
    run_until_with(module, programs, options, limit, done)
}

/// [`run_until`] with the executive's `options`.
pub fn run_until_with(
    module: Module,
    programs: Vec<Program>,
    options: Options,
    limit: Duration,
    done: impl Fn() -> bool + Send + 'static,
) -> Result<RunReport, RunError> {
    let cfg = RunConfig {
        programs,
        cpu: Some(test_cpu()),
        options,
        rt_unthrottle: false,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while t0.elapsed() < limit && !stop.load(Ordering::Relaxed) {
                if done() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Ordering::Relaxed);
        })
    };
    let stop2 = stop.clone();
    let report = std::thread::spawn(move || run_module(&module, cfg, &stop2))
        .join()
        .expect("executive thread");
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    report
}

/// Run `module` (one executive at a time) with partition `i` running `exe ROLE OUT [extra..]`
/// for `roles[i]` = (ROLE, extra, wait), OUT being `dir/p<i>.out`, until every partition with
/// `wait` wrote its `END` line (or `limit` passes); return each partition's output lines and
/// remove `dir`. `what` names the run in a failure of the executive.
#[allow(dead_code)] // not used by ports_c (a C program)
pub fn run_roles(
    what: &str,
    module: Module,
    exe: &str,
    dir: &Path,
    roles: &[(&str, &[&str], bool)],
    max_frames: u64,
    limit: Duration,
) -> Vec<Vec<String>> {
    run_roles_report(what, module, exe, dir, roles, max_frames, limit).0
}

/// [`run_roles`], also returning the executive's report.
#[allow(dead_code)] // not used by ports_c (a C program)
pub fn run_roles_report(
    what: &str,
    module: Module,
    exe: &str,
    dir: &Path,
    roles: &[(&str, &[&str], bool)],
    max_frames: u64,
    limit: Duration,
) -> (Vec<Vec<String>>, RunReport) {
    let options = Options {
        max_frames: Some(max_frames),
        ..Options::default()
    };
    run_roles_with(what, module, exe, dir, roles, options, limit)
}

/// [`run_roles_report`] with the executive's `options`.
#[allow(dead_code)] // not used by ports_c (a C program)
pub fn run_roles_with(
    what: &str,
    module: Module,
    exe: &str,
    dir: &Path,
    roles: &[(&str, &[&str], bool)],
    options: Options,
    limit: Duration,
) -> (Vec<Vec<String>>, RunReport) {
    let _g = serial();
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
                path: PathBuf::from(exe),
                args,
            }
        })
        .collect();
    let waits: Vec<PathBuf> = outs
        .iter()
        .zip(roles)
        .filter(|(_, r)| r.2)
        .map(|(p, _)| p.clone())
        .collect();
    let done = move || waits.iter().all(|p| has_line(p, is_end));
    let report = run_until_with(module, programs, options, limit, done)
        .unwrap_or_else(|e| panic!("{what}: run_module: {e}"));
    let lines = outs.iter().map(|p| read_lines(p)).collect();
    let _ = std::fs::remove_dir_all(dir);
    (lines, report)
}

/// Assert that `lines` contain no `FAIL`.
#[allow(dead_code)] // not used by ports_c
pub fn assert_no_fail(who: &str, lines: &[String]) {
    let fails: Vec<&String> = lines.iter().filter(|l| l.starts_with("FAIL")).collect();
    assert!(fails.is_empty(), "{who}: {fails:#?}\nall: {lines:#?}");
}

/// Assert that `lines` contain `END` and no `FAIL`; return the `PASS` lines.
#[allow(dead_code)] // not used by ports_c
pub fn pass_lines(who: &str, lines: &[String]) -> Vec<String> {
    assert_no_fail(who, lines);
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

/// Assert that `lines` contain `END` and no `FAIL`; return the `PASS` count.
#[allow(dead_code)] // not used by every test
pub fn all_pass(who: &str, lines: &[String]) -> usize {
    pass_lines(who, lines).len()
}

/// Print the `INFO` lines of `lines`, prefixed by `who`.
#[allow(dead_code)] // not used by every test
pub fn print_info(who: &str, lines: &[String]) {
    for l in lines.iter().filter(|l| l.starts_with("INFO")) {
        println!("{who}: {l}");
    }
}

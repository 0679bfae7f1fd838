//! `partix run` and `partix demo` end to end: real partition processes (the demo's C partition,
//! compiled by `partix`, and its Rust partition), real windows, a real trace file.
//!
//! These assert behaviour only (both partitions reach NORMAL, their processes complete jobs, the
//! trace holds windows of both partitions); the timing numbers the runs print are not asserted.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One module at a time: the tests of this file run in parallel threads, and two executives
/// (each SCHED_FIFO 99 on the first allowed CPU) would share the CPU their windows assume. A
/// CI run saw `run_the_demo_module_with_a_trace` get 7 VdoStrming jobs in 12 frames while
/// another test ran the demo beside it.
fn one_module_at_a_time() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A test's own temporary directory (`/tmp/partix-cli-run-<pid>-<test>`), removed when the
/// test ends, also when it fails (the guard drops while the panic unwinds): the C build cache
/// and the compiled partitions took about 25 MB per run, and were left behind.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let d = std::env::temp_dir().join(format!("partix-cli-run-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// Return the `partix` binary, with its C partition build cache inside this directory.
    fn partix(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_partix"));
        c.env("XDG_CACHE_HOME", self.0.join("cache"));
        c
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(out: &Output) -> String {
    format!(
        "status: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Return the number of jobs the summary reports for `process`.
fn jobs_of(all: &str, process: &str) -> u64 {
    let line = all
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(process) && l.contains("jobs="))
        .unwrap_or_else(|| panic!("no summary line for {process}:\n{all}"));
    let field = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("jobs="))
        .unwrap();
    field.parse().unwrap()
}

/// Assert that the summary shows both demo partitions in NORMAL mode.
fn assert_both_normal(all: &str) {
    for p in ["OFP", "VSP"] {
        assert!(
            all.lines()
                .any(|l| l.trim_start().starts_with(p) && l.contains("mode=NORMAL")),
            "{p} not NORMAL:\n{all}"
        );
    }
}

#[test]
fn run_the_demo_module_with_a_trace() {
    let _one = one_module_at_a_time();
    let s = Scratch::new("trace");
    let trace = s.path().join("trace.json");
    let out = s
        .partix()
        .arg("run")
        .arg(repo().join("examples/uav/module.xml"))
        .args(["--frames", "24", "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("24 major frames"), "{all}");
    // Both partitions reached NORMAL and their processes ran jobs in their windows.
    assert_both_normal(&all);
    // GnC runs every 20 ms: 4 jobs per 80 ms frame, 96 in 24 frames; far fewer are asked for,
    // so that start-up and a loaded machine's lost windows leave the test a wide margin.
    assert!(jobs_of(&all, "GnC") >= 30, "{all}");
    assert!(jobs_of(&all, "VdoStrming") >= 8, "{all}");
    // The trace is Chrome trace-event JSON with actual windows of both partitions.
    let json = std::fs::read_to_string(&trace).unwrap();
    assert!(json.contains("\"traceEvents\""), "{json}");
    for name in ["\"OFP w1\"", "\"VSP w2\"", "\"TmrO\"", "\"PtswO\""] {
        assert!(json.contains(name), "trace lacks {name}");
    }
}

#[test]
fn demo_runs_for_the_requested_frames() {
    let _one = one_module_at_a_time();
    let s = Scratch::new("demo");
    let out = s
        .partix()
        .args(["demo", "--frames", "12"])
        .output()
        .unwrap();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("12 major frames"), "{all}");
    assert!(jobs_of(&all, "GnC") >= 12, "{all}");
    // The build cache went into the test's directory, and the directory goes with the test.
    let dir = s.path().to_path_buf();
    assert!(dir.join("cache/partix/c").is_dir(), "{all}");
    // The headers went into a directory named by their hash, not a shared `include` (review 27,
    // finding 6).
    let include = format!(
        "cache/partix/include-{:016x}",
        partix_apex::c_headers::digest()
    );
    assert!(
        dir.join(&include).join("arinc653/apex.h").is_file(),
        "{all}"
    );
    assert!(!dir.join("cache/partix/include").exists(), "{all}");
    drop(s);
    assert!(!dir.exists(), "{} left behind", dir.display());
}

/// The README's main job: `partix` with no arguments runs the demo with the same defaults as
/// `partix demo` (it used to take the options' zero values: an init time-out of 0 ms, so the
/// health monitor shut the module down at once).
#[test]
fn partix_without_arguments_runs_the_demo() {
    let _one = one_module_at_a_time();
    let s = Scratch::new("no-args");
    let out = s.partix().output().unwrap();
    let all = text(&out);
    assert!(out.status.success(), "{all}");
    assert!(all.contains("partix demo: module uav"), "{all}");
    assert_both_normal(&all);
    assert!(jobs_of(&all, "GnC") >= 12, "{all}");
}

#[test]
fn run_refuses_a_broken_module_with_its_location() {
    let s = Scratch::new("broken");
    let file = s.path().join("broken.xml");
    std::fs::write(
        &file,
        "<ARINC_653_Module ModuleName=\"x\">\n  <Partition>\n</ARINC_653_Module>\n",
    )
    .unwrap();
    let out = s.partix().arg("run").arg(&file).output().unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert_reported_as_check_does(&out, &file, 1);
}

/// Assert that `out` is what `partix check` prints for `n` configuration errors in `file`, with
/// `partix run` as the command: each error's first line starts with `FILE:LINE:COL: error:` (no
/// `partix: error:` before it: editors' quickfix parsers read the location at the start of the
/// line), a `help:` line follows, and the count ends it. Nothing goes to stdout.
fn assert_reported_as_check_does(out: &Output, file: &Path, n: usize) {
    let all = text(out);
    assert!(out.stdout.is_empty(), "{all}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    let errors: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.contains(": error: "))
        .collect();
    assert_eq!(errors.len(), n, "{all}");
    for e in &errors {
        let rest = e
            .strip_prefix(&format!("{}:", file.display()))
            .unwrap_or_else(|| panic!("not at the start: {e}\n{all}"));
        let mut parts = rest.splitn(3, ':');
        assert!(
            parts.next().is_some_and(|l| l.parse::<u32>().is_ok())
                && parts.next().is_some_and(|c| c.parse::<u32>().is_ok()),
            "no LINE:COL: {e}\n{all}"
        );
    }
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("  help: ")).count(),
        n,
        "{all}"
    );
    assert_eq!(
        lines.last().copied(),
        Some(
            format!(
                "partix run: {n} error{} in {}",
                if n == 1 { "" } else { "s" },
                file.display()
            )
            .as_str()
        ),
        "{all}"
    );
    assert!(!stderr.contains("partix: error:"), "{all}");
}

/// A `--trace` path that cannot be created ends `partix run` at once with an error naming the
/// path, before any partition is built or started. It used to be found only after the whole
/// run (here 250 frames, 20 s), whose exit status (3 after an HM shutdown) it then replaced.
#[test]
fn run_refuses_an_unwritable_trace_path_before_the_partitions_start() {
    let _one = one_module_at_a_time();
    let s = Scratch::new("bad-trace");
    let bad = "/nonexistent/dir/x.json";
    let t0 = Instant::now();
    let out = s
        .partix()
        .arg("run")
        .arg(repo().join("examples/uav/module.xml"))
        .args(["--frames", "250", "--trace", bad])
        .output()
        .unwrap();
    let took = t0.elapsed();
    let all = text(&out);
    assert!(!out.status.success(), "{all}");
    assert_eq!(out.status.code(), Some(1), "{all}");
    // The only output is the error: no summary, no partition's output, no HM event.
    assert!(out.stdout.is_empty(), "{all}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{all}");
    assert!(
        stderr.starts_with(&format!("partix: error: cannot create trace file {bad}: ")),
        "{all}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}\n{all}");
}

/// A module of one partition, the demo's Rust partition (found beside `partix`), in the first
/// half of an 80 ms frame.
const ONE_PARTITION: &str = r#"<ARINC_653_Module xmlns:partix="urn:partix:config:1" ModuleName="one">
  <Partition PartitionIdentifier="1" PartitionName="VSP" EntryPoint="main"
             partix:Executable="uav-vsp" partix:Arguments="--quiet"/>
  <Module_Schedule MajorFrameSeconds="0.08">
    <Partition_Schedule PartitionIdentifier="1" PeriodSeconds="0.08" PeriodDurationSeconds="0.04">
      <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0" WindowDurationSeconds="0.04"/>
    </Partition_Schedule>
  </Module_Schedule>
</ARINC_653_Module>
"#;

const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";

/// Whether process `pid` has a handler for signal `sig` (its `SigCgt` mask).
fn catches(pid: u32, sig: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .is_some_and(|m| m & (1 << (sig - 1)) != 0)
}

/// Puts `sched_rt_runtime_us` back if a run under test left it at -1 (the test then fails on
/// its own assertion; the host must not stay unthrottled because of it).
struct RtRuntimeGuard(String);

impl Drop for RtRuntimeGuard {
    fn drop(&mut self) {
        let now = std::fs::read_to_string(RT_RUNTIME).unwrap_or_default();
        if now.trim() == "-1" && self.0.trim() != "-1" {
            let _ = std::fs::write(RT_RUNTIME, &self.0);
        }
    }
}

/// SIGHUP (the terminal or the ssh session went away) and SIGQUIT (Ctrl-\) end `partix run` as
/// SIGTERM does: exit status 0, the summary, the run "ended: Stopped"; and with
/// `--rt-unthrottle` (as root) `sched_rt_runtime_us` is restored. They used to kill `partix`
/// with their default action, which left RT throttling off for the whole host.
#[test]
fn hangup_and_quit_end_a_run_as_sigterm_does() {
    let _one = one_module_at_a_time();
    let s = Scratch::new("signals");
    let file = s.path().join("one.xml");
    std::fs::write(&file, ONE_PARTITION).unwrap();
    // --rt-unthrottle only where this test may write the setting (root), and never from a
    // host already unthrottled (there would be nothing to see restored).
    let original = std::fs::read_to_string(RT_RUNTIME).unwrap_or_default();
    let writable = std::fs::OpenOptions::new()
        .write(true)
        .open(RT_RUNTIME)
        .is_ok();
    let unthrottle = writable && !original.trim().is_empty() && original.trim() != "-1";
    if !unthrottle {
        eprintln!("note: {RT_RUNTIME} not writable or already -1: --rt-unthrottle not tested");
    }
    let _guard = RtRuntimeGuard(original.clone());
    for name in ["TERM", "HUP", "QUIT"] {
        let mut cmd = s.partix();
        cmd.arg("run").arg(&file);
        if unthrottle {
            cmd.arg("--rt-unthrottle");
        }
        let mut child = cmd
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        // Running: the stop handlers are in place (SIGTERM's always was), and with
        // --rt-unthrottle the setting is -1.
        let t0 = Instant::now();
        loop {
            let rt_off = std::fs::read_to_string(RT_RUNTIME).is_ok_and(|v| v.trim() == "-1");
            if catches(pid, 15) && (!unthrottle || rt_off) {
                break;
            }
            if t0.elapsed() > Duration::from_secs(30) || child.try_wait().unwrap().is_some() {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!("SIG{name}: the run did not start\n{}", text(&out));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // A few frames into the run.
        std::thread::sleep(Duration::from_millis(300));
        let kill = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(pid.to_string())
            .status()
            .unwrap();
        assert!(kill.success(), "kill -{name} {pid}");
        let t0 = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!("SIG{name}: the run did not end\n{}", text(&out));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let all = text(&out);
        assert_eq!(out.status.code(), Some(0), "SIG{name}: {all}");
        assert!(all.contains("ended: Stopped"), "SIG{name}: {all}");
        assert!(
            all.lines()
                .any(|l| l.trim_start().starts_with("VSP") && l.contains("mode=NORMAL")),
            "SIG{name}: {all}"
        );
        if unthrottle {
            let now = std::fs::read_to_string(RT_RUNTIME).unwrap();
            assert_eq!(now, original, "SIG{name}: {RT_RUNTIME} not restored\n{all}");
        }
    }
}

/// What `partix run` finds wrong with a partition's attributes it reports at the attribute (or
/// the `<Partition>`), as `partix check` reports errors, before any partition starts: no
/// `partix:Executable`, a path or a name that finds no program, `partix:Affinity` naming a CPU
/// this process may not use. These used to be one `partix: error:` line without a location.
#[test]
fn run_reports_unusable_partition_attributes_at_their_location() {
    let s = Scratch::new("attributes");
    let exe = r#"partix:Executable="uav-vsp""#;
    for (name, from, to, at) in [
        ("no-exe", exe, "", (2, 3)),
        (
            "no-file",
            exe,
            r#"partix:Executable="bin/uav-vsp""#,
            (3, 33),
        ),
        (
            "no-name",
            exe,
            r#"partix:Executable="partix-no-such-program""#,
            (3, 33),
        ),
        (
            "affinity",
            r#"partix:Arguments="--quiet""#,
            r#"partix:Arguments="--quiet" partix:Affinity="4095""#,
            (3, 86),
        ),
    ] {
        let text = ONE_PARTITION.replace(from, to);
        assert_ne!(text, ONE_PARTITION, "{name}");
        let file = s.path().join(format!("{name}.xml"));
        std::fs::write(&file, &text).unwrap();
        let out = s.partix().arg("run").arg(&file).output().unwrap();
        let all = text_of(name, &out);
        assert_eq!(out.status.code(), Some(1), "{all}");
        assert_reported_as_check_does(&out, &file, 1);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with(&format!("{}:{}:{}: error: ", file.display(), at.0, at.1)),
            "{all}"
        );
    }
}

fn text_of(name: &str, out: &Output) -> String {
    format!("{name}: {}", text(out))
}

/// A C partition that does not compile is reported at its `partix:Executable`, after cc's own
/// messages, and leaves no temporary file in the build cache (`cc` left `<name>-<hash>.tmpPID`
/// there on every failed build).
#[test]
fn run_reports_a_c_partition_that_does_not_build_at_its_attribute() {
    let s = Scratch::new("cc-fails");
    std::fs::write(s.path().join("bad.c"), "int main(void) { return oops; }\n").unwrap();
    let file = s.path().join("bad.xml");
    let xml = ONE_PARTITION.replace(
        r#"partix:Executable="uav-vsp""#,
        r#"partix:Executable="bad.c""#,
    );
    std::fs::write(&file, xml).unwrap();
    let out = s.partix().arg("run").arg(&file).output().unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ours = stderr
        .find(&format!("{}:3:33: error: ", file.display()))
        .unwrap_or_else(|| panic!("no located error\n{all}"));
    assert!(stderr[..ours].contains("oops"), "cc's message first\n{all}");
    assert!(stderr[ours..].contains("cannot build"), "{all}");
    assert!(
        stderr[ours..].contains("help: fix the errors cc printed above"),
        "{all}"
    );
    let cache = s.path().join("cache/partix/c");
    let left: Vec<_> = std::fs::read_dir(&cache)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left in {}: {left:?}", cache.display());
}

/// A `cc` that fails after it wrote (part of) its output file, as one killed while linking
/// does, leaves no `<name>-<hash>.tmpPID` in the build cache: partix removes it (it stayed, one
/// per failed build).
#[test]
fn a_failed_c_build_leaves_no_temporary_file() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("cc-partial");
    let bin = s.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    // A stand-in cc: writes the file after -o, then fails.
    std::fs::write(
        bin.join("cc"),
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do [ \"$1\" = -o ] && echo partial > \"$2\"; shift; done\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(bin.join("cc"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(s.path().join("p.c"), "int main(void) { return 0; }\n").unwrap();
    let file = s.path().join("p.xml");
    std::fs::write(
        &file,
        ONE_PARTITION.replace(
            r#"partix:Executable="uav-vsp""#,
            r#"partix:Executable="p.c""#,
        ),
    )
    .unwrap();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin];
    paths.extend(std::env::split_paths(&path));
    let out = s
        .partix()
        .env("PATH", std::env::join_paths(paths).unwrap())
        .arg("run")
        .arg(&file)
        .output()
        .unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("cc failed"), "{all}");
    let cache = s.path().join("cache/partix/c");
    let left: Vec<_> = std::fs::read_dir(&cache)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "left in {}: {left:?}\n{all}",
        cache.display()
    );
}

/// A run that fails to start leaves the `--trace` file already at the path as it was (it used
/// to be truncated before the partitions were even looked for), and no temporary file beside it.
#[test]
fn a_run_that_fails_to_start_keeps_an_existing_trace() {
    let s = Scratch::new("keep-trace");
    let dir = s.path().join("traces");
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("trace.json");
    std::fs::write(&trace, "the previous run's trace").unwrap();
    let file = s.path().join("no-exe.xml");
    std::fs::write(
        &file,
        ONE_PARTITION.replace(r#"partix:Executable="uav-vsp""#, ""),
    )
    .unwrap();
    let out = s
        .partix()
        .arg("run")
        .arg(&file)
        .arg("--trace")
        .arg(&trace)
        .output()
        .unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert_eq!(
        std::fs::read_to_string(&trace).unwrap(),
        "the previous run's trace",
        "{all}"
    );
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["trace.json"], "{all}");
}

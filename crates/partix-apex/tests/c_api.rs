//! The C API from C: headers, static and shared linking, every service's return codes, the
//! process state machine, and the demo's C partition (`examples/uav/ofp.c`).
//!
//! C programs in `tests/c/` are compiled with `cc` against `include/` and the library cargo built
//! for this test (`target/<profile>/libpartix_apex.{a,so}`), then run as real processes in
//! standalone mode (no executive).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn include_dir() -> PathBuf {
    manifest_dir().join("include")
}

fn c_source(name: &str) -> PathBuf {
    manifest_dir().join("tests/c").join(name)
}

/// A scratch directory for this test process's binaries.
fn out_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("current_exe");
        let dir = exe
            .parent()
            .expect("test executable has a directory")
            .join("apexc-c-tests");
        std::fs::create_dir_all(&dir).expect("create the C test output directory");
        dir
    })
    .clone()
}

/// The directory holding `libpartix_apex.a` / `.so`: the profile directory above `deps/`.
///
/// `cargo test` builds the crate's rlib but not always its staticlib/cdylib, and a library left
/// from an earlier build may be stale; so the first call runs `cargo build -p partix-apex` for
/// the same target directory and profile (a no-op when they are up to date).
fn lib_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("current_exe");
        let deps = exe.parent().expect("test executable has a directory");
        let profile = deps.parent().expect("deps/ has a parent");
        let target_dir = profile.parent().expect("profile dir has a parent");
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.args(["build", "--quiet", "-p", "partix-apex"])
            .env("CARGO_TARGET_DIR", target_dir);
        if profile.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd
            .status()
            .expect("run `cargo build -p partix-apex` to build libpartix_apex.a/.so");
        assert!(
            status.success(),
            "`cargo build -p partix-apex` failed; the C tests need libpartix_apex.a/.so"
        );
        for lib in ["libpartix_apex.a", "libpartix_apex.so"] {
            assert!(
                profile.join(lib).exists(),
                "cargo built partix-apex but {} is missing",
                profile.join(lib).display()
            );
        }
        profile.to_path_buf()
    })
    .clone()
}

/// How a C program is linked.
#[derive(Clone, Copy)]
enum Link {
    /// Compile only (`-fsyntax-only`).
    None,
    /// Against `libpartix_apex.a`.
    Static,
    /// Against `libpartix_apex.so` with an rpath.
    Shared,
}

/// Compile `src` into `out_dir()/name` with the house warnings; panic with gcc's output on failure.
fn compile(src: &Path, name: &str, link: Link, extra: &[&str]) -> PathBuf {
    let out = out_dir().join(name);
    let mut cmd = Command::new("cc");
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-g"])
        .arg("-I")
        .arg(include_dir())
        .args(extra)
        .arg(src);
    match link {
        Link::None => {
            cmd.arg("-fsyntax-only");
        }
        Link::Static => {
            cmd.arg("-o")
                .arg(&out)
                .arg(lib_dir().join("libpartix_apex.a"))
                .args(["-lpthread", "-ldl", "-lm", "-lrt"]);
        }
        Link::Shared => {
            let dir = lib_dir();
            cmd.arg("-o")
                .arg(&out)
                .arg("-L")
                .arg(&dir)
                .arg(format!("-Wl,-rpath,{}", dir.display()))
                .arg("-lpartix_apex");
        }
    }
    let output = cmd
        .output()
        .expect("run cc (is gcc installed? see scripts/deps/apexc.txt)");
    assert!(
        output.status.success(),
        "cc failed for {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// Start `exe` standalone (no executive: none of the executive's variables) with extra
/// environment `env`, its output piped.
fn spawn_standalone(exe: &Path, env: &[(&str, &str)]) -> std::process::Child {
    Command::new(exe)
        .env_remove("PARTIX_STANDALONE_RESTART")
        .env_remove("PARTIX_CONFIG")
        .env_remove("PARTIX_PARTITION_ID")
        .env_remove("PARTIX_MODULE_FD")
        .env_remove("PARTIX_PARTITION_FD")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", exe.display()))
}

/// Run `exe` standalone (no executive) with extra environment `env`; wait for it to exit,
/// killing it (by pid) and failing after a generous 60 s. (A program that never ends:
/// [`run_until_lines`].)
fn run_for(exe: &Path, env: &[(&str, &str)]) -> Output {
    let mut child = spawn_standalone(exe, env);
    let limit = Duration::from_secs(60);
    let start = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        if start.elapsed() >= limit {
            child.kill().expect("kill the C program we started");
            let out = child.wait_with_output().expect("wait");
            panic!(
                "{} did not finish within {limit:?}; stdout:\n{}\nstderr:\n{}",
                exe.display(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("wait_with_output")
}

/// Run `exe` (a program that never ends) until its standard output has a line starting with
/// each of `prefixes`, or for `limit`, then kill it and return its output. (Fixed run times of
/// 500 ms and 1 s were short for a partition starting beside parallel compilations; found by
/// review.)
fn run_until_lines(exe: &Path, prefixes: &[&str], limit: Duration) -> Output {
    use std::io::BufRead;
    let mut child = spawn_standalone(exe, &[]);
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    let mut missing: Vec<String> = prefixes.iter().map(|p| p.to_string()).collect();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        for l in std::io::BufReader::new(stdout).lines() {
            let Ok(l) = l else { break };
            text.extend_from_slice(l.as_bytes());
            text.push(b'\n');
            if !missing.is_empty() {
                missing.retain(|p| !l.starts_with(p.as_str()));
                if missing.is_empty() {
                    let _ = tx.send(());
                }
            }
        }
        text
    });
    // Until every line came, the program ended (the reader's sender is gone), or the limit.
    let _ = rx.recv_timeout(limit);
    child.kill().expect("kill the C program we started");
    let mut out = child.wait_with_output().expect("wait_with_output");
    out.stdout = reader.join().expect("the reader thread");
    out
}

/// Each header alone, in C99 `-pedantic` and C++11: every file of `c_headers::FILES` (the list
/// `partix run` ships, itself checked against `include/`), so a new header cannot be left out
/// (`partix_ports.h` was; review 27, finding 4).
#[test]
fn every_header_stands_alone_in_c_and_cpp() {
    let headers: Vec<&str> = partix_apex::c_headers::FILES
        .iter()
        .map(|(path, _)| *path)
        .collect();
    assert!(
        headers.contains(&"arinc653/partix_ports.h") && headers.len() >= 15,
        "{headers:?}"
    );
    for h in headers {
        let define = format!("-DHEADER=<{h}>");
        compile(
            &c_source("each_header.c"),
            "each_header",
            Link::None,
            &[&define, "-pedantic"],
        );
        let output = Command::new("c++")
            .args([
                "-std=c++11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-fsyntax-only",
                "-x",
                "c++",
            ])
            .arg(&define)
            .arg("-I")
            .arg(include_dir())
            .arg(c_source("each_header.c"))
            .output()
            .expect("run c++");
        assert!(
            output.status.success(),
            "c++ rejected {h}:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Compare `actual` stdout lines with the golden file `tests/c/<golden>`, showing every
/// difference.
fn assert_golden(actual: &Output, golden: &str) {
    let text = String::from_utf8_lossy(&actual.stdout);
    let expected = std::fs::read_to_string(c_source(golden)).expect("read the golden file");
    let got: Vec<&str> = text.lines().collect();
    let want: Vec<&str> = expected.lines().collect();
    let mut diffs = Vec::new();
    for i in 0..got.len().max(want.len()) {
        let (g, w) = (got.get(i), want.get(i));
        if g != w {
            diffs.push(format!(
                "line {}: expected {:?}, got {:?}",
                i + 1,
                w.unwrap_or(&"<end>"),
                g.unwrap_or(&"<end>")
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "{golden}: {} differing lines:\n{}\n--- stderr:\n{}",
        diffs.len(),
        diffs.join("\n"),
        String::from_utf8_lossy(&actual.stderr)
    );
}

#[test]
fn a_pok_style_partition_compiles_unchanged_and_runs_with_the_shared_library() {
    compile(&c_source("pok_style.c"), "pok_style_check", Link::None, &[]);
    let exe = compile(&c_source("pok_style.c"), "pok_style", Link::Shared, &[]);
    let out = run_until_lines(&exe, &["BOARD 2 len=1 rc=0"], Duration::from_secs(20));
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "CREATE_PROCESS rc=0",
        "START rc=0",
        "GET_PROCESS_ID rc=0 same=1",
        "REPORT_APPLICATION_MESSAGE rc=0",
        "CREATE_SEMAPHORE rc=0",
        "CREATE_BLACKBOARD rc=0",
        "PING 1 rc=0",
        "BOARD 1 len=1 rc=0",
        "PING 2 rc=0",
        "BOARD 2 len=1 rc=0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in the output of the POK-style partition:\n{text}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        !text.contains("SET_PARTITION_MODE returned"),
        "SET_PARTITION_MODE(NORMAL) returned to main:\n{text}"
    );
}

/// Every return code of every service and the process state machine (static library).
///
/// The program restarts itself once (SET_PARTITION_MODE(WARM_START) in NORMAL mode re-executes
/// it in standalone mode) and ends with SET_PARTITION_MODE(IDLE), which exits with status 0.
#[test]
fn every_service_return_code_and_the_process_state_machine() {
    let exe = compile(&c_source("services.c"), "services", Link::Static, &[]);
    let out = run_for(&exe, &[]);
    assert_golden(&out, "services.expected");
    assert!(
        out.status.success(),
        "services exited with {:?}; stderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SET_PARTITION_MODE: RETURN_CODE is a null pointer"),
        "a null RETURN_CODE is reported on stderr:\n{stderr}"
    );
}

/// A report on stderr that cannot be written (EPIPE) is lost, and the partition goes on: it
/// used to abort the process (`eprintln!` panics on a failed write, outside `catch_unwind`, in
/// an `extern "C"` function).
#[test]
fn a_broken_stderr_does_not_abort_a_partition() {
    let exe = compile(
        &c_source("stderr_broken.c"),
        "stderr_broken",
        Link::Static,
        &[],
    );
    let out = run_for(&exe, &[]);
    assert!(
        out.status.success(),
        "stderr_broken exited with {:?}",
        out.status
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "GET_TIME after a lost report rc=0\n"
    );
}

/// Every return code of the intra-partition services (blackboards, buffers, semaphores, events),
/// and processes released from each of them (static library, standalone).
#[test]
fn intra_partition_services_return_codes_and_release() {
    let exe = compile(&c_source("intra.c"), "intra", Link::Static, &[]);
    let out = run_for(&exe, &[]);
    assert_golden(&out, "intra.expected");
    assert!(
        out.status.success(),
        "intra exited with {:?}; stderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The Part 2 module schedule services with a configuration: a system partition may switch
/// schedules, another partition gets INVALID_MODE.
#[test]
fn module_schedule_services_follow_the_configuration() {
    let exe = compile(&c_source("schedules.c"), "schedules", Link::Static, &[]);
    let config = c_source("two_schedules.xml");
    let config = config.to_str().expect("UTF-8 path");
    for (id, golden) in [
        ("1", "schedules_p1.expected"),
        ("2", "schedules_p2.expected"),
    ] {
        let out = run_for(
            &exe,
            &[("PARTIX_CONFIG", config), ("PARTIX_PARTITION_ID", id)],
        );
        assert!(
            out.status.success(),
            "schedules (partition {id}) failed: {out:?}"
        );
        assert_golden(&out, golden);
    }
}

/// The demo's C partition compiles with the house warnings, reaches NORMAL and runs its four
/// processes (standalone, stopped once each process has done a job).
#[test]
fn the_ofp_demo_partition_reaches_normal_and_runs_its_processes() {
    let src = manifest_dir().join("../../examples/uav/ofp.c");
    let exe = compile(&src, "ofp", Link::Static, &[]);
    let names = ["GnC", "NavReader", "SwmReader", "AdtReader"];
    let firsts: Vec<String> = names
        .iter()
        .map(|n| format!("OFP: {n} job 1 done at "))
        .collect();
    let firsts: Vec<&str> = firsts.iter().map(String::as_str).collect();
    let out = run_until_lines(&exe, &firsts, Duration::from_secs(20));
    let text = String::from_utf8_lossy(&out.stdout);
    let ctx = || {
        format!(
            "stdout:\n{text}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    };
    assert!(
        text.contains("OFP: 4 processes created and started; entering NORMAL mode"),
        "{}",
        ctx()
    );
    for name in names {
        let first = format!("OFP: {name} job 1 done at ");
        let line = text
            .lines()
            .find(|l| l.starts_with(&first))
            .unwrap_or_else(|| panic!("{name} never completed a job; {}", ctx()));
        assert!(line.ends_with("(mode NORMAL)"), "{line}");
    }
    assert!(!text.contains("failed"), "{}", ctx());
}

/// Every service the headers declare is exported by the shared library, and the library exports
/// no upper-case APEX symbol the headers do not declare.
#[test]
fn every_declared_service_is_exported_and_nothing_else() {
    let mut declared = std::collections::BTreeSet::new();
    for (path, text) in partix_apex::c_headers::FILES {
        let mut rest = *text;
        while let Some(i) = rest.find("extern void ") {
            rest = &rest[i + "extern void ".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect();
            assert!(!name.is_empty(), "unparsable prototype in {path}");
            declared.insert(name);
        }
    }
    // 38 process/time/partition/HM/schedule/port services + 22 intra-partition ones; more
    // headers may add more (the parser must find at least these).
    assert!(declared.len() >= 60, "services declared: {declared:?}");
    for s in [
        "CREATE_BLACKBOARD",
        "RECEIVE_BUFFER",
        "SIGNAL_SEMAPHORE",
        "GET_EVENT_STATUS",
    ] {
        assert!(declared.contains(s), "{s} not declared: {declared:?}");
    }
    let so = lib_dir().join("libpartix_apex.so");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&so)
        .output()
        .expect("run nm (binutils, installed with gcc)");
    assert!(out.status.success(), "nm failed: {out:?}");
    let exported: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| {
            s.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                && s.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        })
        .map(str::to_string)
        .collect();
    assert_eq!(declared, exported);
}

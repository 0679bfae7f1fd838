//! The C API from C: headers, static and shared linking, every service's return codes, the
//! process state machine, and the demo's C partition (`examples/uav/ofp.c`).
//!
//! C programs in `tests/c/` are compiled with `cc` against `include/` and the library cargo built
//! for this test (`target/<profile>/libpartix_apex.{a,so}`), then run as real processes in
//! standalone mode (no executive).

// The run helpers are used by the service tests added with the wrappers.
#![allow(dead_code)]

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
            .join(format!("apexc-c-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the C test output directory");
        dir
    })
    .clone()
}

/// The directory holding `libpartix_apex.a` / `.so`: the profile directory above `deps/`.
fn lib_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("current_exe");
        let deps = exe.parent().expect("test executable has a directory");
        let profile = deps.parent().expect("deps/ has a parent");
        let have = |p: &Path| p.join("libpartix_apex.a").exists() && p.join("libpartix_apex.so").exists();
        if !have(profile) {
            eprintln!(
                "libpartix_apex.a/.so not found in {}; building them with `cargo build -p partix-apex`",
                profile.display()
            );
            let target_dir = profile.parent().expect("profile dir has a parent");
            let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
            cmd.args(["build", "-p", "partix-apex"])
                .env("CARGO_TARGET_DIR", target_dir);
            if profile.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            let status = cmd.status().expect("run cargo build -p partix-apex");
            assert!(status.success(), "`cargo build -p partix-apex` failed");
            assert!(
                have(profile),
                "cargo built partix-apex but {} still lacks libpartix_apex.a/.so",
                profile.display()
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
    cmd.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", "-g"])
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

/// Run `exe` to completion (bounded by a generous timeout) and return its output.
fn run(exe: &Path, args: &[&str]) -> Output {
    run_for(exe, args, None)
}

/// Run `exe`; if `stop_after` is given, kill it (by pid) after that long. Without it, kill it only
/// after a generous 60 s and fail.
fn run_for(exe: &Path, args: &[&str], stop_after: Option<Duration>) -> Output {
    let mut child = Command::new(exe)
        .args(args)
        .env_remove("PARTIX_MODULE_FD")
        .env_remove("PARTIX_PARTITION_FD")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", exe.display()));
    let limit = stop_after.unwrap_or(Duration::from_secs(60));
    let start = Instant::now();
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        if start.elapsed() >= limit {
            child.kill().expect("kill the C program we started");
            if stop_after.is_none() {
                let out = child.wait_with_output().expect("wait");
                panic!(
                    "{} did not finish within {limit:?}; stdout:\n{}\nstderr:\n{}",
                    exe.display(),
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().expect("wait_with_output")
}

#[test]
fn every_header_stands_alone_in_c_and_cpp() {
    let headers = [
        "arinc653/types.h",
        "arinc653/partition.h",
        "arinc653/process.h",
        "arinc653/time.h",
        "arinc653/error.h",
        "arinc653/schedules.h",
        "arinc653/apex.h",
        "arinc653.h",
    ];
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

#[test]
fn a_pok_style_partition_compiles_unchanged() {
    compile(&c_source("pok_style.c"), "pok_style", Link::None, &[]);
}

//! The newcomer path's scripts (`scripts/*.sh`): the refusals that must come before any work.
//!
//! Each test runs a script with `bash` and a `PATH` it makes itself, so the script sees the
//! toolchain the test wants it to see; none of them gets as far as installing or building.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch directory of this test process, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let d =
            std::env::temp_dir().join(format!("partix-cli-scripts-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Return the full path of `tool` in this process's `PATH`.
fn which(tool: &str) -> PathBuf {
    let path = std::env::var_os("PATH").expect("PATH is set");
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{tool} not in PATH"))
}

/// A `bin` directory holding only the tools setup.sh's toolchain check uses (so neither cargo
/// nor rustc nor rustup is found unless a test adds them).
fn minimal_bin(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["dirname", "sed", "sort", "head"] {
        std::os::unix::fs::symlink(which(tool), bin.join(tool)).unwrap();
    }
    bin
}

/// Write an executable shell script `name` into `bin` that prints `version_line`.
fn fake_tool(bin: &Path, name: &str, version_line: &str) {
    use std::os::unix::fs::PermissionsExt;
    let p = bin.join(name);
    std::fs::write(&p, format!("#!/bin/sh\necho '{version_line}'\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn setup_with_path(bin: &Path) -> Output {
    Command::new(which("bash"))
        .arg(repo().join("scripts/setup.sh"))
        .env_clear()
        .env("PATH", bin)
        .env("HOME", bin)
        .output()
        .unwrap()
}

/// The workspace's `rust-version` (Cargo.toml), which setup.sh must name.
fn workspace_rust_version() -> String {
    let toml = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let line = toml
        .lines()
        .find(|l| l.starts_with("rust-version = "))
        .expect("Cargo.toml sets rust-version");
    line.split('"').nth(1).unwrap().to_string()
}

fn text(out: &Output) -> String {
    format!(
        "status: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Without cargo, setup.sh stops first (before apt-get), naming the Rust version needed and
/// rustup. It used to go on, and `scripts/demo.sh` then failed with `cargo: command not found`.
#[test]
fn setup_refuses_a_machine_without_cargo_and_names_the_version_and_rustup() {
    let s = Scratch::new("no-cargo");
    let bin = minimal_bin(&s.0);
    let out = setup_with_path(&bin);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`cargo` not found"), "{all}");
    assert!(
        stderr.contains(&format!("Rust {} or newer", workspace_rust_version())),
        "{all}"
    );
    assert!(stderr.contains("rustup"), "{all}");
    assert!(!all.contains("installing Debian packages"), "{all}");
}

/// Debian 13's rustc (1.85) is older than the workspace needs: setup.sh says so, with the
/// version found and the version needed, instead of the build failing with compile errors.
#[test]
fn setup_refuses_a_toolchain_older_than_the_workspace_rust_version() {
    let s = Scratch::new("old-rustc");
    let bin = minimal_bin(&s.0);
    fake_tool(&bin, "cargo", "cargo 1.85.0 (d73d2caf9 2024-12-31)");
    fake_tool(&bin, "rustc", "rustc 1.85.0 (4d91de4e4 2025-02-17)");
    let out = setup_with_path(&bin);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cargo 1.85.0"), "{all}");
    assert!(stderr.contains("too old"), "{all}");
    assert!(
        stderr.contains(&format!("Rust {} or newer", workspace_rust_version())),
        "{all}"
    );
    assert!(stderr.contains("help: install Rust"), "{all}");
    // With rustup there, the advice is to update through it.
    fake_tool(&bin, "rustup", "rustup 1.28.2 (e4f3ad6f8 2025-04-28)");
    let out = setup_with_path(&bin);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("rustup update stable"), "{all}");
}

/// A toolchain exactly at the minimum passes the check (the script then goes on to the Debian
/// packages, which this test does not let it reach: `dpkg-query` is not in its PATH, so every
/// package looks missing and `apt-get` is not found either).
#[test]
fn setup_accepts_the_minimum_toolchain() {
    let s = Scratch::new("min-rustc");
    let bin = minimal_bin(&s.0);
    let v = workspace_rust_version();
    let v = if v.matches('.').count() == 1 {
        format!("{v}.0")
    } else {
        v
    };
    fake_tool(&bin, "cargo", &format!("cargo {v} (0000000 2025-01-01)"));
    fake_tool(&bin, "rustc", &format!("rustc {v} (0000000 2025-01-01)"));
    let out = setup_with_path(&bin);
    let all = text(&out);
    assert!(!all.contains("too old"), "{all}");
    assert!(!all.contains("not found; partix needs"), "{all}");
}

/// A `bin` directory for running a script end to end without doing its work: the shell tools
/// the scripts use, a `dpkg-query` that says every package is installed, and `cargo` and
/// `rustc` stand-ins that report a new version and log each `cargo` command line to `log`
/// (`cargo fuzz --version` fails, as without cargo-fuzz, when `no_cargo_fuzz`).
fn stub_toolchain(dir: &Path, log: &Path, no_cargo_fuzz: bool) -> PathBuf {
    let bin = minimal_bin(dir);
    for tool in [
        "bash", "cat", "tr", "grep", "date", "basename", "mktemp", "rm", "mkdir",
    ] {
        std::os::unix::fs::symlink(which(tool), bin.join(tool)).unwrap();
    }
    fake_tool(&bin, "rustc", "rustc 9.0.0 (0000000 2099-01-01)");
    fake_tool(&bin, "dpkg-query", "install ok installed");
    let fuzz_version = if no_cargo_fuzz {
        "exit 1"
    } else {
        "echo 'cargo-fuzz 0.13.2'"
    };
    let cargo = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\ncase \"$1 $2\" in\n  '--version '*) echo 'cargo 9.0.0 (0000000 2099-01-01)' ;;\n  'fuzz --version') {fuzz_version} ;;\nesac\nexit 0\n",
        log.display()
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(bin.join("cargo"), cargo).unwrap();
    std::fs::set_permissions(bin.join("cargo"), std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// Run `bash SCRIPT ARGS` in `root` with `bin` as the whole PATH; give up after a minute (a
/// script that does not end is a failure, not a hung test run).
fn run_script(root: &Path, bin: &Path, script: &str, args: &[&str]) -> Output {
    let mut child = Command::new(which("bash"))
        .arg(root.join(script))
        .args(args)
        .current_dir(root)
        .env_clear()
        .env("PATH", bin)
        .env("HOME", bin)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("{script} {args:?} did not end in 60 s\n{}", text(&out));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn cargo_log(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// `scripts/test.sh` runs the doctests too: `cargo test --all-targets` leaves them out, so the
/// examples in the crate docs (the configuration error format among them) went untested.
#[test]
fn test_sh_runs_the_doctests() {
    let s = Scratch::new("test-sh");
    let log = s.0.join("cargo.log");
    let bin = stub_toolchain(&s.0, &log, false);
    let out = run_script(&repo(), &bin, "scripts/test.sh", &[]);
    let all = format!("{}\ncargo commands:\n{}", text(&out), cargo_log(&log));
    assert!(out.status.success(), "{all}");
    let log = cargo_log(&log);
    assert!(
        log.lines().any(|l| l == "test --workspace --all-targets"),
        "{all}"
    );
    assert!(log.lines().any(|l| l == "test --workspace --doc"), "{all}");
    // And the loom models (scripts/loom.sh), which plain cargo test does not run.
    assert!(
        log.lines()
            .any(|l| l.starts_with("test -p partix-shm --release --test loom ")),
        "{all}"
    );
}

/// `scripts/fuzz-smoke.sh 0` is refused: libFuzzer reads `-max_total_time=0` as "no limit", so
/// the first target fuzzed forever.
#[test]
fn fuzz_smoke_refuses_zero_seconds() {
    let s = Scratch::new("fuzz-zero");
    let log = s.0.join("cargo.log");
    let bin = stub_toolchain(&s.0, &log, false);
    for secs in ["0", "00"] {
        let out = run_script(&repo(), &bin, "scripts/fuzz-smoke.sh", &[secs]);
        let all = format!("{}\ncargo commands:\n{}", text(&out), cargo_log(&log));
        assert_eq!(out.status.code(), Some(2), "{secs}: {all}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("at least 1"),
            "{secs}: {all}"
        );
        assert_eq!(cargo_log(&log), "", "{secs}: nothing may run\n{all}");
    }
}

/// Without cargo-fuzz, fuzz-smoke.sh installs one fixed version with its lock file, so a new
/// cargo-fuzz release cannot change what CI runs.
#[test]
fn fuzz_smoke_installs_a_pinned_cargo_fuzz() {
    let s = Scratch::new("fuzz-install");
    let log = s.0.join("cargo.log");
    let bin = stub_toolchain(&s.0, &log, true);
    let out = run_script(&repo(), &bin, "scripts/fuzz-smoke.sh", &["1"]);
    let all = format!("{}\ncargo commands:\n{}", text(&out), cargo_log(&log));
    assert!(out.status.success(), "{all}");
    let install = cargo_log(&log)
        .lines()
        .find(|l| l.starts_with("install cargo-fuzz"))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no cargo install\n{all}"));
    assert!(install.contains("--locked"), "{all}");
    let version = install
        .split_whitespace()
        .skip_while(|w| *w != "--version")
        .nth(1)
        .unwrap_or_else(|| panic!("cargo-fuzz version not pinned: {install}"));
    assert!(
        version.split('.').count() == 3 && version.split('.').all(|n| n.parse::<u32>().is_ok()),
        "not an exact version: {install}"
    );
}

/// Every fuzz project's Cargo.lock is committed (not ignored), so a fuzz run builds the
/// dependency versions the repository holds, not whatever is newest that day.
#[test]
fn every_fuzz_project_has_its_lock_file_and_does_not_ignore_it() {
    let root = repo();
    let mut dirs = vec![root.join("fuzz")];
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        let d = e.unwrap().path().join("fuzz");
        if d.join("Cargo.toml").is_file() {
            dirs.push(d);
        }
    }
    assert!(dirs.len() >= 4, "{dirs:?}");
    for d in dirs {
        assert!(
            d.join("Cargo.lock").is_file(),
            "{} has no Cargo.lock",
            d.display()
        );
        let ignore = std::fs::read_to_string(d.join(".gitignore")).unwrap_or_default();
        assert!(
            !ignore.lines().any(|l| l.trim() == "Cargo.lock"),
            "{}/.gitignore ignores Cargo.lock",
            d.display()
        );
    }
}

/// CI runs the fuzz smoke step with `bash` even when the script lost its exec bit (a checkout
/// with `core.fileMode=false`, an archive): it used to skip the step and still pass.
#[test]
fn ci_runs_the_fuzz_smoke_step_without_the_exec_bit() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scratch::new("ci");
    let log = s.0.join("cargo.log");
    let bin = stub_toolchain(&s.0, &log, false);
    // A copy of what .ci/run uses, with fuzz-smoke.sh not executable.
    let tree = s.0.join("tree");
    for f in [".ci/run", "Cargo.toml"] {
        std::fs::create_dir_all(tree.join(f).parent().unwrap()).unwrap();
        std::fs::copy(repo().join(f), tree.join(f)).unwrap();
    }
    for sub in ["scripts", "scripts/deps"] {
        std::fs::create_dir_all(tree.join(sub)).unwrap();
        for e in std::fs::read_dir(repo().join(sub)).unwrap() {
            let p = e.unwrap().path();
            if p.is_file() {
                std::fs::copy(&p, tree.join(sub).join(p.file_name().unwrap())).unwrap();
            }
        }
    }
    let smoke = tree.join("scripts/fuzz-smoke.sh");
    std::fs::set_permissions(&smoke, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = run_script(&tree, &bin, ".ci/run", &[]);
    let all = format!("{}\ncargo commands:\n{}", text(&out), cargo_log(&log));
    assert!(out.status.success(), "{all}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("== fuzz smoke"),
        "{all}"
    );
    assert!(
        cargo_log(&log).lines().any(|l| l == "fuzz --version"),
        "{all}"
    );
}

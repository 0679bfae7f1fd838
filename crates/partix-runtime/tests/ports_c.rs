//! The port services from C, in a partition started by the real executive: the C program
//! `crates/partix-apex/tests/c/ports_codes.c` (linked with `libpartix_apex.a`) runs as partition
//! CODES of `tests/ports/codes.xml` and its lines must equal `ports_codes.expected`; the partix
//! extensions (`partix_ports.h`) likewise with `ports_partix.c` in `tests/ports/partix_c.xml`,
//! once per transport.

mod common;

use partix_runtime::executive::os::Program;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn apex_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../partix-apex")
}

/// Build `libpartix_apex.a` for this target directory and profile; return its directory.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let target_dir = profile.parent().expect("target dir");
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(["build", "--quiet", "-p", "partix-apex"])
        .env("CARGO_TARGET_DIR", target_dir);
    if profile.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    assert!(
        cmd.status()
            .expect("run cargo build -p partix-apex")
            .success(),
        "cargo build -p partix-apex failed"
    );
    profile.to_path_buf()
}

/// Compile `tests/c/<name>.c`, run it as the first partition of `module` (the others run
/// `ports-testpart idle`) and compare its lines with `tests/c/<name>.expected`.
fn run_c(name: &str, module: partix_config::model::Module) {
    let dir = common::out_dir(&format!("ports-c-{name}"));
    let exe = dir.join(name);
    let cc = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-I"])
        .arg(apex_dir().join("include"))
        .arg(apex_dir().join(format!("tests/c/{name}.c")))
        .arg("-o")
        .arg(&exe)
        .arg(lib_dir().join("libpartix_apex.a"))
        .args(["-lpthread", "-ldl", "-lm", "-lrt"])
        .output()
        .expect("run cc");
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let out = dir.join(format!("{name}.out"));
    let mut programs = vec![Program {
        path: exe,
        args: vec![out.display().to_string()],
    }];
    for i in 1..module.partitions.len() {
        programs.push(Program {
            path: PathBuf::from(env!("CARGO_BIN_EXE_ports-testpart")),
            args: vec![
                "idle".into(),
                dir.join(format!("p{i}.out")).display().to_string(),
            ],
        });
    }
    let watched = out.clone();
    common::run_until(
        module,
        programs,
        100_000,
        Duration::from_secs(60),
        move || common::has_line(&watched, |l| l == "END"),
    )
    .unwrap_or_else(|e| panic!("run_module: {e}"));
    let actual = std::fs::read_to_string(&out).unwrap_or_default();
    let expected =
        std::fs::read_to_string(apex_dir().join(format!("tests/c/{name}.expected"))).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let (a, e): (Vec<&str>, Vec<&str>) = (actual.lines().collect(), expected.lines().collect());
    let diffs: Vec<String> = (0..a.len().max(e.len()))
        .filter(|&i| a.get(i) != e.get(i))
        .map(|i| format!("line {}: got {:?}, want {:?}", i + 1, a.get(i), e.get(i)))
        .collect();
    assert!(diffs.is_empty(), "{}\nactual:\n{actual}", diffs.join("\n"));
}

fn module(file: &str) -> partix_config::model::Module {
    common::load(&format!("tests/ports/{file}"))
}

#[test]
fn every_port_service_return_code_from_c_under_the_executive() {
    let _g = common::serial();
    run_c("ports_codes", module("codes.xml"));
}

#[test]
fn partix_port_extensions_from_c_over_every_transport() {
    let _g = common::serial();
    for t in ["one-sided", "two-sided", "udp", "tcp"] {
        let mut m = module("partix_c.xml");
        for c in &mut m.channels {
            c.transport = Some(t.into());
        }
        run_c("ports_partix", m);
    }
}

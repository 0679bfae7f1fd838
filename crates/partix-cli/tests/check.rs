//! `partix check` end to end: the real binary on the demo module and on a broken module.

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn partix() -> Command {
    Command::new(env!("CARGO_BIN_EXE_partix"))
}

#[test]
fn check_accepts_the_demo_module_and_prints_its_schedule() {
    let out = partix()
        .arg("check")
        .arg(repo().join("examples/uav/module.xml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("OFP") && stdout.contains("VSP"), "{stdout}");
    assert!(stdout.contains("major frame 80 ms"), "{stdout}");
}

#[test]
fn check_rejects_overlapping_windows_with_a_location_and_exit_code_1() {
    let dir = std::env::temp_dir().join(format!("partix-cli-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(repo().join("examples/uav/module.xml")).unwrap();
    // Move the second window of the first schedule so that it overlaps the first one.
    let broken = text.replacen(
        "WindowStartSeconds=\"0.01\"",
        "WindowStartSeconds=\"0.005\"",
        1,
    );
    assert_ne!(broken, text, "the demo module changed: adapt this test");
    let file = dir.join("broken.xml");
    std::fs::write(&file, &broken).unwrap();
    let out = partix().arg("check").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("broken.xml:"), "{stderr}");
    assert!(stderr.contains("overlaps"), "{stderr}");
    assert!(stderr.contains("help:"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn check_reports_a_missing_file() {
    let out = partix()
        .arg("check")
        .arg("/nonexistent/module.xml")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/module.xml"));
}

/// What `partix run` refuses on any machine, `partix check` refuses too, at the attribute (or the
/// `<Partition>`) with a help line: each fixture in `tests/check_bad/` must print exactly its
/// `.expected` file and exit 1. It printed OK for all of them, and only the run failed, without
/// a location. Regenerate after an intended wording change with
/// `PARTIX_BLESS=1 cargo test -p partix-cli --test check` and review the diff.
#[test]
fn check_refuses_what_run_always_refuses() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/check_bad");
    let bless = std::env::var_os("PARTIX_BLESS").is_some();
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 3, "{fixtures:?}");
    let mut failures = Vec::new();
    for path in &fixtures {
        let name = path.file_name().unwrap();
        // Run from the fixture's directory with the bare file name: the output names no
        // machine-specific path.
        let out = partix()
            .arg("check")
            .arg(name)
            .current_dir(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "{}: {stderr}", path.display());
        assert!(
            out.stdout.is_empty(),
            "{}: printed a summary",
            path.display()
        );
        for line in stderr.lines().filter(|l| l.contains(": error: ")) {
            let mut parts = line.splitn(4, ':');
            let (_, l, c) = (parts.next(), parts.next(), parts.next());
            assert!(
                l.and_then(|s| s.parse::<u32>().ok()).is_some()
                    && c.and_then(|s| s.parse::<u32>().ok()).is_some(),
                "{}: unlocated error: {line}",
                path.display()
            );
        }
        let expected_path = path.with_extension("expected");
        if bless {
            std::fs::write(&expected_path, &stderr).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if stderr != expected {
            failures.push(format!(
                "{}:\n--- expected\n{expected}--- got\n{stderr}",
                path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A bare program name not found beside `partix` or in `PATH` is no reason for `partix check`
/// to fail: it depends on the machine (the program may be built later, or elsewhere), and
/// `partix run` reports it at the attribute. `check` says so at the end of its summary, at the
/// attribute, and names no program that is found.
#[test]
fn check_leaves_a_program_name_to_the_machine_that_runs_it() {
    let dir = std::env::temp_dir().join(format!("partix-cli-check-name-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(repo().join("examples/uav/module.xml")).unwrap();
    let changed = text.replace(
        "partix:Executable=\"uav-vsp\"",
        "partix:Executable=\"partix-no-such-program\"",
    );
    assert_ne!(changed, text, "the demo module changed: adapt this test");
    let file = dir.join("m.xml");
    std::fs::write(&file, &changed).unwrap();
    std::fs::write(dir.join("ofp.c"), "int main(void) { return 0; }\n").unwrap();
    let out = partix().arg("check").arg(&file).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (_, here) = stdout
        .split_once("\non this machine (`partix run` here would refuse them):\n")
        .unwrap_or_else(|| panic!("no section for this machine:\n{stdout}"));
    let lines: Vec<&str> = here.lines().collect();
    assert_eq!(lines.len(), 1, "{here}");
    assert!(
        lines[0].starts_with(&format!("  {}:", file.display()))
            && lines[0].contains("partix-no-such-program")
            && lines[0].contains("not found"),
        "{here}"
    );
    let line = changed
        .lines()
        .position(|l| l.contains("partix-no-such-program"))
        .unwrap()
        + 1;
    assert!(
        lines[0].contains(&format!(":{line}:")),
        "not at the attribute's line {line}: {here}"
    );
}

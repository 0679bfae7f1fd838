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

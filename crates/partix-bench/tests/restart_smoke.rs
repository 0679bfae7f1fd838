//! `partix bench restart` for one short round: real partition processes restarted by the real
//! executive. Asserts that every class ran and its rows fill (restarts happened, respawns and
//! windows were measured), never timings.

use partix_bench::restart::{measure, Class, RestartArgs};
use std::path::PathBuf;

/// `partix-testpart` of this build (a bin of `partix-runtime`, built beside the test binaries'
/// directory by `cargo test --workspace`).
fn testpart() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.parent()?.join("partix-testpart");
    p.is_file().then_some(p)
}

#[test]
fn every_class_restarts_and_is_measured() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED every_class_restarts_and_is_measured: needs root");
        return;
    }
    let Some(tp) = testpart() else {
        eprintln!(
            "SKIPPED every_class_restarts_and_is_measured: no partix-testpart beside the test \
             binaries (cargo test --workspace builds it)"
        );
        return;
    };
    let args = RestartArgs {
        seconds: 1,
        rounds: 1,
        after_ms: 10,
        restart_window_us: 1000,
        cpu: None,
        plot: None,
        testpart: Some(tp),
    };
    let m = measure(&args).expect("bench runs");
    assert_eq!(m.samples.len(), Class::ALL.len());
    assert!(!m.base.is_empty(), "no raw fork baseline");
    for class in [Class::BornInCgroup, Class::ForkAndMove] {
        let s = m.merged(class);
        assert!(s.restarts >= 3, "{}: {} restarts", class.name(), s.restarts);
        assert_eq!(
            s.spawn.len(),
            s.restarts,
            "{}: a respawn per restart",
            class.name()
        );
        for (rec, what) in [
            (&s.late_respawn, "after a respawn"),
            (&s.late_request, "at a request"),
            (&s.late_quiet, "quiet"),
        ] {
            assert!(!rec.is_empty(), "{}: no window {what}", class.name());
        }
    }
    let calm = m.merged(Class::NoRestart);
    assert_eq!(calm.restarts, 0);
    assert_eq!(calm.spawn.len(), 0);
    // One STEADY window per frame (1 s of 20 ms frames).
    assert_eq!(calm.late_quiet.len(), 50);
    assert_eq!(calm.late_respawn.len() + calm.late_request.len(), 0);
}

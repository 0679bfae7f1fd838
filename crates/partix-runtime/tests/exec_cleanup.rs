//! What the executive leaves behind and what its report claims: processes a partition forked
//! do not outlive it (after a restart, after the run, after an executive that was SIGKILLed),
//! and a partition cgroup given up during the run takes its memory limit and cpuset from the
//! report.

mod exec_util;

use exec_util::*;
use partix_config::model::{MemoryAccess, MemoryKind, MemoryRequirement};
use partix_runtime::attach::monotonic_ns;
use partix_runtime::executive::os::{default_cpu, resolve_program, OsSwitcher};
use partix_runtime::executive::shared::SharedState;
use partix_runtime::executive::Switcher;

/// A partition's cgroup that cannot take its new process (here: removed under the executive)
/// is given up, and with it the memory limit and the cpuset it held: the report must say so.
/// Before, `memory_cgroups[p]` still named the cgroup's control file, and no `cpuset_error`
/// was set (review 26 #5).
#[test]
fn a_cgroup_given_up_at_a_spawn_is_no_longer_reported_as_a_memory_limit() {
    const TEST: &str = "a_cgroup_given_up_at_a_spawn_is_no_longer_reported_as_a_memory_limit";
    if !is_root() {
        eprintln!("SKIPPED {TEST}: needs root");
        return;
    }
    let mut p = partition(1, "P1", Some(testpart()), &["sleep"]);
    p.memory = vec![MemoryRequirement {
        name: Some("data".into()),
        kind: MemoryKind::Data,
        size_bytes: 32 << 20,
        access: MemoryAccess::ReadWrite,
    }];
    let m = module(vec![p], vec![schedule(1, 40, &[(1, 1, 0.0, 20.0)])]);
    let shared = SharedState::create(&m, monotonic_ns()).unwrap();
    let programs = vec![resolve_program(&m, 0).unwrap()];
    let mut sw = OsSwitcher::new(&m, &shared, &programs, &[default_cpu()])
        .unwrap()
        .with_spawn_into_cgroup(false);
    let Some(dir) = sw.cgroup_path(0).map(std::path::Path::to_path_buf) else {
        eprintln!("SKIPPED {TEST}: no partition cgroup ({:?})", sw.cgroup_error);
        return;
    };
    if sw.memory_cgroups[0].is_none() {
        eprintln!("SKIPPED {TEST}: no memory cgroup ({:?})", sw.memory_error);
        return;
    }
    // Empty: it can be removed, and the process forked next cannot be moved into it.
    std::fs::remove_dir(&dir).unwrap();
    sw.spawn(0).unwrap();
    assert!(sw.cgroup_path(0).is_none());
    assert!(sw.cgroup_error.is_some());
    assert_eq!(sw.memory_cgroups[0], None, "the memory limit is still claimed");
    assert!(sw.memory_error.is_some());
    assert!(sw.cpuset_error.is_some());
    sw.kill(0);
    drop(sw);
}

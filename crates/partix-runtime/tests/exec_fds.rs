//! A partition's descriptors are numbered from 500 (module, partition, configuration) and 600
//! (its ports' regions and sockets) up. The executive starts partitions with ports under the
//! usual soft limit on open descriptors (1024), and while its own descriptors carry those
//! numbers: before, the first failed (the child's `fcntl(F_DUPFD, 4696)` was refused, and the
//! partition never started), and a source descriptor numbered like a target was overwritten
//! before it was moved. The last was also true of the v1 cgroup holds' `tasks` files, which
//! the child writes after the moves: its "0" went into the partition's region (a top of 476 to
//! 479 here), and the partition refused to attach.

mod common;

use common::all_pass;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

/// Set the soft limit on open descriptors (the hard one stays).
fn soft_nofile(n: u64) {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: l is a valid rlimit for getrlimit and setrlimit.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut l), 0);
        l.rlim_cur = n.min(l.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &l), 0);
    }
}

#[test]
fn partitions_with_ports_start_under_a_low_descriptor_limit_and_beside_busy_numbers() {
    soft_nofile(1024);
    let dir = common::out_dir("exec-fds-cfg");
    for top in 470..=500 {
        // Open descriptors up to just below `top`: the executive's own (its regions, its
        // sockets, its cgroup files) then take numbers around 500, where the partitions'
        // descriptors go; each `top` puts another of them on each target number.
        let mut held: Vec<OwnedFd> = Vec::new();
        loop {
            let f: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
            if f.as_raw_fd() >= top {
                break;
            }
            held.push(f);
        }
        for transport in ["one-sided", "udp"] {
            let m = common::on_transport("book.xml", transport, &dir);
            let out = common::run_roles(
                &format!("fds-{transport}"),
                m,
                env!("CARGO_BIN_EXE_ports-testpart"),
                &common::out_dir(&format!("exec-fds-{transport}")),
                &[("book-src", &[], true), ("book-dst", &[], true)],
                100_000,
                Duration::from_secs(60),
            );
            assert_eq!(
                all_pass(&format!("{transport} BOOK_SRC (top {top})"), &out[0]),
                4 + 2 * 3 + 4,
                "{transport}: {:#?}",
                out[0]
            );
            assert_eq!(
                all_pass(&format!("{transport} BOOK_DST (top {top})"), &out[1]),
                2,
                "{transport}: {:#?}",
                out[1]
            );
        }
        drop(held);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A partition inherits nothing of the executive's process state beyond what it is given: not
/// SIGPIPE ignored (the Rust runtime ignores it, and that survives execve), nor SIGTTIN and
/// SIGTTOU (which `stop_on_signals` ignores), not a descriptor the
/// executive's process holds without close-on-exec. The partition is a shell script (a Rust
/// program would ignore SIGPIPE itself).
#[test]
fn a_partition_inherits_no_ignored_sigpipe_and_no_stray_descriptor() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::out_dir("exec-inherit-cfg");
    let script = dir.join("inherited.sh");
    std::fs::write(
        &script,
        r#"#!/bin/sh
# inherited.sh ROLE OUT FD
ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status)
if [ $(( 0x$ign & 0x1000 )) -eq 0 ]; then
    echo "PASS SIGPIPE is not ignored" >> "$2"
else
    echo "FAIL SIGPIPE is ignored: SigIgn $ign" >> "$2"
fi
if [ $(( 0x$ign & 0x300000 )) -eq 0 ]; then
    echo "PASS SIGTTIN and SIGTTOU are not ignored" >> "$2"
else
    echo "FAIL SIGTTIN or SIGTTOU is ignored: SigIgn $ign" >> "$2"
fi
if [ -e "/proc/$$/fd/$3" ]; then
    echo "FAIL descriptor $3 is open" >> "$2"
else
    echo "PASS the stray descriptor is not inherited" >> "$2"
fi
echo "END inherited" >> "$2"
exec sleep 60
"#,
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // As `partix run` does: SIGTTIN and SIGTTOU ignored in the executive.
    let _ = partix_runtime::executive::os::stop_on_signals();
    // SAFETY: a plain open without O_CLOEXEC; the descriptor is closed below.
    let stray = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY) };
    assert!(stray >= 0);
    let n = stray.to_string();
    let out = common::run_roles(
        "inherit",
        common::on_transport("book.xml", "one-sided", &dir),
        script.to_str().unwrap(),
        &common::out_dir("exec-inherit"),
        &[("inherited", &[&n], true), ("inherited", &[&n], true)],
        100_000,
        Duration::from_secs(60),
    );
    for (i, lines) in out.iter().enumerate() {
        assert_eq!(all_pass(&format!("P{i}"), lines), 3, "{lines:#?}");
    }
    // SAFETY: stray is ours.
    unsafe { libc::close(stray) };
    let _ = std::fs::remove_dir_all(&dir);
}

//! Helpers shared by the APEX test partition programs (`*-testpart`, `partition-probe`), included
//! by each with `#[path = "testpart_common/mod.rs"] mod testpart_common;` (a directory without
//! `main.rs`, so not a binary of its own).
//!
//! A program is run as `PROGRAM ROLE OUT [ARG..]` and appends its results to the file OUT, one
//! line each: `PASS what`, `FAIL what: detail`, `INFO ...`, `END role`, ...

use partix_runtime::partition::*;
use std::io::Write;
use std::str::FromStr;
use std::sync::OnceLock;

/// One millisecond.
pub const MS: SystemTime = 1_000_000;
/// One microsecond.
#[allow(dead_code)] // not used by every program
pub const US: SystemTime = 1_000;

/// The output file, set by [`init`].
static OUT: OnceLock<String> = OnceLock::new();

/// Read the command line `ROLE OUT [ARG..]`: set OUT (`/dev/null` if absent); return ROLE (empty
/// if absent) and the ARGs.
pub fn init() -> (String, Vec<String>) {
    let mut args = std::env::args().skip(1);
    let role = args.next().unwrap_or_default();
    OUT.set(args.next().unwrap_or_else(|| "/dev/null".into()))
        .expect("once");
    (role, args.collect())
}

/// `arg` as a number; `default` if it is absent or not a number.
#[allow(dead_code)] // not used by every program
pub fn number<T: FromStr>(arg: Option<&String>, default: T) -> T {
    arg.and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// Append one line to OUT with a single `write(2)` (a process may be stopped at any point).
pub fn out(line: &str) {
    let path = OUT.get().expect("OUT set in main");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open OUT");
    f.write_all(format!("{line}\n").as_bytes())
        .expect("write OUT");
}

/// The lines OUT holds so far (those of earlier incarnations of this partition too).
#[allow(dead_code)] // not used by every program
pub fn out_lines() -> Vec<String> {
    let path = OUT.get().expect("OUT set in main");
    std::fs::read_to_string(path)
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

/// `PASS what` if `got` is the result `want` (any value if `Ok`), else `FAIL what: ...`.
#[allow(dead_code)] // not used by every program
pub fn check<T: std::fmt::Debug>(what: &str, got: ApexResult<T>, want: Result<(), ApexError>) {
    let ok = match (&got, want) {
        (Ok(_), Ok(())) => true,
        (Err(g), Err(w)) => *g == w,
        _ => false,
    };
    expect(what, ok, format_args!("got {got:?}, want {want:?}"));
}

/// `PASS what` if `cond` holds, else `FAIL what: detail`.
#[allow(dead_code)] // not used by every program
pub fn expect(what: &str, cond: bool, detail: impl std::fmt::Display) {
    if cond {
        out(&format!("PASS {what}"));
    } else {
        out(&format!("FAIL {what}: {detail}"));
    }
}

/// [`expect`] with the detail in its `Debug` form.
#[allow(dead_code)] // not used by every program
pub fn expect_dbg(what: &str, cond: bool, detail: impl std::fmt::Debug) {
    expect(what, cond, format!("{detail:?}"))
}

/// The attributes of an aperiodic process with a soft deadline.
pub fn attrs(name: &str, entry: EntryPoint, prio: Priority) -> ProcessAttributes {
    ProcessAttributes {
        name: name.into(),
        entry_point: entry,
        stack_size: 0,
        base_priority: prio,
        period: INFINITE_TIME_VALUE,
        time_capacity: INFINITE_TIME_VALUE,
        deadline: Deadline::Soft,
    }
}

/// CREATE_PROCESS with `a` (panic on an error).
pub fn create_with(a: &ProcessAttributes) -> ProcessId {
    create_process(a).unwrap_or_else(|e| panic!("create_process {}: {e:?}", a.name))
}

/// Create (not start) an aperiodic process.
#[allow(dead_code)] // not used by every program
pub fn new_process(name: &str, entry: EntryPoint, prio: Priority) -> ProcessId {
    create_with(&attrs(name, entry, prio))
}

/// Create and start an aperiodic process.
#[allow(dead_code)] // not used by every program
pub fn spawn(name: &str, entry: EntryPoint, prio: Priority) {
    start(new_process(name, entry, prio)).expect("start");
}

/// Enter NORMAL mode (never returns when it succeeds).
pub fn normal() -> ! {
    let e = set_partition_mode(OperatingMode::Normal);
    panic!("set_partition_mode(Normal) returned {e:?}");
}

/// Sleep forever (TIMED_WAIT in a loop).
pub fn idle_forever() -> ! {
    loop {
        let _ = timed_wait(1_000 * MS);
    }
}

/// The state of process `pid`.
#[allow(dead_code)] // not used by every program
pub fn state(pid: ProcessId) -> ProcessState {
    get_process_status(pid)
        .expect("process status")
        .process_state
}

/// Reserve (not write) every byte of the partition's memory that can still be had: blocks of
/// halving sizes, from 64 MiB down to 64 B, kept in `blocks` (room reserved by the caller; no
/// allocation beyond it). Return the bytes reserved.
#[allow(dead_code)] // not used by every program
pub fn exhaust_memory(blocks: &mut Vec<Vec<u8>>) -> usize {
    let mut size = 64usize << 20;
    let mut total = 0;
    while size >= 64 && blocks.len() < blocks.capacity() {
        let mut v = Vec::new();
        if v.try_reserve_exact(size).is_ok() {
            blocks.push(v);
            total += size;
        } else {
            size /= 2;
        }
    }
    total
}

/// Whether the partition's memory is full: a block of 64 B cannot be had.
#[allow(dead_code)] // not used by every program
pub fn memory_full() -> bool {
    Vec::<u8>::new().try_reserve_exact(64).is_err()
}

//! Helpers shared by the unit tests.

/// CPU time (user + system, clock ticks) of thread `tid` of this process.
pub(crate) fn thread_ticks(tid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
    // Fields after the parenthesised name: state is field 3; utime 14, stime 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// Return this thread's id.
#[allow(unsafe_code)]
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

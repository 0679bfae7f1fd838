//! Helpers shared by the unit tests.

use std::time::Duration;

/// How soon a wake-up (or a stop) must end a park in the tests: well under
/// [`crate::notifier::MAX_PARK`], at whose end every park looks again anyway, so that a wake-up
/// that was never sent cannot pass for one (found by review: the tests allowed 2 to 30 s).
pub(crate) const WAKE_BOUND: Duration = Duration::from_millis(300);

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

/// Run `f` on a new thread; after it has had 50 ms to settle, return the clock ticks (100 Hz)
/// it used in the next 500 ms, with its handle: a thread that spins uses about 50, a parked one
/// none.
pub(crate) fn spawn_and_count_ticks<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> (std::thread::JoinHandle<T>, u64) {
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        tid_tx.send(gettid()).unwrap();
        f()
    });
    let tid = tid_rx.recv().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    let before = thread_ticks(tid);
    std::thread::sleep(std::time::Duration::from_millis(500));
    (t, thread_ticks(tid) - before)
}

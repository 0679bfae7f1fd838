//! Process-shared futex wait and wake on a 32-bit word.
#![allow(unsafe_code)]

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Outcome of [`wait`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitResult {
    /// Woken (or the word already differed, or a spurious wake-up): re-check the condition.
    Woken,
    /// The timeout elapsed.
    TimedOut,
}

/// Block while `*word == expected`, at most `timeout` (relative; `None` = forever).
///
/// Works across processes on a word in shared memory (no `FUTEX_PRIVATE_FLAG`).
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> WaitResult {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: word points to a live, aligned u32; tsp is null or points to a valid timespec.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            tsp,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if r == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ETIMEDOUT) {
        WaitResult::TimedOut
    } else {
        WaitResult::Woken
    }
}

/// Wake up to `n` waiters blocked on `word`; return how many were woken.
pub fn wake(word: &AtomicU32, n: u32) -> usize {
    // SAFETY: word points to a live, aligned u32.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            n.min(i32::MAX as u32),
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    r.max(0) as usize
}

/// Wake every waiter blocked on `word`.
pub fn wake_all(word: &AtomicU32) -> usize {
    wake(word, i32::MAX as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn wait_times_out_when_nobody_wakes() {
        let w = AtomicU32::new(0);
        assert_eq!(
            wait(&w, 0, Some(Duration::from_millis(5))),
            WaitResult::TimedOut
        );
    }

    #[test]
    fn wait_returns_at_once_when_word_differs() {
        let w = AtomicU32::new(1);
        assert_eq!(wait(&w, 0, Some(Duration::from_secs(5))), WaitResult::Woken);
    }

    #[test]
    fn wake_releases_a_waiter() {
        let w = Arc::new(AtomicU32::new(0));
        let w2 = w.clone();
        let t = std::thread::spawn(move || {
            while w2.load(Ordering::Acquire) == 0 {
                wait(&w2, 0, Some(Duration::from_secs(10)));
            }
        });
        std::thread::sleep(Duration::from_millis(10));
        w.store(1, Ordering::Release);
        wake_all(&w);
        t.join().unwrap();
    }
}

//! Raw baselines shared by several benchmarks: what the kernel alone costs for a process switch
//! inside one partition (a futex hand-off between SCHED_FIFO threads on one CPU) and for creating
//! a thread, measured under the conditions of the path they are compared with (pinned to its CPU,
//! at its priority).

use crate::report::Recorder;
use partix_runtime::attach::monotonic_ns;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Pin the calling thread to `cpu` and put it on SCHED_FIFO `prio` (for the rest of the thread's
/// life: call it on a thread of its own). Return whether SCHED_FIFO could be set (root or
/// CAP_SYS_NICE) and whether the thread could be pinned.
pub fn pin_fifo(cpu: usize, prio: i32) -> (bool, bool) {
    // SAFETY: plain syscalls on the calling thread with valid pointers; CPU_SET stays in bounds
    // (checked against CPU_SETSIZE).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let pinned = cpu < libc::CPU_SETSIZE as usize && {
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        };
        let p = libc::sched_param {
            sched_priority: prio,
        };
        let fifo = libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0;
        (fifo, pinned)
    }
}

/// What [`futex_handoff`] measured.
#[derive(Debug, Clone, Default)]
pub struct Handoff {
    /// From just before the `FUTEX_WAKE` (after the store) to the woken higher-priority thread's
    /// first instruction after its `FUTEX_WAIT` (ns): one context switch.
    pub one_way: Recorder,
    /// From the same point to the waker running again after the woken thread blocked once more
    /// (ns): two context switches, as a START of a higher-priority process that runs to its end.
    pub round_trip: Recorder,
    /// Hand-offs whose woken thread did not stamp before the waker ran again (no preemption:
    /// no SCHED_FIFO), not recorded in `one_way`.
    pub not_preempted: u64,
    /// Whether both threads ran at SCHED_FIFO.
    pub fifo: bool,
}

/// Raw CtswO floor: a thread at SCHED_FIFO `prio` wakes (a store and one `FUTEX_WAKE`) a thread
/// at `prio + 1` on the same CPU that waits on the word, `samples` times; the woken thread stamps
/// the time as its first instruction after the wait and waits again.
///
/// # Errors
/// A thread cannot be spawned or panicked.
pub fn futex_handoff(cpu: usize, prio: i32, samples: u64) -> anyhow::Result<Handoff> {
    std::thread::Builder::new()
        .name("raw-handoff".into())
        .spawn(move || -> anyhow::Result<Handoff> {
            let (fifo_low, _) = pin_fifo(cpu, prio);
            let word = Arc::new(AtomicU32::new(0));
            let stamp = Arc::new(AtomicU64::new(0));
            let ready = Arc::new(AtomicBool::new(false));
            let stop = u32::MAX;
            let (w, st, rd) = (word.clone(), stamp.clone(), ready.clone());
            let hi = std::thread::Builder::new()
                .name("raw-handoff-hi".into())
                .spawn(move || {
                    let (fifo_hi, _) = pin_fifo(cpu, prio + 1);
                    let mut seen = w.load(Ordering::Acquire);
                    rd.store(true, Ordering::Release);
                    loop {
                        partix_shm::futex::wait(&w, seen, None);
                        let t = monotonic_ns();
                        let now = w.load(Ordering::Acquire);
                        if now == seen {
                            continue; // spurious
                        }
                        seen = now;
                        if now == stop {
                            return fifo_hi;
                        }
                        st.store(t, Ordering::Release);
                    }
                })?;
            while !ready.load(Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            // Let it block in FUTEX_WAIT.
            std::thread::sleep(std::time::Duration::from_millis(2));
            let mut h = Handoff::default();
            for i in 0..samples {
                // 1, 2, ...: never 0 (the start) nor `stop`, and never the previous value.
                let seq = (i % u64::from(stop - 2)) as u32 + 1;
                let t0 = monotonic_ns();
                word.store(seq, Ordering::Release);
                partix_shm::futex::wake(&word, 1);
                let t1 = monotonic_ns();
                let s = stamp.load(Ordering::Acquire);
                if s >= t0 && s <= t1 {
                    h.one_way.record(s - t0);
                    h.round_trip.record(t1 - t0);
                } else {
                    h.not_preempted += 1;
                    // Let the woken thread run and block again before the next hand-off.
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            }
            word.store(stop, Ordering::Release);
            partix_shm::futex::wake(&word, 1);
            let fifo_hi = hi
                .join()
                .map_err(|_| anyhow::anyhow!("hand-off thread panicked"))?;
            h.fifo = fifo_low && fifo_hi;
            Ok(h)
        })?
        .join()
        .map_err(|_| anyhow::anyhow!("hand-off baseline thread panicked"))?
}

/// Raw CREATE_PROCESS floor: create `n` threads with 64 KiB stacks (the bench's processes' size),
/// each timed until it ran and said so (the caller waits on a futex for it, as CREATE_PROCESS
/// waits until its new thread is registered); the threads then wait parked and are ended and
/// joined outside the timing. Run on the calling thread (pin it first).
///
/// # Errors
/// A thread cannot be created.
pub fn thread_create(n: u32) -> anyhow::Result<Recorder> {
    let mut r = Recorder::new();
    let stop = Arc::new(AtomicU32::new(0));
    let mut threads = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let up = Arc::new(AtomicU32::new(0));
        let (u, s) = (up.clone(), stop.clone());
        let t0 = monotonic_ns();
        let t = std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || {
                u.store(1, Ordering::Release);
                partix_shm::futex::wake(&u, 1);
                while s.load(Ordering::Acquire) == 0 {
                    partix_shm::futex::wait(&s, 0, None);
                }
            })?;
        while up.load(Ordering::Acquire) == 0 {
            partix_shm::futex::wait(&up, 0, None);
        }
        r.record(monotonic_ns() - t0);
        threads.push(t);
    }
    stop.store(1, Ordering::Release);
    partix_shm::futex::wake_all(&stop);
    for t in threads {
        let _ = t.join();
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The baselines measure something: every hand-off is either recorded or counted, and the
    /// round trip is never shorter than the one-way part.
    #[test]
    fn raw_baselines_record_every_sample() {
        let cpu = partix_runtime::executive::os::default_cpu();
        let h = futex_handoff(cpu, 10, 200).unwrap();
        assert_eq!(h.one_way.len() + h.not_preempted, 200);
        assert_eq!(h.round_trip.len(), h.one_way.len());
        if !h.one_way.is_empty() {
            assert!(h.round_trip.summary("").max >= h.one_way.summary("").min);
        }
        let c = thread_create(20).unwrap();
        assert_eq!(c.len(), 20);
    }
}

//! `partix-testpart`: a raw partition program for the executive's tests and benchmarks.
//!
//! It attaches to the module state directly (it is not an APEX program), optionally spends some
//! time initialising, sets NORMAL, then behaves as asked:
//!
//! ```text
//! partix-testpart busy --out FILE [--threads K [--register]] [--fork]
//!                                        spin, appending "start end" (CLOCK_MONOTONIC ns) of every
//!                                        stretch it ran without a gap > 20 µs to FILE (with
//!                                        `--park forge`, also "forged T": the first forged park);
//!                                        K threads do so (--register: the K − 1 extra ones enter
//!                                        the runtime's thread table, so the executive signals
//!                                        each of them itself at a close; --fork: a child
//!                                        process spins too, appending to the same FILE, after
//!                                        a line "child PID"; it ignores the shutdown)
//! partix-testpart crash --how H --after-ms N [--first-only]
//!                                        spin; N ms (module time) after its start, die by H:
//!                                        segv | abort | kill | exit | fpe | ill
//!                                        (--first-only: a restarted instance just spins)
//! partix-testpart request --mode M --after-ms N [--first-only]
//!                                        sleep; after N ms ask for mode M (idle | cold | warm)
//! partix-testpart schedule --id S --after-ms N
//!                                        sleep; after N ms ask for module schedule S
//! partix-testpart periodic --threads K --period-us P --work-us W
//!                                        K threads: every P µs spin W µs (bench load)
//! partix-testpart alloc --mb N --after-ms T [--shm]
//!                                        after T ms allocate and touch N MiB, then sleep
//!                                        (an allocation over the partition's memory limit aborts;
//!                                        --shm: shared memory of a memfd, which RLIMIT_DATA does
//!                                        not count: only a memory cgroup stops it)
//! partix-testpart populate --mb N        fault in and drop N MiB of anonymous memory, over and
//!                                        over (MADV_POPULATE_WRITE, MADV_DONTNEED): most of its
//!                                        time in long system calls that a pending signal does
//!                                        not interrupt
//! partix-testpart sleep                  do nothing
//! common: --fork-sleeper (at its start, fork a process that writes "child PID" to --out
//!         FILE and sleeps 60 s, ignoring the shutdown: a worker only the executive can end),
//!         --init-ms N (time in COLD_START before NORMAL), --init-request cold|warm (first
//! start only: ask for that restart during the initialisation and wait there for it), --fifo (SCHED_FIFO 1 for its threads;
//!         --prio N: N instead of 1),
//!         --park block|ignore|forge|noop (block or ignore the executive's park signal, claim to
//!         be parked without parking, or take the signal and run on: a partition that does not
//!         cooperate with the gate),
//!         --read PATH (first start only: a thread reads PATH, and the initialisation goes on
//!         once `PATH.taken` exists, which a test FUSE server shows when it has taken the
//!         read; with a server that holds its reply, a process that a SIGKILL cannot end
//!         until the reply comes)
//! ```
//! It exits when the module shuts down.
#![allow(unsafe_code)]

use partix_runtime::attach::{monotonic_ns, park_signal, PartitionContext};
use partix_runtime::state::{mode, start_condition};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn flag(args: &[String], name: &str) -> bool {
    args.iter().any(|a| a == name)
}

/// The SCHED_FIFO priority of `--fifo` (`--prio N`, default 1).
static FIFO_PRIO: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1);

fn set_fifo() {
    let p = libc::sched_param {
        sched_priority: FIFO_PRIO.load(Ordering::Relaxed),
    };
    // SAFETY: plain syscall on the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
}

/// The stretch a spinning thread has been running without a gap > 20 µs (`CLOCK_MONOTONIC` ns).
struct Stretch {
    start: u64,
    last: u64,
}

impl Stretch {
    fn new() -> Stretch {
        let t = monotonic_ns();
        Stretch { start: t, last: t }
    }

    /// Take the time; after a gap, append the finished stretch "start end" to `f` (one write,
    /// so lines of several threads do not mix).
    fn step(&mut self, f: &mut std::fs::File) {
        let t = monotonic_ns();
        if t - self.last > 20_000 {
            let _ = f.write_all(format!("{} {}\n", self.start, self.last).as_bytes());
            self.start = t;
        }
        self.last = t;
    }
}

fn spin_for(ns: u64) {
    let end = monotonic_ns() + ns;
    while monotonic_ns() < end {
        std::hint::spin_loop();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = args.first().cloned().unwrap_or_default();
    let ctx = match PartitionContext::get() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("partix-testpart: {e}");
            std::process::exit(2);
        }
    };
    FIFO_PRIO.store(arg(&args, "--prio", 1), Ordering::Relaxed);
    if flag(&args, "--fifo") {
        set_fifo();
    }
    // A partition that does not cooperate with the executive's gate: it blocks the park signal
    // or ignores it (the executive must stop it with its SIGSTOP backstop).
    match arg(&args, "--park", String::new()).as_str() {
        "block" => {
            // SAFETY: a sigset with one signal, blocked for this (the only) thread.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, park_signal());
                libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            }
        }
        "ignore" => {
            // SAFETY: replacing the runtime's park handler by SIG_IGN.
            unsafe { libc::signal(park_signal(), libc::SIG_IGN) };
        }
        "noop" => {
            // SAFETY: replacing the runtime's park handler by one that does nothing.
            unsafe { libc::signal(park_signal(), noop_park as *const () as libc::sighandler_t) };
        }
        "forge" => {
            // SAFETY: replacing the runtime's park handler by one that only atomics-writes.
            unsafe { libc::signal(park_signal(), forge_park as *const () as libc::sighandler_t) };
        }
        _ => {}
    }
    // A worker process that only sleeps (60 s at most), forked before any thread exists: it
    // tells its pid ("child PID" in --out), ignores the module's shutdown and does not die
    // with its parent; only the executive can end it.
    if flag(&args, "--fork-sleeper") {
        let out: String = arg(&args, "--out", String::new());
        // SAFETY: fork of a process with one thread; the child only writes a line and sleeps.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            if let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&out)
            {
                let _ = writeln!(f, "child {}", std::process::id());
            }
            std::thread::sleep(Duration::from_secs(60));
            std::process::exit(0);
        }
    }
    let init_ms: u64 = arg(&args, "--init-ms", 0);
    if init_ms > 0 {
        std::thread::sleep(Duration::from_millis(init_ms));
    }
    let p = ctx.partition();
    let first = p.start_condition.load(Ordering::Acquire) == start_condition::NORMAL_START;
    let first_only = flag(&args, "--first-only");
    let read: String = arg(&args, "--read", String::new());
    if !read.is_empty() && first {
        read_in_a_thread(read);
    }
    // Ask for a restart during the first initialisation, and wait for it there.
    let init_request = match arg(&args, "--init-request", String::new()).as_str() {
        "cold" => Some(mode::COLD_START),
        "warm" => Some(mode::WARM_START),
        _ => None,
    };
    if let (Some(m), true) = (init_request, first) {
        ctx.request_mode(m);
        while !ctx.module().shutdown() {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::process::exit(0);
    }
    let started = ctx.now_ns();
    ctx.set_normal();
    let shutdown = || ctx.module().shutdown();
    let after = |ms: u64| ctx.now_ns() >= started + ms * 1_000_000;
    match cmd.as_str() {
        "busy" => {
            let out: String = arg(&args, "--out", String::new());
            let open = || {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&out)
                    .unwrap_or_else(|e| {
                        eprintln!("partix-testpart: {out}: {e}");
                        std::process::exit(2)
                    })
            };
            // A child process spinning the same way, forked before any thread exists: an
            // application's worker process, outside the runtime's view (not a thread of the
            // partition's process, so neither the park signal nor the thread count reaches it).
            if flag(&args, "--fork") {
                // SAFETY: fork of a process with one thread; the child only spins and writes.
                let pid = unsafe { libc::fork() };
                if pid == 0 {
                    // It tells its pid, and neither dies with its parent nor looks at the
                    // module's shutdown: only the executive can end it (within 30 s it ends
                    // itself, should that fail).
                    let mut f = open();
                    let _ = writeln!(f, "child {}", std::process::id());
                    let end = monotonic_ns() + 30_000_000_000;
                    let mut run = Stretch::new();
                    while monotonic_ns() < end {
                        run.step(&mut f);
                    }
                    std::process::exit(0);
                }
            }
            // Extra threads spinning the same way.
            let fifo = flag(&args, "--fifo");
            let register = flag(&args, "--register");
            let extra = arg(&args, "--threads", 1usize).saturating_sub(1);
            // All threads exist (and are in the table) before any spins: a spinning FIFO thread
            // would keep the others, at its priority, from ever starting.
            let ready = std::sync::Arc::new(std::sync::Barrier::new(extra + 1));
            for _ in 0..extra {
                let mut f = open();
                let ready = ready.clone();
                std::thread::spawn(move || {
                    if register {
                        partix_runtime::attach::register_thread();
                    }
                    if fifo {
                        set_fifo();
                    }
                    ready.wait();
                    let mut run = Stretch::new();
                    loop {
                        run.step(&mut f);
                    }
                });
            }
            ready.wait();
            let mut f = open();
            let mut run = Stretch::new();
            let mut forged_told = false;
            while !shutdown() {
                run.step(&mut f);
                if !forged_told {
                    let at = FIRST_FORGED_NS.load(Ordering::Acquire);
                    if at != 0 {
                        // Not a segment line (one number): the tests read it apart.
                        let _ = writeln!(f, "forged {at}");
                        forged_told = true;
                    }
                }
            }
        }
        "crash" => {
            let how: String = arg(&args, "--how", "segv".to_string());
            let ms: u64 = arg(&args, "--after-ms", 0);
            while !shutdown() {
                if (first || !first_only) && after(ms) {
                    crash(&how);
                }
                std::hint::spin_loop();
            }
        }
        "request" => {
            let m = match arg(&args, "--mode", String::new()).as_str() {
                "idle" => mode::IDLE,
                "cold" => mode::COLD_START,
                "warm" => mode::WARM_START,
                other => {
                    eprintln!("partix-testpart: unknown mode {other:?}");
                    std::process::exit(2)
                }
            };
            let ms: u64 = arg(&args, "--after-ms", 0);
            let mut done = !first && first_only;
            while !shutdown() {
                if !done && after(ms) {
                    ctx.request_mode(m);
                    done = true;
                }
                std::thread::sleep(Duration::from_micros(500));
            }
        }
        "schedule" => {
            let id: u32 = arg(&args, "--id", 0);
            let ms: u64 = arg(&args, "--after-ms", 0);
            let mut done = false;
            while !shutdown() {
                if !done && after(ms) {
                    ctx.request_schedule(id);
                    done = true;
                }
                std::thread::sleep(Duration::from_micros(500));
            }
        }
        "periodic" => {
            let k: usize = arg(&args, "--threads", 1);
            let period: u64 = arg::<u64>(&args, "--period-us", 1000) * 1000;
            let work: u64 = arg::<u64>(&args, "--work-us", 20) * 1000;
            let fifo = flag(&args, "--fifo");
            let handles: Vec<_> = (0..k)
                .map(|_| {
                    std::thread::spawn(move || {
                        if fifo {
                            set_fifo();
                        }
                        let mut next = monotonic_ns() + period;
                        loop {
                            let ts = libc::timespec {
                                tv_sec: (next / 1_000_000_000) as libc::time_t,
                                tv_nsec: (next % 1_000_000_000) as libc::c_long,
                            };
                            // SAFETY: valid timespec, absolute sleep.
                            unsafe {
                                libc::clock_nanosleep(
                                    libc::CLOCK_MONOTONIC,
                                    libc::TIMER_ABSTIME,
                                    &ts,
                                    std::ptr::null_mut(),
                                )
                            };
                            spin_for(work);
                            next += period;
                            let now = monotonic_ns();
                            if next < now {
                                next = now + period;
                            }
                        }
                    })
                })
                .collect();
            while !shutdown() {
                std::thread::sleep(Duration::from_millis(1));
            }
            drop(handles);
        }
        "alloc" => {
            let mb: usize = arg(&args, "--mb", 1);
            let ms: u64 = arg(&args, "--after-ms", 0);
            let mut held: Vec<u8> = Vec::new();
            let shm = flag(&args, "--shm");
            let mut shm_done = false;
            while !shutdown() {
                if shm && !shm_done && after(ms) {
                    touch_shared(mb << 20);
                    shm_done = true;
                }
                if !shm && held.is_empty() && after(ms) {
                    // Abort at once on failure, as a C program's unchecked malloc would crash
                    // (Rust's OOM handler would first print a backtrace, slowly, in windows).
                    if held.try_reserve_exact(mb << 20).is_err() {
                        std::process::abort();
                    }
                    held.resize(mb << 20, 1);
                    std::hint::black_box(&mut held);
                }
                std::thread::sleep(Duration::from_micros(500));
            }
        }
        "populate" => {
            let len = arg::<usize>(&args, "--mb", 64) << 20;
            // SAFETY: an anonymous private mapping of `len` bytes, only passed to madvise; it
            // stays mapped until the process ends.
            unsafe {
                let p = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
                if p == libc::MAP_FAILED {
                    std::process::abort();
                }
                while !shutdown() {
                    libc::madvise(p, len, libc::MADV_POPULATE_WRITE);
                    libc::madvise(p, len, libc::MADV_DONTNEED);
                }
            }
        }
        "sleep" | "" => {
            while !shutdown() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        other => {
            eprintln!("partix-testpart: unknown command {other:?}");
            std::process::exit(2);
        }
    }
}

/// Start a thread that reads `path`; return once the file's server has taken the read (a
/// test server shows `PATH.taken` then), or the read ended, or after 10 s.
fn read_in_a_thread(path: String) {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d = done.clone();
    let taken = format!("{path}.taken");
    std::thread::spawn(move || {
        let mut b = [0u8; 64];
        let _ = std::fs::File::open(&path).and_then(|mut f| {
            use std::io::Read;
            f.read(&mut b)
        });
        d.store(true, Ordering::Release);
    });
    let end = monotonic_ns() + 10_000_000_000;
    while !done.load(Ordering::Acquire)
        && !std::path::Path::new(&taken).exists()
        && monotonic_ns() < end
    {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Create a memfd of `bytes`, map it shared and touch every page (the mapping stays).
fn touch_shared(bytes: usize) {
    // SAFETY: plain syscalls with checked results; the mapping is `bytes` long and written only
    // inside it; it is never unmapped (the partition holds it until it ends).
    unsafe {
        let fd = libc::memfd_create(c"partix-testpart-shm".as_ptr(), libc::MFD_CLOEXEC);
        if fd < 0 || libc::ftruncate(fd, bytes as libc::off_t) != 0 {
            std::process::abort();
        }
        let p = libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        if p == libc::MAP_FAILED {
            std::process::abort();
        }
        let base = p.cast::<u8>();
        for off in (0..bytes).step_by(4096) {
            std::ptr::write_volatile(base.add(off), 1);
        }
    }
}

/// `CLOCK_MONOTONIC` ns of the first park request [`forge_park`] answered falsely (0: none yet).
static FIRST_FORGED_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A park handler that neither parks nor claims to: the signal is taken, and the thread runs on.
extern "C" fn noop_park(_: libc::c_int) {}

/// A park handler that claims every thread parked without parking (a partition written to
/// defeat the gate; the executive's CPU-time audit must catch it).
extern "C" fn forge_park(_: libc::c_int) {
    // The first forged park's time, for the `busy` output (clock_gettime is async-signal-safe).
    let _ =
        FIRST_FORGED_NS.compare_exchange(0, monotonic_ns(), Ordering::AcqRel, Ordering::Relaxed);
    if let Ok(ctx) = PartitionContext::get() {
        let p = ctx.partition();
        p.gate_parked.store(1000, Ordering::Release);
        p.gate_acked
            .store(p.gate.load(Ordering::Acquire), Ordering::Release);
    }
}

fn crash(how: &str) -> ! {
    match how {
        "segv" => {
            // SAFETY: deliberately invalid: this program exists to crash here.
            unsafe { std::ptr::write_volatile(8 as *mut u32, 1) };
            std::process::abort()
        }
        "abort" => std::process::abort(),
        // SAFETY: raising a signal at ourselves.
        "kill" => unsafe {
            libc::raise(libc::SIGKILL);
            std::process::abort()
        },
        "fpe" => unsafe {
            // SAFETY: raising a signal at ourselves.
            libc::raise(libc::SIGFPE);
            std::process::abort()
        },
        "ill" => unsafe {
            // SAFETY: raising a signal at ourselves.
            libc::raise(libc::SIGILL);
            std::process::abort()
        },
        _ => std::process::exit(3),
    }
}

//! Round-trip time of iceoryx2 publish/subscribe, for `partix bench rtt` to compare with.
//!
//! ```text
//! cargo build --release -p partix-bench --examples
//! target/release/examples/iceoryx2_rtt [--sizes 16,56,...] [--iters N] [--warmup N]
//! ```
//! Per size, this process (pinned to CPU 0) publishes on service `ping` and subscribes to `pong`;
//! a child process (this program with `pong ...`, pinned to CPU 1) echoes every sample it
//! receives. Both spin on receive and run at SCHED_FIFO 51 when allowed, like the peers of
//! `partix bench rtt`. The payload is a `[u8]` slice of the message size stamped as every
//! class's message is (`rttpeer::stamp`: the sequence number in the first and the last 8
//! bytes); the ping side waits for the echo of exactly that number. Both sides copy every
//! received payload out whole into their own buffer and check the copy (`rttpeer::check_msg`:
//! the message size, both words), as a READ_SAMPLING_MESSAGE copies into the caller's buffer and
//! the partix classes check it; a sample that is not the awaited message, whole, ends the run
//! with an error (the echo of a handshake is the only one waited past).
//!
//! Prints one line per measured round trip: `<size> <ns>`; per size `# echo fifo F` (whether
//! the echo process ran under SCHED_FIFO: 1, or 0 when it was refused), and last `# fifo F` for
//! this process, which `partix bench rtt` reads for its header.
#![allow(unsafe_code)]

use iceoryx2::prelude::*;
use partix_bench::rttpeer::{check_msg, fifo_line, pin_to_cpu, set_fifo, stamp, PEER_FIFO};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Copy the payload of a received sample into `buf` (the message size); an error if it has
/// another length.
fn copy_out(p: &[u8], buf: &mut [u8]) -> Res<()> {
    if p.len() != buf.len() {
        return Err(format!(
            "a sample of {} bytes received, the message has {}",
            p.len(),
            buf.len()
        )
        .into());
    }
    buf.copy_from_slice(p);
    Ok(())
}

/// Whether `b` is the whole handshake message (sequence 0).
fn is_handshake(b: &[u8]) -> bool {
    check_msg(b, b.len(), 0).is_ok()
}

struct Ends {
    _node: Node<ipc::Service>,
    publisher: iceoryx2::port::publisher::Publisher<ipc::Service, [u8], ()>,
    subscriber: iceoryx2::port::subscriber::Subscriber<ipc::Service, [u8], ()>,
}

fn ends(tag: &str, size: usize, send: &str, recv: &str) -> Res<Ends> {
    let node = NodeBuilder::new().create::<ipc::Service>()?;
    let open = |which: &str| -> Res<_> {
        let name: ServiceName = format!("partix-rtt/{tag}/{size}/{which}")
            .as_str()
            .try_into()?;
        // Both processes open-or-create the same two services at once; iceoryx2 refuses an open
        // while the other process is still creating the service, so retry for a while (a run
        // failed that way once in three).
        let mut tries = 0;
        loop {
            match node
                .service_builder(&name)
                .publish_subscribe::<[u8]>()
                .max_publishers(1)
                .max_subscribers(1)
                .history_size(0)
                .subscriber_max_buffer_size(16)
                .open_or_create()
            {
                Ok(s) => return Ok(s),
                Err(e) if tries < 200 => {
                    tries += 1;
                    let _ = e;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => return Err(format!("service {which}: {e:?}").into()),
            }
        }
    };
    let tx = open(send)?;
    let rx = open(recv)?;
    let publisher = tx
        .publisher_builder()
        .initial_max_slice_len(size)
        .create()?;
    let subscriber = rx.subscriber_builder().create()?;
    Ok(Ends {
        _node: node,
        publisher,
        subscriber,
    })
}

fn send(e: &Ends, payload: &[u8]) -> Res<()> {
    let s = e.publisher.loan_slice_uninit(payload.len())?;
    s.write_from_slice(payload).send()?;
    Ok(())
}

/// The echo side: answer every sample until sequence `last` was echoed.
fn pong(tag: &str, size: usize, last: u64) -> Res<()> {
    pin_to_cpu(1)?;
    set_fifo(PEER_FIFO);
    // Whether SCHED_FIFO applied, for the measuring side to pass on (`# echo fifo`).
    let mut out = std::io::stdout().lock();
    out.write_all(fifo_line().as_bytes())?;
    out.flush()?;
    drop(out);
    let e = ends(tag, size, "pong", "ping")?;
    let mut buf = vec![0u8; size];
    let give_up = Instant::now() + Duration::from_secs(120);
    // The next message awaited; before message 1, handshakes (sequence 0) are echoed too.
    let mut next = 1u64;
    loop {
        match e.subscriber.receive()? {
            Some(sample) => {
                copy_out(sample.payload(), &mut buf)?;
                drop(sample);
                if !(next == 1 && is_handshake(&buf)) {
                    check_msg(&buf, size, next)?;
                    next += 1;
                }
                send(&e, &buf)?;
                if next > last {
                    // Stay a moment so the last echo is not lost with the publisher.
                    std::thread::sleep(Duration::from_millis(50));
                    return Ok(());
                }
            }
            None => {
                if Instant::now() > give_up {
                    return Err("no ping for too long".into());
                }
                std::hint::spin_loop();
            }
        }
    }
}

/// The measuring side for one size: the round trips, and the echo side's `# fifo` line.
fn ping(size: usize, iters: u64, warmup: u64) -> Res<(Vec<u64>, String)> {
    let tag = format!("{}", std::process::id());
    let total = warmup + iters;
    // Create both services here before the child opens them (creating them from both
    // processes at once can fail with HangsInCreation).
    let e = ends(&tag, size, "ping", "pong")?;
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .args(["pong", &tag, &size.to_string(), &total.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut msg = vec![0x5au8; size];
    // Handshake: send sequence 0 until its echo comes back (the subscriber of a late publisher
    // misses what was sent before it connected).
    let deadline = Instant::now() + Duration::from_secs(20);
    'hs: loop {
        stamp(&mut msg, 0);
        send(&e, &msg)?;
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(2) {
            if let Some(s) = e.subscriber.receive()? {
                if is_handshake(s.payload()) && s.payload().len() == size {
                    break 'hs;
                }
            }
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the pong process did not answer".into());
        }
    }
    // Drain the echoes of the repeated handshakes.
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(20) {
        let _ = e.subscriber.receive()?;
    }
    let mut out = Vec::with_capacity(iters as usize);
    // The echo is copied out whole before its sequence number is read, as an APEX read copies
    // the message into the caller's buffer (and as the pong side and every other class do).
    let mut buf = vec![0u8; size];
    for i in 1..=total {
        stamp(&mut msg, i);
        let t = Instant::now();
        send(&e, &msg)?;
        let mut empty = 0u32;
        loop {
            if let Some(s) = e.subscriber.receive()? {
                copy_out(s.payload(), &mut buf)?;
                drop(s);
                // The echo of a late handshake is waited past; anything else must be message i.
                if is_handshake(&buf) {
                    continue;
                }
                check_msg(&buf, size, i)?;
                break;
            }
            std::hint::spin_loop();
            empty = empty.wrapping_add(1);
            // Now and then (a wait that long is an outlier anyway): is the echo side still
            // there? It exits with an error when a message is wrong.
            if empty.is_multiple_of(1 << 16) {
                if let Some(st) = child.try_wait()? {
                    return Err(format!("the pong process exited with {st} (message {i})").into());
                }
            }
        }
        let dt = t.elapsed().as_nanos() as u64;
        if i > warmup {
            out.push(dt);
        }
    }
    let st = child.wait()?;
    if !st.success() {
        return Err(format!("pong process: {st}").into());
    }
    // Its one line (`# fifo F`), written at its start: the pipe held it.
    let mut echo = String::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut echo)?;
    }
    Ok((out, echo))
}

fn main() -> Res<()> {
    iceoryx2::prelude::set_log_level(iceoryx2::prelude::LogLevel::Error);
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("pong") {
        let [_, tag, size, last] = &args[..] else {
            return Err("usage: pong TAG SIZE LAST".into());
        };
        return pong(tag, size.parse()?, last.parse()?);
    }
    let mut sizes = vec![16usize, 56, 64, 256, 1024, 4096];
    let (mut iters, mut warmup) = (20_000u64, 2_000u64);
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        match k.as_str() {
            "--sizes" => {
                sizes = v
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(|_| format!("--sizes {v}"))?
            }
            "--iters" => iters = v.parse()?,
            "--warmup" => warmup = v.parse()?,
            _ => return Err(format!("unknown argument {k}").into()),
        }
    }
    if sizes.iter().any(|&s| s < 8) {
        return Err("sizes must be at least 8 bytes".into());
    }
    pin_to_cpu(0)?;
    set_fifo(PEER_FIFO);
    let mut out = String::new();
    for size in sizes {
        eprintln!("iceoryx2_rtt: {size} B");
        let (samples, echo) = ping(size, iters, warmup)?;
        for v in samples {
            out.push_str(&format!("{size} {v}\n"));
        }
        if let Some(f) = echo.lines().find_map(|l| l.strip_prefix("# fifo ")) {
            out.push_str(&format!("# echo fifo {}\n", f.trim()));
        }
    }
    // Whether this (the measuring) process ran under SCHED_FIFO.
    out.push_str(&fifo_line());
    print!("{out}");
    Ok(())
}

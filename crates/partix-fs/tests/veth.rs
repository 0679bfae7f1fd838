//! Real round trips across two network namespaces joined by a veth pair: the server is a
//! process in one namespace, the client runs in the other.

mod common;

use common::*;
use partix_fs::client::{Client, ClientConfig, FsError};
use partix_fs::fault::FaultConfig;
use partix_fs::transport::RecvMode;
use partix_wire::fs::{open_flags as of, ErrorCode, FileKind};
use std::time::Duration;

#[test]
fn every_operation_round_trips_over_af_packet() {
    let net = Net::new();
    let server = net.serve(&[]);
    every_operation_round_trips(&net, server, net.client());
}

#[test]
fn every_operation_round_trips_through_receive_rings_busy_polled() {
    let net = Net::new();
    let server = net.serve(&["--ring", "--mode", "busy"]);
    every_operation_round_trips(&net, server, net.ring_client(RecvMode::Busy));
}

#[test]
fn every_operation_round_trips_through_receive_rings_blocking() {
    let net = Net::new();
    let server = net.serve(&["--ring"]);
    every_operation_round_trips(&net, server, net.ring_client(RecvMode::Block));
}

/// Ring and socket ends speak the same frames: a ring server answers a socket client in every
/// mode and the other way round.
#[test]
fn ring_and_socket_ends_interoperate() {
    let net = Net::new();
    std::fs::write(net.root.join("f"), b"mixed ends").unwrap();
    for (server_args, ring_client) in [
        (&["--ring", "--mode", "spin"][..], false),
        (&["--mode", "busy"][..], true),
    ] {
        let server = net.serve(server_args);
        for mode in [RecvMode::Busy, RecvMode::Spin, RecvMode::Block] {
            let mut c = if ring_client {
                net.ring_client(mode)
            } else {
                let cfg = ClientConfig {
                    mode,
                    ..ClientConfig::default()
                };
                net.client_with(cfg, None).unwrap()
            };
            let fd = c.open("f", of::RDONLY, 0).unwrap();
            let mut b = [0u8; 32];
            assert_eq!(
                c.read(fd, Some(0), &mut b).unwrap(),
                10,
                "{server_args:?} {mode:?}"
            );
            assert_eq!(&b[..10], b"mixed ends");
            c.close(fd).unwrap();
            c.disconnect().unwrap();
        }
        let log = server.stop();
        assert_eq!(counter(&log, "errors"), 0, "{log}");
    }
}

/// Faults on both sides through receive rings: appends applied exactly once, reads intact.
#[test]
fn faults_through_receive_rings_leave_writes_exactly_once() {
    let net = Net::new();
    let server = net.serve(&[
        "--ring",
        "--mode",
        "busy",
        "--fault",
        "drop=0.15,dup=0.15,reorder=0.1,delay=0.1,max-delay-us=3000,seed=11",
    ]);
    let cfg = ClientConfig {
        mode: RecvMode::Busy,
        rto_min: Duration::from_millis(2),
        max_retries: 30,
        ..ClientConfig::default()
    };
    let fault =
        FaultConfig::parse("drop=0.15,dup=0.15,reorder=0.1,delay=0.1,max-delay-us=3000,seed=12")
            .unwrap();
    let mut c = net.ring_client_with(cfg, Some(fault));
    let fd = c
        .open("log", of::WRONLY | of::CREAT | of::APPEND, 0o644)
        .unwrap();
    for i in 0..100u32 {
        assert_eq!(c.write(fd, None, &i.to_be_bytes()).unwrap(), 4);
    }
    c.close(fd).unwrap();
    let log: Vec<u8> = (0..100u32).flat_map(|i| i.to_be_bytes()).collect();
    assert_eq!(std::fs::read(net.root.join("log")).unwrap(), log);
    let big = pattern(128 * 1024, 5);
    std::fs::write(net.root.join("big"), &big).unwrap();
    let fd = c.open("big", of::RDONLY, 0).unwrap();
    let mut back = vec![0u8; big.len()];
    assert_eq!(c.read(fd, Some(0), &mut back).unwrap(), big.len());
    assert_eq!(back, big);
    c.close(fd).unwrap();
    let stderr = server.stop();
    assert!(counter(&stderr, "duplicates") > 0, "{stderr}");
}

fn every_operation_round_trips(net: &Net, server: ServerProc, mut c: Client) {
    std::fs::create_dir(net.root.join("sub")).unwrap();
    std::fs::write(net.root.join("sub/hello.txt"), b"hello world\n").unwrap();
    assert_eq!(c.msize(), 1500);
    assert!(c.outstanding() >= 1);

    // stat + readdir
    let a = c.stat("sub/hello.txt").unwrap();
    assert_eq!(a.kind, FileKind::File);
    assert_eq!(a.size, 12);
    let d = c.readdir("/").unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].name, "sub");
    assert_eq!(d[0].kind, FileKind::Dir);

    // open/read/close
    let fd = c.open("sub/hello.txt", of::RDONLY, 0).unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(c.read(fd, Some(0), &mut buf).unwrap(), 12);
    assert_eq!(&buf[..12], b"hello world\n");
    assert_eq!(c.read(fd, Some(6), &mut buf).unwrap(), 6);
    assert_eq!(&buf[..6], b"world\n");
    // Reading at the current position advances it.
    assert_eq!(c.read(fd, None, &mut buf[..5]).unwrap(), 5);
    assert_eq!(c.read(fd, None, &mut buf[..5]).unwrap(), 5);
    assert_eq!(&buf[..5], b" worl");
    c.close(fd).unwrap();
    assert!(matches!(c.close(fd), Err(FsError::Remote(ErrorCode::BADF))));

    // create + write + read back
    let fd = c
        .open("new.bin", of::RDWR | of::CREAT | of::EXCL, 0o600)
        .unwrap();
    assert_eq!(c.write(fd, Some(0), b"0123456789").unwrap(), 10);
    assert_eq!(c.write(fd, Some(3), b"abc").unwrap(), 3);
    assert_eq!(c.read(fd, Some(0), &mut buf).unwrap(), 10);
    assert_eq!(&buf[..10], b"012abc6789");
    c.close(fd).unwrap();
    assert_eq!(
        std::fs::read(net.root.join("new.bin")).unwrap(),
        b"012abc6789"
    );
    assert!(matches!(
        c.open("new.bin", of::RDWR | of::CREAT | of::EXCL, 0o600),
        Err(FsError::Remote(ErrorCode::EXIST))
    ));
    assert!(matches!(
        c.stat("missing"),
        Err(FsError::Remote(ErrorCode::NOENT))
    ));

    // flush of a tag that is not pending
    assert!(!c.flush(12345).unwrap());

    // Large files: split, pipelined reads and writes.
    let big = pattern(1 << 20, 3);
    let fd = c
        .open("big.bin", of::RDWR | of::CREAT | of::TRUNC, 0o644)
        .unwrap();
    assert_eq!(c.write(fd, Some(0), &big).unwrap(), big.len());
    let mut back = vec![0u8; big.len() + 4096];
    assert_eq!(c.read(fd, Some(0), &mut back).unwrap(), big.len());
    assert_eq!(&back[..big.len()], &big[..]);
    // Atomic write of 100 KiB over the start.
    let patch = pattern(100 * 1024, 9);
    assert_eq!(c.write_atomic(fd, Some(0), &patch).unwrap(), patch.len());
    assert_eq!(c.write_atomic(fd, Some(0), b"").unwrap(), 0);
    c.close(fd).unwrap();
    let on_disk = std::fs::read(net.root.join("big.bin")).unwrap();
    assert_eq!(&on_disk[..patch.len()], &patch[..]);
    assert_eq!(&on_disk[patch.len()..], &big[patch.len()..]);

    // Many entries: readdir spans several replies.
    for i in 0..200 {
        std::fs::write(
            net.root.join(format!("sub/file-with-a-long-name-{i:04}")),
            b"",
        )
        .unwrap();
    }
    assert_eq!(c.readdir("sub").unwrap().len(), 201);

    let log = server.stop();
    assert!(counter(&log, "requests") > 20, "{log}");
}

#[test]
fn every_operation_round_trips_over_udp() {
    let net = Net::new();
    std::fs::write(net.root.join("f"), b"udp data").unwrap();
    let _server = net.serve_udp(&[]);
    let mut c = net.udp_client();
    assert_eq!(c.stat("f").unwrap().size, 8);
    assert_eq!(c.readdir("").unwrap()[0].name, "f");
    let fd = c.open("f", of::RDWR, 0).unwrap();
    let mut b = [0u8; 16];
    assert_eq!(c.read(fd, Some(0), &mut b).unwrap(), 8);
    let big = pattern(300_000, 1);
    assert_eq!(c.write(fd, Some(0), &big).unwrap(), big.len());
    let mut back = vec![0u8; big.len()];
    assert_eq!(c.read(fd, Some(0), &mut back).unwrap(), big.len());
    assert_eq!(back, big);
    c.close(fd).unwrap();
}

#[test]
fn paths_cannot_escape_the_root() {
    let net = Net::new();
    // Outside the export, inside the test's scratch area (removed with `net`).
    let outside = net.root.with_extension("outside");
    std::fs::write(&outside, b"secret").unwrap();
    struct RmFile(std::path::PathBuf);
    impl Drop for RmFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _rm = RmFile(outside.clone());
    std::os::unix::fs::symlink(&outside, net.root.join("link-out")).unwrap();
    std::os::unix::fs::symlink("/etc", net.root.join("etc-link")).unwrap();
    std::fs::create_dir(net.root.join("d")).unwrap();
    let _server = net.serve(&[]);
    let mut c = net.client();
    for p in [
        "..",
        "../etc/passwd",
        "d/../../etc/passwd",
        "link-out",
        "etc-link/passwd",
    ] {
        match c.open(p, of::RDONLY, 0) {
            Err(FsError::Remote(ErrorCode::XDEV)) => {}
            other => panic!("open {p}: {other:?}"),
        }
        assert!(
            matches!(c.stat(p), Err(FsError::Remote(ErrorCode::XDEV))),
            "stat {p}"
        );
    }
    assert!(matches!(
        c.readdir(".."),
        Err(FsError::Remote(ErrorCode::XDEV))
    ));
    assert!(matches!(
        c.open("../created-outside", of::WRONLY | of::CREAT, 0o644),
        Err(FsError::Remote(ErrorCode::XDEV))
    ));
    // An absolute path sent as is (the library strips the leading `/`; a raw frame does not).
    let tag = c.peek_tag();
    c.skip_tags(1);
    let mut msg = [0u8; 64];
    let n = partix_wire::fs::MessageRepr {
        tag,
        body: partix_wire::fs::BodyRepr::Open(partix_wire::fs::OpenRepr {
            flags: of::RDONLY,
            mode: 0,
            path: outside.to_str().unwrap().as_bytes(),
        }),
    }
    .emit(&mut msg)
    .unwrap();
    assert_eq!(
        c.raw_call(&msg[..n], tag, Duration::from_secs(5)).unwrap(),
        ErrorCode::XDEV
    );
    // Staying inside through `..` is fine.
    std::fs::write(net.root.join("top"), b"t").unwrap();
    assert_eq!(c.stat("d/../top").unwrap().size, 1);
    assert!(!net.root.parent().unwrap().join("created-outside").exists());
}

#[test]
fn descriptor_and_client_limits_hold() {
    let net = Net::new();
    std::fs::write(net.root.join("f"), b"x").unwrap();
    let _server = net.serve(&["--max-fds", "4", "--max-clients", "2"]);
    let mut c1 = net.client();
    assert_eq!(c1.max_fds(), 4);
    let fds: Vec<u32> = (0..4)
        .map(|_| c1.open("f", of::RDONLY, 0).unwrap())
        .collect();
    assert!(matches!(
        c1.open("f", of::RDONLY, 0),
        Err(FsError::Remote(ErrorCode::MFILE))
    ));
    c1.close(fds[2]).unwrap();
    assert_eq!(c1.open("f", of::RDONLY, 0).unwrap(), fds[2]);
    // Descriptor tables are per client: another client cannot use c1's descriptors.
    let mut c2 = net.client();
    let mut b = [0u8; 1];
    assert!(matches!(
        c2.read(fds[0], Some(0), &mut b),
        Err(FsError::Remote(ErrorCode::BADF))
    ));
    let fd2 = c2.open("f", of::RDONLY, 0).unwrap();
    assert_eq!(c2.read(fd2, Some(0), &mut b).unwrap(), 1);
    // A third client is refused while both sessions are live.
    match net.client_with(ClientConfig::default(), None) {
        Err(FsError::Remote(ErrorCode::BUSY)) => {}
        Err(e) => panic!("third client: {e}"),
        Ok(_) => panic!("third client was admitted"),
    }
    // Ending a session frees its slot (and closes its descriptors).
    c2.disconnect().unwrap();
    let mut c3 = net.client();
    let fd3 = c3.open("f", of::RDONLY, 0).unwrap();
    assert_eq!(c3.read(fd3, Some(0), &mut b).unwrap(), 1);
    drop(c3);
    // Dropping a client ends its session too.
    let _c4 = net.client();
}

#[test]
fn faults_leave_writes_applied_exactly_once_and_reads_correct() {
    let net = Net::new();
    std::fs::write(net.root.join("log"), b"").unwrap();
    let server = net.serve(&[
        "--fault",
        "drop=0.15,dup=0.15,reorder=0.1,delay=0.1,max-delay-us=3000,seed=11",
    ]);
    let cfg = ClientConfig {
        rto_min: Duration::from_millis(2),
        max_retries: 30,
        ..ClientConfig::default()
    };
    let fault = FaultConfig {
        seed: 5,
        drop: 0.15,
        duplicate: 0.15,
        reorder: 0.1,
        delay: 0.1,
        max_delay: Duration::from_millis(3),
    };
    let mut c = net
        .client_with(cfg, Some(fault))
        .expect("connect through faults");
    // Appends are not idempotent: a write applied twice would show as a repeated record.
    let fd = c.open("log", of::WRONLY | of::APPEND, 0).unwrap();
    let mut expect = Vec::new();
    for i in 0..300 {
        let rec = format!("record {i:05}\n");
        assert_eq!(c.write(fd, None, rec.as_bytes()).unwrap(), rec.len());
        expect.extend_from_slice(rec.as_bytes());
    }
    c.close(fd).unwrap();
    assert_eq!(
        String::from_utf8(std::fs::read(net.root.join("log")).unwrap()).unwrap(),
        String::from_utf8(expect).unwrap()
    );

    // Split, pipelined writes and reads of a large file through the same faults.
    let big = pattern(512 * 1024, 7);
    let fd = c.open("big", of::RDWR | of::CREAT, 0o644).unwrap();
    assert_eq!(c.write(fd, Some(0), &big).unwrap(), big.len());
    let mut back = vec![0u8; big.len()];
    assert_eq!(c.read(fd, Some(0), &mut back).unwrap(), big.len());
    assert!(back == big, "read data differs");
    // An atomic append is applied once and whole.
    let blob = pattern(64 * 1024, 2);
    let log_fd = c.open("log", of::WRONLY | of::APPEND, 0).unwrap();
    assert_eq!(c.write_atomic(log_fd, None, &blob).unwrap(), blob.len());
    c.close(log_fd).unwrap();
    c.close(fd).unwrap();
    assert_eq!(std::fs::read(net.root.join("big")).unwrap(), big);
    let log = std::fs::read(net.root.join("log")).unwrap();
    assert_eq!(log.len(), 300 * 13 + blob.len());
    assert_eq!(&log[300 * 13..], &blob[..]);

    let counters = c.counters();
    assert!(counters.retransmits > 0, "{counters:?}");
    let log = server.stop();
    assert!(counter(&log, "duplicates") > 0, "{log}");
}

#[test]
fn parked_device_read_completes_or_is_flushed() {
    let net = Net::new();
    let fifo = net.root.join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let _server = net.serve(&[]);
    let mut c = net.client();
    let rd = c.open("fifo", of::RDONLY, 0).unwrap();
    let wr = c.open("fifo", of::WRONLY, 0).unwrap();
    assert_eq!(c.stat("fifo").unwrap().kind, FileKind::Fifo);
    // Data present: the read returns it.
    assert_eq!(c.write(wr, None, b"ping").unwrap(), 4);
    let mut b = [0u8; 16];
    assert_eq!(c.read(rd, None, &mut b).unwrap(), 4);
    assert_eq!(&b[..4], b"ping");
    // A non-blocking open fails at once with AGAIN when there is no data.
    let nb = c.open("fifo", of::RDONLY | of::NONBLOCK, 0).unwrap();
    assert!(matches!(
        c.read(nb, None, &mut b),
        Err(FsError::Remote(ErrorCode::AGAIN))
    ));
    // A blocking read with no data parks on the server: no reply until data comes or a Flush
    // cancels it; a retransmission is answered "in progress" (the client library then keeps
    // waiting instead of giving up).
    let mut quick = net.client();
    let rd2 = quick.open("fifo", of::RDONLY, 0).unwrap();
    let parked_tag = quick.peek_tag();
    quick.skip_tags(1);
    let mut msg = [0u8; 64];
    let n = partix_wire::fs::MessageRepr {
        tag: parked_tag,
        body: partix_wire::fs::BodyRepr::Read(partix_wire::fs::ReadRepr {
            fd: rd2,
            len: 16,
            offset: None,
        }),
    }
    .emit(&mut msg)
    .unwrap();
    assert!(matches!(
        quick.raw_call(&msg[..n], parked_tag, Duration::from_millis(200)),
        Err(FsError::Timeout)
    ));
    assert_eq!(
        quick
            .raw_call(&msg[..n], parked_tag, Duration::from_secs(5))
            .unwrap(),
        ErrorCode::INPROGRESS
    );
    // A Flush cancels it; flushing again finds nothing pending; a late copy gets CANCELED.
    assert!(quick.flush(parked_tag).unwrap());
    assert!(!quick.flush(parked_tag).unwrap());
    assert_eq!(
        quick
            .raw_call(&msg[..n], parked_tag, Duration::from_secs(5))
            .unwrap(),
        ErrorCode::CANCELED
    );
    // A parked read completes when a writer delivers data (the reader waits on another thread,
    // with the default, patient retransmission budget: a loaded machine may take a while).
    drop(quick);
    let mut patient = net.client();
    let rd3 = patient.open("fifo", of::RDONLY, 0).unwrap();
    let reader = std::thread::spawn(move || {
        let mut c = patient;
        let mut b = [0u8; 16];
        let got = c.read(rd3, None, &mut b);
        (got.map(|n| b[..n].to_vec()), c)
    });
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(c.write(wr, None, b"late").unwrap(), 4);
    let (got, _patient) = reader.join().unwrap();
    assert_eq!(got.unwrap(), b"late");
    c.close(wr).unwrap();
}

#[test]
fn cli_ls_cat_put_stat_work_against_a_server() {
    let net = Net::new();
    std::fs::create_dir(net.root.join("dir")).unwrap();
    std::fs::write(net.root.join("dir/a.txt"), b"alpha\n").unwrap();
    let _server = net.serve(&[]);
    let run = |args: &[&str], stdin: Option<&[u8]>| {
        use std::io::Write;
        let mut cmd = std::process::Command::new("nsenter");
        cmd.arg(format!("--net=/run/netns/{}", net.pair.ns_a))
            .arg(tool())
            .arg(args[0])
            .args([
                "--iface",
                &net.pair.if_a,
                "--server",
                &net.pair.mac_b.to_string(),
            ])
            .args(&args[1..])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(data) = stdin {
            input.write_all(data).unwrap();
        }
        drop(input);
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, out, err) = run(&["ls", "/"], None);
    assert!(ok, "{err}");
    assert_eq!(out, "d dir\n");
    let (ok, out, err) = run(&["cat", "dir/a.txt"], None);
    assert!(ok, "{err}");
    assert_eq!(out, "alpha\n");
    // The receive ring and the wait modes are chosen on the command line.
    for mode in ["busy", "spin", "block"] {
        let (ok, out, err) = run(&["cat", "--ring", "--mode", mode, "dir/a.txt"], None);
        assert!(ok, "--ring --mode {mode}: {err}");
        assert_eq!(out, "alpha\n");
    }
    let (ok, _, err) = run(&["cat", "--mode", "fast", "dir/a.txt"], None);
    assert!(!ok);
    assert!(err.contains("use busy, spin or block"), "{err}");
    let big = pattern(100_000, 5);
    let (ok, _, err) = run(&["put", "-", "dir/b.bin", "--atomic"], Some(&big));
    assert!(ok, "{err}");
    assert_eq!(std::fs::read(net.root.join("dir/b.bin")).unwrap(), big);
    let (ok, out, err) = run(&["stat", "dir/b.bin"], None);
    assert!(ok, "{err}");
    assert!(out.contains("size 100000"), "{out}");
    // Errors say what went wrong.
    let (ok, _, err) = run(&["cat", "../etc/passwd"], None);
    assert!(!ok);
    assert!(err.contains("escapes the exported root"), "{err}");
}

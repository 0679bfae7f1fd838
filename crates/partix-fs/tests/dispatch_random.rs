//! Thousands of seeded random and mutated frames straight into the server's dispatch: no panic,
//! every reply is a well-formed Reply, and the error counters move.

use partix_fs::fault::Rng;
use partix_fs::server::{Server, ServerConfig};
use partix_fs::transport::PeerAddr;
use partix_wire::ethernet::EthernetAddress;
use partix_wire::fs::*;

/// Removes the scratch export even when an assertion fails.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn emit(m: MessageRepr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; m.buffer_len()];
    m.emit(&mut b).unwrap();
    b
}

#[test]
fn random_frames_never_crash_dispatch_and_are_counted() {
    let root = std::env::temp_dir().join(format!("pfs-dispatch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let _scratch = Scratch(root.clone());
    std::fs::create_dir_all(root.join("d")).unwrap();
    std::fs::write(root.join("f"), b"0123456789").unwrap();
    let mut cfg = ServerConfig::new(&root);
    cfg.max_fds = 8;
    let mut server = Server::new(cfg).unwrap();
    let peer = PeerAddr::Mac(EthernetAddress([2, 0, 0, 0, 0, 1]));
    let mut out = vec![0u8; 1500];

    // Open a session so mutated requests reach the handlers.
    let v = emit(MessageRepr {
        tag: 77,
        body: BodyRepr::Version(VersionRepr {
            version: 1,
            channel: 0,
            msize: 1500,
            outstanding: 8,
            max_fds: 0,
        }),
    });
    let n = server.handle(&peer, &v, v.len(), &mut out).unwrap();
    let p = FsPacket::new_checked(&out[..n]).unwrap();
    let ch = VersionRepr::parse(
        &VersionPacket::new_checked(ReplyPacket::new_checked(p.body()).unwrap().data()).unwrap(),
    )
    .unwrap()
    .channel;
    let base = u32::from(ch) << TAG_CHANNEL_SHIFT;

    let seeds: Vec<Vec<u8>> = vec![
        emit(MessageRepr {
            tag: base | 1,
            body: BodyRepr::Open(OpenRepr {
                flags: 2,
                mode: 0o644,
                path: b"f",
            }),
        }),
        emit(MessageRepr {
            tag: base | 2,
            body: BodyRepr::Read(ReadRepr {
                fd: 0,
                len: 64,
                offset: Some(0),
            }),
        }),
        emit(MessageRepr {
            tag: base | 3,
            body: BodyRepr::Write(WriteRepr {
                fd: 0,
                flags: 1,
                offset: Some(0),
                data: b"zz",
            }),
        }),
        emit(MessageRepr {
            tag: base | 4,
            body: BodyRepr::Commit(CommitRepr {
                fd: 0,
                flags: 0,
                offset: Some(0),
                len: 2,
            }),
        }),
        emit(MessageRepr {
            tag: base | 5,
            body: BodyRepr::Stat(StatRepr { path: b"d" }),
        }),
        emit(MessageRepr {
            tag: base | 6,
            body: BodyRepr::Readdir(ReaddirRepr {
                cookie: 0,
                path: b"",
            }),
        }),
        emit(MessageRepr {
            tag: base | 7,
            body: BodyRepr::Flush(FlushRepr { oldtag: 1 }),
        }),
        emit(MessageRepr {
            tag: base | 8,
            body: BodyRepr::Close(CloseRepr { fd: 0 }),
        }),
    ];
    let mut rng = Rng::new(2024);
    let mut seq = 100u32;
    let mut escapes_refused = 0u32;
    for i in 0..5000u32 {
        let mut f = if i % 4 == 0 {
            let n = rng.below(200) as usize;
            (0..n).map(|_| rng.next_u64() as u8).collect::<Vec<u8>>()
        } else {
            let mut f = seeds[rng.below(seeds.len() as u64) as usize].clone();
            for _ in 0..rng.below(4) {
                let at = rng.below(f.len() as u64) as usize;
                f[at] = rng.next_u64() as u8;
            }
            if rng.below(3) == 0 {
                f.truncate(rng.below(f.len() as u64 + 1) as usize);
            }
            f
        };
        // Fresh in-session tags for most frames (mutation may have changed the opcode; fine).
        if f.len() >= 6 && i % 5 != 0 {
            seq += 1;
            f[2..6].copy_from_slice(&(base | seq).to_be_bytes());
        }
        // Paths must never escape: mutate some into escapes.
        if i % 50 == 0 {
            f = emit(MessageRepr {
                tag: base | {
                    seq += 1;
                    seq
                },
                body: BodyRepr::Open(OpenRepr {
                    flags: 0,
                    mode: 0,
                    path: b"../../etc/passwd",
                }),
            });
        }
        let wire_len = if i % 97 == 0 { f.len() + 5000 } else { f.len() };
        if let Some(n) = server.handle(&peer, &f, wire_len, &mut out) {
            let p = FsPacket::new_checked(&out[..n]).expect("reply has a header");
            assert_eq!(p.opcode(), Opcode::Reply);
            let rp = ReplyPacket::new_checked(p.body()).expect("reply body is whole");
            if i % 50 == 0 && wire_len == f.len() {
                // Refused: escaping path, or the descriptor table is already full, or (a
                // mutated tag moved the session's highest tag ahead) outside its window.
                assert!(
                    matches!(
                        rp.error(),
                        ErrorCode::XDEV | ErrorCode::MFILE | ErrorCode::NOTCONN
                    ),
                    "{:?}",
                    rp.error()
                );
                escapes_refused += u32::from(rp.error() == ErrorCode::XDEV);
            }
        }
    }
    let c = server.counters();
    assert!(
        escapes_refused >= 10,
        "{escapes_refused} escapes reached the handler"
    );
    assert!(c.frames >= 5000, "{c}");
    assert!(c.drops > 0 && c.errors > 100 && c.malformed > 10, "{c}");
    assert!(c.unknown_opcode > 100 && c.oversized > 10, "{c}");
    // Duplicates: see the next test (here the tags are fresh or stale, and error replies to
    // frames refused before the tag check, unknown opcodes and oversized, are not cached).
    assert!(c.requests > 300 && c.stale > 0, "{c}");
    // The file is still there (mutated writes may have made it sparse and huge: only stat it).
    assert!(std::fs::metadata(root.join("f")).unwrap().is_file());
}

#[test]
fn dispatch_table_handles_each_opcode_once_in_order() {
    // A retransmitted non-idempotent request (append) is answered from the cache, not re-run.
    let root = std::env::temp_dir().join(format!("pfs-dispatch-once-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let _scratch = Scratch(root.clone());
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("log"), b"").unwrap();
    let mut server = Server::new(ServerConfig::new(&root)).unwrap();
    let peer = PeerAddr::Mac(EthernetAddress([2, 0, 0, 0, 0, 2]));
    let mut out = vec![0u8; 1500];
    let v = emit(MessageRepr {
        tag: 5,
        body: BodyRepr::Version(VersionRepr {
            version: 1,
            channel: 0,
            msize: 1500,
            outstanding: 4,
            max_fds: 0,
        }),
    });
    let n1 = server.handle(&peer, &v, v.len(), &mut out).unwrap();
    let first = out[..n1].to_vec();
    // A duplicate Version gets the same reply and does not open a second session.
    let n2 = server.handle(&peer, &v, v.len(), &mut out).unwrap();
    assert_eq!(&out[..n2], &first[..]);
    assert_eq!(server.clients(), 1);
    let open = emit(MessageRepr {
        tag: 10,
        body: BodyRepr::Open(OpenRepr {
            flags: open_flags::WRONLY | open_flags::APPEND,
            mode: 0,
            path: b"log",
        }),
    });
    server.handle(&peer, &open, open.len(), &mut out).unwrap();
    let w = emit(MessageRepr {
        tag: 11,
        body: BodyRepr::Write(WriteRepr {
            fd: 0,
            flags: 0,
            offset: None,
            data: b"once\n",
        }),
    });
    for _ in 0..5 {
        server.handle(&peer, &w, w.len(), &mut out).unwrap();
    }
    assert_eq!(std::fs::read(root.join("log")).unwrap(), b"once\n");
    assert_eq!(server.counters().duplicates, 5);
}

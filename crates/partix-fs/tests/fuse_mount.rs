//! The FUSE mount: unmodified programs (cp, cmp, head) use remote files and a remote device
//! node through `partix-fs-tool mount` running in the client namespace.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Mount {
    child: Child,
    dir: PathBuf,
}

impl Mount {
    fn mounted(dir: &Path) -> bool {
        std::fs::read_to_string("/proc/self/mounts")
            .map(|m| {
                m.lines()
                    .any(|l| l.split_whitespace().nth(1) == Some(dir.to_str().unwrap()))
            })
            .unwrap_or(false)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("fusermount3")
            .arg("-u")
            .arg(&self.dir)
            .status();
        if Mount::mounted(&self.dir) {
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

fn sh(cmd: &str, args: &[&Path]) -> std::process::Output {
    Command::new(cmd).args(args).output().unwrap()
}

#[test]
fn cp_and_cmp_round_trip_through_the_mount() {
    let net = Net::new();
    // A device node in the export: the remote /dev/zero.
    let mk = Command::new("mknod")
        .arg(net.root.join("zero"))
        .args(["c", "1", "5"])
        .status()
        .unwrap();
    assert!(mk.success());
    std::fs::create_dir(net.root.join("sub")).unwrap();
    let _server = net.serve(&[]);

    let dir = std::env::temp_dir().join(format!("pfs-mnt-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let child = Command::new("nsenter")
        .arg(format!("--net=/run/netns/{}", net.pair.ns_a))
        .arg(tool())
        .arg("mount")
        .arg(&net.pair.if_a)
        .arg(net.pair.mac_b.to_string())
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut m = Mount {
        child,
        dir: dir.clone(),
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !Mount::mounted(&dir) {
        assert!(Instant::now() < deadline, "mount did not appear");
        assert!(
            m.child.try_wait().unwrap().is_none(),
            "mount process exited"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // cp a local file in, compare on the server side and through the mount.
    let local = std::env::temp_dir().join(format!("pfs-local-{}", std::process::id()));
    let data = pattern(3 * 1024 * 1024 + 123, 8);
    std::fs::write(&local, &data).unwrap();
    let remote = dir.join("sub/copy.bin");
    let out = sh("cp", &[&local, &remote]);
    assert!(
        out.status.success(),
        "cp in: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(net.root.join("sub/copy.bin")).unwrap(), data);
    let out = sh("cmp", &[&local, &remote]);
    assert!(
        out.status.success(),
        "cmp: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // cp it back out and compare.
    let back = std::env::temp_dir().join(format!("pfs-back-{}", std::process::id()));
    assert!(sh("cp", &[&remote, &back]).status.success());
    assert!(sh("cmp", &[&local, &back]).status.success());
    // Overwrite with a shorter file: cp truncates through the mount.
    std::fs::write(&local, b"short").unwrap();
    assert!(sh("cp", &[&local, &remote]).status.success());
    assert_eq!(
        std::fs::read(net.root.join("sub/copy.bin")).unwrap(),
        b"short"
    );

    // ls sees the entries; the remote device reads as a file.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.contains(&"zero".to_string()) && names.contains(&"sub".to_string()),
        "{names:?}"
    );
    let out = Command::new("head")
        .args(["-c", "5000"])
        .arg(dir.join("zero"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout.len(), 5000);
    assert!(out.stdout.iter().all(|&b| b == 0));

    let _ = std::fs::remove_file(&local);
    let _ = std::fs::remove_file(&back);
    drop(m);
}

/// Mount the export served on `net` on a fresh directory named after `tag`.
fn start_mount(net: &Net, tag: &str) -> Mount {
    let dir = std::env::temp_dir().join(format!("pfs-mnt-{tag}-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let child = Command::new("nsenter")
        .arg(format!("--net=/run/netns/{}", net.pair.ns_a))
        .arg(tool())
        .arg("mount")
        .arg(&net.pair.if_a)
        .arg(net.pair.mac_b.to_string())
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut m = Mount { child, dir };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !Mount::mounted(&m.dir) {
        assert!(Instant::now() < deadline, "mount did not appear");
        assert!(
            m.child.try_wait().unwrap().is_none(),
            "mount process exited"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    m
}

/// A read of a remote FIFO that waits for data (a writer holds it open and writes nothing)
/// does not stall the mount: other files can still be looked up and read meanwhile.
#[test]
fn a_waiting_fifo_read_does_not_stall_the_mount() {
    use std::io::Write;
    let net = Net::new();
    let fifo = net.root.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    std::fs::write(net.root.join("other"), b"other data").unwrap();
    let _server = net.serve(&[]);
    // A writer on the server side that writes nothing yet (O_RDWR: opening does not wait).
    let mut writer = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let m = start_mount(&net, "fifo");
    let mut cat = Command::new("cat")
        .arg(m.dir.join("fifo"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Let cat's read reach the server and park there.
    std::thread::sleep(Duration::from_millis(500));
    assert!(cat.try_wait().unwrap().is_none(), "cat ended early");
    let other = m.dir.join("other");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = std::fs::metadata(&other)
            .and_then(|_| std::fs::read(&other))
            .map_err(|e| e.to_string());
        let _ = tx.send(r);
    });
    let got = rx.recv_timeout(Duration::from_secs(5));
    // Let cat finish either way: data, then end of file once the writer has gone.
    writer.write_all(b"bye").unwrap();
    drop(writer);
    let out = cat.wait_with_output().unwrap();
    assert_eq!(
        got.expect("stat and read of another file hung behind the FIFO read"),
        Ok(b"other data".to_vec())
    );
    assert_eq!(out.stdout, b"bye");
    drop(m);
}

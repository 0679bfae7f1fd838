//! FUSE mount: unmodified programs open, read, write and close remote files and devices.
//!
//! Inode numbers are local (1 = the exported root); each maps to a root-relative path. Device
//! nodes and FIFOs on the server appear as regular files opened in direct-I/O mode, so reads and
//! writes reach the remote device (a local device node with the same number would be wrong).
//! Truncation to zero (as `cp` and `>` do) is an Open with TRUNC; other sizes are refused.
//!
//! fuser runs the filesystem on one thread. A read of a remote FIFO or device may wait for data
//! without end (the server parks it), so when [`RemoteFs::with_connector`] gives a way to open
//! sessions, each open device or FIFO gets its own session and worker thread: its reads and
//! writes are answered from there, and the mount goes on serving other requests meanwhile.

use crate::cli::MountArgs;
use crate::client::{Attr, Client};
use anyhow::Context;
use fuser::{
    FileAttr, FileType, Filesystem, MountOption, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory,
    ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow,
};
use partix_wire::fs::{open_flags, FileKind};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TTL: Duration = Duration::from_secs(1);
const ROOT_INO: u64 = 1;

/// Opens a new session with the server (for [`RemoteFs::with_connector`]).
pub type Connector = Box<dyn FnMut() -> anyhow::Result<Client> + Send>;

/// File handles at or above this are served by a worker (their own session); below it they are
/// descriptors of the main session.
const WORKER_FH_BASE: u64 = 1 << 32;

/// An open file.
enum Handle {
    /// A descriptor of the main session, served on the FUSE thread; whether the remote file is
    /// regular (seekable).
    Inline { regular: bool },
    /// A device or FIFO served by its own session on a worker thread.
    Worker(Sender<Job>),
}

/// A request for a worker; the worker replies.
enum Job {
    Read { size: u32, reply: ReplyData },
    Write { data: Vec<u8>, reply: ReplyWrite },
    Close { reply: ReplyEmpty },
}

/// Serve one device or FIFO descriptor `fd` of the session `c` until it is closed (or the
/// mount ends), then end the session.
fn serve_handle(mut c: Client, fd: u32, jobs: Receiver<Job>) {
    for job in jobs {
        match job {
            Job::Read { size, reply } => {
                let mut buf = vec![0u8; size as usize];
                match c.read(fd, None, &mut buf) {
                    Ok(n) => reply.data(&buf[..n]),
                    Err(e) => reply.error(e.errno()),
                }
            }
            Job::Write { data, reply } => match c.write(fd, None, &data) {
                Ok(n) => reply.written(n as u32),
                Err(e) => reply.error(e.errno()),
            },
            Job::Close { reply } => {
                match c.close(fd) {
                    Ok(()) => reply.ok(),
                    Err(e) => reply.error(e.errno()),
                }
                break;
            }
        }
    }
    let _ = c.disconnect();
}

/// A FUSE filesystem backed by a [`Client`].
pub struct RemoteFs {
    client: Client,
    /// Opens the sessions of devices and FIFOs (`None`: they are served inline).
    connector: Option<Connector>,
    paths: HashMap<u64, String>,
    inos: HashMap<String, u64>,
    next_ino: u64,
    handles: HashMap<u64, Handle>,
    next_worker_fh: u64,
}

impl RemoteFs {
    /// Wrap a connected client. Every request is served on the FUSE thread: a read of a
    /// remote FIFO or device that waits for data stalls the whole mount until it ends (use
    /// [`RemoteFs::with_connector`]).
    pub fn new(client: Client) -> RemoteFs {
        let mut fs = RemoteFs {
            client,
            connector: None,
            paths: HashMap::new(),
            inos: HashMap::new(),
            next_ino: ROOT_INO + 1,
            handles: HashMap::new(),
            next_worker_fh: WORKER_FH_BASE,
        };
        fs.paths.insert(ROOT_INO, String::new());
        fs.inos.insert(String::new(), ROOT_INO);
        fs
    }

    /// Wrap a connected client; `connector` opens one more session per open device or FIFO,
    /// served on a thread of its own, so that a read waiting for data does not stall the
    /// mount. Each such open holds one client slot on the server until it is closed.
    pub fn with_connector(client: Client, connector: Connector) -> RemoteFs {
        let mut fs = RemoteFs::new(client);
        fs.connector = Some(connector);
        fs
    }

    /// Open `path` (a device or FIFO) in a session of its own served by a worker thread;
    /// return the file handle.
    fn open_worker(&mut self, path: &str, flags: u32) -> Result<u64, i32> {
        let connect = self.connector.as_mut().ok_or(libc::EIO)?;
        let mut c = connect().map_err(|e| {
            eprintln!("partix-fs: session for {path}: {e:#}");
            libc::EIO
        })?;
        let fd = c.open(path, flags, 0).map_err(|e| e.errno())?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name(format!("partix-fs fh {}", self.next_worker_fh))
            .spawn(move || serve_handle(c, fd, rx))
            .map_err(|_| libc::EAGAIN)?;
        let fh = self.next_worker_fh;
        self.next_worker_fh += 1;
        self.handles.insert(fh, Handle::Worker(tx));
        Ok(fh)
    }

    fn ino_of(&mut self, path: &str) -> u64 {
        if let Some(&i) = self.inos.get(path) {
            return i;
        }
        let i = self.next_ino;
        self.next_ino += 1;
        self.inos.insert(path.to_string(), i);
        self.paths.insert(i, path.to_string());
        i
    }

    fn child(&self, parent: u64, name: &OsStr) -> Option<String> {
        let p = self.paths.get(&parent)?;
        let name = name.to_str()?;
        Some(if p.is_empty() {
            name.to_string()
        } else {
            format!("{p}/{name}")
        })
    }

    fn attr(&self, ino: u64, a: &Attr) -> FileAttr {
        let mtime = mtime_of(a);
        let (kind, size) = match a.kind {
            FileKind::Dir => (FileType::Directory, a.size),
            FileKind::Symlink => (FileType::Symlink, a.size),
            FileKind::File => (FileType::RegularFile, a.size),
            // Devices and FIFOs read and written as files (direct I/O).
            _ => (FileType::RegularFile, 0),
        };
        FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
            atime: mtime,
            mtime,
            ctime: mtime,
            crtime: mtime,
            kind,
            perm: a.perm,
            nlink: a.nlink.max(1),
            uid: 0,
            gid: 0,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        }
    }

    fn stat_ino(&mut self, ino: u64) -> Result<FileAttr, i32> {
        let path = self.paths.get(&ino).cloned().ok_or(libc::ENOENT)?;
        let a = self.client.stat(&path).map_err(|e| e.errno())?;
        Ok(self.attr(ino, &a))
    }
}

/// Return the modification time of `a`; a time the system cannot represent (a server's reply
/// is not trusted) is reported as the epoch.
fn mtime_of(a: &Attr) -> SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_secs(a.mtime_sec))
        .and_then(|t| t.checked_add(Duration::from_nanos(u64::from(a.mtime_nsec))))
        .unwrap_or(UNIX_EPOCH)
}

fn wire_flags(flags: i32) -> u32 {
    (flags as u32)
        & (open_flags::ACCMODE | open_flags::APPEND | open_flags::TRUNC | open_flags::NONBLOCK)
}

impl Filesystem for RemoteFs {
    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let Some(path) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        match self.client.stat(&path) {
            Ok(a) => {
                let ino = self.ino_of(&path);
                reply.entry(&TTL, &self.attr(ino, &a), 0)
            }
            Err(e) => reply.error(e.errno()),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        match self.stat_ino(ino) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        if let Some(size) = size {
            if size != 0 {
                return reply.error(libc::EOPNOTSUPP);
            }
            let Some(path) = self.paths.get(&ino).cloned() else {
                return reply.error(libc::ENOENT);
            };
            let r = self
                .client
                .open(&path, open_flags::WRONLY | open_flags::TRUNC, 0)
                .and_then(|fd| self.client.close(fd));
            if let Err(e) = r {
                return reply.error(e.errno());
            }
        }
        // Modes, owners and times are the server's; report what it has.
        match self.stat_ino(ino) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        let Some(path) = self.paths.get(&ino).cloned() else {
            return reply.error(libc::ENOENT);
        };
        let regular = match self.client.stat(&path) {
            Ok(a) => a.kind == FileKind::File,
            Err(e) => return reply.error(e.errno()),
        };
        if !regular && self.connector.is_some() {
            return match self.open_worker(&path, wire_flags(flags)) {
                Ok(fh) => reply.opened(fh, fuser::consts::FOPEN_DIRECT_IO),
                Err(e) => reply.error(e),
            };
        }
        match self.client.open(&path, wire_flags(flags), 0) {
            Ok(fd) => {
                self.handles
                    .insert(u64::from(fd), Handle::Inline { regular });
                let fuse_flags = if regular {
                    0
                } else {
                    fuser::consts::FOPEN_DIRECT_IO
                };
                reply.opened(u64::from(fd), fuse_flags)
            }
            Err(e) => reply.error(e.errno()),
        }
    }

    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let Some(path) = self.child(parent, name) else {
            return reply.error(libc::EINVAL);
        };
        let f = wire_flags(flags) | open_flags::CREAT | ((flags as u32) & open_flags::EXCL);
        let fd = match self.client.open(&path, f, mode & !umask & 0o777) {
            Ok(fd) => fd,
            Err(e) => return reply.error(e.errno()),
        };
        match self.client.stat(&path) {
            Ok(a) => {
                let ino = self.ino_of(&path);
                self.handles
                    .insert(u64::from(fd), Handle::Inline { regular: true });
                reply.created(&TTL, &self.attr(ino, &a), 0, u64::from(fd), 0)
            }
            Err(e) => {
                let _ = self.client.close(fd);
                reply.error(e.errno())
            }
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let regular = match self.handles.get(&fh) {
            Some(Handle::Worker(jobs)) => {
                if let Err(e) = jobs.send(Job::Read { size, reply }) {
                    if let Job::Read { reply, .. } = e.0 {
                        reply.error(libc::EIO);
                    }
                }
                return;
            }
            Some(Handle::Inline { regular }) => *regular,
            None => true,
        };
        let mut buf = vec![0u8; size as usize];
        let off = regular.then_some(offset.max(0) as u64);
        match self.client.read(fh as u32, off, &mut buf) {
            Ok(n) => reply.data(&buf[..n]),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let regular = match self.handles.get(&fh) {
            Some(Handle::Worker(jobs)) => {
                let job = Job::Write {
                    data: data.to_vec(),
                    reply,
                };
                if let Err(e) = jobs.send(job) {
                    if let Job::Write { reply, .. } = e.0 {
                        reply.error(libc::EIO);
                    }
                }
                return;
            }
            Some(Handle::Inline { regular }) => *regular,
            None => true,
        };
        let off = regular.then_some(offset.max(0) as u64);
        match self.client.write(fh as u32, off, data) {
            Ok(n) => reply.written(n as u32),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        // Writes are applied by the server when acknowledged; nothing is buffered here.
        reply.ok()
    }

    fn fsync(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        reply.ok()
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        if let Some(Handle::Worker(jobs)) = self.handles.remove(&fh) {
            // Answered by the worker once the requests queued before it are done.
            if let Err(e) = jobs.send(Job::Close { reply }) {
                if let Job::Close { reply } = e.0 {
                    reply.ok();
                }
            }
            return;
        }
        match self.client.close(fh as u32) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e.errno()),
        }
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let Some(path) = self.paths.get(&ino).cloned() else {
            return reply.error(libc::ENOENT);
        };
        let entries = match self.client.readdir(&path) {
            Ok(e) => e,
            Err(e) => return reply.error(e.errno()),
        };
        let mut all: Vec<(u64, FileType, String)> = vec![
            (ino, FileType::Directory, ".".into()),
            (ino, FileType::Directory, "..".into()),
        ];
        for e in entries {
            let child = if path.is_empty() {
                e.name.clone()
            } else {
                format!("{path}/{}", e.name)
            };
            let kind = match e.kind {
                FileKind::Dir => FileType::Directory,
                FileKind::Symlink => FileType::Symlink,
                _ => FileType::RegularFile,
            };
            all.push((self.ino_of(&child), kind, e.name));
        }
        for (i, (ino, kind, name)) in all.into_iter().enumerate().skip(offset.max(0) as usize) {
            if reply.add(ino, (i + 1) as i64, kind, name) {
                break;
            }
        }
        reply.ok()
    }
}

/// Mount `a.server`'s export on `a.mountpoint` and serve FUSE requests until unmounted
/// (`fusermount3 -u MOUNTPOINT` or `umount`).
///
/// # Errors
/// The server does not answer, or the mount fails (needs /dev/fuse and root or fusermount3).
pub fn mount(a: MountArgs) -> anyhow::Result<ExitCode> {
    let target = if a.iface == "udp" {
        crate::cli::Target {
            iface: None,
            server: None,
            udp: Some(
                a.server
                    .parse()
                    .context("SERVER must be HOST:PORT with `udp`")?,
            ),
            spin: a.spin,
            mode: a.mode,
            ring: a.ring,
            fault: None,
        }
    } else {
        crate::cli::Target {
            iface: Some(a.iface.clone()),
            server: Some(a.server.clone()),
            udp: None,
            spin: a.spin,
            mode: a.mode,
            ring: a.ring,
            fault: None,
        }
    };
    let client = crate::cli::connect(&target)?;
    let connector: Connector = Box::new(move || crate::cli::connect(&target));
    mount_fs(RemoteFs::with_connector(client, connector), &a.mountpoint)?;
    Ok(ExitCode::SUCCESS)
}

/// Mount a connected client's export on `mountpoint`; block until unmounted. Every request
/// is served on one thread (see [`RemoteFs::new`]): [`mount`] serves devices and FIFOs off it.
///
/// # Errors
/// The mount fails.
pub fn mount_client(client: Client, mountpoint: &Path) -> anyhow::Result<()> {
    mount_fs(RemoteFs::new(client), mountpoint)
}

/// Mount `fs` on `mountpoint`; block until unmounted.
///
/// # Errors
/// The mount fails.
pub fn mount_fs(fs: RemoteFs, mountpoint: &Path) -> anyhow::Result<()> {
    let opts = [
        MountOption::FSName("partix-fs".into()),
        MountOption::Subtype("partix".into()),
        MountOption::DefaultPermissions,
    ];
    fuser::mount2(fs, mountpoint, &opts)
        .with_context(|| format!("mounting on {}", mountpoint.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(mtime_sec: u64, mtime_nsec: u32) -> Attr {
        Attr {
            kind: FileKind::File,
            perm: 0o644,
            nlink: 1,
            size: 0,
            mtime_sec,
            mtime_nsec,
            rdev: 0,
            ino: 1,
        }
    }

    #[test]
    fn modification_times_from_the_server_never_panic() {
        assert_eq!(mtime_of(&attr(10, 5)), UNIX_EPOCH + Duration::new(10, 5));
        // Beyond what SystemTime holds, and nanoseconds that carry into a full second.
        for (s, ns) in [
            (u64::MAX, 0),
            (1 << 63, 0),
            (u64::MAX, u32::MAX),
            (0, u32::MAX),
        ] {
            let t = mtime_of(&attr(s, ns));
            assert!(t >= UNIX_EPOCH, "{s} {ns}");
        }
    }
}

//! Path confinement: every path is resolved beneath the exported root with `openat2(2)` and
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, so `..`, absolute paths and symlinks pointing out of
//! the root fail with `EXDEV` inside the kernel (no check-then-use race).
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// Open the export root as a directory descriptor.
///
/// # Errors
/// The `open(2)` error (`NotFound`, `NotADirectory`, ...).
pub fn open_root(root: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(root.as_os_str().as_encoded_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "root path holds a NUL"))?;
    // SAFETY: `c` is a valid NUL-terminated path; the result is checked.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a new descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Open `path` (relative to `root`) beneath `root`; return the descriptor or the errno.
///
/// An empty path names the root itself. A file created here gets only the permission bits of
/// `mode` (`0o777`): setuid, setgid and sticky bits from a remote client are dropped (the
/// server often runs as root).
pub fn open_beneath(root: &OwnedFd, path: &[u8], flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    let path = if path.is_empty() { &b"."[..] } else { path };
    let c = CString::new(path).map_err(|_| libc::EINVAL)?;
    // SAFETY: open_how is plain old data; all-zero is valid.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (flags | libc::O_CLOEXEC) as u64;
    how.mode = if flags & libc::O_CREAT != 0 {
        u64::from(mode & 0o777)
    } else {
        0
    };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `c` is NUL-terminated, `how` is a valid open_how and its size is passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            root.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    // SAFETY: `fd` is a new descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Return `fstat(fd)` or the errno.
pub fn fstat(fd: &OwnedFd) -> Result<libc::stat, i32> {
    // SAFETY: libc::stat is plain old data; all-zero is valid.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `st` is a valid out-pointer.
    let r = unsafe { libc::fstat(fd.as_raw_fd(), &mut st) };
    if r < 0 {
        return Err(io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO));
    }
    Ok(st)
}

/// `pread` (offset `Some`) or `read` (offset `None`); return bytes or the errno.
pub fn read_at(fd: &OwnedFd, buf: &mut [u8], offset: Option<u64>) -> Result<usize, i32> {
    loop {
        // SAFETY: `buf` is valid for `buf.len()` writable bytes.
        let r = unsafe {
            match offset {
                Some(o) => libc::pread(
                    fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    o as libc::off_t,
                ),
                None => libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()),
            }
        };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// `pwrite` (offset `Some`) or `write` (offset `None`) of as much of the buffer as the
/// descriptor takes; return the bytes written and, when an error stopped it short, the errno
/// (`EAGAIN` on a full pipe or device opened `O_NONBLOCK`, `ENOSPC`, `EFBIG`, ...). A write
/// that takes nothing without an error (a device returning 0) stops it short with no errno.
pub fn write_all_at(fd: &OwnedFd, buf: &[u8], offset: Option<u64>) -> (usize, Option<i32>) {
    let mut done = 0usize;
    while done < buf.len() {
        let rest = &buf[done..];
        // SAFETY: `rest` is valid for `rest.len()` readable bytes.
        let r = unsafe {
            match offset {
                Some(o) => libc::pwrite(
                    fd.as_raw_fd(),
                    rest.as_ptr().cast(),
                    rest.len(),
                    (o + done as u64) as libc::off_t,
                ),
                None => libc::write(fd.as_raw_fd(), rest.as_ptr().cast(), rest.len()),
            }
        };
        if r < 0 {
            let e = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            if e == libc::EINTR {
                continue;
            }
            return (done, Some(e));
        }
        if r == 0 {
            break;
        }
        done += r as usize;
    }
    (done, None)
}

/// `poll(2)` the descriptors of `fds` without waiting; return how many have events (0 on an
/// error: the caller polls again later). Negative descriptors are skipped by the kernel.
pub fn poll_now(fds: &mut [libc::pollfd]) -> usize {
    // SAFETY: `fds` holds `fds.len()` initialized entries; a timeout of 0 never blocks.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
    r.max(0) as usize
}

/// Return whether `fd` reports `POLLHUP` now. On the read end of a FIFO, Linux reports it only
/// once a writer has opened the FIFO and all writers have left again since this descriptor was
/// opened: a read of 0 bytes without it means no writer has come yet.
pub fn hung_up(fd: &OwnedFd) -> bool {
    let mut p = [libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    poll_now(&mut p);
    p[0].revents & libc::POLLHUP != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused_inside_the_kernel() {
        let dir = std::env::temp_dir().join(format!("pfs-confine-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/f"), b"x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("out")).unwrap();
        std::os::unix::fs::symlink("sub/f", dir.join("in")).unwrap();
        let root = open_root(&dir).unwrap();
        assert!(open_beneath(&root, b"sub/f", libc::O_RDONLY, 0).is_ok());
        assert!(open_beneath(&root, b"in", libc::O_RDONLY, 0).is_ok());
        assert!(open_beneath(&root, b"", libc::O_RDONLY, 0).is_ok());
        for bad in [
            &b"../etc/passwd"[..],
            b"/etc/passwd",
            b"out",
            b"sub/../../x",
        ] {
            assert_eq!(
                open_beneath(&root, bad, libc::O_RDONLY, 0).err(),
                Some(libc::EXDEV),
                "{bad:?}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Relative symlinks resolving beneath the root work; absolute ones are refused with EXDEV
    /// even when their target lies inside the root (docs/fs-protocol.md, server section).
    #[test]
    fn absolute_symlinks_are_refused_even_when_the_target_is_inside() {
        let dir = std::env::temp_dir().join(format!("pfs-confine-abs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/f"), b"x").unwrap();
        std::os::unix::fs::symlink(dir.join("sub/f"), dir.join("abs")).unwrap();
        std::os::unix::fs::symlink("../sub/f", dir.join("sub/up")).unwrap();
        let root = open_root(&dir).unwrap();
        let abs = open_beneath(&root, b"abs", libc::O_RDONLY, 0).err();
        let up = open_beneath(&root, b"sub/up", libc::O_RDONLY, 0).is_ok();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(abs, Some(libc::EXDEV));
        assert!(
            up,
            "a relative symlink with .. that stays inside was refused"
        );
    }

    #[test]
    fn created_files_get_no_setuid_setgid_or_sticky_bit() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("pfs-confine-mode-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let root = open_root(&dir).unwrap();
        let flags = libc::O_CREAT | libc::O_WRONLY;
        drop(open_beneath(&root, b"f", flags, 0o7755).unwrap());
        let mode = std::fs::metadata(dir.join("f"))
            .unwrap()
            .permissions()
            .mode();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(mode & 0o7000, 0, "mode {mode:o}");
        assert_eq!(mode & 0o700, 0o700, "mode {mode:o}");
    }
}

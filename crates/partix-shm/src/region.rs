//! memfd-backed shared-memory regions.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

/// How a region is mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `PROT_READ`: stores fault with SIGSEGV.
    ReadOnly,
    /// `PROT_READ | PROT_WRITE`.
    ReadWrite,
}

/// Failure to create or map a [`Region`].
#[derive(Debug)]
pub enum RegionError {
    /// `memfd_create` failed.
    Create(io::Error),
    /// `ftruncate` failed.
    Resize(io::Error),
    /// Sealing the size of the memfd (`F_ADD_SEALS`) failed.
    Seal(io::Error),
    /// Restricting the memfd to its owner (`fchmod` 0600) failed.
    Mode(io::Error),
    /// Opening a read-only descriptor of the memfd (through `/proc/self/fd`) failed.
    Reopen(io::Error),
    /// `fstat` failed or the file is smaller than asked for.
    Size(io::Error),
    /// `mmap` failed.
    Map(io::Error),
}

impl fmt::Display for RegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegionError::Create(e) => write!(f, "memfd_create failed: {e}"),
            RegionError::Resize(e) => write!(f, "ftruncate of shared region failed: {e}"),
            RegionError::Seal(e) => write!(f, "sealing the size of shared region failed: {e}"),
            RegionError::Mode(e) => {
                write!(f, "restricting shared region to its owner failed: {e}")
            }
            RegionError::Reopen(e) => {
                write!(f, "read-only reopen of shared region failed: {e}")
            }
            RegionError::Size(e) => write!(f, "shared region has the wrong size: {e}"),
            RegionError::Map(e) => write!(f, "mmap of shared region failed: {e}"),
        }
    }
}

impl std::error::Error for RegionError {}

/// The seals [`Region::create`] puts on every memfd: its size is fixed for good, and no other
/// seal can be added. Not `F_SEAL_WRITE`: the writers of a region must write.
pub const REGION_SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// A mapping of a memfd shared between processes.
///
/// The mapping is page-aligned and zero-filled when created. It is unmapped on drop; the memfd is
/// closed on drop too (other processes keep their own mappings).
///
/// # Isolation
/// A created region's size is sealed ([`REGION_SEALS`]): no process holding a descriptor of it,
/// read-write or not, can shrink it (which would make every other process's accesses past the new
/// end fault with SIGBUS) or grow it. A process that must only read a region gets a descriptor
/// of [`Region::read_only_fd`], not the memfd itself: on it a `PROT_WRITE` shared mapping, and an
/// `mprotect` of a read-only one to `PROT_WRITE`, fail with `EACCES`, and `ftruncate` with
/// `EINVAL`. (The memfd itself is read-write: a read-only *mapping* of it can be made writable.)
/// The memfd's mode is 0600: only its creator's user can open it again by path (through
/// `/proc/.../fd/`), so a process of another user holding a read-only descriptor cannot get a
/// read-write one.
#[derive(Debug)]
pub struct Region {
    fd: OwnedFd,
    ptr: NonNull<u8>,
    len: usize,
    access: Access,
}

// SAFETY: the region is plain shared memory; all access through it goes through raw pointers or
// atomics whose synchronisation is the caller's business, exactly as for memory shared with
// another process.
unsafe impl Send for Region {}
// SAFETY: as above; `&Region` only hands out raw pointers.
unsafe impl Sync for Region {}

impl Region {
    /// Create a new zero-filled region of `len` bytes named `name` (the name shows in
    /// `/proc/PID/maps` and `/proc/PID/fd`).
    ///
    /// The file descriptor is close-on-exec; hand it to a child with
    /// [`Region::raw_fd`] (read-write) or [`Region::read_only_fd`] and `dup2` in `pre_exec`.
    /// Once sized, the memfd is sealed with [`REGION_SEALS`]: its size never changes again.
    ///
    /// # Errors
    /// [`RegionError::Create`], [`RegionError::Resize`], [`RegionError::Seal`] or
    /// [`RegionError::Map`].
    pub fn create(name: &str, len: usize) -> Result<Region, RegionError> {
        let cname = CString::new(name.replace('\0', "_")).expect("no NUL after replace");
        // SAFETY: cname is a valid NUL-terminated string; flags are valid.
        let fd = unsafe {
            libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
        };
        if fd < 0 {
            return Err(RegionError::Create(io::Error::last_os_error()));
        }
        // SAFETY: fd was just returned by memfd_create and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: fd is a valid memfd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(RegionError::Resize(io::Error::last_os_error()));
        }
        // The contents are initialised through the mapping afterwards, which the seals allow;
        // only the size is frozen, before any other process can see the memfd.
        // SAFETY: fd is a valid memfd created with MFD_ALLOW_SEALING; F_ADD_SEALS takes an int.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, REGION_SEALS) } != 0 {
            return Err(RegionError::Seal(io::Error::last_os_error()));
        }
        // A memfd is born mode 0777: any process that can reach it by a path (its own
        // `/proc/self/fd/N`, or the creator's `/proc/PID/fd/M`) could open it read-write, even
        // one granted only a read-only descriptor. 0600 leaves such opens to the creator's user
        // (a partition under its own `partix:User` has a descriptor's access and no more).
        // SAFETY: fd is a valid memfd.
        if unsafe { libc::fchmod(fd.as_raw_fd(), 0o600) } != 0 {
            return Err(RegionError::Mode(io::Error::last_os_error()));
        }
        Self::map(fd, len, Access::ReadWrite)
    }

    /// Map an inherited region file descriptor (taking ownership of it).
    ///
    /// # Errors
    /// [`RegionError::Size`] if the file is smaller than `len`, [`RegionError::Map`] if mmap fails.
    ///
    /// # Safety
    /// `fd` must be an open file descriptor that nothing else owns (it is closed on drop).
    pub unsafe fn from_raw_fd(
        fd: RawFd,
        len: usize,
        access: Access,
    ) -> Result<Region, RegionError> {
        // SAFETY: the caller guarantees fd is open and unowned.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: an all-zero stat is a valid out-parameter.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fd is open; st is a valid out-pointer.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(RegionError::Size(io::Error::last_os_error()));
        }
        if (st.st_size as u64) < len as u64 {
            return Err(RegionError::Size(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("file has {} bytes, expected at least {len}", st.st_size),
            )));
        }
        Self::map(fd, len, access)
    }

    fn map(fd: OwnedFd, len: usize, access: Access) -> Result<Region, RegionError> {
        let prot = match access {
            Access::ReadOnly => libc::PROT_READ,
            Access::ReadWrite => libc::PROT_READ | libc::PROT_WRITE,
        };
        // SAFETY: a fresh shared mapping of a valid fd; len > 0 is checked by mmap itself.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(RegionError::Map(io::Error::last_os_error()));
        }
        Ok(Region {
            fd,
            ptr: NonNull::new(p.cast()).expect("mmap never returns NULL on success"),
            len,
            access,
        })
    }

    /// Return the base address of the mapping (page-aligned).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Return the length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Return whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Return how this mapping was made.
    pub fn access(&self) -> Access {
        self.access
    }

    /// Return the memfd (to pass to a child process that may write the region).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Open a new read-only descriptor of this region's file (close-on-exec), for a process
    /// that must only read it: an `O_RDONLY` open of `/proc/self/fd/N`, a new open file
    /// description of the same memfd. Mappings of it can never be writable (`mmap` with
    /// `PROT_WRITE` and `MAP_SHARED`, or `mprotect` to `PROT_WRITE`, fail with `EACCES`), and
    /// `ftruncate` on it fails with `EINVAL`.
    ///
    /// # Errors
    /// [`RegionError::Reopen`] if `/proc` is not mounted or the open fails.
    pub fn read_only_fd(&self) -> Result<OwnedFd, RegionError> {
        let path = CString::new(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
            .expect("no NUL in a number");
        // SAFETY: path is a valid C string; the returned fd (if any) is owned by nobody else.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(RegionError::Reopen(io::Error::last_os_error()));
        }
        // SAFETY: fd was just opened and is owned by nothing else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly what mmap returned/was given.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len.max(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_write_and_map_again_read_only() {
        let r = Region::create("partix-test", 4096).unwrap();
        // SAFETY: the region is 4096 bytes and mapped read-write.
        unsafe { r.as_ptr().add(10).write(42) };
        // SAFETY: dup gives a fresh fd we own.
        let fd2 = unsafe { libc::dup(r.raw_fd()) };
        assert!(fd2 >= 0);
        // SAFETY: fd2 is fresh and unowned.
        let ro = unsafe { Region::from_raw_fd(fd2, 4096, Access::ReadOnly) }.unwrap();
        // SAFETY: in bounds.
        assert_eq!(unsafe { ro.as_ptr().add(10).read() }, 42);
        assert_eq!(ro.access(), Access::ReadOnly);
    }

    fn errno_of(ret: libc::c_int) -> Option<i32> {
        (ret != 0).then(|| io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    #[test]
    fn a_created_region_refuses_resizing_through_any_descriptor() {
        let r = Region::create("partix-test-sealed", 8192).unwrap();
        // SAFETY: the memfd is open; F_GET_SEALS takes no argument.
        let seals = unsafe { libc::fcntl(r.raw_fd(), libc::F_GET_SEALS) };
        assert_eq!(seals, REGION_SEALS);
        // SAFETY: dup gives a fresh fd we own (a second read-write descriptor, as a partition
        // holds).
        let dup = unsafe { OwnedFd::from_raw_fd(libc::dup(r.raw_fd())) };
        for fd in [r.raw_fd(), dup.as_raw_fd()] {
            for len in [0, 4096, 8191, 8193, 1 << 20] {
                // SAFETY: ftruncate on an open descriptor; the seals refuse it.
                let e = errno_of(unsafe { libc::ftruncate(fd, len) });
                assert_eq!(e, Some(libc::EPERM), "ftruncate to {len}");
            }
        }
        // The size cannot be unsealed or the contents frozen either (F_SEAL_SEAL).
        // SAFETY: as above, with F_ADD_SEALS.
        let e = errno_of(unsafe { libc::fcntl(r.raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_WRITE) });
        assert_eq!(e, Some(libc::EPERM));
        // SAFETY: an all-zero stat is a valid out-parameter; the fd is open.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: st is a valid out-pointer.
        assert_eq!(unsafe { libc::fstat(r.raw_fd(), &mut st) }, 0);
        assert_eq!(st.st_size, 8192);
        // Writing through the mapping is still allowed.
        // SAFETY: in bounds of the read-write mapping.
        unsafe { r.as_ptr().add(8191).write(7) };
    }

    #[test]
    fn a_read_only_descriptor_never_maps_writable() {
        let r = Region::create("partix-test-ro-fd", 4096).unwrap();
        // SAFETY: in bounds of the read-write mapping.
        unsafe { r.as_ptr().add(10).write(42) };
        let ro = r.read_only_fd().unwrap();
        // A shared writable mapping of it is refused.
        // SAFETY: a fresh mapping request; nothing is mapped if it fails.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                ro.as_raw_fd(),
                0,
            )
        };
        assert_eq!(p, libc::MAP_FAILED);
        assert_eq!(
            io::Error::last_os_error().raw_os_error(),
            Some(libc::EACCES)
        );
        // SAFETY: ftruncate on an open descriptor; an O_RDONLY one refuses it.
        let e = errno_of(unsafe { libc::ftruncate(ro.as_raw_fd(), 0) });
        assert_eq!(e, Some(libc::EINVAL));
        let mapped = |fd: RawFd| {
            // SAFETY: dup gives a fresh fd we own.
            let d = unsafe { libc::dup(fd) };
            // SAFETY: d is fresh and unowned.
            unsafe { Region::from_raw_fd(d, 4096, Access::ReadOnly) }.unwrap()
        };
        let m = mapped(ro.as_raw_fd());
        // SAFETY: in bounds.
        assert_eq!(unsafe { m.as_ptr().add(10).read() }, 42);
        let rw = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: mprotect of exactly our own mapping; it is refused, so nothing changes.
        let e = errno_of(unsafe { libc::mprotect(m.as_ptr().cast(), 4096, rw) });
        assert_eq!(e, Some(libc::EACCES));
        // What it protects against: a read-only mapping of the memfd itself can be made
        // writable.
        let m2 = mapped(r.raw_fd());
        // SAFETY: mprotect of exactly our own mapping, which nobody else uses.
        let e = errno_of(unsafe { libc::mprotect(m2.as_ptr().cast(), 4096, rw) });
        assert_eq!(e, None);
    }

    /// A process of another user holding only a read-only descriptor cannot open the region
    /// again by path, read-write or at all (the memfd is mode 0600); its creator can.
    #[test]
    fn another_user_cannot_reopen_a_region_by_path() {
        let r = Region::create("partix-test-mode", 4096).unwrap();
        // SAFETY: an all-zero stat is a valid out-parameter; fstat only writes into it.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: r's descriptor is open.
        assert_eq!(unsafe { libc::fstat(r.raw_fd(), &mut st) }, 0);
        assert_eq!(st.st_mode & 0o7777, 0o600);
        let ro = r.read_only_fd().unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("another_user_cannot_reopen_a_region_by_path: skipped the other-user part (needs root)");
            return;
        }
        let path = CString::new(format!("/proc/self/fd/{}", ro.as_raw_fd())).unwrap();
        // SAFETY: the child only makes raw system calls and _exits; the parent waits for it.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            // SAFETY: raw system calls on values of this frame; _exit never returns.
            unsafe {
                if libc::syscall(libc::SYS_setresgid, 61097, 61097, 61097) != 0
                    || libc::syscall(libc::SYS_setresuid, 61097, 61097, 61097) != 0
                {
                    libc::_exit(3);
                }
                let rw = libc::open(path.as_ptr(), libc::O_RDWR);
                let rw_errno = *libc::__errno_location();
                let rd = libc::open(path.as_ptr(), libc::O_RDONLY);
                let rd_errno = *libc::__errno_location();
                libc::_exit(if rw < 0 && rw_errno == libc::EACCES {
                    if rd < 0 && rd_errno == libc::EACCES {
                        0
                    } else {
                        2
                    }
                } else {
                    1
                });
            }
        }
        let mut status = 0;
        // SAFETY: pid is our child; status is a valid out-pointer.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status), "status {status}");
        let code = libc::WEXITSTATUS(status);
        assert_ne!(code, 3, "could not become user 61097");
        assert_ne!(code, 1, "user 61097 opened the region read-write by path");
        assert_ne!(code, 2, "user 61097 opened the region by path");
        // The creator's user still can (as the executive does for the read-only descriptors).
        // SAFETY: path is a valid C string; the descriptor is closed at once.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR) };
        assert!(fd >= 0, "{}", io::Error::last_os_error());
        // SAFETY: fd was just opened here.
        unsafe { libc::close(fd) };
    }

    #[test]
    fn too_small_file_is_refused() {
        let r = Region::create("partix-test-small", 100).unwrap();
        // SAFETY: dup gives a fresh fd we own.
        let fd2 = unsafe { libc::dup(r.raw_fd()) };
        // SAFETY: fd2 is fresh and unowned.
        let e = unsafe { Region::from_raw_fd(fd2, 8192, Access::ReadOnly) }.unwrap_err();
        assert!(matches!(e, RegionError::Size(_)), "{e}");
    }
}

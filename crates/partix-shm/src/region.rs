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
            RegionError::Size(e) => write!(f, "shared region has the wrong size: {e}"),
            RegionError::Map(e) => write!(f, "mmap of shared region failed: {e}"),
        }
    }
}

impl std::error::Error for RegionError {}

/// A mapping of a memfd shared between processes.
///
/// The mapping is page-aligned and zero-filled when created. It is unmapped on drop; the memfd is
/// closed on drop too (other processes keep their own mappings).
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
    /// [`Region::raw_fd`] and `dup2` in `pre_exec`.
    ///
    /// # Errors
    /// [`RegionError::Create`], [`RegionError::Resize`] or [`RegionError::Map`].
    pub fn create(name: &str, len: usize) -> Result<Region, RegionError> {
        let cname = CString::new(name.replace('\0', "_")).expect("no NUL after replace");
        // SAFETY: cname is a valid NUL-terminated string; flags are valid.
        let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(RegionError::Create(io::Error::last_os_error()));
        }
        // SAFETY: fd was just returned by memfd_create and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: fd is a valid memfd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(RegionError::Resize(io::Error::last_os_error()));
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

    /// Return the memfd (to pass to a child process).
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
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

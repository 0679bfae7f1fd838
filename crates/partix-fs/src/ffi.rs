//! C API (`include/partix_fs.h`): every function returns 0 on success or a positive errno
//! value, and passes results through out-parameters. Panics never cross the boundary.
#![allow(unsafe_code)]

use crate::client::{Client, ClientConfig, FsError};
use crate::transport::{PacketTransport, PeerAddr, RecvMode, Transport, UdpTransport};
use partix_wire::ethernet::EthernetAddress;
use partix_wire::fs::OFFSET_CURRENT;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// An opaque client handle for C.
pub struct PartixFsClient {
    client: Client,
}

/// File attributes for C (mirrors `partix_fs_stat_t`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct PartixFsStat {
    /// File type: 1 file, 2 directory, 3 char device, 4 block device, 5 symlink, 6 FIFO,
    /// 7 socket.
    pub kind: u16,
    /// Permission bits.
    pub perm: u16,
    /// Link count.
    pub nlink: u32,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds.
    pub mtime_sec: u64,
    /// Modification time, nanoseconds.
    pub mtime_nsec: u32,
    /// Device number.
    pub rdev: u32,
    /// Inode number on the server.
    pub ino: u64,
}

fn guard(f: impl FnOnce() -> Result<(), i32>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => e,
        Err(_) => libc::EFAULT,
    }
}

/// # Safety
/// `p` is null or a valid NUL-terminated string.
unsafe fn str_arg<'a>(p: *const c_char) -> Result<&'a str, i32> {
    if p.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: non-null and NUL-terminated per the caller's contract.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| libc::EINVAL)
}

/// # Safety
/// `c` is null or a handle from a connect function not yet disconnected.
unsafe fn client_arg<'a>(c: *mut PartixFsClient) -> Result<&'a mut Client, i32> {
    if c.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: a live handle per the caller's contract, used by one thread at a time.
    Ok(unsafe { &mut (*c).client })
}

fn io_errno(e: std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(match e.kind() {
        std::io::ErrorKind::NotFound => libc::ENODEV,
        std::io::ErrorKind::PermissionDenied => libc::EPERM,
        std::io::ErrorKind::InvalidInput => libc::EINVAL,
        _ => libc::EIO,
    })
}

fn errno(e: FsError) -> i32 {
    e.errno()
}

fn connect(
    t: Box<dyn Transport>,
    server: PeerAddr,
    out: *mut *mut PartixFsClient,
) -> Result<(), i32> {
    if out.is_null() {
        return Err(libc::EINVAL);
    }
    let client = Client::connect(t, server, ClientConfig::default()).map_err(errno)?;
    let h = Box::into_raw(Box::new(PartixFsClient { client }));
    // SAFETY: `out` is non-null and points at writable storage per the caller's contract.
    unsafe { *out = h };
    Ok(())
}

/// Connect over raw Ethernet frames on `iface` to the server at MAC `server_mac`.
///
/// # Safety
/// `iface` and `server_mac` are NUL-terminated strings; `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn partix_fs_connect_eth(
    iface: *const c_char,
    server_mac: *const c_char,
    out: *mut *mut PartixFsClient,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded caller contract.
        let iface = unsafe { str_arg(iface) }?;
        // SAFETY: forwarded caller contract.
        let mac = unsafe { str_arg(server_mac) }?;
        let mac = EthernetAddress::parse(mac).ok_or(libc::EINVAL)?;
        let t = PacketTransport::open(iface, RecvMode::Block).map_err(io_errno)?;
        connect(Box::new(t), PeerAddr::Mac(mac), out)
    })
}

/// Connect over UDP to `server_addr` (`HOST:PORT`).
///
/// # Safety
/// `server_addr` is a NUL-terminated string; `out` is a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn partix_fs_connect_udp(
    server_addr: *const c_char,
    out: *mut *mut PartixFsClient,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded caller contract.
        let a = unsafe { str_arg(server_addr) }?;
        let a: std::net::SocketAddr = a.parse().map_err(|_| libc::EINVAL)?;
        let local = if a.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
        let t = UdpTransport::bind(local.parse().map_err(|_| libc::EINVAL)?, RecvMode::Block)
            .map_err(io_errno)?;
        connect(Box::new(t), PeerAddr::Udp(a), out)
    })
}

/// End the session and free the handle (null is ignored).
///
/// # Safety
/// `c` is null or a live handle; it must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn partix_fs_disconnect(c: *mut PartixFsClient) {
    if !c.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: a live handle from Box::into_raw, released exactly once.
            drop(unsafe { Box::from_raw(c) });
        }));
    }
}

/// Open `path` with Linux open flags (`O_RDONLY`, `O_CREAT`, ...); the descriptor goes to
/// `*out_fd`.
///
/// # Safety
/// `c` is a live handle, `path` a NUL-terminated string, `out_fd` a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn partix_fs_open(
    c: *mut PartixFsClient,
    path: *const c_char,
    flags: u32,
    mode: u32,
    out_fd: *mut u32,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded caller contract.
        let c = unsafe { client_arg(c) }?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { str_arg(path) }?;
        if out_fd.is_null() {
            return Err(libc::EINVAL);
        }
        let fd = c.open(path, flags, mode).map_err(errno)?;
        // SAFETY: non-null, writable per the caller's contract.
        unsafe { *out_fd = fd };
        Ok(())
    })
}

/// Close a descriptor.
///
/// # Safety
/// `c` is a live handle.
#[no_mangle]
pub unsafe extern "C" fn partix_fs_close(c: *mut PartixFsClient, fd: u32) -> c_int {
    guard(|| {
        // SAFETY: forwarded caller contract.
        let c = unsafe { client_arg(c) }?;
        c.close(fd).map_err(errno)
    })
}

/// Read up to `len` bytes at `offset` (`PARTIX_FS_OFFSET_CURRENT` = current position) into
/// `buf`; the count goes to `*out_read` (0 at end of file).
///
/// # Safety
/// `c` is a live handle, `buf` valid for `len` writable bytes, `out_read` a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn partix_fs_read(
    c: *mut PartixFsClient,
    fd: u32,
    offset: u64,
    buf: *mut c_void,
    len: usize,
    out_read: *mut usize,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded caller contract.
        let c = unsafe { client_arg(c) }?;
        if (buf.is_null() && len > 0) || out_read.is_null() {
            return Err(libc::EINVAL);
        }
        let buf: &mut [u8] = if len == 0 {
            &mut []
        } else {
            // SAFETY: non-null and valid for `len` writable bytes per the caller's contract.
            unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) }
        };
        let off = (offset != OFFSET_CURRENT).then_some(offset);
        let n = c.read(fd, off, buf).map_err(errno)?;
        // SAFETY: non-null, writable per the caller's contract.
        unsafe { *out_read = n };
        Ok(())
    })
}

/// Write `len` bytes from `buf` at `offset` (`PARTIX_FS_OFFSET_CURRENT` = current position);
/// the count goes to `*out_written`.
///
/// # Safety
/// `c` is a live handle, `buf` valid for `len` readable bytes, `out_written` a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn partix_fs_write(
    c: *mut PartixFsClient,
    fd: u32,
    offset: u64,
    buf: *const c_void,
    len: usize,
    out_written: *mut usize,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded caller contract.
        let c = unsafe { client_arg(c) }?;
        if (buf.is_null() && len > 0) || out_written.is_null() {
            return Err(libc::EINVAL);
        }
        let data: &[u8] = if len == 0 {
            &[]
        } else {
            // SAFETY: non-null and valid for `len` readable bytes per the caller's contract.
            unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) }
        };
        let off = (offset != OFFSET_CURRENT).then_some(offset);
        let n = c.write(fd, off, data).map_err(errno)?;
        // SAFETY: non-null, writable per the caller's contract.
        unsafe { *out_written = n };
        Ok(())
    })
}

/// Return the attributes of `path` in `*out`.
///
/// # Safety
/// `c` is a live handle, `path` a NUL-terminated string, `out` a valid pointer.
#[no_mangle]
pub unsafe extern "C" fn partix_fs_stat(
    c: *mut PartixFsClient,
    path: *const c_char,
    out: *mut PartixFsStat,
) -> c_int {
    guard(|| {
        // SAFETY: forwarded caller contract.
        let c = unsafe { client_arg(c) }?;
        // SAFETY: forwarded caller contract.
        let path = unsafe { str_arg(path) }?;
        if out.is_null() {
            return Err(libc::EINVAL);
        }
        let a = c.stat(path).map_err(errno)?;
        let s = PartixFsStat {
            kind: a.kind.into(),
            perm: a.perm,
            nlink: a.nlink,
            size: a.size,
            mtime_sec: a.mtime_sec,
            mtime_nsec: a.mtime_nsec,
            rdev: a.rdev,
            ino: a.ino,
        };
        // SAFETY: non-null, writable per the caller's contract.
        unsafe { *out = s };
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_arguments_are_einval_not_crashes() {
        // SAFETY: null pointers are part of the documented contract (rejected with EINVAL).
        unsafe {
            assert_eq!(partix_fs_close(std::ptr::null_mut(), 0), libc::EINVAL);
            assert_eq!(
                partix_fs_connect_udp(std::ptr::null(), std::ptr::null_mut()),
                libc::EINVAL
            );
            let mut out = std::ptr::null_mut();
            assert_eq!(
                partix_fs_connect_udp(c"not an address".as_ptr(), &mut out),
                libc::EINVAL
            );
            assert_eq!(
                partix_fs_connect_eth(
                    c"pfs-nonexist0".as_ptr(),
                    c"02:00:00:00:00:01".as_ptr(),
                    &mut out
                ),
                libc::ENODEV
            );
            partix_fs_disconnect(std::ptr::null_mut());
        }
    }
}

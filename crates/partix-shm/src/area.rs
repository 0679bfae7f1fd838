//! Typed access to a 64-byte-aligned area inside a [`Region`].
//!
//! Every pointer into shared memory is made here, from offsets that the layout types validated,
//! so the rest of the crate handles only `&AtomicU64` / `&AtomicU32` references.
#![allow(unsafe_code)]

use crate::region::{Access, Region};
use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Arc;

/// Cache-line size assumed by every layout in this crate.
pub const CACHE_LINE: usize = 64;

/// Failure to place a shared-memory structure in a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AreaError {
    /// The offset is not a multiple of 64 (a cache line).
    Misaligned {
        /// The offset asked for.
        offset: usize,
    },
    /// The structure does not fit in the region at that offset.
    TooSmall {
        /// Bytes needed from the offset.
        needed: usize,
        /// Bytes available from the offset.
        available: usize,
    },
    /// The role needs a read-write mapping but the region is mapped read-only.
    ReadOnly,
    /// No structure of the expected kind is initialised there (magic number mismatch).
    BadMagic {
        /// The magic number found.
        found: u64,
    },
    /// The structure was written by an incompatible layout version.
    BadVersion {
        /// The version found.
        found: u32,
    },
    /// A parameter is out of range (zero size, capacity not a power of two, ...).
    BadParameter(&'static str),
}

impl fmt::Display for AreaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AreaError::Misaligned { offset } => {
                write!(f, "offset {offset} is not a multiple of {CACHE_LINE}")
            }
            AreaError::TooSmall { needed, available } => write!(
                f,
                "shared region too small: {needed} bytes needed, {available} available; create a larger region"
            ),
            AreaError::ReadOnly => write!(f, "this role needs a read-write mapping of the region"),
            AreaError::BadMagic { found } => write!(
                f,
                "no initialised structure at this offset (magic {found:#018x}); initialise it first"
            ),
            AreaError::BadVersion { found } => write!(
                f,
                "layout version {found} is not supported; both sides must run the same partix build"
            ),
            AreaError::BadParameter(what) => write!(f, "bad parameter: {what}"),
        }
    }
}

impl std::error::Error for AreaError {}

/// A validated `[offset, offset + len)` window of a shared region.
#[derive(Debug, Clone)]
pub(crate) struct Area {
    region: Arc<Region>,
    offset: usize,
    len: usize,
}

impl Area {
    /// Place a window of `len` bytes at `offset` (which must be cache-line aligned).
    pub(crate) fn new(region: Arc<Region>, offset: usize, len: usize) -> Result<Area, AreaError> {
        if !offset.is_multiple_of(CACHE_LINE) {
            return Err(AreaError::Misaligned { offset });
        }
        let available = region.len().saturating_sub(offset);
        if len > available {
            return Err(AreaError::TooSmall {
                needed: len,
                available,
            });
        }
        Ok(Area {
            region,
            offset,
            len,
        })
    }

    /// Return the region.
    pub(crate) fn region(&self) -> &Arc<Region> {
        &self.region
    }

    /// Return the offset of the window in the region.
    pub(crate) fn offset(&self) -> usize {
        self.offset
    }

    /// Return whether the mapping is writable.
    pub(crate) fn writable(&self) -> bool {
        self.region.access() == Access::ReadWrite
    }

    /// Return the window grown or shrunk to `len` bytes (after reading a header).
    pub(crate) fn resized(&self, len: usize) -> Result<Area, AreaError> {
        Area::new(self.region.clone(), self.offset, len)
    }

    /// Return the 64-bit word at byte offset `off` of the window.
    ///
    /// # Panics
    /// If `off` is misaligned or out of the window (a layout bug, never input-dependent). The
    /// messages of these checks name no values: formatting arguments made the compiler store
    /// the offsets on the stack on every call, stores that a queuing call's producer, whose
    /// store buffer is full of ring stores, waits for (`docs/bench-rtt.md`, session 14).
    #[inline(always)]
    pub(crate) fn u64_at(&self, off: usize) -> &AtomicU64 {
        assert!(
            off.is_multiple_of(8) && off + 8 <= self.len,
            "layout bug: a u64 outside its window"
        );
        // SAFETY: the region is mapped for at least offset + len bytes (checked in `new`) and
        // stays mapped while `self.region` is alive; the base is page-aligned and offset + off is
        // a multiple of 8, so the pointer is aligned for AtomicU64. Shared memory may be changed
        // by other processes at any time, which `AtomicU64` (an UnsafeCell) permits. On a
        // read-only mapping only `Relaxed` loads of at most 8 bytes are allowed (std docs,
        // "Atomic accesses to read-only memory"): the read-only roles (sampling readers, the
        // consumer of a split ring on its data area) do only those, with separate Acquire
        // fences; roles that store check `writable()` first.
        unsafe {
            &*self
                .region
                .as_ptr()
                .add(self.offset + off)
                .cast::<AtomicU64>()
        }
    }

    /// Return the 32-bit word at byte offset `off` of the window.
    ///
    /// # Panics
    /// If `off` is misaligned or out of the window (a layout bug).
    #[inline(always)]
    pub(crate) fn u32_at(&self, off: usize) -> &AtomicU32 {
        assert!(
            off.is_multiple_of(4) && off + 4 <= self.len,
            "layout bug: a u32 outside its window"
        );
        // SAFETY: as in `u64_at`, with 4-byte alignment.
        unsafe {
            &*self
                .region
                .as_ptr()
                .add(self.offset + off)
                .cast::<AtomicU32>()
        }
    }

    /// Return `n` consecutive 64-bit words starting at byte offset `off`.
    ///
    /// # Panics
    /// If the words are misaligned or out of the window (a layout bug).
    #[inline(always)]
    pub(crate) fn words(&self, off: usize, n: usize) -> &[AtomicU64] {
        assert!(
            off.is_multiple_of(8) && off + 8 * n <= self.len,
            "layout bug: words outside their window"
        );
        // SAFETY: as in `u64_at`; the n words lie inside the mapped window and AtomicU64 has the
        // size and alignment of u64, so they form a valid slice.
        unsafe {
            std::slice::from_raw_parts(
                self.region
                    .as_ptr()
                    .add(self.offset + off)
                    .cast::<AtomicU64>(),
                n,
            )
        }
    }
}

/// A few 64-bit words at a cache-line offset of a writable region: state that must outlive the
/// process that keeps it (a region outlives a partition's restarts; e.g. a socket queuing
/// source's counts of messages in flight, `docs/ports.md`).
#[derive(Debug, Clone)]
pub struct Words {
    area: Area,
    n: usize,
}

impl Words {
    /// Return the bytes `n` words take.
    pub const fn bytes(n: usize) -> usize {
        8 * n
    }

    /// Place `n` words at `offset` (a multiple of 64) of `region`, which must be mapped
    /// read-write.
    ///
    /// # Errors
    /// [`AreaError::Misaligned`], [`AreaError::TooSmall`], [`AreaError::ReadOnly`], or
    /// [`AreaError::BadParameter`] for `n` = 0.
    pub fn attach(region: Arc<Region>, offset: usize, n: usize) -> Result<Words, AreaError> {
        if n == 0 {
            return Err(AreaError::BadParameter("no words"));
        }
        let area = Area::new(region, offset, Words::bytes(n))?;
        if !area.writable() {
            return Err(AreaError::ReadOnly);
        }
        Ok(Words { area, n })
    }

    /// Return word `i`.
    ///
    /// # Panics
    /// If `i` is not below [`Words::len`].
    #[inline]
    pub fn get(&self, i: usize) -> &AtomicU64 {
        assert!(i < self.n, "word {i} of {}", self.n);
        self.area.u64_at(8 * i)
    }

    /// Return the number of words.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Return whether there are no words (never: [`Words::attach`] refuses 0).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Round `n` up to a multiple of the cache line.
pub(crate) const fn line_up(n: usize) -> usize {
    n.div_ceil(CACHE_LINE) * CACHE_LINE
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    /// Words kept in a region are there for whoever attaches next (a restarted process), and
    /// the placement is checked.
    #[test]
    fn words_outlive_their_attachment_and_are_placed_with_care() {
        let r = Arc::new(Region::create("words-test", 128).unwrap());
        let w = Words::attach(r.clone(), 64, 4).unwrap();
        assert_eq!(w.len(), 4);
        w.get(3).store(42, Ordering::Release);
        drop(w);
        let w = Words::attach(r.clone(), 64, 4).unwrap();
        assert_eq!(w.get(3).load(Ordering::Acquire), 42);
        assert_eq!(w.get(0).load(Ordering::Acquire), 0);
        assert_eq!(
            Words::attach(r.clone(), 8, 1).unwrap_err(),
            AreaError::Misaligned { offset: 8 }
        );
        assert!(matches!(
            Words::attach(r.clone(), 64, 9),
            Err(AreaError::TooSmall { .. })
        ));
        assert!(matches!(
            Words::attach(r, 0, 0),
            Err(AreaError::BadParameter(_))
        ));
    }
}

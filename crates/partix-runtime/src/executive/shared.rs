//! The executive's side of the module state: it creates the regions and owns them.
#![allow(unsafe_code)]

use crate::attach::{init_module_state, init_partition_state};
use crate::state::{ModuleState, PartitionState, MODULE_REGION_LEN, PARTITION_REGION_LEN};
use partix_config::model::Module;
use partix_shm::{Region, RegionError};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// The module region and one region per partition, created and initialised by the executive.
#[derive(Debug)]
pub struct SharedState {
    module: Region,
    module_ro: OwnedFd,
    partitions: Vec<Region>,
}

impl SharedState {
    /// Create and initialise the regions of `module`; module time zero is `epoch_ns`
    /// (`CLOCK_MONOTONIC`).
    ///
    /// # Errors
    /// The region error if a memfd cannot be created or mapped.
    pub fn create(module: &Module, epoch_ns: u64) -> Result<SharedState, RegionError> {
        let m = Region::create("partix-module", MODULE_REGION_LEN)?;
        // SAFETY: the region is fresh, zero-filled, MODULE_REGION_LEN bytes, not shared yet.
        unsafe { init_module_state(m.as_ptr().cast(), module.partitions.len() as u32, epoch_ns) };
        let mut partitions = Vec::with_capacity(module.partitions.len());
        for (i, p) in module.partitions.iter().enumerate() {
            let r = Region::create(&format!("partix-{}", p.name), PARTITION_REGION_LEN)?;
            // SAFETY: as above, with PARTITION_REGION_LEN.
            unsafe { init_partition_state(r.as_ptr().cast(), p.id.0, i as u32) };
            partitions.push(r);
        }
        // A read-only open file description of the module memfd: a partition given this one
        // cannot map the module state writable.
        let module_ro = m.read_only_fd()?;
        let s = SharedState {
            module: m,
            module_ro,
            partitions,
        };
        let first = module
            .schedules
            .get(module.initial_schedule)
            .map_or(0, |s| s.id.0);
        let ms = s.module();
        use std::sync::atomic::Ordering::Relaxed;
        ms.current_schedule.store(first, Relaxed);
        ms.next_schedule.store(first, Relaxed);
        Ok(s)
    }

    /// Return the module state.
    pub fn module(&self) -> &ModuleState {
        // SAFETY: the region is MODULE_REGION_LEN bytes, page-aligned, initialised in `create`,
        // and only accessed through atomics afterwards.
        unsafe { &*self.module.as_ptr().cast::<ModuleState>() }
    }

    /// Return the state of partition `i` (config order).
    ///
    /// # Panics
    /// If `i` is out of range.
    pub fn partition(&self, i: usize) -> &PartitionState {
        // SAFETY: as for `module`, with PARTITION_REGION_LEN.
        unsafe { &*self.partitions[i].as_ptr().cast::<PartitionState>() }
    }

    /// Return the number of partitions.
    pub fn len(&self) -> usize {
        self.partitions.len()
    }

    /// Return whether the module has no partition.
    pub fn is_empty(&self) -> bool {
        self.partitions.is_empty()
    }

    /// Return the read-only descriptor of the module region (passed to partitions).
    pub fn module_ro_fd(&self) -> RawFd {
        self.module_ro.as_raw_fd()
    }

    /// Return the descriptor of partition `i`'s region.
    ///
    /// # Panics
    /// If `i` is out of range.
    pub fn partition_fd(&self, i: usize) -> RawFd {
        self.partitions[i].raw_fd()
    }
}

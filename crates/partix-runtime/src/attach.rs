//! The partition side of the module-state contract: find and map this partition's regions.
//!
//! A partition process started by the executive inherits two file descriptors (named by
//! [`ENV_MODULE_FD`] and [`ENV_PARTITION_FD`]); [`PartitionContext::get`] maps them once per process.
//! A partition program started by hand (no executive) gets a *standalone* context: private regions
//! for a module of one partition, so partition code and its tests run without `partix run`.
#![allow(unsafe_code)]

use crate::state::{
    mode, ModuleState, PartitionState, ENV_MODULE_FD, ENV_PARTITION_FD, ENV_PARTITION_ID,
    LAYOUT_VERSION, MAGIC, MODULE_REGION_LEN, NO_REQUEST, PARTITION_REGION_LEN,
};
use partix_shm::{futex, Access, Region, RegionError};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

/// Failure of [`PartitionContext::get`].
#[derive(Debug)]
pub enum AttachError {
    /// An environment variable set by the executive is not a number.
    BadEnv(&'static str, String),
    /// Mapping a region failed.
    Region(RegionError),
    /// A region does not start with [`MAGIC`] / [`LAYOUT_VERSION`] (executive and partition built
    /// from different partix versions).
    BadLayout,
}

impl fmt::Display for AttachError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttachError::BadEnv(k, v) => write!(f, "environment variable {k}={v:?} is not a number"),
            AttachError::Region(e) => write!(f, "cannot map the module state: {e}"),
            AttachError::BadLayout => write!(
                f,
                "module state layout mismatch: the partition and `partix run` come from different builds"
            ),
        }
    }
}

impl std::error::Error for AttachError {}

/// This process's view of the module state.
#[derive(Debug)]
pub struct PartitionContext {
    module: Region,
    partition: Region,
    standalone: bool,
}

static CONTEXT: OnceLock<Result<PartitionContext, String>> = OnceLock::new();

/// Return `CLOCK_MONOTONIC` in nanoseconds (async-signal-safe).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

extern "C" fn on_sigcont(_sig: libc::c_int) {
    // Only atomics and clock_gettime: async-signal-safe.
    if let Some(Ok(ctx)) = CONTEXT.get() {
        let p = ctx.partition();
        p.resumed_at_ns.store(monotonic_ns(), Ordering::Release);
        p.resumed_seq.fetch_add(1, Ordering::AcqRel);
    }
}

impl PartitionContext {
    /// Return this process's context, attaching on first use.
    ///
    /// # Errors
    /// The attach error, rendered, if the executive's regions cannot be mapped (the same error on
    /// every call).
    pub fn get() -> Result<&'static PartitionContext, String> {
        CONTEXT
            .get_or_init(|| {
                let ctx = Self::attach().map_err(|e| e.to_string())?;
                install_sigcont_handler();
                Ok(ctx)
            })
            .as_ref()
            .map_err(|e| e.clone())
    }

    fn attach() -> Result<PartitionContext, AttachError> {
        let (Ok(mfd), Ok(pfd)) = (
            std::env::var(ENV_MODULE_FD),
            std::env::var(ENV_PARTITION_FD),
        ) else {
            return Self::standalone();
        };
        let mfd: i32 = mfd
            .parse()
            .map_err(|_| AttachError::BadEnv(ENV_MODULE_FD, mfd.clone()))?;
        let pfd: i32 = pfd
            .parse()
            .map_err(|_| AttachError::BadEnv(ENV_PARTITION_FD, pfd.clone()))?;
        // SAFETY: the executive passed these descriptors to this process for exactly this use;
        // nothing else in the process owns them.
        let module = unsafe { Region::from_raw_fd(mfd, MODULE_REGION_LEN, Access::ReadOnly) }
            .map_err(AttachError::Region)?;
        // SAFETY: as above.
        let partition =
            unsafe { Region::from_raw_fd(pfd, PARTITION_REGION_LEN, Access::ReadWrite) }
                .map_err(AttachError::Region)?;
        // Do not leak the variables into programs the partition might exec.
        std::env::remove_var(ENV_MODULE_FD);
        std::env::remove_var(ENV_PARTITION_FD);
        let ctx = PartitionContext {
            module,
            partition,
            standalone: false,
        };
        if ctx.module().magic != MAGIC
            || ctx.module().version != LAYOUT_VERSION
            || ctx.partition().magic != MAGIC
            || ctx.partition().version != LAYOUT_VERSION
        {
            return Err(AttachError::BadLayout);
        }
        Ok(ctx)
    }

    /// Build private regions for a module of one partition (no executive).
    fn standalone() -> Result<PartitionContext, AttachError> {
        let module =
            Region::create("partix-module", MODULE_REGION_LEN).map_err(AttachError::Region)?;
        let partition = Region::create("partix-partition", PARTITION_REGION_LEN)
            .map_err(AttachError::Region)?;
        let id = std::env::var(ENV_PARTITION_ID)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        // SAFETY: both regions are fresh, zero-filled, large enough and exclusively ours; the
        // all-zero bit pattern is valid for every field (integers and atomics).
        unsafe {
            init_module_state(module.as_ptr().cast(), 1, monotonic_ns());
            init_partition_state(partition.as_ptr().cast(), id, 0);
        }
        let ctx = PartitionContext {
            module,
            partition,
            standalone: true,
        };
        ctx.partition()
            .operating_mode
            .store(mode::COLD_START, Ordering::Release);
        Ok(ctx)
    }

    /// Return whether this partition runs without an executive (started by hand).
    pub fn is_standalone(&self) -> bool {
        self.standalone
    }

    /// Return the module-wide state (read-only mapping).
    pub fn module(&self) -> &ModuleState {
        // SAFETY: the region is at least MODULE_REGION_LEN bytes, page-aligned, initialised by the
        // executive (or by `standalone`) before this process started, and only accessed through
        // atomics after that.
        unsafe { &*self.module.as_ptr().cast::<ModuleState>() }
    }

    /// Return this partition's state.
    pub fn partition(&self) -> &PartitionState {
        // SAFETY: as for `module`, with PARTITION_REGION_LEN.
        unsafe { &*self.partition.as_ptr().cast::<PartitionState>() }
    }

    /// Return the module time: nanoseconds since the module's epoch (`GET_TIME`).
    pub fn now_ns(&self) -> u64 {
        monotonic_ns().saturating_sub(self.module().epoch_ns.load(Ordering::Relaxed))
    }

    /// Convert a module time to `CLOCK_MONOTONIC` nanoseconds.
    pub fn to_monotonic_ns(&self, module_ns: u64) -> u64 {
        module_ns.saturating_add(self.module().epoch_ns.load(Ordering::Relaxed))
    }

    /// Enter NORMAL mode (SET_PARTITION_MODE(NORMAL)) and tell the executive.
    pub fn set_normal(&self) {
        let p = self.partition();
        p.operating_mode.store(mode::NORMAL, Ordering::Release);
        futex::wake_all(&p.operating_mode);
    }

    /// Ask the executive to put this partition in `mode` (IDLE, COLD_START or WARM_START).
    ///
    /// In standalone mode there is no executive: the request is recorded and the process exits for
    /// IDLE; restarts are not possible and are reported as such by the caller.
    pub fn request_mode(&self, requested: u32) {
        let p = self.partition();
        p.requested_mode.store(requested, Ordering::Release);
        futex::wake_all(&p.operating_mode);
    }

    /// Ask the executive to switch to module schedule `id` at the next major-frame boundary.
    pub fn request_schedule(&self, id: u32) {
        self.partition()
            .requested_schedule
            .store(id, Ordering::Release);
    }
}

fn install_sigcont_handler() {
    // SAFETY: an all-zero sigaction is a valid starting point; we set the handler and an empty
    // mask, and the handler only does async-signal-safe work.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigcont as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGCONT, &sa, std::ptr::null_mut());
    }
}

/// Initialise a fresh, zero-filled module region.
///
/// # Safety
/// `m` must point to a writable, zero-filled region of at least [`MODULE_REGION_LEN`] bytes that no
/// other thread or process accesses yet.
pub unsafe fn init_module_state(m: *mut ModuleState, n_partitions: u32, epoch_ns: u64) {
    // SAFETY: the caller guarantees exclusive access to a large-enough zeroed region.
    unsafe {
        (*m).magic = MAGIC;
        (*m).version = LAYOUT_VERSION;
        (*m).n_partitions = n_partitions;
        (*m).epoch_ns.store(epoch_ns, Ordering::Relaxed);
    }
}

/// Initialise a fresh, zero-filled partition region.
///
/// # Safety
/// `p` must point to a writable, zero-filled region of at least [`PARTITION_REGION_LEN`] bytes that
/// no other thread or process accesses yet.
pub unsafe fn init_partition_state(p: *mut PartitionState, partition_id: u32, index: u32) {
    // SAFETY: the caller guarantees exclusive access to a large-enough zeroed region.
    unsafe {
        (*p).magic = MAGIC;
        (*p).version = LAYOUT_VERSION;
        (*p).partition_id = partition_id;
        (*p).index = index;
        (*p).requested_mode.store(NO_REQUEST, Ordering::Relaxed);
        (*p).requested_schedule.store(NO_REQUEST, Ordering::Relaxed);
    }
}

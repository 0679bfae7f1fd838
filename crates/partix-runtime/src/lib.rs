//! partix runtime: the module executive and the partition-side runtime.
//!
//! - [`state`]: the module state in shared memory, the contract between both sides.
//! - [`attach`]: the partition side's mapping of that state (or a standalone one).
//! - [`executive`]: the module executive (startup, cyclic scheduler, HM, `partix run`).
//! - [`partition`]: the partition-side APEX runtime (processes, time, modes, health monitor).
//! - [`trace`]: the schedule trace (Chrome/Perfetto trace-event JSON).
#![warn(missing_docs)]

pub mod attach;
pub mod channels;
pub mod executive;
pub mod partition;
pub mod state;
pub mod trace;
pub mod transport;

//! The frozen module model: what the runtime reads once the configuration is validated.
//!
//! Every type here is plain data. A [`Module`] is only built by [`crate::load`] /
//! [`crate::parse_str`] after validation, so the runtime may rely on the invariants documented on
//! each field (ids unique, windows inside the major frame and not overlapping, channel ends
//! existing, ...).

use std::path::PathBuf;
use std::time::Duration;

use crate::ConfigError;

/// Identifier of a partition (`PartitionIdentifier`, 1 ..= [`crate::MAX_IDENTIFIER`] when
/// loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartitionId(pub u32);

/// Identifier of a module schedule (`ScheduleIdentifier`, 1 ..= [`crate::MAX_IDENTIFIER`] when
/// loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScheduleId(pub u32);

/// Identifier of a channel (`ChannelIdentifier`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelId(pub u32);

/// A position in the configuration file, for messages that point back at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Location {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}

/// A validated ARINC 653 module configuration (`ARINC_653_Module`).
#[derive(Debug, Clone, PartialEq)]
pub struct Module {
    /// `ModuleName` (when absent: the configuration file's stem, or `module`).
    pub name: String,
    /// `ModuleVersion`, if given.
    pub version: Option<String>,
    /// The file this module was read from (used to resolve relative paths), if any.
    pub source: Option<PathBuf>,
    /// Partitions in file order. Ids and names are unique.
    pub partitions: Vec<Partition>,
    /// Module schedules in file order; at least one. Ids are unique.
    pub schedules: Vec<ModuleSchedule>,
    /// Index into `schedules` of the schedule marked `InitialModuleSchedule="true"` (or the only one).
    pub initial_schedule: usize,
    /// Channels of the `Connection_Table`.
    pub channels: Vec<Channel>,
    /// `System_HM_Table`: which code each error identifier stands for and the level it is handled
    /// at. All HM entries of a module have one `SystemState`, identifiers are unique, and each
    /// error code has one entry (the runtime looks errors up by code).
    pub system_hm: Vec<SystemHmEntry>,
    /// `Module_HM_Table`: module-level actions, one per (MODULE-level) error identifier.
    pub module_hm: Vec<ModuleHmEntry>,
}

impl Module {
    /// Return the partition with this id.
    pub fn partition(&self, id: PartitionId) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.id == id)
    }

    /// Return the index (0-based, file order) of the partition with this id.
    pub fn partition_index(&self, id: PartitionId) -> Option<usize> {
        self.partitions.iter().position(|p| p.id == id)
    }

    /// Return the schedule with this id.
    pub fn schedule(&self, id: ScheduleId) -> Option<&ModuleSchedule> {
        self.schedules.iter().find(|s| s.id == id)
    }

    /// Return the schedule the module starts in.
    ///
    /// # Panics
    /// Never for a validated module (it has at least one schedule and `initial_schedule` indexes it).
    pub fn initial(&self) -> &ModuleSchedule {
        &self.schedules[self.initial_schedule]
    }

    /// Return an error located at `location` in the file this module was read from, for a
    /// problem found after loading (a partition's program missing on this machine, a CPU it may
    /// not use), so that it reads like the errors of [`crate::load`]. A module built in code
    /// has no file and its partitions no locations: the error then names neither.
    pub fn error_at(
        &self,
        location: Location,
        message: impl Into<String>,
        help: impl Into<String>,
    ) -> ConfigError {
        ConfigError {
            file: self.source.clone(),
            location,
            message: message.into(),
            help: help.into(),
        }
    }

    /// Return the partition with this name.
    pub fn partition_by_name(&self, name: &str) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.name == name)
    }

    /// Return the channel connecting port `port` of partition `partition` (as source or as a
    /// destination); `None` if the port is not connected.
    pub fn channel_of(&self, partition: PartitionId, port: &str) -> Option<&Channel> {
        self.channels.iter().find(|c| {
            (c.source.partition == partition && c.source.port == port)
                || c.destinations
                    .iter()
                    .any(|d| d.partition == partition && d.port == port)
        })
    }
}

/// Criticality level (`Criticality`), DO-178 levels A (highest) to E.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Criticality {
    /// Level A.
    LevelA,
    /// Level B.
    LevelB,
    /// Level C.
    LevelC,
    /// Level D.
    LevelD,
    /// Level E.
    LevelE,
}

/// partix extension `DescriptorTable`: whether the APEX processes of a partition share one file
/// descriptor table (POSIX semantics for threads) or each has its own copy, made when the process
/// first runs in NORMAL mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum DescriptorTable {
    /// One table for the whole partition (the default).
    #[default]
    Shared,
    /// Each process copies the partition's table when it first runs in NORMAL mode
    /// (`unshare(CLONE_FILES)`): it keeps every descriptor open then (the ports' sockets
    /// included), and what it opens or closes later is its own. The kernel then takes no file
    /// reference in its socket calls (about 70 ns each on the 2-vCPU VM); see `docs/ports.md`.
    PerProcess,
}

/// The numeric user and group a partition runs as (`partix:User`).
///
/// The executive (root) gives the partition's process these ids, no supplementary groups, and no
/// capabilities before it runs the partition's program: the partition can then no longer signal
/// the executive or another partition under another user, raise itself above the executive
/// (`SCHED_FIFO` 99), write its cgroup's files, or re-open a region it was granted read-only
/// as writable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credentials {
    /// The user id (real, effective and saved).
    pub uid: u32,
    /// The group id (real, effective and saved); the user id when not given.
    pub gid: u32,
}

/// One partition (`Partition` plus its `Partition_Memory` and `Partition_HM_Table`).
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    /// `PartitionIdentifier`.
    pub id: PartitionId,
    /// `PartitionName` (when absent: `partition<ID>`); at most 30 bytes.
    pub name: String,
    /// `Criticality` (`LEVEL_A` when absent, as in the schema).
    pub criticality: Criticality,
    /// `SystemPartition`: may call module-level services such as `SET_MODULE_SCHEDULE`.
    pub system_partition: bool,
    /// `EntryPoint`: the symbol the partition starts at (informational for executables: their `main`;
    /// `main` when absent).
    pub entry_point: String,
    /// partix extension: the program this partition runs (resolved against the config's directory
    /// when relative and containing a `/`; otherwise looked up beside the `partix` binary, then in `PATH`).
    /// A path ending in `.c` is a C partition built by `partix` against its APEX library; a
    /// relative `.c` path is always resolved against the config's directory, even without a `/`
    /// (`partix:Executable="ofp.c"` in `examples/uav/module.xml` becomes `examples/uav/ofp.c`).
    pub executable: Option<PathBuf>,
    /// Where the value of `partix:Executable` starts in the file (`None`: not given, or a
    /// partition built in code), for errors about the program found after loading.
    pub executable_location: Option<Location>,
    /// partix extension: extra command-line arguments for the executable.
    pub args: Vec<String>,
    /// partix extension: CPUs the partition's process may run on (`Affinity="0,1"`); `None` = the
    /// executive's default.
    pub affinity: Option<Vec<usize>>,
    /// Where the value of `partix:Affinity` starts in the file (`None`: not given, or a
    /// partition built in code), for errors about a CPU this machine does not let partix use.
    pub affinity_location: Option<Location>,
    /// partix extension: one descriptor table for the partition's processes, or one each
    /// (`DescriptorTable="per-process"`).
    pub descriptor_table: DescriptorTable,
    /// partix extension: the user and group the partition's process runs as (`User="61001"` or
    /// `"61001:61001"`); `None` = the executive's own credentials.
    pub user: Option<Credentials>,
    /// `Partition_Memory/Memory_Requirements`.
    pub memory: Vec<MemoryRequirement>,
    /// Sampling ports (`Sampling_Port`), names unique within the partition.
    pub sampling_ports: Vec<SamplingPortConfig>,
    /// Queuing ports (`Queuing_Port`), names unique within the partition.
    pub queuing_ports: Vec<QueuingPortConfig>,
    /// `Partition_HM_Table` of this partition (empty if none is given): at most one action per
    /// error code, none for a code handled at MODULE level.
    pub hm: Vec<PartitionHmEntry>,
    /// Where the `Partition` element starts in the file.
    pub location: Location,
}

impl Partition {
    /// A partition built in code (benchmarks, tests): `id`, `name`, the program and its
    /// arguments, and the schema's defaults for everything else (`LEVEL_A`, not a system
    /// partition, entry point `main`, no ports, memory, HM table, affinity or user).
    pub fn program(id: u32, name: &str, executable: Option<PathBuf>, args: Vec<String>) -> Self {
        Partition {
            id: PartitionId(id),
            name: name.into(),
            criticality: Criticality::LevelA,
            system_partition: false,
            entry_point: "main".into(),
            executable,
            executable_location: None,
            args,
            affinity: None,
            affinity_location: None,
            descriptor_table: DescriptorTable::default(),
            user: None,
            memory: Vec::new(),
            sampling_ports: Vec::new(),
            queuing_ports: Vec::new(),
            hm: Vec::new(),
            location: Location::default(),
        }
    }

    /// Return the sampling port with this name.
    pub fn sampling_port(&self, name: &str) -> Option<&SamplingPortConfig> {
        self.sampling_ports.iter().find(|p| p.name == name)
    }

    /// Return the queuing port with this name.
    pub fn queuing_port(&self, name: &str) -> Option<&QueuingPortConfig> {
        self.queuing_ports.iter().find(|p| p.name == name)
    }

    /// Return the recovery action of the partition HM table for `code` in `system_state`.
    pub fn hm_action(&self, system_state: u32, code: ErrorCode) -> Option<PartitionAction> {
        self.hm
            .iter()
            .find(|e| e.system_state == system_state && e.code == code)
            .map(|e| e.action)
    }

    /// Return the memory limit: the sum of `SizeBytes` of all memory requirements, if any are
    /// given. The sum saturates at `u64::MAX` (no limit) for a model built in code: a validated
    /// module's sum always fits.
    pub fn memory_limit_bytes(&self) -> Option<u64> {
        if self.memory.is_empty() {
            None
        } else {
            Some(
                self.memory
                    .iter()
                    .fold(0u64, |sum, m| sum.saturating_add(m.size_bytes)),
            )
        }
    }
}

/// Kind of a memory region (`Type` of `Memory_Requirements`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    /// `CODE`.
    Code,
    /// `DATA`.
    Data,
    /// `INPUT_OUTPUT`.
    InputOutput,
}

/// Access rights of a memory region (`Access`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryAccess {
    /// `READ_ONLY`.
    ReadOnly,
    /// `READ_WRITE`.
    ReadWrite,
}

/// One `Memory_Requirements` element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryRequirement {
    /// `RegionName`, if given.
    pub name: Option<String>,
    /// `Type`.
    pub kind: MemoryKind,
    /// `SizeBytes` (> 0; the sizes of a partition's requirements add up to at most `u64::MAX`).
    pub size_bytes: u64,
    /// `Access`.
    pub access: MemoryAccess,
}

/// Direction of a port (`Direction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortDirection {
    /// `SOURCE`: the partition writes/sends.
    Source,
    /// `DESTINATION`: the partition reads/receives.
    Destination,
}

/// One `Sampling_Port`.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingPortConfig {
    /// `Name` (at most 30 bytes).
    pub name: String,
    /// `MaxMessageSize` in bytes (> 0).
    pub max_message_size: u32,
    /// `Direction`.
    pub direction: PortDirection,
    /// `RefreshRateSeconds`.
    pub refresh_period: Duration,
    /// `partix:ReceiveMode`: how a process waits on this port (`None`: the runtime's default).
    pub receive_mode: Option<ReceiveMode>,
    /// Where the element starts.
    pub location: Location,
}

/// One `Queuing_Port`.
#[derive(Debug, Clone, PartialEq)]
pub struct QueuingPortConfig {
    /// `Name` (at most 30 bytes).
    pub name: String,
    /// `MaxMessageSize` in bytes (> 0).
    pub max_message_size: u32,
    /// `Direction`.
    pub direction: PortDirection,
    /// `MaxNbMessages` (> 0).
    pub max_nb_messages: u32,
    /// `partix:ReceiveMode`: how a process waits on this port (`None`: the runtime's default).
    pub receive_mode: Option<ReceiveMode>,
    /// Where the element starts.
    pub location: Location,
}

/// `partix:ReceiveMode` of a port (partix extension): how a process waiting on the port (a
/// receive, a sampling wait, a queuing send on a full channel) waits. The integrator chooses it
/// per port, like the transport per channel: spinning burns the partition's CPU for the lowest
/// latency; blocking frees it at the cost of a kernel wake-up per message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReceiveMode {
    /// `spin`: poll the channel until the message or the time-out.
    Spin,
    /// `spin-then-park` or `spin-then-park:N`: poll N times (the runtime's default N without
    /// `:N`), then sleep in the kernel.
    SpinThenPark {
        /// Polls before sleeping (`None`: the runtime's default).
        spins: Option<u32>,
    },
    /// `blocking`: sleep in the kernel at once.
    Blocking,
}

/// One `Module_Schedule`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleSchedule {
    /// `ScheduleIdentifier`.
    pub id: ScheduleId,
    /// `ScheduleName`, if given; at most 30 bytes.
    pub name: Option<String>,
    /// `MajorFrameSeconds` (> 0).
    pub major_frame: Duration,
    /// Per-partition requirements and windows (`Partition_Schedule`).
    pub partitions: Vec<PartitionSchedule>,
    /// All windows of all partitions, sorted by offset; non-overlapping, inside the major frame.
    pub windows: Vec<Window>,
    /// Where the element starts.
    pub location: Location,
}

impl ModuleSchedule {
    /// Return the period/duration requirement of `partition` in this schedule (`None`: the
    /// partition does not run while this schedule is active).
    pub fn partition_schedule(&self, partition: PartitionId) -> Option<&PartitionSchedule> {
        self.partitions.iter().find(|p| p.partition == partition)
    }

    /// Return the windows of `partition`, in offset order.
    pub fn windows_of(&self, partition: PartitionId) -> impl Iterator<Item = &Window> + '_ {
        self.windows
            .iter()
            .filter(move |w| w.partition == partition)
    }
}

/// One `Partition_Schedule`: the period/duration requirement of a partition in a schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionSchedule {
    /// The partition.
    pub partition: PartitionId,
    /// `PeriodSeconds` (divides the major frame).
    pub period: Duration,
    /// `PeriodDurationSeconds`: the time the partition needs in each period.
    pub duration: Duration,
}

/// One `Window_Schedule`: a time window of a partition inside the major frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// `WindowIdentifier`.
    pub id: u32,
    /// The partition that owns the window.
    pub partition: PartitionId,
    /// `WindowStartSeconds`: offset from the start of the major frame.
    pub offset: Duration,
    /// `WindowDurationSeconds` (> 0).
    pub duration: Duration,
    /// `PartitionPeriodStart`: this window starts a period of the partition (release point).
    pub period_start: bool,
}

/// One `Channel` of the `Connection_Table`.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    /// `ChannelIdentifier`.
    pub id: ChannelId,
    /// `ChannelName`, if given.
    pub name: Option<String>,
    /// The source port.
    pub source: PortRef,
    /// The destination ports (several for a multicast sampling channel).
    pub destinations: Vec<PortRef>,
    /// Whether the ports are sampling or queuing ports (both ends agree).
    pub kind: ChannelKind,
    /// partix extension: the transport (`Transport="one-sided"`, ...); `None` = the default.
    pub transport: Option<String>,
    /// partix extension, `two-sided` channels only: who moves a message from the TX ring to the
    /// RX ring (`Delivery="helped"` or `"manager"`); `None` = the default ([`Delivery::Helped`]).
    pub delivery: Option<Delivery>,
    /// Where the element starts.
    pub location: Location,
}

/// partix extension `partix:Delivery` of a `two-sided` channel: who moves its messages from the
/// source's TX ring to the destination's RX ring (`docs/ports.md`, "Delivery").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Delivery {
    /// `helped` (the default): the destination's network manager thread delivers while no
    /// process reads the port; a process reading or waiting on the port moves the message
    /// itself (no thread hop).
    #[default]
    Helped,
    /// `manager`: the paper's design: only the network manager thread delivers (woken by the
    /// source's doorbell); readers read the RX ring and wait on its data notifier.
    Manager,
}

impl Delivery {
    /// The configuration name (`helped`, `manager`).
    pub fn name(self) -> &'static str {
        match self {
            Delivery::Helped => "helped",
            Delivery::Manager => "manager",
        }
    }
}

/// Kind of the ports a channel connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelKind {
    /// Sampling ports.
    Sampling,
    /// Queuing ports.
    Queuing,
}

/// One end of a channel (`Standard_Partition` or `Pseudo_Partition`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortRef {
    /// The partition.
    pub partition: PartitionId,
    /// `PortName`.
    pub port: String,
}

/// The error codes of the health monitor (ARINC 653 `ERROR_CODE_TYPE` plus the HM's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// `DEADLINE_MISSED`.
    DeadlineMissed,
    /// `APPLICATION_ERROR`.
    ApplicationError,
    /// `NUMERIC_ERROR` (e.g. SIGFPE).
    NumericError,
    /// `ILLEGAL_REQUEST` (e.g. SIGILL, an APEX call in the wrong mode).
    IllegalRequest,
    /// `STACK_OVERFLOW`.
    StackOverflow,
    /// `MEMORY_VIOLATION` (e.g. SIGSEGV, SIGBUS).
    MemoryViolation,
    /// `HARDWARE_FAULT`.
    HardwareFault,
    /// `POWER_FAIL`.
    PowerFail,
    /// partix: the partition process ended without being asked to (exit, abort, kill -9).
    PartitionCrash,
    /// partix: a partition did not reach NORMAL within its initialisation time.
    InitTimeout,
}

/// Level an error is handled at (`ErrorLevel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorLevel {
    /// `MODULE`.
    Module,
    /// `PARTITION`.
    Partition,
    /// `PROCESS`.
    Process,
}

/// One `Error_ID_Level` of the `System_HM_Table`.
#[derive(Debug, Clone, PartialEq)]
pub struct SystemHmEntry {
    /// `SystemState`.
    pub system_state: u32,
    /// `ErrorIdentifier`.
    pub error_id: u32,
    /// The error code the identifier stands for (`ErrorCode`, or derived from `Description`).
    pub code: ErrorCode,
    /// `ErrorLevel`.
    pub level: ErrorLevel,
}

/// Module-level recovery action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleAction {
    /// `IGNORE`.
    Ignore,
    /// `SHUTDOWN`: stop the module.
    Shutdown,
    /// `RESET`: restart the module (all partitions cold start).
    Reset,
}

/// One `Error_ID_Action` of the `Module_HM_Table`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleHmEntry {
    /// `SystemState`.
    pub system_state: u32,
    /// `ErrorIdentifier`.
    pub error_id: u32,
    /// `Action`.
    pub action: ModuleAction,
}

/// Partition-level (and process-level) recovery action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionAction {
    /// `IGNORE`: log and go on.
    Ignore,
    /// `STOP_PROCESS` (partix): stop the faulty process.
    StopProcess,
    /// `RESTART_PROCESS` (partix): stop and start the faulty process again.
    RestartProcess,
    /// `IDLE`: stop the partition.
    Idle,
    /// `WARM_START`: restart the partition (warm).
    WarmStart,
    /// `COLD_START`: restart the partition (cold).
    ColdStart,
}

/// One `Error_ID_Action` of a `Partition_HM_Table`.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionHmEntry {
    /// `SystemState`.
    pub system_state: u32,
    /// `ErrorIdentifier`.
    pub error_id: u32,
    /// The error code this action applies to (`ErrorCode`, or looked up through the system table).
    pub code: ErrorCode,
    /// `Action`.
    pub action: PartitionAction,
}

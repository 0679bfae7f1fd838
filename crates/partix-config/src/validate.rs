//! Stage 2: cross-reference checks on a [`RawModule`], producing the frozen [`Module`].
//!
//! Checks here need more than one element: unique ids and names, partition references, schedule
//! windows against each other and against the major frame and each partition's period/duration,
//! channel ends against ports, HM tables against the system table.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{ConfigError, ConfigErrors, ErrorSink};
use crate::model::*;
use crate::parse::{
    error_code_name, RawModule, RawPartRef, RawPartition, RawPortRef, RawSchedule, RawWindow,
    MAX_PORTS_PER_KIND, MAX_SAMPLING_MESSAGE_SIZE, MAX_SOCKET_BUFFER, MAX_TWO_SIDED_MESSAGE_SIZE,
    MAX_UDP_MESSAGE_SIZE,
};
use crate::value;

struct Checker<'a> {
    file: Option<&'a Path>,
    errors: ErrorSink,
}

fn at(l: Location) -> String {
    format!("{}:{}", l.line, l.col)
}

/// Format a duration as milliseconds, exactly (`10 ms`, `0.5 ms`, `0.000001 ms`).
pub(crate) fn ms(d: Duration) -> String {
    let n = d.as_nanos();
    let whole = n / 1_000_000;
    let frac = n % 1_000_000;
    if frac == 0 {
        format!("{whole} ms")
    } else {
        let f = format!("{frac:06}");
        format!("{whole}.{} ms", f.trim_end_matches('0'))
    }
}

impl Checker<'_> {
    fn err(&mut self, location: Location, message: impl Into<String>, help: impl Into<String>) {
        self.errors.push(ConfigError {
            file: self.file.map(Path::to_path_buf),
            location,
            message: message.into(),
            help: help.into(),
        });
    }
}

/// Partition lookup built from the validated partitions.
struct Parts {
    list: Vec<Partition>,
    by_id: HashMap<u32, usize>,
    by_name: HashMap<String, usize>,
    /// "1 (A), 2 (B), ..." for help texts (at most [`LIST_MAX`] entries).
    described: String,
}

/// Most items listed in one help text.
const LIST_MAX: usize = 12;

/// Join at most [`LIST_MAX`] items, saying how many were left out.
fn short_list(items: impl Iterator<Item = String>) -> String {
    let mut v: Vec<String> = Vec::new();
    let mut more = 0usize;
    for it in items {
        if v.len() < LIST_MAX {
            v.push(it);
        } else {
            more += 1;
        }
    }
    let mut out = v.join(", ");
    if more > 0 {
        out.push_str(&format!(" and {more} more"));
    }
    out
}

impl Parts {
    fn describe(&self) -> &str {
        &self.described
    }

    /// Resolve a partition reference; report unknown ids and mismatching names.
    fn resolve(&self, c: &mut Checker, r: &RawPartRef, what: &str) -> Option<usize> {
        let Some(&idx) = self.by_id.get(&r.id.v) else {
            let by_name = r
                .name
                .as_ref()
                .and_then(|n| self.by_name.get(&n.v))
                .map(|&i| &self.list[i]);
            let help = match by_name {
                Some(p) => format!(
                    "partition `{}` has PartitionIdentifier=\"{}\"; use that",
                    p.name, p.id.0
                ),
                None if self.list.is_empty() => "declare the partition with <Partition>".into(),
                None => format!("the partitions are: {}", self.describe()),
            };
            c.err(
                r.id.loc,
                format!("{what} names unknown partition {}", r.id.v),
                help,
            );
            return None;
        };
        if let Some(n) = &r.name {
            let p = &self.list[idx];
            if n.v != p.name {
                c.err(
                    n.loc,
                    format!(
                        "PartitionName `{}` does not match partition {}, which is named `{}`",
                        n.v, p.id.0, p.name
                    ),
                    format!(
                        "write PartitionName=\"{}\", or fix PartitionIdentifier",
                        p.name
                    ),
                );
            }
        }
        Some(idx)
    }
}

/// Validate `raw` and build the frozen model.
pub(crate) fn validate(raw: RawModule, file: Option<&Path>) -> Result<Module, ConfigErrors> {
    let mut c = Checker {
        file,
        errors: ErrorSink::default(),
    };
    let mut parts = partitions(&mut c, &raw.partitions, file);
    memories(&mut c, &raw, &mut parts);
    let (schedules, initial) = schedules(&mut c, &raw, &parts);
    let channels = channels(&mut c, &raw, &parts);
    let (system_hm, module_hm) = hm(&mut c, &raw, &mut parts);
    if let Some(errors) = c.errors.finish() {
        return Err(errors);
    }
    let name = raw.name.unwrap_or_else(|| {
        file.and_then(|f| f.file_stem())
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "module".to_string())
    });
    Ok(Module {
        name,
        version: raw.version,
        source: file.map(Path::to_path_buf),
        partitions: parts.list,
        schedules,
        initial_schedule: initial,
        channels,
        system_hm,
        module_hm,
    })
}

/// Resolve `partix:Executable` (see the field's docs).
fn resolve_executable(exe: &str, file: Option<&Path>) -> PathBuf {
    let p = PathBuf::from(exe);
    let relative_to_config = p.is_relative() && (exe.contains('/') || exe.ends_with(".c"));
    match file.and_then(Path::parent) {
        Some(dir) if relative_to_config && !dir.as_os_str().is_empty() => dir.join(p),
        _ => p,
    }
}

fn partitions(c: &mut Checker, raw: &[RawPartition], file: Option<&Path>) -> Parts {
    let mut parts = Parts {
        list: Vec::new(),
        by_id: HashMap::new(),
        by_name: HashMap::new(),
        described: String::new(),
    };
    let mut names: HashMap<String, Location> = HashMap::new();
    let mut id_locs: HashMap<u32, Location> = HashMap::new();
    let mut users: HashMap<u32, (String, Location)> = HashMap::new();
    for rp in raw {
        if let Some(first) = id_locs.get(&rp.id.v) {
            c.err(
                rp.id.loc,
                format!(
                    "duplicate PartitionIdentifier {} (first used at {})",
                    rp.id.v,
                    at(*first)
                ),
                "give every partition its own PartitionIdentifier",
            );
            continue;
        }
        id_locs.insert(rp.id.v, rp.id.loc);
        let name = match &rp.name {
            Some(n) => n.v.clone(),
            None => format!("partition{}", rp.id.v),
        };
        let name_loc = rp.name.as_ref().map_or(rp.loc, |n| n.loc);
        if let Some(first) = names.get(&name) {
            c.err(
                name_loc,
                format!(
                    "duplicate PartitionName `{name}` (first used at {})",
                    at(*first)
                ),
                "give every partition its own PartitionName",
            );
        } else {
            names.insert(name.clone(), name_loc);
        }
        // Port names are unique per partition, across sampling and queuing ports (a channel end
        // names a port by name only).
        let mut ports: HashMap<&str, Location> = HashMap::new();
        let all = rp
            .sampling
            .iter()
            .map(|p| (p.name.as_str(), p.location))
            .chain(rp.queuing.iter().map(|p| (p.name.as_str(), p.location)));
        for (pname, loc) in all {
            if let Some(first) = ports.get(pname) {
                c.err(
                    loc,
                    format!(
                        "duplicate port name `{pname}` in partition `{}` (first declared at {})",
                        name,
                        at(*first)
                    ),
                    "give every port of a partition its own Name",
                );
            } else {
                ports.insert(pname, loc);
            }
        }
        // The runtime creates at most MAX_NUMBER_OF_PORTS ports of each kind per partition.
        for (kind, locs) in [
            (
                "sampling",
                rp.sampling.iter().map(|p| p.location).collect::<Vec<_>>(),
            ),
            ("queuing", rp.queuing.iter().map(|p| p.location).collect()),
        ] {
            if let Some(loc) = locs.get(MAX_PORTS_PER_KIND) {
                c.err(
                    *loc,
                    format!(
                        "partition `{name}` declares {} {kind} ports, more than {MAX_PORTS_PER_KIND}",
                        locs.len()
                    ),
                    format!(
                        "a partition has at most {MAX_PORTS_PER_KIND} sampling and {MAX_PORTS_PER_KIND} queuing ports (the runtime's MAX_NUMBER_OF_PORTS): remove ports or move some to another partition"
                    ),
                );
            }
        }
        for sp in &rp.sampling {
            if sp.direction == PortDirection::Destination && sp.refresh_period.is_zero() {
                c.err(
                    sp.location,
                    format!("destination sampling port `{}` has RefreshRateSeconds 0: no message would ever be valid", sp.name),
                    "give the time after which a message is stale, e.g. RefreshRateSeconds=\"0.02\"",
                );
            }
        }
        if let Some(u) = &rp.user {
            // Two partitions under one user could signal each other and open each other's
            // /proc files: the point of partix:User is that they cannot.
            if let Some((other, first)) = users.get(&u.v.uid) {
                c.err(
                    u.loc,
                    format!(
                        "partition `{name}` runs as user {}, as partition `{other}` does (at {}): each could signal the other",
                        u.v.uid,
                        at(*first)
                    ),
                    "give each partition its own user id (partix:User)",
                );
            } else {
                users.insert(u.v.uid, (name.clone(), u.loc));
            }
        }
        let executable = rp
            .executable
            .as_ref()
            .map(|e| resolve_executable(&e.v, file));
        parts.by_id.insert(rp.id.v, parts.list.len());
        parts
            .by_name
            .entry(name.clone())
            .or_insert(parts.list.len());
        parts.list.push(Partition {
            id: PartitionId(rp.id.v),
            name,
            criticality: rp.criticality,
            system_partition: rp.system_partition,
            entry_point: rp.entry_point.clone().unwrap_or_else(|| "main".to_string()),
            executable,
            executable_location: rp.executable.as_ref().map(|e| e.loc),
            args: rp.args.clone(),
            affinity: rp.affinity.as_ref().map(|a| a.v.clone()),
            affinity_location: rp.affinity.as_ref().map(|a| a.loc),
            descriptor_table: rp.descriptor_table,
            user: rp.user.as_ref().map(|u| u.v),
            memory: Vec::new(),
            sampling_ports: rp.sampling.clone(),
            queuing_ports: rp.queuing.clone(),
            hm: Vec::new(),
            location: rp.loc,
        });
    }
    parts.described = short_list(
        parts
            .list
            .iter()
            .map(|p| format!("{} ({})", p.id.0, p.name)),
    );
    parts
}

fn memories(c: &mut Checker, raw: &RawModule, parts: &mut Parts) {
    let mut seen: HashMap<usize, Location> = HashMap::new();
    for m in &raw.memories {
        let Some(idx) = parts.resolve(c, &m.part, "<Partition_Memory>") else {
            continue;
        };
        if let Some(first) = seen.get(&idx) {
            c.err(
                m.loc,
                format!(
                    "second <Partition_Memory> for partition `{}` (the first is at {})",
                    parts.list[idx].name,
                    at(*first)
                ),
                "put all Memory_Requirements of a partition in one <Partition_Memory>",
            );
            continue;
        }
        seen.insert(idx, m.loc);
        // The executive limits the partition to the sum (its cgroup's memory.max, RLIMIT_AS).
        let total = m
            .regions
            .iter()
            .try_fold(0u64, |sum, r| sum.checked_add(r.size_bytes));
        if total.is_none() {
            c.err(
                m.loc,
                format!(
                    "the Memory_Requirements of partition `{}` add up to more than {} bytes",
                    parts.list[idx].name,
                    u64::MAX
                ),
                "check each SizeBytes: the partition's memory limit is their sum, which must fit in 64 bits",
            );
            continue;
        }
        parts.list[idx].memory = m.regions.clone();
    }
}

fn schedules(c: &mut Checker, raw: &RawModule, parts: &Parts) -> (Vec<ModuleSchedule>, usize) {
    let mut out = Vec::new();
    if raw.schedules.is_empty() {
        c.err(
            raw.loc,
            "the module has no <Module_Schedule>",
            "add <Module_Schedule ScheduleIdentifier=\"1\" MajorFrameSeconds=\"...\"> with a <Partition_Schedule> and its <Window_Schedule>s for each partition",
        );
        return (out, 0);
    }
    let several = raw.schedules.len() > 1;
    let mut ids: HashMap<u32, Location> = HashMap::new();
    let mut names: HashMap<&str, Location> = HashMap::new();
    let mut initials: Vec<(usize, Location)> = Vec::new();
    let mut scheduled = vec![false; parts.list.len()];
    for (si, rs) in raw.schedules.iter().enumerate() {
        let id = match &rs.id {
            Some(id) => {
                if let Some(first) = ids.get(&id.v) {
                    c.err(
                        id.loc,
                        format!(
                            "duplicate ScheduleIdentifier {} (first used at {})",
                            id.v,
                            at(*first)
                        ),
                        "give every Module_Schedule its own ScheduleIdentifier",
                    );
                } else {
                    ids.insert(id.v, id.loc);
                }
                id.v
            }
            None if several => {
                c.err(
                    rs.loc,
                    "<Module_Schedule> has no ScheduleIdentifier, and the module has several schedules",
                    "add ScheduleIdentifier=\"N\" (SET_MODULE_SCHEDULE names schedules by it)",
                );
                0
            }
            None => 1,
        };
        if let Some(n) = &rs.name {
            if let Some(first) = names.get(n.v.as_str()) {
                c.err(
                    n.loc,
                    format!(
                        "duplicate ScheduleName `{}` (first used at {})",
                        n.v,
                        at(*first)
                    ),
                    "give every Module_Schedule its own ScheduleName",
                );
            } else {
                names.insert(n.v.as_str(), n.loc);
            }
        }
        if let Some(i) = &rs.initial {
            if i.v {
                initials.push((si, i.loc));
            }
        }
        let (pscheds, windows) = one_schedule(c, rs, parts, &mut scheduled);
        out.push(ModuleSchedule {
            id: ScheduleId(id),
            name: rs.name.as_ref().map(|n| n.v.clone()),
            major_frame: rs.major_frame.v,
            partitions: pscheds,
            windows,
            location: rs.loc,
        });
    }
    let initial = if !several {
        0
    } else {
        match initials.as_slice() {
            [] => {
                c.err(
                    raw.schedules[0].loc,
                    "no <Module_Schedule> is marked InitialModuleSchedule=\"true\"",
                    "mark exactly one schedule with InitialModuleSchedule=\"true\": the one the module starts in",
                );
                0
            }
            [(i, _)] => *i,
            [(i, first), rest @ ..] => {
                for (_, loc) in rest {
                    c.err(
                        *loc,
                        format!(
                            "a second schedule is marked initial (the first is at {})",
                            at(*first)
                        ),
                        "mark exactly one schedule with InitialModuleSchedule=\"true\"",
                    );
                }
                *i
            }
        }
    };
    // Only a system partition can switch schedules (SET_MODULE_SCHEDULE): without one, the
    // module stays in its initial schedule for good.
    if several && initials.len() == 1 && !parts.list.iter().any(|p| p.system_partition) {
        for (si, rs) in raw.schedules.iter().enumerate() {
            if si == initial {
                continue;
            }
            let what = match (&rs.name, &rs.id) {
                (Some(n), _) => format!("schedule `{}`", n.v),
                (None, Some(id)) => format!("schedule {}", id.v),
                (None, None) => "this schedule".to_string(),
            };
            c.err(
                rs.loc,
                format!(
                    "{what} can never run: it is not the initial schedule, and no partition has SystemPartition=\"true\" to switch to it with SET_MODULE_SCHEDULE"
                ),
                format!(
                    "mark the partition that switches schedules with SystemPartition=\"true\", or remove {what}"
                ),
            );
        }
    }
    for (i, p) in parts.list.iter().enumerate() {
        if !scheduled[i] {
            c.err(
                p.location,
                format!("partition {} (`{}`) has no window in any schedule: it would never run", p.id.0, p.name),
                "add a <Partition_Schedule> with <Window_Schedule>s for it to a <Module_Schedule>, or remove the partition",
            );
        }
    }
    (out, initial)
}

/// Check one schedule; return its partition requirements and its windows sorted by offset.
fn one_schedule(
    c: &mut Checker,
    rs: &RawSchedule,
    parts: &Parts,
    scheduled: &mut [bool],
) -> (Vec<PartitionSchedule>, Vec<Window>) {
    let mf = rs.major_frame.v;
    let sched_name = match (&rs.id, &rs.name) {
        (_, Some(n)) => format!("schedule `{}`", n.v),
        (Some(id), None) => format!("schedule {}", id.v),
        (None, None) => "the schedule".to_string(),
    };
    if mf.is_zero() {
        c.err(
            rs.major_frame.loc,
            "MajorFrameSeconds is 0",
            "give the length of the major frame, e.g. MajorFrameSeconds=\"0.08\"",
        );
    }
    let mut out = Vec::new();
    // (window, location, partition name)
    let mut all: Vec<(Window, Location)> = Vec::new();
    let mut seen_parts: HashMap<usize, Location> = HashMap::new();
    let mut win_ids: HashMap<u32, Location> = HashMap::new();
    for ps in &rs.partitions {
        let Some(idx) = parts.resolve(c, &ps.part, "<Partition_Schedule>") else {
            continue;
        };
        let p = &parts.list[idx];
        if let Some(first) = seen_parts.get(&idx) {
            c.err(
                ps.loc,
                format!("partition `{}` has a second <Partition_Schedule> in {sched_name} (the first is at {})", p.name, at(*first)),
                "put all windows of a partition in one <Partition_Schedule> per schedule",
            );
            continue;
        }
        seen_parts.insert(idx, ps.loc);
        let period = ps.period.v;
        let duration = ps.duration.v;
        let mut period_ok = true;
        if period.is_zero() {
            c.err(
                ps.period.loc,
                "PeriodSeconds is 0",
                "give the partition's period, e.g. PeriodSeconds=\"0.02\"",
            );
            period_ok = false;
        } else if !mf.is_zero() && !mf.as_nanos().is_multiple_of(period.as_nanos()) {
            c.err(
                ps.period.loc,
                format!(
                    "the period of `{}` ({}) does not divide the major frame of {sched_name} ({})",
                    p.name,
                    ms(period),
                    ms(mf)
                ),
                "choose a period that divides MajorFrameSeconds evenly, so every major frame repeats the same periods",
            );
            period_ok = false;
        }
        if duration > period && !period.is_zero() {
            c.err(
                ps.duration.loc,
                format!(
                    "PeriodDurationSeconds ({}) of `{}` is longer than its PeriodSeconds ({})",
                    ms(duration),
                    p.name,
                    ms(period)
                ),
                "the time needed in each period cannot exceed the period",
            );
            period_ok = false;
        }
        if ps.windows.is_empty() {
            c.err(
                ps.loc,
                format!("partition `{}` has no <Window_Schedule> in {sched_name}", p.name),
                "add <Window_Schedule WindowIdentifier=\"N\" WindowStartSeconds=\"...\" WindowDurationSeconds=\"...\"/>, or remove this <Partition_Schedule> if the partition must not run in this schedule",
            );
            period_ok = false;
        } else {
            scheduled[idx] = true;
        }
        let mut mine: Vec<(Duration, Duration)> = Vec::new();
        for w in &ps.windows {
            if let Some(first) = win_ids.get(&w.id.v) {
                c.err(
                    w.id.loc,
                    format!(
                        "duplicate WindowIdentifier {} in {sched_name} (first used at {})",
                        w.id.v,
                        at(*first)
                    ),
                    "give every window of a schedule its own WindowIdentifier",
                );
            } else {
                win_ids.insert(w.id.v, w.id.loc);
            }
            let end = w.start.v + w.duration.v;
            if w.duration.v.is_zero() {
                c.err(
                    w.duration.loc,
                    format!("window {} of `{}` has length 0", w.id.v, p.name),
                    "give the window a positive WindowDurationSeconds, or remove it",
                );
                period_ok = false;
                continue;
            }
            if !mf.is_zero() && end > mf {
                c.err(
                    w.loc,
                    format!(
                        "window {} of `{}` ({} + {} = {}) ends after the major frame of {sched_name} ({})",
                        w.id.v,
                        p.name,
                        ms(w.start.v),
                        ms(w.duration.v),
                        ms(end),
                        ms(mf)
                    ),
                    "move or shorten the window so that WindowStartSeconds + WindowDurationSeconds <= MajorFrameSeconds",
                );
                period_ok = false;
                continue;
            }
            mine.push((w.start.v, end));
            all.push((
                Window {
                    id: w.id.v,
                    partition: p.id,
                    offset: w.start.v,
                    duration: w.duration.v,
                    period_start: w.period_start,
                },
                w.loc,
            ));
        }
        if period_ok && !period.is_zero() {
            // PartitionPeriodStart="true": the first window of the partition in its period (not
            // necessarily at the period's start: a period may begin with other partitions).
            // The first window of each period (the first in file order among equal starts),
            // found in one pass: comparing each marked window with every other was quadratic.
            let p_ns = period.as_nanos();
            let mut first: HashMap<u128, &RawWindow> = HashMap::new();
            for e in &ps.windows {
                let f = first.entry(e.start.v.as_nanos() / p_ns).or_insert(e);
                if e.start.v < f.start.v {
                    *f = e;
                }
            }
            for w in ps.windows.iter().filter(|w| w.period_start) {
                let k = w.start.v.as_nanos() / p_ns;
                if let Some(e) = first.get(&k).copied().filter(|e| e.start.v < w.start.v) {
                    let lo = Duration::from_nanos(u64::try_from(p_ns * k).unwrap_or(u64::MAX));
                    c.err(
                        w.loc,
                        format!(
                            "window {} of `{}` has PartitionPeriodStart=\"true\", but window {} at {} comes before it in the same period [{}, {}) of {sched_name}",
                            w.id.v,
                            p.name,
                            e.id.v,
                            ms(e.start.v),
                            ms(lo),
                            ms(lo + period)
                        ),
                        format!(
                            "mark the first window of each period (window {}) instead, or remove PartitionPeriodStart",
                            e.id.v
                        ),
                    );
                }
            }
        }
        if period_ok && !mf.is_zero() && !duration.is_zero() {
            if let Some((k, got)) = first_short_period(&mine, mf, period, duration) {
                let lo = Duration::from_nanos(
                    u64::try_from(period.as_nanos() * u128::from(k)).unwrap_or(u64::MAX),
                );
                let hi = lo + period;
                c.err(
                    ps.loc,
                    format!(
                        "partition `{}` gets {} in period {k} [{}, {}) of {sched_name}, but needs PeriodDurationSeconds = {}: {} missing",
                        p.name,
                        ms(got),
                        ms(lo),
                        ms(hi),
                        ms(duration),
                        ms(duration - got)
                    ),
                    format!(
                        "add or lengthen windows of `{}` inside [{}, {}), or lower PeriodDurationSeconds",
                        p.name,
                        ms(lo),
                        ms(hi)
                    ),
                );
            }
        }
        out.push(PartitionSchedule {
            partition: p.id,
            period,
            duration,
        });
    }
    all.sort_by_key(|(w, _)| (w.offset, w.duration));
    // Overlaps: compare each window with the one reaching furthest among the earlier ones.
    let mut reach: Option<usize> = None;
    for i in 0..all.len() {
        if let Some(r) = reach {
            let (prev, prev_loc) = &all[r];
            let (cur, cur_loc) = &all[i];
            let prev_end = prev.offset + prev.duration;
            if cur.offset < prev_end {
                let pname = |id: PartitionId| parts.list[parts.by_id[&id.0]].name.clone();
                c.err(
                    *cur_loc,
                    format!(
                        "window {} of `{}` [{}, {}) overlaps window {} of `{}` [{}, {}) at {} in {sched_name}",
                        cur.id,
                        pname(cur.partition),
                        ms(cur.offset),
                        ms(cur.offset + cur.duration),
                        prev.id,
                        pname(prev.partition),
                        ms(prev.offset),
                        ms(prev_end),
                        at(*prev_loc)
                    ),
                    format!(
                        "windows of one schedule must not overlap: start window {} at or after {}, or end window {} by {}",
                        cur.id,
                        ms(prev_end),
                        prev.id,
                        ms(cur.offset)
                    ),
                );
            }
            if cur.offset + cur.duration > prev_end {
                reach = Some(i);
            }
        } else {
            reach = Some(i);
        }
    }
    (out, all.into_iter().map(|(w, _)| w).collect())
}

/// Return the first period `k` (with the time the windows give in it) in which `windows`
/// (`[start, end)` inside the major frame `mf`) give less than `need` of each `period`.
///
/// Bounded work: O(n log n) in the number of windows, whatever the number of periods per major
/// frame (a 1 ns period in a long major frame has more periods than can be enumerated). Only
/// periods where a window starts or ends are summed; periods strictly inside one window are
/// fully covered, and a period no window touches gets nothing.
fn first_short_period(
    windows: &[(Duration, Duration)],
    mf: Duration,
    period: Duration,
    need: Duration,
) -> Option<(u64, Duration)> {
    let p = period.as_nanos();
    let periods = mf.as_nanos() / p;
    // Sum of window time in each boundary period, and the ranges of touched periods.
    let mut partial: std::collections::BTreeMap<u128, u128> = std::collections::BTreeMap::new();
    let mut ranges: Vec<(u128, u128)> = Vec::new();
    for &(s, e) in windows {
        let (s, e) = (s.as_nanos(), e.as_nanos());
        if e <= s {
            continue;
        }
        let first = s / p;
        let last = (e - 1) / p;
        ranges.push((first, last));
        let mut add = |k: u128| {
            let lo = k * p;
            let hi = lo + p;
            *partial.entry(k).or_insert(0) += e.min(hi).saturating_sub(s.max(lo));
        };
        add(first);
        if last != first {
            add(last);
        }
    }
    // The first period that no window touches.
    ranges.sort_unstable();
    let mut next = 0u128;
    for &(first, last) in &ranges {
        if first > next {
            break;
        }
        next = next.max(last + 1);
    }
    let gap = (next < periods).then_some((next, 0u128));
    let short = partial
        .iter()
        .find(|&(_, &got)| got < need.as_nanos())
        .map(|(&k, &got)| (k, got));
    let found = match (gap, short) {
        (Some(g), Some(s)) => Some(if g.0 < s.0 { g } else { s }),
        (g, s) => g.or(s),
    }?;
    let k = u64::try_from(found.0).unwrap_or(u64::MAX);
    let got = Duration::from_nanos(u64::try_from(found.1).unwrap_or(u64::MAX));
    Some((k, got))
}

/// A resolved channel end: partition index, port kind, direction, size.
#[derive(Clone, Copy)]
struct End {
    part: usize,
    kind: ChannelKind,
    direction: PortDirection,
    size: u32,
    /// `MaxNbMessages` (0 for a sampling port).
    nb: u32,
}

/// Most ports a "did you mean" hint for a channel end compares the name with: beyond, the help
/// lists the ports instead (an edit distance per port and per unknown name would make many
/// unknown names against a partition with many ports take minutes).
const HINT_MAX_CANDIDATES: usize = 256;

/// Most port names compared for "did you mean" hints over all channel ends of a module (a
/// hostile file may name a hundred thousand unknown ports).
const HINT_BUDGET: usize = 20_000;

/// The ports of each partition by name (sampling ports first, as a channel end looks them up),
/// and the names in declaration order for help texts.
struct PortIndex<'p> {
    by_name: Vec<HashMap<&'p str, End>>,
    names: Vec<Vec<&'p str>>,
    /// Port names left to compare for hints ([`HINT_BUDGET`]).
    hint_budget: usize,
}

impl<'p> PortIndex<'p> {
    fn new(parts: &'p Parts) -> Self {
        let mut by_name = Vec::with_capacity(parts.list.len());
        let mut names = Vec::with_capacity(parts.list.len());
        for (idx, p) in parts.list.iter().enumerate() {
            let mut m: HashMap<&str, End> = HashMap::new();
            let mut n: Vec<&str> = Vec::new();
            for sp in &p.sampling_ports {
                m.entry(sp.name.as_str()).or_insert(End {
                    part: idx,
                    kind: ChannelKind::Sampling,
                    direction: sp.direction,
                    size: sp.max_message_size,
                    nb: 0,
                });
                n.push(sp.name.as_str());
            }
            for qp in &p.queuing_ports {
                m.entry(qp.name.as_str()).or_insert(End {
                    part: idx,
                    kind: ChannelKind::Queuing,
                    direction: qp.direction,
                    size: qp.max_message_size,
                    nb: qp.max_nb_messages,
                });
                n.push(qp.name.as_str());
            }
            by_name.push(m);
            names.push(n);
        }
        Self {
            by_name,
            names,
            hint_budget: HINT_BUDGET,
        }
    }
}

fn resolve_end(
    c: &mut Checker,
    parts: &Parts,
    ports: &mut PortIndex,
    r: &RawPortRef,
) -> Option<End> {
    let idx = parts.resolve(c, &r.part, "this channel end")?;
    let p = &parts.list[idx];
    if let Some(end) = ports.by_name[idx].get(r.port.v.as_str()) {
        return Some(*end);
    }
    let names = &ports.names[idx];
    let hint = if names.len() <= HINT_MAX_CANDIDATES && names.len() <= ports.hint_budget {
        ports.hint_budget -= names.len();
        value::closest(&r.port.v, names)
    } else {
        None
    };
    let help = match hint {
        Some(n) => format!("did you mean `{n}`?"),
        None if names.is_empty() => format!(
            "partition `{}` declares no ports: add a <Sampling_Port> or <Queuing_Port> to it",
            p.name
        ),
        None => format!(
            "the ports of `{}` are: {}",
            p.name,
            short_list(names.iter().map(|n| n.to_string()))
        ),
    };
    c.err(
        r.port.loc,
        format!("partition `{}` has no port named `{}`", p.name, r.port.v),
        help,
    );
    None
}

fn kind_name(k: ChannelKind) -> &'static str {
    match k {
        ChannelKind::Sampling => "sampling",
        ChannelKind::Queuing => "queuing",
    }
}

fn channels(c: &mut Checker, raw: &RawModule, parts: &Parts) -> Vec<Channel> {
    let mut out = Vec::new();
    let mut ids: HashMap<u32, Location> = HashMap::new();
    let mut names: HashMap<&str, Location> = HashMap::new();
    // (partition index, port name) -> the channel end using it.
    let mut used: HashMap<(usize, &str), Location> = HashMap::new();
    let mut ports = PortIndex::new(parts);
    for ch in &raw.channels {
        if let Some(first) = ids.get(&ch.id.v) {
            c.err(
                ch.id.loc,
                format!(
                    "duplicate ChannelIdentifier {} (first used at {})",
                    ch.id.v,
                    at(*first)
                ),
                "give every channel its own ChannelIdentifier",
            );
        } else {
            ids.insert(ch.id.v, ch.id.loc);
        }
        if let Some(n) = &ch.name {
            if let Some(first) = names.get(n.v.as_str()) {
                c.err(
                    n.loc,
                    format!(
                        "duplicate ChannelName `{}` (first used at {})",
                        n.v,
                        at(*first)
                    ),
                    "give every channel its own ChannelName",
                );
            } else {
                names.insert(n.v.as_str(), n.loc);
            }
        }
        let label = match &ch.name {
            Some(n) => format!("channel {} (`{}`)", ch.id.v, n.v),
            None => format!("channel {}", ch.id.v),
        };
        let mut ok = true;
        match ch.sources.as_slice() {
            [] => {
                c.err(ch.loc, format!("{label} has no <Source>"), "add <Source><Standard_Partition PartitionIdentifier=\"...\" PortName=\"...\"/></Source>");
                ok = false;
            }
            [_] => {}
            [_, rest @ ..] => {
                for r in rest {
                    c.err(
                        r.loc,
                        format!("{label} has more than one source port"),
                        "a channel has exactly one source; use one channel per source port",
                    );
                }
                ok = false;
            }
        }
        if ch.destinations.is_empty() {
            c.err(ch.loc, format!("{label} has no <Destination>"), "add <Destination><Standard_Partition PartitionIdentifier=\"...\" PortName=\"...\"/></Destination>");
            ok = false;
        }
        // Port reuse.
        for r in ch.sources.iter().chain(&ch.destinations) {
            if let Some(&idx) = parts.by_id.get(&r.part.id.v) {
                let key = (idx, r.port.v.as_str());
                if let Some(first) = used.get(&key) {
                    c.err(
                        r.loc,
                        format!(
                            "port `{}` of `{}` is already connected by the channel end at {}",
                            r.port.v,
                            parts.list[idx].name,
                            at(*first)
                        ),
                        "connect each port to at most one channel (a sampling source may feed several destinations of one channel)",
                    );
                    ok = false;
                } else {
                    used.insert(key, r.loc);
                }
            }
        }
        let src = ch
            .sources
            .first()
            .and_then(|r| resolve_end(c, parts, &mut ports, r).map(|e| (r, e)));
        let dsts: Vec<Option<(&RawPortRef, End)>> = ch
            .destinations
            .iter()
            .map(|r| resolve_end(c, parts, &mut ports, r).map(|e| (r, e)))
            .collect();
        if let Some((r, e)) = &src {
            if e.direction != PortDirection::Source {
                c.err(
                    r.loc,
                    format!("the source of {label}, port `{}` of `{}`, is a DESTINATION port", r.port.v, parts.list[e.part].name),
                    "declare the port with Direction=\"SOURCE\", or swap <Source> and <Destination>",
                );
                ok = false;
            }
        }
        for (r, e) in dsts.iter().flatten() {
            if e.direction != PortDirection::Destination {
                c.err(
                    r.loc,
                    format!("a destination of {label}, port `{}` of `{}`, is a SOURCE port", r.port.v, parts.list[e.part].name),
                    "declare the port with Direction=\"DESTINATION\", or swap <Source> and <Destination>",
                );
                ok = false;
            }
        }
        if let Some((sr, se)) = &src {
            for (r, e) in dsts.iter().flatten() {
                if e.kind != se.kind {
                    c.err(
                        r.loc,
                        format!(
                            "{label} connects {} port `{}` to {} port `{}`",
                            kind_name(se.kind),
                            sr.port.v,
                            kind_name(e.kind),
                            r.port.v
                        ),
                        "both ends of a channel must be sampling ports, or both queuing ports",
                    );
                    ok = false;
                } else if e.size != se.size {
                    c.err(
                        r.loc,
                        format!(
                            "MaxMessageSize of `{}` ({} B) differs from the source `{}` ({} B) in {label}",
                            r.port.v, e.size, sr.port.v, se.size
                        ),
                        "give both ends of the channel the same MaxMessageSize",
                    );
                    ok = false;
                }
            }
            // Limits of the transport (the ports' own limits are checked where they are declared).
            if let Some(t) = &ch.transport {
                if t.v == "udp" && se.size > MAX_UDP_MESSAGE_SIZE {
                    c.err(
                        t.loc,
                        format!(
                            "{label} is udp, which carries each message in one datagram, but `{}` has MaxMessageSize {} bytes, more than {MAX_UDP_MESSAGE_SIZE} (a 65507-byte datagram less the 24-byte frame header)",
                            sr.port.v, se.size
                        ),
                        format!(
                            "give the channel's ports MaxMessageSize at most {MAX_UDP_MESSAGE_SIZE}, or use partix:Transport=\"tcp\", \"one-sided\" or \"two-sided\""
                        ),
                    );
                    ok = false;
                }
                // A udp queuing channel's sockets hold its whole capacity (the smaller of the
                // ends' MaxNbMessages): a datagram that does not fit is dropped by the kernel, and
                // a queuing channel loses nothing.
                let capacity = dsts
                    .iter()
                    .flatten()
                    .map(|(_, e)| e.nb)
                    .fold(se.nb, u32::min);
                let need = crate::socket_buffer_bytes(se.size, capacity);
                if t.v == "udp" && se.kind == ChannelKind::Queuing && need > MAX_SOCKET_BUFFER {
                    c.err(
                        t.loc,
                        format!(
                            "{label} is udp: its sockets would need {need} bytes of buffer for {capacity} messages of {} bytes, more than the {MAX_SOCKET_BUFFER} the executive gives a socket, and the kernel drops a datagram that does not fit",
                            se.size
                        ),
                        "lower the ports' MaxNbMessages or MaxMessageSize, or use partix:Transport=\"tcp\", \"one-sided\" or \"two-sided\"",
                    );
                    ok = false;
                }
                if t.v == "two-sided"
                    && se.kind == ChannelKind::Sampling
                    && se.size > MAX_TWO_SIDED_MESSAGE_SIZE
                {
                    c.err(
                        t.loc,
                        format!(
                            "{label} is two-sided, whose sampling buffers hold at most {MAX_TWO_SIDED_MESSAGE_SIZE} bytes, but `{}` has MaxMessageSize {} bytes",
                            sr.port.v, se.size
                        ),
                        format!(
                            "give the channel's ports MaxMessageSize at most {MAX_TWO_SIDED_MESSAGE_SIZE}, or use partix:Transport=\"one-sided\" (up to {MAX_SAMPLING_MESSAGE_SIZE} bytes) or \"tcp\""
                        ),
                    );
                    ok = false;
                }
            }
            // `partix:Delivery` chooses between two ways of running a two-sided channel's
            // network manager; the other transports have no manager to choose for.
            if let Some(d) = &ch.delivery {
                if ch.transport.as_ref().map(|t| t.v.as_str()) != Some("two-sided") {
                    c.err(
                        d.loc,
                        format!(
                            "{label} has partix:Delivery=\"{}\", but its transport is {}: only a two-sided channel has a network manager that delivers",
                            d.v.name(),
                            ch.transport.as_ref().map_or("the default (one-sided)", |t| t.v.as_str())
                        ),
                        "add partix:Transport=\"two-sided\" to the channel, or remove partix:Delivery",
                    );
                    ok = false;
                }
            }
            if se.kind == ChannelKind::Queuing && ch.destinations.len() > 1 {
                c.err(
                    ch.destinations[1].loc,
                    format!("queuing {label} has {} destinations", ch.destinations.len()),
                    "a queuing channel connects one source to one destination; use a sampling channel to multicast",
                );
                ok = false;
            }
        }
        if !ok || src.is_none() || dsts.iter().any(Option::is_none) {
            continue;
        }
        let (sr, se) = src.expect("checked above");
        out.push(Channel {
            id: ChannelId(ch.id.v),
            name: ch.name.as_ref().map(|n| n.v.clone()),
            source: PortRef {
                partition: parts.list[se.part].id,
                port: sr.port.v.clone(),
            },
            destinations: dsts
                .iter()
                .flatten()
                .map(|(r, e)| PortRef {
                    partition: parts.list[e.part].id,
                    port: r.port.v.clone(),
                })
                .collect(),
            kind: se.kind,
            transport: ch.transport.as_ref().map(|t| t.v.clone()),
            delivery: ch.delivery.as_ref().map(|d| d.v),
            location: ch.loc,
        });
    }
    out
}

fn level_name(l: ErrorLevel) -> &'static str {
    match l {
        ErrorLevel::Module => "MODULE",
        ErrorLevel::Partition => "PARTITION",
        ErrorLevel::Process => "PROCESS",
    }
}

/// Check the HM tables against the runtime's lookups, which know one system state and go by
/// error code: the level of a code is that of the first `Error_ID_Level` with the code (and, at
/// MODULE level, the `Module_HM_Table` action of its identifier); a partition's action for a code
/// is the first `Error_ID_Action` of its table with the code. So the tables use one
/// `SystemState`, give each code one identifier, and each partition table one action per code:
/// anything else would be accepted here and act differently at run time.
fn hm(
    c: &mut Checker,
    raw: &RawModule,
    parts: &mut Parts,
) -> (Vec<SystemHmEntry>, Vec<ModuleHmEntry>) {
    if let Some(first) = raw.system_states.first() {
        for s in &raw.system_states[1..] {
            if s.v != first.v {
                c.err(
                    s.loc,
                    format!(
                        "SystemState {} differs from SystemState {} (at {}): partix has one system state, and its health monitor applies every entry whatever its SystemState",
                        s.v,
                        first.v,
                        at(first.loc)
                    ),
                    format!(
                        "write SystemState=\"{}\" here and merge the entries (the runtime would take the first entry of each error code, whatever its state)",
                        first.v
                    ),
                );
            }
        }
    }
    let mut system: Vec<SystemHmEntry> = Vec::new();
    let mut sys_locs: HashMap<u32, Location> = HashMap::new();
    // The first entry of each code: (identifier, where).
    let mut code_ids: HashMap<ErrorCode, (u32, Location)> = HashMap::new();
    for e in &raw.system_hm {
        let id = e.error_id.v;
        if let Some(first) = sys_locs.get(&id) {
            c.err(
                e.error_id.loc,
                format!(
                    "ErrorIdentifier {id} appears twice in System_HM_Table (first at {})",
                    at(*first)
                ),
                "give each error identifier one Error_ID_Level",
            );
            continue;
        }
        sys_locs.insert(id, e.error_id.loc);
        if let Some((first_id, first)) = code_ids.get(&e.code.v) {
            c.err(
                e.code.loc,
                format!(
                    "ErrorCode {} is already given identifier {first_id} at {}; the runtime takes the first Error_ID_Level of a code (its level, and its identifier's Module_HM_Table action), so identifier {id} would never apply",
                    error_code_name(e.code.v),
                    at(*first)
                ),
                "give each error code one Error_ID_Level: remove this one, or correct its ErrorCode",
            );
        } else {
            code_ids.insert(e.code.v, (id, e.code.loc));
        }
        system.push(SystemHmEntry {
            system_state: e.state,
            error_id: id,
            code: e.code.v,
            level: e.level,
        });
    }
    let by_id: HashMap<u32, usize> = system
        .iter()
        .enumerate()
        .map(|(i, e)| (e.error_id, i))
        .collect();
    let mut by_code: HashMap<ErrorCode, usize> = HashMap::new();
    for (i, e) in system.iter().enumerate() {
        by_code.entry(e.code).or_insert(i);
    }
    // The first identifiers (for help texts).
    let known = short_list(
        system
            .iter()
            .map(|e| format!("{} ({})", e.error_id, error_code_name(e.code))),
    );
    let known = if system.is_empty() {
        "System_HM_Table defines no error identifiers".to_string()
    } else {
        format!("the identifiers are: {known}")
    };
    let lookup = |id: u32| by_id.get(&id).map(|&i| &system[i]);

    let mut module = Vec::new();
    let mut mod_locs: HashMap<u32, Location> = HashMap::new();
    for e in &raw.module_hm {
        let id = e.error_id.v;
        if let Some(first) = mod_locs.get(&id) {
            c.err(
                e.error_id.loc,
                format!(
                    "ErrorIdentifier {id} appears twice in Module_HM_Table (first at {})",
                    at(*first)
                ),
                "give one action per error identifier",
            );
            continue;
        }
        mod_locs.insert(id, e.error_id.loc);
        match lookup(id) {
            None => c.err(
                e.error_id.loc,
                format!("Module_HM_Table names unknown error identifier {id}"),
                format!("add an Error_ID_Level with ErrorIdentifier=\"{id}\" to System_HM_Table; {known}"),
            ),
            Some(s) if s.level != ErrorLevel::Module => c.err(
                e.error_id.loc,
                format!("error identifier {id} ({}) is handled at {} level, so this Module_HM_Table action never applies", error_code_name(s.code), level_name(s.level)),
                "set its ErrorLevel to MODULE in System_HM_Table, or move the action to a Partition_HM_Table",
            ),
            Some(_) => module.push(ModuleHmEntry {
                system_state: e.state,
                error_id: id,
                action: e.action,
            }),
        }
    }

    let mut seen_tables: HashMap<usize, Location> = HashMap::new();
    for t in &raw.partition_hms {
        let Some(idx) = parts.resolve(c, &t.part, "<Partition_HM_Table>") else {
            continue;
        };
        if let Some(first) = seen_tables.get(&idx) {
            c.err(
                t.loc,
                format!(
                    "second <Partition_HM_Table> for partition `{}` (the first is at {})",
                    parts.list[idx].name,
                    at(*first)
                ),
                "merge the two tables",
            );
            continue;
        }
        seen_tables.insert(idx, t.loc);
        let mut entries = Vec::new();
        let mut locs: HashMap<u32, Location> = HashMap::new();
        // The first action of each code in this table: (identifier, where).
        let mut actions: HashMap<ErrorCode, (u32, Location)> = HashMap::new();
        for e in &t.entries {
            let id = e.error_id.v;
            if let Some(first) = locs.get(&id) {
                c.err(
                    e.error_id.loc,
                    format!(
                        "ErrorIdentifier {id} appears twice in this Partition_HM_Table (first at {})",
                        at(*first)
                    ),
                    "give one action per error identifier",
                );
                continue;
            }
            locs.insert(id, e.error_id.loc);
            let code = match (lookup(id), &e.code) {
                (Some(s), Some(code)) if s.code != code.v => {
                    c.err(
                        code.loc,
                        format!("ErrorCode {} disagrees with System_HM_Table, where identifier {id} is {}", error_code_name(code.v), error_code_name(s.code)),
                        format!("write ErrorCode=\"{}\" or drop the attribute", error_code_name(s.code)),
                    );
                    continue;
                }
                (Some(s), _) => s.code,
                (None, Some(code)) => code.v,
                (None, None) => {
                    c.err(
                        e.error_id.loc,
                        format!("Partition_HM_Table of `{}` names unknown error identifier {id}", parts.list[idx].name),
                        format!("add it to System_HM_Table, or say which error it is with ErrorCode=\"...\"; {known}"),
                    );
                    continue;
                }
            };
            // The level is the first system entry's for the code, whatever the identifier.
            if let Some(s) = by_code.get(&code).map(|&i| &system[i]) {
                if s.level == ErrorLevel::Module {
                    let what = if s.error_id == id {
                        format!("error identifier {id} ({})", error_code_name(code))
                    } else {
                        format!(
                            "{} (System_HM_Table identifier {})",
                            error_code_name(code),
                            s.error_id
                        )
                    };
                    c.err(
                        e.error_id.loc,
                        format!("{what} is handled at MODULE level, so this partition action never applies"),
                        "set its ErrorLevel to PARTITION or PROCESS in System_HM_Table, or move the action to Module_HM_Table",
                    );
                    continue;
                }
            } else if code == ErrorCode::InitTimeout {
                // Not in System_HM_Table: the runtime's default level, MODULE.
                c.err(
                    e.error_id.loc,
                    "INIT_TIMEOUT is handled at MODULE level when System_HM_Table does not list it, so this partition action never applies",
                    "add INIT_TIMEOUT to System_HM_Table: with ErrorLevel=\"PARTITION\" for this action to apply, or with ErrorLevel=\"MODULE\" and an action in Module_HM_Table",
                );
                continue;
            }
            if let Some(gone) = process_action_never_applies(code, e.action.v) {
                let (action, name) = (e.action.v, error_code_name(code));
                let action = if action == PartitionAction::StopProcess {
                    "STOP_PROCESS"
                } else {
                    "RESTART_PROCESS"
                };
                let help = if code == ErrorCode::InitTimeout {
                    "use IDLE, or IGNORE to let it go on initialising (a COLD_START or WARM_START after INIT_TIMEOUT idles the partition too: the restart would time out again)".to_string()
                } else {
                    "use IDLE, COLD_START or WARM_START (STOP_PROCESS and RESTART_PROCESS apply to the errors raised inside a running partition: DEADLINE_MISSED, APPLICATION_ERROR)".to_string()
                };
                c.err(
                    e.action.loc,
                    format!("{action} cannot apply to {name}: {gone}; the executive idles the partition instead"),
                    help,
                );
                continue;
            }
            if let Some((first_id, first)) = actions.get(&code) {
                c.err(
                    e.error_id.loc,
                    format!(
                        "{} already has an action in this Partition_HM_Table (identifier {first_id} at {}); the runtime takes the first action of a code, so this one would never apply",
                        error_code_name(code),
                        at(*first)
                    ),
                    "give each error code one Error_ID_Action per Partition_HM_Table",
                );
                continue;
            }
            actions.insert(code, (id, e.error_id.loc));
            entries.push(PartitionHmEntry {
                system_state: e.state,
                error_id: id,
                code,
                action: e.action.v,
            });
        }
        parts.list[idx].hm = entries;
    }
    (system, module)
}

/// Why a process-level action (`STOP_PROCESS`, `RESTART_PROCESS`) for `code` would never run as
/// configured, if it would not: the executive alone raises these codes, when no process of the
/// partition can be stopped or restarted, and `executive::hm::decide` turns the action into IDLE.
fn process_action_never_applies(code: ErrorCode, action: PartitionAction) -> Option<&'static str> {
    if !matches!(
        action,
        PartitionAction::StopProcess | PartitionAction::RestartProcess
    ) {
        return None;
    }
    match code {
        ErrorCode::InitTimeout => Some(
            "partix raises it for a partition whose initialisation has not finished, before its processes run",
        ),
        ErrorCode::PartitionCrash
        | ErrorCode::MemoryViolation
        | ErrorCode::NumericError
        | ErrorCode::IllegalRequest => Some(
            "partix raises it when the partition's process has ended (an exit or a fatal signal), and every process of the partition with it",
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The obvious per-period sum, for comparison.
    fn brute(
        windows: &[(Duration, Duration)],
        mf: Duration,
        period: Duration,
        need: Duration,
    ) -> Option<(u64, Duration)> {
        let periods = mf.as_nanos() / period.as_nanos();
        for k in 0..periods {
            let lo = Duration::from_nanos((period.as_nanos() * k) as u64);
            let hi = lo + period;
            let got: Duration = windows
                .iter()
                .map(|&(s, e)| e.min(hi).saturating_sub(s.max(lo)))
                .sum();
            if got < need {
                return Some((k as u64, got));
            }
        }
        None
    }

    #[test]
    fn short_period_matches_brute_force() {
        let ns = Duration::from_nanos;
        let mut x: u64 = 0x1234_5678_9ABC_DEF1;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..5000 {
            let period = 1 + rnd(10);
            let periods = 1 + rnd(8);
            let mf = period * periods;
            // Non-overlapping windows: walk the frame.
            let mut windows = Vec::new();
            let mut t = rnd(3);
            while t < mf {
                let len = 1 + rnd(period + 2);
                let end = (t + len).min(mf);
                windows.push((ns(t), ns(end)));
                t = end + rnd(4);
            }
            let need = ns(1 + rnd(period));
            assert_eq!(
                first_short_period(&windows, ns(mf), ns(period), need),
                brute(&windows, ns(mf), ns(period), need),
                "windows {windows:?} mf {mf} period {period} need {need:?}"
            );
        }
    }

    #[test]
    fn many_periods_are_not_enumerated() {
        // 10^19 periods of 1 ns in a 10^10 s frame, one window covering it all: no enumeration.
        let mf = Duration::from_secs(10_000_000_000);
        let got = first_short_period(
            &[(Duration::ZERO, mf)],
            mf,
            Duration::from_nanos(1),
            Duration::from_nanos(1),
        );
        assert_eq!(got, None);
        let half = mf / 2;
        let got = first_short_period(
            &[(Duration::ZERO, half)],
            mf,
            Duration::from_nanos(1),
            Duration::from_nanos(1),
        );
        assert_eq!(got, Some((half.as_nanos() as u64, Duration::ZERO)));
    }

    #[test]
    fn milliseconds_are_exact() {
        assert_eq!(ms(Duration::from_millis(20)), "20 ms");
        assert_eq!(ms(Duration::from_micros(500)), "0.5 ms");
        assert_eq!(ms(Duration::from_nanos(1)), "0.000001 ms");
    }
}

//! The human-readable summary `partix check` prints for a valid module.

use std::fmt::Write as _;

use crate::model::*;
use crate::parse::error_code_name;
use crate::validate::ms;

fn crit(c: Criticality) -> &'static str {
    match c {
        Criticality::LevelA => "LEVEL_A",
        Criticality::LevelB => "LEVEL_B",
        Criticality::LevelC => "LEVEL_C",
        Criticality::LevelD => "LEVEL_D",
        Criticality::LevelE => "LEVEL_E",
    }
}

fn dir(d: PortDirection) -> &'static str {
    match d {
        PortDirection::Source => "SOURCE",
        PortDirection::Destination => "DESTINATION",
    }
}

fn level(l: ErrorLevel) -> &'static str {
    match l {
        ErrorLevel::Module => "MODULE",
        ErrorLevel::Partition => "PARTITION",
        ErrorLevel::Process => "PROCESS",
    }
}

fn module_action(a: ModuleAction) -> &'static str {
    match a {
        ModuleAction::Ignore => "IGNORE",
        ModuleAction::Shutdown => "SHUTDOWN",
        ModuleAction::Reset => "RESET",
    }
}

fn partition_action(a: PartitionAction) -> &'static str {
    match a {
        PartitionAction::Ignore => "IGNORE",
        PartitionAction::StopProcess => "STOP_PROCESS",
        PartitionAction::RestartProcess => "RESTART_PROCESS",
        PartitionAction::Idle => "IDLE",
        PartitionAction::WarmStart => "WARM_START",
        PartitionAction::ColdStart => "COLD_START",
    }
}

/// Format a byte count in the largest binary unit that divides it (`528 MiB`, `12 KiB`, `100 B`).
fn bytes(b: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if b >= size && b.is_multiple_of(size) {
            return format!("{} {unit}", b / size);
        }
    }
    format!("{b} B")
}

fn pname(m: &Module, id: PartitionId) -> &str {
    m.partition(id).map_or("?", |p| p.name.as_str())
}

/// Render a table: the first row is the header; columns are left-aligned and padded.
fn table(out: &mut String, indent: &str, rows: &[Vec<String>]) {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        let mut line = String::from(indent);
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<w$}  ", w = widths[c]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// Return a summary of a validated module: partitions and their ports, schedules with their
/// windows as a table, channels, and HM tables.
pub fn summary(m: &Module) -> String {
    let mut out = String::new();
    let _ = write!(out, "module `{}`", m.name);
    if let Some(v) = &m.version {
        let _ = write!(out, " version {v}");
    }
    if let Some(s) = &m.source {
        let _ = write!(out, " ({})", s.display());
    }
    out.push_str(": OK\n");

    let _ = writeln!(out, "\npartitions ({}):", m.partitions.len());
    let mut rows = vec![vec![
        "id".to_string(),
        "name".into(),
        "criticality".into(),
        "system".into(),
        "affinity".into(),
        "fds".into(),
        "user".into(),
        "memory".into(),
        "executable".into(),
    ]];
    for p in &m.partitions {
        let exe = match &p.executable {
            Some(e) => {
                let mut s = e.display().to_string();
                for a in &p.args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            None => format!("(entry point {})", p.entry_point),
        };
        rows.push(vec![
            p.id.0.to_string(),
            p.name.clone(),
            crit(p.criticality).into(),
            if p.system_partition { "yes" } else { "no" }.into(),
            p.affinity.as_ref().map_or("-".into(), |a| {
                a.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            }),
            match p.descriptor_table {
                DescriptorTable::Shared => "shared",
                DescriptorTable::PerProcess => "per-process",
            }
            .into(),
            p.user
                .map_or("-".into(), |u| format!("{}:{}", u.uid, u.gid)),
            p.memory_limit_bytes().map_or("-".into(), bytes),
            exe,
        ]);
    }
    table(&mut out, "  ", &rows);
    for p in &m.partitions {
        for s in &p.sampling_ports {
            let _ = writeln!(
                out,
                "  {}: sampling port `{}` {} {} B, refresh {}{}",
                p.name,
                s.name,
                dir(s.direction),
                s.max_message_size,
                ms(s.refresh_period),
                receive_mode(s.receive_mode)
            );
        }
        for q in &p.queuing_ports {
            let _ = writeln!(
                out,
                "  {}: queuing port `{}` {} {} B x {}{}",
                p.name,
                q.name,
                dir(q.direction),
                q.max_message_size,
                q.max_nb_messages,
                receive_mode(q.receive_mode)
            );
        }
    }

    let _ = writeln!(out, "\nschedules ({}):", m.schedules.len());
    for (i, s) in m.schedules.iter().enumerate() {
        let _ = write!(out, "  schedule {}", s.id.0);
        if let Some(n) = &s.name {
            let _ = write!(out, " `{n}`");
        }
        let _ = write!(out, ", major frame {}", ms(s.major_frame));
        if i == m.initial_schedule {
            out.push_str(" (initial)");
        }
        out.push('\n');
        let mut rows = vec![vec![
            "partition".to_string(),
            "period".into(),
            "needs".into(),
            "gets per frame".into(),
        ]];
        for ps in &s.partitions {
            let got: std::time::Duration = s
                .windows
                .iter()
                .filter(|w| w.partition == ps.partition)
                .map(|w| w.duration)
                .sum();
            rows.push(vec![
                pname(m, ps.partition).to_string(),
                ms(ps.period),
                ms(ps.duration),
                ms(got),
            ]);
        }
        table(&mut out, "    ", &rows);
        let mut rows = vec![vec![
            "window".to_string(),
            "start".into(),
            "end".into(),
            "partition".into(),
        ]];
        let mut idle = std::time::Duration::ZERO;
        let mut cursor = std::time::Duration::ZERO;
        for w in &s.windows {
            idle += w.offset.saturating_sub(cursor);
            cursor = w.offset + w.duration;
            rows.push(vec![
                w.id.to_string(),
                ms(w.offset),
                ms(w.offset + w.duration),
                format!(
                    "{}{}",
                    pname(m, w.partition),
                    if w.period_start {
                        " (period start)"
                    } else {
                        ""
                    }
                ),
            ]);
        }
        idle += s.major_frame.saturating_sub(cursor);
        out.push('\n');
        table(&mut out, "    ", &rows);
        let _ = writeln!(out, "    idle per major frame: {}", ms(idle));
    }

    let _ = writeln!(out, "\nchannels ({}):", m.channels.len());
    for c in &m.channels {
        let dests: Vec<String> = c
            .destinations
            .iter()
            .map(|d| format!("{}.{}", pname(m, d.partition), d.port))
            .collect();
        let _ = writeln!(
            out,
            "  {} {}: {}.{} -> {} ({}, transport {}{})",
            c.id.0,
            c.name.as_deref().unwrap_or("(unnamed)"),
            pname(m, c.source.partition),
            c.source.port,
            dests.join(", "),
            match c.kind {
                ChannelKind::Sampling => "sampling",
                ChannelKind::Queuing => "queuing",
            },
            c.transport.as_deref().unwrap_or("default"),
            c.delivery
                .map(|d| format!(", delivery {}", d.name()))
                .unwrap_or_default()
        );
    }

    let _ = writeln!(out, "\nhealth monitor:");
    for e in &m.system_hm {
        let _ = writeln!(
            out,
            "  system: state {} error {} {} -> {} level",
            e.system_state,
            e.error_id,
            error_code_name(e.code),
            level(e.level)
        );
    }
    for e in &m.module_hm {
        let _ = writeln!(
            out,
            "  module: state {} error {} -> {}",
            e.system_state,
            e.error_id,
            module_action(e.action)
        );
    }
    for p in &m.partitions {
        for e in &p.hm {
            let _ = writeln!(
                out,
                "  {}: state {} error {} {} -> {}",
                p.name,
                e.system_state,
                e.error_id,
                error_code_name(e.code),
                partition_action(e.action)
            );
        }
    }
    let notes = notes(m);
    if !notes.is_empty() {
        let _ = writeln!(out, "\nnotes:");
        for n in notes {
            let _ = writeln!(out, "  {n}");
        }
    }
    out
}

/// What the configuration allows that a reader should know about (not errors): partitions
/// that read a one-sided channel (the default transport) and have no `partix:User`. Such a
/// partition is given the channel's region read-only; run as root, it could re-open it
/// read-write. (A two-sided destination holds its TX region read-write by design, and a
/// socket channel has no region.)
pub fn notes(m: &Module) -> Vec<String> {
    let mut out = Vec::new();
    for p in &m.partitions {
        if p.user.is_some() {
            continue;
        }
        let read_only: Vec<&str> = m
            .channels
            .iter()
            .filter(|c| {
                matches!(c.transport.as_deref(), None | Some("one-sided"))
                    && c.destinations.iter().any(|d| d.partition == p.id)
            })
            .map(|c| c.name.as_deref().unwrap_or("(unnamed)"))
            .collect();
        if read_only.is_empty() {
            continue;
        }
        let plural = if read_only.len() == 1 { "" } else { "s" };
        out.push(format!(
            "partition `{}` reads one-sided channel{plural} {} and has no partix:User: it runs \
             with `partix run`'s credentials, and as root it could re-open the region{plural} it \
             is given read-only (and the module region) read-write and write its sources' \
             messages; give it a partix:User where its code is not trusted (docs/ports.md, \
             \"Region isolation\")",
            p.name,
            read_only.join(", "),
        ));
    }
    out
}

/// `, receive mode M` for a port with `partix:ReceiveMode`, nothing without.
fn receive_mode(m: Option<crate::model::ReceiveMode>) -> String {
    use crate::model::ReceiveMode;
    match m {
        None => String::new(),
        Some(ReceiveMode::Spin) => ", receive mode spin".into(),
        Some(ReceiveMode::Blocking) => ", receive mode blocking".into(),
        Some(ReceiveMode::SpinThenPark { spins: None }) => ", receive mode spin-then-park".into(),
        Some(ReceiveMode::SpinThenPark { spins: Some(n) }) => {
            format!(", receive mode spin-then-park:{n}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(100), "100 B");
        assert_eq!(bytes(12 * 1024), "12 KiB");
        assert_eq!(bytes(528 << 20), "528 MiB");
        assert_eq!(bytes(2 << 30), "2 GiB");
        assert_eq!(bytes((1 << 20) + 1), "1048577 B");
    }
}

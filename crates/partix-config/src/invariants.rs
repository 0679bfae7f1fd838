//! What every [`Module`] the pipeline accepts satisfies, checked in one place for the tests and
//! the fuzz target (not part of the crate's API).

use crate::model::{Channel, ChannelKind, Module, PortDirection, PortRef};
use std::collections::HashSet;

/// Check the invariants of an accepted module; return the first one broken.
///
/// Partition ids and names unique; a valid initial schedule; per schedule a non-zero major
/// frame divided by every partition period, windows of non-zero length, ordered, not
/// overlapping, inside the frame and of declared partitions; per channel a source port and at
/// least one destination port that exist in their partitions, with the right directions, the
/// channel's kind and the source's MaxMessageSize, and one destination for a queuing channel;
/// no port on two channels; `partix:Delivery` only on two-sided channels.
///
/// # Errors
/// A description of the first broken invariant.
pub fn check(m: &Module) -> Result<(), String> {
    let ids: HashSet<_> = m.partitions.iter().map(|p| p.id).collect();
    if ids.len() != m.partitions.len() {
        return Err("duplicate partition ids accepted".into());
    }
    let names: HashSet<_> = m.partitions.iter().map(|p| &p.name).collect();
    if names.len() != m.partitions.len() {
        return Err("duplicate partition names accepted".into());
    }
    if m.initial_schedule >= m.schedules.len() {
        return Err("initial schedule out of range".into());
    }
    for s in &m.schedules {
        if s.major_frame.is_zero() {
            return Err("zero major frame accepted".into());
        }
        for w in s.windows.windows(2) {
            if w[0].offset + w[0].duration > w[1].offset {
                return Err(format!("windows {} and {} overlap", w[0].id, w[1].id));
            }
        }
        for w in &s.windows {
            if w.duration.is_zero() {
                return Err(format!("window {} has no duration", w.id));
            }
            if w.offset + w.duration > s.major_frame {
                return Err(format!("window {} ends past the major frame", w.id));
            }
            if !ids.contains(&w.partition) {
                return Err(format!("window {} of an undeclared partition", w.id));
            }
        }
        for ps in &s.partitions {
            if ps.period.is_zero() || s.major_frame.as_nanos() % ps.period.as_nanos() != 0 {
                return Err(format!(
                    "period of partition {} does not divide the major frame",
                    ps.partition.0
                ));
            }
        }
    }
    let mut used = HashSet::new();
    for c in &m.channels {
        let src = end(m, c, &c.source, PortDirection::Source)?;
        if c.delivery.is_some() && c.transport.as_deref() != Some("two-sided") {
            return Err(format!(
                "channel {}: Delivery on a channel that is not two-sided",
                c.id.0
            ));
        }
        if c.destinations.is_empty() {
            return Err(format!("channel {}: no destination", c.id.0));
        }
        if c.kind == ChannelKind::Queuing && c.destinations.len() != 1 {
            return Err(format!("queuing channel {}: several destinations", c.id.0));
        }
        for d in std::iter::once(&c.source).chain(&c.destinations) {
            if !used.insert((d.partition, d.port.as_str())) {
                return Err(format!("port `{}` on two channels", d.port));
            }
        }
        for d in &c.destinations {
            if end(m, c, d, PortDirection::Destination)? != src {
                return Err(format!("channel {}: the ends' sizes differ", c.id.0));
            }
        }
    }
    Ok(())
}

/// The MaxMessageSize of end `r` of channel `c`: a port of the channel's kind in its
/// partition, of direction `want`.
fn end(m: &Module, c: &Channel, r: &PortRef, want: PortDirection) -> Result<u32, String> {
    let port = m.partition(r.partition).and_then(|part| match c.kind {
        ChannelKind::Sampling => part
            .sampling_ports
            .iter()
            .find(|s| s.name == r.port)
            .map(|s| (s.direction, s.max_message_size)),
        ChannelKind::Queuing => part
            .queuing_ports
            .iter()
            .find(|q| q.name == r.port)
            .map(|q| (q.direction, q.max_message_size)),
    });
    match port {
        None => Err(format!(
            "channel {}: port `{}` does not exist",
            c.id.0, r.port
        )),
        Some((d, _)) if d != want => Err(format!(
            "channel {}: port `{}` has the wrong direction",
            c.id.0, r.port
        )),
        Some((_, size)) => Ok(size),
    }
}

//! The cyclic partition schedule as a pure state machine: module schedules compiled into tables
//! of scheduling points, iterated one point at a time.
//!
//! Every planned time is computed from the first frame's start and the major frames elapsed
//! (`frame_start + offset`), never from "now", so the schedule cannot drift: a late wake-up makes
//! one point late, not the following ones.

use partix_config::model::{Module, ScheduleId};

/// A window of a partition, planned in module time (ns since the module epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedWindow {
    /// Index of the partition in the configuration.
    pub partition: usize,
    /// `WindowIdentifier`.
    pub window: u32,
    /// Planned start (module time, ns).
    pub start: u64,
    /// Planned end (module time, ns).
    pub end: u64,
    /// `PartitionPeriodStart` of the window.
    pub period_start: bool,
}

/// One scheduling point: what closes and what opens at a planned time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Planned time (module time, ns).
    pub planned: u64,
    /// Major frame number (0-based, counted across schedule switches).
    pub frame: u64,
    /// Index of the point inside the frame (0 = the frame boundary).
    pub point: usize,
    /// Index (in `Module::schedules`) of the schedule this point belongs to.
    pub schedule: usize,
    /// The window that ends at this point, if any.
    pub close: Option<PlannedWindow>,
    /// The window that starts at this point, if any.
    pub open: Option<PlannedWindow>,
    /// Set on the first point of a frame in which a new module schedule took effect: the index
    /// of the schedule it replaced.
    pub switched_from: Option<usize>,
}

#[derive(Debug, Clone)]
struct Point {
    offset: u64,
    open: Option<(usize, u32, u64, bool)>, // partition index, window id, duration, period start
}

impl Point {
    /// The window this point opens, planned at `planned`.
    fn window_at(&self, planned: u64) -> Option<PlannedWindow> {
        self.open
            .map(|(partition, window, dur, period_start)| PlannedWindow {
                partition,
                window,
                start: planned,
                end: planned + dur,
                period_start,
            })
    }
}

#[derive(Debug, Clone)]
struct Table {
    major_ns: u64,
    points: Vec<Point>,
}

/// Failure of [`Planner::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// The module has no schedule.
    NoSchedule,
    /// A window names a partition the module does not have.
    UnknownPartition(u32),
    /// A schedule's windows overlap or leave the major frame (the config validator prevents it).
    BadWindows(u32),
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::NoSchedule => write!(f, "the module has no Module_Schedule"),
            PlanError::UnknownPartition(p) => write!(f, "a window names unknown partition {p}"),
            PlanError::BadWindows(s) => {
                write!(f, "schedule {s}: windows overlap or leave the major frame")
            }
        }
    }
}

impl std::error::Error for PlanError {}

/// Iterates the scheduling points of a module, switching module schedules at frame boundaries.
///
/// Bounded work: [`Planner::next_event`] is O(1) and allocation-free.
#[derive(Debug, Clone)]
pub struct Planner {
    tables: Vec<Table>,
    ids: Vec<ScheduleId>,
    current: usize,
    next: usize,
    frame: u64,
    frame_start: u64,
    point: usize,
    open: Option<PlannedWindow>,
    started: bool,
}

fn ns(d: std::time::Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

impl Planner {
    /// Compile the module's schedules; the first frame starts at module time `first_frame`.
    ///
    /// # Errors
    /// [`PlanError`] if the schedules are not usable (never for a validated module).
    pub fn new(module: &Module, first_frame: u64) -> Result<Planner, PlanError> {
        if module.schedules.is_empty() {
            return Err(PlanError::NoSchedule);
        }
        let mut tables = Vec::with_capacity(module.schedules.len());
        for s in &module.schedules {
            let major_ns = ns(s.major_frame).max(1);
            let mut wins: Vec<_> = s.windows.iter().collect();
            wins.sort_by_key(|w| w.offset);
            let mut offsets = vec![0u64];
            let mut last_end = 0u64;
            for w in &wins {
                let (o, e) = (ns(w.offset), ns(w.offset) + ns(w.duration));
                if o < last_end || e > major_ns || e == o {
                    return Err(PlanError::BadWindows(s.id.0));
                }
                last_end = e;
                offsets.push(o);
                if e < major_ns {
                    offsets.push(e);
                }
            }
            offsets.sort_unstable();
            offsets.dedup();
            let mut points = Vec::with_capacity(offsets.len());
            for off in offsets {
                let open = match wins.iter().find(|w| ns(w.offset) == off) {
                    Some(w) => {
                        let pidx = module
                            .partition_index(w.partition)
                            .ok_or(PlanError::UnknownPartition(w.partition.0))?;
                        Some((pidx, w.id, ns(w.duration), w.period_start))
                    }
                    None => None,
                };
                points.push(Point { offset: off, open });
            }
            tables.push(Table { major_ns, points });
        }
        let initial = module.initial_schedule.min(tables.len() - 1);
        Ok(Planner {
            tables,
            ids: module.schedules.iter().map(|s| s.id).collect(),
            current: initial,
            next: initial,
            frame: 0,
            frame_start: first_frame,
            point: 0,
            open: None,
            started: false,
        })
    }

    /// Return the next scheduling point and advance past it.
    pub fn next_event(&mut self) -> Event {
        let mut switched_from = None;
        if !self.started {
            self.started = true;
        } else if self.point >= self.tables[self.current].points.len() {
            self.frame_start += self.tables[self.current].major_ns;
            self.frame += 1;
            self.point = 0;
            if self.next != self.current {
                switched_from = Some(self.current);
                self.current = self.next;
            }
        }
        let table = &self.tables[self.current];
        let p = &table.points[self.point];
        let planned = self.frame_start + p.offset;
        let close = match self.open {
            Some(w) if w.end <= planned => self.open.take(),
            _ => None,
        };
        let open = p.window_at(planned);
        if open.is_some() {
            self.open = open;
        }
        let ev = Event {
            planned,
            frame: self.frame,
            point: self.point,
            schedule: self.current,
            close,
            open,
            switched_from,
        };
        self.point += 1;
        ev
    }

    /// At a frame boundary (`ev`, point 0, just returned by [`Planner::next_event`]): if a
    /// schedule was requested since that call chose this frame's, switch to it now and return
    /// the boundary again from the new schedule's table (the window closing here stays closed;
    /// what opens is the new table's). Otherwise return `ev` unchanged.
    ///
    /// `next_event` chooses a frame's schedule when it is called, right after the previous
    /// point's work; a request made after that (by a system partition whose window ends at the
    /// frame's end, during that window) used to wait a whole frame more.
    pub fn replan_boundary(&mut self, ev: Event) -> Event {
        if ev.point != 0 || ev.frame == 0 || self.next == self.current {
            return ev;
        }
        let from = ev.switched_from.unwrap_or(self.current);
        self.current = self.next;
        let p = &self.tables[self.current].points[0];
        let planned = self.frame_start + p.offset;
        let open = p.window_at(planned);
        self.open = open;
        Event {
            planned,
            frame: ev.frame,
            point: 0,
            schedule: self.current,
            close: ev.close,
            open,
            switched_from: (from != self.current).then_some(from),
        }
    }

    /// Return the window still open (to close it at shutdown), if any.
    pub fn open_window(&self) -> Option<PlannedWindow> {
        self.open
    }

    /// Return the planned time of the next scheduling point without advancing.
    pub fn peek_planned(&self) -> u64 {
        let mut c = self.clone();
        c.next_event().planned
    }

    /// Return the planned time of the next scheduling point and whether it opens a window,
    /// without advancing (O(1), allocation-free; a module-schedule switch requested after this
    /// call may change the answer at a frame boundary).
    pub fn peek_next(&self) -> (u64, bool) {
        let (table, frame_start, point) = if !self.started {
            (&self.tables[self.current], self.frame_start, self.point)
        } else if self.point >= self.tables[self.current].points.len() {
            (
                &self.tables[self.next],
                self.frame_start + self.tables[self.current].major_ns,
                0,
            )
        } else {
            (&self.tables[self.current], self.frame_start, self.point)
        };
        let p = &table.points[point];
        (frame_start + p.offset, p.open.is_some())
    }

    /// Ask for module schedule `id` from the next major-frame boundary on (SET_MODULE_SCHEDULE).
    /// Return the index of the schedule, or `None` if the id is unknown (nothing changes).
    pub fn request_schedule(&mut self, id: ScheduleId) -> Option<usize> {
        let idx = self.ids.iter().position(|s| *s == id)?;
        self.next = idx;
        Some(idx)
    }

    /// Return the index of the running schedule.
    pub fn current(&self) -> usize {
        self.current
    }

    /// Return the index of the schedule that runs from the next frame on.
    pub fn next_schedule(&self) -> usize {
        self.next
    }

    /// Return the id of the schedule with this index.
    pub fn schedule_id(&self, idx: usize) -> ScheduleId {
        self.ids[idx]
    }

    /// Return the major frame of the running schedule, ns.
    pub fn major_frame_ns(&self) -> u64 {
        self.tables[self.current].major_ns
    }

    /// Return the number of frames started so far.
    pub fn frame(&self) -> u64 {
        self.frame
    }
}

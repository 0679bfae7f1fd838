//! The schedule trace: planned vs actual windows, scheduling overheads, HM events and mode
//! changes, recorded by the executive into a preallocated buffer and written as Chrome/Perfetto
//! trace-event JSON (open it at <https://ui.perfetto.dev> or `chrome://tracing`).
//!
//! Layout of the JSON (`{"traceEvents":[...], "displayTimeUnit":"ns"}`), timestamps in µs of
//! module time (time since the module epoch):
//! - process `pid` 1 is the module; thread 0 is the executive (HM events, schedule switches);
//! - partition `i` (0-based config order) has two tracks: `tid = 2i+1` "NAME" with one `"X"`
//!   complete event per *actual* window (from the executive's wake-up at the opening point to its
//!   wake-up at the closing point) and `tid = 2i+2` "NAME planned" with the planned window;
//! - `"i"` instant events for HM events, mode changes, restarts, skipped windows and schedule
//!   switches, with the details in `args`;
//! - `"C"` counter events `TmrO` and `PtswO` (µs) per scheduling point / window opening.

use std::io::{self, Write};

/// What a [`Record`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// A window that opened and closed (`planned_*`, `actual_*`, `ptswo_ns`).
    Window,
    /// A scheduling point (`planned_start`, `actual_start` = wake-up, `tmro_ns`; `partition`
    /// and `window` = the window opened or `u32::MAX`; `detail` = the partition whose window
    /// closed or -1).
    Point,
    /// A window not opened because the partition is IDLE.
    Skipped,
    /// A health-monitor event (`text` = "CODE level=... action=...", `detail`).
    Hm,
    /// A partition mode change (`text` = the new mode's name).
    Mode,
    /// A module schedule switch took effect (`window` = new schedule id, `detail` = old id).
    ScheduleSwitch,
    /// A module schedule switch was requested (`window` = requested id).
    ScheduleRequest,
}

/// One trace entry. Plain data so the buffer is preallocated and filled without allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// What this is.
    pub kind: RecordKind,
    /// Partition index (config order), or `u32::MAX` for module-wide entries.
    pub partition: u32,
    /// Window identifier (or schedule id, see [`RecordKind`]).
    pub window: u32,
    /// Major frame number.
    pub frame: u64,
    /// Module schedule id in force.
    pub schedule: u32,
    /// Planned start, module ns.
    pub planned_start: u64,
    /// Planned end, module ns.
    pub planned_end: u64,
    /// Actual start (executive wake-up at the opening point), module ns.
    pub actual_start: u64,
    /// Actual end (executive wake-up at the closing point), module ns.
    pub actual_end: u64,
    /// Timer overhead at the point (wake − planned), ns.
    pub tmro_ns: u64,
    /// Partition switch overhead (partition resumed − wake), ns; `u64::MAX` if not observed.
    pub ptswo_ns: u64,
    /// A static description (HM code/action, mode name).
    pub text: &'static str,
    /// A second static description (for HM: the action).
    pub text2: &'static str,
    /// A number that goes with `text` (signal or exit status for HM; old schedule id).
    pub detail: i64,
}

impl Record {
    /// Return an empty record of `kind` for `partition`.
    pub const fn new(kind: RecordKind, partition: u32) -> Record {
        Record {
            kind,
            partition,
            window: 0,
            frame: 0,
            schedule: 0,
            planned_start: 0,
            planned_end: 0,
            actual_start: 0,
            actual_end: 0,
            tmro_ns: 0,
            ptswo_ns: u64::MAX,
            text: "",
            text2: "",
            detail: 0,
        }
    }
}

/// A preallocated trace buffer. When it is full, further records are counted in
/// [`Trace::dropped`] and not stored (the run goes on).
#[derive(Debug, Clone)]
pub struct Trace {
    records: Vec<Record>,
    dropped: u64,
    /// The buffer's pages are `MADV_DONTFORK` ([`advise`]); undone on drop.
    advised: bool,
    /// Partition names, by index.
    pub partition_names: Vec<String>,
    /// Module name.
    pub module_name: String,
}

impl Trace {
    /// Return an empty trace that holds at most `capacity` records (allocated now).
    pub fn with_capacity(
        capacity: usize,
        module_name: &str,
        partition_names: Vec<String>,
    ) -> Trace {
        let records = Vec::with_capacity(capacity);
        let advised = advise(&records, libc::MADV_DONTFORK);
        Trace {
            records,
            dropped: 0,
            advised,
            partition_names,
            module_name: module_name.to_string(),
        }
    }

    /// Append a record (no allocation: dropped and counted when full).
    pub fn push(&mut self, r: Record) {
        if self.records.len() < self.records.capacity() {
            self.records.push(r);
        } else {
            self.dropped += 1;
        }
    }

    /// Return the records.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Return how many records did not fit.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    fn name(&self, p: u32) -> &str {
        self.partition_names
            .get(p as usize)
            .map_or("module", String::as_str)
    }

    /// Write the trace as Chrome trace-event JSON.
    ///
    /// Streamed: each event is built and written on its own (through a `BufWriter`), so the
    /// memory this needs does not grow with the number of records (the whole document built as
    /// one `serde_json::Value` first took about 7 GB for 2^20 records).
    ///
    /// # Errors
    /// The writer's I/O errors.
    pub fn write_chrome_json<W: Write>(&self, w: W) -> io::Result<()> {
        let mut w = io::BufWriter::new(w);
        w.write_all(b"{\"traceEvents\":[")?;
        let mut first = true;
        self.for_each_event(|e| {
            if !std::mem::take(&mut first) {
                w.write_all(b",")?;
            }
            serde_json::to_writer(&mut w, &e).map_err(io::Error::from)
        })?;
        w.write_all(b"],\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        let other =
            serde_json::json!({"module": self.module_name, "dropped_records": self.dropped});
        serde_json::to_writer(&mut w, &other)?;
        w.write_all(b"}")?;
        w.flush()
    }

    /// Call `emit` with each trace event in order: the metadata events, then the events of each
    /// record. Stop at `emit`'s first error.
    fn for_each_event(
        &self,
        mut emit: impl FnMut(serde_json::Value) -> io::Result<()>,
    ) -> io::Result<()> {
        use serde_json::json;
        let us = |ns: u64| ns as f64 / 1000.0;
        emit(
            json!({"ph":"M","pid":1,"name":"process_name","args":{"name":format!("partix module {}", self.module_name)}}),
        )?;
        emit(json!({"ph":"M","pid":1,"tid":0,"name":"thread_name","args":{"name":"executive"}}))?;
        for (i, n) in self.partition_names.iter().enumerate() {
            let i = i as u64;
            emit(json!({"ph":"M","pid":1,"tid":2*i+1,"name":"thread_name","args":{"name":n}}))?;
            emit(
                json!({"ph":"M","pid":1,"tid":2*i+2,"name":"thread_name","args":{"name":format!("{n} planned")}}),
            )?;
            emit(
                json!({"ph":"M","pid":1,"tid":2*i+1,"name":"thread_sort_index","args":{"sort_index":2*i+1}}),
            )?;
            emit(
                json!({"ph":"M","pid":1,"tid":2*i+2,"name":"thread_sort_index","args":{"sort_index":2*i+2}}),
            )?;
        }
        for r in &self.records {
            let p = r.partition as u64;
            let name = self.name(r.partition);
            match r.kind {
                RecordKind::Window => {
                    let mut args = json!({
                        "window": r.window, "frame": r.frame,
                        "planned_start_us": us(r.planned_start), "planned_end_us": us(r.planned_end),
                        "start_late_us": us(r.actual_start.saturating_sub(r.planned_start)),
                        "end_late_us": us(r.actual_end.saturating_sub(r.planned_end)),
                    });
                    if r.ptswo_ns != u64::MAX {
                        args["ptswo_us"] = json!(us(r.ptswo_ns));
                    }
                    if !r.text.is_empty() {
                        // E.g. a window in which the partition waited for a CPU.
                        args["note"] = json!(r.text);
                    }
                    emit(
                        json!({"ph":"X","pid":1,"tid":2*p+1,"name":format!("{name} w{}", r.window),
                        "ts":us(r.actual_start),"dur":us(r.actual_end.saturating_sub(r.actual_start)),"args":args}),
                    )?;
                    emit(
                        json!({"ph":"X","pid":1,"tid":2*p+2,"name":format!("{name} w{} planned", r.window),
                        "ts":us(r.planned_start),"dur":us(r.planned_end.saturating_sub(r.planned_start)),
                        "args":{"window":r.window,"frame":r.frame}}),
                    )?;
                    if r.ptswo_ns != u64::MAX {
                        emit(
                            json!({"ph":"C","pid":1,"name":"PtswO","ts":us(r.actual_start),
                            "args":{"us":us(r.ptswo_ns)}}),
                        )?;
                    }
                }
                RecordKind::Point => {
                    emit(
                        json!({"ph":"C","pid":1,"name":"TmrO","ts":us(r.actual_start),
                        "args":{"us":us(r.tmro_ns)}}),
                    )?;
                }
                RecordKind::Skipped => {
                    emit(
                        json!({"ph":"i","pid":1,"tid":2*p+1,"s":"t","name":format!("{name} {}: window {} skipped", if r.text.is_empty() { "IDLE" } else { r.text }, r.window),
                        "ts":us(r.planned_start),"args":{"window":r.window,"frame":r.frame}}),
                    )?;
                }
                RecordKind::Hm => {
                    emit(
                        json!({"ph":"i","pid":1,"tid":0,"s":"g","name":format!("HM {name}: {} -> {}", r.text, r.text2),
                        "ts":us(r.actual_start),"args":{"partition":name,"error":r.text,"action":r.text2,"detail":r.detail,"frame":r.frame}}),
                    )?;
                }
                RecordKind::Mode => {
                    emit(
                        json!({"ph":"i","pid":1,"tid":2*p+1,"s":"t","name":format!("{name} mode {}", r.text),
                        "ts":us(r.actual_start),"args":{"mode":r.text,"cause":r.text2,"frame":r.frame}}),
                    )?;
                }
                RecordKind::ScheduleSwitch => {
                    emit(
                        json!({"ph":"i","pid":1,"tid":0,"s":"g","name":format!("module schedule {} -> {}", r.detail, r.window),
                        "ts":us(r.actual_start),"args":{"from":r.detail,"to":r.window,"frame":r.frame}}),
                    )?;
                }
                RecordKind::ScheduleRequest => {
                    emit(
                        json!({"ph":"i","pid":1,"tid":0,"s":"t","name":format!("SET_MODULE_SCHEDULE {} by {name}", r.window),
                        "ts":us(r.actual_start),"args":{"schedule":r.window,"frame":r.frame}}),
                    )?;
                }
            }
        }
        Ok(())
    }
}

impl Drop for Trace {
    fn drop(&mut self) {
        // The pages go back to the allocator: a later allocation on them must be in the
        // processes forked after (the executive's child reads its prepared data before exec).
        if self.advised {
            advise(&self.records, libc::MADV_DOFORK);
        }
    }
}

/// Give the whole pages of `records`' buffer `advice`; return whether it was applied.
///
/// With `MADV_DONTFORK` ([`Trace::with_capacity`]) the buffer stays out of the processes the
/// executive forks (they exec at once and never read it). A fork copies the page tables of
/// every page its parent has touched: with the default 2^20 records (112 MiB) filled, a fork
/// took 5.5 ms instead of 0.19 ms on the 2-vCPU VM (a C program touching 112 MiB, 50 forks
/// each), at the scheduling point that respawns a restarted partition. A smaller buffer may
/// share the malloc heap with other data: only the pages wholly inside it are advised, and
/// [`Trace`]'s `Drop` gives them `MADV_DOFORK` back before they are freed.
fn advise(records: &Vec<Record>, advice: libc::c_int) -> bool {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let bytes = records.capacity() * std::mem::size_of::<Record>();
    if bytes < 16 * page {
        return false;
    }
    let start = (records.as_ptr() as usize).div_ceil(page) * page;
    let end = (records.as_ptr() as usize + bytes) / page * page;
    // SAFETY: the range lies inside the buffer this Vec owns; the advice changes no content
    // and no mapping of this process.
    end > start && unsafe { libc::madvise(start as *mut libc::c_void, end - start, advice) } == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmFlags` of the mapping that holds address `at` in this process, if one does.
    fn vm_flags(at: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut flags = None;
        let mut inside = false;
        for l in smaps.lines() {
            if let Some((range, _)) = l.split_once(' ') {
                if let Some((a, b)) = range.split_once('-') {
                    if let (Ok(a), Ok(b)) =
                        (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                    {
                        inside = a <= at && at < b;
                        continue;
                    }
                }
            }
            if inside {
                if let Some(f) = l.strip_prefix("VmFlags:") {
                    flags = Some(f.to_string());
                }
            }
        }
        flags
    }

    /// Whether the mapping holding `at` is marked "dc" (do not copy on fork).
    fn dont_copy(at: usize) -> bool {
        vm_flags(at).is_some_and(|f| f.split_whitespace().any(|x| x == "dc"))
    }

    /// The executive's trace buffer is not copied into the processes it forks: its mapping is
    /// marked "dc" (do not copy on fork) in `/proc/self/smaps`, and a forked child that reads it
    /// gets SIGSEGV. Dropped, it gives its pages back to the allocator copyable again (a later
    /// allocation on them must reach the executive's forked children).
    #[test]
    fn the_trace_buffer_is_not_copied_into_forked_processes() {
        let mut t = Trace::with_capacity(1 << 16, "m", vec!["P".into()]);
        for i in 0..(1u64 << 16) {
            let mut r = Record::new(RecordKind::Point, 0);
            r.frame = i;
            t.push(r);
        }
        let at = std::ptr::addr_of!(t.records()[1 << 15]) as usize;
        assert!(dont_copy(at), "VmFlags:{:?}", vm_flags(at));
        // SAFETY: the child only reads one word and exits (async-signal-safe); a fault ends it.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: `at` is a valid address in the parent; in the child it is not mapped.
            let v = unsafe { std::ptr::read_volatile(at as *const u64) };
            // SAFETY: _exit has no preconditions.
            unsafe { libc::_exit(if v == 0 { 3 } else { 4 }) };
        }
        let mut st = 0;
        // SAFETY: pid is our child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut st, 0) }, pid);
        assert!(
            libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGSEGV,
            "the child read the buffer (status {st:#x})"
        );
        // Dropped: unmapped, or mapped without the mark.
        drop(t);
        assert!(!dont_copy(at), "VmFlags:{:?}", vm_flags(at));
        // A buffer below malloc's mmap threshold lies in the heap, which stays mapped after the
        // free (a later allocation kept after it, so the heap's top is not trimmed).
        let t = Trace::with_capacity(1000, "m", vec!["P".into()]);
        let keep = vec![0u8; 64];
        let at = t.records.as_ptr() as usize + 56 * 1024;
        let marked = dont_copy(at);
        drop(t);
        assert!(!dont_copy(at), "VmFlags after the drop:{:?}", vm_flags(at));
        assert!(
            marked || vm_flags(at).is_none(),
            "never marked: {:?}",
            vm_flags(at)
        );
        drop(keep);
    }

    #[test]
    fn full_buffer_counts_drops_and_json_parses() {
        let mut t = Trace::with_capacity(2, "m", vec!["P1".into()]);
        let mut r = Record::new(RecordKind::Window, 0);
        r.planned_start = 1000;
        r.planned_end = 5000;
        r.actual_start = 1010;
        r.actual_end = 5020;
        r.ptswo_ns = 3;
        t.push(r);
        let mut h = Record::new(RecordKind::Hm, 0);
        h.text = "MEMORY_VIOLATION";
        h.text2 = "COLD_START";
        t.push(h);
        t.push(h);
        assert_eq!(t.records().len(), 2);
        assert_eq!(t.dropped(), 1);
        let mut out = Vec::new();
        t.write_chrome_json(&mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let x: Vec<_> = evs.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x.len(), 2);
        assert_eq!(x[0]["ts"].as_f64().unwrap(), 1.01);
        assert_eq!(x[0]["tid"], 1);
        assert_eq!(x[1]["tid"], 2);
        assert!(evs
            .iter()
            .any(|e| e["ph"] == "i" && e["name"].as_str().unwrap().contains("MEMORY_VIOLATION")));
        assert!(evs.iter().any(|e| e["ph"] == "C" && e["name"] == "PtswO"));
    }

    #[test]
    fn a_starved_window_carries_its_note_and_no_ptswo() {
        let mut t = Trace::with_capacity(4, "m", vec!["P1".into()]);
        let mut r = Record::new(RecordKind::Window, 0);
        r.planned_start = 1000;
        r.planned_end = 5000;
        r.actual_start = 1000;
        r.actual_end = 5000;
        r.text = crate::executive::STARVED;
        t.push(r);
        let mut out = Vec::new();
        t.write_chrome_json(&mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let evs = v["traceEvents"].as_array().unwrap();
        let w = evs
            .iter()
            .find(|e| e["ph"] == "X" && e["tid"] == 1)
            .unwrap();
        assert_eq!(w["args"]["note"], crate::executive::STARVED);
        assert!(w["args"].get("ptswo_us").is_none());
        assert!(!evs.iter().any(|e| e["ph"] == "C" && e["name"] == "PtswO"));
    }
}

//! Writing a large trace streams it: the memory the writer needs does not grow with the number
//! of records. Alone in its test binary (one test, one thread), so that the process's peak RSS
//! (`VmHWM`) measures this writer only, not another test's allocations.

use partix_runtime::trace::{Record, RecordKind, Trace};
use serde::de::IgnoredAny;
use std::io::BufReader;

/// The process's peak resident set size, in bytes (`VmHWM` of `/proc/self/status`).
fn vm_hwm() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .expect("VmHWM in /proc/self/status")
        .trim()
        .trim_end_matches("kB")
        .trim();
    kb.parse::<u64>().unwrap() * 1024
}

#[derive(serde::Deserialize)]
struct Doc {
    #[serde(rename = "traceEvents")]
    trace_events: Vec<IgnoredAny>,
    #[serde(rename = "displayTimeUnit")]
    display_time_unit: String,
    #[serde(rename = "otherData")]
    other_data: serde_json::Value,
}

/// 2^18 records (3 events each, about 200 MB of JSON): the old writer built the whole document
/// as a `serde_json::Value` first and peaked about 1.7 GB above the trace buffer (about 7 GB for
/// 2^20 records, `partix run`'s default buffer); streamed, each event is written as it is made.
#[test]
fn writing_a_large_trace_takes_bounded_memory() {
    const N: usize = 1 << 18;
    let mut t = Trace::with_capacity(N, "big", vec!["P1".into(), "P2".into()]);
    for i in 0..N as u64 {
        let mut r = Record::new(RecordKind::Window, (i % 2) as u32);
        r.window = (i % 2) as u32 + 1;
        r.frame = i / 2;
        r.planned_start = i * 1_000_000;
        r.planned_end = i * 1_000_000 + 900_000;
        r.actual_start = r.planned_start + 12_345;
        r.actual_end = r.planned_end + 6_789;
        r.ptswo_ns = 23_456;
        t.push(r);
    }
    t.push(Record::new(RecordKind::Point, 0));
    assert_eq!(t.dropped(), 1);
    let path =
        std::env::temp_dir().join(format!("partix-trace-memory-{}.json", std::process::id()));
    let before = vm_hwm();
    let f = std::fs::File::create(&path).unwrap();
    t.write_chrome_json(f).unwrap();
    let grew = vm_hwm().saturating_sub(before);
    assert!(
        grew < 64 << 20,
        "writing {N} records raised the peak RSS by {} MiB",
        grew >> 20
    );
    // The file is one JSON document with every event (checked without holding it in memory).
    let doc: Doc =
        serde_json::from_reader(BufReader::new(std::fs::File::open(&path).unwrap())).unwrap();
    let _ = std::fs::remove_file(&path);
    // 2 + 4 per partition metadata events, then an actual and a planned window and a PtswO
    // counter per record.
    assert_eq!(doc.trace_events.len(), 2 + 4 * 2 + 3 * N);
    assert_eq!(doc.display_time_unit, "ns");
    assert_eq!(doc.other_data["dropped_records"], 1);
    assert_eq!(doc.other_data["module"], "big");
}

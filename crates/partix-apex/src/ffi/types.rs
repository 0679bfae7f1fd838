//! `#[repr(C)]` mirrors of the types in `include/arinc653/types.h`.
//!
//! C enumerations cross the ABI as 32-bit integers (`u32` here), so a value outside the
//! enumeration is representable and is rejected with `INVALID_PARAM` instead of being undefined
//! behaviour. Sizes and offsets are checked twice: by `const` assertions for x86-64/aarch64 Linux
//! below, and by a unit test that compiles `tests/c/layout.c` with the C compiler and compares.
#![allow(non_camel_case_types, clippy::upper_case_acronyms)]

use std::ffi::{c_char, c_void};
use std::mem::{align_of, offset_of, size_of};

/// `APEX_BYTE`.
pub type APEX_BYTE = u8;
/// `APEX_INTEGER` (32-bit signed).
pub type APEX_INTEGER = i32;
/// `APEX_UNSIGNED` (32-bit unsigned).
pub type APEX_UNSIGNED = u32;
/// `APEX_LONG_INTEGER` (64-bit signed).
pub type APEX_LONG_INTEGER = i64;

/// `RETURN_CODE_TYPE` (a C enumeration).
pub type RETURN_CODE_TYPE = u32;
/// `NO_ERROR`.
pub const NO_ERROR: RETURN_CODE_TYPE = 0;
/// `NO_ACTION`.
pub const NO_ACTION: RETURN_CODE_TYPE = 1;
/// `NOT_AVAILABLE`.
pub const NOT_AVAILABLE: RETURN_CODE_TYPE = 2;
/// `INVALID_PARAM`.
pub const INVALID_PARAM: RETURN_CODE_TYPE = 3;
/// `INVALID_CONFIG`.
pub const INVALID_CONFIG: RETURN_CODE_TYPE = 4;
/// `INVALID_MODE`.
pub const INVALID_MODE: RETURN_CODE_TYPE = 5;
/// `TIMED_OUT`.
pub const TIMED_OUT: RETURN_CODE_TYPE = 6;

/// `MAX_NAME_LENGTH`.
pub const MAX_NAME_LENGTH: usize = 30;
/// `NAME_TYPE`: up to 30 characters, NUL-terminated only when shorter.
pub type NAME_TYPE = [c_char; MAX_NAME_LENGTH];
/// `SYSTEM_ADDRESS_TYPE`.
pub type SYSTEM_ADDRESS_TYPE = *mut c_void;
/// `MESSAGE_ADDR_TYPE`.
pub type MESSAGE_ADDR_TYPE = *mut APEX_BYTE;
/// `MESSAGE_SIZE_TYPE`.
pub type MESSAGE_SIZE_TYPE = APEX_INTEGER;
/// `SYSTEM_TIME_TYPE` (nanoseconds).
pub type SYSTEM_TIME_TYPE = APEX_LONG_INTEGER;

/// `OPERATING_MODE_TYPE` (a C enumeration: IDLE 0, COLD_START 1, WARM_START 2, NORMAL 3).
pub type OPERATING_MODE_TYPE = u32;
/// `PARTITION_ID_TYPE`.
pub type PARTITION_ID_TYPE = APEX_INTEGER;
/// `NUM_CORES_TYPE`.
pub type NUM_CORES_TYPE = APEX_UNSIGNED;
/// `START_CONDITION_TYPE` (a C enumeration).
pub type START_CONDITION_TYPE = u32;
/// `PROCESS_ID_TYPE`.
pub type PROCESS_ID_TYPE = APEX_INTEGER;
/// `LOCK_LEVEL_TYPE`.
pub type LOCK_LEVEL_TYPE = APEX_INTEGER;
/// `STACK_SIZE_TYPE`.
pub type STACK_SIZE_TYPE = APEX_UNSIGNED;
/// `PRIORITY_TYPE`.
pub type PRIORITY_TYPE = APEX_INTEGER;
/// `PROCESS_STATE_TYPE` (a C enumeration: DORMANT 0 .. FAULTED 4).
pub type PROCESS_STATE_TYPE = u32;
/// `DEADLINE_TYPE` (a C enumeration: SOFT 0, HARD 1).
pub type DEADLINE_TYPE = u32;
/// `SOFT`.
pub const SOFT: DEADLINE_TYPE = 0;
/// `HARD`.
pub const HARD: DEADLINE_TYPE = 1;

/// `PROCESS_ATTRIBUTE_TYPE`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PROCESS_ATTRIBUTE_TYPE {
    /// `PERIOD`.
    pub PERIOD: SYSTEM_TIME_TYPE,
    /// `TIME_CAPACITY`.
    pub TIME_CAPACITY: SYSTEM_TIME_TYPE,
    /// `ENTRY_POINT`.
    pub ENTRY_POINT: SYSTEM_ADDRESS_TYPE,
    /// `STACK_SIZE`.
    pub STACK_SIZE: STACK_SIZE_TYPE,
    /// `BASE_PRIORITY`.
    pub BASE_PRIORITY: PRIORITY_TYPE,
    /// `DEADLINE`.
    pub DEADLINE: DEADLINE_TYPE,
    /// `NAME`.
    pub NAME: NAME_TYPE,
}

/// `PROCESS_STATUS_TYPE`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PROCESS_STATUS_TYPE {
    /// `DEADLINE_TIME`.
    pub DEADLINE_TIME: SYSTEM_TIME_TYPE,
    /// `CURRENT_PRIORITY`.
    pub CURRENT_PRIORITY: PRIORITY_TYPE,
    /// `PROCESS_STATE`.
    pub PROCESS_STATE: PROCESS_STATE_TYPE,
    /// `ATTRIBUTES`.
    pub ATTRIBUTES: PROCESS_ATTRIBUTE_TYPE,
}

/// `PARTITION_STATUS_TYPE`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PARTITION_STATUS_TYPE {
    /// `PERIOD`.
    pub PERIOD: SYSTEM_TIME_TYPE,
    /// `DURATION`.
    pub DURATION: SYSTEM_TIME_TYPE,
    /// `IDENTIFIER`.
    pub IDENTIFIER: PARTITION_ID_TYPE,
    /// `LOCK_LEVEL`.
    pub LOCK_LEVEL: LOCK_LEVEL_TYPE,
    /// `OPERATING_MODE`.
    pub OPERATING_MODE: OPERATING_MODE_TYPE,
    /// `START_CONDITION`.
    pub START_CONDITION: START_CONDITION_TYPE,
    /// `NUM_ASSIGNED_CORES`.
    pub NUM_ASSIGNED_CORES: NUM_CORES_TYPE,
}

/// `MAX_ERROR_MESSAGE_SIZE`.
pub const MAX_ERROR_MESSAGE_SIZE: usize = 128;
/// `ERROR_MESSAGE_SIZE_TYPE`.
pub type ERROR_MESSAGE_SIZE_TYPE = APEX_INTEGER;
/// `ERROR_MESSAGE_TYPE`.
pub type ERROR_MESSAGE_TYPE = [APEX_BYTE; MAX_ERROR_MESSAGE_SIZE];
/// `ERROR_CODE_TYPE` (a C enumeration: DEADLINE_MISSED 0 .. POWER_FAIL 7).
pub type ERROR_CODE_TYPE = u32;

/// `ERROR_STATUS_TYPE`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ERROR_STATUS_TYPE {
    /// `ERROR_CODE`.
    pub ERROR_CODE: ERROR_CODE_TYPE,
    /// `LENGTH`.
    pub LENGTH: ERROR_MESSAGE_SIZE_TYPE,
    /// `FAILED_PROCESS_ID`.
    pub FAILED_PROCESS_ID: PROCESS_ID_TYPE,
    /// `FAILED_ADDRESS`.
    pub FAILED_ADDRESS: SYSTEM_ADDRESS_TYPE,
    /// `MESSAGE`.
    pub MESSAGE: ERROR_MESSAGE_TYPE,
}

/// `SCHEDULE_ID_TYPE`.
pub type SCHEDULE_ID_TYPE = APEX_INTEGER;

/// `SCHEDULE_STATUS_TYPE` (ARINC 653 Part 2).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SCHEDULE_STATUS_TYPE {
    /// `TIME_OF_LAST_SCHEDULE_SWITCH`.
    pub TIME_OF_LAST_SCHEDULE_SWITCH: SYSTEM_TIME_TYPE,
    /// `CURRENT_SCHEDULE`.
    pub CURRENT_SCHEDULE: SCHEDULE_ID_TYPE,
    /// `NEXT_SCHEDULE`.
    pub NEXT_SCHEDULE: SCHEDULE_ID_TYPE,
}

// Compile-time layout for LP64 Linux (x86-64, aarch64), as gcc lays out the C headers; the unit
// test below checks the same numbers against the C compiler.
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(size_of::<PROCESS_ATTRIBUTE_TYPE>() == 72);
    assert!(offset_of!(PROCESS_ATTRIBUTE_TYPE, PERIOD) == 0);
    assert!(offset_of!(PROCESS_ATTRIBUTE_TYPE, TIME_CAPACITY) == 8);
    assert!(offset_of!(PROCESS_ATTRIBUTE_TYPE, ENTRY_POINT) == 16);
    assert!(offset_of!(PROCESS_ATTRIBUTE_TYPE, STACK_SIZE) == 24);
    assert!(offset_of!(PROCESS_ATTRIBUTE_TYPE, BASE_PRIORITY) == 28);
    assert!(offset_of!(PROCESS_ATTRIBUTE_TYPE, DEADLINE) == 32);
    assert!(offset_of!(PROCESS_ATTRIBUTE_TYPE, NAME) == 36);
    assert!(size_of::<PROCESS_STATUS_TYPE>() == 88);
    assert!(offset_of!(PROCESS_STATUS_TYPE, ATTRIBUTES) == 16);
    assert!(size_of::<PARTITION_STATUS_TYPE>() == 40);
    assert!(offset_of!(PARTITION_STATUS_TYPE, NUM_ASSIGNED_CORES) == 32);
    assert!(size_of::<ERROR_STATUS_TYPE>() == 152);
    assert!(offset_of!(ERROR_STATUS_TYPE, FAILED_ADDRESS) == 16);
    assert!(offset_of!(ERROR_STATUS_TYPE, MESSAGE) == 24);
    assert!(size_of::<SCHEDULE_STATUS_TYPE>() == 16);
    assert!(align_of::<PROCESS_ATTRIBUTE_TYPE>() == 8);
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::process::Command;

    /// The Rust view of every line `tests/c/layout.c` prints.
    fn rust_layout() -> BTreeMap<String, i64> {
        let mut m = BTreeMap::new();
        macro_rules! size {
            ($($t:ident),* $(,)?) => {$(
                m.insert(format!("size {}", stringify!($t)), size_of::<$t>() as i64);
                m.insert(format!("align {}", stringify!($t)), align_of::<$t>() as i64);
            )*};
        }
        macro_rules! offset {
            ($t:ident: $($f:ident),*) => {$(
                m.insert(format!("offset {}.{}", stringify!($t), stringify!($f)), offset_of!($t, $f) as i64);
            )*};
        }
        // The crate's own definitions, not copies (copies made the comparison with the C
        // headers vacuous for these; found by review).
        use crate::ffi::ports::{PORT_DIRECTION_TYPE, QUEUING_DISCIPLINE_TYPE, WAITING_RANGE_TYPE};
        // The Rust structs carry these names as NAME_TYPE.
        type PROCESS_NAME_TYPE = NAME_TYPE;
        type SCHEDULE_NAME_TYPE = NAME_TYPE;
        size!(
            APEX_BYTE,
            APEX_INTEGER,
            APEX_UNSIGNED,
            APEX_LONG_INTEGER,
            RETURN_CODE_TYPE,
            NAME_TYPE,
            SYSTEM_ADDRESS_TYPE,
            MESSAGE_ADDR_TYPE,
            MESSAGE_SIZE_TYPE,
            WAITING_RANGE_TYPE,
            QUEUING_DISCIPLINE_TYPE,
            PORT_DIRECTION_TYPE,
            SYSTEM_TIME_TYPE,
            OPERATING_MODE_TYPE,
            PARTITION_ID_TYPE,
            NUM_CORES_TYPE,
            START_CONDITION_TYPE,
            PROCESS_NAME_TYPE,
            PROCESS_ID_TYPE,
            LOCK_LEVEL_TYPE,
            STACK_SIZE_TYPE,
            PRIORITY_TYPE,
            PROCESS_STATE_TYPE,
            DEADLINE_TYPE,
            ERROR_MESSAGE_SIZE_TYPE,
            ERROR_MESSAGE_TYPE,
            ERROR_CODE_TYPE,
            SCHEDULE_ID_TYPE,
            SCHEDULE_NAME_TYPE,
            PROCESS_ATTRIBUTE_TYPE,
            PROCESS_STATUS_TYPE,
            PARTITION_STATUS_TYPE,
            ERROR_STATUS_TYPE,
            SCHEDULE_STATUS_TYPE,
        );
        offset!(PROCESS_ATTRIBUTE_TYPE: PERIOD, TIME_CAPACITY, ENTRY_POINT, STACK_SIZE, BASE_PRIORITY, DEADLINE, NAME);
        offset!(PROCESS_STATUS_TYPE: DEADLINE_TIME, CURRENT_PRIORITY, PROCESS_STATE, ATTRIBUTES);
        offset!(PARTITION_STATUS_TYPE: PERIOD, DURATION, IDENTIFIER, LOCK_LEVEL, OPERATING_MODE, START_CONDITION, NUM_ASSIGNED_CORES);
        offset!(ERROR_STATUS_TYPE: ERROR_CODE, LENGTH, FAILED_PROCESS_ID, FAILED_ADDRESS, MESSAGE);
        offset!(SCHEDULE_STATUS_TYPE: TIME_OF_LAST_SCHEDULE_SWITCH, CURRENT_SCHEDULE, NEXT_SCHEDULE);
        let values: [(&str, i64); 13] = [
            ("NO_ERROR", NO_ERROR.into()),
            ("NO_ACTION", NO_ACTION.into()),
            ("NOT_AVAILABLE", NOT_AVAILABLE.into()),
            ("INVALID_PARAM", INVALID_PARAM.into()),
            ("INVALID_CONFIG", INVALID_CONFIG.into()),
            ("INVALID_MODE", INVALID_MODE.into()),
            ("TIMED_OUT", TIMED_OUT.into()),
            ("MAX_NAME_LENGTH", MAX_NAME_LENGTH as i64),
            ("MAX_ERROR_MESSAGE_SIZE", MAX_ERROR_MESSAGE_SIZE as i64),
            (
                "INFINITE_TIME_VALUE",
                partix_runtime::partition::INFINITE_TIME_VALUE,
            ),
            (
                "MIN_PRIORITY_VALUE",
                partix_runtime::partition::MIN_PRIORITY_VALUE.into(),
            ),
            (
                "MAX_PRIORITY_VALUE",
                partix_runtime::partition::MAX_PRIORITY_VALUE.into(),
            ),
            ("MAX_LOCK_LEVEL", 16),
        ];
        for (k, v) in values {
            m.insert(format!("value {k}"), v);
        }
        m
    }

    #[test]
    fn rust_mirrors_match_the_c_headers() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let exe = std::env::temp_dir().join(format!("apexc-layout-{}", std::process::id()));
        let out = Command::new("cc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(dir.join("include"))
            .arg(dir.join("tests/c/layout.c"))
            .arg("-o")
            .arg(&exe)
            .output()
            .expect("run cc (install gcc: scripts/deps/apexc.txt)");
        assert!(
            out.status.success(),
            "cc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let run = Command::new(&exe).output().expect("run layout");
        std::fs::remove_file(&exe).ok();
        assert!(run.status.success());
        let text = String::from_utf8(run.stdout).unwrap();
        let mut c = BTreeMap::new();
        for line in text.lines() {
            let (k, v) = line.rsplit_once(' ').unwrap();
            c.insert(k.to_string(), v.parse::<i64>().unwrap());
        }
        let rust = rust_layout();
        let mismatches: Vec<String> = c
            .iter()
            .filter(|(k, v)| rust.get(*k) != Some(v))
            .map(|(k, v)| format!("{k}: C {v}, Rust {:?}", rust.get(k)))
            .collect();
        assert!(
            mismatches.is_empty(),
            "layout mismatches:\n{}",
            mismatches.join("\n")
        );
        assert_eq!(
            c.len(),
            rust.len(),
            "layout.c and the Rust table list different items"
        );
    }
}

//! `include/arinc653/partition.h`: partition management services.

use super::types::*;
use super::{put, service, BAD_PARAM};
use partix_runtime::partition::{self as apex, OperatingMode, StartCondition};

pub(super) fn operating_mode_type(m: OperatingMode) -> OPERATING_MODE_TYPE {
    match m {
        OperatingMode::Idle => 0,
        OperatingMode::ColdStart => 1,
        OperatingMode::WarmStart => 2,
        OperatingMode::Normal => 3,
    }
}

fn start_condition_type(s: StartCondition) -> START_CONDITION_TYPE {
    match s {
        StartCondition::NormalStart => 0,
        StartCondition::PartitionRestart => 1,
        StartCondition::HmModuleRestart => 2,
        StartCondition::HmPartitionRestart => 3,
    }
}

/// `GET_PARTITION_STATUS`.
#[no_mangle]
pub extern "C" fn GET_PARTITION_STATUS(
    PARTITION_STATUS: *mut PARTITION_STATUS_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("GET_PARTITION_STATUS", RETURN_CODE, || {
        let s = apex::get_partition_status();
        put(
            PARTITION_STATUS,
            PARTITION_STATUS_TYPE {
                PERIOD: s.period,
                DURATION: s.duration,
                IDENTIFIER: s.identifier,
                LOCK_LEVEL: s.lock_level,
                OPERATING_MODE: operating_mode_type(s.operating_mode),
                START_CONDITION: start_condition_type(s.start_condition),
                NUM_ASSIGNED_CORES: s.num_assigned_cores as NUM_CORES_TYPE,
            },
        )
    });
}

/// `SET_PARTITION_MODE`. On success with `NORMAL` this does not return to the caller.
#[no_mangle]
pub extern "C" fn SET_PARTITION_MODE(
    OPERATING_MODE: OPERATING_MODE_TYPE,
    RETURN_CODE: *mut RETURN_CODE_TYPE,
) {
    service("SET_PARTITION_MODE", RETURN_CODE, || {
        let mode = match OPERATING_MODE {
            0 => OperatingMode::Idle,
            1 => OperatingMode::ColdStart,
            2 => OperatingMode::WarmStart,
            3 => OperatingMode::Normal,
            _ => return Err(BAD_PARAM),
        };
        Ok(apex::set_partition_mode(mode)?)
    });
}

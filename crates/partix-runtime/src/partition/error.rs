//! `RETURN_CODE_TYPE`: the failures of APEX services.

use std::fmt;

/// A failed APEX service. `NO_ERROR` (0) is `Ok(..)`; each variant is one `RETURN_CODE_TYPE`
/// value (in comments), translated by [`ApexError::return_code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApexError {
    /// `NO_ACTION` (1): the request changes nothing (already in that state, nothing pending).
    NoAction,
    /// `NOT_AVAILABLE` (2): the resource is not available now.
    NotAvailable,
    /// `INVALID_PARAM` (3): a parameter is out of range or names nothing.
    InvalidParam,
    /// `INVALID_CONFIG` (4): the request conflicts with the configuration or exhausts a resource.
    InvalidConfig,
    /// `INVALID_MODE` (5): the request is not allowed in the current mode or state.
    InvalidMode,
    /// `TIMED_OUT` (6): the time-out expired.
    TimedOut,
}

/// `NO_ERROR`: the `RETURN_CODE_TYPE` of a successful service.
pub const NO_ERROR: u32 = 0;

impl ApexError {
    /// Return the ARINC 653 `RETURN_CODE_TYPE` value.
    pub fn return_code(self) -> u32 {
        match self {
            ApexError::NoAction => 1,
            ApexError::NotAvailable => 2,
            ApexError::InvalidParam => 3,
            ApexError::InvalidConfig => 4,
            ApexError::InvalidMode => 5,
            ApexError::TimedOut => 6,
        }
    }

    /// Return the standard's name of the code (`"INVALID_PARAM"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ApexError::NoAction => "NO_ACTION",
            ApexError::NotAvailable => "NOT_AVAILABLE",
            ApexError::InvalidParam => "INVALID_PARAM",
            ApexError::InvalidConfig => "INVALID_CONFIG",
            ApexError::InvalidMode => "INVALID_MODE",
            ApexError::TimedOut => "TIMED_OUT",
        }
    }
}

/// Return the `RETURN_CODE_TYPE` of a service result (`NO_ERROR` for `Ok`).
pub fn return_code_of<T>(r: &ApexResult<T>) -> u32 {
    match r {
        Ok(_) => NO_ERROR,
        Err(e) => e.return_code(),
    }
}

impl fmt::Display for ApexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::error::Error for ApexError {}

/// The result of an APEX service.
pub type ApexResult<T> = Result<T, ApexError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_standard() {
        let all = [
            ApexError::NoAction,
            ApexError::NotAvailable,
            ApexError::InvalidParam,
            ApexError::InvalidConfig,
            ApexError::InvalidMode,
            ApexError::TimedOut,
        ];
        let codes: Vec<u32> = all.iter().map(|e| e.return_code()).collect();
        assert_eq!(codes, vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(return_code_of(&Ok::<(), ApexError>(())), 0);
        assert_eq!(return_code_of::<()>(&Err(ApexError::TimedOut)), 6);
        assert_eq!(ApexError::InvalidMode.to_string(), "INVALID_MODE");
    }
}

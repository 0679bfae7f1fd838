//! The APEX API for partition code.
#![warn(missing_docs)]

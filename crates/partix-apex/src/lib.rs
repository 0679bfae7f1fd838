//! The APEX API for partition code.
#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod c_headers;

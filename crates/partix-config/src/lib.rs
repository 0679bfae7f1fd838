//! ARINC 653 module configuration: XML → validated, frozen [`model::Module`].
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod model;

//! ARINC 653 module configuration: XML → validated, frozen [`model::Module`].
//!
//! The pipeline has three stages, each in its own module:
//!
//! 1. `parse`: XML text → a syntactic tree, every value typed and located; unknown element and
//!    attribute names, missing attributes and bad values are reported here.
//! 2. `validate`: cross-references (ids, names, ports, windows, HM tables) → [`model::Module`].
//! 3. [`model`]: the frozen result the executive and the partition runtime only read.
//!
//! Every problem becomes a [`ConfigError`] with a file, a line and column, a message and a help
//! text; all problems of a stage are reported together ([`ConfigErrors`]). Syntax errors stop the
//! pipeline before stage 2, so cross-reference errors never cascade from a typo.
//!
//! ```
//! let xml = r#"<ARINC_653_Module ModuleName="demo">
//!   <Partition PartitionIdentifier="1" PartitionName="P1" EntryPoint="main"/>
//!   <Module_Schedule MajorFrameSeconds="0.02">
//!     <Partition_Schedule PartitionIdentifier="1" PeriodSeconds="0.02" PeriodDurationSeconds="0.01">
//!       <Window_Schedule WindowIdentifier="1" WindowStartSeconds="0" WindowDurationSeconds="0.01"/>
//!     </Partition_Schedule>
//!   </Module_Schedule>
//! </ARINC_653_Module>"#;
//! let module = partix_config::parse_str(xml, None).unwrap();
//! assert_eq!(module.partitions[0].name, "P1");
//! assert_eq!(module.schedules[0].windows[0].duration, std::time::Duration::from_millis(10));
//!
//! let err = partix_config::parse_str("<ARINC_653_Module>", None).unwrap_err();
//! assert!(err.to_string().starts_with("<input>:1:19: error: malformed XML"));
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod error;
#[doc(hidden)]
pub mod invariants;
pub mod model;
mod parse;
mod summary;
mod validate;
mod value;

use std::io::Read as _;
use std::path::Path;

pub use error::{ConfigError, ConfigErrors, MAX_REPORTED_ERRORS};
pub use parse::{
    socket_buffer_bytes, DELIVERIES, MAX_IDENTIFIER, MAX_NAME_LEN, MAX_NB_MESSAGES,
    MAX_PORTS_PER_KIND, MAX_QUEUING_MESSAGE_SIZE, MAX_SAMPLING_MESSAGE_SIZE, MAX_SOCKET_BUFFER,
    MAX_TWO_SIDED_MESSAGE_SIZE, MAX_UDP_MESSAGE_SIZE, PARTIX_NS, RECEIVE_MODES, TRANSPORTS,
};
pub use summary::{notes, summary};
pub use value::MAX_DURATION;

use model::{Location, Module};

/// Largest configuration file read, in bytes (a module configuration is a few kilobytes).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Read, parse and validate the module configuration in `path`.
///
/// Relative `partix:Executable` paths containing a `/` (or naming a `.c` file) are resolved
/// against the directory of `path`.
///
/// # Errors
/// Every problem found, located in the file; a file that cannot be read is one error located at
/// the file (line 0).
pub fn load(path: &Path) -> Result<Module, ConfigErrors> {
    let io_err = |message: String, help: &str| {
        ConfigErrors::single(ConfigError {
            file: Some(path.to_path_buf()),
            location: Location::default(),
            message,
            help: help.to_string(),
        })
    };
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(io_err(
                "is a directory, not a configuration file".into(),
                "give the path of the module's XML file",
            ))
        }
        Ok(m) if m.len() > MAX_FILE_BYTES => {
            return Err(io_err(
                format!(
                    "file is {} bytes; a module configuration is at most {MAX_FILE_BYTES}",
                    m.len()
                ),
                "check that this is the module configuration",
            ))
        }
        _ => {}
    }
    let read_err = |e: std::io::Error| {
        io_err(
            format!("cannot read the configuration: {e}"),
            "check the path and the file's permissions",
        )
    };
    // Bounded read: a character device such as /dev/zero reports length 0 but never ends.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(read_err)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(io_err(
            format!("the configuration is larger than {MAX_FILE_BYTES} bytes"),
            "check that this is the module configuration",
        ));
    }
    parse_bytes(&bytes, Some(path))
}

/// Parse and validate a module configuration held in `bytes` (what [`load`] read from a file):
/// text that is not UTF-8 is one error located at its first bad byte, else as [`parse_str`].
///
/// # Errors
/// As [`parse_str`], and the UTF-8 error.
pub fn parse_bytes(bytes: &[u8], source: Option<&Path>) -> Result<Module, ConfigErrors> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_str(text, source),
        Err(e) => {
            let pos = e.valid_up_to();
            let text = String::from_utf8_lossy(bytes);
            // Without the byte-order mark, as `parse_str` counts columns.
            let location = match text.strip_prefix('\u{feff}') {
                Some(rest) => parse::location_at(rest, pos.saturating_sub('\u{feff}'.len_utf8())),
                None => parse::location_at(&text, pos),
            };
            Err(ConfigErrors::single(ConfigError {
                file: source.map(Path::to_path_buf),
                location,
                message: "the file is not valid UTF-8".into(),
                help: "save the configuration as UTF-8".into(),
            }))
        }
    }
}

/// Parse and validate a module configuration held in `text`.
///
/// `source` is the file the text came from: it names the file in errors and is the base for
/// relative executable paths. `None` prints `<input>` in errors and keeps paths as written.
///
/// # Errors
/// Every problem found, each located (see the crate docs for which problems are reported
/// together).
pub fn parse_str(text: &str, source: Option<&Path>) -> Result<Module, ConfigErrors> {
    // A byte-order mark is no column for an editor: without it, columns on line 1 are right.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let opts = roxmltree::ParsingOptions {
        allow_dtd: false,
        // Bound the work on hostile input: a module configuration has a few thousand nodes (the
        // pre-scan refuses more, where they are).
        nodes_limit: parse::MAX_NODES,
    };
    if let Some((pos, refusal)) = parse::prescan(text) {
        return Err(ConfigErrors::single(parse::refusal_error(
            text, source, pos, refusal,
        )));
    }
    let doc = roxmltree::Document::parse_with_options(text, opts)
        .map_err(|e| ConfigErrors::single(parse::xml_error(text, source, &e)))?;
    let mut parser = parse::Parser::new(&doc, source);
    let raw = parser.module();
    if let Some(errs) = parser.errors.finish() {
        return Err(errs);
    }
    validate::validate(raw, source)
}

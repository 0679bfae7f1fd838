//! Located configuration errors.

use std::fmt;
use std::path::PathBuf;

use crate::model::Location;

/// One problem found in a module configuration: where it is, what is wrong, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file the problem is in (`None` when the text did not come from a file).
    pub file: Option<PathBuf>,
    /// Where in the file (1-based line and column); line 0 means "the file as a whole" (I/O errors).
    pub location: Location,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub help: String,
}

impl ConfigError {
    /// Return the file name as it is printed (`<input>` when there is no file).
    pub fn file_display(&self) -> String {
        match &self.file {
            Some(p) => p.display().to_string(),
            None => "<input>".to_string(),
        }
    }
}

impl fmt::Display for ConfigError {
    /// Render as `FILE:LINE:COL: error: MESSAGE` and `  help: WHAT TO DO` on the next line
    /// (`FILE: error: ...` without a line; `error: ...` without a file or a line: a module built
    /// in code, see [`crate::model::Module::error_at`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file_display();
        if self.location.line == 0 && self.file.is_none() {
            write!(f, "error: {}", self.message)?;
        } else if self.location.line == 0 {
            write!(f, "{file}: error: {}", self.message)?;
        } else {
            write!(
                f,
                "{file}:{}:{}: error: {}",
                self.location.line, self.location.col, self.message
            )?;
        }
        if !self.help.is_empty() {
            write!(f, "\n  help: {}", self.help)?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// Most errors kept and printed: the first ones in file order. The others are counted
/// ([`ConfigErrors::len`], [`ConfigErrors::omitted`]) and summed up in one line: a hostile or
/// corrupted file made a million errors, hundreds of megabytes of heap and of output (review 27).
pub const MAX_REPORTED_ERRORS: usize = 200;

/// A non-empty list of [`ConfigError`]s, in file order: the first [`MAX_REPORTED_ERRORS`], and
/// the number of the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    errors: Vec<ConfigError>,
    omitted: usize,
}

/// Sort `errors` into file order (stable: for one location, the order the checks found them),
/// drop repeated ones, and keep the first [`MAX_REPORTED_ERRORS`]; return how many were cut.
fn first_in_file_order(errors: &mut Vec<ConfigError>) -> usize {
    errors.sort_by_key(|e| (e.location.line, e.location.col));
    errors.dedup();
    let cut = errors.len().saturating_sub(MAX_REPORTED_ERRORS);
    errors.truncate(MAX_REPORTED_ERRORS);
    cut
}

/// The errors a stage collects: at most a few times [`MAX_REPORTED_ERRORS`] held at once (the
/// first in file order are kept at each compaction), whatever the number found.
#[derive(Debug, Default)]
pub(crate) struct ErrorSink {
    errors: Vec<ConfigError>,
    omitted: usize,
}

impl ErrorSink {
    /// Add one error.
    pub fn push(&mut self, e: ConfigError) {
        self.errors.push(e);
        if self.errors.len() >= 4 * MAX_REPORTED_ERRORS {
            self.omitted += first_in_file_order(&mut self.errors);
        }
    }

    /// The errors found, `None` when there are none.
    pub fn finish(self) -> Option<ConfigErrors> {
        ConfigErrors::with_omitted(self.errors, self.omitted)
    }
}

impl ConfigErrors {
    /// Build from a list; return `None` when the list is empty. Only the first
    /// [`MAX_REPORTED_ERRORS`] in file order are kept; the others are counted.
    pub fn new(errors: Vec<ConfigError>) -> Option<Self> {
        Self::with_omitted(errors, 0)
    }

    fn with_omitted(mut errors: Vec<ConfigError>, omitted: usize) -> Option<Self> {
        if errors.is_empty() {
            return None;
        }
        let omitted = omitted + first_in_file_order(&mut errors);
        Some(Self { errors, omitted })
    }

    /// Build from one error.
    pub fn single(error: ConfigError) -> Self {
        Self {
            errors: vec![error],
            omitted: 0,
        }
    }

    /// Return the number of errors found but not kept (after the first
    /// [`MAX_REPORTED_ERRORS`] in file order).
    pub fn omitted(&self) -> usize {
        self.omitted
    }

    /// Return the errors kept, in file order.
    pub fn errors(&self) -> &[ConfigError] {
        &self.errors
    }

    /// Return the first error (there always is one).
    pub fn first(&self) -> &ConfigError {
        &self.errors[0]
    }

    /// Return the number of errors found (at least 1), those not kept included.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.errors.len() + self.omitted
    }

    /// Return an iterator over the errors kept.
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.errors.iter()
    }

    /// Return the errors kept as a vector.
    pub fn into_vec(self) -> Vec<ConfigError> {
        self.errors
    }
}

impl fmt::Display for ConfigErrors {
    /// Render every error kept (see [`ConfigError`]'s `Display`), one after the other, then
    /// `... and N more errors (...)` when some were not kept.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        match self.omitted {
            0 => {}
            1 => write!(f, "\n... and 1 more error (fix the ones above first)")?,
            n => write!(f, "\n... and {n} more errors (fix the ones above first)")?,
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}

impl IntoIterator for ConfigErrors {
    type Item = ConfigError;
    type IntoIter = std::vec::IntoIter<ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.into_iter()
    }
}

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

/// A non-empty list of [`ConfigError`]s, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigErrors {
    errors: Vec<ConfigError>,
}

impl ConfigErrors {
    /// Build from a list; return `None` when the list is empty.
    pub fn new(mut errors: Vec<ConfigError>) -> Option<Self> {
        if errors.is_empty() {
            return None;
        }
        // Stable sort: file order, and for one location, the order the checks found them.
        errors.sort_by_key(|e| (e.location.line, e.location.col));
        errors.dedup();
        Some(Self { errors })
    }

    /// Build from one error.
    pub fn single(error: ConfigError) -> Self {
        Self {
            errors: vec![error],
        }
    }

    /// Return the errors, in file order.
    pub fn errors(&self) -> &[ConfigError] {
        &self.errors
    }

    /// Return the first error (there always is one).
    pub fn first(&self) -> &ConfigError {
        &self.errors[0]
    }

    /// Return the number of errors (at least 1).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// Return an iterator over the errors.
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.errors.iter()
    }

    /// Return the errors as a vector.
    pub fn into_vec(self) -> Vec<ConfigError> {
        self.errors
    }
}

impl fmt::Display for ConfigErrors {
    /// Render every error (see [`ConfigError`]'s `Display`), one after the other.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
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

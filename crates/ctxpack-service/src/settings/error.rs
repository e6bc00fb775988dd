//! Why a settings file cannot be used, typed: the file, where in it, what
//! is wrong.

use std::path::{Path, PathBuf};

/// An error naming the file and the key.
pub(super) fn at(path: &Path, key: &str, message: impl std::fmt::Display) -> SettingsError {
    SettingsError {
        path: path.to_owned(),
        place: Place::Key(key.to_owned()),
        message: message.to_string(),
    }
}

/// Why a settings file cannot be used: the file, where in it, and what is
/// wrong. It reads `FILE: KEY: MESSAGE`, `FILE:LINE:COLUMN: MESSAGE` or
/// `FILE: MESSAGE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsError {
    /// The file.
    pub path: PathBuf,
    /// Where in it.
    pub place: Place,
    /// What is wrong.
    pub message: String,
}

/// Where in a settings file something is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// At this key (`upstreams.retrieve.timeout-ms`).
    Key(String),
    /// At this line and column, from 1 (the file is not TOML).
    At {
        /// The line.
        line: usize,
        /// The column, in characters.
        column: usize,
    },
    /// The file as a whole (it cannot be read, a certificate it names
    /// does not load).
    File,
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        match &self.place {
            Place::Key(key) => write!(f, "{path}: {key}: {}", self.message),
            Place::At { line, column } => write!(f, "{path}:{line}:{column}: {}", self.message),
            Place::File => write!(f, "{path}: {}", self.message),
        }
    }
}

impl std::error::Error for SettingsError {}

impl From<SettingsError> for String {
    fn from(e: SettingsError) -> String {
        e.to_string()
    }
}

/// An error about the file at `path` as a whole.
pub(super) fn whole(path: &Path, message: impl std::fmt::Display) -> SettingsError {
    SettingsError {
        path: path.to_owned(),
        place: Place::File,
        message: message.to_string(),
    }
}

//! [`ConfigError`]: why a configuration was refused, naming the option and, for parse
//! errors, the file, line, column and a caret snippet.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why a configuration was refused. The message names the option (its full dotted
/// name, e.g. `downstream.doc_id`, or the environment variable) and says how to fix it;
/// [`fmt::Display`] prefixes the file and line when they are known.
#[derive(Debug)]
pub struct ConfigError(Box<ErrorInner>);

#[derive(Debug)]
pub(super) struct ErrorInner {
    pub(super) file: Option<PathBuf>,
    pub(super) location: Option<(usize, usize)>,
    pub(super) option: Option<String>,
    pub(super) message: String,
    pub(super) snippet: Option<String>,
    pub(super) source: Option<io::Error>,
}

impl From<ErrorInner> for ConfigError {
    fn from(inner: ErrorInner) -> ConfigError {
        ConfigError(Box::new(inner))
    }
}

impl ConfigError {
    /// An error about one option (a dotted name or an environment variable).
    pub fn invalid(option: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError::from(ErrorInner {
            file: None,
            location: None,
            option: Some(option.into()),
            message: message.into(),
            snippet: None,
            source: None,
        })
    }

    /// The option at fault (`server.port`, `mutators.addNote`, `RINDLE_TOKEN_KEYS`, …),
    /// when one is known.
    pub fn option(&self) -> Option<&str> {
        self.0.option.as_deref()
    }

    /// What is wrong and how to fix it (without the file and line prefix).
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The 1-based `(line, column)` in the file, for errors found while parsing.
    pub fn location(&self) -> Option<(usize, usize)> {
        self.0.location
    }

    /// The configuration file, for errors from [`Config::load`].
    ///
    /// [`Config::load`]: super::Config::load
    pub fn file(&self) -> Option<&Path> {
        self.0.file.as_deref()
    }

    pub(super) fn in_file(mut self, file: &Path) -> ConfigError {
        self.0.file = Some(file.to_path_buf());
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.0.file {
            write!(f, "{}:", file.display())?;
            if let Some((line, col)) = self.0.location {
                write!(f, "{line}:{col}:")?;
            }
            f.write_str(" ")?;
        } else if let Some((line, col)) = self.0.location {
            write!(f, "line {line}, column {col}: ")?;
        }
        f.write_str(&self.0.message)?;
        if let Some(snippet) = &self.0.snippet {
            write!(f, "\n{snippet}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_ref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

pub(super) fn invalid(option: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::invalid(option, message)
}

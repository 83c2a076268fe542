//! The host's typed errors. Each prints, through [`Display`](core::fmt::Display), the
//! exact text the host logs or a face reports; callers branch on the variant.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// A driver's own words become the error's catch-all variant (`From<String>`,
/// `From<&str>`).
macro_rules! from_driver_words {
    ($($ty:ident::$variant:ident),* $(,)?) => {$(
        impl From<String> for $ty {
            fn from(message: String) -> $ty {
                $ty::$variant(message)
            }
        }

        impl From<&str> for $ty {
            fn from(message: &str) -> $ty {
                $ty::$variant(String::from(message))
            }
        }
    )*};
}

from_driver_words!(
    MintError::Transport,
    JournalError::Io,
    DrainError::Unavailable,
    TablesError::Refused,
);

/// Why a [`HostConfig`](super::HostConfig) was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// `writes.ownedTables` is empty.
    NoOwnedTables,
    /// `writes.scopes` is not an array.
    ScopesNotArray,
    /// `writes.scopes` marks tables writable that `writes.ownedTables` does not own
    /// (the boot wire's scopes may only narrow the owned set).
    ScopesWiden {
        /// The tables, in the scopes' order.
        tables: Vec<String>,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NoOwnedTables => {
                f.write_str("writes.ownedTables must name at least one table")
            }
            ConfigError::ScopesNotArray => f.write_str("writes.scopes must be an array"),
            ConfigError::ScopesWiden { tables } => {
                let names: Vec<String> = tables.iter().map(|t| format!("`{t}`")).collect();
                write!(
                    f,
                    "writes.scopes marks {} writable, but the host's writes.ownedTables does \
                     not include {} — the boot-wire scopes may only ever narrow the host's \
                     owned set, never extend it",
                    names.join(", "),
                    if tables.len() == 1 { "it" } else { "them" }
                )
            }
        }
    }
}

impl core::error::Error for ConfigError {}

/// Why a JSON document crossing a language boundary (see [`json`](super::json)) was
/// refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonError {
    /// The text is not JSON: what it should have been (`config`, `input`, …) and the
    /// parser's message.
    Syntax {
        /// The document's kind.
        what: &'static str,
        /// The parser's message.
        message: String,
    },
    /// The JSON is well formed but a member is missing or of the wrong kind.
    Invalid(String),
    /// A journal record (`index` in its list) does not decode.
    Record {
        /// The record's position in the list.
        index: usize,
        /// Why it does not decode.
        error: super::journal_record::RecordError,
    },
}

impl From<String> for JsonError {
    fn from(message: String) -> JsonError {
        JsonError::Invalid(message)
    }
}

impl From<&str> for JsonError {
    fn from(message: &str) -> JsonError {
        JsonError::Invalid(String::from(message))
    }
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Syntax { what, message } => write!(f, "{what}: {message}"),
            JsonError::Invalid(m) => f.write_str(m),
            JsonError::Record { index, error } => write!(f, "journal record {index}: {error}"),
        }
    }
}

impl core::error::Error for JsonError {}

/// Why minting the upstream footprint lease failed (the host retries the mint).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MintError {
    /// `/materialize` answered a non-2xx status.
    Status {
        /// The status.
        status: u16,
        /// The reply body.
        body: String,
    },
    /// The reply was not JSON.
    InvalidJson(String),
    /// The reply carried no `leaseToken`.
    NoLeaseToken,
    /// The request did not complete (connect, I/O, timeout): the driver's words.
    Transport(String),
    /// The driver cannot make the request at all (e.g. a control URL it cannot use):
    /// its words. Trying again cannot help.
    Unusable(String),
}

impl MintError {
    /// Whether trying again may succeed: the daemon unreachable or timing out, or
    /// answering 408, 429 or a 5xx — as opposed to a refusal (another 4xx, a malformed
    /// answer) or a request the driver cannot make.
    pub fn is_transient(&self) -> bool {
        match self {
            MintError::Status { status, .. } => matches!(status, 408 | 429 | 500..=599),
            MintError::Transport(_) => true,
            MintError::InvalidJson(_) | MintError::NoLeaseToken | MintError::Unusable(_) => false,
        }
    }
}

impl fmt::Display for MintError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MintError::Status { status, body } => {
                write!(f, "upstream /materialize failed: {status} {body}")
            }
            MintError::InvalidJson(e) => {
                write!(f, "upstream /materialize returned invalid JSON: {e}")
            }
            MintError::NoLeaseToken => f.write_str("upstream /materialize returned no leaseToken"),
            MintError::Transport(m) | MintError::Unusable(m) => f.write_str(m),
        }
    }
}

impl core::error::Error for MintError {}

/// A journal read or write the driver could not carry out (nothing it claims is
/// durable).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalError {
    /// The storage failed: the driver's words.
    Io(String),
    /// The journal was read but its contents could not be decoded.
    Unreadable(String),
}

impl fmt::Display for JournalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalError::Io(m) | JournalError::Unreadable(m) => f.write_str(m),
        }
    }
}

impl core::error::Error for JournalError {}

/// Why a drain did not finish.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DrainError {
    /// The room still had work after the drain's budget of flushes.
    NotQuiescent {
        /// The document.
        doc: String,
        /// The flushes tried.
        flushes: u32,
        /// Dirty keys left.
        dirty: usize,
        /// Pending mutations left.
        pending: usize,
    },
    /// The room could not be asked (its task is gone): the driver's words.
    Unavailable(String),
    /// The room stopped (moved to another placement, shut down or aborted) with work it
    /// will never flush from here; its journal keeps it for the doc's next boot.
    Stopped {
        /// The document.
        doc: String,
        /// Whether it stopped because another placement owns the doc now.
        moved: bool,
        /// Dirty keys left.
        dirty: usize,
        /// Pending mutations left.
        pending: usize,
    },
}

impl fmt::Display for DrainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DrainError::NotQuiescent {
                doc,
                flushes,
                dirty,
                pending,
            } => write!(
                f,
                "drain: room {doc} failed to quiesce after {flushes} flushes \
                 (dirty={dirty}, pending={pending})"
            ),
            DrainError::Unavailable(m) => f.write_str(m),
            DrainError::Stopped {
                doc,
                moved,
                dirty,
                pending,
            } => write!(
                f,
                "drain: room {doc} {} with work it will not flush (dirty={dirty}, \
                 pending={pending}); its journal keeps it for the doc's next boot",
                if *moved {
                    "moved to another placement"
                } else {
                    "stopped"
                }
            ),
        }
    }
}

impl core::error::Error for DrainError {}

/// Why a driver cannot serve the room's tables
/// ([`Driver::tables_known`](super::Driver::tables_known)): its mutators do not fit
/// them.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TablesError {
    /// The driver's mutators refused the tables: its words.
    Refused(String),
}

impl fmt::Display for TablesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TablesError::Refused(m) => f.write_str(m),
        }
    }
}

impl core::error::Error for TablesError {}

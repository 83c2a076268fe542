//! Why a room, a fleet or a drain failed: [`StartError`], [`JournalOpenError`],
//! [`DrainError`]. Their texts are the server's log lines and the CLI's messages.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::authority::AuthorityConfigError;
use crate::config::ConfigError;

/// Which listener could not be bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Listener {
    /// The client listener (`server.bind`, `server.port`).
    Downstream,
    /// The control plane (`control.bind`, `control.port`).
    Control,
    /// The demo fleet's embedded room-boot endpoint.
    DemoBoot,
}

/// Why a room (or a fleet) could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum StartError {
    /// An option does not fit (a JSON option, a mutator against the room's tables).
    Config(ConfigError),
    /// `[authority]` cannot make a client.
    Authority(AuthorityConfigError),
    /// The flush endpoints a room-boot answer names cannot make a client.
    FlushEndpoints(AuthorityConfigError),
    /// The demo data file is unreadable or malformed.
    Demo(DemoError),
    /// The journal could not be opened.
    Journal(JournalOpenError),
    /// A listener could not be bound.
    Listen {
        /// Which one.
        listener: Listener,
        /// The address it was to bind (`host:port`).
        addr: String,
        /// Why.
        source: io::Error,
    },
    /// A bound listener reports no local address.
    NoAddress {
        /// Which one.
        listener: Listener,
        /// Why.
        source: io::Error,
    },
    /// The demo fleet could not empty its data directory.
    DemoDataDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A fleet room has no upstream endpoint: room-boot named none and
    /// `fleet.upstream_ws_url` is not set.
    NoUpstreamEndpoint,
    /// The demo fleet's generated configuration was refused.
    DemoConfig(ConfigError),
    /// The demo fleet could not mint its demo tokens.
    DemoToken(rindle_room_core::Error),
    /// No source of rows: neither `[upstream]` nor `[demo]`, and none given to the
    /// builder.
    NoUpstream,
    /// A fleet was started from a configuration without `[fleet]`.
    NoFleet,
    /// The host refused to start: its settings, the journal's records, the epoch claim
    /// or the first lease. The text is the host's.
    Host(String),
    /// The room task ended before it reported whether it started.
    Stopped,
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::Config(e) => write!(f, "{e}"),
            StartError::Authority(e) => write!(f, "{e}"),
            StartError::FlushEndpoints(e) => {
                write!(f, "room-boot's flush endpoints are unusable: {e}")
            }
            StartError::Demo(e) => write!(f, "{e}"),
            StartError::Journal(e) => write!(f, "{e}"),
            StartError::Listen {
                listener: Listener::Downstream,
                addr,
                source,
            } => write!(
                f,
                "cannot listen on {addr}: {source} (choose another `server.port`, or 0 for an \
                 ephemeral one)"
            ),
            StartError::Listen {
                listener: Listener::Control,
                addr,
                source,
            } => write!(
                f,
                "cannot listen on {addr} for the control plane: {source} (choose another \
                 `control.port` or `control.bind`, or port 0)"
            ),
            StartError::Listen {
                listener: Listener::DemoBoot,
                source,
                ..
            } => write!(f, "the demo boot endpoint cannot listen: {source}"),
            StartError::NoAddress {
                listener: Listener::DemoBoot,
                source,
            } => write!(f, "the demo boot endpoint has no address: {source}"),
            StartError::NoAddress { source, .. } => {
                write!(f, "the listener has no address: {source}")
            }
            StartError::DemoDataDir { path, source } => write!(
                f,
                "cannot empty the demo data directory {}: {source}",
                path.display()
            ),
            StartError::NoUpstream => f.write_str(
                "no upstream: set [upstream] (rindled) or [demo] (a JSON file) in the config, \
                 or pass one with RoomServerBuilder::upstream",
            ),
            StartError::NoUpstreamEndpoint => f.write_str(
                "room-boot named no upstreamWsEndpoint and `fleet.upstream_ws_url` is not set: \
                 set it to rindled's websocket endpoint",
            ),
            StartError::DemoConfig(e) => write!(f, "the demo fleet configuration is invalid: {e}"),
            StartError::DemoToken(e) => write!(f, "{e}"),
            StartError::NoFleet => f.write_str("the configuration has no [fleet] section"),
            StartError::Host(reason) => f.write_str(reason),
            StartError::Stopped => f.write_str("the room stopped during start-up"),
        }
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StartError::Config(e) | StartError::DemoConfig(e) => Some(e),
            StartError::Authority(e) | StartError::FlushEndpoints(e) => Some(e),
            StartError::Demo(e) => Some(e),
            StartError::Journal(e) => Some(e),
            StartError::Listen { source, .. }
            | StartError::NoAddress { source, .. }
            | StartError::DemoDataDir { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<ConfigError> for StartError {
    fn from(e: ConfigError) -> StartError {
        StartError::Config(e)
    }
}

impl From<DemoError> for StartError {
    fn from(e: DemoError) -> StartError {
        StartError::Demo(e)
    }
}

impl From<JournalOpenError> for StartError {
    fn from(e: JournalOpenError) -> StartError {
        StartError::Journal(e)
    }
}

/// Why a file journal could not be opened.
#[derive(Debug)]
#[non_exhaustive]
pub enum JournalOpenError {
    /// The journal does not exist yet and an ancestor of its path is not a directory.
    NotADirectory {
        /// The journal's path.
        path: PathBuf,
        /// The ancestor that is not a directory.
        ancestor: PathBuf,
    },
    /// Opening or reading the file failed. `InvalidData`: a corrupt or unreadable record
    /// (the message says what to do); otherwise the path or its permissions.
    Open {
        /// The journal's path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

impl fmt::Display for JournalOpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JournalOpenError::NotADirectory { path, ancestor } => write!(
                f,
                "cannot create the journal {}: {} is not a directory (check \
                 `writes.journal.path`)",
                path.display(),
                ancestor.display()
            ),
            JournalOpenError::Open { source, .. }
                if source.kind() == io::ErrorKind::InvalidData =>
            {
                write!(f, "cannot open the journal: {source}")
            }
            JournalOpenError::Open { path, source } => write!(
                f,
                "cannot open the journal {}: {source} (check `writes.journal.path` or \
                 `fleet.data_dir` and the directory's permissions)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for JournalOpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JournalOpenError::Open { source, .. } => Some(source),
            JournalOpenError::NotADirectory { .. } => None,
        }
    }
}

/// Why a drain (flush until nothing is dirty or pending) did not finish.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DrainError {
    /// The host could not drain (a flush failed or was refused). The text is the host's.
    Refused(String),
    /// The room stopped before it answered.
    Closed,
}

impl fmt::Display for DrainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DrainError::Refused(reason) => f.write_str(reason),
            DrainError::Closed => f.write_str("the room is closed"),
        }
    }
}

impl std::error::Error for DrainError {}

/// Why demo data was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum DemoError {
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The JSON is not demo data: not JSON, or a table that is not
    /// `{name, columns, primaryKey, rows}`.
    Malformed {
        /// What is wrong.
        message: String,
        /// The file, when the data came from one.
        path: Option<PathBuf>,
    },
}

impl fmt::Display for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DemoError::Read { path, source } => {
                write!(f, "demo data: cannot read {}: {source}", path.display())
            }
            DemoError::Malformed {
                message,
                path: None,
            } => write!(f, "demo data: {message}"),
            DemoError::Malformed {
                message,
                path: Some(path),
            } => write!(f, "demo data: {message} ({})", path.display()),
        }
    }
}

impl std::error::Error for DemoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DemoError::Read { source, .. } => Some(source),
            DemoError::Malformed { .. } => None,
        }
    }
}

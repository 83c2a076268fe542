//! The server's configuration: `rindle-room --config room.toml`.
//!
//! The shape mirrors seed 000's `RoomShellOptions` (`UpstreamOptions`,
//! `DownstreamOptions`, `WritesOptions`) in snake_case. Field set pinned by the lead;
//! loading, validation, defaults, environment overrides and the documentation of every
//! option live here and in `docs/config.md`.
//!
//! Loading runs in this order ([`Config::load`]): read the file; parse it (unknown
//! options, missing required options and wrong types are refused, with the line, the
//! option's full name and a fix); apply the environment overrides of the secrets
//! ([`ENV_UPSTREAM_AUTH_TOKEN`], [`ENV_TOKEN_KEYS`], [`ENV_CONTROL_AUTH_TOKEN`],
//! [`ENV_AUTHORITY_HEADERS`]); resolve relative paths against the file's directory;
//! validate ([`Config::validate`]). Checks that need the room's tables, which arrive with
//! the upstream hello, run later: [`Config::check_schema`] / [`Config::registry`].

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use rindle_room_core::TableSchema;
use serde::Deserialize;
use serde_json::Value as Json;

use crate::mutators::declarative::{self, MutatorSpec};

mod fleet;
use crate::mutators::{crud, Registry};
pub use fleet::{AckMode, FleetConfig, JournalSync, ENV_SHELL_SECRET};

/// The whole configuration file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The downstream listener and logging.
    #[serde(default)]
    pub server: ServerConfig,
    /// Where the room's rows come from: `rindled` (exactly one of `upstream` / `demo`).
    pub upstream: Option<UpstreamConfig>,
    /// Where the room's rows come from: a local JSON file (no `rindled` needed).
    pub demo: Option<DemoConfig>,
    /// How clients are authorized and served.
    pub downstream: DownstreamConfig,
    /// The private control plane (`/stats`, `/revoke`, `/drain`, `/metrics`, the probes).
    pub control: Option<ControlConfig>,
    /// The write plane; absent = read-only.
    pub writes: Option<WritesConfig>,
    /// The write authority (the API server); absent = journal-only writes.
    pub authority: Option<AuthorityConfig>,
    /// Declarative mutators by name.
    #[serde(default)]
    pub mutators: BTreeMap<String, MutatorSpec>,
    /// Fleet mode: many rooms, booted on demand through room-boot (instead of one
    /// `downstream.doc_id` with `[upstream]` / `[demo]` and `[authority]`).
    pub fleet: Option<FleetConfig>,
}

/// The downstream listener.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Bind address (default `127.0.0.1`).
    pub bind: String,
    /// Port (default 0 = ephemeral; the bound port is logged).
    pub port: u16,
    /// Log format on stderr: `text` (default) or `json`.
    pub log_format: LogFormat,
    /// The largest websocket message (and frame) a client may send, in bytes (default
    /// 1 MiB). A larger one, or an unfinished fragmented one that grows past it, closes
    /// the socket with 1009.
    pub max_frame_bytes: usize,
    /// Per connection, the most bytes of received frames that may wait for the room at
    /// once (default 4 MiB, at least `max_frame_bytes`). At the cap the connection stops
    /// reading its socket until the room catches up (TCP pushes back).
    pub max_inbound_bytes: usize,
    /// The most bytes queued for all downstream sockets of the process together that
    /// their writers have not sent (default 256 MiB; at least 1 MiB). Past it the
    /// sockets holding the most are cut (1008), largest first.
    pub max_unsent_bytes: usize,
    /// The most downstream sockets (upgraded or still in the handshake) held at once.
    /// Past it, upgrades are answered with HTTP 503. Default: the process's open-file
    /// limit minus [`RESERVED_FDS`].
    pub max_connections: Option<usize>,
    /// How long a new TCP connection may take to complete the websocket upgrade
    /// (default 5000 ms); then it is dropped.
    pub handshake_timeout_ms: u64,
    /// How long start-up keeps retrying `rindled` (the first lease) and the authority
    /// (the epoch claim) while they are unreachable, with a backoff of 100 ms doubling to
    /// 5 s (default 60000 ms; 0: give up at the first failure).
    pub startup_timeout_ms: u64,
}

/// File descriptors the default `server.max_connections` leaves for everything else:
/// the listeners, the journal, the upstream link, authority and control-plane calls,
/// and sockets being refused with 503.
pub const RESERVED_FDS: usize = 128;

impl ServerConfig {
    /// `max_connections`, or its default derived from the open-file limit
    /// (`nofile` − [`RESERVED_FDS`], at least 16).
    pub fn max_connections_or_default(&self, nofile: Option<u64>) -> usize {
        self.max_connections.unwrap_or_else(|| match nofile {
            Some(n) => (usize::try_from(n).unwrap_or(usize::MAX))
                .saturating_sub(RESERVED_FDS)
                .max(16),
            None => 1024 - RESERVED_FDS,
        })
    }
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            bind: String::from("127.0.0.1"),
            port: 0,
            log_format: LogFormat::Text,
            max_frame_bytes: defaults::max_frame_bytes(),
            max_inbound_bytes: defaults::max_inbound_bytes(),
            max_unsent_bytes: rindle_room_core::host::DEFAULT_MAX_UNSENT_BYTES,
            max_connections: None,
            handshake_timeout_ms: defaults::handshake_timeout_ms(),
            startup_timeout_ms: defaults::startup_timeout_ms(),
        }
    }
}

/// Log line format.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// `ts level msg key=value …`
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// `UpstreamOptions`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// rindled's subscription plane, e.g. `ws://127.0.0.1:7601`.
    pub ws_url: String,
    /// rindled's control plane, e.g. `http://127.0.0.1:7600` (lease minting).
    pub control_url: String,
    /// Bearer token for the control plane (env `RINDLE_UPSTREAM_AUTH_TOKEN`).
    pub auth_token: Option<String>,
    /// The document footprint: a wire AST, as JSON text or an inline table.
    pub footprint_ast: toml::Value,
    /// Lease TTL passed to `/materialize`.
    pub lease_ttl_ms: Option<u64>,
    /// The `init` clientID upstream (default `room-shell-<bootId>`).
    pub client_id: Option<String>,
}

/// The embedded upstream: rows from a local JSON file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DemoConfig {
    /// A JSON file: `{"tables": [{"name", "columns", "primaryKey", "rows": [...]}, ...]}`.
    pub data: PathBuf,
}

/// `DownstreamOptions`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DownstreamConfig {
    /// This room's document id (single-room mode; left out in fleet mode, where the URL
    /// names the doc).
    #[serde(default)]
    pub doc_id: String,
    /// Token key ring `kid → secret` (env `RINDLE_TOKEN_KEYS` as `kid=secret,kid2=secret2`).
    #[serde(default)]
    pub token_keys: BTreeMap<String, String>,
    /// Idle grace before an unsubscribed query is reclaimed (default 30000).
    #[serde(default = "defaults::idle_ttl_ms")]
    pub idle_ttl_ms: u64,
    /// Lease-expiry / idle-sweep cadence (default 1000).
    #[serde(default = "defaults::sweep_interval_ms")]
    pub sweep_interval_ms: u64,
    /// How long a revocation refuses pre-revocation tokens (default 1800000).
    #[serde(default = "defaults::revocation_window_ms")]
    pub revocation_window_ms: u64,
    /// Per-socket send budget in bytes (default 4 MiB): the most bytes of live frames
    /// a socket may leave unread (subscribe snapshots are outside it).
    #[serde(default = "defaults::send_budget_bytes")]
    pub send_budget_bytes: usize,
    /// How long a connection may stay without a first `init` or `subscribe` (default
    /// 30000 ms); then it is closed with 1008.
    #[serde(default = "defaults::first_frame_timeout_ms")]
    pub first_frame_timeout_ms: u64,
    /// The most subscriptions (lmid subscriptions included, held ones too) one
    /// connection may hold (default 1000). Past it: an error frame, then close 1008.
    #[serde(default = "defaults::max_subscriptions_per_conn")]
    pub max_subscriptions_per_conn: usize,
    /// The largest subscribe snapshot (its `nbatch` frame) the room sends, in bytes
    /// (default 64 MiB); a larger one is a `queryError`. Also the most snapshot bytes
    /// one socket may leave unread.
    #[serde(default = "defaults::max_snapshot_bytes")]
    pub max_snapshot_bytes: usize,
    /// The most queries the room keeps materialized at once, idle ones included
    /// (default 10000). At the cap, idle queries are reclaimed oldest first; when none
    /// is idle, a subscribe that needs a new one is a `queryError`.
    #[serde(default = "defaults::max_materializations")]
    pub max_materializations: usize,
}

/// The control plane.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlConfig {
    /// Bearer token (env `RINDLE_CONTROL_AUTH_TOKEN`). May be left out of the file when
    /// the environment provides it; empty after the overrides is an error.
    #[serde(default)]
    pub auth_token: String,
    /// Port (default 0 = ephemeral).
    #[serde(default)]
    pub port: u16,
    /// Bind address (default `127.0.0.1`: the control plane is private; bind another
    /// address only behind a firewall — every route but the probes needs the token).
    #[serde(default = "defaults::control_bind")]
    pub bind: String,
}

/// `WritesOptions` (minus the mutators, which are top-level `[mutators.*]`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WritesConfig {
    /// The tables mutators may write.
    pub owned_tables: Vec<String>,
    /// Scope specs (JSON text or an array of inline tables): arms the v2 commit gate.
    pub scopes: Option<toml::Value>,
    /// The journal.
    #[serde(default)]
    pub journal: JournalConfig,
    /// Group-commit window (default 5 ms).
    #[serde(default = "defaults::group_commit_ms")]
    pub group_commit_ms: u64,
    /// Flush debounce (default 250 ms).
    #[serde(default = "defaults::flush_debounce_ms")]
    pub flush_debounce_ms: u64,
    /// Flush at once past this many dirty keys (default 512).
    #[serde(default = "defaults::flush_dirty_max")]
    pub flush_dirty_max: usize,
    /// Generate `<table>.insert|update|upsert|delete` mutators for every owned table.
    #[serde(default)]
    pub crud: bool,
}

/// Where the journal lives.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "lowercase")]
pub enum JournalConfig {
    /// A durable file journal at `path`.
    File {
        /// The journal file.
        path: PathBuf,
    },
    /// In memory: survives nothing beyond the process (tests).
    #[default]
    Memory,
}

/// The write authority's endpoints (seed 000 `HttpAuthorityOptions`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorityConfig {
    /// `…/api/rindle/apply-row-change-txn`.
    pub apply_url: String,
    /// `…/api/rindle/claim-room-epoch`.
    pub claim_url: String,
    /// `…/api/rindle/room-lmids`.
    pub lmids_url: String,
    /// Extra headers on every call (the flush credential; env
    /// `RINDLE_AUTHORITY_HEADERS` as `name=value,…`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

/// Defaults, shared by serde and the docs.
pub mod defaults {
    /// `127.0.0.1`.
    pub fn control_bind() -> String {
        String::from("127.0.0.1")
    }
    /// 30 s.
    pub fn idle_ttl_ms() -> u64 {
        30_000
    }
    /// 1 s.
    pub fn sweep_interval_ms() -> u64 {
        1_000
    }
    /// 30 min.
    pub fn revocation_window_ms() -> u64 {
        30 * 60_000
    }
    /// 4 MiB.
    pub fn send_budget_bytes() -> usize {
        4 * 1024 * 1024
    }
    /// 1 MiB.
    pub fn max_frame_bytes() -> usize {
        1024 * 1024
    }
    /// 4 MiB.
    pub fn max_inbound_bytes() -> usize {
        4 * 1024 * 1024
    }
    /// 5 s.
    pub fn handshake_timeout_ms() -> u64 {
        5_000
    }
    /// 60 s.
    pub fn startup_timeout_ms() -> u64 {
        60_000
    }
    /// 30 s.
    pub fn first_frame_timeout_ms() -> u64 {
        30_000
    }
    /// 1000 subscriptions.
    pub fn max_subscriptions_per_conn() -> usize {
        1_000
    }
    /// 64 MiB.
    pub fn max_snapshot_bytes() -> usize {
        64 * 1024 * 1024
    }
    /// 10000 queries.
    pub fn max_materializations() -> usize {
        10_000
    }
    /// 5 ms.
    pub fn group_commit_ms() -> u64 {
        5
    }
    /// 250 ms.
    pub fn flush_debounce_ms() -> u64 {
        250
    }
    /// 512 keys.
    pub fn flush_dirty_max() -> usize {
        512
    }
}

/// Env: overrides `upstream.auth_token`.
pub const ENV_UPSTREAM_AUTH_TOKEN: &str = "RINDLE_UPSTREAM_AUTH_TOKEN";
/// Env: merged into `downstream.token_keys`, as `kid=secret,kid2=secret2`.
pub const ENV_TOKEN_KEYS: &str = "RINDLE_TOKEN_KEYS";
/// Env: overrides `control.auth_token`.
pub const ENV_CONTROL_AUTH_TOKEN: &str = "RINDLE_CONTROL_AUTH_TOKEN";
/// Env: merged into `authority.headers`, as `name=value,name2=value2`.
pub const ENV_AUTHORITY_HEADERS: &str = "RINDLE_AUTHORITY_HEADERS";

/// Why a configuration was refused. The message names the option (its full dotted
/// name, e.g. `downstream.doc_id`, or the environment variable) and says how to fix it;
/// [`fmt::Display`] prefixes the file and line when they are known.
#[derive(Debug)]
pub struct ConfigError(Box<ErrorInner>);

#[derive(Debug)]
struct ErrorInner {
    file: Option<PathBuf>,
    location: Option<(usize, usize)>,
    option: Option<String>,
    message: String,
    snippet: Option<String>,
    source: Option<io::Error>,
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
    pub fn file(&self) -> Option<&Path> {
        self.0.file.as_deref()
    }

    fn in_file(mut self, file: &Path) -> ConfigError {
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

fn invalid(option: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::invalid(option, message)
}

impl Config {
    /// Reads, parses, overrides from the process environment, resolves relative paths
    /// (`demo.data`, `writes.journal.path`) against the file's directory, and validates.
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ErrorInner {
                file: Some(path.to_path_buf()),
                location: None,
                option: None,
                message: format!(
                    "cannot read the configuration file: {e} (pass an existing TOML file with \
                 --config)"
                ),
                snippet: None,
                source: Some(e),
            })
            .map_err(ConfigError::from)?;
        let mut config = Config::parse(&text).map_err(|e| e.in_file(path))?;
        config
            .apply_env_with(|name| std::env::var(name).ok())
            .map_err(|e| e.in_file(path))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            config.resolve_paths(dir);
        }
        config.validate().map_err(|e| e.in_file(path))?;
        Ok(config)
    }

    /// Parses TOML text, overrides from the process environment and validates (relative
    /// paths stay as written).
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml_str_with_env(text, |name| std::env::var(name).ok())
    }

    /// [`Config::from_toml_str`] with the environment given as a lookup function (tests,
    /// hosts with their own secret store).
    pub fn from_toml_str_with_env(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let mut config = Config::parse(text)?;
        config.apply_env_with(env)?;
        config.validate()?;
        Ok(config)
    }

    /// Parses TOML text into a configuration: the shape only (unknown options, missing
    /// required options, wrong types, malformed mutator steps). No environment
    /// overrides, no validation.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| syntax_error(text, &e))?;
        check_raw(text)?;
        Ok(config)
    }

    /// Applies the environment overrides through `env` (a variable lookup). A variable
    /// that is unset or empty changes nothing. Token strings replace the file's value;
    /// the key ring and the authority headers are merged, the variable winning for a
    /// name in both. Overrides of a section the file does not have (`[upstream]`,
    /// `[control]`, `[authority]`) are ignored: the environment supplies secrets, it
    /// does not switch features on.
    pub fn apply_env_with(
        &mut self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<(), ConfigError> {
        let get = |name: &str| env(name).filter(|v| !v.is_empty());
        if let (Some(upstream), Some(token)) =
            (self.upstream.as_mut(), get(ENV_UPSTREAM_AUTH_TOKEN))
        {
            upstream.auth_token = Some(token);
        }
        if let Some(ring) = get(ENV_TOKEN_KEYS) {
            for (kid, secret) in parse_pairs(ENV_TOKEN_KEYS, &ring, "kid=secret,kid2=secret2")? {
                self.downstream.token_keys.insert(kid, secret);
            }
        }
        if let (Some(fleet), Some(secret)) = (self.fleet.as_mut(), get(ENV_SHELL_SECRET)) {
            fleet.shell_secret = secret;
        }
        if let (Some(control), Some(token)) = (self.control.as_mut(), get(ENV_CONTROL_AUTH_TOKEN)) {
            control.auth_token = token;
        }
        if let (Some(authority), Some(headers)) =
            (self.authority.as_mut(), get(ENV_AUTHORITY_HEADERS))
        {
            for (name, value) in parse_pairs(ENV_AUTHORITY_HEADERS, &headers, "name=value,…")? {
                authority.headers.insert(name, value);
            }
        }
        Ok(())
    }

    /// Resolves relative `demo.data`, `writes.journal.path` and `fleet.data_dir`
    /// against `dir`.
    pub fn resolve_paths(&mut self, dir: &Path) {
        if let Some(data_dir) = self.fleet.as_mut().and_then(|f| f.data_dir.as_mut()) {
            if data_dir.is_relative() {
                *data_dir = dir.join(&*data_dir);
            }
        }
        if let Some(demo) = self.demo.as_mut() {
            if demo.data.is_relative() {
                demo.data = dir.join(&demo.data);
            }
        }
        if let Some(WritesConfig {
            journal: JournalConfig::File { path },
            ..
        }) = self.writes.as_mut()
        {
            if path.is_relative() {
                *path = dir.join(&*path);
            }
        }
    }

    /// Checks every rule that needs no room schema; the first violation is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_server()?;
        if let Some(fleet) = &self.fleet {
            self.validate_fleet(fleet)?;
        } else {
            self.validate_sources()?;
        }
        self.downstream.validate(self.fleet.is_some())?;
        if let Some(control) = &self.control {
            if control.auth_token.is_empty() {
                return Err(invalid(
                    "control.auth_token",
                    format!(
                        "`control.auth_token` is empty: set it under [control] or in \
                         {ENV_CONTROL_AUTH_TOKEN} (or remove [control] to run without a \
                         control plane)"
                    ),
                ));
            }
            if control.bind.is_empty() || control.bind.chars().any(char::is_whitespace) {
                return Err(invalid(
                    "control.bind",
                    format!(
                        "`control.bind` = {:?} is not an address: use an IP address such as \
                         \"127.0.0.1\" (the default) or \"0.0.0.0\"",
                        control.bind
                    ),
                ));
            }
            if control.port != 0 && control.port == self.server.port {
                return Err(invalid(
                    "control.port",
                    format!(
                        "`control.port` = {} is also `server.port`: give the control plane \
                         its own port (or 0 for an ephemeral one)",
                        control.port
                    ),
                ));
            }
        }
        if let Some(writes) = &self.writes {
            writes.validate()?;
        }
        if let Some(authority) = &self.authority {
            if self.writes.is_none() {
                return Err(invalid(
                    "authority",
                    "[authority] is set but [writes] is not: a read-only room has nothing to \
                     flush; add [writes] or remove [authority]",
                ));
            }
            crate::authority::HttpAuthority::new(authority).map_err(|e| {
                let option = e.split(':').next().unwrap_or("authority").to_string();
                invalid(option, e)
            })?;
        }
        self.validate_mutators()
    }

    /// Single-room mode: exactly one source of rows.
    fn validate_sources(&self) -> Result<(), ConfigError> {
        match (&self.upstream, &self.demo) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "upstream",
                    "both [upstream] and [demo] are set: a room has one source of rows; keep \
                     [upstream] to follow rindled, or [demo] to serve a local JSON file",
                ))
            }
            (None, None) => {
                return Err(invalid(
                    "upstream",
                    "neither [upstream] nor [demo] is set: add [upstream] (ws_url, \
                     control_url, footprint_ast) to follow rindled, or [demo] (data = \
                     \"rows.json\") to serve a local JSON file",
                ))
            }
            (Some(upstream), None) => upstream.validate()?,
            (None, Some(demo)) => {
                if demo.data.as_os_str().is_empty() {
                    return Err(invalid(
                        "demo.data",
                        "`demo.data` is empty: set it to the JSON file holding the tables",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Fleet mode: the API server hands each room its doc, lease and flush endpoints.
    fn validate_fleet(&self, fleet: &FleetConfig) -> Result<(), ConfigError> {
        fleet.validate()?;
        let single = [
            ("upstream", self.upstream.is_some(), "[upstream]"),
            ("demo", self.demo.is_some(), "[demo]"),
            ("authority", self.authority.is_some(), "[authority]"),
            (
                "downstream.doc_id",
                !self.downstream.doc_id.is_empty(),
                "`downstream.doc_id`",
            ),
        ];
        if let Some((option, _, name)) = single.iter().find(|(_, set, _)| *set) {
            return Err(invalid(
                *option,
                format!(
                    "{name} is set together with [fleet]: in fleet mode every room's doc, \
                     upstream lease and flush endpoints come from the API server's room-boot; \
                     remove {name} (or [fleet] to serve one room)"
                ),
            ));
        }
        if let Some(WritesConfig {
            journal: JournalConfig::File { .. },
            ..
        }) = &self.writes
        {
            return Err(invalid(
                "writes.journal",
                "`writes.journal` names a file together with [fleet]: each room gets its own \
                 journal under `fleet.data_dir`; remove [writes.journal] and set \
                 `fleet.data_dir`",
            ));
        }
        Ok(())
    }

    fn validate_server(&self) -> Result<(), ConfigError> {
        let bind = &self.server.bind;
        if bind.is_empty() || bind.chars().any(char::is_whitespace) {
            return Err(invalid(
                "server.bind",
                format!(
                    "`server.bind` = {bind:?} is not an address: use an IP address such as \
                     \"127.0.0.1\" or \"0.0.0.0\", or a host name"
                ),
            ));
        }
        let server = &self.server;
        if server.max_frame_bytes < 1024 {
            return Err(invalid(
                "server.max_frame_bytes",
                "`server.max_frame_bytes` must be at least 1024 (default 1048576 = 1 MiB): a \
                 subscribe carrying a lease token alone takes hundreds of bytes",
            ));
        }
        if server.max_inbound_bytes < server.max_frame_bytes {
            return Err(invalid(
                "server.max_inbound_bytes",
                format!(
                    "`server.max_inbound_bytes` ({}) must be at least `server.max_frame_bytes` \
                     ({}): one whole frame has to fit (default 4194304 = 4 MiB)",
                    server.max_inbound_bytes, server.max_frame_bytes
                ),
            ));
        }
        if server.max_unsent_bytes < 1024 * 1024 {
            return Err(invalid(
                "server.max_unsent_bytes",
                format!(
                    "`server.max_unsent_bytes` ({}) must be at least 1048576 (1 MiB; default \
                     268435456 = 256 MiB): it bounds every socket's unsent frames together",
                    server.max_unsent_bytes
                ),
            ));
        }
        if server.max_connections == Some(0) {
            return Err(invalid(
                "server.max_connections",
                "`server.max_connections` must be at least 1; leave it out for the default \
                 derived from the open-file limit",
            ));
        }
        if server.handshake_timeout_ms == 0 {
            return Err(invalid(
                "server.handshake_timeout_ms",
                "`server.handshake_timeout_ms` must be at least 1 (default 5000)",
            ));
        }
        Ok(())
    }

    fn validate_mutators(&self) -> Result<(), ConfigError> {
        if self.mutators.is_empty() {
            return Ok(());
        }
        let Some(writes) = &self.writes else {
            let name = self.mutators.keys().next().map_or("", String::as_str);
            return Err(invalid(
                format!("mutators.{name}"),
                "[mutators.*] is set but [writes] is not: mutators write rows, so add \
                 [writes] with the `owned_tables` they may write",
            ));
        };
        for (name, spec) in &self.mutators {
            let option = format!("mutators.{name}");
            declarative::compile(name, spec)
                .map_err(|e| invalid(&option, format!("{option}: {e}")))?;
            for table in spec.written_tables() {
                if !writes.owned_tables.iter().any(|t| t == table) {
                    return Err(invalid(
                        &option,
                        format!(
                            "{option}: writes table {table:?}, which is not in \
                             `writes.owned_tables`; add it there (mutators write only owned \
                             tables)"
                        ),
                    ));
                }
            }
            if writes.crud {
                for table in &writes.owned_tables {
                    if crud::names(table).contains(name) {
                        return Err(invalid(
                            &option,
                            format!(
                                "{option}: the name is also a generated CRUD mutator \
                                 (`writes.crud = true`); rename the mutator or set \
                                 `writes.crud = false`"
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Checks the configuration against the room's tables once they are known (the
    /// upstream hello, or the demo file): every owned table exists and every declarative
    /// mutator names existing tables and columns ([`declarative::validate`]).
    pub fn check_schema(&self, tables: &[TableSchema]) -> Result<(), ConfigError> {
        if let Some(writes) = &self.writes {
            for table in &writes.owned_tables {
                if !tables.iter().any(|t| &*t.name == table) {
                    return Err(invalid(
                        "writes.owned_tables",
                        format!(
                            "`writes.owned_tables` names {table:?}, which the room does not \
                             have (its tables: {}); fix the name or the footprint",
                            table_names(tables)
                        ),
                    ));
                }
            }
        }
        for (name, spec) in &self.mutators {
            let option = format!("mutators.{name}");
            declarative::validate(spec, tables)
                .map_err(|e| invalid(&option, format!("{option}: {e}")))?;
        }
        Ok(())
    }

    /// The mutator registry the configuration describes, once the room's tables are
    /// known: every `[mutators.*]`, plus the CRUD mutators of every owned table when
    /// `writes.crud` is set. Hosts add their own Rust mutators to it afterwards.
    pub fn registry(&self, tables: &[TableSchema]) -> Result<Registry, ConfigError> {
        self.check_schema(tables)?;
        let mut registry = Registry::new();
        if let Some(writes) = self.writes.as_ref().filter(|w| w.crud) {
            for name in &writes.owned_tables {
                if let Some(table) = tables.iter().find(|t| &*t.name == name) {
                    crud::register(&mut registry, table);
                }
            }
        }
        for (name, spec) in &self.mutators {
            let mutator = declarative::compile(name, spec).map_err(|e| {
                invalid(format!("mutators.{name}"), format!("mutators.{name}: {e}"))
            })?;
            registry.register(name.clone(), mutator);
        }
        Ok(registry)
    }
}

fn table_names(tables: &[TableSchema]) -> String {
    tables
        .iter()
        .map(|t| format!("{:?}", &*t.name))
        .collect::<Vec<_>>()
        .join(", ")
}

impl UpstreamConfig {
    /// `footprint_ast` as JSON: JSON text is parsed, an inline table converted.
    pub fn footprint_ast_json(&self) -> Result<Json, ConfigError> {
        let option = "upstream.footprint_ast";
        let ast = toml_or_json(&self.footprint_ast, option, "a wire AST object")?;
        let table_ok = ast
            .get("table")
            .and_then(Json::as_str)
            .is_some_and(|t| !t.is_empty());
        if !ast.is_object() || !table_ok {
            return Err(invalid(
                option,
                format!(
                    "`{option}` must be a wire AST object with a non-empty \"table\", such as \
                     '{{\"table\": \"note\"}}'; got {}",
                    declarative::describe_json(&ast)
                ),
            ));
        }
        Ok(ast)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let ws = &self.ws_url;
        let rest = ws.strip_prefix("ws://").unwrap_or("");
        if rest.is_empty() || rest.starts_with('/') {
            let why = if ws.starts_with("wss://") {
                "wss:// is not supported (TLS is out of scope for the room; terminate it \
                 outside the room)"
            } else {
                "it must be a ws:// URL"
            };
            return Err(invalid(
                "upstream.ws_url",
                format!(
                    "`upstream.ws_url` = {ws:?}: {why}; rindled's subscription plane, e.g. \
                     \"ws://127.0.0.1:7601\""
                ),
            ));
        }
        crate::http::parse_url(&self.control_url).map_err(|e| {
            invalid(
                "upstream.control_url",
                format!(
                    "`upstream.control_url`: {e}; rindled's control plane, e.g. \
                     \"http://127.0.0.1:7600\""
                ),
            )
        })?;
        if self.auth_token.as_deref() == Some("") {
            return Err(invalid(
                "upstream.auth_token",
                format!(
                    "`upstream.auth_token` is empty: set the token, remove the option if \
                     rindled runs unauthenticated, or set {ENV_UPSTREAM_AUTH_TOKEN}"
                ),
            ));
        }
        self.footprint_ast_json()?;
        if self.lease_ttl_ms == Some(0) {
            return Err(invalid(
                "upstream.lease_ttl_ms",
                "`upstream.lease_ttl_ms` = 0 would expire every lease at once: give a \
                 positive TTL in ms, or remove it for rindled's default",
            ));
        }
        if self.client_id.as_deref() == Some("") {
            return Err(invalid(
                "upstream.client_id",
                "`upstream.client_id` is empty: set a name, or remove it for the default \
                 `room-shell-<bootId>`",
            ));
        }
        Ok(())
    }
}

impl DownstreamConfig {
    fn validate(&self, fleet: bool) -> Result<(), ConfigError> {
        if self.doc_id.is_empty() && !fleet {
            return Err(invalid(
                "downstream.doc_id",
                "`downstream.doc_id` is empty or missing: set `doc_id = …` under [downstream] \
                 to the document id lease tokens are minted for (or add [fleet] to serve many \
                 rooms, each named by its URL)",
            ));
        }
        if self.token_keys.is_empty() {
            return Err(invalid(
                "downstream.token_keys",
                format!(
                    "`downstream.token_keys` is empty, so no lease token could be verified: \
                     add `[downstream.token_keys]` with `k1 = \"<secret>\"`, or set \
                     {ENV_TOKEN_KEYS}=k1=<secret>"
                ),
            ));
        }
        for (kid, secret) in &self.token_keys {
            if kid.is_empty() {
                return Err(invalid(
                    "downstream.token_keys",
                    "`downstream.token_keys` has an empty key id: name every key",
                ));
            }
            if secret.is_empty() {
                return Err(invalid(
                    format!("downstream.token_keys.{kid}"),
                    format!(
                        "the secret of key {kid:?} is empty: set it in the file or in \
                         {ENV_TOKEN_KEYS}"
                    ),
                ));
            }
        }
        if self.sweep_interval_ms == 0 {
            return Err(invalid(
                "downstream.sweep_interval_ms",
                "`downstream.sweep_interval_ms` must be at least 1 (the sweep cadence in ms; \
                 default 1000)",
            ));
        }
        if self.send_budget_bytes == 0 {
            return Err(invalid(
                "downstream.send_budget_bytes",
                "`downstream.send_budget_bytes` must be at least 1 (default 4194304 = 4 MiB); \
                 0 would close every socket",
            ));
        }
        let at_least_one = [
            (
                "first_frame_timeout_ms",
                self.first_frame_timeout_ms == 0,
                "30000",
            ),
            (
                "max_subscriptions_per_conn",
                self.max_subscriptions_per_conn == 0,
                "1000",
            ),
            (
                "max_snapshot_bytes",
                self.max_snapshot_bytes == 0,
                "67108864 = 64 MiB",
            ),
            (
                "max_materializations",
                self.max_materializations == 0,
                "10000",
            ),
        ];
        for (name, zero, default) in at_least_one {
            if zero {
                return Err(invalid(
                    format!("downstream.{name}"),
                    format!("`downstream.{name}` must be at least 1 (default {default})"),
                ));
            }
        }
        Ok(())
    }
}

impl WritesConfig {
    /// `scopes` as JSON (`None` when unset): JSON text is parsed, an array of inline
    /// tables converted. The result is an array of objects with a `"table"`.
    pub fn scopes_json(&self) -> Result<Option<Json>, ConfigError> {
        let Some(scopes) = &self.scopes else {
            return Ok(None);
        };
        let option = "writes.scopes";
        let json = toml_or_json(scopes, option, "a JSON array of scope specs")?;
        let Some(items) = json.as_array() else {
            return Err(invalid(
                option,
                format!(
                    "`{option}` must be an array of scope specs such as \
                     '[{{\"table\": \"note\", \"writable\": …}}]'; got {}",
                    declarative::describe_json(&json)
                ),
            ));
        };
        for (i, item) in items.iter().enumerate() {
            if item
                .get("table")
                .and_then(Json::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(invalid(
                    option,
                    format!("`{option}`[{i}] must be an object with a non-empty \"table\""),
                ));
            }
        }
        Ok(Some(json))
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let option = "writes.owned_tables";
        if self.owned_tables.is_empty() {
            return Err(invalid(
                option,
                "`writes.owned_tables` is empty: list the tables mutators may write, or \
                 remove [writes] to run read-only",
            ));
        }
        for (i, table) in self.owned_tables.iter().enumerate() {
            if table.is_empty() {
                return Err(invalid(option, "`writes.owned_tables` has an empty name"));
            }
            if table.starts_with("_rindle_") {
                return Err(invalid(
                    option,
                    format!(
                        "`writes.owned_tables` names {table:?}: `_rindle_*` tables belong to \
                         the room and are never writable"
                    ),
                ));
            }
            if self.owned_tables[..i].contains(table) {
                return Err(invalid(
                    option,
                    format!("`writes.owned_tables` names {table:?} twice"),
                ));
            }
        }
        self.scopes_json()?;
        if let JournalConfig::File { path } = &self.journal {
            if path.as_os_str().is_empty() {
                return Err(invalid(
                    "writes.journal.path",
                    "`writes.journal.path` is empty: set the journal file",
                ));
            }
        }
        if self.flush_dirty_max == 0 {
            return Err(invalid(
                "writes.flush_dirty_max",
                "`writes.flush_dirty_max` must be at least 1 (default 512)",
            ));
        }
        Ok(())
    }
}

/// Parses `name=value,name2=value2` (entries trimmed, empty entries skipped). Errors
/// never echo a value: they are secrets.
fn parse_pairs(var: &str, text: &str, shape: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for (i, entry) in text.split(',').map(str::trim).enumerate() {
        if entry.is_empty() {
            continue;
        }
        let Some((name, value)) = entry.split_once('=') else {
            return Err(invalid(
                var,
                format!("{var}: entry {} has no `=` (expected {shape})", i + 1),
            ));
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() {
            return Err(invalid(
                var,
                format!(
                    "{var}: entry {} has an empty name (expected {shape})",
                    i + 1
                ),
            ));
        }
        if value.is_empty() {
            return Err(invalid(
                var,
                format!("{var}: the value for {name:?} is empty (expected {shape})"),
            ));
        }
        out.push((name.to_string(), value.to_string()));
    }
    Ok(out)
}

/// A TOML value holding JSON text (a string) or inline TOML, as JSON.
fn toml_or_json(v: &toml::Value, option: &str, what: &str) -> Result<Json, ConfigError> {
    match v {
        toml::Value::String(text) => serde_json::from_str(text).map_err(|e| {
            invalid(
                option,
                format!(
                    "`{option}` is not valid JSON ({e}): write {what} as JSON text (a '''…''' \
                     string) or as inline TOML"
                ),
            )
        }),
        toml::Value::Table(_) | toml::Value::Array(_) => {
            toml_to_json(v).map_err(|e| invalid(option, format!("`{option}`: {e}")))
        }
        other => Err(invalid(
            option,
            format!(
                "`{option}` must be {what}, as JSON text or inline TOML; got a {}",
                other.type_str()
            ),
        )),
    }
}

/// Converts TOML to JSON (TOML has no null: write JSON text when a null is needed).
fn toml_to_json(v: &toml::Value) -> Result<Json, String> {
    Ok(match v {
        toml::Value::String(s) => Json::String(s.clone()),
        toml::Value::Integer(i) => Json::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Json::Number)
            .ok_or_else(|| format!("{f} has no JSON form"))?,
        toml::Value::Boolean(b) => Json::Bool(*b),
        toml::Value::Datetime(d) => {
            return Err(format!("the TOML datetime {d} has no JSON form; quote it"))
        }
        toml::Value::Array(items) => Json::Array(
            items
                .iter()
                .map(toml_to_json)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        toml::Value::Table(t) => Json::Object(
            t.iter()
                .map(|(k, v)| toml_to_json(v).map(|v| (k.clone(), v)))
                .collect::<Result<serde_json::Map<_, _>, _>>()?,
        ),
    })
}

/// Checks serde cannot express: a memory journal takes no other keys.
fn check_raw(text: &str) -> Result<(), ConfigError> {
    let Ok(root) = toml::from_str::<toml::Table>(text) else {
        return Ok(());
    };
    let journal = root
        .get("writes")
        .and_then(|w| w.get("journal"))
        .and_then(toml::Value::as_table);
    if let Some(journal) = journal {
        if journal.get("kind").and_then(toml::Value::as_str) == Some("memory") {
            if let Some(extra) = journal.keys().find(|k| k.as_str() != "kind") {
                return Err(invalid(
                    format!("writes.journal.{extra}"),
                    format!(
                        "unknown option `writes.journal.{extra}`: a memory journal takes only \
                         `kind`; remove it, or set `kind = \"file\"` for a durable journal"
                    ),
                ));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Parse errors: the TOML deserializer's message, restated with the option's full name.
// ---------------------------------------------------------------------------------------

/// The dotted path of a table header line (`[a.b]` / `[[a.b]]`), if it is one.
fn header_path(line: &str) -> Option<String> {
    let t = line.trim();
    let t = t.split_once('#').map_or(t, |(before, _)| before).trim_end();
    let inner = t
        .strip_prefix("[[")
        .and_then(|r| r.strip_suffix("]]"))
        .or_else(|| t.strip_prefix('[').and_then(|r| r.strip_suffix(']')))?;
    key_path(inner)
}

/// A dotted key (`a.b`, `"a".b`) as `a.b`, or `None` when `text` is not a key.
fn key_path(text: &str) -> Option<String> {
    let segs: Vec<&str> = text.split('.').map(str::trim).collect();
    let ok = segs.iter().all(|s| {
        let s = s
            .strip_prefix('"')
            .and_then(|r| r.strip_suffix('"'))
            .or_else(|| s.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
            .unwrap_or(s);
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    });
    ok.then(|| {
        segs.iter()
            .map(|s| s.trim_matches(['"', '\'']))
            .collect::<Vec<_>>()
            .join(".")
    })
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}.{b}"),
    }
}

/// Restates a `toml` error: finds the table and key it is about, names the option in
/// full and says how to fix it, and keeps the line and a caret snippet.
fn syntax_error(text: &str, err: &toml::de::Error) -> ConfigError {
    let raw = err.message().trim().to_string();
    let span = err.span().unwrap_or(0..0);
    let start = span.start.min(text.len());
    let root = span.is_empty() && span.start == 0;
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line = &text[line_start..line_end];
    let line_no = text[..start].matches('\n').count() + 1;
    let col = text[line_start..start].chars().count() + 1;

    // The table the error is about: the header on this line, else the last header above
    // (plus this line's key when the span points at its value).
    let context = if root {
        String::new()
    } else if let Some(h) = header_path(line) {
        h
    } else {
        let section = text[..line_start]
            .lines()
            .rev()
            .find_map(header_path)
            .unwrap_or_default();
        match line.split_once('=') {
            Some((lhs, _)) if start >= line_start + lhs.len() => match key_path(lhs.trim()) {
                Some(key) => join(&section, &key),
                None => section,
            },
            _ => section,
        }
    };
    let quoted = |prefix: &str| -> Option<(String, String)> {
        let rest = raw.strip_prefix(prefix)?;
        let (name, after) = rest.split_once('`')?;
        Some((name.to_string(), after.to_string()))
    };
    let where_ = |ctx: &str| {
        if ctx.is_empty() {
            String::from("at the top level")
        } else {
            format!("under [{ctx}]")
        }
    };
    let (option, message) = if let Some((name, after)) = quoted("unknown field `") {
        let option = if context == name || context.ends_with(&format!(".{name}")) {
            context.clone()
        } else {
            join(&context, &name)
        };
        let expected = after
            .trim_start_matches(',')
            .trim()
            .strip_prefix("expected ")
            .map(|e| format!(" (expected {e})"))
            .unwrap_or_default();
        let parent = option.rsplit_once('.').map_or("", |(p, _)| p);
        let what = if header_path(line).is_some() {
            "section"
        } else {
            "option"
        };
        (
            option.clone(),
            format!(
                "unknown {what} `{option}` {}{expected}: remove it or fix its spelling",
                where_(parent)
            ),
        )
    } else if let Some((name, _)) = quoted("missing field `") {
        let option = join(&context, &name);
        let message = if context.is_empty() {
            let needs = if name == "downstream" {
                " with `doc_id` and [downstream.token_keys]"
            } else {
                ""
            };
            format!("missing required section [{name}]: add [{name}]{needs} (see docs/config.md)")
        } else if name == "kind" && context.ends_with("journal") {
            format!(
                "missing required option `{option}`: add `kind = \"file\"` (with `path`) or \
                 `kind = \"memory\"` {}",
                where_(&context)
            )
        } else {
            format!(
                "missing required option `{option}`: add `{name} = …` {}",
                where_(&context)
            )
        };
        (option, message)
    } else if let Some((value, after)) = quoted("unknown variant `") {
        let expected = after.trim_start_matches(',').trim().to_string();
        if expected.contains("`file` or `memory`") {
            let option = if context.ends_with(".kind") {
                context.clone()
            } else {
                join(&context, "kind")
            };
            let message = format!(
                "`{option}` = {value:?} is not a journal kind: use \"file\" (with `path`) for \
                 a durable journal or \"memory\" for none"
            );
            (option, message)
        } else {
            let message = format!("`{context}` = {value:?} is not allowed ({expected})");
            (context.clone(), message)
        }
    } else if raw == "duplicate key" {
        (
            context.clone(),
            format!("`{context}` is defined twice: keep one (merge the two if they differ)"),
        )
    } else if context.is_empty() {
        (String::new(), raw.clone())
    } else {
        (context.clone(), format!("`{context}`: {raw}"))
    };

    let width = line_no.to_string().len();
    let caret_len = text[start..span.end.clamp(start, line_end)]
        .chars()
        .count()
        .max(1);
    let pad = " ".repeat(width);
    let snippet = format!(
        "{pad} |\n{line_no} | {line}\n{pad} | {}{}",
        " ".repeat(col - 1),
        "^".repeat(caret_len)
    );
    ConfigError::from(ErrorInner {
        file: None,
        // A whole-document error has no useful line.
        location: (!root).then_some((line_no, col)),
        option: (!option.is_empty()).then_some(option),
        message,
        snippet: (!root).then_some(snippet),
        source: None,
    })
}

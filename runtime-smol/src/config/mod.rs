//! The server's configuration: `rindle-room --config room.toml`.
//!
//! The shape follows the published room's `RoomShellOptions` (`UpstreamOptions`,
//! `DownstreamOptions`, `WritesOptions`) in snake_case; every option is documented here
//! and in `docs/config.md`.
//!
//! Loading runs in this order ([`Config::load`]): read the file; parse it (unknown
//! options, missing required options and wrong types are refused, with the line, the
//! option's full name and a fix); apply the environment overrides of the secrets
//! ([`ENV_UPSTREAM_AUTH_TOKEN`], [`ENV_TOKEN_KEYS`], [`ENV_CONTROL_AUTH_TOKEN`],
//! [`ENV_AUTHORITY_HEADERS`]); resolve relative paths against the file's directory;
//! validate ([`Config::validate`]). Checks that need the room's tables, which arrive with
//! the upstream hello, run later: [`Config::check_schema`] / [`Config::registry`].
//!
//! This module holds the file's shape (the section types below); the steps live in
//! their own files:
//!
//! | file | owns |
//! |---|---|
//! | `load.rs` | [`Config::load`] and friends: the order of the steps, relative paths |
//! | `parse.rs` | [`Config::parse`]: TOML to [`Config`], parse errors with line and caret |
//! | `env.rs` | the environment overrides of the secrets |
//! | `validate.rs` | [`Config::validate`]: the rules that need no room schema |
//! | `mutators.rs` | `[mutators.*]`: their checks and the [`Registry`] they describe |
//! | `embedded_json.rs` | JSON written inside the file (footprint AST, scope specs) |
//! | [`defaults`] | every option's default |
//! | `error.rs` | [`ConfigError`] |
//! | `fleet.rs` | `[fleet]` |
//!
//! [`Registry`]: crate::mutators::Registry

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::mutators::declarative::MutatorSpec;

pub mod defaults;
mod embedded_json;
mod env;
mod error;
mod fleet;
mod load;
mod mutators;
mod parse;
mod validate;

pub use defaults::RESERVED_FDS;
pub use env::{
    ENV_AUTHORITY_HEADERS, ENV_CONTROL_AUTH_TOKEN, ENV_TOKEN_KEYS, ENV_UPSTREAM_AUTH_TOKEN,
};
use error::invalid;
pub use error::ConfigError;
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
    /// How long the link to rindled may stay silent (no frame, no pong, no bytes)
    /// before the room takes it as dead and reconnects (default 45000 ms; a ping after
    /// a third of it). `0`: never.
    #[serde(default = "defaults::upstream_silence_timeout_ms")]
    pub silence_timeout_ms: u64,
    /// The largest websocket message (a seq-0 snapshot is one) the room takes from
    /// rindled (default 256 MiB); a larger one fails the link with a reason.
    #[serde(default = "defaults::max_upstream_frame_bytes")]
    pub max_frame_bytes: usize,
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
    /// The most bytes the room's materialized queries may hold beyond their rows:
    /// canonical texts and compiled conditions (`IN` sets, LIKE matchers; default
    /// 268435456 = 256 MiB). At the cap, idle queries are reclaimed oldest first; when
    /// that is not enough, a subscribe that needs a new query is a `queryError`.
    #[serde(default = "defaults::max_query_bytes")]
    pub max_query_bytes: usize,
    /// The most rows the room's materialized queries may hold together, counted per
    /// query level (default 10000000, ~100 bytes each). A subscribe whose new query
    /// takes the room past it is taken back — idle queries reclaimed first — and
    /// answered with a `queryError`.
    #[serde(default = "defaults::max_held_rows")]
    pub max_held_rows: usize,
    /// The most bytes the room may retain — rows, indexes, queries, subscriber and
    /// write state, as the core counts them (single-room mode; a fleet sets it in
    /// `[fleet]`): a subscribe past it is a `queryError`, a snapshot alone past it
    /// stops the incarnation. Absent: no budget.
    #[serde(default)]
    pub max_room_bytes: Option<u64>,
    /// How long a client socket may stay silent (no frame, no pong) before it is
    /// closed with 1011 (default 90000 ms; a ping after a third of it). `0`: never.
    #[serde(default = "defaults::silence_timeout_ms")]
    pub silence_timeout_ms: u64,
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

/// The write authority's endpoints (the published room's `HttpAuthorityOptions`).
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

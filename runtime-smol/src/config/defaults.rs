//! Every option's default: the serde default functions, [`ServerConfig`]'s `Default`,
//! and the `server.max_connections` default derived from the open-file limit. The
//! numbers the server shares with the host and the Node shell are not written here:
//! they are read from the core's [`HostConfig::default`], [`WriteSettings::default`]
//! and [`DriverLimits::default`] (`tests/config_reference_matches_defaults.rs` checks
//! `docs/config.md` against them).

use rindle_room_core::host::{DriverLimits, HostConfig, WriteSettings};

use super::{LogFormat, ServerConfig};

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
        let d = DriverLimits::default();
        ServerConfig {
            bind: String::from("127.0.0.1"),
            port: 0,
            log_format: LogFormat::Text,
            max_frame_bytes: d.max_frame_bytes,
            max_inbound_bytes: d.max_inbound_bytes,
            max_unsent_bytes: d.max_unsent_bytes,
            max_connections: None,
            handshake_timeout_ms: d.handshake_timeout_ms,
            startup_timeout_ms: HostConfig::default().startup_timeout_ms,
        }
    }
}

/// `127.0.0.1`.
pub fn control_bind() -> String {
    String::from("127.0.0.1")
}
/// [`HostConfig::default`]'s `idle_ttl_ms`.
pub fn idle_ttl_ms() -> u64 {
    HostConfig::default().idle_ttl_ms
}
/// [`HostConfig::default`]'s `sweep_interval_ms`.
pub fn sweep_interval_ms() -> u64 {
    HostConfig::default().sweep_interval_ms
}
/// [`HostConfig::default`]'s `revocation_window_ms`.
pub fn revocation_window_ms() -> u64 {
    HostConfig::default().revocation_window_ms
}
/// [`HostConfig::default`]'s `send_budget_bytes`.
pub fn send_budget_bytes() -> usize {
    HostConfig::default().send_budget_bytes
}
/// [`HostConfig::default`]'s `first_frame_timeout_ms`.
pub fn first_frame_timeout_ms() -> u64 {
    HostConfig::default().first_frame_timeout_ms
}
/// [`HostConfig::default`]'s `upstream_silence_timeout_ms`.
pub fn upstream_silence_timeout_ms() -> u64 {
    HostConfig::default().upstream_silence_timeout_ms
}
/// [`DriverLimits::default`]'s `max_upstream_frame_bytes`.
pub fn max_upstream_frame_bytes() -> usize {
    rindle_room_core::host::DriverLimits::default().max_upstream_frame_bytes
}
/// [`HostConfig::default`]'s `silence_timeout_ms`.
pub fn silence_timeout_ms() -> u64 {
    HostConfig::default().silence_timeout_ms
}
/// [`HostConfig::default`]'s `max_subscriptions_per_conn`.
pub fn max_subscriptions_per_conn() -> usize {
    HostConfig::default().max_subscriptions_per_conn
}
/// [`HostConfig::default`]'s `max_snapshot_bytes`.
pub fn max_snapshot_bytes() -> usize {
    HostConfig::default().max_snapshot_bytes
}
/// [`HostConfig::default`]'s `max_materializations`.
pub fn max_materializations() -> usize {
    HostConfig::default().max_materializations
}
/// [`HostConfig::default`]'s `max_query_bytes`.
pub fn max_query_bytes() -> usize {
    HostConfig::default().max_query_bytes
}
/// [`HostConfig::default`]'s `max_held_rows`.
pub fn max_held_rows() -> usize {
    HostConfig::default().max_held_rows
}
/// [`WriteSettings::default`]'s `group_commit_ms`.
pub fn group_commit_ms() -> u64 {
    WriteSettings::default().group_commit_ms
}
/// [`WriteSettings::default`]'s `flush_debounce_ms`.
pub fn flush_debounce_ms() -> u64 {
    WriteSettings::default().flush_debounce_ms
}
/// [`WriteSettings::default`]'s `flush_dirty_max`.
pub fn flush_dirty_max() -> usize {
    WriteSettings::default().flush_dirty_max
}

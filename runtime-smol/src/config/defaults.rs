//! Every option's default: the serde default functions (shared with `docs/config.md`),
//! [`ServerConfig`]'s `Default`, and the `server.max_connections` default derived from
//! the open-file limit.

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
        ServerConfig {
            bind: String::from("127.0.0.1"),
            port: 0,
            log_format: LogFormat::Text,
            max_frame_bytes: max_frame_bytes(),
            max_inbound_bytes: max_inbound_bytes(),
            max_unsent_bytes: rindle_room_core::host::DEFAULT_MAX_UNSENT_BYTES,
            max_connections: None,
            handshake_timeout_ms: handshake_timeout_ms(),
            startup_timeout_ms: startup_timeout_ms(),
        }
    }
}

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

//! `[fleet]`: one process serving many rooms, booted on demand through the API server's
//! room-boot (docs/fleet.md; docs/config.md "[fleet]").

use std::path::PathBuf;

use serde::Deserialize;

use super::{invalid, ConfigError};

/// Env: overrides `fleet.shell_secret`.
pub const ENV_SHELL_SECRET: &str = "RINDLE_ROOM_SHELL_SECRET";

/// When a mutation's lmid ack goes out (docs/fleet.md, "Acknowledgement modes").
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum AckMode {
    /// After the local fsync (what the published room's Node shell does): survives a
    /// crash of the process, not the loss of the box's disk.
    #[default]
    Journaled,
    /// After the authority confirmed the flush holding the mutation: survives the loss
    /// of the box.
    Flushed,
}

/// How the rooms' journal appends reach the disk.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum JournalSync {
    /// Each room's journal `fdatasync`s its own appends.
    #[default]
    Room,
    /// One `syncfs` of the data directory's filesystem covers the appends of every
    /// room made while the last one ran (box-level group commit; Linux 5.8+, else
    /// `room` with a log line). Every ack still follows the sync that covers it. Pays
    /// where syncs are slow and the filesystem holds little else (`syncfs` writes back
    /// everything dirty on it).
    Box,
}

/// `[fleet]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetConfig {
    /// The API server's origin, e.g. `http://127.0.0.1:3000`; room-boot is called at
    /// `<api_url><boot_path>` and the flush routes it returns are resolved against it.
    pub api_url: String,
    /// room-boot's route path (default `/api/rindle/room-boot`).
    #[serde(default = "defaults::boot_path")]
    pub boot_path: String,
    /// The bearer secret room-boot checks (env `RINDLE_ROOM_SHELL_SECRET`).
    #[serde(default)]
    pub shell_secret: String,
    /// This box's instance id, sent with every boot (default `<host name>-<pid>`).
    pub instance: Option<String>,
    /// rindled's websocket endpoint, for boots whose answer names none.
    pub upstream_ws_url: Option<String>,
    /// The upstream `init` clientID prefix (default `room-shell-<bootId>`).
    pub upstream_client_id: Option<String>,
    /// How long a room's link to rindled may stay silent before the room takes it as
    /// dead and reconnects (default 45000 ms; `[upstream] silence_timeout_ms` of a
    /// single room). `0`: never.
    #[serde(default = "defaults::upstream_silence_timeout_ms")]
    pub upstream_silence_timeout_ms: u64,
    /// The largest websocket message a room takes from rindled (default 256 MiB;
    /// `[upstream] max_frame_bytes` of a single room).
    #[serde(default = "defaults::max_upstream_frame_bytes")]
    pub upstream_max_frame_bytes: usize,
    /// Where per-room journals live (`<data_dir>/rooms/<hash>-<doc>/journal`); absent:
    /// journals in memory (nothing survives the process).
    pub data_dir: Option<PathBuf>,
    /// How long a connection waits for its room's boot (default 10000 ms).
    #[serde(default = "defaults::boot_timeout_ms")]
    pub boot_timeout_ms: u64,
    /// A room with no connection for this long, all of whose writes are confirmed,
    /// hibernates (default 60000 ms).
    #[serde(default = "defaults::idle_evict_ms")]
    pub idle_evict_ms: u64,
    /// The most rooms live or booting at once (default 10000); past it, new boots are
    /// refused with close 1013.
    #[serde(default = "defaults::max_rooms")]
    pub max_rooms: usize,
    /// The most room-boot calls at once (default 16); more boots wait for a slot (at
    /// most 1,024 of them, each up to `boot_timeout_ms`), then are refused with 1013.
    #[serde(default = "defaults::max_boots_in_flight")]
    pub max_boots_in_flight: usize,
    /// How long a document the API server answered 404 or 403 for is refused without
    /// asking again (default 60000 ms).
    #[serde(default = "defaults::refused_doc_ttl_ms")]
    pub refused_doc_ttl_ms: u64,
    /// The most bytes one room may retain (its rows, queries and subscriber state, as
    /// the core counts them): a subscribe past it gets a `queryError`; a snapshot alone
    /// past it stops the room. Absent: no budget.
    pub max_room_bytes: Option<u64>,
    /// The most bytes all live rooms together may retain: past it, idle rooms hibernate
    /// (least recently used first), then new boots are refused with 1013. Absent: no
    /// budget.
    pub max_box_bytes: Option<u64>,
    /// When acks go out: `journaled` (default) or `flushed`.
    #[serde(default)]
    pub ack: AckMode,
    /// How journal appends are synced: `room` (default) or `box`.
    #[serde(default)]
    pub journal_sync: JournalSync,
}

/// `[fleet]` defaults; those of the boot admission are the core's
/// ([`BootLimits::default`](rindle_room_core::fleet::BootLimits)).
pub mod defaults {
    use rindle_room_core::fleet::BootLimits;

    pub use crate::config::defaults::{max_upstream_frame_bytes, upstream_silence_timeout_ms};

    /// `/api/rindle/room-boot`.
    pub fn boot_path() -> String {
        String::from(rindle_room_core::fleet::DEFAULT_BOOT_PATH)
    }
    /// The boot admission's queue wait (10 s).
    pub fn boot_timeout_ms() -> u64 {
        BootLimits::default().queue_wait_ms
    }
    /// 60 s.
    pub fn idle_evict_ms() -> u64 {
        60_000
    }
    /// 10,000 rooms.
    pub fn max_rooms() -> usize {
        10_000
    }
    /// The boot admission's calls in flight (16).
    pub fn max_boots_in_flight() -> usize {
        BootLimits::default().max_in_flight
    }
    /// The boot admission's memory of refused documents (60 s).
    pub fn refused_doc_ttl_ms() -> u64 {
        BootLimits::default().refused_ttl_ms
    }
}

impl FleetConfig {
    /// The boot admission limits these settings make.
    pub fn boot_limits(&self) -> rindle_room_core::fleet::BootLimits {
        rindle_room_core::fleet::BootLimits {
            max_in_flight: self.max_boots_in_flight,
            queue_wait_ms: self.boot_timeout_ms,
            refused_ttl_ms: self.refused_doc_ttl_ms,
            ..Default::default()
        }
    }

    /// The room-boot URL.
    pub fn boot_url(&self) -> String {
        format!("{}{}", self.api_url.trim_end_matches('/'), self.boot_path)
    }

    /// This box's instance id.
    pub fn instance_id(&self) -> String {
        self.instance.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME")
                .ok()
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| String::from("rindle-room"));
            format!("{host}-{}", std::process::id())
        })
    }

    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(self.api_url.starts_with("http://") || self.api_url.starts_with("https://")) {
            return Err(invalid(
                "fleet.api_url",
                format!(
                    "`fleet.api_url` = {:?} is not an http(s) URL: set it to the API server's \
                     origin, e.g. \"http://127.0.0.1:3000\"",
                    self.api_url
                ),
            ));
        }
        if self.api_url.starts_with("https://") {
            return Err(invalid(
                "fleet.api_url",
                "`fleet.api_url` uses https://, which this build does not speak: reach the API \
                 server over http:// on a private network, or through a local TLS proxy",
            ));
        }
        if !self.boot_path.starts_with('/') {
            return Err(invalid(
                "fleet.boot_path",
                format!(
                    "`fleet.boot_path` = {:?} must be a root-relative path such as \
                     \"/api/rindle/room-boot\"",
                    self.boot_path
                ),
            ));
        }
        if self.shell_secret.is_empty() {
            return Err(invalid(
                "fleet.shell_secret",
                format!(
                    "`fleet.shell_secret` is empty: set it under [fleet] or in \
                     {ENV_SHELL_SECRET} to the API server's realtime shell secret"
                ),
            ));
        }
        if let Some(url) = &self.upstream_ws_url {
            crate::server::upstream::ws_host_port(url)
                .map_err(|e| invalid("fleet.upstream_ws_url", e.to_string()))?;
        }
        if self.boot_timeout_ms == 0 {
            return Err(invalid(
                "fleet.boot_timeout_ms",
                "`fleet.boot_timeout_ms` must be at least 1 (default 10000)",
            ));
        }
        if self.max_rooms == 0 {
            return Err(invalid(
                "fleet.max_rooms",
                "`fleet.max_rooms` must be at least 1 (default 10000)",
            ));
        }
        if self.upstream_max_frame_bytes == 0 {
            return Err(invalid(
                "fleet.upstream_max_frame_bytes",
                "`fleet.upstream_max_frame_bytes` must be at least 1 (default 268435456 = 256 \
                 MiB); 0 would refuse every snapshot",
            ));
        }
        if self.max_boots_in_flight == 0 {
            return Err(invalid(
                "fleet.max_boots_in_flight",
                "`fleet.max_boots_in_flight` must be at least 1 (default 16)",
            ));
        }
        Ok(())
    }
}

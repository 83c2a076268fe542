//! The host's settings: what the `DownstreamOptions` / `WritesOptions` of `@rindle/room`
//! 0.9's API say, plus
//! the limits of docs/security.md. Drivers build one from their own configuration.

use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value as Json;

use super::newcomer::{MAX_DEFERRED_FETCHES, MAX_NEWCOMER_FETCHES};
use super::ConfigError;
use crate::json::tree::JsValue;

/// The write plane (`WritesOptions`).
#[derive(Clone, Debug)]
pub struct WriteSettings {
    /// The tables mutators may write.
    pub owned_tables: Vec<String>,
    /// Scope specs as JSON (arms the v2 commit gate); `None` = the v1 plane.
    pub scopes: Option<Json>,
    /// Group-commit window, ms.
    pub group_commit_ms: u64,
    /// Flush debounce, ms.
    pub flush_debounce_ms: u64,
    /// Flush at once at this many dirty keys.
    pub flush_dirty_max: usize,
    /// Whether an authority is configured (the write-behind flush, epoch claim, lmid
    /// probe and drain run only with one).
    pub authority: bool,
    /// `ack = "flushed"` (`docs/fleet.md`, "Acknowledgement modes"): the lmid ack and the
    /// author's progress wait
    /// until the flush carrying the mutation commits; `false` = `ack = "journaled"`,
    /// the ack follows the local fsync.
    pub ack_after_flush: bool,
}

/// A placement granted by the API server's room-boot (`docs/fleet.md`, "Booting a
/// room"): the epoch it
/// claimed and the upstream lease it minted. A host started with one claims no epoch
/// and mints no first lease itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The claimed placement epoch.
    pub epoch: u64,
    /// The daemon lease for the footprint.
    pub lease_token: String,
}

/// Everything the host reads from the configuration.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// This room's document id.
    pub doc_id: String,
    /// The token key ring `(kid, secret)`.
    pub token_keys: Vec<(String, String)>,
    /// Idle grace before an unsubscribed query is reclaimed, ms.
    pub idle_ttl_ms: u64,
    /// Lease-expiry / idle-sweep cadence, ms (at least 1).
    pub sweep_interval_ms: u64,
    /// How long a revocation refuses pre-revocation tokens, ms.
    pub revocation_window_ms: u64,
    /// Unread live bytes per socket before it is cut.
    pub send_budget_bytes: usize,
    /// How long a connection may go without a first `init` / `subscribe`, ms.
    pub first_frame_timeout_ms: u64,
    /// Subscriptions (held and lmid ones included) per connection.
    pub max_subscriptions_per_conn: usize,
    /// The largest snapshot frame, and the most unread snapshot bytes per socket.
    pub max_snapshot_bytes: usize,
    /// Materialized queries per room, idle ones included.
    pub max_materializations: usize,
    /// The most bytes the room's materialized queries may hold beyond their rows —
    /// canonical texts and compiled conditions, as [`crate::Room::query_bytes`] counts
    /// them. A query one megabyte long can hold tens of megabytes (a LIKE matcher, an
    /// `IN` set); this bounds what many of them hold together.
    pub max_query_bytes: usize,
    /// The most rows the room's materialized queries may hold together, counted per
    /// level ([`crate::Room::held_rows`]): a subscribe whose new query takes the room
    /// past it is taken back (idle queries are reclaimed first) and refused. What a
    /// held row costs — ~100 bytes of sets and maps — is what this bounds; the rows
    /// themselves are the store's.
    pub max_held_rows: usize,
    /// The upstream `init` clientID (`None` = `room-shell-<bootId>`).
    pub upstream_client_id: Option<String>,
    /// How long the upstream link may stay silent — no frame, no pong, no bytes of a
    /// frame arriving — before the room takes it as dead, ms. After a third of it the
    /// room pings the daemon; past it the link is closed and the incarnation ends as on
    /// a drop (then the reconnect). Catches a link whose peer vanished without a FIN or
    /// RST (a partition, a dead host, a NAT that forgot it). `0`: never.
    pub upstream_silence_timeout_ms: u64,
    /// The same for each downstream socket, ms: a ping after a third of it silent, and
    /// past it the socket is closed (1011) and dropped after the close grace, freeing
    /// its subscriptions. `0`: never.
    pub silence_timeout_ms: u64,
    /// The write plane; `None` = read-only.
    pub writes: Option<WriteSettings>,
    /// Random bytes from the driver (a CSPRNG): the host derives every incarnation's
    /// bootId from them, since it reads no entropy of its own.
    pub entropy: [u8; 32],
    /// A placement granted by room-boot (fleet mode); `None`: claim the epoch (with an
    /// authority) and mint the first lease at start-up.
    pub placement: Option<Placement>,
    /// The most bytes the room may retain ([`crate::Room::retained_bytes`]); a subscribe
    /// that would leave it past this is taken back and answered with a `queryError`.
    /// `None`: no budget.
    pub max_room_bytes: Option<u64>,
    /// Revocations made before this host existed, `(user, revoked at ms)`: a fleet box
    /// hands every room it boots the revocations still within the window, so a room
    /// that hibernated forgets none.
    pub revoked: Vec<(String, u64)>,
    /// How long start-up keeps trying the first lease mint and the placement epoch
    /// claim while they fail transiently (unreachable, a timeout, 408, 429, a 5xx), ms:
    /// 100 ms between tries, doubling to 5 s. `0`: the first failure fails the start.
    pub startup_timeout_ms: u64,
    /// Lmid fetches for writers new to the room that may be under way at once
    /// (`docs/fleet.md`, "A writer new to the room"); past it a newcomer is served from
    /// the room's own ledger at once. Default [`MAX_NEWCOMER_FETCHES`].
    pub max_newcomer_fetches: usize,
    /// Newcomers served past `max_newcomer_fetches` whose fetch waits for a free slot
    /// (`ack = "journaled"`); past it their mutations are refused with `1013`. Default
    /// [`MAX_DEFERRED_FETCHES`].
    pub max_deferred_fetches: usize,
}

impl Default for WriteSettings {
    /// No owned tables (set them), the v1 plane, no authority, `ack = "journaled"`, and
    /// the default windows (`docs/config.md`, `[writes]`).
    fn default() -> WriteSettings {
        WriteSettings {
            owned_tables: Vec::new(),
            scopes: None,
            group_commit_ms: 5,
            flush_debounce_ms: 250,
            flush_dirty_max: 512,
            authority: false,
            ack_after_flush: false,
        }
    }
}

impl Default for HostConfig {
    /// Every setting at its default: the one place the host's defaults are written.
    /// The JSON configuration, the smol server's `[downstream]` options and the Node
    /// shell's `downstream` options fill what they leave out from here, and
    /// `docs/config.md` is checked against it. No document id and no key yet (set
    /// them, and [`HostConfig::entropy`]).
    fn default() -> HostConfig {
        HostConfig {
            doc_id: String::new(),
            token_keys: Vec::new(),
            idle_ttl_ms: 30_000,
            sweep_interval_ms: 1_000,
            revocation_window_ms: 30 * 60_000,
            send_budget_bytes: 4 * 1024 * 1024,
            first_frame_timeout_ms: 30_000,
            max_subscriptions_per_conn: 1_000,
            max_snapshot_bytes: 64 * 1024 * 1024,
            max_materializations: 10_000,
            max_query_bytes: 256 * 1024 * 1024,
            max_held_rows: 10_000_000,
            upstream_client_id: None,
            upstream_silence_timeout_ms: 45_000,
            silence_timeout_ms: 90_000,
            writes: None,
            entropy: [0; 32],
            placement: None,
            max_room_bytes: None,
            revoked: Vec::new(),
            startup_timeout_ms: 60_000,
            max_newcomer_fetches: MAX_NEWCOMER_FETCHES,
            max_deferred_fetches: MAX_DEFERRED_FETCHES,
        }
    }
}

/// What a driver applies around the host, with their defaults: the limits of its
/// downstream listener. The host reads none of
/// them; they live here so that the smol server (`[server]`), the Node shell
/// (`downstream` options) and the docs share one set of numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriverLimits {
    /// The largest websocket message a client may send, bytes (past it: close 1009).
    pub max_frame_bytes: usize,
    /// Per connection, the most bytes of received frames waiting for the host (at least
    /// `max_frame_bytes`); at the cap the socket is not read.
    pub max_inbound_bytes: usize,
    /// Bytes queued for every socket of the process together that their writers have
    /// not taken; past it the largest backlogs are cut ([`super::unsent_cuts`]).
    pub max_unsent_bytes: usize,
    /// Downstream sockets held at once, for a driver that does not derive the number
    /// from the process's open-file limit (the smol server does; the Node shell takes
    /// this one). Past it an upgrade is answered with HTTP 503.
    pub max_connections: usize,
    /// How long a TCP connection may take to complete the websocket upgrade, ms.
    pub handshake_timeout_ms: u64,
    /// How long a closing socket waits for the peer's close frame before it is
    /// dropped, ms.
    pub close_grace_ms: u64,
    /// The largest websocket message (and frame) the room takes from `rindled`, bytes: a
    /// seq-0 snapshot is one message of the whole footprint. A larger one fails the
    /// link with a reason naming the limit, and the room reconnects.
    pub max_upstream_frame_bytes: usize,
}

impl Default for DriverLimits {
    /// The defaults every driver and `docs/config.md` (`[server]`) share.
    fn default() -> DriverLimits {
        DriverLimits {
            max_frame_bytes: 1024 * 1024,
            max_inbound_bytes: 4 * 1024 * 1024,
            max_unsent_bytes: super::DEFAULT_MAX_UNSENT_BYTES,
            max_connections: 10_000,
            handshake_timeout_ms: 5_000,
            close_grace_ms: 2_000,
            max_upstream_frame_bytes: 256 * 1024 * 1024,
        }
    }
}

impl HostConfig {
    /// A read-only room for `doc_id` with `token_keys` and every other setting at its
    /// default ([`HostConfig::default`]); set [`HostConfig::entropy`] before use.
    pub fn new(doc_id: &str, token_keys: Vec<(String, String)>) -> HostConfig {
        HostConfig {
            doc_id: String::from(doc_id),
            token_keys,
            ..HostConfig::default()
        }
    }

    /// `scopeSpecsHash` of the armed scopes (v2 only): the scope-skew tripwire.
    pub(crate) fn armed_scopes_hash(&self) -> Option<String> {
        let scopes = self.writes.as_ref()?.scopes.as_ref()?;
        Some(crate::token::scope_specs_hash(&JsValue::from_serde(scopes)))
    }

    /// Checks the published room's construction-time rules: a non-empty owned set, and
    /// scopes
    /// that only narrow it.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let Some(w) = &self.writes else {
            return Ok(());
        };
        if w.owned_tables.is_empty() {
            return Err(ConfigError::NoOwnedTables);
        }
        if let Some(scopes) = &w.scopes {
            check_scopes_narrow(scopes, &w.owned_tables)?;
        }
        Ok(())
    }
}

/// The boot-wire scopes may only narrow the host's owned set, never extend it.
fn check_scopes_narrow(scopes: &Json, owned: &[String]) -> Result<(), ConfigError> {
    let Some(items) = scopes.as_array() else {
        return Err(ConfigError::ScopesNotArray);
    };
    let tables: Vec<String> = items
        .iter()
        .filter(|s| {
            let kind = s
                .get("writable")
                .and_then(|w| w.get("kind"))
                .and_then(Json::as_str);
            kind != Some("none")
        })
        .filter_map(|s| s.get("table").and_then(Json::as_str))
        .filter(|t| !owned.iter().any(|o| o == t))
        .map(String::from)
        .collect();
    if tables.is_empty() {
        return Ok(());
    }
    Err(ConfigError::ScopesWiden { tables })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn scopes_wider_than_the_owned_set_are_refused() {
        let scopes: Json = serde_json::from_str(
            r#"[{"table":"a","writable":{"kind":"predicate","joinKeyCols":[]}},
                {"table":"b","writable":{"kind":"none"}},
                {"table":"c","writable":{"kind":"predicate","joinKeyCols":[]}}]"#,
        )
        .unwrap();
        assert!(check_scopes_narrow(&scopes, &["a".to_string(), "c".to_string()]).is_ok());
        let err = check_scopes_narrow(&scopes, &["a".to_string()])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("writes.scopes marks `c` writable"), "{err}");
        assert!(err.contains("does not include it —"), "{err}");
    }

    #[test]
    fn a_json_configuration_fills_what_it_leaves_out_from_the_defaults() {
        let cfg = super::super::json::config_from_json(
            r#"{"docId":"d","tokenKeys":[["k","s"]],"writes":{"ownedTables":["t"]}}"#,
        )
        .unwrap();
        let d = HostConfig::default();
        let got = (
            cfg.idle_ttl_ms,
            cfg.sweep_interval_ms,
            cfg.revocation_window_ms,
            cfg.send_budget_bytes,
            cfg.first_frame_timeout_ms,
            cfg.max_subscriptions_per_conn,
            cfg.max_snapshot_bytes,
            cfg.max_materializations,
            cfg.max_query_bytes,
            cfg.max_held_rows,
        );
        let want = (
            d.idle_ttl_ms,
            d.sweep_interval_ms,
            d.revocation_window_ms,
            d.send_budget_bytes,
            d.first_frame_timeout_ms,
            d.max_subscriptions_per_conn,
            d.max_snapshot_bytes,
            d.max_materializations,
            d.max_query_bytes,
            d.max_held_rows,
        );
        assert_eq!(got, want);
        let (w, dw) = (cfg.writes.unwrap(), WriteSettings::default());
        assert_eq!(
            (w.group_commit_ms, w.flush_debounce_ms, w.flush_dirty_max),
            (dw.group_commit_ms, dw.flush_debounce_ms, dw.flush_dirty_max)
        );
        assert_eq!(cfg.max_room_bytes, d.max_room_bytes);
    }

    #[test]
    fn the_defaults_json_uses_the_configurations_names() {
        use super::super::json::{config_from_json, defaults_json};
        let mut v: Json = serde_json::from_str(&defaults_json()).unwrap();
        // The reader ignores the driver limits; with everything else set to its default
        // and the windows doubled, each field must land where its name says.
        v["docId"] = Json::from("d");
        for k in [
            "idleTtlMs",
            "sendBudgetBytes",
            "maxMaterializations",
            "maxQueryBytes",
            "maxHeldRows",
        ] {
            v[k] = Json::from(v[k].as_u64().unwrap() * 2);
        }
        v["writes"]["ownedTables"] = serde_json::json!(["t"]);
        v["writes"]["flushDirtyMax"] = Json::from(1024);
        let cfg = config_from_json(&v.to_string()).unwrap();
        let d = HostConfig::default();
        assert_eq!(cfg.idle_ttl_ms, d.idle_ttl_ms * 2);
        assert_eq!(cfg.send_budget_bytes, d.send_budget_bytes * 2);
        assert_eq!(cfg.max_materializations, d.max_materializations * 2);
        assert_eq!(cfg.max_query_bytes, d.max_query_bytes * 2);
        assert_eq!(cfg.max_held_rows, d.max_held_rows * 2);
        assert_eq!(cfg.sweep_interval_ms, d.sweep_interval_ms);
        assert_eq!(cfg.writes.unwrap().flush_dirty_max, 1024);
        assert_eq!(v["closeGraceMs"], DriverLimits::default().close_grace_ms);
    }
}

//! The host's settings: what the `DownstreamOptions` / `WritesOptions` of `@rindle/room`
//! 0.9's API say, plus
//! the limits of docs/security.md. Drivers build one from their own configuration.

use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value as Json;

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
    /// The upstream `init` clientID (`None` = `room-shell-<bootId>`).
    pub upstream_client_id: Option<String>,
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
}

impl HostConfig {
    /// A read-only room for `doc_id` with `token_keys` and every other setting at its
    /// default (config.md); set [`HostConfig::entropy`] before use.
    pub fn new(doc_id: &str, token_keys: Vec<(String, String)>) -> HostConfig {
        HostConfig {
            doc_id: String::from(doc_id),
            token_keys,
            idle_ttl_ms: 30_000,
            sweep_interval_ms: 1_000,
            revocation_window_ms: 30 * 60_000,
            send_budget_bytes: 4 * 1024 * 1024,
            first_frame_timeout_ms: 30_000,
            max_subscriptions_per_conn: 1_000,
            max_snapshot_bytes: 64 * 1024 * 1024,
            max_materializations: 10_000,
            upstream_client_id: None,
            writes: None,
            entropy: [0; 32],
            placement: None,
            revoked: Vec::new(),
            max_room_bytes: None,
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
}

//! The host's settings, derived once from the [`Config`].

use rindle_room_core::host::{HostConfig, WriteSettings};

use super::error::StartError;
use crate::config::Config;

/// The host's settings from the configuration (with the refusals the published room's
/// Node shell makes at construction, through [`HostConfig::validate`]).
/// `upstream_client_id` is the upstream connector's `init` clientID, `entropy` random
/// bytes for the bootIds.
pub(crate) fn host_config(
    config: &Config,
    upstream_client_id: Option<String>,
    has_authority: bool,
    entropy: [u8; 32],
) -> Result<HostConfig, StartError> {
    let d = &config.downstream;
    let writes = match &config.writes {
        None => None,
        Some(w) => Some(WriteSettings {
            owned_tables: w.owned_tables.clone(),
            scopes: w.scopes_json()?,
            group_commit_ms: w.group_commit_ms,
            flush_debounce_ms: w.flush_debounce_ms,
            flush_dirty_max: w.flush_dirty_max,
            authority: has_authority,
            ack_after_flush: false,
        }),
    };
    let cfg = HostConfig {
        doc_id: d.doc_id.clone(),
        token_keys: d
            .token_keys
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        idle_ttl_ms: d.idle_ttl_ms,
        sweep_interval_ms: d.sweep_interval_ms.max(1),
        revocation_window_ms: d.revocation_window_ms,
        send_budget_bytes: d.send_budget_bytes,
        first_frame_timeout_ms: d.first_frame_timeout_ms,
        max_subscriptions_per_conn: d.max_subscriptions_per_conn,
        max_snapshot_bytes: d.max_snapshot_bytes,
        max_materializations: d.max_materializations,
        max_query_bytes: d.max_query_bytes,
        max_held_rows: d.max_held_rows,
        silence_timeout_ms: d.silence_timeout_ms,
        upstream_silence_timeout_ms: match (&config.upstream, &config.fleet) {
            (Some(u), _) => u.silence_timeout_ms,
            (None, Some(f)) => f.upstream_silence_timeout_ms,
            (None, None) => HostConfig::default().upstream_silence_timeout_ms,
        },
        upstream_client_id,
        writes,
        entropy,
        placement: None,
        revoked: Vec::new(),
        max_room_bytes: d.max_room_bytes,
        startup_timeout_ms: config.server.startup_timeout_ms,
        ..HostConfig::default()
    };
    cfg.validate()
        .map_err(|e| StartError::Host(e.to_string()))?;
    Ok(cfg)
}

/// The process's socket gauge, its unsent-bytes cap set from `server.max_unsent_bytes`
/// (sockets it cuts are logged on `log`). One per process: every room of a box shares
/// it, so the cap bounds them all.
pub(crate) fn socket_gauge(
    config: &Config,
    log: &super::log::Logger,
) -> std::sync::Arc<rindle_room_downstream::SocketGauge> {
    let gauge = std::sync::Arc::new(rindle_room_downstream::SocketGauge::default());
    let log = log.clone();
    gauge.unsent.configure(
        config.server.max_unsent_bytes,
        Box::new(move |id, reason| {
            log.warn(&format!("conn {id} cut (1008, a gap to repair): {reason}"));
        }),
    );
    gauge
}

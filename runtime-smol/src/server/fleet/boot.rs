//! Booting one room of the fleet (docs/fleet.md, "Booting a room"): the room-boot call,
//! retried with backoff until the boot timeout, and the room built from its grant — the
//! placement epoch and lease for the host, the flush endpoints for the authority client, a
//! journal under the data directory, the upstream endpoint and affinity ticket.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rindle_room_core::fleet::{
    affinity_offer, boot_authorization, boot_body, boot_reply, room_dir_name, BootFailure,
    BootGrant,
};
use rindle_room_core::host::Placement;

use super::upstream::FleetUpstream;
use super::Shared;
use crate::authority::HttpAuthority;
use crate::config::AuthorityConfig;
use crate::http;
use crate::journal::memory::MemoryJournal;
use crate::journal::Journal;
use crate::server::actor;
use crate::server::assemble::{assemble, RoomParts};
use crate::server::authority::Authority;
use crate::server::deferred_journal::DeferredFileJournal;
use crate::server::error::StartError;
use crate::server::log::Logger;
use crate::server::metrics::Metrics;
use crate::server::room_server::open_file_journal;

/// A room the fleet started: its task's event channel and its end.
pub(crate) struct Started {
    pub events: async_channel::Sender<actor::Event>,
    /// Closed when the room task has stopped.
    pub done: async_channel::Receiver<()>,
    /// Set when the room stopped because another placement owns the doc.
    pub moved: Arc<std::sync::atomic::AtomicBool>,
}

/// Calls room-boot for `doc` once, giving up after `timeout` (the room table retries
/// with backoff until the boot timeout).
pub(crate) async fn call_room_boot(
    shared: &Shared,
    doc: &str,
    timeout: Duration,
) -> Result<BootGrant, BootFailure> {
    let url = shared.fleet.boot_url();
    let headers = [
        (
            String::from("content-type"),
            String::from("application/json"),
        ),
        (
            String::from("authorization"),
            boot_authorization(&shared.fleet.shell_secret),
        ),
    ];
    let body = boot_body(doc, &shared.instance);
    match http::request("POST", &url, &headers, body.as_bytes(), timeout).await {
        Ok(res) => boot_reply(&url, doc, res.status, &String::from_utf8_lossy(&res.body)),
        Err(e) => Err(BootFailure::Retryable(format!("POST {url} for {doc}: {e}"))),
    }
}

/// Removes `doc`'s journal directory after its room hibernated, when its journal holds
/// nothing (no entry, no binding): a room whose writes are all confirmed and compacted
/// leaves no directory behind. A journal with anything in it is kept.
pub(crate) fn retire_empty_journal(data_dir: &std::path::Path, doc: &str, log: &Logger) {
    let dir = data_dir.join("rooms").join(room_dir_name(doc));
    let path = dir.join("journal");
    match crate::journal::file::holds_nothing(&path) {
        Ok(true) => {
            let removed = std::fs::remove_file(&path).and_then(|()| std::fs::remove_dir(&dir));
            match removed {
                Ok(()) => log.debug(&format!(
                    "room {doc}: its journal held nothing; removed {}",
                    dir.display()
                )),
                Err(e) => log.warn(&format!(
                    "room {doc}: cannot remove its empty journal directory {}: {e}",
                    dir.display()
                )),
            }
        }
        Ok(false) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => log.warn(&format!(
            "room {doc}: cannot read its journal {} after hibernation: {e}",
            path.display()
        )),
    }
}

/// Starts `doc`'s room from its grant and waits for its start-up (the journal's flush
/// records); the room then connects upstream by itself.
pub(crate) async fn start_room(
    shared: &Arc<Shared>,
    doc: &str,
    grant: BootGrant,
) -> Result<Started, StartError> {
    let log = (shared.room_log)(doc);
    let mut config = (*shared.config).clone();
    config.downstream.doc_id = doc.to_string();
    let writes = config.writes.is_some();
    let authority: Option<Arc<dyn Authority>> = if writes && !shared.journal_only {
        let cfg = AuthorityConfig {
            apply_url: grant.flush.apply.clone(),
            claim_url: grant.flush.claim.clone(),
            lmids_url: grant.flush.lmids.clone(),
            headers: grant
                .flush
                .headers
                .iter()
                .cloned()
                .collect::<BTreeMap<_, _>>(),
        };
        let client = HttpAuthority::new(&cfg)
            .map_err(StartError::FlushEndpoints)?
            .with_pool(shared.authority_pool.clone());
        Some(Arc::new(client))
    } else {
        None
    };
    let journal: Option<Arc<dyn Journal>> = match (writes, &shared.fleet.data_dir) {
        (false, _) => None,
        (true, None) => Some(Arc::new(MemoryJournal::new())),
        (true, Some(dir)) => {
            let path = dir.join("rooms").join(room_dir_name(doc)).join("journal");
            if path.exists() {
                Some(open_file_journal(
                    &path,
                    Some(doc),
                    shared.group_sync.as_ref(),
                    &log,
                )?)
            } else {
                // No directory until the room's first write: a visitor who only reads
                // leaves nothing on disk.
                Some(Arc::new(DeferredFileJournal::for_doc(
                    &path,
                    doc,
                    shared.group_sync.clone(),
                )?))
            }
        }
    };
    let upstream: Arc<dyn crate::server::upstream::UpstreamConnector> = match &shared.upstream {
        Some(make) => make(doc),
        None => {
            let (ws_url, ws_url_setting) = match &grant.upstream_ws_endpoint {
                Some(url) => (
                    url.clone(),
                    "room-boot's `upstreamWsEndpoint` (the API server's \
                     `realtime.upstreamWsEndpoint`)",
                ),
                None => (
                    shared
                        .fleet
                        .upstream_ws_url
                        .clone()
                        .ok_or(StartError::NoUpstreamEndpoint)?,
                    "`fleet.upstream_ws_url` (room-boot named no `upstreamWsEndpoint`)",
                ),
            };
            Arc::new(FleetUpstream {
                doc: doc.to_string(),
                ws_url,
                protocols: grant
                    .upstream_affinity
                    .as_ref()
                    .map(|ticket| affinity_offer(ticket)),
                ws_url_setting,
                client_id: shared.fleet.upstream_client_id.clone(),
                frame_limit: crate::server::upstream::FrameLimit {
                    bytes: shared.fleet.upstream_max_frame_bytes,
                    setting: "fleet.upstream_max_frame_bytes",
                },
                relet: shared.relet.clone(),
                log: log.clone(),
                ticket_dropped: Arc::default(),
                ticket_refusal_logged: shared.ticket_refusal_logged.clone(),
            })
        }
    };
    let revoked = shared.revocations(shared.env.now_ms());
    let max_room_bytes = shared.fleet.max_room_bytes;
    let ack_after_flush = shared.fleet.ack == crate::config::AckMode::Flushed;
    let placement = Placement {
        epoch: grant.epoch,
        lease_token: grant.upstream_lease_token.clone(),
    };
    let scopes = grant.scopes.clone();
    let counters = shared.counters.clone();
    let room = assemble(RoomParts {
        config: Arc::new(config),
        env: shared.env.clone(),
        log: log.clone(),
        metrics: Arc::new(Metrics::adding_to(shared.counters.host.clone())),
        registry: shared.registry.clone(),
        journal,
        authority,
        upstream,
        upstream_client_id: shared.fleet.upstream_client_id.clone(),
        // The grant places the room: its epoch and lease, scopes, budgets.
        adjust: Some(Box::new(move |host_cfg| {
            if let Some(w) = host_cfg.writes.as_mut() {
                w.scopes = scopes;
                w.ack_after_flush = ack_after_flush;
            }
            host_cfg.revoked = revoked;
            host_cfg.max_room_bytes = max_room_bytes;
            host_cfg.placement = Some(placement);
        })),
        stop_listeners: async_channel::bounded::<()>(1).0,
        stranded: Some({
            let shared = shared.clone();
            Arc::new(move |list| shared.record_stranded(list))
        }),
        on_crash: Some(Arc::new(move || {
            counters
                .crashes
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })),
    })
    .await?;
    log.info(&format!("booted: placement epoch {}", grant.epoch));
    Ok(Started {
        events: room.events,
        done: room.done,
        moved: room.moved,
    })
}

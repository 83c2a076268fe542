//! The one path that assembles a room task, whichever way the room was placed: the
//! single-room server (a box of one, placed by its configuration) and every room of a
//! fleet (placed by room-boot's grant) both come here. Host settings from the
//! configuration (adjusted by the placement), the host, its registry, the room task,
//! and a panic fence around it; returns once start-up (the journal's flush records,
//! the epoch claim, the first lease) has finished.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use async_channel::{Receiver, Sender};
use rindle_room_core::host::{Host, HostConfig};

use super::actor::{self, Actor, Event, Parts, StrandedSink};
use super::authority::Authority;
use super::clock::Env;
use super::log::Logger;
use super::metrics::Metrics;
use super::upstream::UpstreamConnector;
use crate::config::Config;
use crate::journal::Journal;
use crate::mutators::Registry;
use crate::server::error::StartError;

/// A placement's changes to the host's settings (a fleet room's grant: its epoch,
/// lease, scopes and budgets); they are checked again after.
pub(crate) type Adjust = Box<dyn FnOnce(&mut HostConfig) + Send>;

/// What a room is assembled from.
pub(crate) struct RoomParts {
    /// The room's configuration (`downstream.doc_id` names its doc).
    pub config: Arc<Config>,
    pub env: Env,
    pub log: Logger,
    pub metrics: Arc<Metrics>,
    /// The host's own mutators.
    pub registry: Registry,
    pub journal: Option<Arc<dyn Journal>>,
    pub authority: Option<Arc<dyn Authority>>,
    pub upstream: Arc<dyn UpstreamConnector>,
    /// The clientID the room's upstream `init` carries.
    pub upstream_client_id: Option<String>,
    pub adjust: Option<Adjust>,
    /// Told when the room task stops, so the listeners close (single room).
    pub stop_listeners: Sender<()>,
    pub stranded: Option<StrandedSink>,
    /// Told when the room task panicked (the panic ends this room only, and is logged).
    pub on_crash: Option<Arc<dyn Fn() + Send + Sync>>,
}

/// A started room task.
pub(crate) struct AssembledRoom {
    pub events: Sender<Event>,
    /// Closed once the room task has stopped.
    pub done: Receiver<()>,
    /// Set when it stopped because another placement owns the doc.
    pub moved: Arc<AtomicBool>,
}

/// Assembles and starts a room; `Err` says why it could not start.
pub(crate) async fn assemble(parts: RoomParts) -> Result<AssembledRoom, StartError> {
    let config = &parts.config;
    let mut host_cfg = super::settings::host_config(
        config,
        parts.upstream_client_id.clone(),
        parts.authority.is_some(),
        actor::entropy(),
    )?;
    if let Some(adjust) = parts.adjust {
        adjust(&mut host_cfg);
        host_cfg
            .validate()
            .map_err(|e| StartError::Host(e.to_string()))?;
    }
    let mut host = Host::new(host_cfg).map_err(|e| StartError::Host(e.to_string()))?;
    host.set_log_level(super::log::host_log_level(&parts.log));
    let writes = config.writes.as_ref();
    let registry_config = (writes.is_some()
        && (!config.mutators.is_empty() || writes.is_some_and(|w| w.crud)))
    .then(|| parts.config.clone());
    let moved = Arc::new(AtomicBool::new(false));
    let (started_tx, started_rx) = async_channel::bounded(1);
    let (room, rx) = Actor::new(Parts {
        env: parts.env.clone(),
        log: parts.log.clone(),
        metrics: parts.metrics,
        host,
        host_registry: parts.registry,
        config: registry_config,
        journal: parts.journal,
        authority: parts.authority,
        upstream: parts.upstream,
        stop_listeners: parts.stop_listeners,
        started: started_tx,
        moved: moved.clone(),
        stranded: parts.stranded,
    });
    let events = room.sender();
    let (done_tx, done_rx) = async_channel::bounded::<()>(1);
    let log = parts.log;
    let on_crash = parts.on_crash;
    parts.env.spawn(async move {
        // A bug in one room must not take the process down: the panic ends this room
        // only (its sockets drop; a fleet boots it again from its journal on demand).
        let run = std::panic::AssertUnwindSafe(room.run(rx));
        if let Err(panic) = futures_lite::FutureExt::catch_unwind(run).await {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| String::from("a panic"));
            log.error(&format!(
                "the room crashed ({what}); its sockets are dropped"
            ));
            if let Some(on_crash) = on_crash {
                on_crash();
            }
        }
        drop(done_tx);
    });
    match started_rx.recv().await {
        Ok(Ok(())) => Ok(AssembledRoom {
            events,
            done: done_rx,
            moved,
        }),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(StartError::Stopped),
    }
}

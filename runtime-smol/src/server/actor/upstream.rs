//! The upstream leg (seed 002 `connectUpstream` … `incarnationDead`): the room is a client
//! of the daemon, and every violation kills the incarnation — no patch-up path.

use async_channel::Sender;
use rindle_room_core::contract::{parse_upstream_frame, JsonRoom, UpstreamFrame};
use rindle_room_core::{ApplyStatus, Hello, Room, UpstreamBatch};

use super::{new_boot_id, Actor, Event};
use crate::server::frames;

/// The upstream subscription's queryId.
pub(crate) const UPSTREAM_QID: f64 = 1.0;
/// Delay before re-subscribing after a violation (and the first reconnect delay).
pub(crate) const RESUBSCRIBE_DELAY_MS: u64 = 250;
/// The reconnect backoff cap.
pub(crate) const RECONNECT_MAX_MS: u64 = 5_000;

impl Actor {
    /// Opens a new upstream socket (`gen` + 1); its events come back tagged.
    pub(crate) fn connect_upstream(&mut self) {
        if self.closed() {
            return;
        }
        self.up_gen += 1;
        let gen = self.up_gen;
        self.up = None;
        let connector = self.connector.clone();
        let events = self.events.clone();
        self.env.spawn(async move {
            match connector.connect().await {
                Ok(link) => {
                    let open = Event::UpOpen {
                        gen,
                        to_upstream: link.to_upstream,
                    };
                    if events.send(open).await.is_err() {
                        return;
                    }
                    while let Ok(text) = link.from_upstream.recv().await {
                        if events.send(Event::UpFrame { gen, text }).await.is_err() {
                            return;
                        }
                    }
                    let _ = events.send(Event::UpClosed { gen, error: None }).await;
                }
                Err(e) => {
                    let _ = events
                        .send(Event::UpClosed {
                            gen,
                            error: Some(e),
                        })
                        .await;
                }
            }
        });
    }

    pub(super) fn on_up_open(&mut self, gen: u64, to_upstream: Sender<String>) {
        if gen != self.up_gen || self.closed() {
            return; // a superseded socket: dropping the sender closes it
        }
        self.reconnect_delay_ms = RESUBSCRIBE_DELAY_MS;
        let client_id = self
            .connector
            .client_id()
            .unwrap_or_else(|| format!("room-shell-{}", self.boot_id));
        let _ = to_upstream.try_send(frames::upstream_init(&client_id));
        self.up = Some((gen, to_upstream));
        self.log.info("upstream connected");
        self.send_subscribe();
    }

    pub(super) fn on_up_closed(&mut self, gen: u64, error: Option<String>) {
        if gen != self.up_gen || self.closed() {
            return;
        }
        if let Some(e) = error {
            self.log.warn(&format!("upstream socket error: {e}"));
        }
        self.up = None;
        // A subscribe may have died with the socket: the fresh one must send its own.
        self.subscribe_in_flight = false;
        self.incarnation_dead("upstream socket closed");
        let delay = self.reconnect_delay_ms;
        self.reconnect_delay_ms = (delay * 2).min(RECONNECT_MAX_MS);
        self.log.info(&format!("upstream reconnect in {delay}ms"));
        self.timers.reconnect = Some(self.env.now_ms() + delay);
    }

    /// (Re-)sends the upstream subscribe on the open socket (the daemon treats a re-send
    /// as gap recovery: new epoch, new snapshot).
    pub(crate) fn send_subscribe(&mut self) {
        if self.closed() || self.subscribe_in_flight {
            return;
        }
        let Some((_, tx)) = &self.up else {
            return; // the reconnect path re-enters
        };
        if tx.is_closed() {
            return;
        }
        self.subscribe_in_flight = true;
        let frame = frames::upstream_subscribe(UPSTREAM_QID as u64, &self.lease_token);
        let _ = tx.try_send(frame);
    }

    /// Handles one upstream frame (also re-entered for a failed re-mint). The core
    /// parses the whole frame once; a batch goes straight to the room.
    pub(crate) fn on_upstream_frame(&mut self, text: &str) {
        let room = self.room.as_ref().map(JsonRoom::room);
        let frame = match parse_upstream_frame(text, UPSTREAM_QID, room) {
            Ok(Some(frame)) => frame,
            Ok(None) => return, // another queryId
            Err(_) => {
                // Not even a JSON object: the transport is garbage.
                self.violation("upstream frame is not JSON");
                return;
            }
        };
        match frame {
            UpstreamFrame::Hello { hello, boot_id } => self.on_upstream_hello(hello, boot_id),
            UpstreamFrame::Batch(batch) => self.on_upstream_batch(batch),
            UpstreamFrame::Progress { cv_min } => self.on_upstream_progress(cv_min),
            UpstreamFrame::QueryError { message } => self.on_upstream_query_error(message, text),
            UpstreamFrame::Other => {}
        }
    }

    fn on_upstream_hello(
        &mut self,
        hello: Result<Hello, rindle_room_core::Error>,
        boot: Option<String>,
    ) {
        self.subscribe_in_flight = false;
        // A changed daemon boot resets the absorbed-cv watermark: an advert must never
        // pair an old cv with a new boot.
        if boot != self.upstream_boot {
            self.upstream_boot = boot;
            self.upstream_cv_min = None;
        }
        if self.room.is_some() {
            self.incarnation_dead("superseded by a new upstream hello");
        }
        match hello.and_then(|h| Room::open(h, self.settings.idle_ttl_ms)) {
            Ok(room) => {
                self.log
                    .info(&format!("upstream hello: epoch {}", room.epoch()));
                self.room = Some(JsonRoom::from_room(room));
                self.metrics.inc(&self.metrics.incarnations);
            }
            Err(e) => self.violation(&format!("upstream hello rejected: {e}")),
        }
    }

    fn on_upstream_batch(&mut self, batch: Result<UpstreamBatch, rindle_room_core::Error>) {
        let Some(room) = self.room.as_mut() else {
            return; // pre-hello or post-death stragglers
        };
        let applied = batch.and_then(|b| room.room_mut().apply(&b));
        let cv = rindle_room_core::contract::render_opt_f64(room.cv());
        match applied {
            Err(e) => self.violation(&format!("upstream apply failed: {e}")),
            Ok(ApplyStatus::Snapshot { rows }) => {
                self.log
                    .info(&format!("upstream snapshot: {rows} rows @ cv {cv}"));
                self.finish_boot();
            }
            Ok(ApplyStatus::Live { .. }) => self.drain_downstream(),
            Ok(ApplyStatus::StaleEpoch { .. }) => {
                self.log.debug("dropped stale-epoch upstream frame");
            }
            Ok(ApplyStatus::Duplicate) => {}
        }
    }

    fn on_upstream_progress(&mut self, cv_min: Option<f64>) {
        // The daemon's release point is the provable absorption statement: record it and
        // re-advertise to every subscribed connection, even with no data flowing.
        let Some(cv) = cv_min else {
            return;
        };
        if cv > self.upstream_cv_min.unwrap_or(-1.0) {
            self.upstream_cv_min = Some(cv);
            let conns: std::collections::BTreeSet<u64> =
                self.subs.values().map(|m| m.conn).collect();
            for conn in conns {
                self.send_progress(conn);
            }
        }
    }

    fn on_upstream_query_error(&mut self, message: String, text: &str) {
        // The lease died (expiry, dematerialize, daemon restart): re-mint, re-subscribe.
        self.subscribe_in_flight = false;
        self.incarnation_dead(&format!("upstream queryError: {message}"));
        if self.minting {
            return;
        }
        self.minting = true;
        self.remint_frame = Some(text.to_string());
        let connector = self.connector.clone();
        let events = self.events.clone();
        self.env.spawn(async move {
            let result = connector.mint_lease().await;
            let _ = events.send(Event::LeaseMinted { result }).await;
        });
    }

    pub(super) fn on_lease_minted(&mut self, result: Result<String, String>) {
        self.minting = false;
        match result {
            Ok(token) => {
                self.lease_token = token;
                self.remint_frame = None;
                self.schedule_resubscribe();
            }
            Err(e) => {
                self.log.warn(&format!("lease re-mint failed: {e}"));
                // The socket is still up: retry the whole path after a beat.
                self.timers.remint = Some(self.env.now_ms() + RECONNECT_MAX_MS);
            }
        }
    }

    fn schedule_resubscribe(&mut self) {
        let at = self.env.now_ms() + RESUBSCRIBE_DELAY_MS;
        self.timers.resubscribe = Some(self.timers.resubscribe.map_or(at, |t| t.min(at)));
    }

    /// A violation: kill the incarnation and re-subscribe after a beat.
    pub(crate) fn violation(&mut self, reason: &str) {
        self.incarnation_dead(reason);
        self.schedule_resubscribe();
    }

    /// Kills the incarnation: frees the store, rotates the bootId, closes every
    /// subscribed socket with 1012, drops queued work (the journal outlives it).
    pub(crate) fn incarnation_dead(&mut self, reason: &str) {
        self.log.warn(&format!("incarnation dead: {reason}"));
        if self.room.is_some() || self.live {
            self.metrics.inc(&self.metrics.incarnation_deaths);
        }
        self.room = None;
        self.live = false;
        self.incarnation += 1;
        self.shared
            .incarnation
            .store(self.incarnation, std::sync::atomic::Ordering::SeqCst);
        self.boot_id = new_boot_id();
        let conns: std::collections::BTreeSet<u64> = self.subs.values().map(|m| m.conn).collect();
        for id in conns {
            if let Some(c) = self.conns.get_mut(&id) {
                c.out.close(1012, "room re-subscribing");
            }
        }
        self.subs.clear();
        self.pending_subs.clear();
        self.pending_mutes.clear();
        self.unacked.clear();
        self.outcomes.clear();
        self.ack_queue.clear();
        self.timers.group_commit = None;
        // An in-flight flush keeps running (its batch is journaled and epoch-bound); the
        // incarnation number keeps its outcome off the next incarnation's state.
        self.timers.flush = None;
        self.poll_drains();
    }
}

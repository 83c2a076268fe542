//! The upstream leg (the Node shell's `connectUpstream` … `incarnationDead` in the
//! published room): the room is a
//! client of the daemon, and every violation kills the incarnation — no patch-up path.

use alloc::format;
use alloc::string::String;

use super::wire::{decode_upstream, UpstreamFrame, UPSTREAM_QID};
use super::{frames, Driver, Host, Level, Output, Phase};
use crate::contract::JsonRoom;
use crate::{ApplyStatus, Hello, Room, UpstreamBatch};

/// Delay before re-subscribing after a violation (and the first reconnect delay).
pub(crate) const RESUBSCRIBE_DELAY_MS: u64 = 250;
/// The longest wait before re-subscribing after snapshots past the memory budget.
pub(crate) const BUDGET_RETRY_MAX_MS: u64 = 60_000;
/// The reconnect backoff cap (and the lease re-mint retry delay).
pub(crate) const RECONNECT_MAX_MS: u64 = 5_000;

/// The upstream leg's state.
#[derive(Debug)]
pub(super) struct Upstream {
    /// The current link's number (each open supersedes the one before).
    pub(super) link: u64,
    /// Whether the current link is open.
    pub(super) link_open: bool,
    /// The footprint lease the subscribe presents.
    pub(super) lease_token: String,
    /// A subscribe was sent and its hello has not come back.
    pub(super) subscribe_in_flight: bool,
    /// The next reconnect's delay (doubles up to [`RECONNECT_MAX_MS`]).
    pub(super) reconnect_delay_ms: u64,
    /// Snapshots in a row that passed the room's memory budget (their re-subscribes
    /// back off).
    pub(super) budget_strikes: u32,
    /// The daemon's boot id, from its last hello.
    pub(super) daemon_boot: Option<String>,
    /// The daemon's absorbed-cv watermark (`progress.cvMin`) under that boot.
    pub(super) cv_min: Option<f64>,
    /// The upstream `queryError` frame to re-handle when a re-mint failed.
    pub(super) remint_frame: Option<String>,
    /// A lease re-mint is under way.
    pub(super) minting: bool,
    /// When the current link last showed it is alive (`liveness.rs`).
    pub(super) heard_at: u64,
    /// The current link was pinged since.
    pub(super) pinged: bool,
}

impl Default for Upstream {
    fn default() -> Upstream {
        Upstream {
            link: 0,
            link_open: false,
            lease_token: String::new(),
            subscribe_in_flight: false,
            reconnect_delay_ms: RESUBSCRIBE_DELAY_MS,
            budget_strikes: 0,
            daemon_boot: None,
            cv_min: None,
            remint_frame: None,
            minting: false,
            heard_at: 0,
            pinged: false,
        }
    }
}

impl Host {
    /// Opens a new upstream link (the old one, if any, is superseded).
    pub(super) fn connect_upstream(&mut self) {
        if self.closed() {
            return;
        }
        self.up.link += 1;
        self.up.link_open = false;
        let link = self.up.link;
        self.push(Output::OpenUpstream { link });
    }

    pub(super) fn on_up_open(&mut self, link: u64) {
        if link != self.up.link || self.closed() {
            return; // a superseded link: the driver already dropped it
        }
        self.up.link_open = true;
        self.upstream_heard();
        self.up.reconnect_delay_ms = RESUBSCRIBE_DELAY_MS;
        let client_id = match &self.cfg.upstream_client_id {
            Some(c) => c.clone(),
            None => format!("room-shell-{}", self.inc.boot_id),
        };
        self.push(Output::UpstreamSend {
            link,
            text: frames::upstream_init(&client_id),
        });
        self.log(Level::Info, String::from("upstream connected"));
        self.send_subscribe();
    }

    pub(super) fn on_up_closed(&mut self, link: u64, error: Option<&str>) {
        if link != self.up.link || self.closed() {
            return;
        }
        if !self.up.link_open && self.timers.reconnect.is_some() {
            return; // already taken as closed (it fell silent): the reconnect is due
        }
        if let Some(e) = error {
            self.log(Level::Warn, format!("upstream socket error: {e}"));
        }
        self.upstream_lost();
    }

    /// The current link is gone (closed, or taken as dead): the incarnation ends, and
    /// the reconnect follows after the backoff.
    pub(super) fn upstream_lost(&mut self) {
        self.up.link_open = false;
        self.timers.up_silence = None;
        // A subscribe may have died with the socket: the fresh one must send its own.
        self.up.subscribe_in_flight = false;
        self.incarnation_dead("upstream socket closed");
        let delay = self.up.reconnect_delay_ms;
        self.up.reconnect_delay_ms = (delay * 2).min(RECONNECT_MAX_MS);
        self.log(Level::Info, format!("upstream reconnect in {delay}ms"));
        self.timers.reconnect = Some(self.now + delay);
    }

    /// (Re-)sends the upstream subscribe on the open link (the daemon treats a re-send
    /// as gap recovery: new epoch, new snapshot).
    pub(super) fn send_subscribe(&mut self) {
        if self.closed() || self.up.subscribe_in_flight || !self.up.link_open {
            return; // without a link, the reconnect path re-enters
        }
        self.up.subscribe_in_flight = true;
        let text = frames::upstream_subscribe(UPSTREAM_QID as u64, &self.up.lease_token);
        let link = self.up.link;
        self.push(Output::UpstreamSend { link, text });
    }

    /// Handles one upstream frame (also re-entered for a failed re-mint). The core
    /// parses the whole frame once; a batch goes straight to the room.
    pub(super) fn on_upstream_frame(&mut self, text: &str, driver: &mut dyn Driver) {
        let room = self.inc.room.as_ref().map(JsonRoom::room);
        let frame = match decode_upstream(text, room) {
            Ok(Some(frame)) => frame,
            Ok(None) => return, // another queryId
            // Not even a JSON object: the transport is garbage.
            Err(garbage) => return self.violation(garbage.message()),
        };
        match frame {
            UpstreamFrame::Hello { hello, boot_id } => self.on_upstream_hello(hello, boot_id),
            UpstreamFrame::Batch(batch) => self.on_upstream_batch(batch, driver),
            UpstreamFrame::Progress { cv_min } => self.on_upstream_progress(cv_min, driver),
            UpstreamFrame::QueryError { message } => self.on_upstream_query_error(message, text),
            UpstreamFrame::Other => {}
        }
    }

    fn on_upstream_hello(&mut self, hello: Result<Hello, crate::Error>, boot: Option<String>) {
        self.up.subscribe_in_flight = false;
        // A changed daemon boot resets the absorbed-cv watermark: an advert must never
        // pair an old cv with a new boot.
        if boot != self.up.daemon_boot {
            self.up.daemon_boot = boot;
            self.up.cv_min = None;
        }
        if self.inc.room.is_some() {
            self.incarnation_dead("superseded by a new upstream hello");
        }
        match hello.and_then(|h| Room::open(h, self.cfg.idle_ttl_ms)) {
            Ok(room) => {
                self.log(
                    Level::Info,
                    format!("upstream hello: epoch {}", room.epoch()),
                );
                self.inc.room = Some(JsonRoom::from_room(room));
                self.counters.incarnations += 1;
            }
            Err(e) => self.violation(&format!("upstream hello rejected: {e}")),
        }
    }

    fn on_upstream_batch(
        &mut self,
        batch: Result<UpstreamBatch, crate::Error>,
        driver: &mut dyn Driver,
    ) {
        let Some(room) = self.inc.room.as_mut() else {
            return; // pre-hello or post-death stragglers
        };
        let applied = batch.and_then(|b| room.room_mut().apply(&b));
        let cv = crate::contract::render_opt_f64(room.cv());
        // Only a snapshot is measured: the walk visits every row.
        let snapshot = matches!(applied, Ok(ApplyStatus::Snapshot { .. }));
        let over_budget = self
            .cfg
            .max_room_bytes
            .filter(|_| snapshot)
            .and_then(|budget| {
                let retained = room.room().retained_bytes() as u64;
                (retained > budget).then_some((retained, budget))
            });
        match applied {
            Err(e) => self.violation(&format!("upstream apply failed: {e}")),
            Ok(ApplyStatus::Snapshot { rows }) => {
                self.log(
                    Level::Info,
                    format!("upstream snapshot: {rows} rows @ cv {cv}"),
                );
                if let Some((retained, budget)) = over_budget {
                    // The same snapshot will not shrink by itself: back off (each
                    // re-subscribe costs the daemon a whole snapshot), up to a minute.
                    self.up.budget_strikes = self.up.budget_strikes.saturating_add(1);
                    let delay = (RESUBSCRIBE_DELAY_MS << self.up.budget_strikes.min(8))
                        .min(BUDGET_RETRY_MAX_MS);
                    self.incarnation_dead(&format!(
                        "room memory budget exceeded by the upstream snapshot alone: \
                         {retained} bytes retained, budget {budget} (raise the room budget, \
                         or narrow the document's footprint); re-subscribing in {delay} ms"
                    ));
                    self.timers.resubscribe = Some(self.now + delay);
                    return;
                }
                self.up.budget_strikes = 0;
                self.finish_boot(driver);
            }
            Ok(ApplyStatus::Live { .. }) => {
                self.drain_downstream(driver);
                if self.echo_wait.len() > 0 {
                    self.confirm_echoed();
                }
            }
            Ok(ApplyStatus::StaleEpoch { .. }) => {
                self.log(
                    Level::Debug,
                    String::from("dropped stale-epoch upstream frame"),
                );
            }
            Ok(ApplyStatus::Duplicate) => {}
        }
    }

    fn on_upstream_progress(&mut self, cv_min: Option<f64>, driver: &dyn Driver) {
        // The daemon's release point is the provable absorption statement: record it and
        // re-advertise to every subscribed connection, even with no data flowing.
        let Some(cv) = cv_min else {
            return;
        };
        if cv > self.up.cv_min.unwrap_or(-1.0) {
            self.up.cv_min = Some(cv);
            let conns: alloc::collections::BTreeSet<u64> =
                self.down.subs.values().map(|m| m.conn).collect();
            for conn in conns {
                self.send_progress(conn, driver);
            }
        }
    }

    fn on_upstream_query_error(&mut self, message: String, text: &str) {
        // The lease died (expiry, dematerialize, daemon restart): re-mint, re-subscribe.
        self.up.subscribe_in_flight = false;
        self.incarnation_dead(&format!("upstream queryError: {message}"));
        if self.up.minting {
            return;
        }
        self.up.minting = true;
        self.up.remint_frame = Some(String::from(text));
        self.push(Output::MintLease);
    }

    pub(super) fn on_lease_minted(
        &mut self,
        result: Result<String, super::MintError>,
        _: &mut dyn Driver,
    ) {
        if self.phase == Phase::Starting {
            return self.on_start_lease(result);
        }
        self.up.minting = false;
        match result {
            Ok(token) => {
                self.up.lease_token = token;
                self.up.remint_frame = None;
                self.schedule_resubscribe();
            }
            Err(e) => {
                self.log(Level::Warn, format!("lease re-mint failed: {e}"));
                // The link is still up: retry the whole path after a beat.
                self.timers.remint = Some(self.now + RECONNECT_MAX_MS);
            }
        }
    }

    fn schedule_resubscribe(&mut self) {
        let at = self.now + RESUBSCRIBE_DELAY_MS;
        self.timers.resubscribe = Some(self.timers.resubscribe.map_or(at, |t| t.min(at)));
    }

    /// A violation: kill the incarnation and re-subscribe after a beat.
    pub(super) fn violation(&mut self, reason: &str) {
        self.incarnation_dead(reason);
        self.schedule_resubscribe();
    }

    /// Kills the incarnation: frees the store, rotates the bootId, closes every
    /// subscribed socket with 1012, drops queued work (the journal outlives it).
    pub(super) fn incarnation_dead(&mut self, reason: &str) {
        self.log(Level::Warn, format!("incarnation dead: {reason}"));
        if self.inc.room.is_some() || self.inc.live {
            self.counters.incarnation_deaths += 1;
        }
        self.inc.room = None;
        self.inc.live = false;
        self.inc.number += 1;
        self.boot.io = None;
        self.inc.next_boot_id(&self.cfg.entropy);
        // Subscribed sockets, and those whose frames wait for the snapshot: each
        // re-sends after reconnecting (nothing they sent is answered otherwise).
        let conns: alloc::collections::BTreeSet<u64> = self
            .down
            .subs
            .values()
            .map(|m| m.conn)
            .chain(self.down.pending_subs.iter().map(|(id, _)| *id))
            .chain(self.writes.pending_mutes.iter().map(|(id, _)| *id))
            .collect();
        for id in conns {
            self.close_conn(id, 1012, "room re-subscribing", false);
        }
        self.drop_fetches();
        self.down.subs.clear();
        self.down.pending_subs.clear();
        self.writes.pending_mutes.clear();
        for c in self.down.conns.values_mut() {
            c.held_subs = 0;
            c.held_mutes = 0;
        }
        self.writes.unacked.clear();
        // `unconfirmed` stays until the next incarnation's replay lists them again: a
        // flush of this one still in flight may be fenced before that, and the room
        // then owes its authors the stranded report.
        self.writes.outcomes.clear();
        self.writes.ack_queue.clear();
        self.timers.group_commit = None;
        // An in-flight flush keeps running (its batch is journaled and epoch-bound); the
        // incarnation number keeps its outcome off the next incarnation's state.
        self.timers.flush = None;
        self.poll_drains();
    }
}

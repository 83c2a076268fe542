//! Requests from the control plane and the embedder's [`RoomServer`](crate::server::RoomServer)
//! handle, answered on one-shot channels.

use async_channel::Sender;
use rindle_room_core::json::write::write_i64;

use super::Actor;
use crate::server::metrics::Gauges;

/// A request to the room task.
#[derive(Debug)]
pub(crate) enum Control {
    /// `GET /stats`: the seed's fields as JSON text.
    Stats(Sender<String>),
    /// `GET /metrics`: Prometheus text.
    Metrics(Sender<String>),
    /// `GET /healthz`: whether the incarnation is live.
    Health(Sender<bool>),
    /// `POST /revoke {userId}`: how many subscriptions were dropped.
    Revoke { user: String, reply: Sender<u64> },
    /// `POST /drain`: the last committed flush seq, once quiescent.
    Drain(Sender<Result<u64, String>>),
    /// Fire the flush now; answered once it settled.
    FlushNow(Sender<()>),
    /// Answered once the current incarnation is live.
    AwaitLive(Sender<()>),
    /// The current incarnation's bootId.
    BootId(Sender<String>),
    /// Stop accepting, drain, close every socket with 1001, stop.
    Shutdown(Sender<()>),
    /// Stop at once, like a crash: no journaling of the group commit, no drain, no close
    /// frames (sockets are dropped).
    Abort(Sender<()>),
}

/// How long a shutdown waits for its drain before closing anyway (the journal keeps
/// whatever was not flushed; the next boot settles it).
pub(crate) const SHUTDOWN_DRAIN_MS: u64 = 10_000;

impl Actor {
    pub(super) fn on_control(&mut self, c: Control) {
        match c {
            Control::Stats(reply) => {
                let _ = reply.try_send(self.stats_json());
            }
            Control::Metrics(reply) => {
                let _ = reply.try_send(self.metrics.render(&self.gauges()));
            }
            Control::Health(reply) => {
                let _ = reply.try_send(self.live && !self.closed());
            }
            Control::Revoke { user, reply } => {
                let n = self.revoke_user(&user);
                let _ = reply.try_send(n);
            }
            Control::Drain(reply) => self.start_drain(Some(reply), false),
            Control::FlushNow(reply) => self.flush_now(reply),
            Control::AwaitLive(reply) => {
                if self.live {
                    let _ = reply.try_send(());
                } else {
                    self.live_waiters.push(reply);
                }
            }
            Control::BootId(reply) => {
                let _ = reply.try_send(self.boot_id.clone());
            }
            Control::Shutdown(reply) => {
                if self.stopped {
                    let _ = reply.try_send(());
                    return;
                }
                self.log.info("shutting down: no new connections, draining");
                self.shutdown_reply = Some(reply);
                self.stop_listeners = None;
                self.timers.shutdown = Some(self.env.now_ms() + SHUTDOWN_DRAIN_MS);
                // Journal what the group commit holds, so its mutations survive.
                self.flush_journal();
                self.start_drain(None, true);
            }
            Control::Abort(reply) => {
                self.log.warn("aborted: sockets dropped, nothing drained");
                self.shared
                    .closed
                    .store(true, std::sync::atomic::Ordering::SeqCst);
                for c in self.conns.values_mut() {
                    c.out.terminate();
                }
                self.up = None;
                self.stop_listeners = None;
                self.stopped = true;
                let _ = reply.try_send(());
            }
        }
    }

    /// The shutdown drain ran out of time: close anyway.
    pub(super) fn shutdown_deadline_passed(&mut self) {
        if self.shutdown_reply.is_none() {
            return;
        }
        self.log.warn(&format!(
            "shutdown: the drain did not finish within {SHUTDOWN_DRAIN_MS} ms; closing anyway \
             (the journal keeps what was not flushed; the next boot settles it)"
        ));
        self.drains.retain(|d| !d.shutdown);
        self.finish_shutdown();
    }

    fn gauges(&self) -> Gauges {
        let room = self.room.as_ref().map(|r| r.room());
        Gauges {
            live: self.live,
            connections: self.conns.len(),
            subscriptions: self.subs.len(),
            materializations: room.map_or(0, |r| r.materialization_count()),
            pending_mutations: room.map_or(0, |r| r.pending_len()),
            dirty_keys: room.map_or(0, |r| r.dirty_len()),
            head_cv: room.map_or(0, |r| r.head_cv()),
            placement_epoch: self.placement_epoch,
        }
    }

    /// The seed's `/stats` object, in its member order.
    fn stats_json(&self) -> String {
        let g = self.gauges();
        let mut s = String::from("{\"live\":");
        s.push_str(if g.live { "true" } else { "false" });
        let num = |s: &mut String, key: &str, v: u64| {
            s.push_str(",\"");
            s.push_str(key);
            s.push_str("\":");
            write_i64(s, v as i64);
        };
        num(&mut s, "connections", g.connections as u64);
        num(&mut s, "subscriptions", g.subscriptions as u64);
        num(&mut s, "materializations", g.materializations as u64);
        num(&mut s, "pendingMutations", g.pending_mutations as u64);
        num(&mut s, "dirtyKeys", g.dirty_keys as u64);
        num(&mut s, "placementEpoch", g.placement_epoch);
        num(&mut s, "flushesConfirmed", self.flushes_confirmed);
        s.push_str(",\"flushInFlight\":");
        s.push_str(if self.flush_busy { "true" } else { "false" });
        s.push('}');
        s
    }
}

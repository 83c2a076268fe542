//! Requests from the control plane and the embedder's [`RoomServer`] handle: the
//! host's requests are forwarded to it and answered when it replies; the rest (the
//! metrics page, waiting for live, the bootId) are answered here.
//!
//! [`RoomServer`]: crate::server::RoomServer

use async_channel::Sender;
use rindle_room_core::host::{ControlRequest, Input};

use super::{Actor, Waiter};
use crate::server::error::DrainError;
use crate::server::metrics::Gauges;

/// A request to the room task.
#[derive(Debug)]
pub(crate) enum Control {
    /// `GET /stats`: the published shell's fields as JSON text.
    Stats(Sender<String>),
    /// `GET /metrics`: Prometheus text.
    Metrics(Sender<String>),
    /// `GET /healthz`: whether the room runs (answered until it stops).
    Health(Sender<bool>),
    /// `GET /readyz`: whether the incarnation is live and the room not shutting down.
    Ready(Sender<bool>),
    /// `POST /revoke {userId}`: how many subscriptions were dropped.
    Revoke { user: String, reply: Sender<u64> },
    /// `POST /drain`: the last committed flush seq, once quiescent.
    Drain(Sender<Result<u64, DrainError>>),
    /// Fire the flush now; answered once it settled.
    FlushNow(Sender<()>),
    /// Answered once the current incarnation is live.
    AwaitLive(Sender<()>),
    /// The current incarnation's bootId.
    BootId(Sender<String>),
    /// The bytes the room retains (`Room::retained_bytes`; 0 before the first hello)
    /// and how many subscribes its budget refused.
    Memory(Sender<(u64, u64)>),
    /// Stop accepting, drain, close every socket with 1001, stop.
    Shutdown(Sender<()>),
    /// Stop at once, like a crash: no journaling of the group commit, no drain, no close
    /// frames (sockets are dropped).
    Abort(Sender<()>),
}

impl Actor {
    pub(super) fn on_control(&mut self, c: Control) {
        let (request, waiter) = match c {
            Control::Metrics(reply) => {
                let text = self.metrics.render(&self.gauges());
                let _ = reply.try_send(text);
                return;
            }
            Control::AwaitLive(reply) => {
                if self.host.is_live() {
                    let _ = reply.try_send(());
                } else {
                    self.live_waiters.push(reply);
                }
                return;
            }
            Control::BootId(reply) => {
                let _ = reply.try_send(self.host.boot_id().to_string());
                return;
            }
            Control::Memory(reply) => {
                let bytes = self.host.room().map_or(0, |r| r.retained_bytes() as u64);
                let _ = reply.try_send((bytes, self.host.counters().budget_refusals));
                return;
            }
            Control::Stats(r) => (ControlRequest::Stats, Waiter::Stats(r)),
            Control::Health(r) => (ControlRequest::Health, Waiter::Health(r)),
            Control::Ready(r) => (ControlRequest::Ready, Waiter::Health(r)),
            Control::Revoke { user, reply } => {
                (ControlRequest::Revoke { user }, Waiter::Revoke(reply))
            }
            Control::Drain(r) => (ControlRequest::Drain, Waiter::Drain(r)),
            Control::FlushNow(r) => (ControlRequest::FlushNow, Waiter::Unit(r)),
            Control::Shutdown(r) => (ControlRequest::Shutdown, Waiter::Unit(r)),
            Control::Abort(r) => (ControlRequest::Abort, Waiter::Unit(r)),
        };
        if self.host.is_stopped() {
            // Stopped: a unit waiter is answered (the caller waits for the stop), the
            // others see the room closed (their sender is dropped).
            if let Waiter::Unit(tx) = waiter {
                let _ = tx.try_send(());
            }
            return;
        }
        let id = self.next_request;
        self.next_request += 1;
        self.waiters.insert(id, waiter);
        self.input(Input::Control { id, request });
    }

    pub(super) fn gauges(&self) -> Gauges {
        self.host.gauges()
    }
}

//! Silent links: a websocket whose peer vanished without a FIN or RST (a partition, a
//! host that lost power, a NAT or proxy that forgot the connection) looks open forever
//! to the side that waits for it. The host takes a link that has shown nothing for its
//! silence timeout as dead:
//!
//! - **Upstream** (`upstream_silence_timeout_ms`): a room whose daemon went silent
//!   serves a stale base to every client and never learns it. After a third of the
//!   timeout without a frame, a pong or the bytes of a frame still arriving, the host
//!   pings the daemon ([`Output::PingUpstream`]); past the timeout it closes the link
//!   and handles it as a drop: the incarnation ends, and the reconnect follows.
//! - **Downstream** (`silence_timeout_ms`): a client gone dark holds its socket, its
//!   subscriptions and their materializations. The sweep pings a socket silent for a
//!   third of the timeout ([`Output::Ping`]); past it the socket is closed with 1011
//!   (its queued frames discarded) and dropped after the close grace.
//!
//! Any frame counts as hearing from the peer; drivers report pongs, pings and bytes of
//! an unfinished frame as [`Input::UpstreamHeard`] / [`Input::ConnHeard`]. Browsers,
//! Node's `ws` and tungstenite answer pings by themselves, so no client change is
//! needed.

use alloc::format;
use alloc::vec::Vec;

use super::{ConnId, Host, Level, Output};

/// The share of the silence timeout after which the silent peer is pinged.
const PING_AFTER_DIVISOR: u64 = 3;

/// The most often a driver reports bytes of an unfinished upstream frame as
/// [`Input::UpstreamHeard`](super::Input::UpstreamHeard), ms: often enough for any
/// silence timeout of seconds, rare enough to cost nothing.
pub const HEARD_EVERY_MS: u64 = 1_000;

impl Host {
    /// The current upstream link showed it is alive.
    pub(super) fn upstream_heard(&mut self) {
        self.up.heard_at = self.now;
        self.up.pinged = false;
        self.schedule_upstream_silence();
    }

    /// Sets the upstream silence deadline: the ping, or (once pinged) the timeout.
    fn schedule_upstream_silence(&mut self) {
        let timeout = self.cfg.upstream_silence_timeout_ms;
        self.timers.up_silence = if timeout == 0 || !self.up.link_open || self.closed() {
            None
        } else if self.up.pinged {
            Some((self.up.heard_at + timeout).max(self.now + 1))
        } else {
            Some((self.up.heard_at + (timeout / PING_AFTER_DIVISOR).max(1)).max(self.now + 1))
        };
    }

    /// The upstream silence deadline came: ping, or take the link as dead.
    pub(super) fn check_upstream_silence(&mut self) {
        let timeout = self.cfg.upstream_silence_timeout_ms;
        if timeout == 0 || !self.up.link_open || self.closed() {
            return;
        }
        let silent = self.now.saturating_sub(self.up.heard_at);
        if silent >= timeout {
            self.counters.upstream_silences += 1;
            self.log(
                Level::Warn,
                format!(
                    "upstream silent for {silent} ms (upstream.silence_timeout_ms = \
                     {timeout}): closing the link and reconnecting"
                ),
            );
            self.push(Output::CloseUpstream);
            self.upstream_lost();
            return;
        }
        if !self.up.pinged && silent >= timeout / PING_AFTER_DIVISOR {
            self.up.pinged = true;
            let link = self.up.link;
            self.push(Output::PingUpstream { link });
        }
        self.schedule_upstream_silence();
    }

    /// Connection `id` showed it is alive.
    pub(super) fn conn_heard(&mut self, id: ConnId) {
        if let Some(c) = self.down.conns.get_mut(&id) {
            c.heard_at = self.now;
            c.pinged = false;
        }
    }

    /// Pings the sockets silent for a third of the timeout and closes those silent
    /// past it (run by the sweep).
    pub(super) fn check_silent_sockets(&mut self, now: u64) {
        let timeout = self.cfg.silence_timeout_ms;
        if timeout == 0 {
            return;
        }
        let ping_after = timeout / PING_AFTER_DIVISOR;
        let mut dead: Vec<(ConnId, u64)> = Vec::new();
        let mut ping: Vec<ConnId> = Vec::new();
        for (&id, c) in self.down.conns.iter_mut() {
            if c.closing {
                continue;
            }
            let silent = now.saturating_sub(c.heard_at);
            if silent >= timeout {
                dead.push((id, silent));
            } else if !c.pinged && silent >= ping_after {
                c.pinged = true;
                ping.push(id);
            }
        }
        for conn in ping {
            self.push(Output::Ping { conn });
        }
        for (id, silent) in dead {
            self.counters.silent_sockets += 1;
            let reason = format!("silent for {silent} ms (downstream.silence_timeout_ms)");
            self.log(Level::Info, format!("conn {id}: {reason}: closing"));
            self.close_conn(id, 1011, &reason, true);
        }
    }
}

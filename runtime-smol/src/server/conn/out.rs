//! The room task's handle on one connection's outbound side, and the two backlogs it
//! bounds.
//!
//! Frames go through a queue to the connection's writer, which takes everything queued
//! so far and hands it to the websocket. A frame the writer has taken is *in flight*:
//! the socket is writing it, so it counts against nothing — one frame of any size the
//! room must send (a 5 MiB row's snapshot) is never what cuts a socket. What a socket
//! that is not reading leaves behind in the queue is its *backlog*, in two parts:
//!
//! - **live frames** (`nbatch`es, `progress`, outcomes) against the send budget
//!   (`downstream.send_budget_bytes`, seed 002 `sendBudgeted`);
//! - **snapshots** (a subscribe's seq-0 `nbatch`) against `downstream.max_snapshot_bytes`.
//!
//! Past either, the socket is cut: its queue is dropped, a close frame (1008 and the
//! reason) goes after what is already in flight, and the connection task drops the
//! socket after the close grace whether or not the peer ever reads it. So a socket holds
//! at most `send_budget_bytes + max_snapshot_bytes` plus what is in flight.

use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use async_channel::Sender;
use smol::net::TcpStream;

/// One queued outbound item.
#[derive(Debug)]
pub(crate) enum Out {
    /// A text frame; `snapshot` = counted against the snapshot backlog.
    Text { text: String, snapshot: bool },
    /// A close frame with its code and reason (every close the server starts has both).
    Close((u16, String)),
}

/// The backlog counters one connection's writer and the room task share.
#[derive(Debug, Default)]
pub(crate) struct Backlog {
    /// Bytes of queued live frames the writer has not taken yet.
    live: AtomicUsize,
    /// Bytes of queued snapshot frames the writer has not taken yet.
    snapshot: AtomicUsize,
    /// Set when the socket was cut: the writer drops queued text frames.
    discard: AtomicBool,
}

impl Backlog {
    /// The writer took `text` off the queue.
    pub(crate) fn taken(&self, bytes: usize, snapshot: bool) {
        let counter = if snapshot { &self.snapshot } else { &self.live };
        counter.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Whether the socket was cut (queued text frames are dropped, not written).
    pub(crate) fn discarding(&self) -> bool {
        self.discard.load(Ordering::Relaxed)
    }
}

/// The room task's handle on one connection's outbound side.
#[derive(Debug)]
pub(crate) struct ConnOut {
    pub(super) tx: Sender<Out>,
    pub(super) backlog: Arc<Backlog>,
    /// Told when a close starts: the connection task then drops the socket after the
    /// close grace, read or not.
    pub(super) closing: Sender<()>,
    pub(super) tcp: Option<TcpStream>,
    pub(super) is_closing: bool,
}

/// What a send did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Queued (`bytes` long).
    Queued(usize),
    /// The socket is closing or gone: dropped, as `ws.send` on a non-open socket is.
    Dropped,
    /// A backlog cap was exceeded: the socket was cut with a 1008 close; why.
    Cut(String),
}

impl ConnOut {
    /// Whether frames are still accepted (`readyState === OPEN`).
    pub(crate) fn is_open(&self) -> bool {
        !self.is_closing && !self.tx.is_closed()
    }

    fn queue(&mut self, text: String, snapshot: bool) -> Sent {
        if !self.is_open() {
            return Sent::Dropped;
        }
        let n = text.len();
        let counter = if snapshot {
            &self.backlog.snapshot
        } else {
            &self.backlog.live
        };
        counter.fetch_add(n, Ordering::Relaxed);
        if self.tx.try_send(Out::Text { text, snapshot }).is_err() {
            counter.fetch_sub(n, Ordering::Relaxed);
            return Sent::Dropped;
        }
        Sent::Queued(n)
    }

    /// Queues a frame outside every backlog cap (seed 002 `send`): hellos, errors.
    pub(crate) fn send(&mut self, text: String) -> Sent {
        self.queue(text, false)
    }

    /// Queues a live frame unless the live backlog would pass `budget`, in which case
    /// the socket is cut (seed 002 `sendBudgeted`).
    pub(crate) fn send_budgeted(&mut self, text: String, budget: usize) -> Sent {
        if !self.is_open() {
            return Sent::Dropped;
        }
        let backlog = self.backlog.live.load(Ordering::Relaxed);
        if backlog + text.len() > budget {
            let why = format!(
                "send budget exceeded: {} bytes unread (downstream.send_budget_bytes = {budget})",
                backlog + text.len()
            );
            self.cut(&why);
            return Sent::Cut(why);
        }
        self.queue(text, false)
    }

    /// Queues a subscribe snapshot unless the snapshot backlog would pass `max`, in
    /// which case the socket is cut.
    pub(crate) fn send_snapshot(&mut self, text: String, max: usize) -> Sent {
        if !self.is_open() {
            return Sent::Dropped;
        }
        let backlog = self.backlog.snapshot.load(Ordering::Relaxed);
        if backlog > 0 && backlog + text.len() > max {
            let why = format!(
                "snapshot backlog exceeded: {} bytes unread (downstream.max_snapshot_bytes \
                 = {max})",
                backlog + text.len()
            );
            self.cut(&why);
            return Sent::Cut(why);
        }
        self.queue(text, true)
    }

    /// Cuts a socket that is not reading: drops its queue and closes with 1008.
    fn cut(&mut self, why: &str) {
        self.backlog.discard.store(true, Ordering::Relaxed);
        self.close(1008, why);
    }

    /// Starts the close handshake with `code` and `reason` after the queued frames.
    pub(crate) fn close(&mut self, code: u16, reason: &str) {
        self.close_with((code, reason.to_string()));
    }

    fn close_with(&mut self, status: (u16, String)) {
        if !self.is_open() {
            return;
        }
        self.is_closing = true;
        let _ = self.tx.try_send(Out::Close(status));
        let _ = self.closing.try_send(());
    }

    /// Drops the socket at once, without a close frame (a crash, [`RoomServer::abort`]).
    ///
    /// [`RoomServer::abort`]: crate::server::RoomServer::abort
    pub(crate) fn terminate(&mut self) {
        self.is_closing = true;
        self.tx.close();
        if let Some(tcp) = &self.tcp {
            let _ = tcp.shutdown(Shutdown::Both);
        }
    }
}

/// The longest close reason a close frame carries (RFC 6455: 125 bytes of payload,
/// 2 of them the code).
pub(crate) const MAX_CLOSE_REASON: usize = 123;

/// `reason` cut to [`MAX_CLOSE_REASON`] bytes on a character boundary.
pub(crate) fn close_reason(reason: &str) -> String {
    if reason.len() <= MAX_CLOSE_REASON {
        return reason.to_string();
    }
    let mut end = MAX_CLOSE_REASON;
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    reason[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out() -> (ConnOut, async_channel::Receiver<Out>, Arc<Backlog>) {
        let (tx, rx) = async_channel::unbounded();
        let (closing, _) = async_channel::bounded(1);
        let backlog = Arc::new(Backlog::default());
        let out = ConnOut {
            tx,
            backlog: backlog.clone(),
            closing,
            tcp: None,
            is_closing: false,
        };
        (out, rx, backlog)
    }

    #[test]
    fn a_frame_in_flight_counts_against_no_budget() {
        let (mut o, rx, backlog) = out();
        // A snapshot larger than its cap, alone: queued (the room refuses oversized
        // snapshots before it sends them; the cap here bounds what piles up).
        assert_eq!(o.send_snapshot("x".repeat(500), 100), Sent::Queued(500));
        // The writer takes it: in flight, no longer backlog.
        let Ok(Out::Text { text, snapshot }) = rx.try_recv() else {
            panic!("queued")
        };
        backlog.taken(text.len(), snapshot);
        assert_eq!(o.send_budgeted("p".repeat(40), 50), Sent::Queued(40));
        assert!(matches!(o.send_budgeted("q".repeat(20), 50), Sent::Cut(_)));
        assert!(!o.is_open());
        assert!(backlog.discarding());
    }

    #[test]
    fn the_snapshot_backlog_has_its_own_cap() {
        let (mut o, _rx, _) = out();
        assert_eq!(o.send_snapshot("a".repeat(60), 100), Sent::Queued(60));
        assert_eq!(o.send_budgeted("b".repeat(90), 100), Sent::Queued(90));
        let Sent::Cut(why) = o.send_snapshot("c".repeat(60), 100) else {
            panic!("cut")
        };
        assert!(
            why.starts_with("snapshot backlog exceeded: 120 bytes"),
            "{why}"
        );
    }

    #[test]
    fn close_reasons_fit_a_close_frame() {
        assert_eq!(close_reason("short"), "short");
        let long = "é".repeat(100);
        let cut = close_reason(&long);
        assert!(cut.len() <= MAX_CLOSE_REASON && long.starts_with(&cut));
        assert_eq!(cut.len(), 122);
    }
}

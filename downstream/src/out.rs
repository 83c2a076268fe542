//! The owner's handle on one connection's outbound side.
//!
//! Frames go through a queue to the connection's writer, which takes everything queued
//! so far and hands it to the websocket. A frame the writer has taken is *in flight*;
//! what still waits in the queue is the socket's *backlog*, counted per class (live
//! frames, snapshots) for the host, which judges every frame against the caps of
//! docs/security.md before it is queued here ([`rindle_room_core::host`]). A socket the
//! host cuts is closed with `discard`: the writer drops its queue and sends the close
//! frame after what is in flight; the connection task drops the socket after the close
//! grace whether or not the peer ever reads it.

use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use async_channel::Sender;
use rindle_room_core::host::{Backlog as HostBacklog, SendClass};
use smol::net::TcpStream;

/// One queued outbound item.
#[derive(Debug)]
pub(crate) enum Out {
    /// A text frame; `snapshot` = counted against the snapshot backlog.
    Text { text: String, snapshot: bool },
    /// A close frame with its code and reason (every close the server starts has both).
    Close((u16, String)),
}

/// The backlog counters one connection's writer and the owner share.
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

/// The owner's handle on one connection's outbound side.
#[derive(Debug)]
pub struct ConnOut {
    pub(crate) tx: Sender<Out>,
    pub(crate) backlog: Arc<Backlog>,
    /// Told when a close starts: the connection task then drops the socket after the
    /// close grace, read or not.
    pub(crate) closing: Sender<()>,
    pub(crate) tcp: Option<TcpStream>,
    pub(crate) is_closing: bool,
}

impl ConnOut {
    /// Whether frames are still accepted (`readyState === OPEN`).
    pub fn is_open(&self) -> bool {
        !self.is_closing && !self.tx.is_closed()
    }

    /// Queues a frame of `class` (the host already judged it against the caps).
    pub fn send(&mut self, text: String, class: SendClass) {
        if !self.is_open() {
            return;
        }
        let n = text.len();
        let snapshot = class == SendClass::Snapshot;
        let counter = if snapshot {
            &self.backlog.snapshot
        } else {
            &self.backlog.live
        };
        counter.fetch_add(n, Ordering::Relaxed);
        if self.tx.try_send(Out::Text { text, snapshot }).is_err() {
            counter.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// The bytes queued that the writer has not taken yet.
    pub fn backlog(&self) -> HostBacklog {
        HostBacklog {
            live: self.backlog.live.load(Ordering::Relaxed),
            snapshot: self.backlog.snapshot.load(Ordering::Relaxed),
        }
    }

    /// Starts the close handshake with `code` and `reason` after the queued frames — or,
    /// with `discard`, instead of them (a socket cut for not reading).
    pub fn close(&mut self, code: u16, reason: &str, discard: bool) {
        if !self.is_open() {
            return;
        }
        if discard {
            self.backlog.discard.store(true, Ordering::Relaxed);
        }
        self.is_closing = true;
        let _ = self.tx.try_send(Out::Close((code, reason.to_string())));
        let _ = self.closing.try_send(());
    }

    /// Drops the socket at once, without a close frame (a crash, an abort).
    pub fn terminate(&mut self) {
        self.is_closing = true;
        self.tx.close();
        if let Some(tcp) = &self.tcp {
            let _ = tcp.shutdown(Shutdown::Both);
        }
    }
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
    fn the_backlog_counts_what_the_writer_has_not_taken() {
        let (mut o, rx, backlog) = out();
        o.send("x".repeat(500), SendClass::Snapshot);
        o.send("y".repeat(40), SendClass::Live);
        o.send("z".repeat(2), SendClass::Plain);
        assert_eq!(
            o.backlog(),
            HostBacklog {
                live: 42,
                snapshot: 500
            }
        );
        // The writer takes the snapshot: in flight, no longer backlog.
        let Ok(Out::Text { text, snapshot }) = rx.try_recv() else {
            panic!("queued")
        };
        backlog.taken(text.len(), snapshot);
        assert_eq!(o.backlog().snapshot, 0);
        o.close(1008, "cut", true);
        assert!(!o.is_open() && backlog.discarding());
        o.send("late".into(), SendClass::Live);
        assert_eq!(o.backlog().live, 42, "nothing queued after a close");
    }
}

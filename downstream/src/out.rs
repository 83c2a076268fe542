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

use crate::SocketGauge;
use smol::net::TcpStream;

/// One queued outbound item.
#[derive(Debug)]
pub(crate) enum Out {
    /// A text frame; `snapshot` = counted against the snapshot backlog.
    Text { text: String, snapshot: bool },
    /// A close frame with its code and reason (every close the server starts has both).
    Close((u16, String)),
    /// A ping (the host found the socket silent): written after what is queued before
    /// it, so a client reading its backlog answers once it has read it.
    Ping,
}

/// The backlog counters one connection's writer and the owner share; its bytes also
/// count in the process's [`Unsent`] account (until taken, or until it is freed).
#[derive(Debug)]
pub(crate) struct Backlog {
    /// Bytes of queued live frames the writer has not taken yet.
    live: AtomicUsize,
    /// Bytes of queued snapshot frames the writer has not taken yet.
    snapshot: AtomicUsize,
    /// Set when the socket was cut: the writer drops queued text frames.
    discard: AtomicBool,
    gauge: Arc<SocketGauge>,
}

impl Backlog {
    pub(crate) fn new(gauge: Arc<SocketGauge>) -> Backlog {
        Backlog {
            live: AtomicUsize::new(0),
            snapshot: AtomicUsize::new(0),
            discard: AtomicBool::new(false),
            gauge,
        }
    }

    fn counter(&self, snapshot: bool) -> &AtomicUsize {
        if snapshot {
            &self.snapshot
        } else {
            &self.live
        }
    }

    /// `bytes` were queued.
    fn queued(&self, bytes: usize, snapshot: bool) {
        self.counter(snapshot).fetch_add(bytes, Ordering::Relaxed);
        self.gauge.unsent.add(bytes);
    }

    /// The writer took `text` off the queue (or the queue refused it).
    pub(crate) fn taken(&self, bytes: usize, snapshot: bool) {
        self.counter(snapshot).fetch_sub(bytes, Ordering::Relaxed);
        self.gauge.unsent.sub(bytes);
    }

    /// Bytes queued and not taken.
    pub(crate) fn unsent(&self) -> usize {
        self.live.load(Ordering::Relaxed) + self.snapshot.load(Ordering::Relaxed)
    }

    /// Whether the socket was cut (queued text frames are dropped, not written).
    pub(crate) fn discarding(&self) -> bool {
        self.discard.load(Ordering::Relaxed)
    }

    /// Cuts the socket: queued text frames are dropped from now on.
    pub(crate) fn discard(&self) {
        self.discard.store(true, Ordering::Relaxed);
    }
}

impl Drop for Backlog {
    /// Frames never taken leave the process's account with the socket.
    fn drop(&mut self) {
        self.gauge.unsent.sub(self.unsent());
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

    /// Queues a frame of `class` (the host already judged it against the caps); past
    /// the process's unsent cap, the largest backlogs are cut (maybe this one).
    pub fn send(&mut self, text: String, class: SendClass) {
        if !self.is_open() || self.backlog.discarding() {
            return;
        }
        let n = text.len();
        let snapshot = class == SendClass::Snapshot;
        self.backlog.queued(n, snapshot);
        if self.tx.try_send(Out::Text { text, snapshot }).is_err() {
            self.backlog.taken(n, snapshot);
            return;
        }
        self.backlog.gauge.unsent.enforce();
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
            self.backlog.discard();
        }
        self.is_closing = true;
        let _ = self.tx.try_send(Out::Close((code, reason.to_string())));
        let _ = self.closing.try_send(());
    }

    /// Queues a websocket ping; the pong comes back as [`ConnEvent::Heard`](crate::ConnEvent::Heard).
    pub fn ping(&mut self) {
        if self.is_open() {
            let _ = self.tx.try_send(Out::Ping);
        }
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
        out_on(Arc::default(), 0).0
    }

    type Closing = async_channel::Receiver<()>;

    /// A connection's outbound side counted in `gauge` as socket `id`.
    fn out_on(
        gauge: Arc<SocketGauge>,
        id: u64,
    ) -> (
        (ConnOut, async_channel::Receiver<Out>, Arc<Backlog>),
        Closing,
    ) {
        let (tx, rx) = async_channel::unbounded();
        let (closing, closing_rx) = async_channel::bounded(1);
        let backlog = Arc::new(Backlog::new(gauge.clone()));
        gauge.unsent.join(id, &backlog, &tx, &closing);
        let out = ConnOut {
            tx,
            backlog: backlog.clone(),
            closing,
            tcp: None,
            is_closing: false,
        };
        ((out, rx, backlog), closing_rx)
    }

    #[test]
    fn past_the_process_cap_the_largest_backlog_is_cut_and_the_count_stays_exact() {
        let gauge = Arc::new(SocketGauge::default());
        let cuts = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = cuts.clone();
        gauge.unsent.configure(
            1_000,
            Box::new(move |id, reason| log.lock().unwrap().push((id, reason.to_string()))),
        );
        let ((mut a, a_rx, _), a_closing) = out_on(gauge.clone(), 1);
        let ((mut b, b_rx, b_backlog), _) = out_on(gauge.clone(), 2);
        a.send("a".repeat(700), SendClass::Snapshot);
        b.send("b".repeat(200), SendClass::Live);
        assert_eq!(gauge.unsent.total(), 900);
        assert!(cuts.lock().unwrap().is_empty(), "under the cap");
        // b's next frame passes the cap: a holds the most, a is cut.
        b.send("b".repeat(200), SendClass::Live);
        let got = cuts.lock().unwrap().clone();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, 1);
        assert!(
            got[0].1.contains("server.max_unsent_bytes 1000"),
            "{}",
            got[0].1
        );
        assert!(a_closing.try_recv().is_ok(), "its close grace starts");
        let queued: Vec<Out> = std::iter::from_fn(|| a_rx.try_recv().ok()).collect();
        assert!(matches!(queued.last(), Some(Out::Close((1008, _)))));
        // A cut socket queues nothing more, and is not cut twice.
        a.send("a".repeat(5_000), SendClass::Live);
        assert_eq!(gauge.unsent.total(), 1_100);
        assert_eq!(gauge.unsent.cuts(), 1);
        // Its bytes leave the account with it; b's as its writer takes them.
        drop(a);
        assert_eq!(gauge.unsent.total(), 400);
        while let Ok(Out::Text { text, snapshot }) = b_rx.try_recv() {
            b_backlog.taken(text.len(), snapshot);
        }
        assert_eq!(gauge.unsent.total(), 0);
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

//! # rindle-room-downstream
//!
//! The room's downstream websocket layer, on smol + async-tungstenite: the accept loop,
//! one task per connection, and the outbound queue ([`ConnOut`]) the room host's driver
//! writes to. The smol server (`runtime-smol`) and the Node face (`bindings-node`, the
//! room shell's native sockets) both serve clients through it, so a socket is held to
//! the same limits and closed with the same codes whichever face serves it. It decides no
//! protocol rule: what to send, and when to close, is the host's (`room-core` `host/`).
//!
//! A connection task reads frames and hands them to its owner as [`ConnEvent`]s in
//! arrival order (so each connection is handled serially), and writes what the owner
//! queues on its [`ConnOut`]. Every resource a client can make a connection hold is
//! capped ([`ConnLimits`]):
//!
//! | resource | cap | past it |
//! |---|---|---|
//! | sockets | `max_connections` (upgraded or in the handshake) | HTTP 503 |
//! | time to upgrade | `handshake_timeout` | the TCP socket is dropped |
//! | one message, fragments included | `max_frame_bytes` | close 1009 |
//! | frames waiting for the owner | [`INBOUND_WINDOW_FRAMES`] and `max_inbound_bytes` | the socket is not read (TCP pushes back) |
//! | unread outbound frames | the host's send budget and snapshot cap, over [`ConnOut::backlog`] | close 1008 |
//! | unread outbound frames of every socket together | `server.max_unsent_bytes` over [`Unsent`]: the core's `unsent_cuts` picks the largest | close 1008 |
//! | a closing socket | `close_grace` | the TCP socket is dropped |
//! | a silent peer (gone without a FIN) | the host's `silence_timeout_ms`: it pings through [`ConnOut::ping`], hears [`ConnEvent::Heard`] | close 1011 |
//!
//! A websocket violation (a bad frame, invalid UTF-8, a message too big) is answered
//! with a close frame naming it (1002, 1007, 1009) before the socket goes.

mod accept;
mod conn;
mod inbound;
mod out;
mod route;
mod unsent;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_channel::Sender;

pub use accept::{accept_loop, SocketGauge};
pub use inbound::{InboundSlot, InboundWindow, INBOUND_WINDOW_FRAMES};
pub use out::ConnOut;
pub use route::{Gate, Route, RouteFuture, Router};
pub use unsent::{CutLog, Unsent};

/// A downstream connection's id, unique for the accept loop's lifetime (from 1).
pub type ConnId = u64;

/// The connection limits.
#[derive(Clone, Debug)]
pub struct ConnLimits {
    /// The largest message (and frame) a client may send.
    pub max_frame_bytes: usize,
    /// The most bytes of read frames waiting for the owner per connection (at least
    /// `max_frame_bytes`).
    pub max_inbound_bytes: usize,
    /// The most sockets held at once (in the handshake or upgraded).
    pub max_connections: usize,
    /// How long the upgrade may take.
    pub handshake_timeout: Duration,
    /// How long a closing socket waits for the peer's close reply (and for the close
    /// frame to get out at all) before it is dropped.
    pub close_grace: Duration,
    /// How the operator spells `max_frame_bytes` (`server.max_frame_bytes`,
    /// `downstream.maxFrameBytes`): the 1009 close reason names it.
    pub frame_limit_name: &'static str,
}

/// What a connection task tells its owner, in order per connection.
#[derive(Debug)]
pub enum ConnEvent {
    /// A websocket completed its upgrade; frames for it go to `out`.
    Open {
        /// The connection.
        id: ConnId,
        /// Its outbound side.
        out: ConnOut,
    },
    /// A text frame (a binary one read as UTF-8, lossily, as the published shell's `String(data)`).
    /// Drop `slot` once the frame is handled: it frees the connection's inbound window.
    Frame {
        /// The connection.
        id: ConnId,
        /// The frame.
        text: String,
        /// The frame's place in the inbound window.
        slot: InboundSlot,
    },
    /// The peer answered a ping (or sent one): a sign of life for the host's silence
    /// timeout. Drop `slot` once handled, as a frame's.
    Heard {
        /// The connection.
        id: ConnId,
        /// Its place in the inbound window.
        slot: InboundSlot,
    },
    /// The socket is gone (closed, failed, or dropped after the close grace).
    Closed {
        /// The connection.
        id: ConnId,
    },
}

/// Counters the connection tasks keep.
#[derive(Debug, Default)]
pub struct ConnMetrics {
    /// Upgrades answered with HTTP 503 (or dropped) at `max_connections`.
    pub connections_refused: AtomicU64,
    /// TCP connections dropped for not completing the upgrade in time.
    pub handshake_timeouts: AtomicU64,
    /// Sockets closed for a websocket-level violation (1002, 1007, 1009).
    pub protocol_closes: AtomicU64,
}

impl ConnMetrics {
    fn inc(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// How connection tasks are started (the server's spawner, or smol's global executor).
pub type Spawn = Arc<dyn Fn(Pin<Box<dyn Future<Output = ()> + Send>>) + Send + Sync>;

/// Everything the accept loop and its connection tasks need besides the listener.
pub struct ConnCtx<E> {
    /// Where [`ConnEvent`]s go (as the owner's event type).
    pub events: Sender<E>,
    /// Starts a task.
    pub spawn: Spawn,
    /// The limits.
    pub limits: Arc<ConnLimits>,
    /// The counters.
    pub metrics: Arc<ConnMetrics>,
    /// The socket counts.
    pub gauge: Arc<SocketGauge>,
    /// Routes each connection to its owner by request path (fleet mode); `None`: every
    /// connection goes to `events`, whatever its path.
    pub router: Option<Arc<dyn Router<E>>>,
}

impl<E> Clone for ConnCtx<E> {
    fn clone(&self) -> Self {
        ConnCtx {
            events: self.events.clone(),
            spawn: self.spawn.clone(),
            limits: self.limits.clone(),
            metrics: self.metrics.clone(),
            gauge: self.gauge.clone(),
            router: self.router.clone(),
        }
    }
}

impl<E> std::fmt::Debug for ConnCtx<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnCtx")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// A [`Spawn`] on smol's global executor.
pub fn smol_spawn() -> Spawn {
    Arc::new(|fut| smol::spawn(fut).detach())
}

//! The room shell's downstream sockets, native: the server's websocket layer
//! (`rindle-room-downstream`: the accept loop, one task per connection with every
//! per-socket limit, the outbound queue) running on smol's executor threads, off the JS
//! thread. Frames the host sends never reach JavaScript: [`RoomHost::poll`] hands them
//! straight to the connection's queue, and the connection's task writes them. What the
//! clients send comes back to the JS thread as a wake-up; the shell then calls
//! `pumpSockets`, which feeds every queued event into the host.
//!
//! [`RoomHost::poll`]: crate::host::RoomHost::poll

use std::collections::{HashMap, VecDeque};
use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Status, Task};
use rindle_room_core::host::{Backlog, DriverLimits, Output};
use rindle_room_downstream::{
    accept_loop, smol_spawn, ConnCtx, ConnEvent, ConnId, ConnLimits, ConnMetrics, ConnOut,
    SocketGauge,
};
use serde_json::Value as Json;

/// The wake-up the connection tasks send the JS thread (no payload: the events wait in
/// the queue).
pub(crate) type Wake = ThreadsafeFunction<(), (), (), Status, false>;

/// The limits of the native listener, from the shell's `downstream` options (JSON:
/// `{maxFrameBytes?, maxInboundBytes?, maxConnections?, handshakeTimeoutMs?}`); a limit
/// left out (or `null`) is the core's default ([`DriverLimits::default`]).
pub(crate) fn limits_from_json(json: &str) -> Result<ConnLimits, LimitsError> {
    let v: Json = serde_json::from_str(json).map_err(|e| LimitsError::Json(e.to_string()))?;
    let d = DriverLimits::default();
    let num = |k: &str, default: u64| match v.get(k) {
        None | Some(Json::Null) => Ok(default),
        Some(n) => n
            .as_u64()
            .filter(|n| *n > 0)
            .ok_or_else(|| LimitsError::NotPositive(k.to_string())),
    };
    let max_frame_bytes = num("maxFrameBytes", d.max_frame_bytes as u64)? as usize;
    let max_inbound_bytes = num("maxInboundBytes", d.max_inbound_bytes as u64)? as usize;
    Ok(ConnLimits {
        max_frame_bytes,
        max_inbound_bytes: max_inbound_bytes.max(max_frame_bytes),
        max_connections: num("maxConnections", d.max_connections as u64)? as usize,
        handshake_timeout: Duration::from_millis(num(
            "handshakeTimeoutMs",
            d.handshake_timeout_ms,
        )?),
        close_grace: Duration::from_millis(d.close_grace_ms),
        frame_limit_name: "downstream.maxFrameBytes",
    })
}

/// Why the shell's socket limits were refused.
#[derive(Debug)]
#[non_exhaustive]
pub(crate) enum LimitsError {
    /// Not JSON (the parser's words).
    Json(String),
    /// The named limit is not a positive integer.
    NotPositive(String),
}

impl std::fmt::Display for LimitsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LimitsError::Json(e) => write!(f, "socket limits: {e}"),
            LimitsError::NotPositive(k) => {
                write!(f, "socket limits: `{k}` must be a positive integer")
            }
        }
    }
}

impl std::error::Error for LimitsError {}

/// Events the connection tasks queued for the JS thread.
#[derive(Debug, Default)]
struct Inbox {
    events: VecDeque<ConnEvent>,
}

/// The native listener and its connections, owned by the shell's `RoomHost`.
pub(crate) struct Sockets {
    /// The outbound side of every open connection.
    conns: HashMap<ConnId, ConnOut>,
    inbox: Arc<Mutex<Inbox>>,
    /// Dropped to stop the accept loop.
    stop: Option<async_channel::Sender<()>>,
    gauge: Arc<SocketGauge>,
    metrics: Arc<ConnMetrics>,
    port: u16,
}

impl std::fmt::Debug for Sockets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sockets")
            .field("port", &self.port)
            .field("conns", &self.conns.len())
            .finish_non_exhaustive()
    }
}

impl Sockets {
    /// Binds `127.0.0.1:port` (0 = ephemeral) and starts accepting; `wake` is called on
    /// the JS thread whenever events wait in the inbox.
    pub(crate) fn listen(port: u16, limits: ConnLimits, wake: Wake) -> std::io::Result<Sockets> {
        let std_listener = StdListener::bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
        let port = std_listener.local_addr()?.port();
        let listener = smol::net::TcpListener::try_from(std_listener)?;
        let (events, rx) = async_channel::unbounded::<ConnEvent>();
        let (stop, stop_rx) = async_channel::bounded::<()>(1);
        let inbox = Arc::new(Mutex::new(Inbox::default()));
        let gauge = Arc::new(SocketGauge::default());
        let metrics = Arc::new(ConnMetrics::default());
        let ctx = ConnCtx {
            events,
            spawn: smol_spawn(),
            limits: Arc::new(limits),
            metrics: metrics.clone(),
            gauge: gauge.clone(),
            router: None,
        };
        smol::spawn(accept_loop(listener, ctx, stop_rx)).detach();
        // Moves events into the inbox; wakes the JS thread when the inbox was empty
        // (it drains the inbox whole, so one wake-up per batch is enough).
        let forward = inbox.clone();
        smol::spawn(async move {
            while let Ok(e) = rx.recv().await {
                let was_empty = {
                    let mut inbox = forward.lock().unwrap_or_else(|p| p.into_inner());
                    let was_empty = inbox.events.is_empty();
                    inbox.events.push_back(e);
                    was_empty
                };
                if was_empty {
                    let _ = wake.call((), ThreadsafeFunctionCallMode::NonBlocking);
                }
            }
        })
        .detach();
        Ok(Sockets {
            conns: HashMap::new(),
            inbox,
            stop: Some(stop),
            gauge,
            metrics,
            port,
        })
    }

    /// The bound port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Takes every queued event.
    pub(crate) fn take_events(&mut self) -> VecDeque<ConnEvent> {
        let mut inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut inbox.events)
    }

    /// Registers an upgraded connection's outbound side.
    pub(crate) fn opened(&mut self, id: ConnId, out: ConnOut) {
        self.conns.insert(id, out);
    }

    /// Forgets a connection that closed.
    pub(crate) fn closed(&mut self, id: ConnId) {
        self.conns.remove(&id);
    }

    /// Whether `id` is one of these sockets.
    pub(crate) fn has(&self, id: ConnId) -> bool {
        self.conns.contains_key(&id)
    }

    /// Connection `id`'s backlog.
    pub(crate) fn backlog(&self, id: ConnId) -> Backlog {
        self.conns
            .get(&id)
            .map_or_else(Backlog::default, ConnOut::backlog)
    }

    /// Carries out a socket output for one of these sockets; hands anything else back.
    pub(crate) fn carry(&mut self, o: Output) -> Option<Output> {
        match o {
            Output::Send { conn, text, class } if self.has(conn) => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.send(text, class);
                }
                None
            }
            Output::Close {
                conn,
                code,
                reason,
                discard_queued,
            } if self.has(conn) => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.close(code, &reason, discard_queued);
                }
                None
            }
            Output::Terminate { conn } if self.has(conn) => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.terminate();
                }
                None
            }
            // A socket gone since needs no ping.
            Output::Ping { conn } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.ping();
                }
                None
            }
            other => Some(other),
        }
    }

    /// Stops accepting new sockets (open ones stay until the host closes them).
    pub(crate) fn stop_accepting(&mut self) {
        self.stop = None;
    }

    /// Drops every open socket at once.
    pub(crate) fn terminate_all(&mut self) {
        for c in self.conns.values_mut() {
            c.terminate();
        }
    }

    /// `[open sockets, refused upgrades, handshake timeouts, protocol closes]`.
    pub(crate) fn stats(&self) -> [f64; 4] {
        [
            self.gauge.active.load(Ordering::SeqCst) as f64,
            self.metrics.connections_refused.load(Ordering::Relaxed) as f64,
            self.metrics.handshake_timeouts.load(Ordering::Relaxed) as f64,
            self.metrics.protocol_closes.load(Ordering::Relaxed) as f64,
        ]
    }

    /// A task that resolves once every socket is gone, or after `limit`.
    pub(crate) fn drained(&self, limit: Duration) -> Drained {
        Drained {
            gauge: self.gauge.clone(),
            limit,
        }
    }
}

/// Waits on libuv's thread pool until no socket is open (or the limit passed); resolves
/// to how many were still open.
#[derive(Debug)]
pub struct Drained {
    gauge: Arc<SocketGauge>,
    limit: Duration,
}

impl Task for Drained {
    type Output = f64;
    type JsValue = f64;

    fn compute(&mut self) -> napi::Result<f64> {
        let end = Instant::now() + self.limit;
        loop {
            let open = self.gauge.active.load(Ordering::SeqCst);
            if open == 0 || Instant::now() >= end {
                return Ok(open as f64);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn resolve(&mut self, _env: napi::Env, open: f64) -> napi::Result<f64> {
        Ok(open)
    }
}

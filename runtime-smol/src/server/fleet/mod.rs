//! Fleet mode (`[fleet]`, docs/fleet.md): one process, many rooms. Clients open
//! `ws://<box>/rooms/<doc>`; the first connection for a doc the box does not serve boots
//! its room through the API server's room-boot, later ones share it; a room without
//! connections for `idle_evict_ms` drains and hibernates, and its next connection boots
//! it again (a new placement epoch).
//!
//! ```text
//!  client ──ws /rooms/<doc>──▶ accept loop ──route──▶ room table ──▶ room task (host) per doc
//!                                                     │   boot: POST room-boot → grant
//!                                                     └── sweeper: hibernate idle rooms
//! ```
//!
//! The rules (what the URL names, what the grant means, what each boot failure closes
//! with) are the core's [`rindle_room_core::fleet`]; this module does the I/O.

mod boot;
mod control;
pub mod demo;
mod records;
mod rooms;
mod scan;
mod upstream;

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use async_channel::{Receiver, Sender};
use futures_lite::FutureExt;
use smol::net::TcpListener;

use super::actor::{Control, Event};
use super::clock::Env;
use super::log::Logger;
use crate::config::{Config, FleetConfig, JournalSync, LogFormat};
use crate::journal::group_sync::GroupSync;
use crate::mutators::Registry;
use crate::server::error::{Listener, StartError};
use rindle_room_core::fleet::StrandedMutation;
use rindle_room_downstream as conn;

pub use rindle_room_core::fleet::RoomSummary as RoomInfo;
use rooms::{RoomRouter, Rooms};

/// Stranded mutations listed in `/stats` (all are counted and logged).
pub const MAX_STRANDED_LISTED: usize = 10_000;

/// Makes a room's logger (its lines carry the doc).
type RoomLog = Arc<dyn Fn(&str) -> Logger + Send + Sync>;

/// Makes a room's upstream from its doc, instead of rindled at the endpoint room-boot
/// names (the demo's embedded upstream, tests).
pub type UpstreamFactory =
    Arc<dyn Fn(&str) -> Arc<dyn super::upstream::UpstreamConnector> + Send + Sync>;

/// What every room of the fleet is built from.
pub(crate) struct Shared {
    pub config: Arc<Config>,
    pub fleet: FleetConfig,
    pub instance: String,
    pub env: Env,
    /// The box's own log lines.
    pub log: Logger,
    pub room_log: RoomLog,
    pub registry: Registry,
    /// Rooms that need a new lease (a re-boot).
    pub relet: Sender<String>,
    pub upstream: Option<UpstreamFactory>,
    /// Writes stay in each room's journal: no flush (the demo).
    pub journal_only: bool,
    pub counters: Arc<Counters>,
    /// Revocations `(user, at ms)`, handed to every room booted while they are within
    /// `downstream.revocation_window_ms`.
    pub revoked: std::sync::Mutex<Vec<(String, u64)>>,
    /// Mutations acknowledged before a restart that settlement could not deliver.
    pub stranded: std::sync::Mutex<Vec<StrandedMutation>>,
    /// Every stranded mutation, listed or not.
    pub stranded_total: std::sync::atomic::AtomicU64,
    /// A room found that the upstream takes no affinity ticket and said so (once a box).
    pub ticket_refusal_logged: Arc<std::sync::atomic::AtomicBool>,
    /// The box-level journal sync (`fleet.journal_sync = "box"` with a `data_dir`).
    pub group_sync: Option<Arc<GroupSync>>,
    /// The kept-alive connections every room's authority client shares.
    pub authority_pool: Arc<crate::http::Pool>,
}

/// The box's counters the room table does not keep (`/stats`, `/metrics`).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub crashes: AtomicU64,
    /// Every room's host counters summed, rooms that stopped included.
    pub host: crate::server::metrics::BoxTotals,
    /// The connection tasks' counters (refused upgrades, handshake timeouts, violations).
    pub conn: Arc<conn::ConnMetrics>,
}

/// The box-level journal sync, when the configuration asks for one and the kernel can
/// give it (else each journal syncs itself, and the log says why).
fn open_group_sync(fleet: &FleetConfig, log: &Logger) -> Option<Arc<GroupSync>> {
    let dir = fleet.data_dir.as_ref()?;
    if fleet.journal_sync != JournalSync::Box {
        return None;
    }
    match GroupSync::open(dir) {
        Ok(g) => {
            log.info(&format!(
                "journal appends of every room under {} share one syncfs at a time \
                 (fleet.journal_sync = \"box\")",
                dir.display()
            ));
            Some(Arc::new(g))
        }
        Err(e) => {
            log.warn(&format!(
                "each room's journal syncs its own appends: {e} ({})",
                dir.display()
            ));
            None
        }
    }
}

impl Shared {
    /// Records the mutations a fenced room left behind: all are counted, the first
    /// [`MAX_STRANDED_LISTED`] are kept for `/stats` (the room's log lines and its
    /// journal hold every one).
    pub fn record_stranded(&self, list: Vec<StrandedMutation>) {
        use std::sync::atomic::Ordering;
        self.stranded_total
            .fetch_add(list.len() as u64, Ordering::Relaxed);
        let mut kept = self.stranded.lock().unwrap_or_else(|p| p.into_inner());
        let room = MAX_STRANDED_LISTED.saturating_sub(kept.len());
        kept.extend(list.into_iter().take(room));
    }

    /// The revocations still within the window at `now`, pruning the rest.
    pub fn revocations(&self, now: u64) -> Vec<(String, u64)> {
        let window = self.config.downstream.revocation_window_ms;
        let mut list = self.revoked.lock().unwrap_or_else(|p| p.into_inner());
        list.retain(|(_, at)| now.saturating_sub(*at) < window);
        list.clone()
    }
}

/// Configures and starts a [`FleetServer`].
pub struct FleetServerBuilder {
    config: Config,
    registry: Registry,
    env: Option<Env>,
    sink: Option<super::log::LogSink>,
    upstream: Option<UpstreamFactory>,
    journal_only: bool,
}

impl std::fmt::Debug for FleetServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetServerBuilder").finish_non_exhaustive()
    }
}

impl FleetServerBuilder {
    /// The host's own mutators (they join the configuration's in every room).
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// The clock and spawner (default: the system's).
    pub fn env(mut self, env: Env) -> Self {
        self.env = Some(env);
        self
    }

    /// Each room's upstream from `factory` (called with the doc) instead of rindled at
    /// the endpoint room-boot names.
    pub fn upstream(mut self, factory: UpstreamFactory) -> Self {
        self.upstream = Some(factory);
        self
    }

    /// Rooms keep their writes in their journals and flush nothing (the demo): no
    /// authority is called, whatever room-boot's flush endpoints say.
    pub fn journal_only_writes(mut self) -> Self {
        self.journal_only = true;
        self
    }

    /// Hands every log line to `sink` instead of stderr (tests, embedders).
    pub fn log_sink(mut self, sink: super::log::LogSink) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Binds the listener and starts serving; rooms boot as clients arrive.
    pub async fn start(self) -> Result<FleetServer, StartError> {
        let config = self.config;
        let mut fleet = config.fleet.clone().ok_or(StartError::NoFleet)?;
        // The open-file limit is split between client sockets and rooms (the core's
        // rule), so a box full of idle rooms cannot starve its sockets, or the reverse.
        let descriptors = rindle_room_core::fleet::descriptor_budget(
            super::process::nofile_limit(),
            config.server.max_connections,
            fleet.max_rooms,
        );
        fleet.max_rooms = descriptors.rooms;
        let env = self.env.unwrap_or_else(Env::system);
        let format = config.server.log_format;
        let sink = self.sink;
        let room_log: RoomLog = Arc::new(move |doc: &str| logger(doc, format, sink.clone()));
        let log = room_log("(fleet)");
        let nofile = super::process::nofile_limit()
            .map_or_else(|| String::from("unknown (1024 assumed)"), |n| n.to_string());
        log.info(&format!(
            "descriptor budget: open-file limit {nofile} → {} client sockets, {} rooms{}",
            descriptors.connections,
            descriptors.rooms,
            if descriptors.rooms_limited_by_descriptors {
                " (fewer than fleet.max_rooms: raise the open-file limit for more)"
            } else {
                ""
            }
        ));
        let bind = config.server.bind.clone();
        let port = config.server.port;
        let listener = TcpListener::bind((bind.as_str(), port))
            .await
            .map_err(|source| StartError::Listen {
                listener: Listener::Downstream,
                addr: format!("{bind}:{port}"),
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| StartError::NoAddress {
                listener: Listener::Downstream,
                source,
            })?;
        let (relet_tx, relet_rx) = async_channel::unbounded::<String>();
        let group_sync = open_group_sync(&fleet, &log);
        let shared = Arc::new(Shared {
            instance: fleet.instance_id(),
            fleet,
            config: Arc::new(config.clone()),
            env: env.clone(),
            log: log.clone(),
            room_log,
            registry: self.registry,
            relet: relet_tx,
            upstream: self.upstream,
            journal_only: self.journal_only,
            counters: Arc::new(Counters::default()),
            revoked: std::sync::Mutex::new(Vec::new()),
            stranded: std::sync::Mutex::new(Vec::new()),
            stranded_total: std::sync::atomic::AtomicU64::new(0),
            ticket_refusal_logged: Arc::default(),
            group_sync,
            authority_pool: Arc::default(),
        });
        let rooms = Rooms::new(shared.clone());
        let (stop_tx, stop_rx) = async_channel::bounded::<()>(1);
        let limits = conn::ConnLimits {
            max_frame_bytes: config.server.max_frame_bytes,
            max_inbound_bytes: config.server.max_inbound_bytes,
            max_connections: descriptors.connections,
            handshake_timeout: Duration::from_millis(config.server.handshake_timeout_ms),
            close_grace: Duration::from_millis(
                rindle_room_core::host::DriverLimits::default().close_grace_ms,
            ),
            frame_limit_name: "server.max_frame_bytes",
        };
        // Every upgrade is routed to its room; nothing reaches this channel.
        let (unrouted, _) = async_channel::bounded::<Event>(1);
        let gauge = crate::server::settings::socket_gauge(&config, &log);
        env.spawn(conn::accept_loop(
            listener,
            conn::ConnCtx {
                events: unrouted,
                spawn: {
                    let env = env.clone();
                    Arc::new(move |fut| env.spawn(fut))
                },
                limits: Arc::new(limits),
                metrics: rooms.shared.counters.conn.clone(),
                gauge: gauge.clone(),
                router: Some(Arc::new(RoomRouter(rooms.clone()))),
            },
            stop_rx.clone(),
        ));
        let control_addr = match &config.control {
            Some(c) => {
                let l = TcpListener::bind((c.bind.as_str(), c.port))
                    .await
                    .map_err(|source| StartError::Listen {
                        listener: Listener::Control,
                        addr: format!("{}:{}", c.bind, c.port),
                        source,
                    })?;
                let a = l.local_addr().ok();
                env.spawn(control::serve(
                    l,
                    c.auth_token.clone(),
                    rooms.clone(),
                    stop_rx.clone(),
                ));
                a
            }
            None => None,
        };
        let unsettled = match &shared.fleet.data_dir {
            Some(dir) => scan::scan(dir, &log),
            None => Vec::new(),
        };
        env.spawn(scan::settle_all(rooms.clone(), unsettled));
        env.spawn(rooms.clone().run_deadlines(stop_rx.clone()));
        env.spawn(trim(rooms.clone(), stop_rx.clone()));
        env.spawn(relet(rooms.clone(), relet_rx));
        log.info(&format!(
            "fleet listening on ws://{addr}/rooms/<doc> (instance {}, room-boot at {})",
            shared.instance,
            shared.fleet.boot_url()
        ));
        if let Some(c) = control_addr {
            log.info(&format!("fleet control plane on http://{c}"));
        }
        Ok(FleetServer {
            addr,
            control_addr,
            rooms,
            stop: stop_tx,
            gauge,
        })
    }
}

fn logger(doc: &str, format: LogFormat, sink: Option<super::log::LogSink>) -> Logger {
    match sink {
        Some(sink) => Logger::with_sink(doc, format, sink),
        None => Logger::stderr(doc, format),
    }
}

/// Hands freed heap pages back to the OS once a wave of hibernations pauses.
async fn trim(rooms: Arc<Rooms>, stop: Receiver<()>) {
    let mut trim = TrimAfterHibernation::default();
    loop {
        let stopped = async {
            let _ = stop.recv().await;
            true
        }
        .or(async {
            smol::Timer::after(Duration::from_millis(250)).await;
            false
        })
        .await;
        if stopped {
            return;
        }
        let now = rooms.shared.env.now_ms();
        if trim.due(rooms.counters().hibernations, now) {
            if let Some(in_use) = crate::server::process::return_free_memory() {
                rooms.shared.log.info(&format!(
                    "hibernations paused: free heap pages returned to the OS ({} KiB of \
                     heap in use)",
                    in_use / 1024
                ));
            }
        }
    }
}

/// When to hand freed memory back after hibernations: once they have stopped for a
/// second (a hibernated room's task frees its memory a moment after the sweep).
#[derive(Debug, Default)]
struct TrimAfterHibernation {
    seen: u64,
    changed_at: Option<u64>,
}

impl TrimAfterHibernation {
    fn due(&mut self, hibernations: u64, now_ms: u64) -> bool {
        if hibernations != self.seen {
            self.seen = hibernations;
            self.changed_at = Some(now_ms);
            return false;
        }
        match self.changed_at {
            Some(at) if now_ms.saturating_sub(at) >= 1_000 => {
                self.changed_at = None;
                true
            }
            _ => false,
        }
    }
}

/// Asks a room for its retained bytes and budget refusals; `None` when it stopped or
/// did not answer within 5 s.
pub(crate) async fn memory_of(room: &rooms::LiveRoom) -> Option<(u64, u64)> {
    let (tx, rx) = async_channel::bounded(1);
    room.events
        .send(Event::Control(Control::Memory(tx)))
        .await
        .ok()?;
    async { rx.recv().await.ok() }
        .or(async {
            smol::Timer::after(Duration::from_secs(5)).await;
            None
        })
        .await
}

/// Re-boots rooms whose lease died.
async fn relet(rooms: Arc<Rooms>, requests: Receiver<String>) {
    while let Ok(doc) = requests.recv().await {
        rooms.stop_room(&doc, rindle_room_core::fleet::StopWhy::Relet);
    }
}

/// A running fleet.
pub struct FleetServer {
    addr: SocketAddr,
    control_addr: Option<SocketAddr>,
    rooms: Arc<Rooms>,
    stop: Sender<()>,
    gauge: Arc<conn::SocketGauge>,
}

impl std::fmt::Debug for FleetServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FleetServer {
    /// A builder for `config` (which must have `[fleet]`).
    pub fn builder(config: Config) -> FleetServerBuilder {
        FleetServerBuilder {
            config,
            registry: Registry::new(),
            env: None,
            sink: None,
            upstream: None,
            journal_only: false,
        }
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The bound control-plane port (0 without `[control]`).
    pub fn control_port(&self) -> u16 {
        self.control_addr.map_or(0, |a| a.port())
    }

    /// Whether start-up settlement is done and no shutdown began (`/readyz`).
    pub fn is_ready(&self) -> bool {
        self.rooms.is_ready()
    }

    /// Every room the box knows, by doc.
    pub fn rooms(&self) -> Vec<RoomInfo> {
        self.rooms.list()
    }

    /// Marks the box shutting down (not ready, no new boots), sends every live room
    /// the request `make` builds, waits for each to end, then closes the listeners.
    async fn stop_every_room(&self, make: fn(async_channel::Sender<()>) -> Control) {
        self.rooms
            .step(Some(rindle_room_core::fleet::Input::Shutdown));
        let live = self.rooms.live_rooms();
        for room in &live {
            let (tx, _rx) = async_channel::bounded(1);
            let _ = room.events.send(Event::Control(make(tx))).await;
        }
        for room in &live {
            let _ = room.done.recv().await;
        }
        let _ = self.stop.try_send(());
        self.stop.close();
    }

    /// Hibernates `doc`'s room now (drain, stop); `false` when it is not live.
    pub fn hibernate(&self, doc: &str) -> bool {
        self.rooms
            .stop_room(doc, rindle_room_core::fleet::StopWhy::Operator)
    }

    /// Stops at once, like a crash (tests and supervisors): every room stops without
    /// journaling its group commit or draining, sockets are dropped.
    pub async fn abort(&self) {
        self.stop_every_room(Control::Abort).await;
    }

    /// Graceful shutdown: stop accepting, then shut every room down (each journals its
    /// group commit, drains and closes its sockets with 1001) and wait for them.
    pub async fn shutdown(&self) {
        self.stop_every_room(Control::Shutdown).await;
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while self.gauge.active.load(std::sync::atomic::Ordering::SeqCst) > 0
            && std::time::Instant::now() < deadline
        {
            smol::Timer::after(Duration::from_millis(10)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TrimAfterHibernation;

    #[test]
    fn freed_memory_is_handed_back_once_hibernations_pause_for_a_second() {
        let mut t = TrimAfterHibernation::default();
        assert!(!t.due(0, 0), "nothing hibernated yet");
        assert!(!t.due(3, 100), "a wave starts");
        assert!(!t.due(5, 600), "still going");
        assert!(!t.due(5, 1_500), "paused 900 ms");
        assert!(t.due(5, 1_600), "paused a second");
        assert!(!t.due(5, 5_000), "once per wave");
        assert!(!t.due(6, 5_100));
        assert!(t.due(6, 6_100));
    }
}

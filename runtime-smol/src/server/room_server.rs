//! [`RoomServer`]: start a room from a [`Config`] (plus whatever the host brings — its
//! own mutators, journal, authority, upstream, clock) and control it.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use async_channel::{Receiver, Sender};
use rindle_room_core::json::tree::JsValue;
use smol::net::TcpListener;

use super::actor::{Control, Event};
use super::authority::Authority;
use super::clock::{Clock, Env};
use super::control_plane;
use super::demo::{DemoData, DemoUpstream};
use super::log::Logger;
use super::metrics::Metrics;
use super::upstream::{UpstreamConnector, WsUpstream};
use crate::authority::HttpAuthority;
use crate::config::{Config, JournalConfig};
use crate::journal::file::FileJournal;
use crate::journal::group_sync::GroupSync;
use crate::journal::memory::MemoryJournal;
use crate::journal::Journal;
use crate::mutators::Registry;
use crate::server::error::{DrainError, JournalOpenError, Listener, StartError};
use rindle_room_downstream as conn;

/// Configures and starts a [`RoomServer`].
///
/// ```no_run
/// use rindle_room_smol::config::Config;
/// use rindle_room_smol::mutators::{MutatorError, Registry};
/// use rindle_room_smol::server::RoomServer;
///
/// # smol::block_on(async {
/// let config = Config::load("room.toml").expect("a valid config");
/// let mut registry = Registry::new();
/// registry.register("noop", |_tx: &mut rindle_room_core::MutationTx<'_>,
///                            _args: &serde_json::Value,
///                            _ctx: &rindle_room_smol::mutators::MutatorCtx| {
///     Ok::<(), MutatorError>(())
/// });
/// let server = RoomServer::builder(config).registry(registry).start().await.unwrap();
/// server.await_live().await;
/// println!("ws://127.0.0.1:{}", server.port());
/// server.shutdown().await;
/// # });
/// ```
pub struct RoomServerBuilder {
    config: Config,
    registry: Registry,
    journal: Option<Arc<dyn Journal>>,
    authority: Option<Arc<dyn Authority>>,
    upstream: Option<Arc<dyn UpstreamConnector>>,
    env: Option<Env>,
    logger: Option<Logger>,
}

impl std::fmt::Debug for RoomServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoomServerBuilder")
            .field("doc", &self.config.downstream.doc_id)
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl RoomServerBuilder {
    /// The host's own mutators. They join the configuration's (`[mutators.*]`,
    /// `writes.crud`) and win on a name clash.
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// A journal instead of the one `[writes.journal]` describes.
    pub fn journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// An authority instead of the `[authority]` HTTP client.
    pub fn authority(mut self, authority: Arc<dyn Authority>) -> Self {
        self.authority = Some(authority);
        self
    }

    /// An upstream instead of `[upstream]` / `[demo]`.
    pub fn upstream(mut self, upstream: Arc<dyn UpstreamConnector>) -> Self {
        self.upstream = Some(upstream);
        self
    }

    /// The room clock (default: the system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        let mut env = self.env.take().unwrap_or_else(Env::system);
        env.clock = clock;
        self.env = Some(env);
        self
    }

    /// The clock and spawner together.
    pub fn env(mut self, env: Env) -> Self {
        self.env = Some(env);
        self
    }

    /// The logger (default: stderr in the configured format).
    pub fn logger(mut self, logger: Logger) -> Self {
        self.logger = Some(logger);
        self
    }

    /// Binds the listeners, claims the placement epoch (with an authority), mints the
    /// upstream lease and starts the room task. Returns once the ports are bound and the
    /// upstream connection is underway: await [`RoomServer::await_live`] for the seed.
    pub async fn start(self) -> Result<RoomServer, StartError> {
        let config = self.config;
        let env = self.env.unwrap_or_else(Env::system);
        let doc = config.downstream.doc_id.clone();
        let log = self
            .logger
            .unwrap_or_else(|| Logger::stderr(&doc, config.server.log_format));
        let journal = match (&config.writes, self.journal) {
            (None, _) => None,
            (Some(_), Some(j)) => Some(j),
            (Some(w), None) => Some(open_journal(&w.journal, &log)?),
        };
        let authority: Option<Arc<dyn Authority>> = match (&config.writes, self.authority) {
            (None, _) => None,
            (Some(_), Some(a)) => Some(a),
            (Some(_), None) => match &config.authority {
                Some(cfg) => Some(Arc::new(
                    HttpAuthority::new(cfg).map_err(StartError::Authority)?,
                )),
                None => None,
            },
        };
        let upstream = match self.upstream {
            Some(u) => u,
            None => upstream_from_config(&config)?,
        };
        let bind = config.server.bind.clone();
        let port = config.server.port;
        let listener = TcpListener::bind((bind.as_str(), port))
            .await
            .map_err(|source| StartError::Listen {
                listener: Listener::Downstream,
                addr: format!("{bind}:{port}"),
                source,
            })?;
        let control = match &config.control {
            Some(c) => {
                let l = TcpListener::bind((c.bind.as_str(), c.port))
                    .await
                    .map_err(|source| StartError::Listen {
                        listener: Listener::Control,
                        addr: format!("{}:{}", c.bind, c.port),
                        source,
                    })?;
                Some((l, c.auth_token.clone()))
            }
            None => None,
        };
        let addr = listener
            .local_addr()
            .map_err(|source| StartError::NoAddress {
                listener: Listener::Downstream,
                source,
            })?;
        let control_addr = control.as_ref().and_then(|(l, _)| l.local_addr().ok());
        let (stop_tx, stop_rx) = async_channel::bounded::<()>(1);
        let metrics = Arc::new(Metrics::default());
        // A box of one: placed by its configuration, assembled like any fleet room.
        let room = super::assemble::assemble(super::assemble::RoomParts {
            upstream_client_id: upstream.client_id(),
            config: Arc::new(config.clone()),
            env: env.clone(),
            log: log.clone(),
            metrics: metrics.clone(),
            registry: self.registry,
            journal,
            authority,
            upstream,
            adjust: None,
            stop_listeners: stop_tx,
            stranded: None,
            on_crash: None,
        })
        .await?;
        let (events, done_rx) = (room.events, room.done);
        let gauge = super::settings::socket_gauge(&config, &log);
        let limits = conn::ConnLimits {
            max_frame_bytes: config.server.max_frame_bytes,
            max_inbound_bytes: config.server.max_inbound_bytes,
            max_connections: config
                .server
                .max_connections_or_default(super::process::nofile_limit()),
            handshake_timeout: Duration::from_millis(config.server.handshake_timeout_ms),
            close_grace: Duration::from_millis(
                rindle_room_core::host::DriverLimits::default().close_grace_ms,
            ),
            frame_limit_name: "server.max_frame_bytes",
        };
        log.debug(&format!(
            "downstream limits: max_connections {}, max_frame_bytes {}, max_inbound_bytes {}",
            limits.max_connections, limits.max_frame_bytes, limits.max_inbound_bytes
        ));
        env.spawn(conn::accept_loop(
            listener,
            conn::ConnCtx {
                events: events.clone(),
                spawn: {
                    let env = env.clone();
                    Arc::new(move |fut| env.spawn(fut))
                },
                limits: Arc::new(limits),
                metrics: metrics.conn.clone(),
                gauge: gauge.clone(),
                router: None,
            },
            stop_rx.clone(),
        ));
        if let Some((l, token)) = control {
            env.spawn(control_plane::serve(l, token, events.clone(), stop_rx));
        }
        log.info(&format!("listening on ws://{addr}"));
        if let Some(c) = control_addr {
            log.info(&format!("control plane on http://{c}"));
        }
        Ok(RoomServer {
            events,
            addr,
            control_addr,
            gauge,
            done: done_rx,
            metrics,
        })
    }
}

/// The configured journal. A file journal that does not exist yet is created by its
/// first write: a room that never acknowledges a mutation (or fails to start) leaves
/// no file behind.
fn open_journal(cfg: &JournalConfig, log: &Logger) -> Result<Arc<dyn Journal>, JournalOpenError> {
    Ok(match cfg {
        JournalConfig::Memory => Arc::new(MemoryJournal::new()),
        JournalConfig::File { path } if !path.exists() => {
            Arc::new(super::deferred_journal::DeferredFileJournal::new(path)?)
        }
        JournalConfig::File { path } => open_file_journal(path, None, None, log)?,
    })
}

/// Opens a file journal (for `doc`'s fleet room: checked to name it, or started with
/// its doc record), logging a torn tail it cut; its appends are covered by the box's
/// `group` sync when there is one (and the file is on its filesystem).
pub(crate) fn open_file_journal(
    path: &std::path::Path,
    doc: Option<&str>,
    group: Option<&Arc<GroupSync>>,
    log: &Logger,
) -> Result<Arc<dyn Journal>, JournalOpenError> {
    let opened = match doc {
        Some(doc) => FileJournal::open_for_doc(path, doc),
        None => FileJournal::open(path),
    };
    let mut journal = opened.map_err(|source| JournalOpenError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    if let Some(group) = group {
        if !journal.sync_through(group.clone()) {
            log.warn(&format!(
                "journal {} is on another filesystem than fleet.data_dir: it syncs its own \
                 appends",
                path.display()
            ));
        }
    }
    let r = journal.recovered();
    if r.truncated_bytes > 0 {
        log.warn(&format!(
            "journal {}: cut a torn tail of {} byte(s) after {} intact record(s) (an append \
             a crash interrupted; it was never acknowledged)",
            path.display(),
            r.truncated_bytes,
            r.records
        ));
    }
    Ok(Arc::new(journal))
}

fn upstream_from_config(config: &Config) -> Result<Arc<dyn UpstreamConnector>, StartError> {
    if let Some(u) = &config.upstream {
        let ast = u.footprint_ast_json()?;
        return Ok(Arc::new(WsUpstream {
            ws_url: u.ws_url.clone(),
            control_url: u.control_url.clone(),
            auth_token: u.auth_token.clone(),
            footprint_ast: JsValue::from_serde(&ast),
            lease_ttl_ms: u.lease_ttl_ms,
            client_id: u.client_id.clone(),
            max_frame_bytes: u.max_frame_bytes,
        }));
    }
    if let Some(d) = &config.demo {
        return Ok(Arc::new(DemoUpstream::new(DemoData::from_file(&d.data)?)));
    }
    Err(StartError::NoUpstream)
}

/// A running room server.
#[derive(Debug)]
pub struct RoomServer {
    events: Sender<Event>,
    addr: SocketAddr,
    control_addr: Option<SocketAddr>,
    gauge: Arc<conn::SocketGauge>,
    done: Receiver<()>,
    metrics: Arc<Metrics>,
}

impl RoomServer {
    /// A builder for `config`.
    pub fn builder(config: Config) -> RoomServerBuilder {
        RoomServerBuilder {
            config,
            registry: Registry::new(),
            journal: None,
            authority: None,
            upstream: None,
            env: None,
            logger: None,
        }
    }

    /// The bound downstream address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound downstream port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The bound control-plane port (0 without a control plane).
    pub fn control_port(&self) -> u16 {
        self.control_addr.map_or(0, |a| a.port())
    }

    /// The server's counters.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    async fn ask<T>(&self, make: impl FnOnce(Sender<T>) -> Control) -> Option<T> {
        let (tx, rx) = async_channel::bounded(1);
        self.events.send(Event::Control(make(tx))).await.ok()?;
        rx.recv().await.ok()
    }

    /// Resolves when the current incarnation is live (at once if it is); never if the
    /// server stopped first.
    pub async fn await_live(&self) {
        if self.ask(Control::AwaitLive).await.is_none() {
            std::future::pending::<()>().await;
        }
    }

    /// This incarnation's downstream bootId (rotates on every incarnation death).
    pub async fn boot_id(&self) -> Option<String> {
        self.ask(Control::BootId).await
    }

    /// `/stats` as JSON text.
    pub async fn stats(&self) -> Option<String> {
        self.ask(Control::Stats).await
    }

    /// Fires the write-behind flush now and waits for its settlement (a no-op without
    /// an authority or with nothing to flush).
    pub async fn flush_now(&self) {
        let _ = self.ask(Control::FlushNow).await;
    }

    /// Drain-before-downgrade: flushes until nothing is dirty or pending; returns the
    /// last committed flush seq.
    pub async fn drain(&self) -> Result<u64, DrainError> {
        self.ask(Control::Drain)
            .await
            .unwrap_or(Err(DrainError::Closed))
    }

    /// Revokes `user`: returns how many subscriptions were dropped.
    pub async fn revoke(&self, user: &str) -> u64 {
        let user = user.to_string();
        self.ask(|reply| Control::Revoke { user, reply })
            .await
            .unwrap_or(0)
    }

    /// Resolves once the room task has stopped (shut down, or fenced by the authority).
    pub async fn stopped(&self) {
        let _ = self.done.recv().await;
    }

    /// Whether the room task has stopped.
    pub fn is_stopped(&self) -> bool {
        self.done.is_closed()
    }

    /// Stops at once, like a crash (tests and supervisors): the group-commit queue is not
    /// journaled, nothing is drained, sockets are dropped without a close frame.
    pub async fn abort(&self) {
        let _ = self.ask(Control::Abort).await;
        self.stopped().await;
    }

    /// Graceful shutdown: stop accepting, journal the group commit, flush and drain (with
    /// an authority; at most 10 s), close every socket with 1001, and wait (at most a few
    /// seconds) for the sockets to go.
    pub async fn shutdown(&self) {
        let _ = self.ask(Control::Shutdown).await;
        self.stopped().await;
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while self.gauge.active.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            smol::Timer::after(Duration::from_millis(10)).await;
        }
    }
}

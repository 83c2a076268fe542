//! The room task: one task owns the [`JsonRoom`] and every piece of server state, and
//! loops "wait for an event or a deadline → call the core → drain → send".
//!
//! Everything else (connection tasks, the upstream socket, the journal writer, flush
//! settlements, the control plane) talks to it through [`Event`]s on one channel, so a
//! connection's frames are handled in arrival order and the core is never shared.
//!
//! The handlers live in sibling files by leg: `upstream` (incarnations), `downstream`
//! (subscriptions, progress, the send budget), `leases` (expiry, revocation), `writes`
//! (mutations, group commit, acks) with its `journal_writer`, `boot` (journal replay
//! before live), `flush` (write-behind, drain, fencing) and `control`.

mod binding;
mod boot;
mod control;
mod downstream;
mod flush;
mod ids;
mod journal_writer;
mod leases;
mod limits;
mod timers;
mod upstream;
mod writes;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use async_channel::{Receiver, Sender};
use futures_lite::FutureExt;
use rindle_room_core::contract::JsonRoom;

use super::authority::Authority;
use super::clock::Env;
use super::conn::{ConnOut, InboundSlot};
use super::frames::RecordedOutcome;
use super::log::Logger;
use super::metrics::Metrics;
use super::settings::Settings;
use super::upstream::UpstreamConnector;
use crate::config::Config;
use crate::journal::{Journal, JournalEntry};
use crate::mutators::Registry;

pub(crate) use boot::BootData;
pub(crate) use control::Control;
pub(crate) use flush::FlushSettlement;
pub(crate) use ids::new_boot_id;
pub(crate) use timers::Timers;

/// Everything the room task reacts to.
pub(crate) enum Event {
    /// An upstream socket opened (`gen` numbers sockets; stale ones are ignored).
    UpOpen {
        gen: u64,
        to_upstream: Sender<String>,
    },
    /// A frame from upstream socket `gen`.
    UpFrame { gen: u64, text: String },
    /// Upstream socket `gen` closed (or never opened: `error`).
    UpClosed { gen: u64, error: Option<String> },
    /// A lease re-mint after an upstream `queryError` finished.
    LeaseMinted { result: Result<String, String> },
    /// A downstream websocket completed its handshake.
    ConnOpen { id: u64, out: ConnOut },
    /// A downstream frame, holding its place in the connection's inbound window until
    /// the event is dropped.
    ConnMsg {
        id: u64,
        text: String,
        slot: InboundSlot,
    },
    /// A downstream socket closed.
    ConnClosed { id: u64 },
    /// A group-commit append returned.
    Appended {
        incarnation: u64,
        batch: Vec<JournalEntry>,
        result: Result<(), String>,
    },
    /// The boot I/O (journal replay source, flush settlement, lmid probe) finished.
    BootDone {
        incarnation: u64,
        result: Result<BootData, boot::BootFailure>,
    },
    /// A flush settled (or failed).
    FlushSettled(FlushSettlement),
    /// A control-plane or embedder request.
    Control(Control),
}

/// Flags the room task's helpers read without a round trip.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// The current incarnation number.
    pub incarnation: AtomicU64,
    /// The server is closed (shut down or moved).
    pub closed: AtomicBool,
    /// Fenced by the authority: terminal.
    pub moved: AtomicBool,
}

impl Shared {
    pub(crate) fn stopping(&self) -> bool {
        self.closed.load(Ordering::SeqCst) || self.moved.load(Ordering::SeqCst)
    }
}

/// One downstream connection's state.
#[derive(Debug)]
pub(crate) struct Conn {
    pub out: ConnOut,
    /// queryId (as JS text) → its subscription key and downstream epoch.
    pub queries: HashMap<String, QueryEnt>,
    /// The `init` clientID.
    pub client_id: Option<String>,
    /// The subject bound by the first verified lease.
    pub sub: Option<String>,
    /// When the socket opened (room clock, ms): the first-frame deadline counts from it.
    pub opened_at: u64,
    /// Whether it sent a valid `init` or `subscribe` yet.
    pub identified: bool,
    /// Subscribes held until the room is live.
    pub held_subs: usize,
    /// `pushMutation`s held until the room is live.
    pub held_mutes: usize,
}

/// A `(connection, queryId)` subscription.
#[derive(Clone, Debug)]
pub(crate) struct QueryEnt {
    pub sub_key: String,
    pub epoch: u64,
}

/// Where a subscriber's frames go, and its lease.
#[derive(Clone, Debug)]
pub(crate) struct SubMeta {
    pub conn: u64,
    pub qid: f64,
    /// The lease subject (`""` for the lmid system subscription).
    pub user: String,
    /// Lease expiry, ms (`INFINITY` for the lmid subscription).
    pub exp: f64,
}

/// What the room task is built from.
pub(crate) struct Parts {
    pub env: Env,
    pub log: Logger,
    pub metrics: Arc<Metrics>,
    pub settings: Arc<Settings>,
    /// The host's mutators (win over the configuration's on a name clash).
    pub host_registry: Registry,
    /// The configuration, when its `[mutators.*]` / `writes.crud` build the registry.
    pub config: Option<Arc<Config>>,
    pub journal: Option<Arc<dyn Journal>>,
    pub authority: Option<Arc<dyn Authority>>,
    pub upstream: Arc<dyn UpstreamConnector>,
    pub lease_token: String,
    pub placement_epoch: u64,
    pub max_flush_seq: u64,
    pub stop_listeners: Sender<()>,
}

/// The room task's state.
pub(crate) struct Actor {
    pub env: Env,
    pub log: Logger,
    pub metrics: Arc<Metrics>,
    pub settings: Arc<Settings>,
    /// This incarnation's registry (rebuilt from the config and the host's at each boot).
    pub registry: Registry,
    pub host_registry: Registry,
    pub config: Option<Arc<Config>>,
    pub journal: Option<Arc<dyn Journal>>,
    pub authority: Option<Arc<dyn Authority>>,
    pub connector: Arc<dyn UpstreamConnector>,
    pub events: Sender<Event>,
    pub shared: Arc<Shared>,
    pub timers: Timers,
    /// Dropped to stop the accept loops (listener, control plane).
    pub stop_listeners: Option<Sender<()>>,
    /// The room task's own exit flag.
    pub stopped: bool,

    // ---- the incarnation ----
    pub room: Option<JsonRoom>,
    pub live: bool,
    pub incarnation: u64,
    pub boot_id: String,
    pub live_waiters: Vec<Sender<()>>,

    // ---- the upstream leg ----
    pub up: Option<(u64, Sender<String>)>,
    pub up_gen: u64,
    pub lease_token: String,
    pub subscribe_in_flight: bool,
    pub reconnect_delay_ms: u64,
    pub upstream_boot: Option<String>,
    pub upstream_cv_min: Option<f64>,
    /// The upstream `queryError` frame to re-handle when a re-mint failed.
    pub remint_frame: Option<String>,
    pub minting: bool,

    // ---- the downstream leg ----
    pub conns: BTreeMap<u64, Conn>,
    /// clientID → the connections that sent `init` with it (the ack's progress targets).
    pub client_conns: HashMap<String, Vec<u64>>,
    pub subs: BTreeMap<String, SubMeta>,
    /// clientID → the subject it is bound to (see `binding`).
    pub client_subjects: HashMap<String, String>,
    pub revoked: HashMap<String, u64>,
    pub pending_subs: Vec<(u64, rindle_room_core::json::tree::JsValue)>,
    pub logged_scope_skew: HashSet<String>,

    // ---- the write plane ----
    pub pending_mutes: Vec<(u64, writes::Envelope)>,
    pub unacked: HashMap<String, VecDeque<(u64, u64)>>,
    pub outcomes: HashMap<String, VecDeque<(u64, RecordedOutcome)>>,
    pub ack_queue: Vec<JournalEntry>,
    pub journal_jobs: Option<Sender<writes::JournalJob>>,
    pub known_clients: BTreeSet<String>,
    pub appended_since_compact: u64,

    // ---- the write-behind flush ----
    pub placement_epoch: u64,
    pub flush_seq: u64,
    pub flush_busy: bool,
    pub flushes_confirmed: u64,
    pub last_committed_flush_seq: u64,
    pub ok_since_compact: u64,
    pub flush_waiters: Vec<Sender<()>>,
    pub drains: Vec<flush::DrainWaiter>,
    pub shutdown_reply: Option<Sender<()>>,
}

impl Actor {
    /// Builds the room task's state and its event channel.
    pub(crate) fn new(parts: Parts) -> (Actor, Receiver<Event>) {
        let (events, rx) = async_channel::unbounded();
        let journal_jobs = parts.journal.as_ref().map(|j| {
            journal_writer::spawn(
                &parts.env,
                j.clone(),
                events.clone(),
                parts.metrics.clone(),
                parts.log.clone(),
            )
        });
        let now = parts.env.now_ms();
        let sweep = parts.settings.sweep_interval_ms;
        let actor = Actor {
            env: parts.env,
            log: parts.log,
            metrics: parts.metrics,
            settings: parts.settings,
            registry: parts.host_registry.clone(),
            host_registry: parts.host_registry,
            config: parts.config,
            journal: parts.journal,
            authority: parts.authority,
            connector: parts.upstream,
            events,
            shared: Arc::new(Shared::default()),
            timers: Timers {
                sweep: Some(now + sweep),
                ..Timers::default()
            },
            stop_listeners: Some(parts.stop_listeners),
            stopped: false,
            room: None,
            live: false,
            incarnation: 0,
            boot_id: new_boot_id(),
            live_waiters: Vec::new(),
            up: None,
            up_gen: 0,
            lease_token: parts.lease_token,
            subscribe_in_flight: false,
            reconnect_delay_ms: upstream::RESUBSCRIBE_DELAY_MS,
            upstream_boot: None,
            upstream_cv_min: None,
            remint_frame: None,
            minting: false,
            conns: BTreeMap::new(),
            client_conns: HashMap::new(),
            subs: BTreeMap::new(),
            client_subjects: HashMap::new(),
            revoked: HashMap::new(),
            pending_subs: Vec::new(),
            logged_scope_skew: HashSet::new(),
            pending_mutes: Vec::new(),
            unacked: HashMap::new(),
            outcomes: HashMap::new(),
            ack_queue: Vec::new(),
            journal_jobs,
            known_clients: BTreeSet::new(),
            appended_since_compact: 0,
            placement_epoch: parts.placement_epoch,
            flush_seq: parts.max_flush_seq + 1,
            flush_busy: false,
            flushes_confirmed: 0,
            last_committed_flush_seq: parts.max_flush_seq,
            ok_since_compact: 0,
            flush_waiters: Vec::new(),
            drains: Vec::new(),
            shutdown_reply: None,
        };
        (actor, rx)
    }

    /// A sender into this task (for the server handle).
    pub(crate) fn sender(&self) -> Sender<Event> {
        self.events.clone()
    }

    /// Runs until shut down or moved: wait for an event or the next deadline, handle it.
    pub(crate) async fn run(mut self, rx: Receiver<Event>) {
        self.connect_upstream();
        while !self.stopped {
            let next = self.timers.next();
            let event = match next {
                Some(deadline) => {
                    let sleep = self.env.clock.sleep_until(deadline);
                    async { Some(rx.recv().await) }
                        .or(async {
                            sleep.await;
                            None
                        })
                        .await
                }
                None => Some(rx.recv().await),
            };
            match event {
                Some(Ok(ev)) => {
                    self.handle(ev);
                    // The event branch wins while events keep coming: check the deadline
                    // here too, or a steady stream of frames would hold back the group
                    // commit (and the lease sweep, the flush) until the queue ran dry.
                    if self.timers.next().is_some_and(|d| d <= self.env.now_ms()) {
                        self.fire_due_timers();
                    }
                }
                Some(Err(_)) => break, // every sender is gone
                None => self.fire_due_timers(),
            }
        }
        self.log.debug("room task stopped");
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::UpOpen { gen, to_upstream } => self.on_up_open(gen, to_upstream),
            Event::UpFrame { gen, text } => {
                if self.up.as_ref().is_some_and(|(g, _)| *g == gen) {
                    self.on_upstream_frame(&text);
                }
            }
            Event::UpClosed { gen, error } => self.on_up_closed(gen, error),
            Event::LeaseMinted { result } => self.on_lease_minted(result),
            Event::ConnOpen { id, out } => self.on_conn_open(id, out),
            Event::ConnMsg { id, text, slot } => {
                self.on_conn_msg(id, &text);
                drop(slot);
            }
            Event::ConnClosed { id } => self.on_conn_closed(id),
            Event::Appended {
                incarnation,
                batch,
                result,
            } => self.on_appended(incarnation, batch, result),
            Event::BootDone {
                incarnation,
                result,
            } => self.on_boot_done(incarnation, result),
            Event::FlushSettled(s) => self.on_flush_settled(s),
            Event::Control(c) => self.on_control(c),
        }
    }

    fn fire_due_timers(&mut self) {
        let now = self.env.now_ms();
        let due = |slot: &mut Option<u64>| {
            if slot.is_some_and(|d| d <= now) {
                *slot = None;
                true
            } else {
                false
            }
        };
        if due(&mut self.timers.sweep) {
            self.timers.sweep = Some(now + self.settings.sweep_interval_ms);
            self.sweep();
        }
        if due(&mut self.timers.group_commit) {
            self.flush_journal();
        }
        if due(&mut self.timers.flush) {
            self.fire_flush();
        }
        if due(&mut self.timers.resubscribe) {
            self.send_subscribe();
        }
        if due(&mut self.timers.reconnect) {
            self.connect_upstream();
        }
        if due(&mut self.timers.shutdown) {
            self.shutdown_deadline_passed();
        }
        if due(&mut self.timers.remint) {
            if let Some(frame) = self.remint_frame.take() {
                if !self.shared.stopping() {
                    self.on_upstream_frame(&frame);
                }
            }
        }
    }

    /// Whether the server is closed or moved.
    pub(crate) fn closed(&self) -> bool {
        self.shared.stopping()
    }
}

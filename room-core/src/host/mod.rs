//! The room host: the rules of seed 002's room shell as a sans-IO state machine — the
//! upstream leg and its incarnations, leases and revocation, subject and clientID
//! binding, the write path with its group commit, acks and outcomes, the author's
//! progress holdback, the write-behind flush and drain, the control plane's answers and
//! every per-connection limit of docs/security.md.
//!
//! A driver owns sockets, files, HTTP and timers; the host owns every decision:
//!
//! ```text
//!   driver ── handle(now, Input, &mut dyn Driver) ──▶ Host ── poll_output() ──▶ Output ── driver
//!          ◀────────────── next_deadline() / handle_timeout(now) ───────────────
//! ```
//!
//! - [`Host::handle`] takes one [`Input`] (a frame, a closed socket, a journal or
//!   authority result, a control request) at time `now` (ms, the driver's clock);
//!   mutators run synchronously inside it through [`Driver::run_mutator`].
//! - [`Host::poll_output`] hands out what to do, in order: frames to send, sockets to
//!   close, journal and authority operations (each with an [`IoId`] the driver answers),
//!   log lines.
//! - [`Host::next_deadline`] is the host's one timer (group commit, sweep, flush
//!   debounce, retry backoff, reconnect, shutdown); call [`Host::handle_timeout`] when it
//!   passes.
//!
//! Start with [`Host::new`] and [`Host::start`]; the host asks for what it needs next
//! (read the journal, claim the epoch, mint a lease, open the upstream link).

mod ack;
mod authority;
mod binding;
mod boot;
mod config;
mod control;
mod downstream;
mod flush;
pub mod frames;
mod http_calls;
mod io;
pub mod json;
mod leases;
mod limits;
mod metrics;
mod newcomer;
mod upstream;
mod wire;
mod writes;

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;

use hashbrown::{HashMap, HashSet};

use crate::contract::JsonRoom;

pub use crate::texts::{bearer_matches, error_body, snippet, REPLY_SNIPPET_BYTES};
pub use config::{HostConfig, Placement, WriteSettings};
pub use control::{route_control, ControlRoute, Gauges};
pub use downstream::{close_reason, MAX_CLOSE_REASON};
pub use flush::{flush_body, pad_offset};
pub use frames::RecordedOutcome;
pub use http_calls::{
    apply_reply, authority_reply, claim_body, claim_reply, lease_reply, lmids_body, lmids_reply,
    materialize_body, AuthorityCall,
};
pub use io::{
    ApplyResult, AuthorityError, AuthorityReply, Backlog, ConnId, ControlReply, ControlRequest,
    Driver, FlushRecord, Input, IoId, JournalContents, JournalEntry, Level, MutatorOutcome,
    Outcome, Output, SendClass,
};
pub use limits::{
    unsent_cut_reason, unsent_cuts, DEFAULT_MAX_UNSENT_BYTES, MAX_HELD_MUTATIONS_PER_CONN,
};
pub use metrics::Counters;
pub use newcomer::{
    MAX_FRAMES_AWAITING_LMID, MAX_KNOWN_NEWCOMERS, MAX_NEWCOMER_FETCHES, NEWCOMER_WAIT_MS,
};

/// The reserved lmid system query, subscribed by name.
pub const LMID_QUERY_NAME: &str = "_rindle/clientLmid";

/// One downstream connection's state.
#[derive(Debug)]
struct Conn {
    /// queryId (as JS text) → its subscription key and downstream epoch.
    queries: HashMap<String, QueryEnt>,
    /// The `init` clientID.
    client_id: Option<String>,
    /// The subject bound by the first verified lease.
    sub: Option<String>,
    /// When the socket opened: the first-frame deadline counts from it.
    opened_at: u64,
    /// Whether it sent a valid `init` or `subscribe` yet.
    identified: bool,
    /// Subscribes held until the room is live.
    held_subs: usize,
    /// `pushMutation`s held until the room is live.
    held_mutes: usize,
    /// lmid subscribes of a clientID the room must ask the authority about, waiting
    /// for the connection's first verified lease (newcomer.rs).
    parked_lmid: Vec<wire::Subscribe>,
    /// When the first of them was parked.
    parked_since: u64,
    /// A close was output: no more frames go to it.
    closing: bool,
}

/// A `(connection, queryId)` subscription.
#[derive(Clone, Debug)]
struct QueryEnt {
    sub_key: String,
    epoch: u64,
}

/// Where a subscriber's frames go, and its lease.
#[derive(Clone, Debug)]
struct SubMeta {
    conn: ConnId,
    qid: f64,
    /// The lease subject (`""` for the lmid system subscription).
    user: String,
    /// Lease expiry, ms (`INFINITY` for the lmid subscription).
    exp: f64,
}

/// An append output and not answered yet: `(io, incarnation, the entries' keys and
/// names)`.
type PendingAppend = (IoId, u64, Vec<ack::Unconfirmed>);

/// The host's named deadlines (ms on the driver's clock).
#[derive(Debug, Default)]
struct Timers {
    sweep: Option<u64>,
    group_commit: Option<u64>,
    flush: Option<u64>,
    resubscribe: Option<u64>,
    reconnect: Option<u64>,
    remint: Option<u64>,
    shutdown: Option<u64>,
    /// Authority retries due, by io.
    retry: Option<u64>,
    /// The earliest newcomer whose frames stop waiting for its lmid fetch.
    newcomer: Option<u64>,
}

impl Timers {
    fn next(&self) -> Option<u64> {
        [
            self.sweep,
            self.group_commit,
            self.flush,
            self.resubscribe,
            self.reconnect,
            self.remint,
            self.shutdown,
            self.retry,
            self.newcomer,
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

/// Where the host is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Created; [`Host::start`] not called yet.
    New,
    /// Reading the journal's flush records, claiming the epoch, minting the lease.
    Starting,
    /// Serving.
    Running,
    /// A shutdown is draining.
    ShuttingDown,
    /// Stopped (shut down, aborted or moved): inert.
    Stopped,
}

/// The room host. See the module docs.
pub struct Host {
    cfg: HostConfig,
    armed_scopes_hash: Option<String>,
    now: u64,
    phase: Phase,
    moved: bool,
    out: VecDeque<Output>,
    /// Bytes of `Send` outputs not polled yet, per connection: `(live, snapshot)`.
    unpolled: HashMap<ConnId, (usize, usize)>,
    timers: Timers,
    next_io: IoId,
    counters: Counters,

    // ---- the incarnation ----
    room: Option<JsonRoom>,
    live: bool,
    incarnation: u64,
    boot_id: String,
    boot_seq: u64,

    // ---- the upstream leg ----
    link: u64,
    link_open: bool,
    lease_token: String,
    subscribe_in_flight: bool,
    reconnect_delay_ms: u64,
    /// Snapshots in a row that passed the room's memory budget (their re-subscribes
    /// back off).
    budget_strikes: u32,
    upstream_boot: Option<String>,
    upstream_cv_min: Option<f64>,
    /// The upstream `queryError` frame to re-handle when a re-mint failed.
    remint_frame: Option<String>,
    minting: bool,

    // ---- the downstream leg ----
    conns: BTreeMap<ConnId, Conn>,
    /// clientID → the connections that sent `init` with it.
    client_conns: HashMap<String, Vec<ConnId>>,
    subs: BTreeMap<String, SubMeta>,
    /// clientID → the subject it is bound to.
    client_subjects: HashMap<String, String>,
    revoked: HashMap<String, u64>,
    pending_subs: Vec<(ConnId, wire::Subscribe)>,
    logged_scope_skew: HashSet<String>,
    /// Log lines below this level are not produced ([`Host::set_log_level`]).
    log_level: Level,

    // ---- the write plane ----
    pending_mutes: Vec<(ConnId, wire::Envelope)>,
    unacked: HashMap<String, VecDeque<(u64, u64)>>,
    /// Journaled entries the authority has not confirmed, in journal order (ack.rs).
    unconfirmed: VecDeque<ack::Unconfirmed>,
    /// clientIDs whose durable lmid this incarnation knows (newcomer.rs).
    lmid_known: HashSet<String>,
    /// Lmid fetches under way, with what waits on them.
    fetching: newcomer::Fetching,
    outcomes: HashMap<String, VecDeque<(u64, RecordedOutcome)>>,
    ack_queue: Vec<JournalEntry>,
    /// Appends output and not answered yet, in order: (io, incarnation, entry keys).
    appends: VecDeque<PendingAppend>,
    known_clients: BTreeSet<String>,
    appended_since_compact: u64,

    // ---- boot and flush I/O ----
    boot: Option<boot::BootIo>,
    placement_epoch: u64,
    flush_seq: u64,
    flush: Option<flush::FlushIo>,
    flushes_confirmed: u64,
    last_committed_flush_seq: u64,
    ok_since_compact: u64,
    flush_waiters: Vec<u64>,
    drains: Vec<flush::DrainWaiter>,
    shutdown_reply: Option<u64>,
    /// The start-up I/O in flight.
    start_io: Option<IoId>,
    /// Authority calls in flight.
    calls: HashMap<IoId, authority::Call>,
    /// Authority calls waiting for their backoff: `(due, call)`.
    retries: Vec<(u64, authority::Call)>,
    /// When the last compaction started (ms; `None`: never in this host).
    last_compact_ms: Option<u64>,
    /// The compaction in flight.
    compact_io: Option<IoId>,
}

impl core::fmt::Debug for Host {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Host")
            .field("doc", &self.cfg.doc_id)
            .field("phase", &self.phase)
            .field("live", &self.live)
            .field("incarnation", &self.incarnation)
            .field("connections", &self.conns.len())
            .field("subscriptions", &self.subs.len())
            .finish_non_exhaustive()
    }
}

impl Host {
    /// A host for `cfg` (checked with [`HostConfig::validate`]). Nothing happens until
    /// [`Host::start`].
    pub fn new(cfg: HostConfig) -> Result<Host, String> {
        cfg.validate()?;
        let armed_scopes_hash = cfg.armed_scopes_hash();
        Ok(Host {
            armed_scopes_hash,
            now: 0,
            phase: Phase::New,
            moved: false,
            out: VecDeque::new(),
            unpolled: HashMap::new(),
            timers: Timers::default(),
            next_io: 1,
            counters: Counters::default(),
            room: None,
            live: false,
            incarnation: 0,
            boot_id: String::new(),
            boot_seq: 0,
            link: 0,
            link_open: false,
            lease_token: String::new(),
            subscribe_in_flight: false,
            reconnect_delay_ms: upstream::RESUBSCRIBE_DELAY_MS,
            budget_strikes: 0,
            upstream_boot: None,
            upstream_cv_min: None,
            remint_frame: None,
            minting: false,
            conns: BTreeMap::new(),
            client_conns: HashMap::new(),
            subs: BTreeMap::new(),
            client_subjects: HashMap::new(),
            revoked: cfg.revoked.iter().cloned().collect(),
            pending_subs: Vec::new(),
            logged_scope_skew: HashSet::new(),
            log_level: Level::Debug,
            pending_mutes: Vec::new(),
            unacked: HashMap::new(),
            unconfirmed: VecDeque::new(),
            lmid_known: HashSet::new(),
            fetching: newcomer::Fetching::new(),
            outcomes: HashMap::new(),
            ack_queue: Vec::new(),
            appends: VecDeque::new(),
            known_clients: BTreeSet::new(),
            appended_since_compact: 0,
            boot: None,
            placement_epoch: 0,
            flush_seq: 1,
            flush: None,
            flushes_confirmed: 0,
            last_committed_flush_seq: 0,
            ok_since_compact: 0,
            flush_waiters: Vec::new(),
            drains: Vec::new(),
            shutdown_reply: None,
            start_io: None,
            calls: HashMap::new(),
            retries: Vec::new(),
            last_compact_ms: None,
            compact_io: None,
            cfg,
        })
        .map(|mut h| {
            h.boot_id = h.fresh_boot_id();
            h
        })
    }

    /// The next incarnation's bootId: a UUID v4 drawn from SHA-256 of the driver's
    /// entropy and a counter.
    fn fresh_boot_id(&mut self) -> String {
        use sha2::{Digest, Sha256};
        self.boot_seq += 1;
        let mut h = Sha256::new();
        h.update(self.cfg.entropy);
        h.update(self.boot_seq.to_le_bytes());
        let digest = h.finalize();
        let mut b = [0u8; 16];
        b.copy_from_slice(&digest[..16]);
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let mut s = String::with_capacity(36);
        for (i, byte) in b.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                s.push('-');
            }
            let hex = b"0123456789abcdef";
            s.push(char::from(hex[usize::from(byte >> 4)]));
            s.push(char::from(hex[usize::from(byte & 15)]));
        }
        s
    }

    /// Starts: with a write plane and an authority, read the journal's flush records and
    /// claim the placement epoch; then mint the upstream lease. [`Output::Started`] (then
    /// the upstream link) or [`Output::StartFailed`] follows. With a
    /// [`Placement`](HostConfig::placement) from room-boot, its epoch and lease stand in
    /// for the claim and the mint.
    pub fn start(&mut self, now: u64) {
        self.now = now;
        if self.phase != Phase::New {
            return;
        }
        self.phase = Phase::Starting;
        if self.cfg.writes.as_ref().is_some_and(|w| w.authority) {
            let io = self.io();
            self.start_io = Some(io);
            self.push(Output::JournalRead { io });
        } else {
            self.first_lease();
        }
    }

    /// Handles one input at `now`.
    pub fn handle(&mut self, now: u64, input: Input<'_>, driver: &mut dyn Driver) {
        self.now = self.now.max(now);
        if self.phase == Phase::Stopped {
            return;
        }
        match input {
            Input::LeaseMinted(result) => self.on_lease_minted(result, driver),
            Input::UpstreamOpened { link } => self.on_up_open(link),
            Input::UpstreamFrame { link, text } => {
                if link == self.link && self.link_open {
                    self.on_upstream_frame(text, driver);
                }
            }
            Input::UpstreamClosed { link, error } => self.on_up_closed(link, error),
            Input::ConnOpened { conn } => self.on_conn_open(conn),
            Input::ConnFrame { conn, text } => self.on_conn_msg(conn, text, driver),
            Input::ConnClosed { conn } => self.on_conn_closed(conn),
            Input::JournalRead { io, result } => self.on_journal_read(io, result, driver),
            Input::JournalWritten { io, result } => self.on_journal_written(io, result, driver),
            Input::Authority { io, result } => self.on_authority(io, result, driver),
            Input::Control { id, request } => self.on_control(id, request, driver),
        }
        self.fire_due_timers(driver);
    }

    /// The earliest time the host wants [`Host::handle_timeout`] called.
    pub fn next_deadline(&self) -> Option<u64> {
        if self.phase == Phase::Stopped {
            return None;
        }
        self.timers.next()
    }

    /// Fires every timer due at `now`.
    pub fn handle_timeout(&mut self, now: u64, driver: &mut dyn Driver) {
        self.now = self.now.max(now);
        self.fire_due_timers(driver);
    }

    /// The next thing to do, in order.
    pub fn poll_output(&mut self) -> Option<Output> {
        let o = self.out.pop_front()?;
        if let Output::Send { conn, text, class } = &o {
            if let Some(u) = self.unpolled.get_mut(conn) {
                match class {
                    SendClass::Live | SendClass::Plain => u.0 = u.0.saturating_sub(text.len()),
                    SendClass::Snapshot => u.1 = u.1.saturating_sub(text.len()),
                }
                if *u == (0, 0) {
                    self.unpolled.remove(conn);
                }
            }
        }
        Some(o)
    }

    /// Produces [`Output::Log`] lines of `level` and above only (default
    /// [`Level::Debug`]: every line). A driver whose logger drops debug lines sets
    /// [`Level::Info`] so the host does not format the per-connection, per-subscription
    /// and per-mutation lines at all.
    pub fn set_log_level(&mut self, level: Level) {
        self.log_level = level;
    }

    /// Whether the current incarnation is live.
    pub fn is_live(&self) -> bool {
        self.live
    }

    /// Whether the host stopped (shut down, aborted or moved).
    pub fn is_stopped(&self) -> bool {
        self.phase == Phase::Stopped
    }

    /// Whether the authority fenced the room (another placement owns the document).
    pub fn is_moved(&self) -> bool {
        self.moved
    }

    /// The current incarnation's downstream bootId.
    pub fn boot_id(&self) -> &str {
        &self.boot_id
    }

    /// The host's counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The current room, when an incarnation is open.
    pub fn room(&self) -> Option<&crate::Room> {
        self.room.as_ref().map(JsonRoom::room)
    }

    /// The claimed placement epoch (0 without an authority).
    pub fn placement_epoch(&self) -> u64 {
        self.placement_epoch
    }

    // ---- internals shared by the legs ----

    fn io(&mut self) -> IoId {
        let io = self.next_io;
        self.next_io += 1;
        io
    }

    fn push(&mut self, o: Output) {
        self.out.push_back(o);
    }

    fn log(&mut self, level: Level, text: String) {
        if level >= self.log_level {
            self.push(Output::Log { level, text });
        }
    }

    /// A [`Level::Debug`] line, formatted only when debug lines are produced.
    fn debug(&mut self, text: impl FnOnce() -> String) {
        if self.log_level <= Level::Debug {
            self.push(Output::Log {
                level: Level::Debug,
                text: text(),
            });
        }
    }

    /// Stopped or moved: no new work (a draining shutdown still serves).
    fn closed(&self) -> bool {
        self.phase == Phase::Stopped || self.moved
    }

    fn shutting_down(&self) -> bool {
        self.phase == Phase::ShuttingDown
    }

    fn fire_due_timers(&mut self, driver: &mut dyn Driver) {
        let now = self.now;
        let due = |slot: &mut Option<u64>| {
            if slot.is_some_and(|d| d <= now) {
                *slot = None;
                true
            } else {
                false
            }
        };
        if due(&mut self.timers.sweep) {
            self.timers.sweep = Some(now + self.cfg.sweep_interval_ms.max(1));
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
        if due(&mut self.timers.retry) {
            self.fire_retries(driver);
        }
        if due(&mut self.timers.newcomer) {
            self.serve_overdue_newcomers(driver);
        }
        if due(&mut self.timers.remint) {
            if let Some(frame) = self.remint_frame.take() {
                if !self.closed() {
                    self.on_upstream_frame(&frame, driver);
                }
            }
        }
    }
}

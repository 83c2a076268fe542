//! The room host: the rules of the published room's Node shell (`@rindle/room`) as a
//! sans-IO state machine — the upstream leg and its incarnations, leases and
//! revocation, subject and clientID binding, the write path with its group commit, acks
//! and outcomes, the author's progress holdback, the write-behind flush and drain, the
//! control plane's answers and every per-connection limit of docs/security.md.
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
//!
//! # Inside
//!
//! [`Host`] is a composition: each leg keeps its own state in its own file, and the host
//! routes inputs and timers to the legs and owns only what they share (the
//! configuration, the clock, the phase).
//!
//! | state | file | what it holds |
//! |---|---|---|
//! | `Incarnation` | `incarnation.rs` | the room opened from the current upstream hello, liveness, bootId |
//! | `Upstream` | `upstream.rs` | the link to the daemon, its lease, reconnect backoff |
//! | `Connections` | `downstream.rs` | sockets, subscriptions, clientID bindings, revocations |
//! | `WritePlane` | `writes.rs` | held and unacknowledged mutations, outcomes, the group commit |
//! | `Newcomers` | `newcomer.rs` | writers whose durable lmid is being fetched |
//! | `Flushing` | `flush.rs` | the write-behind flush, drains, journal compaction |
//! | `Boot` | `boot.rs`, `startup.rs` | the start-up I/O and its retries, the boot-time probe |
//! | `Calls` | `authority.rs` | authority calls in flight and in backoff |
//! | `Timers` | `timers.rs` | the named deadlines |
//! | `Outbox` | `outbox.rs` | outputs not polled yet, the log level |
//!
//! Frames are decoded once, in `wire.rs`, into typed values the legs branch on; the
//! frames the host writes are built in [`frames`]. Errors are typed (`error.rs`). The
//! pieces the fleet shares with the host (error bodies, the bearer check, stranded
//! mutations) live below both, in [`crate::texts`].

mod ack;
mod authority;
mod binding;
mod boot;
mod config;
mod control;
mod downstream;
mod echo_wait;
pub mod encode;
mod error;
mod flush;
pub mod frames;
mod http_calls;
mod incarnation;
mod io;
pub mod journal_record;
pub mod json;
mod leases;
mod limits;
mod liveness;
mod metrics;
mod newcomer;
mod outbox;
mod startup;
mod timers;
mod upstream;
mod wire;
mod writes;

use alloc::string::String;

use crate::contract::JsonRoom;

pub use crate::texts::{bearer_matches, error_body, snippet, REPLY_SNIPPET_BYTES};
pub use config::{DriverLimits, HostConfig, Placement, WriteSettings};
pub use control::{route_control, ControlLimits, ControlRoute, Gauges};
pub use downstream::{close_reason, MAX_CLOSE_REASON};
pub use echo_wait::{DRAIN_ECHO_WAIT_MS, ECHO_WAIT_MS, MAX_AWAITING_ECHO};
pub use error::{ConfigError, DrainError, JournalError, JsonError, MintError, TablesError};
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
pub use liveness::HEARD_EVERY_MS;
pub use metrics::{render_counters, render_prometheus, Counters, SocketCounts};
pub use newcomer::{
    MAX_DEFERRED_FETCHES, MAX_FRAMES_AWAITING_LMID, MAX_KNOWN_NEWCOMERS, MAX_NEWCOMER_FETCHES,
    NEWCOMER_WAIT_MS,
};

/// The reserved lmid system query, subscribed by name.
pub const LMID_QUERY_NAME: &str = "_rindle/clientLmid";

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
///
/// A composition of its legs, each with its own state in its own file; the host routes
/// inputs and timers to them and owns what they share (configuration, clock, phase).
pub struct Host {
    cfg: HostConfig,
    now: u64,
    phase: Phase,
    /// The authority fenced the room: another placement owns the document.
    moved: bool,
    /// Outputs not polled yet, and the log level.
    out: outbox::Outbox,
    timers: timers::Timers,
    next_io: IoId,
    counters: Counters,
    /// The current incarnation: its room, liveness and bootId.
    inc: incarnation::Incarnation,
    /// The upstream leg: the link to the daemon and its lease.
    up: upstream::Upstream,
    /// The downstream leg: connections, subscriptions, bindings, revocations.
    down: downstream::Connections,
    /// The write plane: held and unacknowledged mutations, outcomes, the group commit.
    writes: writes::WritePlane,
    /// Writers whose durable lmid is being fetched.
    newcomers: newcomer::Newcomers,
    /// The write-behind flush, its drains and the journal's compaction.
    flushing: flush::Flushing,
    /// Committed flushes whose journal record waits for their echo.
    echo_wait: echo_wait::EchoWait,
    /// Start-up: the journal read, the epoch claim, the boot-time probe.
    boot: boot::Boot,
    /// Authority calls in flight and waiting for their backoff.
    calls: authority::Calls,
}

impl core::fmt::Debug for Host {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Host")
            .field("doc", &self.cfg.doc_id)
            .field("phase", &self.phase)
            .field("live", &self.inc.live)
            .field("incarnation", &self.inc.number)
            .field("connections", &self.down.conns.len())
            .field("subscriptions", &self.down.subs.len())
            .finish_non_exhaustive()
    }
}

impl Host {
    /// A host for `cfg` (checked with [`HostConfig::validate`]). Nothing happens until
    /// [`Host::start`].
    pub fn new(cfg: HostConfig) -> Result<Host, ConfigError> {
        cfg.validate()?;
        let down = downstream::Connections::new(&cfg);
        let mut inc = incarnation::Incarnation::default();
        inc.next_boot_id(&cfg.entropy);
        Ok(Host {
            now: 0,
            phase: Phase::New,
            moved: false,
            out: outbox::Outbox::default(),
            timers: timers::Timers::default(),
            next_io: 1,
            counters: Counters::default(),
            inc,
            up: upstream::Upstream::default(),
            down,
            writes: writes::WritePlane::default(),
            newcomers: newcomer::Newcomers::default(),
            flushing: flush::Flushing::default(),
            echo_wait: echo_wait::EchoWait::default(),
            boot: boot::Boot::default(),
            calls: authority::Calls::default(),
            cfg,
        })
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
        self.boot.awaiting_start = true;
        self.boot.retry.since = now;
        if self.cfg.writes.as_ref().is_some_and(|w| w.authority) {
            let io = self.io();
            self.boot.start_io = Some(io);
            self.push(Output::JournalRead { io });
        } else {
            self.first_lease();
        }
    }

    /// Handles one input at `now`.
    pub fn handle(&mut self, now: u64, input: Input<'_>, driver: &mut dyn Driver) {
        self.now = self.now.max(now);
        if self.phase == Phase::Stopped {
            // Nothing reaches a stopped host but its control requests, which it still
            // answers (a driver may ask before it learns of the stop).
            if let Input::Control { id, request } = input {
                self.on_control_stopped(id, request);
            }
            return;
        }
        match input {
            Input::LeaseMinted(result) => self.on_lease_minted(result, driver),
            Input::UpstreamOpened { link } => self.on_up_open(link),
            Input::UpstreamFrame { link, text } => {
                if link == self.up.link && self.up.link_open {
                    self.upstream_heard();
                    self.on_upstream_frame(text, driver);
                }
            }
            Input::UpstreamHeard { link } => {
                if link == self.up.link && self.up.link_open {
                    self.upstream_heard();
                }
            }
            Input::UpstreamClosed { link, error } => self.on_up_closed(link, error),
            Input::ConnOpened { conn } => self.on_conn_open(conn),
            Input::ConnFrame { conn, text } => {
                self.conn_heard(conn);
                self.on_conn_msg(conn, text, driver);
            }
            Input::ConnHeard { conn } => self.conn_heard(conn),
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
        self.out.poll()
    }

    /// Produces [`Output::Log`] lines of `level` and above only (default
    /// [`Level::Debug`]: every line). A driver whose logger drops debug lines sets
    /// [`Level::Info`] so the host does not format the per-connection, per-subscription
    /// and per-mutation lines at all.
    pub fn set_log_level(&mut self, level: Level) {
        self.out.log_level = level;
    }

    /// Whether the current incarnation is live.
    pub fn is_live(&self) -> bool {
        self.inc.live
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
        &self.inc.boot_id
    }

    /// The host's counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The current room, when an incarnation is open.
    pub fn room(&self) -> Option<&crate::Room> {
        self.inc.room.as_ref().map(JsonRoom::room)
    }

    /// The claimed placement epoch (0 without an authority).
    pub fn placement_epoch(&self) -> u64 {
        self.boot.placement_epoch
    }

    // ---- internals shared by the legs ----

    fn io(&mut self) -> IoId {
        let io = self.next_io;
        self.next_io += 1;
        io
    }

    fn push(&mut self, o: Output) {
        self.out.push(o);
    }

    fn log(&mut self, level: Level, text: String) {
        self.out.log(level, text);
    }

    /// A [`Level::Debug`] line, formatted only when debug lines are produced.
    fn debug(&mut self, text: impl FnOnce() -> String) {
        self.out.debug(text);
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
        let due = |slot: &mut Option<u64>| timers::Timers::take_due(slot, now);
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
        if due(&mut self.timers.startup) {
            self.fire_startup_retry();
        }
        if due(&mut self.timers.retry) {
            self.fire_retries(driver);
        }
        if due(&mut self.timers.newcomer) {
            self.serve_overdue_newcomers(driver);
        }
        if due(&mut self.timers.up_silence) {
            self.check_upstream_silence();
        }
        if due(&mut self.timers.drain_echo) {
            self.poll_drains(); // past the wait: the drains answer
        }
        if due(&mut self.timers.remint) {
            if let Some(frame) = self.up.remint_frame.take() {
                if !self.closed() {
                    self.on_upstream_frame(&frame, driver);
                }
            }
        }
    }
}

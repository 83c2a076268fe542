//! The box's room table as a sans-IO state machine, in the host's style: a driver feeds
//! [`Input`]s with [`RoomTable::handle`], calls [`RoomTable::handle_timeout`] at
//! [`RoomTable::next_deadline`], and carries out every [`Output`] from
//! [`RoomTable::poll_output`]. Time is an argument (ms); nothing here sleeps or reads a
//! clock, so a box can be run on a virtual clock in tests.
//!
//! A doc's slot goes
//!
//! ```text
//!   (none) ──connect──▶ Booting: Queued ─slot─▶ Calling ⇄ Backoff ─grant─▶ Starting
//!                                                                           │ started
//!   (none / record) ◀──stopped── Stopping ◀──drained, idle── Draining ◀─── Live
//!           ▲                        │ connections waiting                  │
//!           │                        └──────────────▶ Booting (a new placement)
//! ```
//!
//! Every rule of a box lives here or in the functions it calls: who gets a boot
//! ([`BootAdmission`]: slots, queue, refused-document cache), the room limit, the memory
//! budget ([`budget_plan`]), when an idle room hibernates ([`idle_to_hibernate`]), the
//! room-boot retry backoff ([`boot_backoff_ms`]) and deadline, how long a connection
//! waits for its room, and what every refusal closes with. The driver does the HTTP, the
//! room tasks and the sockets, and reports back.

mod boots;
mod rooms;
#[cfg(test)]
mod tests;

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;

use super::admission::{BootAdmission, BootLimits};
use super::boot_wire::{BootFailure, BootGrant};
use super::control::{RoomState, RoomSummary};
use crate::host::{ConfigError, DrainError, Level};

/// Why a room task did not start.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartError {
    /// The host refused the configuration assembled from the grant.
    Config(ConfigError),
    /// Start-up failed (the journal, the authority, the lease): the driver's words.
    Failed(String),
}

impl From<ConfigError> for StartError {
    fn from(e: ConfigError) -> StartError {
        StartError::Config(e)
    }
}

impl From<String> for StartError {
    fn from(message: String) -> StartError {
        StartError::Failed(message)
    }
}

impl core::fmt::Display for StartError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            StartError::Config(e) => core::fmt::Display::fmt(e, f),
            StartError::Failed(m) => f.write_str(m),
        }
    }
}

impl core::error::Error for StartError {}

/// A connection waiting for (or served by) a room, numbered by the driver.
pub type ConnId = u64;

/// One boot of a doc's room: every room the table starts gets a new one, so a report
/// about a room that has since stopped and booted again is told apart.
pub type Incarnation = u64;

/// The close for connections that arrive while the box shuts down.
pub const CLOSE_SHUTTING_DOWN: (u16, &str) = (1001, "the box is shutting down");

/// The table's limits (the `[fleet]` settings that decide things).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableRules {
    /// Rooms booting, live or stopping at once (after the descriptor budget).
    pub max_rooms: usize,
    /// How long a connection waits for its room, and how long a boot retries (ms).
    pub boot_timeout_ms: u64,
    /// A room with no connection for this long drains and hibernates (ms).
    pub idle_evict_ms: u64,
    /// The live rooms' retained bytes the box keeps under (`None`: no budget).
    pub max_box_bytes: Option<u64>,
    /// Boot slots, queue and refused-document cache.
    pub boot: BootLimits,
}

/// What happened, as the driver reports it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[must_use = "an input does nothing until it is handed to `RoomTable::handle`"]
pub enum Input {
    /// A connection (already past the [gate](super::gate)) wants `doc`'s room.
    Connect {
        /// The driver's number for it.
        conn: ConnId,
        /// The doc.
        doc: String,
    },
    /// A connection still waiting for its room went away.
    Abandon {
        /// The connection.
        conn: ConnId,
    },
    /// A connection the table admitted closed.
    Disconnect {
        /// Its doc.
        doc: String,
        /// The room it was admitted to.
        incarnation: Incarnation,
    },
    /// The answer to [`Output::CallRoomBoot`].
    BootReply {
        /// The doc.
        doc: String,
        /// The grant, or why there is none.
        reply: Result<BootGrant, BootFailure>,
    },
    /// The answer to [`Output::StartRoom`]: the room task is up (its journal read) or
    /// failed to start.
    Started {
        /// The doc.
        doc: String,
        /// The room.
        incarnation: Incarnation,
        /// `Err`: why it did not start.
        result: Result<(), StartError>,
    },
    /// A room drained (the answer to [`Output::Drain`], or to a drain the operator
    /// asked for): `Ok(final flush seq)` or why not.
    Drained {
        /// The doc.
        doc: String,
        /// The room.
        incarnation: Incarnation,
        /// The outcome.
        result: Result<u64, DrainError>,
    },
    /// A room task ended (asked to, fenced, crashed).
    Stopped {
        /// The doc.
        doc: String,
        /// The room.
        incarnation: Incarnation,
    },
    /// The answer to [`Output::MeasureMemory`]: retained bytes of the live rooms that
    /// answered.
    Memory {
        /// `(doc, bytes)`.
        retained: Vec<(String, u64)>,
    },
    /// Stop `doc`'s live room now (its next connection boots it again).
    Stop {
        /// The doc.
        doc: String,
        /// Why.
        why: StopWhy,
    },
    /// Start-up settlement is done: the box is ready.
    Settled,
    /// The box shuts down: no new boots.
    Shutdown,
}

/// Why a room is stopped on request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopWhy {
    /// Its upstream lease died: it needs a new placement.
    Relet,
    /// The operator asked (the room drains as it shuts down).
    Operator,
}

/// What a hibernated room leaves behind (it answers `/drain?doc=` and `/rooms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HibernationRecord {
    /// Its last placement epoch.
    pub epoch: u64,
    /// When it stopped (ms).
    pub since_ms: u64,
    /// The last committed flush seq its final drain reported, when it drained.
    pub final_flush_seq: Option<u64>,
}

/// What the table asks the driver to do.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[must_use = "an output is work the driver must carry out"]
pub enum Output {
    /// POST room-boot for `doc`, giving up after `timeout_ms`; answer with
    /// [`Input::BootReply`].
    CallRoomBoot {
        /// The doc.
        doc: String,
        /// The call's own timeout (the boot's remaining time).
        timeout_ms: u64,
    },
    /// Assemble and start `doc`'s room from its grant; answer with [`Input::Started`]
    /// and, when its task ends, [`Input::Stopped`].
    StartRoom {
        /// The doc.
        doc: String,
        /// Its number, for the reports about it.
        incarnation: Incarnation,
        /// What room-boot granted.
        grant: BootGrant,
    },
    /// Route `conn` to `doc`'s live room; report its close with [`Input::Disconnect`].
    Admit {
        /// The connection.
        conn: ConnId,
        /// The doc.
        doc: String,
        /// The room.
        incarnation: Incarnation,
    },
    /// Close `conn` with this code and reason.
    Refuse {
        /// The connection.
        conn: ConnId,
        /// The close code.
        code: u16,
        /// The close reason.
        reason: String,
    },
    /// Drain `doc`'s room (flush until nothing is dirty or pending); answer with
    /// [`Input::Drained`].
    Drain {
        /// The doc.
        doc: String,
        /// The room.
        incarnation: Incarnation,
    },
    /// Shut `doc`'s room down (it journals, drains, closes its sockets with 1001);
    /// [`Input::Stopped`] follows.
    StopRoom {
        /// The doc.
        doc: String,
        /// The room.
        incarnation: Incarnation,
    },
    /// Ask every live room what it retains; answer with [`Input::Memory`].
    MeasureMemory,
    /// `doc`'s room stopped and nobody waits for it: keep its record, and remove its
    /// journal directory when the journal holds nothing.
    Hibernated {
        /// The doc.
        doc: String,
        /// Its record.
        record: HibernationRecord,
    },
    /// A log line.
    Log {
        /// Its level.
        level: Level,
        /// Its text.
        text: String,
    },
}

/// What the table counted (`/stats`, `/metrics`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableCounters {
    /// Rooms started.
    pub boots: u64,
    /// Boots that failed (room-boot or start-up).
    pub boot_failures: u64,
    /// Rooms that stopped and left a record.
    pub hibernations: u64,
}

/// A connection waiting for a room, until its deadline.
#[derive(Clone, Copy, Debug)]
struct Waiter {
    conn: ConnId,
    until: u64,
}

/// The room table.
#[derive(Debug)]
pub struct RoomTable {
    rules: TableRules,
    admission: BootAdmission,
    boots: BTreeMap<String, boots::Boot>,
    rooms: BTreeMap<String, rooms::Room>,
    /// Which doc each waiting connection waits for.
    waiting: BTreeMap<ConnId, String>,
    outputs: VecDeque<Output>,
    next_incarnation: Incarnation,
    next_sweep: Option<u64>,
    /// When the outstanding [`Output::MeasureMemory`] was asked.
    measuring_since: Option<u64>,
    over_budget: bool,
    ready: bool,
    shutting_down: bool,
    counters: TableCounters,
}

impl RoomTable {
    /// An empty table.
    pub fn new(rules: TableRules) -> RoomTable {
        RoomTable {
            admission: BootAdmission::new(rules.boot.clone()),
            rules,
            boots: BTreeMap::new(),
            rooms: BTreeMap::new(),
            waiting: BTreeMap::new(),
            outputs: VecDeque::new(),
            next_incarnation: 1,
            next_sweep: None,
            measuring_since: None,
            over_budget: false,
            ready: false,
            shutting_down: false,
            counters: TableCounters::default(),
        }
    }

    /// Takes one input at `now` (ms).
    pub fn handle(&mut self, now: u64, input: Input) {
        match input {
            Input::Connect { conn, doc } => self.connect(now, conn, doc),
            Input::Abandon { conn } => self.abandon(conn),
            Input::Disconnect { doc, incarnation } => self.disconnect(now, &doc, incarnation),
            Input::BootReply { doc, reply } => self.boot_reply(now, &doc, reply),
            Input::Started {
                doc,
                incarnation,
                result,
            } => self.started(now, &doc, incarnation, result),
            Input::Drained {
                doc,
                incarnation,
                result,
            } => self.drained(now, &doc, incarnation, result),
            Input::Stopped { doc, incarnation } => self.stopped(now, &doc, incarnation),
            Input::Memory { retained } => self.memory(retained),
            Input::Stop { doc, why } => self.stop(&doc, why),
            Input::Settled => self.ready = true,
            Input::Shutdown => self.shutting_down = true,
        }
        self.arm_sweep(now);
    }

    /// Does what is due at `now`: queued boots and waiting connections whose time ran
    /// out, boot retries, the idle sweep and the memory budget.
    pub fn handle_timeout(&mut self, now: u64) {
        self.expire_queued(now);
        self.expire_waiters(now);
        self.retry_boots(now);
        if self.next_sweep.is_some_and(|at| at <= now) {
            self.next_sweep = None;
            self.sweep(now);
        }
        self.arm_sweep(now);
    }

    /// When [`RoomTable::handle_timeout`] next has something to do.
    pub fn next_deadline(&self) -> Option<u64> {
        let boots = self.boots.values().filter_map(boots::Boot::deadline).min();
        let stopping = self
            .rooms
            .values()
            .filter_map(rooms::Room::waiter_deadline)
            .min();
        [
            self.admission.next_deadline(),
            boots,
            stopping,
            self.next_sweep,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next thing to do, if any.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    /// `doc`'s room when it is live (serving connections), by incarnation.
    pub fn live(&self, doc: &str) -> Option<Incarnation> {
        self.rooms
            .get(doc)
            .filter(|r| r.serving())
            .map(|r| r.incarnation)
    }

    /// Whether `doc` has a slot (booting, live or stopping).
    pub fn has_slot(&self, doc: &str) -> bool {
        self.boots.contains_key(doc) || self.rooms.contains_key(doc)
    }

    /// Whether `/readyz` says ready: settled and not shutting down.
    pub fn is_ready(&self) -> bool {
        self.ready && !self.shutting_down
    }

    /// Whether a shutdown began.
    pub fn shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// Whether the live rooms are past `max_box_bytes` with no idle room left to
    /// hibernate (new boots are refused).
    pub fn over_budget(&self) -> bool {
        self.over_budget
    }

    /// What the table counted.
    pub fn counters(&self) -> TableCounters {
        self.counters
    }

    /// Boots in flight and queued.
    pub fn boots_in_flight(&self) -> (usize, usize) {
        (self.admission.in_flight(), self.admission.queued())
    }

    /// Connections waiting for a room.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Every slot (booting, live, stopping), unsorted.
    pub fn summaries(&self) -> Vec<RoomSummary> {
        let booting = self.boots.keys().map(|doc| RoomSummary {
            doc: doc.clone(),
            state: RoomState::Booting,
            connections: 0,
            epoch: 0,
            hibernated_at_ms: None,
        });
        let rooms = self.rooms.iter().map(|(doc, r)| RoomSummary {
            doc: doc.clone(),
            state: if r.serving() {
                RoomState::Live
            } else {
                RoomState::Stopping
            },
            connections: r.conns,
            epoch: r.epoch,
            hibernated_at_ms: None,
        });
        booting.chain(rooms).collect()
    }

    fn log(&mut self, level: Level, text: String) {
        self.outputs.push_back(Output::Log { level, text });
    }

    fn refuse(&mut self, conn: ConnId, (code, reason): (u16, &str)) {
        self.waiting.remove(&conn);
        self.outputs.push_back(Output::Refuse {
            conn,
            code,
            reason: String::from(reason),
        });
    }

    fn refuse_all(&mut self, waiters: Vec<Waiter>, close: (u16, &str)) {
        for w in waiters {
            self.refuse(w.conn, close);
        }
    }

    fn new_incarnation(&mut self) -> Incarnation {
        let n = self.next_incarnation;
        self.next_incarnation += 1;
        n
    }

    /// The sweep runs a few times per idle period while any room is up.
    fn arm_sweep(&mut self, now: u64) {
        if self.rooms.is_empty() {
            self.next_sweep = None;
        } else if self.next_sweep.is_none() {
            let tick = (self.rules.idle_evict_ms / 4).clamp(10, 1_000);
            self.next_sweep = Some(now.saturating_add(tick));
        }
    }
}

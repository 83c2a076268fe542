//! What crosses the host's boundary: [`Input`]s a driver feeds in, [`Output`]s it
//! carries out, and the [`Driver`] callbacks the host makes while it handles an input
//! (mutators, a socket's backlog, fresh boot ids).
//!
//! Every output that starts I/O carries an [`IoId`]; the driver answers it with the
//! input of the same id. Journal operations must be carried out in the order they are
//! output (one at a time, or merged — but their results come back in order): the host
//! acknowledges mutations in journal order.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use super::{DrainError, JournalError, MintError, TablesError};
use crate::schema::TableSchema;
use crate::write::keyed::MutationTx;

/// A downstream connection, numbered by the driver (unique for the host's lifetime).
pub type ConnId = u64;

/// One I/O operation the host started, answered by the input with the same id.
pub type IoId = u64;

/// The recorded verdict of a journaled mutation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Applied: replay re-invokes the mutator.
    Applied,
    /// Rejected: replay consumes the mid without running anything.
    Rejected,
    /// Deopted: replay consumes the mid without running anything.
    Deopt,
}

/// One journaled mutation: the wire envelope plus its recorded outcome (the
/// `RoomJournalEntry` of `@rindle/room` 0.9's `WasmRoom` API).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalEntry {
    /// The envelope's `clientID`.
    pub client_id: String,
    /// The envelope's mid.
    pub mid: u64,
    /// The mutator name.
    pub name: String,
    /// The envelope's args as JSON text (absent args are `null`).
    pub args: String,
    /// The connection's authenticated subject at push time (`""` = none).
    pub sub: String,
    /// The recorded verdict.
    pub outcome: Outcome,
}

/// One journaled flush batch: its flush-stream position, the placement epoch it was
/// built under, and the exact `/apply-row-change-txn` body, resent verbatim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlushRecord {
    /// The flush sequence number (its wire `offset`).
    pub seq: u64,
    /// The placement epoch.
    pub epoch: u64,
    /// The exact body text.
    pub body: String,
}

/// Everything a read of the journal gives the host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalContents {
    /// Every journaled entry, in append order.
    pub entries: Vec<JournalEntry>,
    /// The clientID → subject bindings the journal kept after compaction dropped the
    /// clients' entries, in journal order. The host derives every other binding itself,
    /// from the entries' subjects ([`journal_record::bindings`](super::journal_record::bindings)),
    /// so a journal that never compacts leaves this empty.
    pub bindings: Vec<(String, String)>,
    /// Unconfirmed flush records, in seq order.
    pub flushes: Vec<FlushRecord>,
    /// The highest flush seq ever journaled (0 = none).
    pub max_flush_seq: u64,
}

/// The authority's answer to `/apply-row-change-txn` (`docs/design/authority.md`, "The
/// apply call").
#[derive(Clone, Debug, PartialEq)]
pub enum ApplyResult {
    /// Committed (`applied: true`) or absorbed as a replay (`applied: false`); `cv` is
    /// the authority's commit version, when given.
    Ok {
        /// `false` = an already-applied replay.
        applied: bool,
        /// The commit version, when reported.
        cv: Option<f64>,
    },
    /// CAS rejection: nothing applied; the `conflicts` array as compact JSON text.
    Conflict {
        /// `[{"table","pk","current"},…]`.
        conflicts_json: String,
    },
    /// The placement epoch was superseded: another room owns the doc.
    Fenced {
        /// The authority's current epoch, when it says.
        current_epoch: Option<u64>,
    },
}

/// A failed authority call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthorityError {
    /// Network failure, timeout, or a status that may clear: the host retries the same
    /// body after a backoff.
    Retryable(String),
    /// Retrying cannot help: the incarnation dies loudly.
    Fatal(String),
}

impl AuthorityError {
    /// Whether this is [`AuthorityError::Fatal`].
    pub fn is_fatal(&self) -> bool {
        matches!(self, AuthorityError::Fatal(_))
    }

    /// The message.
    pub fn message(&self) -> &str {
        match self {
            AuthorityError::Retryable(m) | AuthorityError::Fatal(m) => m,
        }
    }
}

impl core::fmt::Display for AuthorityError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AuthorityError::Retryable(m) => write!(f, "authority error (retryable): {m}"),
            AuthorityError::Fatal(m) => write!(f, "authority error (fatal): {m}"),
        }
    }
}

impl core::error::Error for AuthorityError {}

/// What an authority call returned.
#[derive(Clone, Debug, PartialEq)]
pub enum AuthorityReply {
    /// `claim-room-epoch`: the placement epoch.
    Claimed(u64),
    /// `room-lmids`: the durable lmid per client (absent = 0).
    Lmids(BTreeMap<String, u64>),
    /// `apply-row-change-txn`.
    Applied(ApplyResult),
}

/// A request from the control plane or the embedder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlRequest {
    /// `GET /stats`.
    Stats,
    /// `GET /healthz`: liveness (the room task answers).
    Health,
    /// `GET /readyz`: readiness (the incarnation is live and the room is not shutting
    /// down).
    Ready,
    /// `POST /revoke {userId}`.
    Revoke {
        /// The subject to revoke.
        user: String,
    },
    /// `POST /drain`: answered once quiescent.
    Drain,
    /// Fire the flush now; answered once it settled.
    FlushNow,
    /// Stop accepting, journal the group commit, drain (bounded), close every socket
    /// with 1001; answered when stopped.
    Shutdown,
    /// Stop at once, like a crash: nothing journaled or drained, sockets terminated.
    Abort,
    /// Stop now without draining (the Node shell's `close()`): every socket closes with 1001,
    /// the upstream link is dropped; what is journaled stays journaled, the group
    /// commit's window is not appended (its mutations were never acknowledged).
    Close,
}

/// The answer to a [`ControlRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlReply {
    /// `/stats` as JSON text, in the published room's member order.
    Stats(String),
    /// Liveness: whether the room still runs (`false` once it stopped or moved).
    Health(bool),
    /// Readiness: whether the incarnation is live and the room not shutting down.
    Ready(bool),
    /// How many subscriptions a revocation dropped.
    Revoked(u64),
    /// A drain finished: the last committed flush seq, or why it failed.
    Drained(Result<u64, DrainError>),
    /// A flush settled (or there was nothing to flush).
    Flushed,
    /// The host stopped (shutdown or abort).
    Stopped,
}

/// Everything a driver feeds the host.
#[derive(Clone, Debug)]
#[non_exhaustive]
#[must_use = "an input does nothing until it is handed to `Host::handle`"]
pub enum Input<'a> {
    /// A lease mint ([`Output::MintLease`]) finished.
    LeaseMinted(Result<String, MintError>),
    /// Upstream link `link` ([`Output::OpenUpstream`]) is open.
    UpstreamOpened {
        /// The link.
        link: u64,
    },
    /// A frame from upstream link `link`.
    UpstreamFrame {
        /// The link.
        link: u64,
        /// The frame text.
        text: &'a str,
    },
    /// Upstream link `link` closed (or never opened: `error`).
    UpstreamClosed {
        /// The link.
        link: u64,
        /// Why it failed, when it did.
        error: Option<&'a str>,
    },
    /// Upstream link `link` showed it is alive without a whole frame: a pong or a ping
    /// came, or bytes of a frame still arriving (a driver reports these at most about
    /// once a second). Every [`Input::UpstreamFrame`] counts as well.
    UpstreamHeard {
        /// The link.
        link: u64,
    },
    /// A downstream websocket completed its upgrade.
    ConnOpened {
        /// The connection.
        conn: ConnId,
    },
    /// A downstream text frame (a binary frame read as UTF-8).
    ConnFrame {
        /// The connection.
        conn: ConnId,
        /// The frame text.
        text: &'a str,
    },
    /// A downstream socket answered a ping (or sent one). Every [`Input::ConnFrame`]
    /// counts as well.
    ConnHeard {
        /// The connection.
        conn: ConnId,
    },
    /// A downstream socket closed.
    ConnClosed {
        /// The connection.
        conn: ConnId,
    },
    /// A [`Output::JournalRead`] finished.
    JournalRead {
        /// The operation.
        io: IoId,
        /// The contents, or why the read failed.
        result: Result<JournalContents, JournalError>,
    },
    /// A journal write ([`Output::JournalAppend`], [`Output::JournalAppendFlush`],
    /// [`Output::JournalConfirmFlush`], [`Output::JournalCompact`]) finished: durable
    /// (synced) on `Ok`.
    JournalWritten {
        /// The operation.
        io: IoId,
        /// `Ok` once durable, or why it failed.
        result: Result<(), JournalError>,
    },
    /// An authority call finished.
    Authority {
        /// The operation.
        io: IoId,
        /// The reply, or the failure.
        result: Result<AuthorityReply, AuthorityError>,
    },
    /// A control request; answered by [`Output::ControlReply`] with the same `id`.
    Control {
        /// The driver's request id.
        id: u64,
        /// The request.
        request: ControlRequest,
    },
}

/// How a frame counts against the socket's backlog caps (docs/security.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendClass {
    /// Outside every cap: hellos, errors, outcomes answered at once.
    Plain,
    /// A live frame (`nbatch`, `progress`): counted against the send budget.
    Live,
    /// A subscribe's seq-0 snapshot: counted against the snapshot backlog cap.
    Snapshot,
}

/// A log line's level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Diagnostics.
    Debug,
    /// Normal operation.
    Info,
    /// Something degraded but handled.
    Warn,
    /// Something failed.
    Error,
}

/// Everything the host asks a driver to do.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[must_use = "an output is work the driver must carry out"]
pub enum Output {
    /// Start-up finished (the epoch claimed, the first lease minted): serve sockets.
    Started,
    /// Start-up failed: the driver reports `reason` and exits.
    StartFailed {
        /// Why.
        reason: String,
    },
    /// Stop accepting new sockets (a shutdown began).
    StopAccepting,
    /// The host stopped; nothing more will come. `moved` = fenced by the authority.
    Stopped {
        /// Another placement owns the document.
        moved: bool,
    },
    /// Acknowledged mutations a fenced room could not deliver (`ack = "journaled"`,
    /// `docs/fleet.md`, "Acknowledgement modes"): the driver counts and reports them; the
    /// journal keeps them. Comes
    /// right before `Stopped { moved: true }`.
    Stranded {
        /// One per mutation, in journal order.
        mutations: Vec<crate::texts::StrandedMutation>,
    },
    /// The current incarnation went live (waiters on it may proceed).
    Live {
        /// The incarnation's downstream bootId.
        boot_id: String,
    },
    /// Queue a text frame on a connection.
    Send {
        /// The connection.
        conn: ConnId,
        /// The frame.
        text: String,
        /// How it counts against the socket's caps.
        class: SendClass,
    },
    /// Close a connection with a close frame, after its queued frames — or, when
    /// `discard_queued`, instead of them. The driver drops the socket after a short
    /// grace whether or not the peer answers.
    Close {
        /// The connection.
        conn: ConnId,
        /// The close code.
        code: u16,
        /// The reason (at most 123 bytes).
        reason: String,
        /// Drop the frames queued and not yet being written.
        discard_queued: bool,
    },
    /// Drop a connection at once, without a close frame (an abort).
    Terminate {
        /// The connection.
        conn: ConnId,
    },
    /// Mint the footprint lease; answer with [`Input::LeaseMinted`].
    MintLease,
    /// Open upstream link `link` (closing any earlier one); answer with
    /// [`Input::UpstreamOpened`] / [`Input::UpstreamFrame`] / [`Input::UpstreamClosed`].
    OpenUpstream {
        /// The new link's number.
        link: u64,
    },
    /// Close the upstream link (the host stopped, or the link fell silent; in the
    /// latter case the host has already taken it as closed and ignores its
    /// [`Input::UpstreamClosed`]).
    CloseUpstream,
    /// Send a websocket ping on upstream link `link` (it has been silent a while); the
    /// pong comes back as [`Input::UpstreamHeard`].
    PingUpstream {
        /// The link.
        link: u64,
    },
    /// Send a websocket ping on a connection (it has been silent a while); the pong
    /// comes back as [`Input::ConnHeard`].
    Ping {
        /// The connection.
        conn: ConnId,
    },
    /// Send a frame on upstream link `link`.
    UpstreamSend {
        /// The link.
        link: u64,
        /// The frame.
        text: String,
    },
    /// Read the whole journal; answer with [`Input::JournalRead`].
    JournalRead {
        /// The operation.
        io: IoId,
    },
    /// Append entries durably, in order; answer with [`Input::JournalWritten`].
    JournalAppend {
        /// The operation.
        io: IoId,
        /// The entries.
        entries: Vec<JournalEntry>,
    },
    /// Journal a flush batch before its first send.
    JournalAppendFlush {
        /// The operation.
        io: IoId,
        /// The record.
        record: FlushRecord,
    },
    /// The authority settled flush `seq`: drop its record.
    JournalConfirmFlush {
        /// The operation.
        io: IoId,
        /// The flush seq.
        seq: u64,
    },
    /// Drop entries the authority holds durably (`mid <= durable[client]`) and settled
    /// flush records.
    JournalCompact {
        /// The operation.
        io: IoId,
        /// The durable lmid per client.
        durable: BTreeMap<String, u64>,
    },
    /// `claim-room-epoch` for `doc`.
    AuthorityClaim {
        /// The operation.
        io: IoId,
        /// The document.
        doc: String,
    },
    /// `room-lmids` for `clients` of `doc`.
    AuthorityLmids {
        /// The operation.
        io: IoId,
        /// The document.
        doc: String,
        /// The clients.
        clients: Vec<String>,
    },
    /// `apply-row-change-txn` with exactly `body`.
    AuthorityApply {
        /// The operation.
        io: IoId,
        /// The exact body (a retry resends the same text).
        body: String,
    },
    /// The answer to [`Input::Control`].
    ControlReply {
        /// The driver's request id.
        id: u64,
        /// The answer.
        reply: ControlReply,
    },
    /// A log line.
    Log {
        /// Its level.
        level: Level,
        /// Its text.
        text: String,
    },
}

/// A socket's backlog as its driver sees it: bytes queued that its writer has not
/// taken yet, by [`SendClass`] (frames in flight count as neither).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Live frames.
    pub live: usize,
    /// Snapshot frames.
    pub snapshot: usize,
}

/// What a mutator did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MutatorOutcome {
    /// Completed: its staged writes commit.
    Done,
    /// No mutator has that name: rejected with `unknown mutator \`name\``.
    Unknown,
    /// A final rejection with this reason (the mid is consumed, nothing applies).
    Rejected(String),
    /// The mutator needed a capability rooms lack: a `deopt` with reason
    /// `environment` (the text is logged).
    Environment(String),
}

/// The driver's side of [`Host::handle`](super::Host::handle): the calls the host makes
/// while it handles an input.
pub trait Driver {
    /// Runs mutator `name` against the open transaction `tx` with `args` (JSON text;
    /// `None` = absent) as subject `user`, synchronously (like the plain `RoomMutator`
    /// functions of `@rindle/room` 0.9's API). Returning anything but [`MutatorOutcome::Done`] discards the staged
    /// writes. A driver that can catch panics reports one as `Rejected`.
    fn run_mutator(
        &mut self,
        name: &str,
        tx: &mut MutationTx<'_>,
        args: Option<&str>,
        user: &str,
    ) -> MutatorOutcome;

    /// The room's tables are known (each incarnation's hello, before the write plane
    /// serves): a driver validates or builds its mutators here; `Err` kills the
    /// incarnation with `write-plane boot failed: …`.
    fn tables_known(&mut self, tables: &[TableSchema]) -> Result<(), TablesError> {
        let _ = tables;
        Ok(())
    }

    /// Connection `conn`'s backlog (see [`Backlog`]); the host adds the frames it has
    /// output but the driver has not polled yet.
    fn backlog(&self, conn: ConnId) -> Backlog {
        let _ = conn;
        Backlog::default()
    }
}

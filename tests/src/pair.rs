//! A pair harness for the room host (quinn-proto's style): one [`Host`] wired to
//! in-memory fakes of everything a driver would own — a daemon that answers the
//! upstream subscribe, a journal, an authority with CAS and fencing, and websocket
//! clients that read (or stall) — on a virtual clock. Nothing touches a socket, a file
//! or the real time, so a scenario is exact and repeatable: inputs scripted, outputs
//! asserted.
//!
//! The harness carries out every output at once (journal and authority answers are
//! immediate unless held), and [`Pair::settle`] runs until nothing is left to do.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::host::{
    ApplyResult, AuthorityError, AuthorityReply, Backlog, ConnId, ControlReply, ControlRequest,
    Driver, FlushRecord, Host, HostConfig, Input, IoId, JournalContents, JournalEntry, Level,
    MintError, MutatorOutcome, Output, Placement, SendClass, WriteSettings,
};
use rindle_room_core::{MutationTx, TableSchema, Value as Cell};
use serde_json::{json, Value};

/// The document id of every pair.
pub const DOC: &str = "doc/1";
/// The token key id.
pub const KID: &str = "k1";
/// The token secret.
pub const KEY: &str = "secret";
/// The note query.
pub const NOTES: &str = r#"{"table":"note"}"#;

/// An input the harness queued (owned; [`Input`] borrows its text).
#[derive(Clone, Debug)]
enum Pending {
    LeaseMinted(Result<String, MintError>),
    UpOpened(u64),
    UpFrame(u64, String),
    UpClosed(u64, Option<String>),
    UpHeard(u64),
    ConnHeard(ConnId),
    ConnClosed(ConnId),
    JournalRead(IoId, Result<JournalContents, String>),
    JournalWritten(IoId, Result<(), String>),
    Authority(IoId, Result<AuthorityReply, AuthorityError>),
}

/// The fake daemon: the rows it serves and its upstream frames.
#[derive(Debug)]
pub struct Daemon {
    pub tables: Vec<TableSchema>,
    /// `(table, pk JSON)` → row.
    pub rows: BTreeMap<(String, String), Value>,
    pub epoch: u64,
    pub seq: u64,
    pub cv: u64,
    pub boot: String,
    /// The link the host opened, while open.
    pub link: Option<u64>,
    /// Stop answering subscribes (held until [`Pair::release_daemon`]).
    pub hold: bool,
    pub held: bool,
    pub subscribes: usize,
    /// The lease token of every upstream subscribe, in order.
    pub leases: Vec<String>,
    /// Answer lease mints with a 500 (a transient failure).
    pub fail_mint: bool,
    /// Answer lease mints with a 401 (a refusal).
    pub refuse_mint: bool,
    /// Leases minted.
    pub mints: usize,
    /// Lease mints asked for, failed ones included.
    pub mint_tries: usize,
    /// Refuse new upstream connections (each fails at once).
    pub refuse: bool,
    /// Upstream connections the host asked for.
    pub opens: usize,
    /// Behind the database: what the authority commits meanwhile never reaches this
    /// daemon's rows, so its snapshots lack it.
    pub lagging: bool,
    /// Follows the database (its rows and later snapshots hold what the authority
    /// commits) but streams none of it live: the room never sees its echoes.
    pub silent: bool,
    /// What the authority committed while this daemon lagged, as upstream ops, for
    /// [`Pair::catch_up_daemon`].
    pub behind: Vec<Value>,
    /// The open link went dark: it stays open, but nothing comes back on it, not even
    /// a pong (a partition, a NAT that forgot it). The next link the host opens works.
    pub dark: bool,
    /// Pings the host sent upstream.
    pub pings: usize,
}

/// The fake journal (in memory; "durable" once an append was answered `Ok`).
#[derive(Debug, Default)]
pub struct Journal {
    pub entries: Vec<JournalEntry>,
    /// The bindings compaction kept for clients whose entries it dropped.
    pub bindings: Vec<(String, String)>,
    pub flushes: BTreeMap<u64, FlushRecord>,
    pub max_seq: u64,
    /// Every mutating call fails while set.
    pub failing: bool,
    /// Journal operations wait (unanswered) while set.
    pub hold: bool,
    held: Vec<Output>,
}

/// The fake authority: its rows (CAS), applied flush ids, the placement epoch.
#[derive(Debug, Default)]
pub struct Authority {
    pub rows: BTreeMap<(String, String), Value>,
    pub applied: BTreeMap<(String, String), String>,
    pub epoch: u64,
    pub cv: u64,
    /// Answers with a network failure while set.
    pub down: bool,
    /// Commits each apply, then answers it with a network failure (the answer lost on
    /// the way back).
    pub lose_answers: bool,
    /// Every apply body received.
    pub bodies: Vec<String>,
}

/// One websocket client as the host sees it through the harness.
#[derive(Debug, Default)]
pub struct Client {
    /// Frames it read, oldest first.
    pub frames: VecDeque<Value>,
    /// Frames queued but unread (while `stalled`), with their class.
    pub unread: VecDeque<(String, SendClass)>,
    /// The close the host sent: `(code, reason)`.
    pub closed: Option<(u16, String)>,
    /// Dropped without a close frame.
    pub terminated: bool,
    /// Not reading: frames pile up as backlog.
    pub stalled: bool,
    /// Frames output after its close (must stay 0).
    pub after_close: usize,
    /// Gone dark: answers no ping (a peer that vanished without a FIN).
    pub dark: bool,
    /// Pings the host sent it.
    pub pings: usize,
}

/// The test mutators.
#[derive(Debug, Default)]
pub struct Mutators {
    /// Every `(name, user)` run, in order.
    pub runs: Vec<(String, String)>,
}

fn cell(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Null,
        Value::Bool(b) => Cell::Bool(*b),
        Value::Number(n) => Cell::num(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Cell::str(s),
        other => Cell::string(other.to_string()),
    }
}

/// The harness driver: mutators and the clients' backlogs.
#[allow(missing_debug_implementations)]
pub struct PairDriver<'a> {
    mutators: &'a mut Mutators,
    clients: &'a BTreeMap<ConnId, Client>,
}

impl Driver for PairDriver<'_> {
    fn run_mutator(
        &mut self,
        name: &str,
        tx: &mut MutationTx<'_>,
        args: Option<&str>,
        user: &str,
    ) -> MutatorOutcome {
        self.mutators
            .runs
            .push((name.to_string(), user.to_string()));
        let args: Value = args
            .and_then(|a| serde_json::from_str(a).ok())
            .unwrap_or(Value::Null);
        let id = cell(&args["id"]);
        let result = match name {
            "addNote" => tx.insert(
                "note",
                &[
                    ("id".into(), id),
                    ("body".into(), cell(&args["body"])),
                    ("owner".into(), Cell::str(user)),
                ],
            ),
            "setBody" => tx.update(
                "note",
                &[("id".into(), id), ("body".into(), cell(&args["body"]))],
            ),
            // Exactly-once probe: one tally row per applied run, keyed by the args' id.
            "tally" => tx.insert(
                "tally",
                &[("id".into(), id), ("mid".into(), cell(&args["mid"]))],
            ),
            // Not idempotent: each run appends a `+` to the note's body (a duplicate run
            // shows as a second `+`).
            "bump" => match tx.row("note", &[("id".into(), id.clone())]) {
                Ok(Some(row)) => {
                    let body = row
                        .iter()
                        .find(|(c, _)| c == "body")
                        .map(|(_, v)| v.clone());
                    let body = match body {
                        Some(Cell::Str(b)) => format!("{}+", b.as_str()),
                        _ => String::from("+"),
                    };
                    tx.update(
                        "note",
                        &[("id".into(), id), ("body".into(), Cell::str(&body))],
                    )
                }
                Ok(None) => return MutatorOutcome::Rejected("no such note".into()),
                Err(e) => Err(e),
            },
            "refuse" => return MutatorOutcome::Rejected("not allowed".into()),
            "needsQuery" => tx.query(),
            _ => return MutatorOutcome::Unknown,
        };
        match result {
            Ok(()) => MutatorOutcome::Done,
            Err(e) if e.code() == rindle_room_core::ErrorCode::Environment => {
                MutatorOutcome::Environment(e.message().to_string())
            }
            Err(e) => MutatorOutcome::Rejected(e.message().to_string()),
        }
    }

    fn backlog(&self, conn: ConnId) -> Backlog {
        let mut b = Backlog::default();
        if let Some(c) = self.clients.get(&conn) {
            for (text, class) in &c.unread {
                match class {
                    SendClass::Snapshot => b.snapshot += text.len(),
                    _ => b.live += text.len(),
                }
            }
        }
        b
    }
}

/// The host and its fakes.
#[allow(missing_debug_implementations)]
pub struct Pair {
    pub host: Host,
    pub now: u64,
    pub daemon: Daemon,
    pub journal: Journal,
    pub authority: Authority,
    pub clients: BTreeMap<ConnId, Client>,
    pub mutators: Mutators,
    pub logs: Vec<(Level, String)>,
    pub replies: HashMap<u64, ControlReply>,
    pub started: Option<Result<(), String>>,
    pub stopped: Option<bool>,
    /// Every stranded mutation the host reported.
    pub stranded: Vec<rindle_room_core::fleet::StrandedMutation>,
    /// Every (clientID, mid) an append made durable, in order.
    pub durable: Vec<(String, u64)>,
    next_conn: ConnId,
    next_request: u64,
    pending: VecDeque<Pending>,
}

/// A pair's options.
#[derive(Clone, Debug)]
pub struct Options {
    pub writes: bool,
    pub authority: bool,
    pub send_budget: usize,
    pub first_frame_timeout_ms: u64,
    /// What room-boot granted (fleet mode); `None`: claim and mint at start-up.
    pub placement: Option<Placement>,
    /// Revocations carried over from the box: `(user, at ms)`.
    pub revoked: Vec<(String, u64)>,
    /// The room's memory budget.
    pub max_room_bytes: Option<u64>,
    /// `ack = "flushed"`: acks wait for the flush's commit.
    pub ack_after_flush: bool,
    /// How long start-up retries, ms.
    pub startup_timeout_ms: u64,
    /// The journal's group-commit window, ms.
    pub group_commit_ms: u64,
    /// Newcomer lmid fetches under way at once, and queued behind them.
    pub newcomer_fetch_limits: (usize, usize),
    /// The upstream link's silence timeout, ms.
    pub upstream_silence_timeout_ms: u64,
    /// A client socket's silence timeout, ms.
    pub silence_timeout_ms: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            writes: true,
            authority: false,
            send_budget: 4 * 1024 * 1024,
            first_frame_timeout_ms: 30_000,
            placement: None,
            revoked: Vec::new(),
            max_room_bytes: None,
            ack_after_flush: false,
            startup_timeout_ms: 60_000,
            group_commit_ms: 5,
            newcomer_fetch_limits: (
                rindle_room_core::host::MAX_NEWCOMER_FETCHES,
                rindle_room_core::host::MAX_DEFERRED_FETCHES,
            ),
            upstream_silence_timeout_ms: HostConfig::default().upstream_silence_timeout_ms,
            silence_timeout_ms: HostConfig::default().silence_timeout_ms,
        }
    }
}

/// The daemon's tables: `note(id, body, owner)` and `tally(id, mid)`.
pub fn tables() -> Vec<TableSchema> {
    vec![
        TableSchema::new("note", &["id", "body", "owner"], &[0]),
        TableSchema::new("tally", &["id", "mid"], &[0]),
    ]
}

fn pk_of(tables: &[TableSchema], table: &str, row: &Value) -> String {
    let schema = tables.iter().find(|t| &*t.name == table);
    let cols: Vec<usize> = schema.map_or(vec![0], |s| s.primary_key.to_vec());
    Value::Array(cols.iter().map(|&i| row[i].clone()).collect()).to_string()
}

/// The host configuration of a pair.
pub fn config(o: &Options) -> HostConfig {
    let mut cfg = HostConfig::new(DOC, vec![(KID.into(), KEY.into())]);
    cfg.sweep_interval_ms = 50;
    cfg.send_budget_bytes = o.send_budget;
    cfg.first_frame_timeout_ms = o.first_frame_timeout_ms;
    cfg.upstream_silence_timeout_ms = o.upstream_silence_timeout_ms;
    cfg.silence_timeout_ms = o.silence_timeout_ms;
    cfg.entropy = [7; 32];
    cfg.placement = o.placement.clone();
    cfg.revoked = o.revoked.clone();
    cfg.max_room_bytes = o.max_room_bytes;
    cfg.startup_timeout_ms = o.startup_timeout_ms;
    (cfg.max_newcomer_fetches, cfg.max_deferred_fetches) = o.newcomer_fetch_limits;
    if o.writes {
        cfg.writes = Some(WriteSettings {
            owned_tables: vec!["note".into(), "tally".into()],
            scopes: None,
            group_commit_ms: o.group_commit_ms,
            flush_debounce_ms: 20,
            flush_dirty_max: 512,
            authority: o.authority,
            ack_after_flush: o.ack_after_flush,
        });
    }
    cfg
}

impl Pair {
    /// A pair serving three notes at t = 1,000,000, started and settled (live).
    pub fn live(o: &Options) -> Pair {
        let mut p = Pair::new(o, Journal::default(), Authority::default());
        p.start();
        assert!(p.host.is_live(), "the pair goes live: {:?}", p.logs);
        p
    }

    /// A pair not started yet, over `journal` and `authority` (a reboot passes the old
    /// ones).
    pub fn new(o: &Options, journal: Journal, authority: Authority) -> Pair {
        let tables = tables();
        let mut rows = BTreeMap::new();
        for row in [
            json!([1, "one", "u1"]),
            json!([2, "two", "u1"]),
            json!([3, "three", "u2"]),
        ] {
            rows.insert(("note".to_string(), pk_of(&tables, "note", &row)), row);
        }
        Pair {
            host: Host::new(config(o)).expect("a valid config"),
            now: 1_000_000,
            daemon: Daemon {
                tables,
                rows,
                epoch: 0,
                seq: 0,
                cv: 100,
                boot: "daemon-boot-1".into(),
                link: None,
                hold: false,
                held: false,
                subscribes: 0,
                leases: Vec::new(),
                fail_mint: false,
                refuse_mint: false,
                mints: 0,
                mint_tries: 0,
                refuse: false,
                opens: 0,
                lagging: false,
                silent: false,
                behind: Vec::new(),
                dark: false,
                pings: 0,
            },
            journal,
            authority,
            clients: BTreeMap::new(),
            mutators: Mutators::default(),
            logs: Vec::new(),
            replies: HashMap::new(),
            started: None,
            stopped: None,
            stranded: Vec::new(),
            durable: Vec::new(),
            next_conn: 1,
            next_request: 1,
            pending: VecDeque::new(),
        }
    }

    /// Before [`Pair::start`]: a row both the daemon and the authority hold (the
    /// database the two follow), keyed as the daemon keys `table`.
    pub fn seed_row(&mut self, table: &str, row: Value) {
        let key = (table.to_string(), pk_of(&self.daemon.tables, table, &row));
        self.daemon.rows.insert(key.clone(), row.clone());
        self.authority.rows.insert(key, row);
    }

    /// Starts the host and settles.
    pub fn start(&mut self) {
        self.host.start(self.now);
        self.settle();
    }

    /// The process dies and a new one starts (not started yet): the journal, the
    /// authority and the daemon outlive it; what was in flight is lost (held journal
    /// operations never happened).
    pub fn reboot(self, o: &Options) -> Pair {
        let mut journal = self.journal;
        journal.hold = false;
        journal.held.clear();
        let mut daemon = self.daemon;
        daemon.link = None;
        daemon.hold = false;
        daemon.held = false;
        let mut p = Pair::new(o, journal, self.authority);
        p.daemon = daemon;
        p
    }

    fn input(&mut self, input: Input<'_>) {
        let mut d = PairDriver {
            mutators: &mut self.mutators,
            clients: &self.clients,
        };
        self.host.handle(self.now, input, &mut d);
        self.pump();
    }

    /// Carries out every output, then feeds back every queued answer, until quiet.
    pub fn settle(&mut self) {
        self.pump();
        while let Some(p) = self.pending.pop_front() {
            match p {
                Pending::LeaseMinted(r) => self.input(Input::LeaseMinted(r)),
                Pending::UpOpened(link) => self.input(Input::UpstreamOpened { link }),
                Pending::UpFrame(link, text) => {
                    self.input(Input::UpstreamFrame { link, text: &text })
                }
                Pending::UpClosed(link, error) => self.input(Input::UpstreamClosed {
                    link,
                    error: error.as_deref(),
                }),
                Pending::UpHeard(link) => self.input(Input::UpstreamHeard { link }),
                Pending::ConnHeard(conn) => {
                    if self.clients.contains_key(&conn) {
                        self.input(Input::ConnHeard { conn });
                    }
                }
                Pending::ConnClosed(conn) => {
                    if self.clients.contains_key(&conn) {
                        self.input(Input::ConnClosed { conn });
                    }
                }
                Pending::JournalRead(io, result) => self.input(Input::JournalRead {
                    io,
                    result: result.map_err(Into::into),
                }),
                Pending::JournalWritten(io, result) => self.input(Input::JournalWritten {
                    io,
                    result: result.map_err(Into::into),
                }),
                Pending::Authority(io, result) => self.input(Input::Authority { io, result }),
            }
        }
    }

    /// Moves the virtual clock by `ms`, firing every timer due on the way (in order).
    pub fn advance(&mut self, ms: u64) {
        let end = self.now + ms;
        loop {
            self.settle();
            match self.host.next_deadline() {
                Some(d) if d <= end => {
                    self.now = self.now.max(d);
                    let mut drv = PairDriver {
                        mutators: &mut self.mutators,
                        clients: &self.clients,
                    };
                    self.host.handle_timeout(self.now, &mut drv);
                }
                _ => break,
            }
        }
        self.now = end;
        self.settle();
    }

    fn pump(&mut self) {
        while let Some(o) = self.host.poll_output() {
            self.carry(o);
        }
    }

    fn carry(&mut self, o: Output) {
        match o {
            Output::Started => self.started = Some(Ok(())),
            Output::StartFailed { reason } => self.started = Some(Err(reason)),
            Output::Stopped { moved } => self.stopped = Some(moved),
            Output::Stranded { mutations } => self.stranded.extend(mutations),
            Output::StopAccepting | Output::Live { .. } => {}
            Output::Send { conn, text, class } => {
                let Some(c) = self.clients.get_mut(&conn) else {
                    panic!("a frame for unknown connection {conn}: {text}");
                };
                if c.closed.is_some() || c.terminated {
                    c.after_close += 1;
                } else if c.stalled {
                    c.unread.push_back((text, class));
                } else {
                    let v = serde_json::from_str(&text)
                        .unwrap_or_else(|e| panic!("the host sent non-JSON {text}: {e}"));
                    c.frames.push_back(v);
                }
            }
            Output::Close {
                conn,
                code,
                reason,
                discard_queued,
            } => {
                if let Some(c) = self.clients.get_mut(&conn) {
                    assert!(reason.len() <= 123, "a close reason fits: {reason}");
                    if discard_queued {
                        c.unread.clear();
                    }
                    c.closed = Some((code, reason));
                }
                self.pending.push_back(Pending::ConnClosed(conn));
            }
            Output::Terminate { conn } => {
                if let Some(c) = self.clients.get_mut(&conn) {
                    c.terminated = true;
                }
                self.pending.push_back(Pending::ConnClosed(conn));
            }
            Output::MintLease => {
                self.daemon.mint_tries += 1;
                let status = |status| MintError::Status {
                    status,
                    body: "mint refused".to_string(),
                };
                let r = if self.daemon.refuse_mint {
                    Err(status(401))
                } else if self.daemon.fail_mint {
                    Err(status(500))
                } else {
                    self.daemon.mints += 1;
                    Ok(format!("lease-{}", self.daemon.mints))
                };
                self.pending.push_back(Pending::LeaseMinted(r));
            }
            Output::OpenUpstream { link } => {
                self.daemon.opens += 1;
                if self.daemon.refuse {
                    let e = Some("Connection refused (os error 111)".to_string());
                    self.pending.push_back(Pending::UpClosed(link, e));
                } else {
                    // A new connection takes a route that works: only the old one went dark.
                    self.daemon.dark = false;
                    self.daemon.link = Some(link);
                    self.pending.push_back(Pending::UpOpened(link));
                }
            }
            Output::CloseUpstream => self.daemon.link = None,
            Output::PingUpstream { link } => {
                self.daemon.pings += 1;
                if !self.daemon.dark && self.daemon.link == Some(link) {
                    self.pending.push_back(Pending::UpHeard(link));
                }
            }
            Output::Ping { conn } => {
                let c = self
                    .clients
                    .get_mut(&conn)
                    .expect("a ping for a known socket");
                assert!(
                    c.closed.is_none() && !c.terminated,
                    "a ping after the close"
                );
                c.pings += 1;
                // A client that does not read does not see the ping either.
                if !c.dark && !c.stalled {
                    self.pending.push_back(Pending::ConnHeard(conn));
                }
            }
            Output::UpstreamSend { link, text } => {
                let v: Value = serde_json::from_str(&text).expect("upstream frames are JSON");
                if v["t"] == "subscribe" && self.daemon.link == Some(link) {
                    self.daemon.subscribes += 1;
                    let lease = v["leaseToken"].as_str().unwrap_or_default();
                    self.daemon.leases.push(lease.to_string());
                    if self.daemon.hold {
                        self.daemon.held = true;
                    } else {
                        self.answer_subscribe();
                    }
                }
            }
            o @ (Output::JournalRead { .. }
            | Output::JournalAppend { .. }
            | Output::JournalAppendFlush { .. }
            | Output::JournalConfirmFlush { .. }
            | Output::JournalCompact { .. }) => {
                if self.journal.hold {
                    self.journal.held.push(o);
                } else {
                    self.journal_op(o);
                }
            }
            Output::AuthorityClaim { io, .. } => {
                let r = if self.authority.down {
                    Err(AuthorityError::Retryable("authority down".into()))
                } else {
                    self.authority.epoch += 1;
                    Ok(AuthorityReply::Claimed(self.authority.epoch))
                };
                self.pending.push_back(Pending::Authority(io, r));
            }
            Output::AuthorityLmids { io, clients, .. } => {
                let r = if self.authority.down {
                    Err(AuthorityError::Retryable("authority down".into()))
                } else {
                    let lmids = clients
                        .iter()
                        .map(|c| {
                            let key = (
                                "_rindle_client_mutations".to_string(),
                                json!([c]).to_string(),
                            );
                            let l = self.authority.rows.get(&key).and_then(|r| r[1].as_u64());
                            (c.clone(), l.unwrap_or(0))
                        })
                        .collect();
                    Ok(AuthorityReply::Lmids(lmids))
                };
                self.pending.push_back(Pending::Authority(io, r));
            }
            Output::AuthorityApply { io, body } => {
                self.authority.bodies.push(body.clone());
                let r = if self.authority.down {
                    Err(AuthorityError::Retryable("authority down".into()))
                } else if self.authority.lose_answers {
                    self.authority_apply(&body);
                    Err(AuthorityError::Retryable("the answer was lost".into()))
                } else {
                    Ok(AuthorityReply::Applied(self.authority_apply(&body)))
                };
                self.pending.push_back(Pending::Authority(io, r));
            }
            Output::ControlReply { id, reply } => {
                self.replies.insert(id, reply);
            }
            Output::Log { level, text } => self.logs.push((level, text)),
            other => panic!("the test driver does not carry {other:?}"),
        }
    }

    fn journal_op(&mut self, o: Output) {
        let fail = self.journal.failing;
        let err = || Err("No space left on device (os error 28)".to_string());
        match o {
            Output::JournalRead { io } => {
                // Entries and the bindings compaction kept: the host derives the rest.
                let j = &self.journal;
                let contents = JournalContents {
                    entries: j.entries.clone(),
                    bindings: j.bindings.clone(),
                    flushes: j.flushes.values().cloned().collect(),
                    max_flush_seq: j.max_seq,
                };
                self.pending
                    .push_back(Pending::JournalRead(io, Ok(contents)));
            }
            Output::JournalAppend { io, entries } => {
                let r = if fail {
                    err()
                } else {
                    for e in &entries {
                        self.durable.push((e.client_id.clone(), e.mid));
                    }
                    self.journal.entries.extend(entries);
                    Ok(())
                };
                self.pending.push_back(Pending::JournalWritten(io, r));
            }
            Output::JournalAppendFlush { io, record } => {
                let r = if fail {
                    err()
                } else {
                    self.journal.max_seq = self.journal.max_seq.max(record.seq);
                    self.journal.flushes.insert(record.seq, record);
                    Ok(())
                };
                self.pending.push_back(Pending::JournalWritten(io, r));
            }
            Output::JournalConfirmFlush { io, seq } => {
                let r = if fail {
                    err()
                } else {
                    self.journal.flushes.remove(&seq);
                    Ok(())
                };
                self.pending.push_back(Pending::JournalWritten(io, r));
            }
            Output::JournalCompact { io, durable } => {
                let r = if fail {
                    err()
                } else {
                    let j = &mut self.journal;
                    let mut seen: BTreeSet<String> =
                        j.bindings.iter().map(|(c, _)| c.clone()).collect();
                    for e in &j.entries {
                        if !e.sub.is_empty() && seen.insert(e.client_id.clone()) {
                            j.bindings.push((e.client_id.clone(), e.sub.clone()));
                        }
                    }
                    j.entries
                        .retain(|e| durable.get(&e.client_id).is_none_or(|&d| e.mid > d));
                    Ok(())
                };
                self.pending.push_back(Pending::JournalWritten(io, r));
            }
            _ => unreachable!("journal_op takes journal outputs"),
        }
    }

    /// Answers every held journal operation (in order).
    pub fn release_journal(&mut self) {
        self.journal.hold = false;
        for o in std::mem::take(&mut self.journal.held) {
            self.journal_op(o);
        }
        self.settle();
    }

    fn authority_apply(&mut self, body: &str) -> ApplyResult {
        let v: Value = serde_json::from_str(body).expect("flush bodies are JSON");
        let a = &mut self.authority;
        if v["epoch"].as_u64() != Some(a.epoch) {
            return ApplyResult::Fenced {
                current_epoch: Some(a.epoch),
            };
        }
        let id = (
            v["source"].as_str().unwrap_or("").to_string(),
            v["offset"].as_str().unwrap_or("").to_string(),
        );
        if a.applied.contains_key(&id) {
            return ApplyResult::Ok {
                applied: false,
                cv: None,
            };
        }
        let tables = &self.daemon.tables;
        // The room's own tables: the ledger by client, an outcome by (client, mid).
        let pk = |table: &str, row: &Value| -> String {
            match table {
                "_rindle_client_mutations" => json!([row[0]]).to_string(),
                "_rindle_room_mutation_outcomes" => json!([row[0], row[1]]).to_string(),
                _ => pk_of(tables, table, row),
            }
        };
        let changes = v["changes"].as_array().cloned().unwrap_or_default();
        let mut conflicts = Vec::new();
        for c in &changes {
            let table = c["table"].as_str().unwrap_or("");
            let image = if c["op"] == "add" {
                &c["row"]
            } else {
                &c["old"]
            };
            let key = (table.to_string(), pk(table, image));
            let current = a.rows.get(&key);
            let ok = match c["op"].as_str() {
                Some("add") => current.is_none(),
                _ => current == Some(&c["old"]),
            };
            if !ok {
                let pk_value: Value = serde_json::from_str(&key.1).unwrap();
                conflicts.push(json!({"table": table, "pk": pk_value, "current": current}));
            }
        }
        if !conflicts.is_empty() {
            return ApplyResult::Conflict {
                conflicts_json: Value::Array(conflicts).to_string(),
            };
        }
        let mut echo = Vec::new();
        for c in &changes {
            let table = c["table"].as_str().unwrap_or("");
            // What the authority commits reaches the daemon (through the database it
            // follows): a later snapshot holds it, and the daemon streams it to the
            // room (the echo of the room's own write). The ledger is the room's own.
            let data = !table.starts_with("_rindle");
            let mirrored = data && !self.daemon.lagging;
            let op = match c["op"].as_str() {
                Some("add") => json!({"table": table, "op": "add", "row": c["row"]}),
                Some("remove") => json!({"table": table, "op": "remove", "row": c["old"]}),
                _ => json!({"table": table, "op": "edit", "old": c["old"], "new": c["row"]}),
            };
            if c["op"] == "remove" {
                let key = (table.to_string(), pk(table, &c["old"]));
                a.rows.remove(&key);
                if mirrored {
                    self.daemon.rows.remove(&key);
                }
            } else {
                let key = (table.to_string(), pk(table, &c["row"]));
                a.rows.insert(key.clone(), c["row"].clone());
                if mirrored {
                    self.daemon.rows.insert(key, c["row"].clone());
                }
            }
            if mirrored {
                echo.push(op);
            } else if data {
                self.daemon.behind.push(op);
            }
        }
        a.applied
            .insert(id, v["batchHash"].as_str().unwrap_or("").to_string());
        a.cv += 1;
        let cv = a.cv as f64;
        if !echo.is_empty() && !self.daemon.silent {
            self.stream(&echo);
        }
        ApplyResult::Ok {
            applied: true,
            cv: Some(cv),
        }
    }

    fn hello_frames(&self) -> Vec<String> {
        let d = &self.daemon;
        let fp = normalized_fp(d.tables.iter());
        let tables: Vec<Value> = d
            .tables
            .iter()
            .map(|t| {
                let mut text = String::new();
                t.write_json(&mut text);
                serde_json::from_str(&text).unwrap()
            })
            .collect();
        let hello = json!({"t":"nhello","queryId":1,"bootId": d.boot, "hello": {
            "epoch": d.epoch, "comparatorVersion": 2, "tables": tables, "normalizedFp": fp}});
        let ops: Vec<Value> = d
            .rows
            .iter()
            .map(|((t, _), row)| json!({"table": t, "op": "add", "row": row}))
            .collect();
        let snapshot = json!({"t":"nbatch","queryId":1,"batch":{
            "epoch": d.epoch, "seq": 0, "normalizedFp": fp, "ops": ops, "cv": d.cv}});
        let progress = json!({"t":"progress","frame":{"cvMin": d.cv}});
        vec![
            hello.to_string(),
            snapshot.to_string(),
            progress.to_string(),
        ]
    }

    fn answer_subscribe(&mut self) {
        self.daemon.epoch += 1;
        self.daemon.seq = 0;
        let Some(link) = self.daemon.link else {
            return;
        };
        for f in self.hello_frames() {
            self.pending.push_back(Pending::UpFrame(link, f));
        }
    }

    /// Answers a held subscribe.
    pub fn release_daemon(&mut self) {
        self.daemon.hold = false;
        if std::mem::take(&mut self.daemon.held) {
            self.answer_subscribe();
        }
        self.settle();
    }

    /// A live upstream batch of `ops` (seq + 1, cv + 1), then a `progress`.
    pub fn upstream(&mut self, ops: &[Value]) {
        self.stream(ops);
        self.settle();
    }

    /// Queues a live upstream batch of `ops` (seq + 1, cv + 1) and a `progress` on the
    /// open link, the daemon's rows following them.
    fn stream(&mut self, ops: &[Value]) {
        let d = &mut self.daemon;
        d.seq += 1;
        d.cv += 1;
        for op in ops {
            let table = op["table"].as_str().unwrap().to_string();
            let row_key = |r: &Value| pk_of(&d.tables, &table, r);
            match op["op"].as_str().unwrap() {
                "add" => {
                    let k = row_key(&op["row"]);
                    d.rows.insert((table.clone(), k), op["row"].clone());
                }
                "remove" => {
                    let k = row_key(&op["row"]);
                    d.rows.remove(&(table.clone(), k));
                }
                _ => {
                    let k = row_key(&op["old"]);
                    d.rows.remove(&(table.clone(), k));
                    let k = row_key(&op["new"]);
                    d.rows.insert((table.clone(), k), op["new"].clone());
                }
            }
        }
        let fp = normalized_fp(d.tables.iter());
        let batch = json!({"t":"nbatch","queryId":1,"batch":{
            "epoch": d.epoch, "seq": d.seq, "normalizedFp": fp, "ops": ops, "cv": d.cv}});
        let progress = json!({"t":"progress","frame":{"cvMin": d.cv}});
        if let Some(link) = d.link.filter(|_| !d.dark) {
            self.pending
                .push_back(Pending::UpFrame(link, batch.to_string()));
            self.pending
                .push_back(Pending::UpFrame(link, progress.to_string()));
        }
    }

    /// The lagging daemon catches up: what the authority committed meanwhile reaches its
    /// rows and streams to the room, as one batch.
    pub fn catch_up_daemon(&mut self) {
        self.daemon.lagging = false;
        let ops = std::mem::take(&mut self.daemon.behind);
        if !ops.is_empty() {
            self.stream(&ops);
        }
        self.settle();
    }

    /// The driver reports upstream link `link` closed (whether or not it is current).
    pub fn input_up_closed(&mut self, link: u64) {
        self.pending.push_back(Pending::UpClosed(link, None));
        self.settle();
    }

    /// Drops the upstream link (as a daemon restart would).
    pub fn drop_upstream(&mut self) {
        if let Some(link) = self.daemon.link.take() {
            self.pending.push_back(Pending::UpClosed(link, None));
        }
        self.settle();
    }

    /// Sends a raw upstream frame on the open link.
    pub fn upstream_raw(&mut self, text: &str) {
        if let Some(link) = self.daemon.link {
            self.pending
                .push_back(Pending::UpFrame(link, text.to_string()));
        }
        self.settle();
    }

    /// A new client connection.
    pub fn connect(&mut self) -> ConnId {
        let conn = self.next_conn;
        self.next_conn += 1;
        self.clients.insert(conn, Client::default());
        self.input(Input::ConnOpened { conn });
        self.settle();
        conn
    }

    /// A client frame.
    pub fn send(&mut self, conn: ConnId, text: &str) {
        self.input(Input::ConnFrame { conn, text });
        self.settle();
    }

    /// The client closes its socket.
    pub fn disconnect(&mut self, conn: ConnId) {
        self.input(Input::ConnClosed { conn });
        self.clients.remove(&conn);
        self.settle();
    }

    /// Stalls (`true`) or resumes a client's reading; resuming reads what piled up.
    pub fn stall(&mut self, conn: ConnId, stalled: bool) {
        if let Some(c) = self.clients.get_mut(&conn) {
            c.stalled = stalled;
            if !stalled {
                for (text, _) in std::mem::take(&mut c.unread) {
                    c.frames.push_back(serde_json::from_str(&text).unwrap());
                }
            }
        }
    }

    /// A control request; the host's answer, if it answered before things settled.
    pub fn control(&mut self, request: ControlRequest) -> Option<ControlReply> {
        let id = self.next_request;
        self.next_request += 1;
        self.input(Input::Control { id, request });
        self.settle();
        self.replies.remove(&id)
    }

    /// The client's next frame (panics when there is none).
    pub fn next(&mut self, conn: ConnId) -> Value {
        self.clients
            .get_mut(&conn)
            .and_then(|c| c.frames.pop_front())
            .unwrap_or_else(|| panic!("client {conn} has no frame"))
    }

    /// The client's next frame, which must be of type `t`.
    pub fn expect_t(&mut self, conn: ConnId, t: &str) -> Value {
        let v = self.next(conn);
        assert_eq!(v["t"], t, "expected a {t} frame, got {v}");
        v
    }

    /// Every frame the client has not read yet.
    pub fn drain(&mut self, conn: ConnId) -> Vec<Value> {
        self.clients
            .get_mut(&conn)
            .map(|c| c.frames.drain(..).collect())
            .unwrap_or_default()
    }

    /// `nhello` → seq-0 `nbatch` → `progress`; returns the snapshot.
    pub fn subscribed(&mut self, conn: ConnId) -> Value {
        self.expect_t(conn, "nhello");
        let snap = self.expect_t(conn, "nbatch");
        assert_eq!(snap["batch"]["seq"], 0, "{snap}");
        self.expect_t(conn, "progress");
        snap
    }

    /// A lease token for `ast` and `sub`, valid `ttl_ms` from now.
    pub fn token(&self, ast: &str, sub: &str, ttl_ms: u64) -> String {
        let ast = rindle_room_core::json::tree::JsValue::parse(ast).unwrap();
        rindle_room_core::token::mint(&rindle_room_core::token::MintOptions {
            doc: DOC,
            ast: Some(&ast),
            sub,
            kid: KID,
            key: KEY,
            ttl_ms: ttl_ms as f64,
            now_ms: self.now as f64,
            scopes_hash: None,
        })
        .unwrap()
    }

    /// A client that inited `client` and subscribed the notes as `sub` (and the lmid
    /// query, when `lmid`), the answers consumed.
    pub fn subscriber(&mut self, client: &str, sub: &str, lmid: bool) -> ConnId {
        let c = self.connect();
        self.send(c, &format!(r#"{{"t":"init","clientID":"{client}"}}"#));
        if lmid {
            self.send(
                c,
                r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#,
            );
        }
        let tok = self.token(NOTES, sub, 600_000);
        self.send(c, &subscribe_frame(1, &tok));
        // Each subscribe is answered nhello → seq-0 nbatch → progress; with an authority
        // the lmid one comes after the lease one (the room fetches the clientID's lmid
        // once the connection is authenticated).
        let mut answered = 0;
        let want = if lmid { 2 } else { 1 };
        let mut waited = 0;
        while answered < want {
            match self.clients.get_mut(&c).and_then(|x| x.frames.pop_front()) {
                Some(v) if v["t"] == "progress" => answered += 1,
                Some(v) => assert!(
                    v["t"] == "nhello" || (v["t"] == "nbatch" && v["batch"]["seq"] == 0),
                    "unexpected while subscribing: {v}"
                ),
                None => {
                    waited += 1;
                    assert!(waited <= 5_000, "{client}'s subscribes were not answered");
                    self.advance(1);
                }
            }
        }
        c
    }

    /// How many log lines contain `needle`.
    pub fn log_count(&self, needle: &str) -> usize {
        self.logs.iter().filter(|(_, l)| l.contains(needle)).count()
    }
}

/// A lease-token subscribe frame.
pub fn subscribe_frame(qid: u64, token: &str) -> String {
    format!(r#"{{"t":"subscribe","queryId":{qid},"leaseToken":"{token}"}}"#)
}

/// A `pushMutation` frame.
pub fn push(client: &str, mid: u64, name: &str, args: &str) -> String {
    format!(
        r#"{{"t":"pushMutation","envelope":{{"clientID":"{client}","mid":{mid},"name":"{name}","args":{args}}}}}"#
    )
}

/// The `(clientID, lmid)` an lmid-query frame carries, if it is one.
pub fn lmid_of(v: &Value) -> Option<(String, u64)> {
    if v["t"] != "nbatch" || v["queryId"] != 0 {
        return None;
    }
    let op = &v["batch"]["ops"][0];
    let row = if op["op"] == "edit" {
        &op["new"]
    } else {
        &op["row"]
    };
    Some((row[0].as_str()?.to_string(), row[1].as_u64()?))
}

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

mod clients;
mod io;
mod peers;
mod upstream;

pub use clients::*;
use peers::Pending;
pub use peers::*;

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
    /// The most bytes the room's queries may hold (`downstream.max_query_bytes`).
    pub max_query_bytes: usize,
    /// The most queries the room materializes (`downstream.max_materializations`).
    pub max_materializations: usize,
    /// The most rows the room's queries may hold (`downstream.max_held_rows`).
    pub max_held_rows: usize,
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
            max_query_bytes: HostConfig::default().max_query_bytes,
            max_materializations: HostConfig::default().max_materializations,
            max_held_rows: HostConfig::default().max_held_rows,
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
    cfg.max_query_bytes = o.max_query_bytes;
    cfg.max_materializations = o.max_materializations;
    cfg.max_held_rows = o.max_held_rows;
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
}

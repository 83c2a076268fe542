//! The fakes a pair wires its host to: the daemon, the journal, the authority, the
//! clients, the mutators, and the driver the host calls back.

use super::*;

/// An input the harness queued (owned; [`Input`] borrows its text).
#[derive(Clone, Debug)]
pub(super) enum Pending {
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
    pub(super) held: Vec<Output>,
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
    pub(super) mutators: &'a mut Mutators,
    pub(super) clients: &'a BTreeMap<ConnId, Client>,
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

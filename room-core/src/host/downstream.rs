//! The downstream leg (the Node shell's `serveDownstream` … `sendBudgeted` in the
//! published room): lease-token
//! subscribes, the lmid system query, the drain fan-out with its `progress` release
//! points, and the backlog caps on every socket.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use hashbrown::{HashMap, HashSet};

use super::frames::{self, OpsCache};
use super::wire::{qid_key, ClientFrame, Subscribe, Undecoded, Waiting};
use super::{ConnId, Driver, Host, HostConfig, Level, Output, SendClass, LMID_QUERY_NAME};
use crate::token;

/// The longest close reason a close frame carries (RFC 6455: 125 bytes of payload,
/// 2 of them the code).
pub const MAX_CLOSE_REASON: usize = 123;

/// `reason` cut to [`MAX_CLOSE_REASON`] bytes on a character boundary.
pub fn close_reason(reason: &str) -> String {
    let mut end = reason.len().min(MAX_CLOSE_REASON);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    String::from(&reason[..end])
}

/// The downstream leg's state.
#[derive(Debug)]
pub(super) struct Connections {
    /// The open connections.
    pub(super) conns: BTreeMap<ConnId, Conn>,
    /// clientID → the connections that sent `init` with it.
    pub(super) client_conns: HashMap<String, Vec<ConnId>>,
    /// Subscription key (`conn:queryId`) → where its frames go.
    pub(super) subs: BTreeMap<String, SubMeta>,
    /// clientID → the subject it is bound to.
    pub(super) client_subjects: HashMap<String, String>,
    /// Subject → the time (ms) before which its leases are refused.
    pub(super) revoked: HashMap<String, u64>,
    /// Subscribes held until the room is live, in arrival order.
    pub(super) pending_subs: Vec<(ConnId, Subscribe)>,
    /// The scopes hash the room's commit gate is armed with (from the configuration).
    pub(super) armed_scopes_hash: Option<String>,
    /// Scope skews already logged (lease hash + armed hash), so each is logged once.
    pub(super) logged_scope_skew: HashSet<String>,
}

impl Connections {
    /// The connection holding `client`'s first subscription in subscription-key order
    /// (the order of `subs`), with that key.
    pub(super) fn first_subscribed_conn(&self, client: &str) -> Option<(&str, ConnId)> {
        self.client_conns
            .get(client)?
            .iter()
            .filter_map(|&id| {
                self.conns
                    .get(&id)?
                    .queries
                    .values()
                    .map(|q| q.sub_key.as_str())
                    .filter(|k| self.subs.get(*k).is_some_and(|m| m.conn == id))
                    .min()
                    .map(|k| (k, id))
            })
            .min()
    }

    /// Drops connection `id` from the connections of `client`.
    pub(super) fn unindex_client(&mut self, client: &str, id: ConnId) {
        if let Some(ids) = self.client_conns.get_mut(client) {
            ids.retain(|&i| i != id);
            if ids.is_empty() {
                self.client_conns.remove(client);
            }
        }
    }

    /// Seeds bindings derived from the journal at boot (the first one per client wins;
    /// an empty subject binds nothing; a binding this process already holds stays).
    pub(super) fn seed_bindings<'a>(&mut self, bindings: impl Iterator<Item = (&'a str, &'a str)>) {
        for (client, subject) in bindings {
            if !subject.is_empty() && !self.client_subjects.contains_key(client) {
                self.client_subjects
                    .insert(String::from(client), String::from(subject));
            }
        }
    }

    /// Binds `client` to `subject` unless it is bound already; returns whether it is
    /// (now) bound to `subject`.
    pub(super) fn bind_client(&mut self, client: &str, subject: &str) -> bool {
        match self.client_subjects.get(client) {
            Some(bound) => bound == subject,
            None => {
                self.client_subjects
                    .insert(client.to_string(), subject.to_string());
                true
            }
        }
    }

    /// No connections yet; the revocations configured.
    pub(super) fn new(cfg: &HostConfig) -> Connections {
        Connections {
            conns: BTreeMap::new(),
            client_conns: HashMap::new(),
            subs: BTreeMap::new(),
            client_subjects: HashMap::new(),
            revoked: cfg.revoked.iter().cloned().collect(),
            pending_subs: Vec::new(),
            armed_scopes_hash: cfg.armed_scopes_hash(),
            logged_scope_skew: HashSet::new(),
        }
    }

    /// Whether `conn` is known and not closing (`readyState === OPEN`).
    pub(super) fn is_open(&self, conn: ConnId) -> bool {
        self.conns.get(&conn).is_some_and(|c| !c.closing)
    }
}

/// One downstream connection's state.
#[derive(Debug)]
pub(super) struct Conn {
    /// queryId (as JS text) → its subscription key and downstream epoch.
    pub(super) queries: HashMap<String, QueryEnt>,
    /// The `init` clientID.
    pub(super) client_id: Option<String>,
    /// The subject bound by the first verified lease.
    pub(super) sub: Option<String>,
    /// When the socket opened: the first-frame deadline counts from it.
    pub(super) opened_at: u64,
    /// Whether it sent a valid `init` or `subscribe` yet.
    pub(super) identified: bool,
    /// Subscribes held until the room is live.
    pub(super) held_subs: usize,
    /// `pushMutation`s held until the room is live.
    pub(super) held_mutes: usize,
    /// lmid subscribes of a clientID the room must ask the authority about, waiting
    /// for the connection's first verified lease (see `newcomer.rs`).
    pub(super) parked_lmid: Vec<Subscribe>,
    /// When the first of them was parked.
    pub(super) parked_since: u64,
    /// A close was output: no more frames go to it.
    pub(super) closing: bool,
    /// When it last showed it is alive (a frame, a pong; `liveness.rs`).
    pub(super) heard_at: u64,
    /// It was pinged since.
    pub(super) pinged: bool,
}

/// A `(connection, queryId)` subscription.
#[derive(Clone, Debug)]
pub(super) struct QueryEnt {
    pub(super) sub_key: String,
    pub(super) epoch: u64,
}

/// Where a subscriber's frames go, and its lease.
#[derive(Clone, Debug)]
pub(super) struct SubMeta {
    pub(super) conn: ConnId,
    pub(super) qid: f64,
    /// The lease subject (`""` for the lmid system subscription).
    pub(super) user: String,
    /// Lease expiry, ms (`INFINITY` for the lmid subscription).
    pub(super) exp: f64,
}

impl Host {
    /// Whether `conn` is known and not closing (`readyState === OPEN`).
    pub(super) fn is_open(&self, conn: ConnId) -> bool {
        self.down.is_open(conn)
    }

    /// Queues a frame outside every cap (the Node shell's `send`); dropped for a closing
    /// socket.
    pub(super) fn send(&mut self, conn: ConnId, text: String) {
        self.queue(conn, text, SendClass::Plain);
    }

    fn queue(&mut self, conn: ConnId, text: String, class: SendClass) {
        if !self.is_open(conn) {
            return;
        }
        self.counters.frames_out += 1;
        self.counters.bytes_out += text.len() as u64;
        self.out.push_send(conn, text, class);
    }

    /// The socket's backlog of each class: what its driver holds unread plus what the
    /// host has output and the driver not polled yet.
    fn backlog(&self, conn: ConnId, driver: &dyn Driver) -> (usize, usize) {
        let b = driver.backlog(conn);
        let (live, snapshot) = self.out.unpolled.get(&conn).copied().unwrap_or((0, 0));
        (b.live + live, b.snapshot + snapshot)
    }

    /// Queues a live frame unless the socket's live backlog would pass the send budget,
    /// in which case the socket is cut (the Node shell's `sendBudgeted`).
    pub(super) fn send_live(&mut self, conn: ConnId, text: String, driver: &dyn Driver) {
        if !self.is_open(conn) {
            return;
        }
        let budget = self.cfg.send_budget_bytes;
        let (live, _) = self.backlog(conn, driver);
        if live + text.len() > budget {
            let why = format!(
                "send budget exceeded: {} bytes unread (downstream.send_budget_bytes = {budget})",
                live + text.len()
            );
            return self.cut(conn, &why);
        }
        self.queue(conn, text, SendClass::Live);
    }

    /// Queues a subscribe's snapshot unless the socket's unread snapshots would pass
    /// `max_snapshot_bytes` (one snapshot alone always goes: its size was checked).
    fn send_snapshot(&mut self, conn: ConnId, text: String, driver: &dyn Driver) {
        if !self.is_open(conn) {
            return;
        }
        let max = self.cfg.max_snapshot_bytes;
        let (_, snapshot) = self.backlog(conn, driver);
        if snapshot > 0 && snapshot + text.len() > max {
            let why = format!(
                "snapshot backlog exceeded: {} bytes unread (downstream.max_snapshot_bytes \
                 = {max})",
                snapshot + text.len()
            );
            return self.cut(conn, &why);
        }
        self.queue(conn, text, SendClass::Snapshot);
    }

    /// Cuts a socket that is not reading: its queue is dropped and it closes with 1008
    /// (a gap the client repairs by re-subscribing).
    fn cut(&mut self, conn: ConnId, why: &str) {
        self.counters.budget_terminations += 1;
        self.log(
            Level::Warn,
            format!("conn {conn} cut (1008, a gap to repair): {why}"),
        );
        self.close_conn(conn, 1008, why, true);
    }

    /// Closes a connection with `code` and `reason` (once); `discard` drops what is
    /// queued for it, in the host and in the driver.
    pub(super) fn close_conn(&mut self, conn: ConnId, code: u16, reason: &str, discard: bool) {
        let Some(c) = self.down.conns.get_mut(&conn) else {
            return;
        };
        if c.closing {
            return;
        }
        c.closing = true;
        if discard {
            self.out.discard_sends(conn);
        }
        self.push(Output::Close {
            conn,
            code,
            reason: close_reason(reason),
            discard_queued: discard,
        });
    }

    pub(super) fn on_conn_open(&mut self, id: ConnId) {
        self.down.conns.insert(
            id,
            Conn {
                queries: Default::default(),
                client_id: None,
                sub: None,
                opened_at: self.now,
                identified: false,
                held_subs: 0,
                held_mutes: 0,
                parked_lmid: Vec::new(),
                parked_since: 0,
                closing: false,
                heard_at: self.now,
                pinged: false,
            },
        );
        self.debug(|| format!("conn {id}: open"));
        if self.closed() || self.shutting_down() {
            self.close_conn(id, 1001, "room shutting down", false);
        }
    }

    pub(super) fn on_conn_closed(&mut self, id: ConnId) {
        let Some(conn) = self.down.conns.remove(&id) else {
            return;
        };
        self.out.unpolled.remove(&id);
        if conn.held_subs > 0 {
            self.down.pending_subs.retain(|(i, _)| *i != id);
        }
        if conn.held_mutes > 0 {
            self.writes.pending_mutes.retain(|(i, _)| *i != id);
        }
        if let Some(client) = &conn.client_id {
            self.down.unindex_client(client, id);
            self.release_binding(client);
        }
        let now = self.now;
        for q in conn.queries.values() {
            if self.down.subs.get(&q.sub_key).is_some_and(|m| m.conn == id) {
                self.down.subs.remove(&q.sub_key);
            }
            if let Some(room) = self.inc.room.as_mut() {
                room.room_mut().unsubscribe(&q.sub_key, now);
            }
        }
        self.debug(|| {
            let client = conn.client_id.as_deref().unwrap_or("-");
            let n = conn.queries.len();
            format!("conn {id}: closed (clientID {client}, {n} subscription(s) detached)")
        });
    }

    pub(super) fn on_conn_msg(&mut self, id: ConnId, text: &str, driver: &mut dyn Driver) {
        if !self.is_open(id) {
            return;
        }
        match ClientFrame::decode(text) {
            Ok(frame) => self.handle_client_frame(id, frame, driver),
            // Ignored, as the published room's Node shell does.
            Err(Undecoded::NotJson(len)) => {
                self.debug(|| format!("conn {id}: ignored frame: not JSON ({len} bytes)"));
            }
            Err(Undecoded::NotObject) => {
                self.debug(|| format!("conn {id}: ignored frame: not a JSON object"));
            }
        }
        self.budget_answers(id, driver);
    }

    /// The answers a client frame gets (errors, outcomes, hellos) are not live frames,
    /// but a client that keeps sending while it reads nothing piles them up all the
    /// same: once its unread bytes pass the send budget, the socket is cut as for live
    /// frames ([`Host::send_live`]).
    fn budget_answers(&mut self, id: ConnId, driver: &dyn Driver) {
        if !self.is_open(id) {
            return;
        }
        let budget = self.cfg.send_budget_bytes;
        let (unread, _) = self.backlog(id, driver);
        if unread > budget {
            let why = format!(
                "send budget exceeded: {unread} bytes unread (downstream.send_budget_bytes = \
                 {budget})"
            );
            self.cut(id, &why);
        }
    }

    fn handle_client_frame(&mut self, id: ConnId, frame: ClientFrame, driver: &mut dyn Driver) {
        match frame {
            // The connection identity; no reply frame.
            ClientFrame::Init { client_id } => self.on_init(id, client_id.as_deref()),
            ClientFrame::Subscribe(sub) => {
                if let Some(c) = self.down.conns.get_mut(&id) {
                    c.identified = true;
                }
                let key = qid_key(sub.qid);
                if !self.admit_subscription(id, &sub, &key) {
                    return;
                }
                if !self.inc.live || self.inc.room.is_none() {
                    // Held until the seq-0 snapshot lands.
                    if let Some(c) = self.down.conns.get_mut(&id) {
                        c.held_subs += 1;
                    }
                    self.down.pending_subs.push((id, sub));
                    self.debug(|| {
                        format!("conn {id}: subscribe queryId {key} held until the room is live")
                    });
                    return;
                }
                self.handle_subscribe(id, &sub, driver);
            }
            ClientFrame::SubscribeWithoutQid => self
                .debug(|| format!("conn {id}: ignored frame: subscribe without a numeric queryId")),
            ClientFrame::Unsubscribe { qid } => {
                let key = qid_key(qid);
                let prev = self
                    .down
                    .conns
                    .get_mut(&id)
                    .and_then(|c| c.queries.remove(&key));
                let known = prev.is_some();
                if let Some(prev) = prev {
                    self.down.subs.remove(&prev.sub_key);
                    let now = self.now;
                    if let Some(room) = self.inc.room.as_mut() {
                        room.room_mut().unsubscribe(&prev.sub_key, now);
                    }
                }
                self.debug(|| {
                    let what = if known {
                        ""
                    } else {
                        " (not subscribed: nothing to do)"
                    };
                    format!("conn {id}: unsubscribe queryId {key}{what}")
                });
            }
            ClientFrame::UnsubscribeWithoutQid => self.debug(|| {
                format!("conn {id}: ignored frame: unsubscribe without a numeric queryId")
            }),
            ClientFrame::PushMutation(Some(envelope)) => {
                self.handle_push_mutation(id, envelope, driver);
            }
            ClientFrame::PushMutation(None) => {
                self.send(id, frames::error(None, "malformed pushMutation envelope"));
            }
            ClientFrame::Mutate { query_id } => {
                // Raw CRUD never crosses this wire: room writes are named mutators.
                let text = frames::error(
                    query_id.as_ref(),
                    "this room accepts named mutators only (pushMutation)",
                );
                self.send(id, text);
            }
            ClientFrame::Unknown(t) => {
                self.debug(|| format!("conn {id}: ignored frame: unknown type {t:?}"));
            }
            ClientFrame::Untyped => {
                self.debug(|| format!("conn {id}: ignored frame: no string \"t\""));
            }
        }
    }

    fn query_error(&mut self, conn: ConnId, qid: f64, message: &str) {
        self.debug(|| {
            format!(
                "conn {conn}: queryError for queryId {}: {message}",
                qid_key(qid)
            )
        });
        self.send(conn, frames::query_error(qid, message));
    }

    /// Serves one `subscribe` (live room only).
    pub(super) fn handle_subscribe(
        &mut self,
        id: ConnId,
        sub: &Subscribe,
        driver: &mut dyn Driver,
    ) {
        if self.inc.room.is_none() || !self.down.conns.contains_key(&id) {
            return; // raced an incarnation death, or the socket is gone
        }
        let qid = sub.qid;
        if let Some(name) = &sub.name {
            if name == LMID_QUERY_NAME
                && self
                    .await_lmid(id, Waiting::Subscribe(sub.clone()))
                    .is_none()
            {
                return; // served once the authority told its durable lmid
            }
            self.handle_lmid_subscribe(id, qid, name, driver);
            return;
        }
        let Some(token_text) = sub.lease_token.as_deref() else {
            self.query_error(id, qid, "subscribe requires a lease token");
            return;
        };
        let keys = &self.cfg.token_keys;
        let payload = match token::verify(token_text, &self.cfg.doc_id, keys, self.now as f64) {
            Ok(p) => p,
            Err(e) => {
                self.query_error(id, qid, &alloc::string::ToString::to_string(&e));
                return;
            }
        };
        if let Some(&at) = self.down.revoked.get(&payload.sub) {
            if payload.iat <= at as f64 {
                self.query_error(id, qid, "lease token refused: revoked");
                return;
            }
        }
        self.check_scope_skew(payload.scopes_hash.as_deref());
        // Subject binding: the first verified lease binds the connection's subject.
        let Some(conn) = self.down.conns.get_mut(&id) else {
            return;
        };
        match &conn.sub {
            None => {
                conn.sub = Some(payload.sub.clone());
                self.on_conn_subject(id);
            }
            Some(bound) if *bound != payload.sub => {
                let text = "lease token refused: connection is bound to another subject";
                self.query_error(id, qid, text);
                return;
            }
            Some(_) => {}
        }
        let ast_json = payload.ast.to_js_string();
        let meta = SubMeta {
            conn: id,
            qid,
            user: payload.sub.clone(),
            exp: payload.exp,
        };
        self.attach(id, qid, meta, driver, |room| {
            room.parse_subscription(&ast_json)
        });
        self.release_parked(id, driver);
    }

    pub(super) fn handle_lmid_subscribe(
        &mut self,
        id: ConnId,
        qid: f64,
        name: &str,
        driver: &mut dyn Driver,
    ) {
        if name != LMID_QUERY_NAME {
            self.query_error(id, qid, "subscribe requires a lease token");
            return;
        }
        if self.cfg.writes.is_none() {
            self.query_error(
                id,
                qid,
                "this room is read-only (no write plane configured)",
            );
            return;
        }
        let Some(conn) = self.down.conns.get(&id) else {
            return;
        };
        let Some(client) = conn.client_id.clone() else {
            self.query_error(id, qid, "subscribe lmid query before init");
            return;
        };
        if let Some(subject) = conn.sub.clone() {
            if !self.down.bind_client(&client, &subject) {
                self.query_error(id, qid, &frames::bound_elsewhere(&client));
                return;
            }
        }
        // Not lease-gated: lives as long as its connection.
        let meta = SubMeta {
            conn: id,
            qid,
            user: String::new(),
            exp: f64::INFINITY,
        };
        self.attach(id, qid, meta, driver, |room| room.lmid_query(&client));
    }

    /// Subscribes `(conn, qid)` at the next downstream epoch to the query `make_query`
    /// builds and sends `nhello` → seq-0 `nbatch` → `progress` — within the room's cap
    /// on materializations and the cap on a snapshot's size.
    fn attach(
        &mut self,
        id: ConnId,
        qid: f64,
        meta: SubMeta,
        driver: &mut dyn Driver,
        make_query: impl FnOnce(&crate::Room) -> Result<crate::ast::Query, crate::Error>,
    ) {
        let key = qid_key(qid);
        let sub_key = format!("{id}:{key}");
        let prev = self
            .down
            .conns
            .get(&id)
            .and_then(|c| c.queries.get(&key))
            .cloned();
        let epoch = prev.as_ref().map_or(1, |p| p.epoch + 1);
        if let Some(p) = &prev {
            self.down.subs.remove(&p.sub_key);
        }
        let now = self.now;
        let (max, max_bytes) = (self.cfg.max_materializations, self.cfg.max_query_bytes);
        let Some(room) = self.inc.room.as_mut() else {
            return;
        };
        let room = room.room_mut();
        let res = match make_query(room) {
            Ok(query) => {
                if let Some(refusal) = admit(room, &query, max, max_bytes) {
                    self.query_error(id, qid, &refusal);
                    return;
                }
                room.subscribe(&sub_key, epoch, &query, now)
            }
            Err(e) => Err(e),
        };
        let res = match res {
            Ok(r) => r,
            Err(e) => {
                self.query_error(id, qid, &format!("materialize failed: {}", e.message()));
                return;
            }
        };
        let snapshot = frames::nbatch(qid, &res.snapshot);
        let max = self.cfg.max_snapshot_bytes;
        if snapshot.len() > max {
            if let Some(room) = self.inc.room.as_mut() {
                room.room_mut().unsubscribe(&sub_key, now);
            }
            if let Some(c) = self.down.conns.get_mut(&id) {
                c.queries.remove(&key);
            }
            let message = format!(
                "snapshot too large: {} bytes, the limit is {max} \
                 (downstream.max_snapshot_bytes); narrow the query (a filter, a limit)",
                snapshot.len()
            );
            self.query_error(id, qid, &message);
            return;
        }
        if !res.reused {
            if let Some(held) = self.held_rows_past_cap() {
                if let Some(room) = self.inc.room.as_mut() {
                    room.room_mut().undo_subscribe(&sub_key, now);
                }
                if let Some(c) = self.down.conns.get_mut(&id) {
                    c.queries.remove(&key);
                }
                let max = self.cfg.max_held_rows;
                let message = format!(
                    "materialize refused: the room's queries would hold {held} rows, the \
                     limit is {max} (downstream.max_held_rows); narrow the query (a filter, \
                     a limit) or try again later"
                );
                self.query_error(id, qid, &message);
                return;
            }
        }
        if let Some(budget) = self.cfg.max_room_bytes {
            if let Some(room) = self.inc.room.as_mut() {
                let retained = room.room().retained_bytes() as u64;
                if retained > budget {
                    room.room_mut().undo_subscribe(&sub_key, now);
                    if let Some(c) = self.down.conns.get_mut(&id) {
                        c.queries.remove(&key);
                    }
                    self.counters.budget_refusals += 1;
                    let message = format!(
                        "room memory budget exceeded: {retained} bytes retained, budget {budget}"
                    );
                    self.query_error(id, qid, &message);
                    return;
                }
            }
        }
        self.debug(|| {
            let who = if meta.user.is_empty() {
                String::from("the lmid query")
            } else {
                format!("sub {}", meta.user)
            };
            let bytes = snapshot.len();
            format!("conn {id}: subscribed queryId {key} ({who}, epoch {epoch}, snapshot {bytes} bytes)")
        });
        if let Some(c) = self.down.conns.get_mut(&id) {
            c.queries.insert(
                key,
                QueryEnt {
                    sub_key: sub_key.clone(),
                    epoch,
                },
            );
        }
        self.down.subs.insert(sub_key, meta);
        let hello = frames::nhello(qid, &res.hello, &self.inc.boot_id);
        self.send(id, hello);
        self.send_snapshot(id, snapshot, driver);
        self.send_progress(id, driver);
    }

    /// After a new query was built: the rows the room's queries hold when they are past
    /// `max_held_rows` even once idle queries are reclaimed (longest idle first), else
    /// `None`.
    fn held_rows_past_cap(&mut self) -> Option<usize> {
        let max = self.cfg.max_held_rows;
        let room = self.inc.room.as_mut()?.room_mut();
        if room.held_rows() <= max {
            return None;
        }
        room.reclaim_idle_rows(max);
        let held = room.held_rows();
        (held > max).then_some(held)
    }

    fn check_scope_skew(&mut self, lease: Option<&str>) {
        let (Some(armed), Some(lease)) = (self.down.armed_scopes_hash.clone(), lease) else {
            return;
        };
        if armed == lease {
            return;
        }
        let key = format!("{lease}{armed}");
        if self.down.logged_scope_skew.insert(key) {
            self.log(
                Level::Warn,
                format!(
                    "scope skew: this room's gate armed with scopes {armed} but a lease proves \
                     against {lease} — a room profile was edited under this live room. Routed \
                     writes will deopt (safe, but degraded) until the room re-boots."
                ),
            );
        }
    }

    /// Drains the core once and fans the frames out, then one `progress` per touched
    /// connection, after its data. Returns the touched connections.
    pub(super) fn drain_downstream(&mut self, driver: &mut dyn Driver) -> Vec<ConnId> {
        let Some(room) = self.inc.room.as_mut() else {
            return Vec::new();
        };
        let drained = room.room_mut().commit_all();
        if drained.is_empty() {
            return Vec::new();
        }
        let mut cache = OpsCache::default();
        let mut out: Vec<(ConnId, String)> = Vec::with_capacity(drained.len());
        for f in &drained {
            if let Some(meta) = self.down.subs.get(&*f.sub) {
                let text = frames::nbatch_with_ops(meta.qid, &f.batch, cache.get(&f.batch.ops));
                out.push((meta.conn, text));
            }
        }
        let mut touched: Vec<ConnId> = Vec::new();
        for (conn, text) in out {
            self.send_live(conn, text, driver);
            if !touched.contains(&conn) {
                touched.push(conn);
            }
        }
        for &conn in &touched {
            self.send_progress(conn, driver);
        }
        touched
    }

    /// The connection-level release point: `headCv`, held below an author's oldest
    /// un-acked mutation, plus the upstream-absorption advert once known.
    pub(super) fn send_progress(&mut self, conn: ConnId, driver: &dyn Driver) {
        let Some(text) = self.progress_text(conn) else {
            return;
        };
        self.send_live(conn, text, driver);
    }

    fn progress_text(&self, conn: ConnId) -> Option<String> {
        let room = self.inc.room.as_ref()?;
        let mut cv_min = room.head_cv() as i64;
        let client = self
            .down
            .conns
            .get(&conn)
            .and_then(|c| c.client_id.as_ref());
        if let Some(held) = client.and_then(|c| self.writes.unacked.get(c)) {
            if let Some(&(_, apply_cv)) = held.front() {
                cv_min = cv_min.min(apply_cv as i64 - 1);
            }
        }
        Some(frames::progress(
            cv_min,
            self.up.cv_min,
            self.up.daemon_boot.as_deref(),
        ))
    }
}

/// Whether the room can materialize `query` within its caps on materializations
/// (`max`) and on the bytes its queries hold (`max_bytes`), reclaiming idle queries
/// (longest idle first) to make room; `Some(refusal)` when it cannot. A query equal to
/// one already materialized is shared, and costs nothing.
fn admit(
    room: &mut crate::Room,
    query: &crate::ast::Query,
    max: usize,
    max_bytes: usize,
) -> Option<String> {
    let cost = room.materialization_cost(query)?;
    if room.materialization_count() >= max {
        room.reclaim_idle(max.saturating_sub(1));
        if room.materialization_count() >= max {
            return Some(format!(
                "materialize refused: this room holds {max} live queries \
                 (downstream.max_materializations); try again later"
            ));
        }
    }
    if room.query_bytes() + cost > max_bytes {
        room.reclaim_idle_bytes(max_bytes.saturating_sub(cost));
        let held = room.query_bytes();
        if held + cost > max_bytes {
            return Some(format!(
                "materialize refused: this query holds {cost} bytes and the room's live \
                 queries {held}, the limit is {max_bytes} (downstream.max_query_bytes); \
                 narrow the query or try again later"
            ));
        }
    }
    None
}

//! The downstream leg (seed 002 `serveDownstream` … `sendBudgeted`): lease-token
//! subscribes, the lmid system query, the drain fan-out with its `progress` release
//! points and the send budget. Lease expiry and revocation live in
//! [`leases`](super::leases).

use rindle_room_core::json::tree::JsValue;
use rindle_room_core::json::write::write_f64;
use rindle_room_core::token;

use super::{Actor, Conn, QueryEnt, SubMeta};
use crate::server::conn::{ConnOut, Sent};
use crate::server::frames::{self, OpsCache};

/// The reserved lmid system query, subscribed by name.
pub(crate) const LMID_QUERY_NAME: &str = "_rindle/clientLmid";

/// A queryId as the text JavaScript's `String(n)` gives (subscription keys, map keys).
pub(crate) fn qid_key(qid: f64) -> String {
    let mut s = String::new();
    write_f64(&mut s, qid);
    s
}

impl Actor {
    /// Queues a frame on a connection, outside the send budget (seed `send`).
    pub(crate) fn send(&mut self, conn: u64, text: String) {
        if let Some(c) = self.conns.get_mut(&conn) {
            if let Sent::Queued(n) = c.out.send(text) {
                self.metrics.frame_out(n);
            }
        }
    }

    /// Queues a frame within the connection's send budget; terminates it past the budget.
    pub(crate) fn send_budgeted(&mut self, conn: u64, text: String) {
        let budget = self.settings.send_budget_bytes;
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let sent = c.out.send_budgeted(text, budget);
        self.sent(conn, sent);
    }

    /// Queues a subscribe's snapshot frame against the socket's unread-snapshot cap;
    /// cuts the socket past it.
    pub(crate) fn send_snapshot(&mut self, conn: u64, text: String) {
        let max = self.settings.max_snapshot_bytes;
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        let sent = c.out.send_snapshot(text, max);
        self.sent(conn, sent);
    }

    fn sent(&mut self, conn: u64, sent: Sent) {
        match sent {
            Sent::Queued(n) => self.metrics.frame_out(n),
            Sent::Dropped => {}
            Sent::Cut(why) => {
                self.metrics.inc(&self.metrics.budget_terminations);
                self.log
                    .warn(&format!("conn {conn} cut (1008, a gap to repair): {why}"));
            }
        }
    }

    pub(super) fn on_conn_open(&mut self, id: u64, out: ConnOut) {
        if self.closed() {
            let mut out = out;
            out.close(1001, "room shutting down");
            return;
        }
        self.conns.insert(
            id,
            Conn {
                out,
                queries: Default::default(),
                client_id: None,
                sub: None,
                opened_at: self.env.now_ms(),
                identified: false,
                held_subs: 0,
                held_mutes: 0,
            },
        );
    }

    pub(super) fn on_conn_closed(&mut self, id: u64) {
        let Some(conn) = self.conns.remove(&id) else {
            return;
        };
        if conn.held_subs > 0 {
            self.pending_subs.retain(|(i, _)| *i != id);
        }
        if conn.held_mutes > 0 {
            self.pending_mutes.retain(|(i, _)| *i != id);
        }
        if let Some(client) = &conn.client_id {
            self.unindex_client(client, id);
            self.release_binding(client);
        }
        let now = self.env.now_ms();
        for q in conn.queries.values() {
            if self.subs.get(&q.sub_key).is_some_and(|m| m.conn == id) {
                self.subs.remove(&q.sub_key);
            }
            if let Some(room) = self.room.as_mut() {
                room.room_mut().unsubscribe(&q.sub_key, now);
            }
        }
    }

    /// Drops connection `id` from the connections of `client`.
    fn unindex_client(&mut self, client: &str, id: u64) {
        if let Some(ids) = self.client_conns.get_mut(client) {
            ids.retain(|&i| i != id);
            if ids.is_empty() {
                self.client_conns.remove(client);
            }
        }
    }

    /// The connection holding `client`'s first subscription in subscription-key order
    /// (the order of `subs`), with that key.
    pub(crate) fn first_subscribed_conn(&self, client: &str) -> Option<(&str, u64)> {
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

    pub(super) fn on_conn_msg(&mut self, id: u64, text: &str) {
        if !self.conns.contains_key(&id) {
            return;
        }
        let Ok(msg) = JsValue::parse(text) else {
            return; // not JSON: ignored, as the seed does
        };
        if !matches!(msg, JsValue::Obj(_)) {
            return;
        }
        if let Err(message) = self.handle_downstream_msg(id, &msg) {
            self.send(id, frames::error(msg.get("queryId"), &message));
        }
    }

    fn handle_downstream_msg(&mut self, id: u64, msg: &JsValue) -> Result<(), String> {
        match msg.get("t").and_then(JsValue::as_str) {
            // The connection identity; no reply frame.
            Some("init") => self.on_init(id, msg),
            Some("subscribe") => {
                let Some(JsValue::Num(qid)) = msg.get("queryId") else {
                    return Ok(());
                };
                if let Some(c) = self.conns.get_mut(&id) {
                    c.identified = true;
                }
                if !self.admit_subscription(id, msg, &qid_key(*qid)) {
                    return Ok(());
                }
                if !self.live || self.room.is_none() {
                    // Held until the seq-0 snapshot lands.
                    if let Some(c) = self.conns.get_mut(&id) {
                        c.held_subs += 1;
                    }
                    self.pending_subs.push((id, msg.clone()));
                    return Ok(());
                }
                self.handle_subscribe(id, msg);
            }
            Some("unsubscribe") => {
                let Some(JsValue::Num(q)) = msg.get("queryId") else {
                    return Ok(());
                };
                let key = qid_key(*q);
                let prev = self.conns.get_mut(&id).and_then(|c| c.queries.remove(&key));
                if let Some(prev) = prev {
                    self.subs.remove(&prev.sub_key);
                    let now = self.env.now_ms();
                    if let Some(room) = self.room.as_mut() {
                        room.room_mut().unsubscribe(&prev.sub_key, now);
                    }
                }
            }
            Some("pushMutation") => match super::writes::Envelope::from_frame(msg) {
                Some(envelope) => self.handle_push_mutation(id, envelope),
                None => self.send(id, frames::error(None, "malformed pushMutation envelope")),
            },
            Some("mutate") => {
                // Raw CRUD never crosses this wire: room writes are named mutators.
                let text = frames::error(
                    msg.get("queryId"),
                    "this room accepts named mutators only (pushMutation)",
                );
                self.send(id, text);
            }
            _ => {}
        }
        Ok(())
    }

    fn query_error(&mut self, conn: u64, qid: f64, message: &str) {
        self.send(conn, frames::query_error(qid, message));
    }

    /// Serves one `subscribe` (live room only).
    pub(crate) fn handle_subscribe(&mut self, id: u64, msg: &JsValue) {
        if self.room.is_none() || !self.conns.contains_key(&id) {
            return; // raced an incarnation death, or the socket is gone
        }
        let Some(JsValue::Num(qid)) = msg.get("queryId") else {
            return;
        };
        let qid = *qid;
        if let Some(JsValue::Str(name)) = msg.get("name") {
            self.handle_lmid_subscribe(id, qid, name);
            return;
        }
        let Some(JsValue::Str(token_text)) = msg.get("leaseToken") else {
            self.query_error(id, qid, "subscribe requires a lease token");
            return;
        };
        let now = self.env.now_ms();
        let s = &self.settings;
        let payload = match token::verify(token_text, &s.doc_id, &s.token_keys, now as f64) {
            Ok(p) => p,
            Err(e) => {
                self.query_error(id, qid, &e.to_string());
                return;
            }
        };
        if let Some(&at) = self.revoked.get(&payload.sub) {
            if payload.iat <= at as f64 {
                self.query_error(id, qid, "lease token refused: revoked");
                return;
            }
        }
        self.check_scope_skew(payload.scopes_hash.as_deref());
        // Subject binding: the first verified lease binds the connection's subject.
        let conn = self.conns.get_mut(&id).expect("checked above");
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
        self.attach(id, qid, meta, |room| room.parse_query(&ast_json));
    }

    fn handle_lmid_subscribe(&mut self, id: u64, qid: f64, name: &str) {
        if name != LMID_QUERY_NAME {
            self.query_error(id, qid, "subscribe requires a lease token");
            return;
        }
        if self.settings.writes.is_none() {
            self.query_error(
                id,
                qid,
                "this room is read-only (no write plane configured)",
            );
            return;
        }
        let Some(conn) = self.conns.get(&id) else {
            return;
        };
        let Some(client) = conn.client_id.clone() else {
            self.query_error(id, qid, "subscribe lmid query before init");
            return;
        };
        if let Some(subject) = conn.sub.clone() {
            if !self.bind_client(&client, &subject) {
                self.query_error(id, qid, &super::binding::bound_elsewhere(&client));
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
        self.attach(id, qid, meta, |room| room.lmid_query(&client));
    }

    /// Subscribes `(conn, qid)` at the next downstream epoch to the query `make_query`
    /// builds and sends `nhello` → seq-0 `nbatch` → `progress` — within the room's cap
    /// on materializations and the cap on a snapshot's size.
    fn attach(
        &mut self,
        id: u64,
        qid: f64,
        meta: SubMeta,
        make_query: impl FnOnce(
            &rindle_room_core::Room,
        )
            -> Result<rindle_room_core::ast::Query, rindle_room_core::Error>,
    ) {
        let key = qid_key(qid);
        let sub_key = format!("{id}:{key}");
        let prev = self
            .conns
            .get(&id)
            .and_then(|c| c.queries.get(&key))
            .cloned();
        let epoch = prev.as_ref().map_or(1, |p| p.epoch + 1);
        if let Some(p) = &prev {
            self.subs.remove(&p.sub_key);
        }
        let now = self.env.now_ms();
        let Some(room) = self.room.as_mut() else {
            return;
        };
        let room = room.room_mut();
        let res = match make_query(room) {
            Ok(query) => {
                let max = self.settings.max_materializations;
                if !room.is_materialized(&query) && room.materialization_count() >= max {
                    room.reclaim_idle(max - 1);
                    if room.materialization_count() >= max {
                        let message = format!(
                            "materialize refused: this room holds {max} live queries \
                             (downstream.max_materializations); try again later"
                        );
                        self.query_error(id, qid, &message);
                        return;
                    }
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
        let max = self.settings.max_snapshot_bytes;
        if snapshot.len() > max {
            if let Some(room) = self.room.as_mut() {
                room.room_mut().unsubscribe(&sub_key, now);
            }
            if let Some(c) = self.conns.get_mut(&id) {
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
        if let Some(c) = self.conns.get_mut(&id) {
            c.queries.insert(
                key,
                QueryEnt {
                    sub_key: sub_key.clone(),
                    epoch,
                },
            );
        }
        self.subs.insert(sub_key, meta);
        let hello = frames::nhello(qid, &res.hello, &self.boot_id);
        self.send(id, hello);
        self.send_snapshot(id, snapshot);
        self.send_progress(id);
    }

    fn check_scope_skew(&mut self, lease: Option<&str>) {
        let (Some(armed), Some(lease)) = (self.settings.armed_scopes_hash.as_deref(), lease) else {
            return;
        };
        if armed == lease {
            return;
        }
        let key = format!("{lease}{armed}");
        if self.logged_scope_skew.insert(key) {
            self.log.warn(&format!(
                "scope skew: this room's gate armed with scopes {armed} but a lease proves \
                 against {lease} — a room profile was edited under this live room. Routed \
                 writes will deopt (safe, but degraded) until the room re-boots."
            ));
        }
    }

    /// Drains the core once and fans the frames out, then one `progress` per touched
    /// connection, after its data.
    pub(crate) fn drain_downstream(&mut self) {
        let Some(room) = self.room.as_mut() else {
            return;
        };
        let drained = room.room_mut().commit_all();
        if drained.is_empty() {
            return;
        }
        let mut cache = OpsCache::default();
        let mut out: Vec<(u64, String)> = Vec::with_capacity(drained.len());
        for f in &drained {
            if let Some(meta) = self.subs.get(&*f.sub) {
                let text = frames::nbatch_with_ops(meta.qid, &f.batch, cache.get(&f.batch.ops));
                out.push((meta.conn, text));
            }
        }
        let mut touched: Vec<u64> = Vec::new();
        for (conn, text) in out {
            self.send_budgeted(conn, text);
            if !touched.contains(&conn) {
                touched.push(conn);
            }
        }
        for conn in touched {
            self.send_progress(conn);
        }
    }

    /// The connection-level release point: `headCv`, held below an author's oldest
    /// un-acked mutation, plus the upstream-absorption advert once known.
    pub(crate) fn send_progress(&mut self, conn: u64) {
        let Some(room) = self.room.as_ref() else {
            return;
        };
        let mut cv_min = room.head_cv() as i64;
        let client = self.conns.get(&conn).and_then(|c| c.client_id.as_ref());
        if let Some(held) = client.and_then(|c| self.unacked.get(c)) {
            if let Some(&(_, apply_cv)) = held.front() {
                cv_min = cv_min.min(apply_cv as i64 - 1);
            }
        }
        let text = frames::progress(cv_min, self.upstream_cv_min, self.upstream_boot.as_deref());
        self.send_budgeted(conn, text);
    }
}

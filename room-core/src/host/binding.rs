//! clientID → subject binding.
//!
//! A clientID is an idempotency key the client picks, not an identity: whoever knows it
//! could push under it and have the owner's next mutation absorbed as a duplicate. So
//! the first lease verified on a connection that inits a clientID binds that clientID to
//! the lease's subject, and from then on a `pushMutation` for it — or an lmid subscribe
//! on an authenticated connection — from any other subject is refused with an error
//! frame. The binding of every client with journaled mutations survives restarts: each
//! journal entry carries its subject, and compaction keeps one binding record per client
//! ([`Journal::bindings`](super::JournalContents::bindings)). A client with nothing
//! journaled is forgotten when its last connection closes (it owns no ledger row to
//! protect).
//!
//! An lmid subscribe on a connection with no subject yet is served (a client subscribes
//! its lmid query before its first lease, and the lmid is a counter, not data); when the
//! connection then authenticates as a subject the clientID is not bound to, its lmid
//! subscriptions are dropped with a `queryError`.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::frames::{self, bound_elsewhere};
use super::wire::qid_key;
use super::{ConnId, Host};

impl Host {
    /// Binds `client` to `subject` unless it is bound already; returns whether it is
    /// (now) bound to `subject`.
    pub(super) fn bind_client(&mut self, client: &str, subject: &str) -> bool {
        match self.down.client_subjects.get(client) {
            Some(bound) => bound == subject,
            None => {
                self.down
                    .client_subjects
                    .insert(client.to_string(), subject.to_string());
                true
            }
        }
    }

    /// Seeds bindings read from the journal at boot (the first one per client wins; a
    /// binding this process already holds stays).
    pub(super) fn seed_bindings(&mut self, bindings: &[(String, String)]) {
        for (client, subject) in bindings {
            if !subject.is_empty() {
                self.down
                    .client_subjects
                    .entry(client.clone())
                    .or_insert_with(|| subject.clone());
            }
        }
    }

    /// Connection `id` just bound its subject: bind its clientID, or — when that clientID
    /// belongs to another subject — drop the connection's lmid subscriptions.
    pub(super) fn on_conn_subject(&mut self, id: ConnId) {
        let Some(conn) = self.down.conns.get(&id) else {
            return;
        };
        let (Some(client), Some(subject)) = (conn.client_id.clone(), conn.sub.clone()) else {
            return;
        };
        if self.bind_client(&client, &subject) {
            return;
        }
        let lmid_subs: Vec<(String, f64)> = self
            .down
            .subs
            .iter()
            .filter(|(_, m)| m.conn == id && m.user.is_empty())
            .map(|(k, m)| (k.clone(), m.qid))
            .collect();
        let now = self.now;
        let message = bound_elsewhere(&client);
        for (key, qid) in lmid_subs {
            self.send(id, frames::query_error(qid, &message));
            self.down.subs.remove(&key);
            if let Some(c) = self.down.conns.get_mut(&id) {
                c.queries.remove(&qid_key(qid));
            }
            if let Some(room) = self.inc.room.as_mut() {
                room.room_mut().unsubscribe(&key, now);
            }
        }
    }

    /// Connection `id` of `client` closed: forget the binding when nothing needs it (no
    /// other connection holds the clientID and nothing of it was ever journaled).
    pub(super) fn release_binding(&mut self, client: &str) {
        if !self.down.client_conns.contains_key(client)
            && !self.writes.known_clients.contains(client)
        {
            self.down.client_subjects.remove(client);
        }
    }
}

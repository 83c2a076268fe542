//! clientID → subject binding.
//!
//! A clientID is an idempotency key the client picks, not an identity: whoever knows it
//! could push under it and have the owner's next mutation absorbed as a duplicate. So
//! the first lease verified on a connection that inits a clientID binds that clientID to
//! the lease's subject, and from then on a `pushMutation` for it — or an lmid subscribe
//! on an authenticated connection — from any other subject is refused with an error
//! frame. The binding of every client with journaled mutations survives restarts, on
//! every journal: each journal entry carries its subject, compaction keeps one binding
//! record per client whose entries it drops, and the host derives the bindings from both
//! when it reads the journal at boot (`boot.rs`, before the replay). A client with
//! nothing journaled is forgotten when its last connection closes (it owns no ledger row
//! to protect).
//!
//! An lmid subscribe on a connection with no subject yet is served (a client subscribes
//! its lmid query before its first lease, and the lmid is a counter, not data); when the
//! connection then authenticates as a subject the clientID is not bound to, its lmid
//! subscriptions are dropped with a `queryError`.

use alloc::string::String;
use alloc::vec::Vec;

use super::frames::{self, bound_elsewhere};
use super::wire::qid_key;
use super::{ConnId, Host};

impl Host {
    /// Connection `id` just bound its subject: bind its clientID, or — when that clientID
    /// belongs to another subject — drop the connection's lmid subscriptions.
    pub(super) fn on_conn_subject(&mut self, id: ConnId) {
        let Some(conn) = self.down.conns.get(&id) else {
            return;
        };
        let (Some(client), Some(subject)) = (conn.client_id.clone(), conn.sub.clone()) else {
            return;
        };
        if self.down.bind_client(&client, &subject) {
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

//! Lease enforcement after subscribe (seed 002 `sweep`, `revokeUser`): the expiry
//! sweep, idle-query reclamation, and synchronous revocation.

use std::collections::BTreeSet;

use super::downstream::qid_key;
use super::{Actor, SubMeta};
use crate::server::frames;

impl Actor {
    /// The periodic tick: expire leases, reclaim idle queries, prune old revocations.
    pub(crate) fn sweep(&mut self) {
        let now = self.env.now_ms();
        let expired: Vec<(String, SubMeta)> = self
            .subs
            .iter()
            .filter(|(_, m)| m.exp <= now as f64)
            .map(|(k, m)| (k.clone(), m.clone()))
            .collect();
        for (key, meta) in expired {
            let text =
                frames::query_error(meta.qid, "expired lease — renew through the API server");
            self.send(meta.conn, text);
            self.drop_sub(&key, &meta, now);
            self.metrics.inc(&self.metrics.expired_leases);
        }
        self.close_silent_conns(now);
        if self.live {
            if let Some(room) = self.room.as_mut() {
                room.room_mut().sweep(now);
            }
        }
        let window = self.settings.revocation_window_ms;
        self.revoked
            .retain(|_, at| now.saturating_sub(*at) <= window);
    }

    fn drop_sub(&mut self, key: &str, meta: &SubMeta, now: u64) {
        self.subs.remove(key);
        if let Some(c) = self.conns.get_mut(&meta.conn) {
            c.queries.remove(&qid_key(meta.qid));
        }
        if let Some(room) = self.room.as_mut() {
            room.room_mut().unsubscribe(key, now);
        }
    }

    /// Synchronous revocation: every subscription and socket of `user`, and refusal of
    /// their pre-revocation tokens. Returns how many subscriptions were dropped.
    pub(crate) fn revoke_user(&mut self, user: &str) -> u64 {
        let now = self.env.now_ms();
        self.revoked.insert(user.to_string(), now);
        self.metrics.inc(&self.metrics.revocations);
        let victims: Vec<(String, SubMeta)> = self
            .subs
            .iter()
            .filter(|(_, m)| m.user == user)
            .map(|(k, m)| (k.clone(), m.clone()))
            .collect();
        let mut sockets: BTreeSet<u64> = BTreeSet::new();
        for (key, meta) in &victims {
            self.send(meta.conn, frames::query_error(meta.qid, "lease revoked"));
            self.drop_sub(key, meta, now);
            sockets.insert(meta.conn);
        }
        // A connection bound to the subject can write even with no live subscription.
        for (id, c) in &self.conns {
            if c.sub.as_deref() == Some(user) {
                sockets.insert(*id);
            }
        }
        for id in sockets {
            if let Some(c) = self.conns.get_mut(&id) {
                c.out.close(1008, "revoked");
            }
        }
        self.log.info(&format!(
            "revoked {user}: {} subscription(s)",
            victims.len()
        ));
        victims.len() as u64
    }
}

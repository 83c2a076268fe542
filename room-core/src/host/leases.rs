//! Lease enforcement after subscribe (the Node shell's `sweep`, `revokeUser`): the expiry
//! sweep, idle-query reclamation, silent sockets, and synchronous revocation.

use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::downstream::SubMeta;
use super::wire::qid_key;
use super::{frames, ConnId, Host, Level};

impl Host {
    /// The periodic tick: expire leases, close silent sockets, reclaim idle queries,
    /// prune old revocations.
    pub(super) fn sweep(&mut self) {
        let now = self.now;
        let expired: Vec<(String, SubMeta)> = self
            .down
            .subs
            .iter()
            .filter(|(_, m)| m.exp <= now as f64)
            .map(|(k, m)| (k.clone(), m.clone()))
            .collect();
        for (key, meta) in expired {
            let text =
                frames::query_error(meta.qid, "expired lease — renew through the API server");
            self.send(meta.conn, text);
            self.drop_sub(&key, &meta);
            self.counters.expired_leases += 1;
        }
        self.close_silent_conns(now);
        self.check_silent_sockets(now);
        if self.echo_wait.len() > 0 {
            self.confirm_echoed();
        }
        if self.inc.live {
            if let Some(room) = self.inc.room.as_mut() {
                room.room_mut().sweep(now);
            }
        }
        let window = self.cfg.revocation_window_ms;
        self.down
            .revoked
            .retain(|_, at| now.saturating_sub(*at) <= window);
    }

    fn drop_sub(&mut self, key: &str, meta: &SubMeta) {
        self.down.subs.remove(key);
        if let Some(c) = self.down.conns.get_mut(&meta.conn) {
            c.queries.remove(&qid_key(meta.qid));
        }
        let now = self.now;
        if let Some(room) = self.inc.room.as_mut() {
            room.room_mut().unsubscribe(key, now);
        }
    }

    /// Synchronous revocation: every subscription and socket of `user`, and refusal of
    /// their pre-revocation tokens. Returns how many subscriptions were dropped.
    pub(super) fn revoke_user(&mut self, user: &str) -> u64 {
        let now = self.now;
        self.down.revoked.insert(user.to_string(), now);
        self.counters.revocations += 1;
        let victims: Vec<(String, SubMeta)> = self
            .down
            .subs
            .iter()
            .filter(|(_, m)| m.user == user)
            .map(|(k, m)| (k.clone(), m.clone()))
            .collect();
        let mut sockets: BTreeSet<ConnId> = BTreeSet::new();
        for (key, meta) in &victims {
            self.send(meta.conn, frames::query_error(meta.qid, "lease revoked"));
            self.drop_sub(key, meta);
            sockets.insert(meta.conn);
        }
        // A connection bound to the subject can write even with no live subscription.
        for (id, c) in &self.down.conns {
            if c.sub.as_deref() == Some(user) {
                sockets.insert(*id);
            }
        }
        for id in sockets {
            self.close_conn(id, 1008, "revoked", false);
        }
        self.log(
            Level::Info,
            format!("revoked {user}: {} subscription(s)", victims.len()),
        );
        victims.len() as u64
    }
}

//! Per-connection limits the room task enforces (docs/security.md): one `init`
//! identity per connection, a cap on its subscriptions and on the frames it may have
//! held before the room is live, and a deadline for its first `init` / `subscribe`.
//! Past a limit the client gets an `error` frame saying which, then a 1008 close.

use alloc::format;
use alloc::string::String;

use super::wire::Subscribe;
use super::{frames, ConnId, Host, Level};
use crate::json::tree::JsValue;

/// The most `pushMutation`s one connection may have waiting for the room to go live
/// (an offline client's backlog fits; a flood does not).
pub const MAX_HELD_MUTATIONS_PER_CONN: usize = 1_024;

impl Host {
    /// Refuses connection `id` for passing a limit: an `error` frame with `message`
    /// (echoing `query_id`), then close 1008 with the same text.
    pub(super) fn refuse_conn(&mut self, id: ConnId, query_id: Option<&JsValue>, message: &str) {
        self.send(id, frames::error(query_id, message));
        self.close_conn(id, 1008, message, false);
        self.counters.limit_closes += 1;
        self.log(Level::Info, format!("conn {id} closed (1008): {message}"));
    }

    /// Whether connection `id` may take one more subscription for `query_key` (a
    /// re-subscribe of a queryId it holds always may); refuses it otherwise.
    pub(super) fn admit_subscription(
        &mut self,
        id: ConnId,
        sub: &Subscribe,
        query_key: &str,
    ) -> bool {
        let max = self.cfg.max_subscriptions_per_conn;
        let Some(c) = self.down.conns.get(&id) else {
            return false;
        };
        if c.queries.contains_key(query_key) || c.queries.len() + c.held_subs < max {
            return true;
        }
        let message = format!(
            "too many subscriptions on this connection: the limit is {max} \
             (downstream.max_subscriptions_per_conn); unsubscribe first"
        );
        self.refuse_conn(id, Some(&sub.query_id()), &message);
        false
    }

    /// Whether connection `id` may hold one more `pushMutation` until the room is live;
    /// refuses it otherwise.
    pub(super) fn admit_held_mutation(&mut self, id: ConnId) -> bool {
        let Some(c) = self.down.conns.get(&id) else {
            return false;
        };
        if c.held_mutes < MAX_HELD_MUTATIONS_PER_CONN {
            return true;
        }
        let message = format!(
            "too many mutations waiting for the room to go live on this connection: the \
             limit is {MAX_HELD_MUTATIONS_PER_CONN}"
        );
        self.refuse_conn(id, None, &message);
        false
    }

    /// `init {clientID}`: the connection's identity, set once. The same clientID again
    /// is a no-op; a different one is refused (an identity per connection keeps a
    /// connection from minting clients — and their lmid queries — without end).
    pub(super) fn on_init(&mut self, id: ConnId, client: Option<&str>) {
        let Some(client) = client else {
            return;
        };
        if client.is_empty() {
            return;
        }
        let Some(conn) = self.down.conns.get_mut(&id) else {
            return;
        };
        conn.identified = true;
        match &conn.client_id {
            Some(prev) if prev == client => {}
            Some(prev) => {
                let message = format!(
                    "this connection already has clientID `{prev}`: one init identity per \
                     connection (open another socket for another clientID)"
                );
                self.refuse_conn(id, None, &message);
            }
            None => {
                conn.client_id = Some(String::from(client));
                let subject = conn.sub.clone();
                let client = String::from(client);
                let ids = self.down.client_conns.entry(client.clone()).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
                if let Some(subject) = subject {
                    self.down.bind_client(&client, &subject);
                }
            }
        }
    }

    /// Closes every connection that sent no `init` or `subscribe` within
    /// `first_frame_timeout_ms` of opening (run by the sweep).
    pub(super) fn close_silent_conns(&mut self, now: u64) {
        let timeout = self.cfg.first_frame_timeout_ms;
        let silent: alloc::vec::Vec<ConnId> = self
            .down
            .conns
            .iter()
            .filter(|(_, c)| {
                !c.identified && !c.closing && now.saturating_sub(c.opened_at) >= timeout
            })
            .map(|(&id, _)| id)
            .collect();
        for id in silent {
            let message = format!(
                "no init or subscribe within {timeout} ms (downstream.first_frame_timeout_ms)"
            );
            self.refuse_conn(id, None, &message);
        }
    }
}

/// The default of `server.max_unsent_bytes`: bytes queued for all sockets of a process
/// together that their writers have not taken (256 MiB).
pub const DEFAULT_MAX_UNSENT_BYTES: usize = 256 * 1024 * 1024;

/// Which sockets to cut when the process's unsent bytes pass `cap` (every socket's
/// backlog together, every room of a box: the per-socket send budget and snapshot cap
/// bound one socket, this bounds them all). `backlogs` is `(socket, unsent bytes)` of
/// the sockets not already cut; the largest backlogs go first, until what is left is
/// at most three quarters of the cap (one cut buys room, not one frame). A socket with
/// nothing unsent is never cut: a client that reads keeps its socket.
pub fn unsent_cuts(backlogs: &[(u64, usize)], cap: usize) -> alloc::vec::Vec<u64> {
    let mut total: usize = backlogs.iter().map(|(_, b)| *b).sum();
    if total <= cap {
        return alloc::vec::Vec::new();
    }
    let target = cap - cap / 4;
    let mut by_size: alloc::vec::Vec<(u64, usize)> =
        backlogs.iter().copied().filter(|(_, b)| *b > 0).collect();
    by_size.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut cuts = alloc::vec::Vec::new();
    for (socket, bytes) in by_size {
        if total <= target {
            break;
        }
        cuts.push(socket);
        total -= bytes;
    }
    cuts
}

/// The close reason of a socket [`unsent_cuts`] chose (fits a close frame).
pub fn unsent_cut_reason(held: usize, total: usize, cap: usize) -> alloc::string::String {
    format!("box backlog over: {total} B unsent, {held} here (server.max_unsent_bytes {cap})")
}

#[cfg(test)]
mod unsent_tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn under_the_cap_nobody_is_cut() {
        assert!(unsent_cuts(&[(1, 100), (2, 200)], 300).is_empty());
    }

    #[test]
    fn the_largest_backlogs_go_first_until_three_quarters_of_the_cap() {
        // 1,300 over a cap of 1,000: cut 600 (→ 700 ≤ 750).
        assert_eq!(
            unsent_cuts(&[(1, 100), (2, 600), (3, 400), (4, 200)], 1_000),
            [2]
        );
        // 1,150: cutting 600 leaves 550.
        assert_eq!(unsent_cuts(&[(1, 550), (2, 600)], 1_000), [2]);
        // Many small ones: several go.
        assert_eq!(
            unsent_cuts(&[(1, 300), (2, 300), (3, 300), (4, 300)], 1_000),
            [1, 2]
        );
    }

    #[test]
    fn the_reason_fits_a_close_frame() {
        let r = unsent_cut_reason(usize::MAX, usize::MAX, usize::MAX);
        assert!(r.len() <= 123, "{} bytes: {r}", r.len());
    }

    proptest! {
        #[test]
        fn cuts_bring_the_total_under_three_quarters_and_spare_readers(
            sizes in proptest::collection::vec(0usize..10_000, 0..40),
            cap in 1usize..50_000,
        ) {
            let backlogs: alloc::vec::Vec<(u64, usize)> =
                sizes.iter().enumerate().map(|(i, b)| (i as u64, *b)).collect();
            let cuts = unsent_cuts(&backlogs, cap);
            let total: usize = sizes.iter().sum();
            let left: usize = backlogs
                .iter()
                .filter(|(id, _)| !cuts.contains(id))
                .map(|(_, b)| b)
                .sum();
            if total <= cap {
                prop_assert!(cuts.is_empty());
            } else {
                prop_assert!(left <= cap - cap / 4);
                // Each cut was needed: without the last one the rest did not fit.
                let last = cuts.last().map_or(0, |id| sizes[*id as usize]);
                prop_assert!(left + last > cap - cap / 4);
            }
            for id in &cuts {
                prop_assert!(sizes[*id as usize] > 0, "a reader was cut");
            }
        }
    }
}

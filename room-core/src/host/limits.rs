//! Per-connection limits the room task enforces (docs/security.md): one `init`
//! identity per connection, a cap on its subscriptions and on the frames it may have
//! held before the room is live, and a deadline for its first `init` / `subscribe`.
//! Past a limit the client gets an `error` frame saying which, then a 1008 close.

use alloc::format;

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
        msg: &JsValue,
        query_key: &str,
    ) -> bool {
        let max = self.cfg.max_subscriptions_per_conn;
        let Some(c) = self.conns.get(&id) else {
            return false;
        };
        if c.queries.contains_key(query_key) || c.queries.len() + c.held_subs < max {
            return true;
        }
        let message = format!(
            "too many subscriptions on this connection: the limit is {max} \
             (downstream.max_subscriptions_per_conn); unsubscribe first"
        );
        self.refuse_conn(id, msg.get("queryId"), &message);
        false
    }

    /// Whether connection `id` may hold one more `pushMutation` until the room is live;
    /// refuses it otherwise.
    pub(super) fn admit_held_mutation(&mut self, id: ConnId) -> bool {
        let Some(c) = self.conns.get(&id) else {
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
    pub(super) fn on_init(&mut self, id: ConnId, msg: &JsValue) {
        let Some(JsValue::Str(client)) = msg.get("clientID") else {
            return;
        };
        if client.is_empty() {
            return;
        }
        let Some(conn) = self.conns.get_mut(&id) else {
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
                conn.client_id = Some(client.clone());
                let subject = conn.sub.clone();
                let client = client.clone();
                let ids = self.client_conns.entry(client.clone()).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
                if let Some(subject) = subject {
                    self.bind_client(&client, &subject);
                }
            }
        }
    }

    /// Closes every connection that sent no `init` or `subscribe` within
    /// `first_frame_timeout_ms` of opening (run by the sweep).
    pub(super) fn close_silent_conns(&mut self, now: u64) {
        let timeout = self.cfg.first_frame_timeout_ms;
        let silent: alloc::vec::Vec<ConnId> = self
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

//! A writer the room has never heard of: fetch its durable lmid first.
//!
//! The boot probe covers the clientIDs in the room's own journal. A placement that
//! moved (fleet mode: another box served the doc until it died or was fenced), or a
//! journal that is gone, leaves writers whose ledger row exists only at the authority.
//! Serving such a writer from an empty ledger would show it lmid 0 — its next mid is a
//! gap, and a flush would try to *add* a ledger row the authority already holds. So
//! before the first lmid subscribe or mutation of a clientID this incarnation does not
//! know, the room asks the authority (`room-lmids` for that one client), seeds the
//! answer as durable, and only then serves the held frames, in arrival order.
//!
//! Only with an authority: without one there is nothing to ask, and the ledger is the
//! room's own. An unreachable authority holds a newcomer's frames at most
//! [`NEWCOMER_WAIT_MS`]; then they are served from the room's own ledger while the
//! fetch keeps retrying, and its answer is seeded whenever it comes. A writer that
//! moved here sees lmid 0 meanwhile, and its next mid is refused as a gap. A mutation
//! served that way may be a mid the authority already committed and whose ack the
//! writer lost (re-sent); it would run twice. So:
//!
//! - with `ack = "flushed"` — where no ack can come before the authority answers anyway
//!   — the newcomer's mutations are not run: its connection gets the reason and is
//!   closed with `1013` (try again later); the writer reconnects and re-sends;
//! - with `ack = "journaled"` acks must not wait for the authority, so they run — but no
//!   flush goes out while such a writer is unconfirmed ([`Host::flush_held_for_newcomers`]).
//!   When the answer lands and shows the authority already held mids the room ran, the
//!   incarnation is torn down and the next one replays the journal with that lmid
//!   seeded: each of those mids applies once, at the head and at the authority.
//!
//! Past [`MAX_NEWCOMER_FETCHES`] fetches under way (a host setting), a newcomer is served from the
//! room's ledger at once, as if its fetch had gone overdue: with `ack = "flushed"` its
//! mutations are refused; with `ack = "journaled"` they run, its fetch is queued (at
//! most [`MAX_DEFERRED_FETCHES`], also a setting; past that its mutations are refused too) and starts
//! when one under way ends, and flushes wait for it like for an overdue one.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use hashbrown::HashSet;

use super::authority::{Call, Purpose, Request};
use super::wire::Waiting;
use super::{AuthorityError, AuthorityReply, ConnId, Driver, Host, Level};

/// Frames one clientID may have waiting on its lmid fetch (across its connections).
pub const MAX_FRAMES_AWAITING_LMID: usize = 1_024;

/// Newcomer fetches in flight (or retrying) at once by default
/// ([`HostConfig::max_newcomer_fetches`](super::HostConfig::max_newcomer_fetches)); past it, a newcomer is served from
/// the room's own ledger at once (with `ack = "flushed"` its mutations are refused).
/// Bounds what a swarm of fresh clientIDs can make the room hold during an authority
/// outage.
pub const MAX_NEWCOMER_FETCHES: usize = 256;

/// Newcomers served past the fetch limit whose fetch waits for a free slot
/// (`ack = "journaled"`), by default
/// ([`HostConfig::max_deferred_fetches`](super::HostConfig::max_deferred_fetches)); past it such a newcomer's mutations are refused (`1013`).
pub const MAX_DEFERRED_FETCHES: usize = 65_536;

/// clientIDs with no ledger row remembered as fetched (then forgotten all at once).
pub const MAX_KNOWN_NEWCOMERS: usize = 65_536;

/// How long a newcomer's frames wait for its lmid fetch before the room serves them from
/// its own ledger (with `ack = "flushed"`, refuses its mutations instead), ms.
pub const NEWCOMER_WAIT_MS: u64 = 2_000;

/// One fetch under way.
#[derive(Debug)]
pub(crate) struct Fetch {
    /// What waits on it, in arrival order.
    waiting: Vec<(ConnId, Waiting)>,
    /// When the waiting frames are served anyway.
    serve_by: u64,
    /// Past `serve_by` with no answer: until the fetch lands, the writer is served from
    /// the room's ledger — its mutations refused with `ack = "flushed"`, run with every
    /// flush held with `ack = "journaled"`.
    overdue: bool,
    /// The authority call was made (false: queued in [`Newcomers::deferred`]).
    started: bool,
}

/// The newcomer gate's state.
#[derive(Debug, Default)]
pub(super) struct Newcomers {
    /// clientIDs whose durable lmid this incarnation knows.
    pub(super) known: HashSet<String>,
    /// Lmid fetches under way, with what waits on them.
    pub(super) fetching: Fetching,
    /// Newcomers served past the fetch limit whose fetch waits for a free slot, oldest
    /// first (each also in `fetching`, overdue, not started).
    pub(super) deferred: alloc::collections::VecDeque<String>,
}

impl Host {
    /// Takes connection `id`'s `frame` when it must wait for its clientID's durable
    /// lmid (a fetch is then under way); hands it back when it may be served now.
    pub(super) fn await_lmid(&mut self, id: ConnId, frame: Waiting) -> Option<Waiting> {
        if !self.has_authority() || self.inc.room.is_none() {
            return Some(frame);
        }
        let Some(client) = self
            .down
            .conns
            .get(&id)
            .and_then(|c| c.client_id.as_deref())
        else {
            return Some(frame);
        };
        if self.newcomers.known.contains(client) {
            return Some(frame); // the common case: no allocation
        }
        let client = String::from(client);
        let has_row = self
            .inc
            .room
            .as_ref()
            .is_some_and(|r| r.room().acked_lmid(&client) > 0);
        if has_row {
            // Its journal entries were probed at boot, or it wrote through this gate.
            return Some(frame);
        }
        // Only an authenticated connection makes the room call the authority: the lmid
        // subscribe needs no lease, and one call per anonymous socket would let anyone
        // drive the authority. It waits for the connection's first verified lease (see
        // `release_parked`) at most NEWCOMER_WAIT_MS, then the room's ledger answers it; a
        // mutation without a subject is refused downstream anyway.
        let authenticated = self.down.conns.get(&id).is_some_and(|c| c.sub.is_some());
        if !authenticated {
            let Waiting::Subscribe(sub) = frame else {
                return Some(frame);
            };
            let max = self.cfg.max_subscriptions_per_conn;
            let now = self.now;
            let conn = self.down.conns.get_mut(&id)?;
            if conn.parked_lmid.len() < max {
                if conn.parked_lmid.is_empty() {
                    conn.parked_since = now;
                    let due = now + NEWCOMER_WAIT_MS;
                    self.timers.newcomer = Some(self.timers.newcomer.map_or(due, |t| t.min(due)));
                }
                conn.parked_lmid.push(sub);
            } else {
                let message = format!(
                    "more than {max} lmid subscribes waiting for this connection's first lease"
                );
                self.refuse_conn(id, None, &message);
            }
            return None;
        }
        if self
            .newcomers
            .fetching
            .get(&client)
            .is_some_and(|f| f.overdue)
        {
            return self.serve_unconfirmed(id, &client, frame);
        }
        let busy = self.calls.newcomer_fetches() >= self.cfg.max_newcomer_fetches.max(1);
        match self
            .newcomers
            .fetching
            .get_mut(&client)
            .map(|f| &mut f.waiting)
        {
            Some(waiting) if waiting.len() >= MAX_FRAMES_AWAITING_LMID => {
                let message = format!(
                    "more than {MAX_FRAMES_AWAITING_LMID} frames for clientID `{client}` while \
                     the room fetches its durable lmid from the authority: slow down"
                );
                self.refuse_conn(id, None, &message);
            }
            Some(waiting) => waiting.push((id, frame)),
            None if self.newcomers.known.len() >= MAX_KNOWN_NEWCOMERS => {
                // Writers with no ledger row yet, remembered so each is fetched once: a
                // bound, not a leak — forgetting them costs a fetch each, nothing more.
                self.newcomers.known.clear();
                self.start_fetch(client, id, frame);
            }
            None if busy => {
                // No fetch for it now: served unconfirmed, from the room's own ledger.
                self.log(
                    Level::Warn,
                    format!(
                        "{} lmid fetches already under way: serving clientID {client} \
                         from this room's ledger",
                        self.cfg.max_newcomer_fetches.max(1)
                    ),
                );
                if self.ack_after_flush() {
                    // Its mutations are refused: the next frame asks for a fetch again.
                    return self.serve_unconfirmed(id, &client, frame);
                }
                if self.newcomers.deferred.len() >= self.cfg.max_deferred_fetches {
                    return self.refuse_mutation(id, &client, frame);
                }
                // Its fetch waits for a slot; flushes wait for its answer.
                let fetch = Fetch {
                    waiting: Vec::new(),
                    serve_by: self.now,
                    overdue: true,
                    started: false,
                };
                self.newcomers.fetching.insert(client.clone(), fetch);
                self.newcomers.deferred.push_back(client.clone());
                return self.serve_unconfirmed(id, &client, frame);
            }
            None => self.start_fetch(client, id, frame),
        }
        None
    }

    fn start_fetch(&mut self, client: String, id: ConnId, frame: Waiting) {
        let serve_by = self.now + NEWCOMER_WAIT_MS;
        let fetch = Fetch {
            waiting: alloc::vec![(id, frame)],
            serve_by,
            overdue: false,
            started: true,
        };
        self.newcomers.fetching.insert(client.clone(), fetch);
        let next = self.timers.newcomer.map_or(serve_by, |t| t.min(serve_by));
        self.timers.newcomer = Some(next);
        self.call(Purpose::Newcomer, Request::Lmids(alloc::vec![client]));
    }

    /// Connection `id` was just authenticated: its parked lmid subscribes go through
    /// the gate again (now allowed to fetch).
    pub(super) fn release_parked(&mut self, id: ConnId, driver: &mut dyn Driver) {
        let parked = match self.down.conns.get_mut(&id) {
            Some(c) if !c.parked_lmid.is_empty() => core::mem::take(&mut c.parked_lmid),
            _ => return,
        };
        for sub in parked {
            if self.is_open(id) {
                self.handle_subscribe(id, &sub, driver);
            }
        }
    }

    /// The authority answered a newcomer's lmid fetch: seed it, serve what waited, and
    /// start a queued fetch in the slot it freed.
    pub(super) fn on_newcomer_lmid(
        &mut self,
        call: Call,
        result: Result<AuthorityReply, AuthorityError>,
        driver: &mut dyn Driver,
    ) {
        self.settle_newcomer_lmid(call, result, driver);
        self.start_deferred_fetches();
    }

    /// Starts queued fetches while slots are free (a live incarnation only).
    fn start_deferred_fetches(&mut self) {
        while self.inc.room.is_some()
            && !self.closed()
            && self.calls.newcomer_fetches() < self.cfg.max_newcomer_fetches.max(1)
        {
            let Some(client) = self.newcomers.deferred.pop_front() else {
                return;
            };
            match self.newcomers.fetching.get_mut(&client) {
                Some(f) if !f.started => f.started = true,
                _ => continue,
            }
            self.call(Purpose::Newcomer, Request::Lmids(alloc::vec![client]));
        }
    }

    fn settle_newcomer_lmid(
        &mut self,
        call: Call,
        result: Result<AuthorityReply, AuthorityError>,
        driver: &mut dyn Driver,
    ) {
        let Request::Lmids(clients) = &call.request else {
            return;
        };
        let Some(client) = clients.first().cloned() else {
            return;
        };
        if call.incarnation != self.inc.number {
            return; // the incarnation died: its waiters were closed with it
        }
        let (waiting, overdue) = self
            .newcomers
            .fetching
            .remove(&client)
            .map_or((Vec::new(), false), |f| (f.waiting, f.overdue));
        let lmid = match result {
            Ok(AuthorityReply::Lmids(lmids)) => lmids.get(&client).copied().unwrap_or(0),
            other => {
                let why = match other {
                    Err(e) => format!("{e}"),
                    Ok(reply) => format!("unexpected reply {reply:?}"),
                };
                let message = format!(
                    "the room cannot fetch the durable lmid of clientID `{client}` from the \
                     authority ({why}); reconnect later"
                );
                self.log(Level::Error, message.clone());
                for (id, _) in waiting {
                    if self.is_open(id) {
                        self.send(id, super::frames::error(None, &message));
                        self.close_conn(id, 1011, "lmid fetch failed", false);
                    }
                }
                return;
            }
        };
        if lmid > 0 {
            let Some(room) = self.inc.room.as_mut() else {
                return;
            };
            let ran = room.room().applied_mid(&client);
            if overdue && ran > 0 {
                // Served from this room's ledger meanwhile (`ack = "journaled"`), from
                // mid 1: mids up to min(ran, lmid) ran again here. No flush carried them
                // (flushes wait while such a writer is unconfirmed), and the journal
                // holds them: a new incarnation replays it with this writer's lmid
                // seeded, so each applies once.
                let why = format!(
                    "clientID {client}: the authority holds its mids up to {lmid}, and this \
                     room ran mids up to {ran} of it from its own ledger while the authority \
                     was unreachable: rebuilding the head from the journal so each applies \
                     once"
                );
                self.log(Level::Warn, why.clone());
                return self.violation(&why);
            }
            let Some(room) = self.inc.room.as_mut() else {
                return;
            };
            match room.room_mut().seed_durable(&[(client.clone(), lmid)]) {
                Ok(Some(_)) => {
                    self.drain_downstream(driver);
                }
                Ok(None) => {}
                Err(e) => return self.violation(&format!("durable seed failed: {e}")),
            }
            self.log(
                Level::Debug,
                format!("clientID {client}: durable lmid {lmid} fetched from the authority"),
            );
        }
        if lmid == 0 {
            self.newcomers.known.insert(client); // with a row, the ledger itself says so
        }
        self.serve_waiting(waiting, driver);
        self.schedule_flush(); // held while this writer was unconfirmed
        self.poll_drains();
    }

    /// Whether flushes wait: a writer whose lmid fetch went overdue has had mutations
    /// run from the room's own ledger (`ack = "journaled"`), and until the authority
    /// tells its lmid the room cannot know they are not mids it already committed. A
    /// flush then could commit such a mid twice; held, the overlap is undone by a
    /// replay when the answer shows one.
    pub(super) fn flush_held_for_newcomers(&self) -> bool {
        let Some(room) = self.inc.room.as_ref() else {
            return false;
        };
        (self.newcomers.fetching.iter())
            .any(|(client, f)| f.overdue && room.room().applied_mid(client) > 0)
    }

    /// Serves frames that waited on a fetch, in arrival order (a mutation of a writer
    /// still unconfirmed goes back through the gate and is refused there).
    fn serve_waiting(&mut self, waiting: Vec<(ConnId, Waiting)>, driver: &mut dyn Driver) {
        for (id, frame) in waiting {
            if !self.is_open(id) {
                continue;
            }
            match frame {
                Waiting::Subscribe(sub) => self.handle_subscribe(id, &sub, driver),
                Waiting::Mutation(e) => self.handle_push_mutation(id, e, driver),
            }
        }
    }

    /// A frame of `client`, whose durable lmid the authority has not told, served from
    /// the room's own ledger: an lmid subscribe always; a mutation only with `ack =
    /// "journaled"` (acks must not wait for the authority there). With `ack = "flushed"`
    /// — where no ack can come before the authority answers anyway — a mutation is not
    /// run: it may be a mid the authority already committed, whose ack the writer lost.
    fn serve_unconfirmed(&mut self, id: ConnId, client: &str, frame: Waiting) -> Option<Waiting> {
        if self.ack_after_flush() {
            return self.refuse_mutation(id, client, frame);
        }
        Some(frame)
    }

    /// `frame` served from the room's own ledger, unless it is a mutation: refused
    /// ([`Host::refuse_unconfirmed`]).
    fn refuse_mutation(&mut self, id: ConnId, client: &str, frame: Waiting) -> Option<Waiting> {
        match frame {
            Waiting::Mutation(_) => {
                self.refuse_unconfirmed(id, client);
                None
            }
            frame => Some(frame),
        }
    }

    /// A mutation of `client` not run (see [`Host::serve_unconfirmed`]): the connection
    /// gets the reason and is closed with `1013`, so the writer reconnects and re-sends
    /// once the authority answers.
    fn refuse_unconfirmed(&mut self, id: ConnId, client: &str) {
        if !self.is_open(id) {
            return;
        }
        let message = format!(
            "the room cannot run clientID `{client}`'s mutations yet: the authority has not \
             told its durable lmid (unreachable); reconnect and re-send later"
        );
        self.log(Level::Info, format!("conn {id}: {message}"));
        self.send(id, super::frames::error(None, &message));
        self.close_conn(
            id,
            1013,
            "authority unreachable: writer not confirmed",
            false,
        );
    }

    /// The authority has not answered some newcomers' fetches in time: serve their
    /// frames from the room's own ledger; the fetches go on and seed when they land.
    pub(super) fn serve_overdue_newcomers(&mut self, driver: &mut dyn Driver) {
        let now = self.now;
        let overdue: Vec<String> = self
            .newcomers
            .fetching
            .iter()
            .filter(|(_, f)| !f.overdue && f.serve_by <= now)
            .map(|(c, _)| c.clone())
            .collect();
        for client in overdue {
            let Some(fetch) = self.newcomers.fetching.get_mut(&client) else {
                continue;
            };
            fetch.overdue = true;
            let waiting = core::mem::take(&mut fetch.waiting);
            let mutations = if self.ack_after_flush() {
                "its mutations are refused"
            } else {
                "so are its mutations (ack = journaled; one may be a mid the authority holds)"
            };
            self.log(
                Level::Warn,
                format!(
                    "the authority has not told clientID {client}'s durable lmid within \
                     {NEWCOMER_WAIT_MS} ms: its lmid is served from this room's ledger and \
                     {mutations} until the answer lands"
                ),
            );
            self.serve_waiting(waiting, driver);
        }
        // Connections that never presented a lease: their lmid subscribes are answered
        // from the ledger (no authority call on an anonymous socket's behalf).
        let parked: Vec<ConnId> = self
            .down
            .conns
            .iter()
            .filter(|(_, c)| !c.parked_lmid.is_empty() && c.parked_since + NEWCOMER_WAIT_MS <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in parked {
            let msgs = self
                .down
                .conns
                .get_mut(&id)
                .map(|c| core::mem::take(&mut c.parked_lmid))
                .unwrap_or_default();
            for sub in msgs {
                if let Some(name) = &sub.name {
                    if self.is_open(id) {
                        self.handle_lmid_subscribe(id, sub.qid, name, driver);
                    }
                }
            }
        }
        let fetches = (self.newcomers.fetching.values())
            .filter(|f| !f.overdue)
            .map(|f| f.serve_by);
        let conns = self
            .down
            .conns
            .values()
            .filter(|c| !c.parked_lmid.is_empty())
            .map(|c| c.parked_since + NEWCOMER_WAIT_MS);
        self.timers.newcomer = fetches.chain(conns).filter(|t| *t > now).min();
    }

    /// The incarnation died: connections waiting on a fetch are closed with the rest
    /// (`1012`); they re-send after reconnecting.
    pub(super) fn drop_fetches(&mut self) {
        self.newcomers.known.clear();
        self.newcomers.deferred.clear();
        self.timers.newcomer = None;
        let ids: Vec<ConnId> = core::mem::take(&mut self.newcomers.fetching)
            .into_values()
            .flat_map(|f| f.waiting)
            .map(|(id, _)| id)
            .collect();
        for id in ids {
            if self.is_open(id) {
                self.close_conn(id, 1012, "room re-subscribing", false);
            }
        }
    }
}

/// clientID → its lmid fetch under way.
pub(crate) type Fetching = hashbrown::HashMap<String, Fetch>;

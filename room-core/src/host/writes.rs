//! The write path (the Node shell's `runMutation` … `applyAck` in the published room): run
//! the mutator against the
//! core's keyed transaction, fan out at once, answer non-applied verdicts before the
//! journal enqueue, group-commit into the journal, and ack only after the append is
//! durable.

use alloc::collections::{BTreeSet, VecDeque};

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use hashbrown::HashMap;

use super::ack::Unconfirmed;
use super::frames::{self, bound_elsewhere, RecordedOutcome};
use super::wire::{Envelope, Waiting};
use super::{ConnId, Driver, Host, IoId, JournalEntry, Level, MutatorOutcome, Outcome, Output};
use crate::contract::js_uint;
use crate::json::tree::JsValue;
use crate::{Begin, Commit};

/// Recorded non-applied outcomes kept per client for re-sent mids.
pub(crate) const MAX_RECORDED_OUTCOMES_PER_CLIENT: usize = 512;

/// One mutation to run: live or replayed.
#[derive(Debug)]
pub(crate) struct MutationInput<'a> {
    pub client_id: &'a str,
    pub mid: u64,
    pub name: &'a str,
    /// The args as `JSON.stringify` prints them (`None`: absent).
    pub args_text: Option<&'a str>,
    pub sub: &'a str,
    /// The journaled verdict (`Applied` for a live mutation).
    pub journaled: Outcome,
}

/// What running a mutation did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RunResult {
    Dedup,
    Applied {
        apply_cv: u64,
    },
    NonApplied {
        kind: &'static str,
        reason: Option<String>,
    },
}

/// An append output and not answered yet: `(io, incarnation, the entries' keys and
/// names)`.
pub(super) type PendingAppend = (IoId, u64, Vec<Unconfirmed>);

/// The write plane's state.
#[derive(Debug, Default)]
pub(super) struct WritePlane {
    /// `pushMutation`s held until the room is live, in arrival order.
    pub(super) pending_mutes: Vec<(ConnId, Envelope)>,
    /// clientID → its applied mutations not acknowledged yet: `(mid, apply cv)`.
    pub(super) unacked: HashMap<String, VecDeque<(u64, u64)>>,
    /// Journaled entries the authority has not confirmed, in journal order (`ack.rs`).
    pub(super) unconfirmed: VecDeque<Unconfirmed>,
    /// clientID → recorded non-applied outcomes, for re-sent mids.
    pub(super) outcomes: HashMap<String, VecDeque<(u64, RecordedOutcome)>>,
    /// Entries the group commit's window gathered, not appended yet.
    pub(super) ack_queue: Vec<JournalEntry>,
    /// Appends output and not answered yet, in order.
    pub(super) appends: VecDeque<PendingAppend>,
    /// clientIDs with journaled entries (their bindings outlive their connections).
    pub(super) known_clients: BTreeSet<String>,
}

impl WritePlane {
    /// Records a non-applied verdict for re-sent mids (oldest evicted past the cap).
    pub(super) fn record_outcome(&mut self, client: &str, mid: u64, o: RecordedOutcome) {
        let log = self.outcomes.entry(String::from(client)).or_default();
        log.retain(|(m, _)| *m != mid);
        log.push_back((mid, o));
        while log.len() > MAX_RECORDED_OUTCOMES_PER_CLIENT {
            log.pop_front();
        }
    }

    /// Drops `client`'s holds at or below `mid`.
    pub(super) fn release_holds(&mut self, client: &str, mid: u64) {
        if let Some(held) = self.unacked.get_mut(client) {
            held.retain(|(m, _)| *m > mid);
            if held.is_empty() {
                self.unacked.remove(client);
            }
        }
    }

    /// Holds `client`'s progress below `cv` until the mutation `mid` is acknowledged.
    pub(super) fn hold(&mut self, client: &str, mid: u64, cv: u64) {
        let held = self.unacked.entry(String::from(client)).or_default();
        if held.back().is_none_or(|(m, _)| *m < mid) {
            held.push_back((mid, cv));
        }
    }
}

impl Host {
    /// Applies one envelope: dedup → mutator against the staged transaction → commit, or
    /// reject/deopt consuming the mid. A journaled non-applied entry replays its recorded
    /// verdict without running anything. Errors only when the room is torn (a gap, a
    /// poisoned commit).
    pub(super) fn run_mutation(
        &mut self,
        m: &MutationInput<'_>,
        driver: &mut dyn Driver,
    ) -> Result<RunResult, crate::Error> {
        let Some(room) = self.inc.room.as_mut() else {
            return Err(crate::Error::new(
                crate::ErrorCode::NotLive,
                "the room has no live incarnation",
            ));
        };
        let room = room.room_mut();
        let who = format!("{}:{}", m.client_id, m.mid);
        if room.begin_mutation(m.client_id, m.mid, Some(m.name), m.args_text)? == Begin::Dedup {
            return Ok(RunResult::Dedup);
        }
        let kind = match m.journaled {
            Outcome::Applied => None,
            Outcome::Rejected => Some("rejected"),
            Outcome::Deopt => Some("deopt"),
        };
        if let Some(kind) = kind {
            room.reject_mutation(Some(kind), None)?;
            return Ok(RunResult::NonApplied { kind, reason: None });
        }
        let outcome = {
            let mut tx = room.mutation_tx()?;
            driver.run_mutator(m.name, &mut tx, m.args_text, m.sub)
        };
        let (kind, reason, line) = match outcome {
            MutatorOutcome::Done => {
                return match room.commit_mutation()? {
                    Commit::Applied { head_cv } => Ok(RunResult::Applied { apply_cv: head_cv }),
                    Commit::Deopt(d) => {
                        let mut pk = String::new();
                        crate::json::write::write_row(&mut pk, &d.pk);
                        let line = format!(
                            "mutation `{}` ({who}) deopted: {} on `{}` pk {pk}",
                            m.name, d.reason, d.table
                        );
                        self.log(Level::Info, line);
                        Ok(RunResult::NonApplied {
                            kind: "deopt",
                            reason: Some(String::from(d.reason)),
                        })
                    }
                };
            }
            MutatorOutcome::Unknown => {
                let reason = format!("unknown mutator `{}`", m.name);
                let line = format!("mutation {who} rejected: {reason}");
                ("rejected", reason, line)
            }
            MutatorOutcome::Rejected(message) => {
                let line = format!("mutation `{}` ({who}) rejected: {message}", m.name);
                ("rejected", message, line)
            }
            MutatorOutcome::Environment(message) => {
                let line = format!(
                    "mutation `{}` ({who}) deopted: environment shortfall: {message}",
                    m.name
                );
                ("deopt", String::from("environment"), line)
            }
        };
        room.reject_mutation(Some(kind), Some(&reason))?;
        self.log(Level::Info, line);
        Ok(RunResult::NonApplied {
            kind,
            reason: Some(reason),
        })
    }

    /// The live `pushMutation` path: apply → fan out now → journal under the group commit.
    pub(super) fn handle_push_mutation(
        &mut self,
        id: ConnId,
        e: Envelope,
        driver: &mut dyn Driver,
    ) {
        let fail = |me: &mut Host, message: &str| {
            me.debug(|| format!("conn {id}: pushMutation refused: {message}"));
            me.send(id, frames::error(None, message));
        };
        if self.cfg.writes.is_none() {
            return fail(self, "this room is read-only (no write plane configured)");
        }
        let Some(conn) = self.down.conns.get(&id) else {
            return;
        };
        let Some(client) = conn.client_id.clone() else {
            return fail(self, "init with a clientID before pushMutation");
        };
        if e.client_id != client {
            return fail(
                self,
                "envelope clientID does not match the connection identity",
            );
        }
        if !self.inc.live || self.inc.room.is_none() {
            if self.admit_held_mutation(id) {
                if let Some(c) = self.down.conns.get_mut(&id) {
                    c.held_mutes += 1;
                }
                let who = format!("{}:", e.client_id);
                self.debug(|| {
                    format!(
                        "conn {id}: mutation {who}{} held until the room is live",
                        e.mid
                    )
                });
                self.writes.pending_mutes.push((id, e));
            }
            return;
        }
        let Some(Waiting::Mutation(e)) = self.await_lmid(id, Waiting::Mutation(e)) else {
            return; // run once the authority told its clientID's durable lmid
        };
        let Some(conn) = self.down.conns.get(&id) else {
            return;
        };
        // Judged after the live gate, so a mutation queued behind a pending subscribe
        // sees the subject that subscribe bound.
        let Some(sub) = conn.sub.clone() else {
            return fail(
                self,
                "pushMutation requires an authenticated subject — subscribe with a lease token first",
            );
        };
        if !self.down.bind_client(&client, &sub) {
            return fail(self, &bound_elsewhere(&client));
        }
        let mid = match js_uint(e.mid, "mid") {
            Ok(m) => m,
            Err(err) => return fail(self, err.message()),
        };
        let args_text = e.args.as_ref().map(JsValue::to_js_string);
        let input = MutationInput {
            client_id: &client,
            mid,
            name: &e.name,
            args_text: args_text.as_deref(),
            sub: &sub,
            journaled: Outcome::Applied,
        };
        let result = match self.run_mutation(&input, driver) {
            Ok(r) => r,
            Err(err) => {
                if self.inc.room.as_ref().is_some_and(|r| r.is_poisoned()) {
                    self.violation(&format!("mutation commit tore the head: {err}"));
                } else {
                    // The mid-gap contract: the exact "mutation gap …" text.
                    fail(self, err.message());
                }
                return;
            }
        };
        let outcome = match result {
            RunResult::Dedup => {
                self.counters.mutations_dedup += 1;
                self.debug(|| {
                    format!("conn {id}: mutation {client}:{mid} is a duplicate (already processed)")
                });
                // A re-sent non-applied mid is answered with its recorded outcome.
                let recorded = self
                    .writes
                    .outcomes
                    .get(&client)
                    .and_then(|m| m.iter().find(|(mid2, _)| *mid2 == mid))
                    .map(|(_, o)| o.clone());
                if let Some(o) = recorded {
                    self.send_live(id, frames::mutation_outcome(mid, &o), driver);
                }
                return;
            }
            RunResult::Applied { apply_cv } => {
                self.counters.mutations_applied += 1;
                self.debug(|| {
                    let name = &e.name;
                    format!("conn {id}: mutation `{name}` ({client}:{mid}) applied @ cv {apply_cv}")
                });
                self.writes
                    .unacked
                    .entry(client.clone())
                    .or_default()
                    .push_back((mid, apply_cv));
                self.drain_downstream(driver); // fan-out is never gated on durability
                Outcome::Applied
            }
            RunResult::NonApplied { kind, reason } => {
                if self.ack_after_flush() {
                    // No data, but its ledger row still waits for the flush.
                    let cv = self.next_cv();
                    self.writes.hold(&client, mid, cv);
                }
                let recorded = RecordedOutcome {
                    kind,
                    reason,
                    name: Some(e.name.clone()),
                    args: args_text.clone(),
                };
                // Answered now, before the journal enqueue: the outcome frame always
                // precedes the lmid ack on this ordered socket.
                self.writes.record_outcome(&client, mid, recorded.clone());
                self.send_live(id, frames::mutation_outcome(mid, &recorded), driver);
                self.debug(|| format!("conn {id}: mutation {client}:{mid}: outcome {kind} sent"));
                if kind == "deopt" {
                    self.counters.mutations_deopt += 1;
                    Outcome::Deopt
                } else {
                    self.counters.mutations_rejected += 1;
                    Outcome::Rejected
                }
            }
        };
        self.enqueue_journal(JournalEntry {
            client_id: client,
            mid,
            name: e.name,
            args: args_text.unwrap_or_else(|| String::from("null")),
            sub,
            outcome,
        });
        self.schedule_flush();
    }

    /// Adds an entry to the next group commit.
    fn enqueue_journal(&mut self, entry: JournalEntry) {
        self.writes.known_clients.insert(entry.client_id.clone());
        self.writes.ack_queue.push(entry);
        if self.timers.group_commit.is_none() {
            let window = self.cfg.writes.as_ref().map_or(5, |w| w.group_commit_ms);
            self.timers.group_commit = Some(self.now + window);
        }
    }

    /// The group-commit window closed: hand the batch to the journal.
    pub(super) fn flush_journal(&mut self) {
        self.timers.group_commit = None;
        let batch = core::mem::take(&mut self.writes.ack_queue);
        if batch.is_empty() {
            return;
        }
        let io = self.io();
        let keys: Vec<Unconfirmed> = batch
            .iter()
            .map(|e| Unconfirmed {
                client_id: e.client_id.clone(),
                mid: e.mid,
                name: e.name.clone(),
            })
            .collect();
        self.writes.appends.push_back((io, self.inc.number, keys));
        self.push(Output::JournalAppend { io, entries: batch });
    }

    /// A journal write finished: an append (acks follow), or a flush / boot / compaction
    /// operation.
    pub(super) fn on_journal_written(
        &mut self,
        io: IoId,
        result: Result<(), super::JournalError>,
        driver: &mut dyn Driver,
    ) {
        let Some(pos) = self.writes.appends.iter().position(|(i, ..)| *i == io) else {
            return self.on_other_journal_write(io, result, driver);
        };
        // Appends complete in order; an answer for a later one settles the earlier.
        let (_, incarnation, keys) = self.writes.appends.remove(pos).expect("found above");
        if let Err(e) = result {
            // An ack that might not survive must never be sent: the incarnation dies.
            if incarnation == self.inc.number && !self.closed() {
                self.log(Level::Error, format!("journal append failed: {e}"));
                self.violation(&format!("journal append failed: {e}"));
            }
            return;
        }
        self.flushing.appended_since_compact += keys.len() as u64;
        if incarnation != self.inc.number || self.inc.room.is_none() {
            return; // the incarnation died mid-append: its optimism died with it
        }
        self.apply_ack(keys, driver);
    }

    /// The append is durable: advance the ledger rows and ship the lmid frames. With
    /// `ack = "journaled"` that is the ack — release the authors' holds and raise their
    /// progress; with `ack = "flushed"` the holds stay until the flush commits (ack.rs).
    fn apply_ack(&mut self, appended: Vec<Unconfirmed>, driver: &mut dyn Driver) {
        let Some(room) = self.inc.room.as_mut() else {
            return;
        };
        let entries: Vec<(String, u64)> = appended
            .iter()
            .map(|u| (u.client_id.clone(), u.mid))
            .collect();
        let head = match room.room_mut().ack(&entries) {
            Ok(h) => h,
            Err(e) => {
                self.violation(&format!("ack failed: {e}"));
                return;
            }
        };
        if self.has_authority() {
            self.writes.unconfirmed.extend(appended); // without one, nothing is ever confirmed
        }
        let after_flush = self.ack_after_flush();
        let mut authors: BTreeSet<String> = BTreeSet::new();
        if after_flush {
            // The ack is the later of this append and the commit of a flush carrying the
            // mutation. That flush may have committed already (it found nothing appended
            // to release then): the append is the ack now.
            authors = self.release_durable();
        } else {
            for (client, mid) in &entries {
                self.writes.release_holds(client, *mid);
                authors.insert(client.clone());
            }
        }
        let sent = if head.is_some() {
            self.drain_downstream(driver) // the lmid frames (+ progress to their receivers)
        } else {
            Vec::new()
        };
        self.progress_to_authors(&authors, &sent, driver);
    }
}

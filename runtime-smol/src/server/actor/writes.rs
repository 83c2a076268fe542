//! The write path (seed 002 `runMutation` … `applyAck`): run the mutator against the
//! core's keyed transaction, fan out at once, answer non-applied verdicts before the
//! journal enqueue, group-commit into the journal off the executor, and ack only after
//! the append returned.

use rindle_room_core::contract::js_uint;
use rindle_room_core::json::tree::JsValue;
use rindle_room_core::{Begin, Commit};
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

pub(crate) use super::journal_writer::JournalJob;
use super::Actor;
use crate::journal::{JournalEntry, Outcome};
use crate::mutators::{MutatorCtx, MutatorError};
use crate::server::frames::{self, RecordedOutcome};

/// Recorded non-applied outcomes kept per client for re-sent mids.
pub(crate) const MAX_RECORDED_OUTCOMES_PER_CLIENT: usize = 512;

/// A validated `pushMutation` envelope.
#[derive(Clone, Debug)]
pub(crate) struct Envelope {
    pub client_id: String,
    pub mid: f64,
    pub name: String,
    pub args: Option<JsValue>,
}

impl Envelope {
    /// `clientID` a string, `mid` a finite number, `name` a string — else `None`.
    pub(crate) fn from_frame(msg: &JsValue) -> Option<Envelope> {
        let e = msg.get("envelope")?;
        let (Some(JsValue::Str(client_id)), Some(JsValue::Num(mid)), Some(JsValue::Str(name))) =
            (e.get("clientID"), e.get("mid"), e.get("name"))
        else {
            return None;
        };
        if !mid.is_finite() {
            return None;
        }
        Some(Envelope {
            client_id: client_id.clone(),
            mid: *mid,
            name: name.clone(),
            args: e.get("args").cloned(),
        })
    }
}

/// One mutation to run: live or replayed.
#[derive(Debug)]
pub(crate) struct MutationInput {
    pub client_id: String,
    pub mid: u64,
    pub name: String,
    /// The args as `JSON.stringify` prints them (`None`: absent).
    pub args_text: Option<String>,
    pub sub: String,
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

fn args_value(text: Option<&str>) -> serde_json::Value {
    text.and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(serde_json::Value::Null)
}

impl Actor {
    /// Applies one envelope: dedup → mutator against the staged transaction → commit, or
    /// reject/deopt consuming the mid. A journaled non-applied entry replays its recorded
    /// verdict without running anything. Errors only when the room is torn (a gap, a
    /// poisoned commit).
    pub(crate) fn run_mutation(
        &mut self,
        m: &MutationInput,
    ) -> Result<RunResult, rindle_room_core::Error> {
        let Actor {
            room,
            registry,
            log,
            ..
        } = self;
        let Some(room) = room.as_mut() else {
            return Err(rindle_room_core::Error::new(
                rindle_room_core::ErrorCode::NotLive,
                "the room has no live incarnation",
            ));
        };
        let room = room.room_mut();
        let who = format!("{}:{}", m.client_id, m.mid);
        let args = m.args_text.as_deref();
        if room.begin_mutation(&m.client_id, m.mid, Some(&m.name), args)? == Begin::Dedup {
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
        let Some(mutator) = registry.get(&m.name).cloned() else {
            let reason = format!("unknown mutator `{}`", m.name);
            room.reject_mutation(Some("rejected"), Some(&reason))?;
            log.info(&format!("mutation {who} rejected: {reason}"));
            return Ok(RunResult::NonApplied {
                kind: "rejected",
                reason: Some(reason),
            });
        };
        let ctx = MutatorCtx {
            user: m.sub.clone(),
        };
        let value = args_value(args);
        let ran = {
            let mut tx = room.mutation_tx()?;
            catch_unwind(AssertUnwindSafe(|| mutator.run(&mut tx, &value, &ctx)))
        };
        let failure = match ran {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| String::from("a panic"));
                Some(MutatorError::Rejected(format!(
                    "mutator `{}` panicked: {what}",
                    m.name
                )))
            }
        };
        match failure {
            None => {}
            Some(MutatorError::Environment(message)) => {
                room.reject_mutation(Some("deopt"), Some("environment"))?;
                log.info(&format!(
                    "mutation `{}` ({who}) deopted: environment shortfall: {message}",
                    m.name
                ));
                return Ok(RunResult::NonApplied {
                    kind: "deopt",
                    reason: Some(String::from("environment")),
                });
            }
            Some(MutatorError::Rejected(message)) => {
                room.reject_mutation(Some("rejected"), Some(&message))?;
                log.info(&format!(
                    "mutation `{}` ({who}) rejected: {message}",
                    m.name
                ));
                return Ok(RunResult::NonApplied {
                    kind: "rejected",
                    reason: Some(message),
                });
            }
        }
        match room.commit_mutation()? {
            Commit::Applied { head_cv } => Ok(RunResult::Applied { apply_cv: head_cv }),
            Commit::Deopt(d) => {
                let mut pk = String::new();
                rindle_room_core::json::write::write_row(&mut pk, &d.pk);
                log.info(&format!(
                    "mutation `{}` ({who}) deopted: {} on `{}` pk {pk}",
                    m.name, d.reason, d.table
                ));
                Ok(RunResult::NonApplied {
                    kind: "deopt",
                    reason: Some(d.reason.to_string()),
                })
            }
        }
    }

    /// The live `pushMutation` path: apply → fan out now → journal under the group commit.
    pub(crate) fn handle_push_mutation(&mut self, id: u64, e: Envelope) {
        let fail = |me: &mut Actor, message: &str| me.send(id, frames::error(None, message));
        if self.settings.writes.is_none() || self.journal.is_none() {
            return fail(self, "this room is read-only (no write plane configured)");
        }
        let Some(conn) = self.conns.get(&id) else {
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
        if !self.live || self.room.is_none() {
            if self.admit_held_mutation(id) {
                if let Some(c) = self.conns.get_mut(&id) {
                    c.held_mutes += 1;
                }
                self.pending_mutes.push((id, e));
            }
            return;
        }
        // Judged after the live gate, so a mutation queued behind a pending subscribe
        // sees the subject that subscribe bound.
        let Some(sub) = conn.sub.clone() else {
            return fail(
                self,
                "pushMutation requires an authenticated subject — subscribe with a lease token first",
            );
        };
        if !self.bind_client(&client, &sub) {
            return fail(self, &super::binding::bound_elsewhere(&client));
        }
        let mid = match js_uint(e.mid, "mid") {
            Ok(m) => m,
            Err(err) => return fail(self, err.message()),
        };
        let args_text = e.args.as_ref().map(JsValue::to_js_string);
        let input = MutationInput {
            client_id: client.clone(),
            mid,
            name: e.name.clone(),
            args_text: args_text.clone(),
            sub: sub.clone(),
            journaled: Outcome::Applied,
        };
        let result = match self.run_mutation(&input) {
            Ok(r) => r,
            Err(err) => {
                if self.room.as_ref().is_some_and(|r| r.is_poisoned()) {
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
                self.metrics.inc(&self.metrics.mutations_dedup);
                // A re-sent non-applied mid is answered with its recorded outcome.
                let recorded = self
                    .outcomes
                    .get(&client)
                    .and_then(|m| m.iter().find(|(mid2, _)| *mid2 == mid))
                    .map(|(_, o)| o.clone());
                if let Some(o) = recorded {
                    self.send_budgeted(id, frames::mutation_outcome(mid, &o));
                }
                return;
            }
            RunResult::Applied { apply_cv } => {
                self.metrics.inc(&self.metrics.mutations_applied);
                self.unacked
                    .entry(client.clone())
                    .or_default()
                    .push_back((mid, apply_cv));
                self.drain_downstream(); // fan-out is never gated on durability
                Outcome::Applied
            }
            RunResult::NonApplied { kind, reason } => {
                let recorded = RecordedOutcome {
                    kind,
                    reason,
                    name: Some(e.name.clone()),
                    args: args_text.clone(),
                };
                // Answered now, before the journal enqueue: the outcome frame always
                // precedes the lmid ack on this ordered socket.
                self.record_outcome(&client, mid, recorded.clone());
                self.send_budgeted(id, frames::mutation_outcome(mid, &recorded));
                if kind == "deopt" {
                    self.metrics.inc(&self.metrics.mutations_deopt);
                    Outcome::Deopt
                } else {
                    self.metrics.inc(&self.metrics.mutations_rejected);
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

    /// Records a non-applied verdict for re-sent mids (oldest evicted past the cap).
    pub(crate) fn record_outcome(&mut self, client: &str, mid: u64, o: RecordedOutcome) {
        let log = self.outcomes.entry(client.to_string()).or_default();
        log.retain(|(m, _)| *m != mid);
        log.push_back((mid, o));
        while log.len() > MAX_RECORDED_OUTCOMES_PER_CLIENT {
            log.pop_front();
        }
    }

    /// Adds an entry to the next group commit.
    fn enqueue_journal(&mut self, entry: JournalEntry) {
        self.known_clients.insert(entry.client_id.clone());
        self.ack_queue.push(entry);
        if self.timers.group_commit.is_none() {
            let window = self
                .settings
                .writes
                .as_ref()
                .map_or(5, |w| w.group_commit_ms);
            self.timers.group_commit = Some(self.env.now_ms() + window);
        }
    }

    /// The group-commit window closed: hand the batch to the journal writer.
    pub(crate) fn flush_journal(&mut self) {
        self.timers.group_commit = None;
        let batch = std::mem::take(&mut self.ack_queue);
        if batch.is_empty() {
            return;
        }
        if let Some(jobs) = &self.journal_jobs {
            let job = JournalJob::Append {
                incarnation: self.incarnation,
                batch,
            };
            let _ = jobs.try_send(job);
        }
    }

    pub(super) fn on_appended(
        &mut self,
        incarnation: u64,
        batch: Vec<JournalEntry>,
        result: Result<(), String>,
    ) {
        if let Err(e) = result {
            // An ack that might not survive must never be sent: the incarnation dies.
            if incarnation == self.incarnation && !self.closed() {
                self.log.error(&format!("journal append failed: {e}"));
                self.violation(&format!("journal append failed: {e}"));
            }
            return;
        }
        self.appended_since_compact += batch.len() as u64;
        if incarnation != self.incarnation || self.room.is_none() {
            return; // the incarnation died mid-append: its optimism died with it
        }
        self.apply_ack(&batch);
    }

    /// The ack: advance the ledger rows, ship the lmid frames, raise every author's
    /// release point.
    fn apply_ack(&mut self, batch: &[JournalEntry]) {
        let entries: Vec<(String, u64)> =
            batch.iter().map(|e| (e.client_id.clone(), e.mid)).collect();
        let Some(room) = self.room.as_mut() else {
            return;
        };
        let head = match room.room_mut().ack(&entries) {
            Ok(h) => h,
            Err(e) => {
                self.violation(&format!("ack failed: {e}"));
                return;
            }
        };
        let mut authors: BTreeSet<String> = BTreeSet::new();
        for (client, mid) in &entries {
            authors.insert(client.clone());
            if let Some(held) = self.unacked.get_mut(client) {
                held.retain(|(m, _)| m > mid);
                if held.is_empty() {
                    self.unacked.remove(client);
                }
            }
        }
        if head.is_some() {
            self.drain_downstream(); // the lmid frames (+ progress to their receivers)
        }
        // Raise the release point for every author even if no frame reached it: one
        // `progress` per author, to the connection of its first subscription (in `subs`
        // order), found through the clientID index rather than a walk of every
        // subscription.
        let mut targets: Vec<(&str, u64)> = authors
            .iter()
            .filter_map(|a| self.first_subscribed_conn(a))
            .collect();
        targets.sort_unstable();
        let targets: Vec<u64> = targets.into_iter().map(|(_, conn)| conn).collect();
        for conn in targets {
            self.send_progress(conn);
        }
    }
}

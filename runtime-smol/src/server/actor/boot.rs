//! After the seq-0 snapshot (seed 002 `finishBoot`): enable the write plane, settle
//! unconfirmed flush records, probe the durable lmids, replay the journal by
//! re-invoking the mutators, ack everything replayed — then become live.
//!
//! The I/O (journal reads, authority calls) runs in a task off the room task; its result
//! comes back as [`Event::BootDone`](super::Event::BootDone) and is applied only if the
//! incarnation it was started for is still the current one.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::writes::{MutationInput, RunResult};
use super::{Actor, Event, Shared};
use crate::authority::{with_net_retry, ApplyResult, AuthorityError};
use crate::journal::{Journal, JournalEntry, Outcome};
use crate::server::authority::Authority;
use crate::server::frames::RecordedOutcome;
use crate::server::log::Logger;
use crate::server::metrics::Metrics;

/// What the boot I/O read.
#[derive(Debug)]
pub(crate) struct BootData {
    /// Every journaled entry, in append order.
    pub entries: Vec<JournalEntry>,
    /// The authority's durable lmid per journaled client (empty without an authority).
    pub lmids: BTreeMap<String, u64>,
    /// clientID → subject bindings the journal holds (first per client wins).
    pub bindings: Vec<(String, String)>,
}

/// Why the boot I/O stopped.
#[derive(Debug)]
pub(crate) enum BootFailure {
    /// An incarnation violation with this reason.
    Violation(String),
    /// A record was fenced under our own epoch: the room moved.
    Moved(String),
    /// The server is stopping or the incarnation died: nothing to do.
    Stopped,
}

/// What the boot I/O task needs.
pub(crate) struct BootIo {
    pub journal: Arc<dyn Journal>,
    pub authority: Option<Arc<dyn Authority>>,
    pub doc: String,
    pub placement_epoch: u64,
    pub shared: Arc<Shared>,
    pub incarnation: u64,
    pub log: Logger,
    pub metrics: Arc<Metrics>,
}

impl BootIo {
    fn stop(&self) -> bool {
        self.shared.stopping() || self.shared.incarnation.load(Ordering::SeqCst) != self.incarnation
    }

    async fn run(self) -> Result<BootData, BootFailure> {
        let j = self.journal.clone();
        let (entries, bindings) =
            smol::unblock(move || Ok::<_, std::io::Error>((j.replay()?, j.bindings()?)))
                .await
                .map_err(|e| BootFailure::Violation(format!("write-plane boot failed: {e}")))?;
        let Some(authority) = self.authority.clone() else {
            return Ok(BootData {
                entries,
                lmids: BTreeMap::new(),
                bindings,
            });
        };
        self.settle_unconfirmed_flushes(&*authority).await?;
        if self.stop() {
            return Err(BootFailure::Stopped);
        }
        let clients: Vec<String> = entries
            .iter()
            .map(|e| e.client_id.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut lmids = BTreeMap::new();
        if !clients.is_empty() {
            let result = with_net_retry(
                || authority.lmids(&self.doc, &clients),
                || self.stop(),
                |line| self.retry_log(line),
            )
            .await;
            lmids = match result {
                Ok(l) => l,
                Err(_) if self.stop() => return Err(BootFailure::Stopped),
                Err(e) => {
                    let why = format!("durable-lmid probe failed: {}", e.message());
                    return Err(BootFailure::Violation(why));
                }
            };
        }
        Ok(BootData {
            entries,
            lmids,
            bindings,
        })
    }

    fn retry_log(&self, line: &str) {
        self.metrics.inc(&self.metrics.authority_retries);
        self.log.warn(line);
    }

    /// Resubmits every unconfirmed journaled flush, byte-identically, in seq order
    /// (seed 002 `settleUnconfirmedFlushes`).
    async fn settle_unconfirmed_flushes(
        &self,
        authority: &dyn Authority,
    ) -> Result<(), BootFailure> {
        let j = self.journal.clone();
        let (records, _) = smol::unblock(move || j.replay_flushes())
            .await
            .map_err(|e| BootFailure::Violation(format!("flush resubmission failed: {e}")))?;
        for record in records {
            if self.shared.stopping() {
                return Err(BootFailure::Stopped);
            }
            let result = with_net_retry(
                || authority.apply_row_change_txn(&record.body),
                || self.shared.stopping(),
                |line| self.retry_log(line),
            )
            .await;
            let seq = record.seq;
            match result {
                Err(AuthorityError::Fatal(msg)) => {
                    // A same-id/different-body bug: loud, dropped, never a loop; the
                    // envelope replay re-derives its effects under a fresh flush id.
                    self.log.error(&format!(
                        "flush {seq} DROPPED: batch identity mismatch: {msg}"
                    ));
                }
                Err(AuthorityError::Retryable(_)) => return Err(BootFailure::Stopped),
                Ok(ApplyResult::Ok { applied, .. }) => {
                    let how = if applied {
                        "applied"
                    } else {
                        "already applied"
                    };
                    self.log
                        .info(&format!("flush {seq} settled at boot: {how}"));
                }
                Ok(ApplyResult::Conflict { .. }) => {
                    self.log.info(&format!(
                        "flush {seq} dropped at boot: conflict (replay supersedes)"
                    ));
                }
                Ok(ApplyResult::Fenced { .. }) => {
                    self.confirm(seq).await?;
                    if record.epoch == self.placement_epoch {
                        return Err(BootFailure::Moved(format!(
                            "flush {seq} fenced under our epoch"
                        )));
                    }
                    self.log.info(&format!(
                        "flush {seq} (old epoch {}) fenced: dropped",
                        record.epoch
                    ));
                    continue;
                }
            }
            self.confirm(seq).await?;
        }
        Ok(())
    }

    async fn confirm(&self, seq: u64) -> Result<(), BootFailure> {
        let j = self.journal.clone();
        smol::unblock(move || j.confirm_flush(seq))
            .await
            .map_err(|e| BootFailure::Violation(format!("flush resubmission failed: {e}")))
    }
}

impl Actor {
    /// The seq-0 snapshot applied: enable writes and start the boot I/O, or go live.
    pub(crate) fn finish_boot(&mut self) {
        let (Some(writes), Some(journal)) = (self.settings.writes.clone(), self.journal.clone())
        else {
            self.become_live();
            return;
        };
        let Some(room) = self.room.as_mut() else {
            return;
        };
        let tables: Vec<rindle_room_core::TableSchema> = room.room().tables().cloned().collect();
        let enabled = match &writes.scopes {
            Some(scopes) => {
                let owned: Vec<&str> = writes.owned_tables.iter().map(String::as_str).collect();
                room.room_mut().enable_writes_v2(scopes, Some(&owned))
            }
            None => {
                let owned: Vec<&str> = writes.owned_tables.iter().map(String::as_str).collect();
                room.room_mut().enable_writes(&owned)
            }
        };
        if let Err(e) = enabled {
            self.violation(&format!("write-plane boot failed: {e}"));
            return;
        }
        if let Err(e) = self.rebuild_registry(&tables) {
            self.violation(&format!("write-plane boot failed: {e}"));
            return;
        }
        let io = BootIo {
            journal,
            authority: self.authority.clone(),
            doc: self.settings.doc_id.clone(),
            placement_epoch: self.placement_epoch,
            shared: self.shared.clone(),
            incarnation: self.incarnation,
            log: self.log.clone(),
            metrics: self.metrics.clone(),
        };
        let events = self.events.clone();
        let incarnation = self.incarnation;
        self.env.spawn(async move {
            let result = io.run().await;
            let _ = events
                .send(Event::BootDone {
                    incarnation,
                    result,
                })
                .await;
        });
    }

    /// The registry for this incarnation: the configuration's mutators (validated against
    /// the hello's tables), then the host's, which win on a name clash.
    fn rebuild_registry(&mut self, tables: &[rindle_room_core::TableSchema]) -> Result<(), String> {
        let mut registry = match &self.config {
            Some(config) => config.registry(tables).map_err(|e| e.to_string())?,
            None => crate::mutators::Registry::new(),
        };
        for name in self.host_registry.names() {
            if let Some(m) = self.host_registry.get(name) {
                registry.register_arc(name, m.clone());
            }
        }
        self.registry = registry;
        Ok(())
    }

    pub(super) fn on_boot_done(&mut self, incarnation: u64, result: Result<BootData, BootFailure>) {
        if incarnation != self.incarnation || self.room.is_none() {
            return; // an incarnation death raced the boot I/O
        }
        let data = match result {
            Ok(d) => d,
            Err(BootFailure::Stopped) => return,
            Err(BootFailure::Moved(reason)) => return self.room_moved(&reason),
            Err(BootFailure::Violation(why)) => {
                if !self.closed() {
                    self.violation(&why);
                }
                return;
            }
        };
        if let Err(why) = self.replay(data) {
            self.violation(&why);
            return;
        }
        self.become_live();
        self.schedule_flush(); // replay may have left dirty keys / unflushed lmids
    }

    /// Seeds the durable watermarks, re-invokes every journaled mutation, acks them all.
    fn replay(&mut self, data: BootData) -> Result<(), String> {
        self.seed_bindings(&data.bindings);
        let seeds: Vec<(String, u64)> = data.lmids.into_iter().filter(|(_, l)| *l > 0).collect();
        if !seeds.is_empty() {
            let room = self.room.as_mut().ok_or("no room")?.room_mut();
            room.seed_durable(&seeds)
                .map_err(|e| format!("durable seed failed: {e}"))?;
            room.commit_all(); // drop the (subscriber-less) ledger fan-out
            let list: Vec<String> = seeds.iter().map(|(c, l)| format!("{c}→{l}")).collect();
            self.log.info(&format!("durable seed: {}", list.join(", ")));
        }
        for entry in &data.entries {
            self.known_clients.insert(entry.client_id.clone());
            let input = MutationInput {
                client_id: entry.client_id.clone(),
                mid: entry.mid,
                name: entry.name.clone(),
                args_text: Some(entry.args.clone()),
                sub: entry.sub.clone(),
                journaled: entry.outcome,
            };
            let res = self
                .run_mutation(&input)
                .map_err(|e| format!("journal replay failed: {e}"))?;
            if let RunResult::NonApplied { kind, reason } = res {
                // This incarnation's answer sheet for re-sent mids (the journal record is
                // never rewritten).
                let deopt = kind == "deopt";
                let recorded = RecordedOutcome {
                    kind,
                    reason,
                    name: deopt.then(|| entry.name.clone()),
                    args: deopt.then(|| entry.args.clone()),
                };
                self.record_outcome(&entry.client_id, entry.mid, recorded);
                if entry.outcome == Outcome::Applied {
                    self.log.warn(&format!(
                        "replayed APPLIED mutation {}:{} (`{}`) now {kind}s against the moved \
                         base — mid stays burnt, no effects",
                        entry.client_id, entry.mid, entry.name
                    ));
                }
            }
        }
        if !data.entries.is_empty() {
            let acks: Vec<(String, u64)> = data
                .entries
                .iter()
                .map(|e| (e.client_id.clone(), e.mid))
                .collect();
            let room = self.room.as_mut().ok_or("no room")?.room_mut();
            room.ack(&acks)
                .map_err(|e| format!("journal replay failed: {e}"))?;
            room.commit_all(); // drop the (subscriber-less) fan-out of the replay
            self.log.info(&format!(
                "journal replay: {} mutation(s) re-invoked and acked",
                data.entries.len()
            ));
        }
        Ok(())
    }

    /// The incarnation is live: release the waiters, serve the queued subscribes, then
    /// the queued mutations.
    pub(crate) fn become_live(&mut self) {
        self.live = true;
        for w in self.live_waiters.drain(..) {
            let _ = w.try_send(());
        }
        self.log.info(&format!("live (bootId {})", self.boot_id));
        for c in self.conns.values_mut() {
            c.held_subs = 0;
            c.held_mutes = 0;
        }
        for (id, msg) in std::mem::take(&mut self.pending_subs) {
            if self.conns.get(&id).is_some_and(|c| c.out.is_open()) {
                self.handle_subscribe(id, &msg);
            }
        }
        for (id, envelope) in std::mem::take(&mut self.pending_mutes) {
            if self.conns.get(&id).is_some_and(|c| c.out.is_open()) {
                self.handle_push_mutation(id, envelope);
            }
        }
    }
}

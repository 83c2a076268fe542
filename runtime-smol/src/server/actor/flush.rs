//! The write-behind flush (seed 002 `scheduleFlush` … `roomMoved`): build the batch in
//! the core, journal its exact body before the first send, settle it against the
//! authority, and drain-before-downgrade.

use std::collections::BTreeMap;

use async_channel::Sender;

use super::{Actor, Event};
use crate::authority::{with_net_retry, ApplyResult, AuthorityError};
use crate::journal::FlushRecord;
use crate::server::authority::flush_body;

/// Drain-before-downgrade's iteration cap.
pub(crate) const DRAIN_MAX_ITERATIONS: u32 = 100;
/// Compact the journal after this many successful flushes…
const COMPACT_EVERY_FLUSHES: u64 = 16;
/// …or once this many entries were appended since the last compaction.
const COMPACT_EVERY_ENTRIES: u64 = 4096;

/// How one flush ended.
#[derive(Debug)]
pub(crate) enum FlushResult {
    Settled(ApplyResult),
    Fatal(String),
    JournalFailed(String),
    Stopped,
}

/// A flush settlement, tagged with the incarnation that built it.
#[derive(Debug)]
pub(crate) struct FlushSettlement {
    pub incarnation: u64,
    pub seq: u64,
    pub result: FlushResult,
}

/// A `/drain` (or shutdown) waiting for the room to quiesce.
#[derive(Debug)]
pub(crate) struct DrainWaiter {
    pub reply: Option<Sender<Result<u64, String>>>,
    pub iterations: u32,
    pub shutdown: bool,
}

impl Actor {
    /// Arms the flush debounce (or fires at once past the dirty threshold).
    pub(crate) fn schedule_flush(&mut self) {
        let Some(writes) = &self.settings.writes else {
            return;
        };
        if self.authority.is_none() || self.flush_busy || self.timers.flush.is_some() {
            return;
        }
        if self.closed() || !self.live {
            return;
        }
        let Some(room) = &self.room else {
            return;
        };
        let dirty = room.room().dirty_len();
        let delay = if dirty >= writes.flush_dirty_max {
            0
        } else {
            writes.flush_debounce_ms
        };
        self.timers.flush = Some(self.env.now_ms() + delay);
    }

    /// Builds the next batch, journals its body and settles it in a task. Returns
    /// whether a flush is now in flight.
    pub(crate) fn fire_flush(&mut self) -> bool {
        self.timers.flush = None;
        let (Some(authority), Some(journal)) = (self.authority.clone(), self.journal.clone())
        else {
            return false;
        };
        if self.flush_busy {
            return true;
        }
        if self.closed() || !self.live {
            return false;
        }
        let Some(room) = self.room.as_mut() else {
            return false;
        };
        let batch = match room.room_mut().begin_flush() {
            Ok(Some(b)) => b,
            Ok(None) => return false, // nothing dirty, nothing unflushed
            Err(e) => {
                self.violation(&format!("beginFlush failed: {e}"));
                return false;
            }
        };
        let seq = self.flush_seq;
        self.flush_seq += 1;
        let epoch = self.placement_epoch;
        // Composed once; journaled and sent as this exact string forever.
        let body = flush_body(
            &self.settings.doc_id,
            epoch,
            seq,
            &batch.batch_hash,
            &batch.changes_json(),
        );
        self.flush_busy = true;
        let incarnation = self.incarnation;
        let shared = self.shared.clone();
        let events = self.events.clone();
        let log = self.log.clone();
        let metrics = self.metrics.clone();
        self.env.spawn(async move {
            let record = FlushRecord { seq, epoch, body };
            let j = journal.clone();
            let appended = smol::unblock(move || {
                let r = j.append_flush(&record);
                (record, r)
            })
            .await;
            let (record, r) = appended;
            let result = match r {
                Err(e) => FlushResult::JournalFailed(e.to_string()),
                Ok(()) => {
                    let applied = with_net_retry(
                        || authority.apply_row_change_txn(&record.body),
                        || shared.stopping(),
                        |line| {
                            metrics.inc(&metrics.authority_retries);
                            log.warn(line);
                        },
                    )
                    .await;
                    match applied {
                        Ok(res) => {
                            let j = journal.clone();
                            if let Err(e) = smol::unblock(move || j.confirm_flush(seq)).await {
                                log.warn(&format!(
                                    "flush {seq} settled but its journal confirmation failed \
                                     (the next boot re-settles it): {e}"
                                ));
                            }
                            FlushResult::Settled(res)
                        }
                        Err(AuthorityError::Fatal(m)) => FlushResult::Fatal(m),
                        Err(AuthorityError::Retryable(_)) => FlushResult::Stopped,
                    }
                }
            };
            let settlement = FlushSettlement {
                incarnation,
                seq,
                result,
            };
            let _ = events.send(Event::FlushSettled(settlement)).await;
        });
        true
    }

    pub(super) fn on_flush_settled(&mut self, s: FlushSettlement) {
        self.flush_busy = false;
        let same = s.incarnation == self.incarnation && self.room.is_some();
        let seq = s.seq;
        match s.result {
            FlushResult::Stopped => {}
            FlushResult::JournalFailed(e) => {
                // An unjournaled batch must never reach the wire.
                if same && !self.closed() {
                    self.log.error(&format!("flush journal append failed: {e}"));
                    self.violation(&format!("flush journal append failed: {e}"));
                }
            }
            FlushResult::Fatal(e) => {
                self.metrics.inc(&self.metrics.flushes_fatal);
                if same && !self.closed() {
                    self.log.error(&format!("flush {seq} failed fatally: {e}"));
                    self.violation(&format!("flush apply failed fatally: {e}"));
                }
            }
            FlushResult::Settled(ApplyResult::Ok { cv, .. }) => {
                self.metrics.inc(&self.metrics.flushes_ok);
                self.flushes_confirmed += 1;
                self.last_committed_flush_seq = self.last_committed_flush_seq.max(seq);
                self.ok_since_compact += 1;
                if same {
                    let room = self.room.as_mut().expect("`same` checked the room");
                    if let Err(e) = room.room_mut().flush_ok(cv) {
                        self.violation(&format!("flushOk failed: {e}"));
                        return self.after_settlement();
                    }
                    // flush_ok can converge keys to newer authority images: drain.
                    self.drain_downstream();
                }
                self.log.debug(&format!("flush {seq} committed"));
                self.maybe_compact();
                self.schedule_flush();
            }
            FlushResult::Settled(ApplyResult::Conflict { conflicts_json }) => {
                self.metrics.inc(&self.metrics.flushes_conflict);
                if same {
                    let room = self.room.as_mut().expect("`same` checked the room");
                    match room.flush_conflict(&conflicts_json) {
                        Ok(out) => {
                            if out != "{\"headCv\":null}" {
                                self.drain_downstream(); // the corrective frames
                            }
                        }
                        Err(e) => {
                            self.violation(&format!("flushConflict failed: {e}"));
                            return self.after_settlement();
                        }
                    }
                }
                self.log.info(&format!(
                    "flush {seq} CAS-conflicted: converged to the authority, retrying the rest"
                ));
                self.schedule_flush();
            }
            FlushResult::Settled(ApplyResult::Fenced { current_epoch }) => {
                self.metrics.inc(&self.metrics.flushes_fenced);
                let current = current_epoch.map_or(String::from("?"), |e| e.to_string());
                self.room_moved(&format!("flush {seq} fenced (authority epoch {current})"));
            }
        }
        self.after_settlement();
    }

    fn after_settlement(&mut self) {
        for w in self.flush_waiters.drain(..) {
            let _ = w.try_send(());
        }
        self.poll_drains();
    }

    /// Compacts the journal with the durable lmids, every few successful flushes.
    fn maybe_compact(&mut self) {
        if self.ok_since_compact < COMPACT_EVERY_FLUSHES
            && self.appended_since_compact < COMPACT_EVERY_ENTRIES
        {
            return;
        }
        let (Some(jobs), Some(room)) = (&self.journal_jobs, &self.room) else {
            return;
        };
        let durable: BTreeMap<String, u64> = self
            .known_clients
            .iter()
            .map(|c| (c.clone(), room.room().durable_lmid(c)))
            .filter(|(_, d)| *d > 0)
            .collect();
        self.ok_since_compact = 0;
        self.appended_since_compact = 0;
        let _ = jobs.try_send(super::writes::JournalJob::Compact(durable));
    }

    /// `flushNow()`: fires the flush now; `reply` gets `()` once it settled (at once
    /// when there was nothing to flush).
    pub(crate) fn flush_now(&mut self, reply: Sender<()>) {
        if self.fire_flush() {
            self.flush_waiters.push(reply);
        } else {
            let _ = reply.try_send(());
        }
    }

    /// Starts a drain-before-downgrade (or a shutdown drain).
    pub(crate) fn start_drain(
        &mut self,
        reply: Option<Sender<Result<u64, String>>>,
        shutdown: bool,
    ) {
        self.drains.push(DrainWaiter {
            reply,
            iterations: 0,
            shutdown,
        });
        self.poll_drains();
    }

    fn drain_active(&self) -> bool {
        self.authority.is_some()
            && self.live
            && !self.closed()
            && self
                .room
                .as_ref()
                .is_some_and(|r| r.room().dirty_len() > 0 || r.room().pending_len() > 0)
    }

    /// Advances every waiting drain: done when nothing is dirty or pending; else one more
    /// flush (at most [`DRAIN_MAX_ITERATIONS`]).
    pub(crate) fn poll_drains(&mut self) {
        loop {
            if self.drains.is_empty() || self.flush_busy {
                return;
            }
            if !self.drain_active() {
                let done = self.last_committed_flush_seq;
                for w in std::mem::take(&mut self.drains) {
                    self.finish_drain(w, Ok(done));
                }
                return;
            }
            let mut keep = Vec::new();
            for mut w in std::mem::take(&mut self.drains) {
                w.iterations += 1;
                if w.iterations > DRAIN_MAX_ITERATIONS {
                    let room = self.room.as_ref().map(|r| r.room());
                    let err = format!(
                        "drain: room {} failed to quiesce after {DRAIN_MAX_ITERATIONS} flushes \
                         (dirty={}, pending={})",
                        self.settings.doc_id,
                        room.map_or(0, |r| r.dirty_len()),
                        room.map_or(0, |r| r.pending_len()),
                    );
                    self.finish_drain(w, Err(err));
                } else {
                    keep.push(w);
                }
            }
            self.drains = keep;
            if self.drains.is_empty() || self.fire_flush() {
                return;
            }
        }
    }

    fn finish_drain(&mut self, w: DrainWaiter, result: Result<u64, String>) {
        if let Err(e) = &result {
            self.log.error(e);
        }
        if let Some(reply) = w.reply {
            let _ = reply.try_send(result);
        }
        if w.shutdown {
            self.finish_shutdown();
        }
    }

    /// Fenced under our epoch: another placement owns the doc. Terminal: every socket
    /// is closed with 4009 `room_moved`.
    pub(crate) fn room_moved(&mut self, reason: &str) {
        if self.shared.moved.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        self.shared
            .moved
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.log.error(&format!("room moved: {reason}"));
        self.close_everything(4009, "room_moved");
        self.poll_drains();
        self.stopped = true;
    }

    /// Closes the server: timers, upstream, listeners, every remaining socket (with
    /// `code` and `reason`).
    pub(crate) fn close_everything(&mut self, code: u16, reason: &str) {
        self.shared
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.timers = super::Timers::default();
        self.up = None;
        self.stop_listeners = None;
        for c in self.conns.values_mut() {
            c.out.close(code, reason);
        }
        for w in self.flush_waiters.drain(..) {
            let _ = w.try_send(());
        }
    }

    /// Shutdown, after its drain: close every socket with 1001 and stop.
    pub(crate) fn finish_shutdown(&mut self) {
        self.close_everything(1001, "room shutting down");
        self.log.info("shut down");
        if let Some(reply) = self.shutdown_reply.take() {
            let _ = reply.try_send(());
        }
        self.stopped = true;
    }
}

//! The write-behind flush (the Node shell's `scheduleFlush` … `roomMoved` in the published
//! room): build the batch in
//! the core, journal its exact body before the first send, settle it against the
//! authority, drain-before-downgrade, and the host's ways of stopping.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::authority::{Call, Purpose, Request};
use super::{
    ApplyResult, AuthorityError, AuthorityReply, ControlReply, DrainError, Driver, FlushRecord,
    Host, IoId, JournalError, Level, Output, Phase,
};
use crate::json::write::{write_i64, write_str};

/// Drain-before-downgrade's iteration cap.
pub(crate) const DRAIN_MAX_ITERATIONS: u32 = 100;
/// Compact the journal after this many successful flushes…
const COMPACT_EVERY_FLUSHES: u64 = 16;
/// …or once this many entries were appended since the last compaction.
const COMPACT_EVERY_ENTRIES: u64 = 4096;
/// A flush that left everything confirmed compacts at most this often (a drain always
/// does): a room with sparse writes does not pay a file rewrite per flush.
const COMPACT_SETTLED_EVERY_MS: u64 = 5_000;

/// Where the flush in flight is.
#[derive(Debug)]
enum Stage {
    /// Journaling its record.
    Journaling(IoId),
    /// At the authority.
    Applying,
    /// Settled; confirming its record in the journal.
    Confirming(IoId, ApplyResult),
}

/// The one flush in flight.
#[derive(Debug)]
pub(super) struct FlushIo {
    seq: u64,
    incarnation: u64,
    body: String,
    stage: Stage,
}

/// How one flush ended.
#[derive(Debug)]
enum FlushResult {
    Settled(ApplyResult),
    Fatal(String),
    JournalFailed(JournalError),
    Stopped,
}

/// A `/drain` (or shutdown) waiting for the room to quiesce.
#[derive(Debug)]
pub(super) struct DrainWaiter {
    reply: Option<u64>,
    iterations: u32,
    shutdown: bool,
}

impl DrainWaiter {
    pub(super) fn is_shutdown(&self) -> bool {
        self.shutdown
    }
}

/// A flush seq as its wire offset: zero-padded to 20 digits so lexicographic order is
/// numeric order.
pub fn pad_offset(seq: u64) -> String {
    format!("{seq:020}")
}

/// The flush body, composed once (key order exactly as the published room's Node shell's
/// `fireFlush`):
/// `{"source":"room:<doc>:<epoch>","offset":"<seq, 20 digits>","doc","epoch","batchHash",
/// "cas":true,"changes":[…]}`.
pub fn flush_body(doc: &str, epoch: u64, seq: u64, batch_hash: &str, changes: &str) -> String {
    let mut s = String::with_capacity(160 + changes.len());
    s.push_str("{\"source\":");
    write_str(&mut s, &format!("room:{doc}:{epoch}"));
    s.push_str(",\"offset\":");
    write_str(&mut s, &pad_offset(seq));
    s.push_str(",\"doc\":");
    write_str(&mut s, doc);
    s.push_str(",\"epoch\":");
    write_i64(&mut s, epoch as i64);
    s.push_str(",\"batchHash\":");
    write_str(&mut s, batch_hash);
    s.push_str(",\"cas\":true,\"changes\":");
    s.push_str(changes);
    s.push('}');
    s
}

/// The write-behind flush's state, its drains and the journal's compaction.
#[derive(Debug)]
pub(super) struct Flushing {
    /// The next flush's sequence number.
    pub(super) seq: u64,
    /// The flush in flight.
    pub(super) in_flight: Option<FlushIo>,
    /// Flushes the authority confirmed (this host's life).
    pub(super) confirmed: u64,
    /// The last flush seq the authority committed.
    pub(super) last_committed_seq: u64,
    /// Control requests waiting for the flush to settle.
    pub(super) waiters: Vec<u64>,
    /// Drains (and a shutdown) waiting for the room to quiesce.
    pub(super) drains: Vec<DrainWaiter>,
    /// The shutdown request to answer once stopped.
    pub(super) shutdown_reply: Option<u64>,
    /// Flushes settled since the last compaction.
    pub(super) ok_since_compact: u64,
    /// Entries appended since the last compaction.
    pub(super) appended_since_compact: u64,
    /// Journaled mutations the authority never confirmed, left to the journal when the
    /// room moved (the stranded report's length).
    pub(super) left_to_journal: usize,
    /// When the last compaction started (ms; `None`: never in this host).
    pub(super) last_compact_ms: Option<u64>,
    /// The compaction in flight.
    pub(super) compact_io: Option<IoId>,
}

impl Default for Flushing {
    fn default() -> Flushing {
        Flushing {
            seq: 1,
            in_flight: None,
            confirmed: 0,
            last_committed_seq: 0,
            waiters: Vec::new(),
            drains: Vec::new(),
            shutdown_reply: None,
            ok_since_compact: 0,
            left_to_journal: 0,
            appended_since_compact: 0,
            last_compact_ms: None,
            compact_io: None,
        }
    }
}

impl Flushing {
    /// Whether anything reached the journal since its last compaction.
    pub(super) fn compaction_owed(&self) -> bool {
        self.ok_since_compact > 0 || self.appended_since_compact > 0
    }
}

impl Host {
    pub(super) fn has_authority(&self) -> bool {
        self.cfg.writes.as_ref().is_some_and(|w| w.authority)
    }

    /// Arms the flush debounce (or fires at once past the dirty threshold).
    pub(super) fn schedule_flush(&mut self) {
        let Some(writes) = &self.cfg.writes else {
            return;
        };
        if !writes.authority || self.flushing.in_flight.is_some() || self.timers.flush.is_some() {
            return;
        }
        if self.closed() || !self.inc.live {
            return;
        }
        let Some(room) = &self.inc.room else {
            return;
        };
        let dirty = room.room().dirty_len();
        let delay = if dirty >= writes.flush_dirty_max {
            0
        } else {
            writes.flush_debounce_ms
        };
        self.timers.flush = Some(self.now + delay);
    }

    /// Builds the next batch and journals its body. Returns whether a flush is now in
    /// flight.
    pub(super) fn fire_flush(&mut self) -> bool {
        self.timers.flush = None;
        if !self.has_authority() {
            return false;
        }
        if self.flushing.in_flight.is_some() {
            return true;
        }
        if self.closed() || !self.inc.live {
            return false;
        }
        if self.flush_held_for_newcomers() {
            self.debug(|| String::from("flush held: a writer is unconfirmed"));
            return false;
        }
        let Some(room) = self.inc.room.as_mut() else {
            return false;
        };
        let batch = match room.room_mut().begin_flush() {
            Ok(Some(b)) => b,
            Ok(None) => return false, // nothing dirty, nothing unflushed
            Err(e) => {
                let why = format!("beginFlush failed: {e}");
                self.violation(&why);
                return false;
            }
        };
        let seq = self.flushing.seq;
        self.flushing.seq += 1;
        let epoch = self.boot.placement_epoch;
        // Composed once; journaled and sent as this exact string forever.
        let body = flush_body(
            &self.cfg.doc_id,
            epoch,
            seq,
            &batch.batch_hash,
            &batch.changes_json(),
        );
        let io = self.io();
        self.flushing.in_flight = Some(FlushIo {
            seq,
            incarnation: self.inc.number,
            body: body.clone(),
            stage: Stage::Journaling(io),
        });
        self.push(Output::JournalAppendFlush {
            io,
            record: FlushRecord { seq, epoch, body },
        });
        true
    }

    /// A journal write for the flush (its record, its confirmation) or a compaction.
    pub(super) fn on_flush_journal_write(
        &mut self,
        io: IoId,
        result: Result<(), super::JournalError>,
        driver: &mut dyn Driver,
    ) {
        if self.flushing.compact_io == Some(io) {
            self.flushing.compact_io = None;
            if let Err(e) = result {
                self.log(
                    Level::Warn,
                    format!("journal compaction failed (will retry later): {e}"),
                );
                // A drain does not wait for a compaction that failed.
                self.flushing.ok_since_compact = 0;
                self.flushing.appended_since_compact = 0;
            }
            self.poll_drains(); // a drain waits for the compaction it started
            return;
        }
        if self.on_echo_confirm_write(io, &result) {
            return;
        }
        let Some(flush) = self.flushing.in_flight.as_mut() else {
            return;
        };
        match &flush.stage {
            Stage::Journaling(i) if *i == io => match result {
                Err(e) => self.settle_flush(FlushResult::JournalFailed(e), driver),
                Ok(()) => {
                    flush.stage = Stage::Applying;
                    let body = flush.body.clone();
                    self.call(Purpose::Flush, Request::Apply(body));
                }
            },
            Stage::Confirming(i, _) if *i == io => {
                let seq = flush.seq;
                let Stage::Confirming(_, applied) =
                    core::mem::replace(&mut flush.stage, Stage::Applying)
                else {
                    return;
                };
                if let Err(e) = result {
                    self.log(
                        Level::Warn,
                        format!(
                            "flush {seq} settled but its journal confirmation failed (the next \
                             boot re-settles it): {e}"
                        ),
                    );
                }
                self.settle_flush(FlushResult::Settled(applied), driver);
            }
            _ => {}
        }
    }

    /// The authority answered the flush.
    pub(super) fn on_flush_applied(
        &mut self,
        _call: Call,
        result: Result<AuthorityReply, AuthorityError>,
        driver: &mut dyn Driver,
    ) {
        let Some(flush) = self.flushing.in_flight.as_mut() else {
            return;
        };
        match result {
            Ok(AuthorityReply::Applied(ApplyResult::Ok { applied, cv })) => {
                // Committed: settled now, its record confirmed once its echo is in
                // (`echo_wait.rs`). A dead incarnation's is left unconfirmed: the next
                // boot settles it, and takes its images in if that boot's snapshot
                // lacks them.
                let (seq, incarnation) = (flush.seq, flush.incarnation);
                let flight = (self.inc.room.as_ref())
                    .filter(|_| incarnation == self.inc.number)
                    .and_then(|r| r.room().flight_id());
                let ok = ApplyResult::Ok { applied, cv };
                self.settle_flush(FlushResult::Settled(ok), driver);
                if let Some(flight) = flight {
                    self.confirm_when_echoed(seq, flight, incarnation);
                }
            }
            Ok(AuthorityReply::Applied(applied)) => {
                let io = self.next_io;
                self.next_io += 1;
                let seq = flush.seq;
                flush.stage = Stage::Confirming(io, applied);
                self.push(Output::JournalConfirmFlush { io, seq });
            }
            Ok(other) => {
                let why = format!("unexpected reply {other:?}");
                self.settle_flush(FlushResult::Fatal(why), driver);
            }
            Err(AuthorityError::Fatal(m)) => self.settle_flush(FlushResult::Fatal(m), driver),
            Err(AuthorityError::Retryable(_)) => self.settle_flush(FlushResult::Stopped, driver),
        }
    }

    fn settle_flush(&mut self, result: FlushResult, driver: &mut dyn Driver) {
        let Some(flush) = self.flushing.in_flight.take() else {
            return;
        };
        let same = flush.incarnation == self.inc.number && self.inc.room.is_some();
        let seq = flush.seq;
        match result {
            FlushResult::Stopped => {}
            FlushResult::JournalFailed(e) => {
                // An unjournaled batch must never reach the wire.
                if same && !self.closed() {
                    self.log(Level::Error, format!("flush journal append failed: {e}"));
                    self.violation(&format!("flush journal append failed: {e}"));
                }
            }
            FlushResult::Fatal(e) => {
                self.counters.flushes_fatal += 1;
                if same && !self.closed() {
                    self.log(Level::Error, format!("flush {seq} failed fatally: {e}"));
                    self.violation(&format!("flush apply failed fatally: {e}"));
                }
            }
            FlushResult::Settled(ApplyResult::Ok { cv, .. }) => {
                self.counters.flushes_ok += 1;
                self.flushing.confirmed += 1;
                self.flushing.last_committed_seq = self.flushing.last_committed_seq.max(seq);
                self.flushing.ok_since_compact += 1;
                if same {
                    let room = self.inc.room.as_mut().expect("`same` checked the room");
                    if let Err(e) = room.room_mut().flush_ok() {
                        self.violation(&format!("flushOk failed: {e}"));
                        return self.after_settlement();
                    }
                    self.on_durable(driver); // with `ack = "flushed"`, the ack
                }
                match cv {
                    Some(cv) => self.log(Level::Debug, format!("flush {seq} committed at cv {cv}")),
                    None => self.log(Level::Debug, format!("flush {seq} committed")),
                }
                self.maybe_compact();
                self.schedule_flush();
            }
            FlushResult::Settled(ApplyResult::Conflict { conflicts_json }) => {
                self.counters.flushes_conflict += 1;
                if same {
                    let room = self.inc.room.as_mut().expect("`same` checked the room");
                    match room.flush_conflict(&conflicts_json) {
                        Ok(out) => {
                            if out != "{\"headCv\":null}" {
                                self.drain_downstream(driver); // the corrective frames
                            }
                        }
                        Err(e) => {
                            self.violation(&format!("flushConflict failed: {e}"));
                            return self.after_settlement();
                        }
                    }
                }
                self.log(
                    Level::Info,
                    format!(
                        "flush {seq} CAS-conflicted: converged to the authority, retrying the rest"
                    ),
                );
                self.schedule_flush();
            }
            FlushResult::Settled(ApplyResult::Fenced { current_epoch }) => {
                self.counters.flushes_fenced += 1;
                let current = current_epoch.map_or(String::from("?"), |e| format!("{e}"));
                self.room_moved(&format!("flush {seq} fenced (authority epoch {current})"));
            }
        }
        self.after_settlement();
    }

    fn after_settlement(&mut self) {
        for id in core::mem::take(&mut self.flushing.waiters) {
            self.push(Output::ControlReply {
                id,
                reply: ControlReply::Flushed,
            });
        }
        self.poll_drains();
    }

    /// Compacts the journal with the durable lmids: every few successful flushes, and
    /// whenever a flush left nothing dirty or pending (everything journaled is confirmed)
    /// and something was confirmed since the last compaction, at most every
    /// [`COMPACT_SETTLED_EVERY_MS`] — so the journal holds what is unconfirmed, not the
    /// room's history. A drain compacts before it answers, whatever the interval.
    fn maybe_compact(&mut self) {
        let settled = self
            .inc
            .room
            .as_ref()
            .is_some_and(|r| r.room().dirty_len() == 0 && r.room().pending_len() == 0);
        let quiet = self
            .flushing
            .last_compact_ms
            .is_none_or(|t| self.now.saturating_sub(t) >= COMPACT_SETTLED_EVERY_MS);
        let due = self.flushing.ok_since_compact >= COMPACT_EVERY_FLUSHES
            || self.flushing.appended_since_compact >= COMPACT_EVERY_ENTRIES
            || (settled && quiet && self.flushing.ok_since_compact > 0);
        if due {
            self.compact_now();
        }
    }

    /// Starts a compaction unless one is in flight.
    fn compact_now(&mut self) {
        if self.flushing.compact_io.is_some() {
            return;
        }
        let Some(room) = &self.inc.room else {
            return;
        };
        let durable: BTreeMap<String, u64> = self
            .writes
            .known_clients
            .iter()
            .map(|c| (c.clone(), room.room().durable_lmid(c)))
            .filter(|(_, d)| *d > 0)
            .collect();
        self.flushing.ok_since_compact = 0;
        self.flushing.appended_since_compact = 0;
        self.flushing.last_compact_ms = Some(self.now);
        let io = self.io();
        self.flushing.compact_io = Some(io);
        self.push(Output::JournalCompact { io, durable });
    }

    /// `flushNow()`: fires the flush now; answered once it settled (at once when there
    /// was nothing to flush).
    pub(super) fn flush_now(&mut self, reply: u64) {
        if self.fire_flush() {
            self.flushing.waiters.push(reply);
        } else {
            self.push(Output::ControlReply {
                id: reply,
                reply: ControlReply::Flushed,
            });
        }
    }

    /// Starts a drain-before-downgrade (or a shutdown drain).
    pub(super) fn start_drain(&mut self, reply: Option<u64>, shutdown: bool) {
        self.flushing.drains.push(DrainWaiter {
            reply,
            iterations: 0,
            shutdown,
        });
        self.poll_drains();
    }

    fn drain_active(&self) -> bool {
        self.has_authority()
            && self.inc.live
            && !self.closed()
            && self
                .inc
                .room
                .as_ref()
                .is_some_and(|r| r.room().dirty_len() > 0 || r.room().pending_len() > 0)
    }

    /// Advances every waiting drain: done when nothing is dirty or pending; else one more
    /// flush (at most [`DRAIN_MAX_ITERATIONS`]).
    pub(super) fn poll_drains(&mut self) {
        loop {
            if self.flushing.drains.is_empty() {
                return;
            }
            if self.closed() {
                // Moved or stopped: nothing more is flushed from here, whatever is still
                // in flight, and no compaction is started; every drain is answered now.
                let result = self.drained();
                for w in core::mem::take(&mut self.flushing.drains) {
                    self.finish_drain(w, result.clone());
                }
                self.drains_done_waiting_for_echo();
                return;
            }
            if self.flushing.in_flight.is_some() || self.flush_held_for_newcomers() {
                return; // the flight settling, or the lmid fetch landing, polls again
            }
            if !self.drain_active() {
                // Quiet: a shutdown waits (briefly, `echo_wait.rs`) for the records of
                // committed flushes still waiting for their echo, then the journal is
                // compacted to what is unconfirmed (nothing, or entries of clients
                // without a durable lmid) before the drain answers, so a hibernated
                // room's journal does not keep its history.
                if self.drain_waits_for_echo() || self.flushing.compact_io.is_some() {
                    return;
                }
                if self.inc.live && self.flushing.compaction_owed() && self.inc.room.is_some() {
                    self.compact_now();
                    if self.flushing.compact_io.is_some() {
                        return;
                    }
                }
                let result = self.drained();
                for w in core::mem::take(&mut self.flushing.drains) {
                    self.finish_drain(w, result.clone());
                }
                self.drains_done_waiting_for_echo();
                return;
            }
            let mut keep = Vec::new();
            for mut w in core::mem::take(&mut self.flushing.drains) {
                w.iterations += 1;
                if w.iterations > DRAIN_MAX_ITERATIONS {
                    let room = self.inc.room.as_ref().map(|r| r.room());
                    let err = DrainError::NotQuiescent {
                        doc: self.cfg.doc_id.clone(),
                        flushes: DRAIN_MAX_ITERATIONS,
                        dirty: room.map_or(0, |r| r.dirty_len()),
                        pending: room.map_or(0, |r| r.pending_len()),
                    };
                    self.finish_drain(w, Err(err));
                } else {
                    keep.push(w);
                }
            }
            self.flushing.drains = keep;
            if self.flushing.drains.is_empty() || self.fire_flush() {
                return;
            }
        }
    }

    /// A drain's answer once nothing more will be flushed: the last committed flush seq,
    /// or — for a room that stopped (moved, shut down, aborted) with dirty keys or
    /// pending mutations — why it is not drained (a drain-before-downgrade must not take
    /// a room that keeps unflushed writes for a drained one).
    pub(super) fn drained(&self) -> Result<u64, DrainError> {
        let room = self.inc.room.as_ref().map(|r| r.room());
        let (dirty, pending) = room.map_or((0, 0), |r| (r.dirty_len(), r.pending_len()));
        // The room's pending mutations and what it left to the journal overlap: the
        // larger is the count of mutations not at the authority.
        let pending = pending.max(self.flushing.left_to_journal);
        if self.closed() && dirty + pending > 0 {
            return Err(DrainError::Stopped {
                doc: self.cfg.doc_id.clone(),
                moved: self.moved,
                dirty,
                pending,
            });
        }
        Ok(self.flushing.last_committed_seq)
    }

    fn finish_drain(&mut self, w: DrainWaiter, result: Result<u64, DrainError>) {
        if let Err(e) = &result {
            self.log(Level::Error, e.to_string());
        }
        if let Some(id) = w.reply {
            self.push(Output::ControlReply {
                id,
                reply: ControlReply::Drained(result),
            });
        }
        if w.shutdown {
            self.finish_shutdown();
        }
    }

    /// Fenced under our epoch: another placement owns the doc. Terminal: every socket
    /// is closed with 4009 `room_moved`.
    pub(super) fn room_moved(&mut self, reason: &str) {
        if self.moved {
            return;
        }
        self.moved = true;
        self.log(Level::Error, format!("room moved: {reason}"));
        self.report_stranded();
        self.close_everything(4009, "room_moved");
        self.poll_drains();
        self.stop(true);
    }

    /// Closes the host: timers, upstream, listeners, every remaining socket (with `code`
    /// and `reason`).
    pub(super) fn close_everything(&mut self, code: u16, reason: &str) {
        self.timers = super::timers::Timers::default();
        self.calls.retries.clear();
        if self.up.link_open || self.up.link > 0 {
            self.up.link_open = false;
            self.push(Output::CloseUpstream);
        }
        if self.phase != Phase::ShuttingDown {
            self.push(Output::StopAccepting);
        }
        let ids: Vec<u64> = self.down.conns.keys().copied().collect();
        for id in ids {
            self.close_conn(id, code, reason, false);
        }
        for id in core::mem::take(&mut self.flushing.waiters) {
            self.push(Output::ControlReply {
                id,
                reply: ControlReply::Flushed,
            });
        }
    }

    /// Shutdown, after its drain: close every socket with 1001 and stop.
    pub(super) fn finish_shutdown(&mut self) {
        if self.phase == Phase::Stopped {
            return;
        }
        self.close_everything(1001, "room shutting down");
        self.log(Level::Info, String::from("shut down"));
        if let Some(id) = self.flushing.shutdown_reply.take() {
            self.push(Output::ControlReply {
                id,
                reply: ControlReply::Stopped,
            });
        }
        self.stop(false);
    }

    /// The host is done: nothing more happens. A start-up still under way is answered
    /// first ([`Output::StartFailed`]), so a driver waiting for it is not left waiting.
    pub(super) fn stop(&mut self, moved: bool) {
        if core::mem::take(&mut self.boot.awaiting_start) {
            let reason = String::from("the room was stopped before its start-up finished");
            self.push(Output::StartFailed { reason });
        }
        self.phase = Phase::Stopped;
        self.push(Output::Stopped { moved });
    }
}

//! Start-up (read the journal's flush records, claim the placement epoch, mint the
//! lease) and, after each seq-0 snapshot (the Node shell's `finishBoot`): enable the write
//! plane, read the journal, settle unconfirmed flush records, probe the durable lmids,
//! replay the journal by re-invoking the mutators, ack everything replayed — then go
//! live.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::ack::Unconfirmed;
use super::authority::{Call, Purpose, Request};
use super::frames::RecordedOutcome;
use super::startup::{Dependency, StartupRetry};
use super::writes::{MutationInput, RunResult};
use super::{
    ApplyResult, AuthorityError, AuthorityReply, Driver, FlushRecord, Host, IoId, JournalContents,
    JournalEntry, Level, Outcome, Output, Phase,
};

/// Where a boot is.
#[derive(Debug)]
enum Stage {
    /// Waiting for the journal read.
    Reading(IoId),
    /// Resubmitting unconfirmed flush records, one at a time.
    Settling,
    /// Confirming a settled flush record (`seq`).
    Confirming(IoId),
    /// Probing the durable lmids.
    Probing,
}

/// The boot of one incarnation, between its seq-0 snapshot and going live.
#[derive(Debug)]
pub(super) struct BootIo {
    stage: Stage,
    /// What the journal held.
    contents: JournalContents,
    /// Flush records still to settle.
    flushes: VecDeque<FlushRecord>,
    /// The record being settled.
    current: Option<FlushRecord>,
    /// The probe's answer.
    lmids: BTreeMap<String, u64>,
    /// Records the authority holds, or may hold, in seq order, to take into the head
    /// once the probe has answered: `(record, fenced)` — answered "applied" or "already
    /// applied" (`false`), or, from an earlier placement, `fenced` (`true`: taken in
    /// only when the probe shows it committed, [`Host::adopt_fenced`]).
    committed: Vec<(FlushRecord, bool)>,
}

/// Start-up's state.
#[derive(Debug, Default)]
pub(super) struct Boot {
    /// The boot-time probe in flight (the lmids of the journal's clients).
    pub(super) io: Option<BootIo>,
    /// The claimed placement epoch (0 without an authority).
    pub(super) placement_epoch: u64,
    /// The start-up I/O in flight.
    pub(super) start_io: Option<IoId>,
    /// Start-up's retries of the epoch claim and the first lease.
    pub(super) retry: StartupRetry,
    /// [`Host::start`] ran and neither [`Output::Started`] nor
    /// [`Output::StartFailed`] followed yet.
    pub(super) awaiting_start: bool,
}

/// Why replaying the journal into a fresh incarnation failed (the incarnation dies).
#[derive(Debug)]
enum ReplayError {
    /// The incarnation's room is gone.
    NoRoom,
    /// Seeding the durable lmids failed.
    Seed(crate::Error),
    /// Re-running or acknowledging a journaled mutation failed.
    Replay(crate::Error),
}

impl core::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ReplayError::NoRoom => f.write_str("no room"),
            ReplayError::Seed(e) => write!(f, "durable seed failed: {e}"),
            ReplayError::Replay(e) => write!(f, "journal replay failed: {e}"),
        }
    }
}

impl Host {
    /// The journal's flush records arrived at start-up: seed the flush stream past them,
    /// then claim the epoch.
    fn on_start_journal(&mut self, result: Result<JournalContents, super::JournalError>) {
        match result {
            Err(e) => self.start_failed(format!("cannot read the journal's flush records: {e}")),
            Ok(contents) => {
                self.flushing.seq = contents.max_flush_seq + 1;
                self.flushing.last_committed_seq = contents.max_flush_seq;
                match &self.cfg.placement {
                    Some(p) => {
                        self.boot.placement_epoch = p.epoch;
                        self.log(
                            Level::Info,
                            format!("placement epoch {} (room-boot)", p.epoch),
                        );
                        self.first_lease();
                    }
                    None => self.call(Purpose::Claim, Request::Claim),
                }
            }
        }
    }

    pub(super) fn on_claimed(&mut self, result: Result<AuthorityReply, AuthorityError>) {
        match result {
            Ok(AuthorityReply::Claimed(epoch)) => {
                self.startup_attempt_succeeded(Dependency::Claim);
                self.boot.placement_epoch = epoch;
                self.log(Level::Info, format!("placement epoch {epoch}"));
                self.push(Output::MintLease);
            }
            Ok(other) => self.start_failed(format!(
                "claiming the placement epoch failed: unexpected reply {other:?}"
            )),
            Err(e) => {
                let transient = matches!(e, AuthorityError::Retryable(_));
                self.startup_attempt_failed(Dependency::Claim, e.to_string(), transient);
            }
        }
    }

    /// Mints the first lease, or takes the one room-boot granted.
    pub(super) fn first_lease(&mut self) {
        match &self.cfg.placement {
            Some(p) => {
                let token = p.lease_token.clone();
                self.on_start_lease(Ok(token));
            }
            None => self.push(Output::MintLease),
        }
    }

    /// The first lease: start-up is done (or failed).
    pub(super) fn on_start_lease(&mut self, result: Result<String, super::MintError>) {
        match result {
            Ok(token) => {
                self.startup_attempt_succeeded(Dependency::Lease);
                self.boot.awaiting_start = false;
                self.up.lease_token = token;
                self.phase = Phase::Running;
                let sweep = self.cfg.sweep_interval_ms.max(1);
                self.timers.sweep = Some(self.now + sweep);
                self.push(Output::Started);
                self.connect_upstream();
            }
            Err(e) => {
                let transient = e.is_transient();
                self.startup_attempt_failed(Dependency::Lease, e.to_string(), transient);
            }
        }
    }

    pub(super) fn start_failed(&mut self, reason: String) {
        self.boot.awaiting_start = false;
        self.phase = super::Phase::Stopped;
        self.push(Output::StartFailed { reason });
    }

    /// The seq-0 snapshot applied: enable writes and start the boot I/O, or go live.
    pub(super) fn finish_boot(&mut self, driver: &mut dyn Driver) {
        let Some(writes) = self.cfg.writes.clone() else {
            self.become_live(driver);
            return;
        };
        let Some(room) = self.inc.room.as_mut() else {
            return;
        };
        let tables: Vec<crate::TableSchema> = room.room().tables().cloned().collect();
        let owned: Vec<&str> = writes.owned_tables.iter().map(String::as_str).collect();
        let enabled = match &writes.scopes {
            Some(scopes) => room.room_mut().enable_writes_v2(scopes, Some(&owned)),
            None => room.room_mut().enable_writes(&owned),
        };
        if let Err(e) = enabled {
            self.violation(&format!("write-plane boot failed: {e}"));
            return;
        }
        if let Err(e) = driver.tables_known(&tables) {
            self.violation(&format!("write-plane boot failed: {e}"));
            return;
        }
        let io = self.io();
        self.boot.io = Some(BootIo {
            stage: Stage::Reading(io),
            contents: JournalContents::default(),
            flushes: VecDeque::new(),
            current: None,
            lmids: BTreeMap::new(),
            committed: Vec::new(),
        });
        self.push(Output::JournalRead { io });
    }

    pub(super) fn on_journal_read(
        &mut self,
        io: IoId,
        result: Result<JournalContents, super::JournalError>,
        driver: &mut dyn Driver,
    ) {
        if self.boot.start_io == Some(io) {
            self.boot.start_io = None;
            return self.on_start_journal(result);
        }
        let Some(boot) = self.boot.io.as_mut() else {
            return; // an incarnation death raced the read
        };
        if !matches!(boot.stage, Stage::Reading(i) if i == io) {
            return;
        }
        match result {
            Err(e) => {
                self.boot.io = None;
                self.violation(&format!("write-plane boot failed: {e}"));
            }
            Ok(contents) => {
                boot.flushes = contents.flushes.iter().cloned().collect();
                boot.contents = contents;
                boot.stage = Stage::Settling;
                if self.cfg.writes.as_ref().is_some_and(|w| w.authority) {
                    self.settle_next(driver);
                } else {
                    self.boot_replay(driver);
                }
            }
        }
    }

    /// Resubmits the next unconfirmed journaled flush, byte-identically, in seq order
    /// (the Node shell's `settleUnconfirmedFlushes`); then the lmid probe.
    fn settle_next(&mut self, driver: &mut dyn Driver) {
        let Some(boot) = self.boot.io.as_mut() else {
            return;
        };
        match boot.flushes.pop_front() {
            Some(record) => {
                let body = record.body.clone();
                boot.current = Some(record);
                boot.stage = Stage::Settling;
                self.call(Purpose::Settle, Request::Apply(body));
            }
            None => {
                // The journal's writers, and those whose ledger rows a fenced record
                // carried (the probe tells whether that record had been committed).
                let fenced = boot.committed.iter().filter(|(_, f)| *f);
                let fenced_writers = fenced.flat_map(|(r, _)| {
                    crate::write::committed_changes(&r.body)
                        .map(|c| crate::write::ledger_advances(&c))
                        .unwrap_or_default()
                        .into_iter()
                        .map(|(client, _)| client)
                });
                let clients: Vec<String> = (boot.contents.entries.iter())
                    .map(|e| e.client_id.clone())
                    .chain(fenced_writers)
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                if clients.is_empty() {
                    return self.boot_replay(driver);
                }
                boot.stage = Stage::Probing;
                self.call(Purpose::Probe, Request::Lmids(clients));
            }
        }
    }

    /// A boot call (settlement or probe) finished.
    pub(super) fn on_boot_call(
        &mut self,
        call: Call,
        result: Result<AuthorityReply, AuthorityError>,
        driver: &mut dyn Driver,
    ) {
        if call.incarnation != self.inc.number || self.boot.io.is_none() || self.closed() {
            return; // the boot this call belonged to is gone
        }
        if call.purpose == Purpose::Probe {
            return self.on_probe(result, driver);
        }
        let Some(record) = self.boot.io.as_mut().and_then(|b| b.current.take()) else {
            return;
        };
        let seq = record.seq;
        match result {
            Err(AuthorityError::Fatal(msg)) => {
                // A same-id/different-body bug: loud, dropped, never a loop; the envelope
                // replay re-derives its effects under a fresh flush id.
                self.log(
                    Level::Error,
                    format!("flush {seq} DROPPED: batch identity mismatch: {msg}"),
                );
            }
            Err(AuthorityError::Retryable(_)) => {
                self.boot.io = None; // stopped
                return;
            }
            Ok(AuthorityReply::Applied(ApplyResult::Ok { applied, .. })) => {
                let how = if applied {
                    "applied"
                } else {
                    "already applied"
                };
                self.log(Level::Info, format!("flush {seq} settled at boot: {how}"));
                // The snapshot this boot started from predates that commit (or the
                // daemon had not seen it yet): its images are taken in before the
                // replay, which the durable lmids will tell to skip its mutations — in
                // seq order with the fenced records of an earlier placement, once the
                // probe has answered.
                if let Some(boot) = self.boot.io.as_mut() {
                    boot.committed.push((record, false));
                    boot.stage = Stage::Settling;
                }
                return self.settle_next(driver);
            }
            Ok(AuthorityReply::Applied(ApplyResult::Conflict { .. })) => {
                self.log(
                    Level::Info,
                    format!("flush {seq} dropped at boot: conflict (replay supersedes)"),
                );
            }
            Ok(AuthorityReply::Applied(ApplyResult::Fenced { .. })) => {
                if record.epoch == self.boot.placement_epoch {
                    // The record stays unconfirmed: committed before the fence or not,
                    // the boot that claims the doc again settles it (the probe tells).
                    // Every journaled entry was acknowledged by an earlier incarnation,
                    // and none of them is confirmed from here.
                    if let Some(boot) = self.boot.io.take() {
                        self.writes.unconfirmed =
                            boot.contents.entries.iter().map(unconfirmed).collect();
                    }
                    return self.room_moved(&format!("flush {seq} fenced under our epoch"));
                }
                // Committed before the restart or not: the probe tells (its record is
                // confirmed, or taken in, before the replay).
                self.log(
                    Level::Debug,
                    format!(
                        "flush {seq} (old epoch {}): fenced; the lmid probe tells whether it \
                         had been committed",
                        record.epoch
                    ),
                );
                if let Some(boot) = self.boot.io.as_mut() {
                    boot.stage = Stage::Settling;
                    boot.committed.push((record, true));
                }
                return self.settle_next(driver);
            }
            Ok(other) => {
                self.log(
                    Level::Error,
                    format!("flush {seq}: unexpected reply {other:?}"),
                );
            }
        }
        let io = self.confirm_boot_flush(seq);
        if let Some(boot) = self.boot.io.as_mut() {
            boot.stage = Stage::Confirming(io);
        }
    }

    /// Takes in a record of an earlier placement that came back `fenced` (a restart
    /// claimed a new epoch) when the probe shows it had been committed: every ledger
    /// advance it carried is at or below its writer's durable lmid. Its mutations are
    /// then skipped by the replay, and a snapshot taken while the daemon lagged behind
    /// that commit lacks its images, as for a flush settled at boot. A record that
    /// carries no ledger advance proves nothing and is left to the daemon's feed.
    ///
    /// Taken in before the replay, in seq order with the records of this placement
    /// that were answered "applied" (a record taken in by an earlier incarnation of
    /// this host waits for its echo, so both kinds can meet at one boot).
    ///
    /// Returns the room's number for the batch when images were taken in (the record is
    /// then confirmed once their echo is in); otherwise the record is confirmed now.
    fn adopt_fenced(
        &mut self,
        record: &FlushRecord,
        durable: &BTreeMap<String, u64>,
    ) -> Option<u64> {
        let Ok(changes) = crate::write::committed_changes(&record.body) else {
            // Unreadable: nothing to take in (said loudly had it been committed).
            self.confirm_record(record.seq);
            return None;
        };
        let advances = crate::write::ledger_advances(&changes);
        let committed = !advances.is_empty()
            && (advances.iter())
                .all(|(client, lmid)| durable.get(client).is_some_and(|d| d >= lmid));
        if committed {
            self.log(
                Level::Info,
                format!(
                    "flush {} (old epoch {}) fenced, but it had been committed: the durable \
                     lmids cover it",
                    record.seq, record.epoch
                ),
            );
            if let Some(flight) = self.adopt_settled(record.seq, &record.body) {
                return Some(flight);
            }
        } else {
            self.log(
                Level::Info,
                format!(
                    "flush {} (old epoch {}) fenced: dropped",
                    record.seq, record.epoch
                ),
            );
        }
        self.confirm_record(record.seq);
        None
    }

    /// Takes a flush settled at boot into the head ([`crate::Room::adopt_committed`]).
    /// A body that does not parse is this room's own record gone bad after the
    /// authority accepted it: said loudly, and the boot goes on (the daemon's feed brings
    /// the images later; a write to one of those keys meanwhile may conflict).
    ///
    /// Returns the room's number for the batch when images were taken in.
    fn adopt_settled(&mut self, seq: u64, body: &str) -> Option<u64> {
        let flight = (self.inc.room.as_ref()).map(|r| r.room().next_flight_id());
        let adopted = crate::write::committed_changes(body).and_then(|changes| {
            let room =
                self.inc.room.as_mut().ok_or_else(|| {
                    crate::Error::new(crate::ErrorCode::Internal, "no room at boot")
                })?;
            room.room_mut().adopt_committed(&changes)
        });
        match adopted {
            Ok(0) => None,
            Ok(n) => {
                if let Some(room) = self.inc.room.as_mut() {
                    room.room_mut().commit_all(); // no subscriber yet: nothing to send
                }
                self.log(
                    Level::Info,
                    format!("flush {seq}: {n} change(s) taken in ahead of the daemon's feed"),
                );
                flight
            }
            Err(e) => {
                self.log(
                    Level::Error,
                    format!("flush {seq}: its journaled body cannot be taken in: {e}"),
                );
                None
            }
        }
    }

    fn confirm_boot_flush(&mut self, seq: u64) -> IoId {
        let io = self.io();
        self.push(Output::JournalConfirmFlush { io, seq });
        io
    }

    /// A journal write that is not an append: a boot confirmation, a flush record or a
    /// confirmation of the write-behind flush, a compaction.
    pub(super) fn on_other_journal_write(
        &mut self,
        io: IoId,
        result: Result<(), super::JournalError>,
        driver: &mut dyn Driver,
    ) {
        let confirming = self
            .boot
            .io
            .as_ref()
            .is_some_and(|b| matches!(b.stage, Stage::Confirming(i) if i == io));
        if confirming {
            if let Err(e) = result {
                self.boot.io = None;
                self.violation(&format!("flush resubmission failed: {e}"));
                return;
            }
            if let Some(boot) = self.boot.io.as_mut() {
                boot.stage = Stage::Settling;
            }
            return self.settle_next(driver);
        }
        self.on_flush_journal_write(io, result, driver);
    }

    fn on_probe(
        &mut self,
        result: Result<AuthorityReply, AuthorityError>,
        driver: &mut dyn Driver,
    ) {
        match result {
            Ok(AuthorityReply::Lmids(lmids)) => {
                if let Some(boot) = self.boot.io.as_mut() {
                    boot.lmids = lmids;
                }
                self.boot_replay(driver);
            }
            Err(AuthorityError::Retryable(_)) => self.boot.io = None, // stopped
            Err(e) => {
                self.boot.io = None;
                let why = format!("durable-lmid probe failed: {}", e.message());
                self.violation(&why);
            }
            Ok(other) => {
                self.boot.io = None;
                let why = format!("durable-lmid probe failed: unexpected reply {other:?}");
                self.violation(&why);
            }
        }
    }

    /// The boot I/O is done: replay, then go live.
    fn boot_replay(&mut self, driver: &mut dyn Driver) {
        let Some(mut boot) = self.boot.io.take() else {
            return;
        };
        // A record taken in is confirmed once its echo is in; the others now.
        let mut taken_in = Vec::new();
        for (record, fenced) in core::mem::take(&mut boot.committed) {
            let flight = if fenced {
                self.adopt_fenced(&record, &boot.lmids)
            } else {
                self.adopt_settled(record.seq, &record.body)
            };
            match flight {
                Some(flight) => taken_in.push((record.seq, flight)),
                None if fenced => {} // `adopt_fenced` confirmed it
                None => self.confirm_record(record.seq),
            }
        }
        if let Err(why) = self.replay(boot.contents, boot.lmids, driver) {
            self.violation(&why.to_string());
            return;
        }
        self.become_live(driver);
        let incarnation = self.inc.number;
        for (seq, flight) in taken_in {
            self.confirm_when_echoed(seq, flight, incarnation);
        }
        self.schedule_flush(); // replay may have left dirty keys / unflushed lmids
    }

    /// The incarnation's room, for the replay.
    fn replay_room(&mut self) -> Result<&mut crate::Room, ReplayError> {
        Ok(self
            .inc
            .room
            .as_mut()
            .ok_or(ReplayError::NoRoom)?
            .room_mut())
    }

    /// Seeds the durable watermarks, re-invokes every journaled mutation, acks them all.
    fn replay(
        &mut self,
        contents: JournalContents,
        lmids: BTreeMap<String, u64>,
        driver: &mut dyn Driver,
    ) -> Result<(), ReplayError> {
        // The clientID → subject bindings, derived here for every journal: those
        // compaction kept, then each entry's subject, the first per client winning. A
        // client bound this way keeps its binding after its connections close.
        let kept = contents
            .bindings
            .iter()
            .map(|(c, s)| (c.as_str(), s.as_str()));
        let stamped = (contents.entries.iter()).map(|e| (e.client_id.as_str(), e.sub.as_str()));
        self.down.seed_bindings(kept.chain(stamped));
        for (client, _) in &contents.bindings {
            self.writes.known_clients.insert(client.clone());
        }
        let seeds: Vec<(String, u64)> = lmids.into_iter().filter(|(_, l)| *l > 0).collect();
        if !seeds.is_empty() {
            let room = self.replay_room()?;
            room.seed_durable(&seeds).map_err(ReplayError::Seed)?;
            room.commit_all(); // drop the (subscriber-less) ledger fan-out
            let list: Vec<String> = seeds.iter().map(|(c, l)| format!("{c}→{l}")).collect();
            self.log(Level::Info, format!("durable seed: {}", list.join(", ")));
        }
        let entries = contents.entries;
        // What an earlier incarnation acknowledged is listed again from the journal.
        self.writes.unconfirmed.clear();
        for entry in &entries {
            self.writes.known_clients.insert(entry.client_id.clone());
            let input = MutationInput {
                client_id: &entry.client_id,
                mid: entry.mid,
                name: &entry.name,
                args_text: Some(&entry.args),
                sub: &entry.sub,
                journaled: entry.outcome,
            };
            let cv = self.next_cv();
            let res = self
                .run_mutation(&input, driver)
                .map_err(ReplayError::Replay)?;
            if !matches!(res, RunResult::Dedup) {
                // Acknowledged again below; confirmed only by a flush.
                if self.has_authority() {
                    self.writes.unconfirmed.push_back(unconfirmed(entry));
                }
                if self.ack_after_flush() {
                    self.writes.hold(&entry.client_id, entry.mid, cv);
                }
            }
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
                self.writes
                    .record_outcome(&entry.client_id, entry.mid, recorded);
                if entry.outcome == Outcome::Applied {
                    self.log(
                        Level::Warn,
                        format!(
                            "replayed APPLIED mutation {}:{} (`{}`) now {kind}s against the \
                             moved base — mid stays burnt, no effects",
                            entry.client_id, entry.mid, entry.name
                        ),
                    );
                }
            }
        }
        if !entries.is_empty() {
            let acks: Vec<(String, u64)> = entries
                .iter()
                .map(|e| (e.client_id.clone(), e.mid))
                .collect();
            let room = self.replay_room()?;
            room.ack(&acks).map_err(ReplayError::Replay)?;
            room.commit_all(); // drop the (subscriber-less) fan-out of the replay
            self.log(
                Level::Info,
                format!(
                    "journal replay: {} mutation(s) re-invoked and acked",
                    entries.len()
                ),
            );
        }
        Ok(())
    }

    /// The incarnation is live: tell the driver, serve the queued subscribes, then the
    /// queued mutations.
    pub(super) fn become_live(&mut self, driver: &mut dyn Driver) {
        self.inc.live = true;
        let boot_id = self.inc.boot_id.clone();
        self.log(Level::Info, format!("live (bootId {boot_id})"));
        self.push(Output::Live { boot_id });
        for c in self.down.conns.values_mut() {
            c.held_subs = 0;
            c.held_mutes = 0;
        }
        for (id, sub) in core::mem::take(&mut self.down.pending_subs) {
            if self.is_open(id) {
                self.handle_subscribe(id, &sub, driver);
            }
        }
        for (id, envelope) in core::mem::take(&mut self.writes.pending_mutes) {
            if self.is_open(id) {
                self.handle_push_mutation(id, envelope, driver);
            }
        }
    }
}

fn unconfirmed(e: &JournalEntry) -> Unconfirmed {
    Unconfirmed {
        client_id: e.client_id.clone(),
        mid: e.mid,
        name: e.name.clone(),
    }
}

//! A committed flush's journal record is confirmed once its echo is in.
//!
//! The room learns what its own committed flush wrote twice: `flushOk` makes the batch's
//! images the base of its keys at once, and upstream echoes them later. Until the echo
//! is in, the daemon lags behind that commit, and an incarnation born meanwhile (the
//! upstream link dropped, the daemon restarted) takes a snapshot that lacks those images
//! while the durable lmids tell its replay to skip the batch's mutations. Its next write
//! of such a key would then be made on the stale image and lost to a CAS conflict.
//!
//! So the record is left unconfirmed until every image it wrote has echoed back: a boot
//! that finds it resubmits it, the authority answers "already applied" (or `fenced`,
//! after a restart, with the probe showing it committed), and the boot takes its images
//! into the head where the snapshot still shows the old ones (`docs/host.md`). An echo
//! can also never come — the daemon netted it into someone else's later change — so a
//! record waits at most [`ECHO_WAIT_MS`], and at most [`MAX_AWAITING_ECHO`] wait at
//! once (the oldest is confirmed first). A record whose incarnation died stays
//! unconfirmed: the next boot settles it.
//!
//! A shutdown's drain that finds the room quiet waits, at most [`DRAIN_ECHO_WAIT_MS`],
//! for the records still waiting, so a box restarted right after its last flushes has
//! nothing to settle at boot. Other drains answer without waiting: a box settling its
//! rooms at start-up drains them one after the other before it is ready, and a room
//! hibernates only after it was idle longer than the echo wait.

use alloc::collections::VecDeque;
use alloc::format;

use super::{Host, IoId, Level, Output};

/// How long a committed flush's confirmation waits for its echo, ms.
pub const ECHO_WAIT_MS: u64 = 30_000;

/// Committed flushes whose confirmation waits for their echo at once.
pub const MAX_AWAITING_ECHO: usize = 64;

/// How long a shutdown's drain that found the room quiet waits for the echoes still to
/// come, ms.
pub const DRAIN_ECHO_WAIT_MS: u64 = 2_000;

/// A committed flush whose record waits for its echo.
#[derive(Debug)]
pub(super) struct AwaitingEcho {
    seq: u64,
    /// The room's number for the batch (what its echoes carry).
    flight: u64,
    incarnation: u64,
    since_ms: u64,
}

/// The records waiting, and the confirmations written for them.
#[derive(Debug, Default)]
pub(super) struct EchoWait {
    awaiting: VecDeque<AwaitingEcho>,
    /// Confirmation writes in flight, by I/O id: the flush seq.
    confirming: alloc::collections::BTreeMap<IoId, u64>,
    /// Until when the drains in progress wait for echoes (set at the first wait).
    drain_deadline: Option<u64>,
}

impl EchoWait {
    /// Committed flushes whose record waits for their echo.
    pub(super) fn len(&self) -> usize {
        self.awaiting.len()
    }
}

impl Host {
    /// Flush `seq` (the room's batch `flight`) of incarnation `incarnation` committed
    /// and settled: its record is confirmed now when nothing of it is still to echo,
    /// otherwise once it is ([`Host::confirm_echoed`]).
    pub(super) fn confirm_when_echoed(&mut self, seq: u64, flight: u64, incarnation: u64) {
        if incarnation != self.inc.number || self.inc.room.is_none() {
            return; // left unconfirmed: the next boot settles it
        }
        self.echo_wait.awaiting.push_back(AwaitingEcho {
            seq,
            flight,
            incarnation,
            since_ms: self.now,
        });
        self.confirm_echoed();
    }

    /// Confirms each waiting record whose batch has fully echoed, or that waited
    /// [`ECHO_WAIT_MS`], or that is the oldest past [`MAX_AWAITING_ECHO`]; forgets those
    /// of a dead incarnation. Called after each upstream batch and at every sweep.
    pub(super) fn confirm_echoed(&mut self) {
        let now = self.now;
        let number = self.inc.number;
        let mut over = self
            .echo_wait
            .awaiting
            .len()
            .saturating_sub(MAX_AWAITING_ECHO);
        let mut due = alloc::vec::Vec::new();
        let Some(awaiting_echo) = self
            .inc
            .room
            .as_ref()
            .map(|r| r.room().flights_awaiting_echo())
        else {
            self.echo_wait.awaiting.clear(); // no room: the next boot settles them
            return;
        };
        self.echo_wait.awaiting.retain(|a| {
            if a.incarnation != number {
                return false;
            }
            let echoed = !awaiting_echo.contains(&a.flight);
            let waited = now.saturating_sub(a.since_ms) >= ECHO_WAIT_MS;
            let evicted = over > 0;
            over = over.saturating_sub(1);
            if echoed || waited || evicted {
                due.push((a.seq, echoed));
                return false;
            }
            true
        });
        let confirmed = !due.is_empty();
        for (seq, echoed) in due {
            if !echoed {
                self.counters.confirmed_unechoed += 1;
                self.log(
                    Level::Debug,
                    format!("flush {seq}: confirmed without its echo (waited long enough)"),
                );
            }
            self.confirm_record(seq);
        }
        if confirmed && !self.flushing.drains.is_empty() {
            self.poll_drains(); // a drain may have waited for these
        }
    }

    /// Whether the drains, having found the room quiet, wait for echoes still to come:
    /// only for a shutdown, while records wait, the upstream link that would bring them
    /// is open, and [`DRAIN_ECHO_WAIT_MS`] has not passed since they began waiting (past
    /// it, they answer and the records stay for the next boot to settle).
    pub(super) fn drain_waits_for_echo(&mut self) -> bool {
        let shutdown = self.flushing.drains.iter().any(|d| d.is_shutdown());
        if !shutdown || self.echo_wait.awaiting.is_empty() || !self.inc.live || !self.up.link_open {
            return false;
        }
        let now = self.now;
        let deadline = *self
            .echo_wait
            .drain_deadline
            .get_or_insert(now + DRAIN_ECHO_WAIT_MS);
        if now < deadline {
            self.timers.drain_echo = Some(deadline);
            return true;
        }
        let waiting = self.echo_wait.awaiting.len();
        self.log(
            Level::Warn,
            format!(
                "shutdown: {waiting} committed flush(es) not echoed by the daemon within \
                 {DRAIN_ECHO_WAIT_MS} ms; their records stay for the next boot to settle"
            ),
        );
        false
    }

    /// The drains are answered: the next ones wait afresh.
    pub(super) fn drains_done_waiting_for_echo(&mut self) {
        self.echo_wait.drain_deadline = None;
        self.timers.drain_echo = None;
    }

    /// Confirms flush `seq`'s journal record (nothing waits for the write; a failure is
    /// said).
    pub(super) fn confirm_record(&mut self, seq: u64) {
        let io = self.io();
        self.echo_wait.confirming.insert(io, seq);
        self.push(Output::JournalConfirmFlush { io, seq });
    }

    /// Whether `io` was a confirmation written here; a failed one is said (the next
    /// boot re-settles that flush).
    pub(super) fn on_echo_confirm_write(
        &mut self,
        io: IoId,
        result: &Result<(), super::JournalError>,
    ) -> bool {
        let Some(seq) = self.echo_wait.confirming.remove(&io) else {
            return false;
        };
        if let Err(e) = result {
            self.log(
                Level::Warn,
                format!(
                    "flush {seq} settled but its journal confirmation failed (the next boot \
                     re-settles it): {e}"
                ),
            );
        }
        true
    }
}

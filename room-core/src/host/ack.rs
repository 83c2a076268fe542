//! When an acknowledged write is *acknowledged* (`docs/fleet.md`, "Acknowledgement
//! modes"), and what a fenced room
//! owes its authors.
//!
//! Every journaled mutation the authority has not confirmed yet waits here as an
//! [`Unconfirmed`] entry, in journal order, until a committed flush raises its client's
//! durable lmid past it.
//!
//! - `ack = "journaled"` (the default): the lmid ack follows the local fsync, so these
//!   entries are already acknowledged. If the room is fenced while it holds some, the
//!   authority may never see them from here: they are reported as **stranded**
//!   ([`Output::Stranded`]) instead of vanishing with the room.
//! - `ack = "flushed"`: the ledger row is still written at journal time (the flush must
//!   carry it, atomically with the data), but the author's progress stays held below the
//!   mutation until the flush carrying both commits. A fenced room therefore owes nobody
//!   anything: its authors never saw an ack and re-send elsewhere.

use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{ConnId, Driver, Host, Level, Output};
use crate::texts::StrandedMutation;

/// A journaled mutation the authority has not confirmed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unconfirmed {
    pub client_id: String,
    pub mid: u64,
    pub name: String,
}

impl Host {
    /// Whether acks wait for the authority's confirmation (`ack = "flushed"`).
    pub(super) fn ack_after_flush(&self) -> bool {
        self.cfg.writes.as_ref().is_some_and(|w| w.ack_after_flush)
    }

    /// The next commit's cv: a hold at this cv keeps back everything a mutation about to
    /// run (and its later ledger row) commits.
    pub(super) fn next_cv(&self) -> u64 {
        self.inc.room.as_ref().map_or(1, |r| r.room().head_cv() + 1)
    }

    /// One `progress` per author, to the connection of its first subscription (in
    /// `subs` order): raises each release point even if no frame reached it. A
    /// connection in `sent` already got this cycle's `progress` (one per drain, as the
    /// published shell sends them).
    pub(super) fn progress_to_authors(
        &mut self,
        authors: &BTreeSet<String>,
        sent: &[ConnId],
        driver: &dyn Driver,
    ) {
        let mut targets: Vec<(&str, ConnId)> = authors
            .iter()
            .filter_map(|a| self.down.first_subscribed_conn(a))
            .filter(|(_, conn)| !sent.contains(conn))
            .collect();
        targets.sort_unstable();
        let targets: Vec<ConnId> = targets.into_iter().map(|(_, conn)| conn).collect();
        for conn in targets {
            self.send_progress(conn, driver);
        }
    }

    /// A flush committed: forget what is durable now; with `ack = "flushed"` this is
    /// the ack — release the authors' holds and raise their progress.
    pub(super) fn on_durable(&mut self, driver: &dyn Driver) {
        let authors = self.release_durable();
        self.progress_to_authors(&authors, &[], driver);
    }

    /// Forgets the journaled mutations a committed flush has made durable; with `ack =
    /// "flushed"` releases their authors' holds up to what is durable and returns those
    /// authors (their progress is the caller's to send). An entry is here only once its
    /// append is done, so a release needs both the append and the flush, whichever came
    /// last.
    pub(super) fn release_durable(&mut self) -> BTreeSet<String> {
        let mut authors: BTreeSet<String> = BTreeSet::new();
        let Some(room) = self.inc.room.as_ref() else {
            return authors;
        };
        let room = room.room();
        self.writes.unconfirmed.retain(|u| {
            let durable = u.mid <= room.durable_lmid(&u.client_id);
            if durable {
                authors.insert(u.client_id.clone());
            }
            !durable
        });
        if !self.ack_after_flush() || authors.is_empty() {
            return BTreeSet::new();
        }
        let marks: Vec<(String, u64)> = authors
            .iter()
            .map(|a| (a.clone(), room.durable_lmid(a)))
            .collect();
        for (a, durable) in marks {
            self.writes.release_holds(&a, durable);
        }
        authors
    }

    /// The room was fenced: with `ack = "journaled"`, every acknowledged entry the
    /// authority never confirmed is stranded here — logged one by one and handed to
    /// the driver, never dropped silently.
    pub(super) fn report_stranded(&mut self) {
        let entries = core::mem::take(&mut self.writes.unconfirmed);
        if entries.is_empty() {
            return;
        }
        self.flushing.left_to_journal += entries.len();
        if self.ack_after_flush() {
            self.log(
                Level::Info,
                format!(
                    "{} journaled mutation(s) were never acknowledged (ack = flushed); their \
                     authors re-send them to the doc's new placement",
                    entries.len()
                ),
            );
            return;
        }
        let doc = self.cfg.doc_id.clone();
        let mut mutations = Vec::with_capacity(entries.len());
        for u in entries {
            self.log(
                Level::Error,
                format!(
                    "stranded mutation: doc {doc} clientID {} mid {} name {} (acknowledged, \
                     never confirmed by the authority; the doc is placed elsewhere now and the \
                     journal keeps it)",
                    u.client_id, u.mid, u.name
                ),
            );
            mutations.push(StrandedMutation {
                doc: doc.clone(),
                client_id: u.client_id,
                mid: u.mid,
                name: u.name,
            });
        }
        self.push(Output::Stranded { mutations });
    }
}

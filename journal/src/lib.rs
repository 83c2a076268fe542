//! # rindle-room-journal
//!
//! The write path's durable sidecar (the published room's `RoomJournal`): journaled mutation
//! envelopes with their recorded outcomes, and journaled flush batches.
//!
//! Implementations: [`memory::MemoryJournal`] (tests, demos) and [`file::FileJournal`]
//! (append-only, checksummed, fsync before returning). One implementation for every
//! face: the server (`rindle-room-smol`) and the Node addon use this crate, so a journal
//! written by one boots the other.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod file;
pub mod group_sync;
pub mod group_writer;
pub mod memory;
mod payload;
mod record;
pub mod salvage;

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;

pub use group_writer::GroupDone;

/// The journal's records are the host's types (room-core): the host outputs them and
/// reads them back at boot.
pub use rindle_room_core::host::{FlushRecord, JournalContents, JournalEntry, Outcome};

/// An append the box's journal writer can make durable ([`Journal::submit_grouped`]).
#[derive(Debug)]
pub enum GroupedWrite {
    /// [`Journal::append`]'s entries.
    Entries(Vec<JournalEntry>),
    /// [`Journal::append_flush`]'s record.
    Flush(FlushRecord),
}

/// A durable journal. Every method but [`Journal::confirm_flush`] is blocking and
/// returns only once its effect is durable (the file journal fsyncs); the runtime calls
/// them off the executor (`smol::unblock`). An `Err` is fatal to the incarnation: an ack
/// that might not survive must never be sent.
pub trait Journal: Send + Sync + 'static {
    /// Appends entries durably, in order.
    fn append(&self, entries: &[JournalEntry]) -> io::Result<()>;
    /// Every entry still journaled, in append order (the boot-time replay source).
    fn replay(&self) -> io::Result<Vec<JournalEntry>>;
    /// Journals one built flush batch before its first send.
    fn append_flush(&self, record: &FlushRecord) -> io::Result<()>;
    /// The authority settled flush `seq`: drop it. Need not be durable when it returns
    /// and must not wait on a disk: a confirmation lost in a crash only makes the next
    /// boot resubmit the flush, which the authority answers as already applied (the
    /// file journal writes it with its next append).
    fn confirm_flush(&self, seq: u64) -> io::Result<()>;
    /// Hands an append to the box's journal writer ([`group_writer`]), which writes it
    /// and calls `done` once a sync covering it finished. `Err` gives both back: this
    /// journal has no box-level writer (the default), and the caller makes the append
    /// itself with [`Journal::append`] or [`Journal::append_flush`].
    #[allow(clippy::type_complexity)]
    fn submit_grouped(
        self: Arc<Self>,
        write: GroupedWrite,
        done: GroupDone,
    ) -> Result<(), (GroupedWrite, GroupDone)> {
        Err((write, done))
    }
    /// Unconfirmed flush records in seq order, and the highest seq ever appended (0 =
    /// none).
    fn replay_flushes(&self) -> io::Result<(Vec<FlushRecord>, u64)>;
    /// The clientID → subject bindings compaction kept for clients whose entries it
    /// dropped, in journal order. The host derives every other binding from the entries'
    /// subjects when it reads the journal at boot, so a journal that never compacts
    /// keeps none. A clientID stays bound to the subject that first wrote under it
    /// across restarts (docs/security.md).
    fn bindings(&self) -> io::Result<Vec<(String, String)>> {
        Ok(Vec::new())
    }
    /// Everything the host reads at boot, in one call: entries, kept bindings,
    /// unconfirmed flush records and the highest flush seq.
    fn read_all(&self) -> io::Result<JournalContents> {
        let (flushes, max_flush_seq) = self.replay_flushes()?;
        Ok(JournalContents {
            entries: self.replay()?,
            bindings: self.bindings()?,
            flushes,
            max_flush_seq,
        })
    }
    /// Drops entries the authority holds durably (`mid <= durable[client]`) and settled
    /// flush records; keeps the highest flush seq. Safe to call at any time.
    fn compact(&self, durable: &BTreeMap<String, u64>) -> io::Result<()>;
}

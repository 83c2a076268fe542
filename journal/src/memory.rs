//! The in-memory journal (the published room's `memoryJournal`): the same semantics as
//! [`FileJournal`](super::file::FileJournal), durable only as long as the process.
//!
//! A [`MemoryJournal`] is a cheap, cloneable handle: every clone shares one journal, so a
//! test can hand the same journal to a second server instance to simulate a process crash
//! (the incarnation dies, the journal survives).

use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use rindle_room_core::host::journal_record::{self, JournalRecord};

use super::{FlushRecord, Journal, JournalEntry};

/// An in-process [`Journal`]: `Mutex`-protected vectors behind an `Arc`.
///
/// Semantics match the file journal exactly: entries replay in append order; a flush
/// record stays until confirmed (re-appending an unconfirmed seq replaces it); the
/// highest flush seq ever appended survives confirmation and compaction; compaction drops
/// entries with `mid <= durable[client]` and keeps everything else in order, and the
/// subject binding of every client it dropped entries of.
#[derive(Clone, Debug, Default)]
pub struct MemoryJournal {
    shared: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// Every journaled entry still live, in append order.
    entries: Vec<JournalEntry>,
    /// Unconfirmed flush records, in append order.
    flushes: Vec<FlushRecord>,
    /// The highest flush seq ever appended (0 = none).
    max_seq: u64,
    /// Bindings of clients whose entries compaction dropped (first per client).
    bindings: Vec<(String, String)>,
    /// Test hook: when set, every mutating call fails (see [`MemoryJournal::set_failing`]).
    failing: bool,
}

impl MemoryJournal {
    /// A new, empty journal.
    pub fn new() -> MemoryJournal {
        MemoryJournal::default()
    }

    /// Test hook: while `failing` is true every mutating call (`append`, `append_flush`,
    /// `confirm_flush`, `compact`) returns an error without effect, like a file journal
    /// whose disk went away. Shared by every clone of the handle.
    pub fn set_failing(&self, failing: bool) {
        self.lock().failing = failing;
    }

    /// How many entries are currently journaled (diagnostics and tests).
    pub fn entry_count(&self) -> usize {
        self.lock().entries.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every mutation below is a single push/retain, so a panic elsewhere while the
        // lock was held cannot have left the state half-updated: recover from poison.
        self.shared
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Locks for a mutation, failing when the test hook says so.
    fn lock_for_write(&self, op: &str) -> io::Result<MutexGuard<'_, State>> {
        let state = self.lock();
        if state.failing {
            return Err(io::Error::other(format!(
                "memory journal: {op} failed (injected failure)"
            )));
        }
        Ok(state)
    }
}

impl Journal for MemoryJournal {
    fn append(&self, entries: &[JournalEntry]) -> io::Result<()> {
        let mut state = self.lock_for_write("append")?;
        state.entries.extend_from_slice(entries);
        Ok(())
    }

    fn replay(&self) -> io::Result<Vec<JournalEntry>> {
        Ok(self.lock().entries.clone())
    }

    fn append_flush(&self, record: &FlushRecord) -> io::Result<()> {
        let mut state = self.lock_for_write("append_flush")?;
        state.flushes.retain(|r| r.seq != record.seq);
        state.flushes.push(record.clone());
        state.max_seq = state.max_seq.max(record.seq);
        Ok(())
    }

    fn confirm_flush(&self, seq: u64) -> io::Result<()> {
        let mut state = self.lock_for_write("confirm_flush")?;
        state.flushes.retain(|r| r.seq != seq);
        Ok(())
    }

    fn replay_flushes(&self) -> io::Result<(Vec<FlushRecord>, u64)> {
        let state = self.lock();
        let mut records = state.flushes.clone();
        records.sort_by_key(|r| r.seq);
        Ok((records, state.max_seq))
    }

    fn compact(&self, durable: &BTreeMap<String, u64>) -> io::Result<()> {
        let mut state = self.lock_for_write("compact")?;
        let bindings = std::mem::take(&mut state.bindings);
        let entries = std::mem::take(&mut state.entries);
        let records: Vec<JournalRecord> = bindings
            .into_iter()
            .map(|(client_id, sub)| JournalRecord::Binding { client_id, sub })
            .chain(entries.into_iter().map(JournalRecord::Entry))
            .collect();
        for record in journal_record::compact(&records, durable) {
            match record {
                JournalRecord::Entry(e) => state.entries.push(e),
                JournalRecord::Binding { client_id, sub } => state.bindings.push((client_id, sub)),
                _ => {}
            }
        }
        Ok(())
    }

    fn bindings(&self) -> io::Result<Vec<(String, String)>> {
        Ok(self.lock().bindings.clone())
    }
}

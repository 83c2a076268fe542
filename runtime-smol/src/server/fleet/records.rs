//! Hibernation records, packed: every hibernated doc's name lives in one arena string,
//! and the index holds offsets, not `String`s.
//!
//! Why: a record outlives its room, and a record allocated on its own lands in the
//! freed memory of some room that just hibernated — one small live allocation per
//! page keeps that page resident, so a box that hibernated 10,000 rooms kept ~4 KiB of
//! RSS per record after trimming. Two allocations for all records (the arena and the
//! index, each grown by doubling) leave the rooms' pages free to hand back.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use rindle_room_core::fleet::HibernationRecord as Record;

/// One record: where its doc's bytes are in the arena.
#[derive(Clone, Copy, Debug)]
struct Entry {
    start: u32,
    len: u32,
    record: Record,
}

/// The hibernated docs and their records.
#[derive(Default)]
pub(crate) struct Records {
    /// Every live entry's doc, back to back (and the garbage of removed ones).
    names: String,
    index: HashTable<Entry>,
    /// Arena bytes no entry points at.
    garbage: usize,
    hasher: std::collections::hash_map::RandomState,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("len", &self.index.len())
            .field("arena_bytes", &self.names.len())
            .finish()
    }
}

impl Records {
    pub fn len(&self) -> usize {
        self.index.len()
    }

    fn name(&self, e: &Entry) -> &str {
        &self.names[e.start as usize..(e.start + e.len) as usize]
    }

    pub fn get(&self, doc: &str) -> Option<Record> {
        let hash = self.hasher.hash_one(doc);
        let names = &self.names;
        self.index
            .find(hash, |e| {
                &names[e.start as usize..(e.start + e.len) as usize] == doc
            })
            .map(|e| e.record)
    }

    /// Records `doc` (replacing its previous record).
    pub fn insert(&mut self, doc: &str, record: Record) {
        self.remove(doc);
        if self.names.len() + doc.len() > u32::MAX as usize {
            self.compact();
        }
        let start = self.names.len() as u32;
        self.names.push_str(doc);
        let entry = Entry {
            start,
            len: doc.len() as u32,
            record,
        };
        let (names, hasher) = (&self.names, &self.hasher);
        let hash = hasher.hash_one(doc);
        self.index.insert_unique(hash, entry, |e| {
            hasher.hash_one(&names[e.start as usize..(e.start + e.len) as usize])
        });
    }

    pub fn remove(&mut self, doc: &str) -> Option<Record> {
        let hash = self.hasher.hash_one(doc);
        let names = &self.names;
        let found = self
            .index
            .find_entry(hash, |e| {
                &names[e.start as usize..(e.start + e.len) as usize] == doc
            })
            .ok()?;
        let (entry, _) = found.remove();
        self.garbage += entry.len as usize;
        if self.garbage > 4096 && self.garbage * 2 > self.names.len() {
            self.compact();
        }
        Some(entry.record)
    }

    /// Every record, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Record)> {
        self.index.iter().map(|e| (self.name(e), &e.record))
    }

    /// Drops the oldest records past `max`, a tenth of `max` more at once (so a box at
    /// its bound scans the records once per many hibernations, not once per each).
    pub fn bound(&mut self, max: usize) {
        if self.len() <= max {
            return;
        }
        let keep = max - max / 10;
        let mut ages: Vec<u64> = self.index.iter().map(|e| e.record.since_ms).collect();
        let drop = self.len() - keep;
        let (_, cutoff, _) = ages.select_nth_unstable(drop - 1);
        let cutoff = *cutoff;
        // Oldest first: everything strictly older, then ties at the cutoff until enough.
        let mut left = drop;
        let mut removed = 0;
        self.index.retain(|e| {
            let go = left > 0 && e.record.since_ms <= cutoff;
            if go {
                left -= 1;
                removed += e.len as usize;
            }
            !go
        });
        self.garbage += removed;
        self.compact();
    }

    /// Rewrites the arena with only the live entries' names.
    fn compact(&mut self) {
        let mut names = String::with_capacity(self.names.len() - self.garbage);
        for e in self.index.iter_mut() {
            let start = names.len() as u32;
            names.push_str(&self.names[e.start as usize..(e.start + e.len) as usize]);
            e.start = start;
        }
        self.names = names;
        self.garbage = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(since_ms: u64) -> Record {
        Record {
            epoch: 1,
            since_ms,
            final_flush_seq: None,
        }
    }

    #[test]
    fn records_are_found_replaced_and_removed_by_doc() {
        let mut r = Records::default();
        for i in 0..1_000u64 {
            r.insert(&format!("deck/{i}"), record(i));
        }
        assert_eq!(r.len(), 1_000);
        assert_eq!(r.get("deck/7").unwrap().since_ms, 7);
        r.insert("deck/7", record(70));
        assert_eq!(r.len(), 1_000);
        assert_eq!(r.get("deck/7").unwrap().since_ms, 70);
        for i in 0..900u64 {
            assert!(r.remove(&format!("deck/{i}")).is_some());
        }
        assert!(r.remove("deck/1").is_none());
        assert_eq!(r.len(), 100);
        // Compaction kept every remaining name right.
        assert!(r.names.len() <= 100 * "deck/999".len() + 4096);
        for i in 900..1_000u64 {
            assert_eq!(r.get(&format!("deck/{i}")).unwrap().since_ms, i);
        }
        let mut docs: Vec<&str> = r.iter().map(|(d, _)| d).collect();
        docs.sort_unstable();
        assert_eq!(docs.len(), 100);
        assert_eq!(docs[0], "deck/900");
    }

    #[test]
    fn past_the_bound_the_oldest_records_go_with_some_headroom() {
        let mut r = Records::default();
        for i in 0..101u64 {
            r.insert(&format!("d{i}"), record(1_000 - i)); // d100 is the oldest
        }
        r.bound(100);
        assert_eq!(r.len(), 90, "a tenth of headroom");
        assert!(r.get("d100").is_none() && r.get("d90").is_none());
        assert!(r.get("d89").is_some() && r.get("d0").is_some());
        r.bound(100);
        assert_eq!(r.len(), 90, "within the bound: untouched");
    }
}

//! The file journal's two ways of saving syncs: a flush confirmation carried by the
//! journal's next write, and the box's journal writer (one thread writing many rooms'
//! appends, one sync covering them).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use rindle_room_smol::journal::file::{read_records, FileJournal, RecordKind};
use rindle_room_smol::journal::group_sync::GroupSync;
use rindle_room_smol::journal::{FlushRecord, GroupedWrite, Journal, JournalEntry};

#[path = "common/journal.rs"]
mod journal_helpers;

fn dir(test: &str) -> PathBuf {
    journal_helpers::fresh_dir("journal_group", test)
}

fn entry(client: &str, mid: u64) -> JournalEntry {
    journal_helpers::applied(client, mid, "note.insert")
}

fn flush(seq: u64) -> FlushRecord {
    FlushRecord {
        seq,
        epoch: 1,
        body: format!(r#"{{"offset":{seq},"changes":[]}}"#),
    }
}

fn kinds(path: &std::path::Path) -> Vec<RecordKind> {
    read_records(path)
        .unwrap()
        .records
        .iter()
        .map(|r| r.kind)
        .collect()
}

fn live_flushes(j: &FileJournal) -> Vec<u64> {
    j.replay_flushes()
        .unwrap()
        .0
        .iter()
        .map(|f| f.seq)
        .collect()
}

#[test]
fn a_confirmation_is_written_with_the_next_append_and_read_at_once() {
    let d = dir("carried");
    let path = d.join("journal");
    let j = FileJournal::open(&path).unwrap();
    j.append_flush(&flush(1)).unwrap();
    j.confirm_flush(1).unwrap();
    // Not on disk yet, but the journal reads as if it were.
    assert_eq!(kinds(&path), [RecordKind::Flush]);
    assert!(live_flushes(&j).is_empty());
    j.append(&[entry("c", 1)]).unwrap();
    assert_eq!(
        kinds(&path),
        [RecordKind::Flush, RecordKind::Confirm, RecordKind::Entry]
    );
    drop(j);
    let j = FileJournal::open(&path).unwrap();
    assert!(live_flushes(&j).is_empty());
    assert_eq!(j.replay().unwrap(), vec![entry("c", 1)]);
}

#[test]
fn a_confirmation_lost_in_a_crash_leaves_its_flush_to_be_resubmitted() {
    let d = dir("lost");
    let path = d.join("journal");
    let j = FileJournal::open(&path).unwrap();
    j.append(&[entry("c", 1)]).unwrap();
    j.append_flush(&flush(1)).unwrap();
    j.confirm_flush(1).unwrap();
    // A crash: nothing runs after this point (no drop, no later write).
    std::mem::forget(j);
    let j = FileJournal::open(&path).unwrap();
    assert_eq!(live_flushes(&j), [1], "the next boot resubmits it");
    assert_eq!(j.replay().unwrap(), vec![entry("c", 1)]);
}

#[test]
fn a_compaction_takes_carried_confirmations_in_and_a_dropped_journal_writes_them() {
    let d = dir("compact");
    let path = d.join("journal");
    let j = FileJournal::open(&path).unwrap();
    j.append(&[entry("c", 1), entry("c", 2)]).unwrap();
    j.append_flush(&flush(1)).unwrap();
    j.confirm_flush(1).unwrap();
    j.compact(&BTreeMap::from([(String::from("c"), 1)]))
        .unwrap();
    std::mem::forget(j); // the compacted file is synced: nothing else needed
    let j = FileJournal::open(&path).unwrap();
    assert!(live_flushes(&j).is_empty());
    assert_eq!(j.replay().unwrap(), vec![entry("c", 2)]);
    assert_eq!(j.replay_flushes().unwrap().1, 1, "the highest seq is kept");

    j.append_flush(&flush(2)).unwrap();
    j.confirm_flush(2).unwrap();
    drop(j);
    let j = FileJournal::open(&path).unwrap();
    assert!(live_flushes(&j).is_empty());
}

/// A group whose sync counts its calls and takes a little while, so appends pile up.
fn counting_group(d: &std::path::Path, syncs: Arc<AtomicU64>, fail: bool) -> Arc<GroupSync> {
    Arc::new(
        GroupSync::with_op(
            d,
            Box::new(move |_| {
                std::thread::sleep(Duration::from_millis(2));
                syncs.fetch_add(1, Ordering::SeqCst);
                if fail {
                    Err(std::io::Error::other("injected sync failure"))
                } else {
                    Ok(())
                }
            }),
        )
        .unwrap(),
    )
}

fn grouped_journal(path: &std::path::Path, group: &Arc<GroupSync>) -> Arc<FileJournal> {
    let mut j = FileJournal::open(path).unwrap();
    assert!(j.sync_through(group.clone()));
    Arc::new(j)
}

/// Submits `write` and returns a receiver of (its outcome, syncs finished by then).
fn submit(
    j: &Arc<FileJournal>,
    write: GroupedWrite,
    syncs: &Arc<AtomicU64>,
) -> mpsc::Receiver<(std::io::Result<()>, u64)> {
    let (tx, rx) = mpsc::channel();
    let syncs = syncs.clone();
    let done = Box::new(move |r| {
        let _ = tx.send((r, syncs.load(Ordering::SeqCst)));
    });
    assert!(j.clone().submit_grouped(write, done).is_ok(), "grouped");
    rx
}

#[test]
fn appends_of_many_journals_share_syncs_and_are_answered_only_after_one() {
    let d = dir("many");
    let syncs = Arc::new(AtomicU64::new(0));
    let group = counting_group(&d, syncs.clone(), false);
    let journals: Vec<_> = (0..20)
        .map(|i| grouped_journal(&d.join(format!("room{i}")), &group))
        .collect();
    let mut answers = Vec::new();
    for round in 0..5u64 {
        for (i, j) in journals.iter().enumerate() {
            let before = syncs.load(Ordering::SeqCst);
            let write = if round == 4 {
                GroupedWrite::Flush(flush(i as u64 + 1))
            } else {
                GroupedWrite::Entries(vec![entry("c", round + 1)])
            };
            answers.push((before, submit(j, write, &syncs)));
        }
    }
    for (before, rx) in answers {
        let (result, after) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        result.unwrap();
        assert!(after > before, "answered after a sync that finished later");
    }
    let total = syncs.load(Ordering::SeqCst);
    assert!(total < 100, "100 appends shared {total} syncs");
    assert_eq!(group.stats().covered, 100);
    drop(journals);
    for i in 0..20u64 {
        let j = FileJournal::open(d.join(format!("room{i}"))).unwrap();
        let mids: Vec<u64> = j.replay().unwrap().iter().map(|e| e.mid).collect();
        assert_eq!(mids, [1, 2, 3, 4]);
        assert_eq!(live_flushes(&j), [i + 1]);
    }
}

#[test]
fn a_confirmation_rides_with_the_next_grouped_append() {
    let d = dir("ride");
    let syncs = Arc::new(AtomicU64::new(0));
    let group = counting_group(&d, syncs.clone(), false);
    let path = d.join("room");
    let j = grouped_journal(&path, &group);
    let rx = submit(&j, GroupedWrite::Flush(flush(1)), &syncs);
    rx.recv_timeout(Duration::from_secs(10)).unwrap().0.unwrap();
    j.confirm_flush(1).unwrap();
    let rx = submit(&j, GroupedWrite::Entries(vec![entry("c", 1)]), &syncs);
    rx.recv_timeout(Duration::from_secs(10)).unwrap().0.unwrap();
    assert_eq!(
        kinds(&path),
        [RecordKind::Flush, RecordKind::Confirm, RecordKind::Entry]
    );
}

#[test]
fn a_failed_box_sync_fails_every_append_it_covered_and_poisons_their_journals() {
    let d = dir("fail");
    let syncs = Arc::new(AtomicU64::new(0));
    let group = counting_group(&d, syncs.clone(), true);
    let journals: Vec<_> = (0..4)
        .map(|i| grouped_journal(&d.join(format!("room{i}")), &group))
        .collect();
    let answers: Vec<_> = journals
        .iter()
        .map(|j| submit(j, GroupedWrite::Entries(vec![entry("c", 1)]), &syncs))
        .collect();
    for rx in answers {
        let err = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap()
            .0
            .unwrap_err();
        assert!(err.to_string().contains("injected sync failure"), "{err}");
    }
    for j in &journals {
        let err = j.append(&[entry("c", 2)]).unwrap_err();
        assert!(err.to_string().contains("refusing writes"), "{err}");
    }
}

#[test]
fn a_journal_without_a_box_sync_is_handed_back_to_append_itself() {
    let d = dir("alone");
    let j = Arc::new(FileJournal::open(d.join("room")).unwrap());
    let back = j
        .clone()
        .submit_grouped(GroupedWrite::Entries(vec![entry("c", 1)]), Box::new(|_| {}));
    assert!(matches!(back, Err((GroupedWrite::Entries(_), _))));
    assert!(j.replay().unwrap().is_empty());
}

/// A small deterministic generator (xorshift64*), so the random sequences below need no
/// dependency and replay by seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// Random sequences of appends, flush records, confirmations and compactions, ended by a
/// clean drop or a crash (nothing after the last call): the reopened journal holds every
/// entry compaction did not drop, every flush never confirmed, and — after a crash —
/// exactly the confirmed flushes whose confirmation no later write carried.
#[test]
fn carried_confirmations_survive_or_are_lost_exactly_as_a_crash_allows() {
    let d = dir("random");
    for seed in 1..=300u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let path = d.join(format!("j{seed}"));
        let j = FileJournal::open(&path).unwrap();
        let (mut mids, mut next_mid, mut next_seq) = (Vec::<u64>::new(), 1u64, 1u64);
        let mut live = std::collections::BTreeSet::<u64>::new();
        // Confirmed since the last write that reached the file: lost by a crash.
        let mut carried = Vec::<u64>::new();
        for _ in 0..rng.below(30) {
            match rng.below(4) {
                0 => {
                    j.append(&[entry("c", next_mid)]).unwrap();
                    mids.push(next_mid);
                    next_mid += 1;
                    carried.clear();
                }
                1 => {
                    j.append_flush(&flush(next_seq)).unwrap();
                    live.insert(next_seq);
                    next_seq += 1;
                    carried.clear();
                }
                2 => {
                    if let Some(&seq) = live.iter().nth(rng.below(live.len() as u64 + 1) as usize) {
                        j.confirm_flush(seq).unwrap();
                        live.remove(&seq);
                        carried.push(seq);
                    }
                }
                _ => {
                    let durable = rng.below(next_mid);
                    j.compact(&BTreeMap::from([(String::from("c"), durable)]))
                        .unwrap();
                    mids.retain(|&m| m > durable);
                    // A carried confirmation makes the compaction write (it is dropped).
                    carried.clear();
                }
            }
        }
        let crash = rng.below(2) == 0;
        if crash {
            std::mem::forget(j);
            live.extend(carried);
        } else {
            drop(j);
        }
        let j = FileJournal::open(&path).unwrap();
        let replayed: Vec<u64> = j.replay().unwrap().iter().map(|e| e.mid).collect();
        assert_eq!(replayed, mids, "seed {seed} (crash: {crash}): entries");
        let (flushes, max) = j.replay_flushes().unwrap();
        let flushes: Vec<u64> = flushes.iter().map(|f| f.seq).collect();
        assert_eq!(
            flushes,
            live.iter().copied().collect::<Vec<_>>(),
            "seed {seed} (crash: {crash}): live flushes"
        );
        assert_eq!(max, next_seq - 1, "seed {seed}: the highest seq");
    }
}

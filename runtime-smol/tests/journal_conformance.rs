//! The `Journal` contract, checked identically against `MemoryJournal` and `FileJournal`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use rindle_room_smol::journal::file::FileJournal;
use rindle_room_smol::journal::memory::MemoryJournal;
use rindle_room_smol::journal::{FlushRecord, Journal, JournalEntry, Outcome};

fn entry(client: &str, mid: u64, outcome: Outcome) -> JournalEntry {
    JournalEntry {
        client_id: client.to_string(),
        mid,
        name: "inc".to_string(),
        args: format!(r#"{{"by":{mid}}}"#),
        sub: "user-1".to_string(),
        outcome,
    }
}

fn flush(seq: u64) -> FlushRecord {
    FlushRecord {
        seq,
        epoch: 7,
        body: format!(r#"{{"offset":{seq},"ops":[]}}"#),
    }
}

fn durable(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|&(c, m)| (c.to_string(), m)).collect()
}

fn seqs(records: &[FlushRecord]) -> Vec<u64> {
    records.iter().map(|r| r.seq).collect()
}

fn fresh_path(test: &str) -> PathBuf {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "journal_conformance-{}-{test}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("room.journal")
}

/// Runs `check` against a memory journal and a fresh file journal.
fn both(test: &str, check: impl Fn(&dyn Journal)) {
    check(&MemoryJournal::new());
    let path = fresh_path(test);
    check(&FileJournal::open(&path).unwrap());
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn empty_journal_replays_nothing() {
    both("empty", |j| {
        assert!(j.replay().unwrap().is_empty());
        assert_eq!(j.replay_flushes().unwrap(), (vec![], 0));
        j.append(&[]).unwrap();
        assert!(j.replay().unwrap().is_empty());
    });
}

#[test]
fn entries_replay_in_append_order_with_outcomes() {
    both("order", |j| {
        let first = vec![
            entry("b", 1, Outcome::Applied),
            entry("a", 1, Outcome::Rejected),
        ];
        let second = vec![
            entry("a", 2, Outcome::Deopt),
            entry("b", 2, Outcome::Applied),
        ];
        j.append(&first).unwrap();
        j.append(&second).unwrap();
        let all: Vec<_> = first.into_iter().chain(second).collect();
        assert_eq!(j.replay().unwrap(), all);
    });
}

#[test]
fn flushes_replay_unconfirmed_in_seq_order_with_max_seq() {
    both("flushes", |j| {
        for seq in [3, 1, 2] {
            j.append_flush(&flush(seq)).unwrap();
        }
        let (records, max) = j.replay_flushes().unwrap();
        assert_eq!(seqs(&records), [1, 2, 3]);
        assert_eq!(records[0], flush(1));
        assert_eq!(max, 3);

        j.confirm_flush(2).unwrap();
        j.confirm_flush(99).unwrap(); // unknown seq: no effect
        assert_eq!(seqs(&j.replay_flushes().unwrap().0), [1, 3]);

        j.confirm_flush(3).unwrap();
        j.confirm_flush(1).unwrap();
        // The max seq survives confirmation of everything.
        assert_eq!(j.replay_flushes().unwrap(), (vec![], 3));
    });
}

#[test]
fn reappending_an_unconfirmed_seq_replaces_it() {
    both("reappend", |j| {
        j.append_flush(&flush(1)).unwrap();
        let mut again = flush(1);
        again.epoch = 8;
        j.append_flush(&again).unwrap();
        assert_eq!(j.replay_flushes().unwrap(), (vec![again], 1));
    });
}

#[test]
fn compaction_drops_settled_entries_and_keeps_order() {
    both("compact", |j| {
        let entries = vec![
            entry("a", 1, Outcome::Applied),
            entry("b", 1, Outcome::Applied),
            entry("a", 2, Outcome::Rejected),
            entry("c", 1, Outcome::Applied),
            entry("b", 2, Outcome::Deopt),
            entry("a", 3, Outcome::Applied),
        ];
        j.append(&entries).unwrap();
        j.append_flush(&flush(1)).unwrap();
        j.append_flush(&flush(2)).unwrap();
        j.confirm_flush(1).unwrap();

        // `c` is absent from the durable map: all of its entries stay.
        j.compact(&durable(&[("a", 2), ("b", 5)])).unwrap();
        assert_eq!(
            j.replay().unwrap(),
            vec![
                entry("c", 1, Outcome::Applied),
                entry("a", 3, Outcome::Applied)
            ]
        );
        assert_eq!(j.replay_flushes().unwrap(), (vec![flush(2)], 2));

        // Compacting again with nothing settled changes nothing.
        j.compact(&durable(&[("a", 2)])).unwrap();
        assert_eq!(j.replay().unwrap().len(), 2);

        j.confirm_flush(2).unwrap();
        j.compact(&durable(&[("a", 3), ("c", 1)])).unwrap();
        assert!(j.replay().unwrap().is_empty());
        assert_eq!(j.replay_flushes().unwrap(), (vec![], 2));

        // Appends after compaction land after the survivors; the seq keeps climbing.
        j.append(&[entry("a", 4, Outcome::Applied)]).unwrap();
        j.append_flush(&flush(3)).unwrap();
        assert_eq!(j.replay().unwrap(), vec![entry("a", 4, Outcome::Applied)]);
        assert_eq!(j.replay_flushes().unwrap(), (vec![flush(3)], 3));
    });
}

#[test]
fn odd_args_and_fields_round_trip_exactly() {
    let odd = [
        r#"{"z":1,"a":2}"#,
        r#"[1e2,123456789012345678901234567890,-0.0]"#,
        r#""just a string""#,
        "null",
        "",
        "not json",
        " {\"padded\":true} ",
        "{\"a\":1}{\"b\":2}",
        "\u{0}\u{1f}\"\\\n\té😀",
    ];
    both("odd", |j| {
        let entries: Vec<_> = odd
            .iter()
            .enumerate()
            .map(|(i, args)| JournalEntry {
                client_id: format!("client \"{i}\"\n"),
                mid: u64::MAX - i as u64,
                name: "näme\u{7}".to_string(),
                args: args.to_string(),
                sub: String::new(),
                outcome: Outcome::Applied,
            })
            .collect();
        j.append(&entries).unwrap();
        assert_eq!(j.replay().unwrap(), entries);
    });
}

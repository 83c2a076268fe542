//! A fleet room's journal names its doc in its first record (docs/fleet.md, "Per-room
//! storage"): written when the journal is created, checked on every open, kept first by
//! compaction.

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::PathBuf;

use rindle_room_smol::journal::file::{read_records, FileJournal, RecordKind};
use rindle_room_smol::journal::{Journal, JournalEntry};

#[path = "common/journal.rs"]
mod journal_helpers;

fn dir(test: &str) -> PathBuf {
    journal_helpers::fresh_dir("journal_doc", test)
}

fn entry(client: &str, mid: u64) -> JournalEntry {
    journal_helpers::applied(client, mid, "addNote")
}

#[test]
fn a_new_journal_starts_with_its_doc_and_reopens_only_for_it() {
    let d = dir("new");
    let path = d.join("journal");
    let j = FileJournal::open_for_doc(&path, "deck/7").unwrap();
    j.append(&[entry("c1", 1)]).unwrap();
    assert_eq!(j.doc().unwrap().as_deref(), Some("deck/7"));
    drop(j);
    let kinds: Vec<RecordKind> = read_records(&path)
        .unwrap()
        .records
        .iter()
        .map(|r| r.kind)
        .collect();
    assert_eq!(kinds, [RecordKind::Doc, RecordKind::Entry]);
    let again = FileJournal::open_for_doc(&path, "deck/7").unwrap();
    assert_eq!(again.replay().unwrap().len(), 1);
    drop(again);
    let before = fs::read(&path).unwrap();
    let err = FileJournal::open_for_doc(&path, "deck/8").err().unwrap();
    assert_eq!(err.kind(), ErrorKind::InvalidData);
    assert!(
        err.to_string().contains("belongs to doc \"deck/7\""),
        "{err}"
    );
    assert_eq!(fs::read(&path).unwrap(), before, "not modified");
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn a_journal_without_a_doc_record_is_not_taken_for_a_room() {
    let d = dir("plain");
    let path = d.join("journal");
    let j = FileJournal::open(&path).unwrap();
    j.append(&[entry("c1", 1)]).unwrap();
    drop(j);
    let err = FileJournal::open_for_doc(&path, "d").err().unwrap();
    assert_eq!(err.kind(), ErrorKind::InvalidData);
    assert!(err.to_string().contains("no doc record"), "{err}");
    let _ = fs::remove_dir_all(&d);
}

#[test]
fn compaction_keeps_the_doc_record_first() {
    let d = dir("compact");
    let path = d.join("journal");
    let j = FileJournal::open_for_doc(&path, "d").unwrap();
    j.append(&[entry("c1", 1), entry("c1", 2), entry("c2", 1)])
        .unwrap();
    j.compact(&BTreeMap::from([("c1".to_string(), 2)])).unwrap();
    drop(j);
    let records = read_records(&path).unwrap().records;
    assert_eq!(records[0].kind, RecordKind::Doc, "{records:?}");
    let j = FileJournal::open_for_doc(&path, "d").unwrap();
    let left: Vec<(String, u64)> = j
        .replay()
        .unwrap()
        .into_iter()
        .map(|e| (e.client_id, e.mid))
        .collect();
    assert_eq!(left, [("c2".to_string(), 1)]);
    let _ = fs::remove_dir_all(&d);
}

//! `FileJournal`: durability across reopen, torn-tail recovery, checksums, compaction
//! crash safety, concurrency, and error reporting. The shared contract is in
//! `journal_conformance.rs`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use rindle_room_smol::journal::file::{
    crc32c, read_records, CorruptJournal, FileJournal, RecordKind, RecoveryReport, FILE_HEADER,
    HEADER_LEN, MAGIC, VERSION,
};
use rindle_room_smol::journal::{FlushRecord, Journal, JournalEntry, Outcome};

/// A fresh directory for one test, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("journal_file-{}-{test}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn entry(client: &str, mid: u64, outcome: Outcome) -> JournalEntry {
    JournalEntry {
        client_id: client.to_string(),
        mid,
        name: "setTitle".to_string(),
        args: format!(r#"{{"id":{mid},"title":"t{mid}"}}"#),
        sub: "sub-1".to_string(),
        outcome,
    }
}

fn flush(seq: u64) -> FlushRecord {
    FlushRecord {
        seq,
        epoch: 3,
        body: format!(r#"{{"offset":{seq},"changes":[{{"table":"t","pk":[1]}}]}}"#),
    }
}

fn seqs(records: &[FlushRecord]) -> Vec<u64> {
    records.iter().map(|r| r.seq).collect()
}

fn durable(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|&(c, m)| (c.to_string(), m)).collect()
}

/// A journal file by hand: the file header, then `records`.
fn hand_file(records: &[u8]) -> Vec<u8> {
    let mut bytes = FILE_HEADER.to_vec();
    bytes.extend_from_slice(records);
    bytes
}

/// Frames `payload` by hand, exactly as the format documents.
fn hand_frame(version: u8, kind: u8, payload: &str) -> Vec<u8> {
    let mut header = vec![MAGIC, version, kind, 0];
    header.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let mut covered = header.clone();
    covered.extend_from_slice(payload.as_bytes());
    header.extend_from_slice(&crc32c(&covered).to_le_bytes());
    header.extend_from_slice(payload.as_bytes());
    header
}

fn file_len(path: &Path) -> u64 {
    fs::metadata(path).unwrap().len()
}

#[test]
fn round_trip_and_replay_after_reopen() {
    let dir = TempDir::new("reopen");
    let path = dir.path("nested/deeper/room.journal"); // parents are created
    let batch1 = vec![
        entry("a", 1, Outcome::Applied),
        entry("a", 2, Outcome::Rejected),
    ];
    let batch2 = vec![entry("b", 1, Outcome::Deopt)];
    {
        let j = FileJournal::open(&path).unwrap();
        assert_eq!(j.recovered(), RecoveryReport::default());
        j.append(&batch1).unwrap();
        j.append_flush(&flush(1)).unwrap();
        j.append(&batch2).unwrap();
        assert_eq!(j.len_bytes().unwrap(), file_len(&path));
    }
    let j = FileJournal::open(&path).unwrap();
    assert_eq!(
        j.recovered(),
        RecoveryReport {
            records: 4,
            truncated_bytes: 0,
            stale_compact_removed: false,
        }
    );
    let all: Vec<_> = batch1.iter().chain(&batch2).cloned().collect();
    assert_eq!(j.replay().unwrap(), all);
    assert_eq!(j.replay_flushes().unwrap(), (vec![flush(1)], 1));
    // And it keeps appending after reopen.
    j.append(&[entry("b", 2, Outcome::Applied)]).unwrap();
    drop(j);
    assert_eq!(FileJournal::open(&path).unwrap().replay().unwrap().len(), 4);
}

#[test]
fn payloads_are_json_shaped_like_the_published_shells_records() {
    let dir = TempDir::new("shape");
    let path = dir.path("room.journal");
    let j = FileJournal::open(&path).unwrap();
    j.append(&[
        entry("a", 1, Outcome::Applied),
        entry("a", 2, Outcome::Rejected),
        entry("a", 3, Outcome::Deopt),
    ])
    .unwrap();
    j.append(&[JournalEntry {
        args: "not json".to_string(),
        ..entry("a", 4, Outcome::Applied)
    }])
    .unwrap();
    j.append_flush(&flush(5)).unwrap();
    j.confirm_flush(5).unwrap();
    drop(j); // writes the confirmation it carried

    let inspection = read_records(&path).unwrap();
    assert_eq!(inspection.valid_len, inspection.file_len);
    let kinds: Vec<_> = inspection.records.iter().map(|r| r.kind).collect();
    use RecordKind::*;
    assert_eq!(kinds, [Entry, Entry, Entry, Entry, Flush, Confirm]);
    let json: Vec<serde_json::Value> = inspection
        .records
        .iter()
        .map(|r| serde_json::from_str(&r.payload).unwrap())
        .collect();
    assert_eq!(
        json[0],
        serde_json::json!({"clientID": "a", "mid": 1, "name": "setTitle",
            "args": {"id": 1, "title": "t1"}, "sub": "sub-1", "outcome": "applied"})
    );
    assert_eq!(json[1]["outcome"], "rejected");
    assert_eq!(json[1]["rejected"], true);
    assert_eq!(json[2]["outcome"], "deopt");
    assert_eq!(json[2]["rejected"], true);
    assert_eq!(json[3]["args"], "not json");
    assert_eq!(json[3]["argsText"], true);
    assert_eq!(json[4]["seq"], 5);
    assert_eq!(json[4]["epoch"], 3);
    assert_eq!(json[4]["body"], flush(5).body);
    assert_eq!(json[5], serde_json::json!({"seq": 5}));
    // Offsets are contiguous frames after the file header.
    let mut offset = FILE_HEADER.len() as u64;
    for record in &inspection.records {
        assert_eq!(record.offset, offset);
        offset += (HEADER_LEN + record.payload.len()) as u64;
    }
    assert_eq!(offset, inspection.file_len);
}

#[test]
fn legacy_entries_read_through_the_seed_outcome_rule() {
    let dir = TempDir::new("legacy");
    let path = dir.path("room.journal");
    let mut bytes = Vec::new();
    for payload in [
        // No outcome, legacy rejected flag: rejected.
        r#"{"clientID":"a","mid":1,"name":"m","args":{"x":1},"sub":"s","rejected":true}"#,
        // No outcome, no flag, no sub (pre-identity-plane): applied, sub "".
        r#"{"clientID":"a","mid":2,"name":"m","args":[1,2]}"#,
        // No outcome, rejected:false: applied.
        r#"{"clientID":"a","mid":3,"name":"m","args":null,"rejected":false}"#,
        // The outcome wins over the legacy flag; unknown fields are ignored.
        r#"{"clientID":"a","mid":4,"name":"m","args":1,"sub":"","outcome":"deopt","rejected":true,"future":{}}"#,
        // Args absent (JSON.stringify drops undefined): null.
        r#"{"clientID":"a","mid":5,"name":"m","sub":""}"#,
    ] {
        bytes.extend(hand_frame(VERSION, 1, payload));
    }
    fs::write(&path, hand_file(&bytes)).unwrap();
    let j = FileJournal::open(&path).unwrap();
    assert_eq!(j.recovered().records, 5);
    let got: Vec<_> = j
        .replay()
        .unwrap()
        .into_iter()
        .map(|e| (e.mid, e.outcome, e.args, e.sub))
        .collect();
    let s = |x: &str| x.to_string();
    assert_eq!(
        got,
        [
            (1, Outcome::Rejected, s(r#"{"x":1}"#), s("s")),
            (2, Outcome::Applied, s("[1,2]"), s("")),
            (3, Outcome::Applied, s("null"), s("")),
            (4, Outcome::Deopt, s("1"), s("")),
            (5, Outcome::Applied, s("null"), s("")),
        ]
    );
}

/// Writes two entry records then `last`, returning the bytes and the offset of `last`.
fn journal_with_last(dir: &TempDir, last: impl FnOnce(&FileJournal)) -> (Vec<u8>, u64) {
    let path = dir.path("source.journal");
    let j = FileJournal::open(&path).unwrap();
    j.append(&[
        entry("a", 1, Outcome::Applied),
        entry("a", 2, Outcome::Rejected),
    ])
    .unwrap();
    let last_offset = j.len_bytes().unwrap();
    last(&j);
    drop(j);
    (fs::read(&path).unwrap(), last_offset)
}

fn check_torn_tail_at_every_offset(dir: &TempDir, bytes: &[u8], last_offset: u64) {
    let path = dir.path("torn.journal");
    for cut in last_offset..bytes.len() as u64 {
        fs::write(&path, &bytes[..cut as usize]).unwrap();
        let j = FileJournal::open(&path).unwrap();
        assert_eq!(
            j.recovered(),
            RecoveryReport {
                records: 2,
                truncated_bytes: cut - last_offset,
                stale_compact_removed: false,
            },
            "cut at {cut}"
        );
        assert_eq!(file_len(&path), last_offset, "cut at {cut}");
        assert_eq!(
            j.replay().unwrap(),
            [
                entry("a", 1, Outcome::Applied),
                entry("a", 2, Outcome::Rejected)
            ]
        );
        assert_eq!(j.replay_flushes().unwrap(), (vec![], 0));
        // The repaired journal appends cleanly after the cut.
        j.append(&[entry("a", 3, Outcome::Applied)]).unwrap();
        drop(j);
        let j = FileJournal::open(&path).unwrap();
        assert_eq!(j.recovered().truncated_bytes, 0);
        assert_eq!(j.replay().unwrap().len(), 3);
    }
    // Uncut: all three records survive.
    fs::write(&path, bytes).unwrap();
    assert_eq!(FileJournal::open(&path).unwrap().recovered().records, 3);
}

#[test]
fn torn_tail_at_every_byte_of_the_last_entry_is_truncated() {
    let dir = TempDir::new("torn-entry");
    let (bytes, last_offset) = journal_with_last(&dir, |j| {
        j.append(&[entry("b", 1, Outcome::Deopt)]).unwrap();
    });
    check_torn_tail_at_every_offset(&dir, &bytes, last_offset);
}

#[test]
fn torn_tail_at_every_byte_of_the_last_flush_record_is_truncated() {
    let dir = TempDir::new("torn-flush");
    let (bytes, last_offset) = journal_with_last(&dir, |j| {
        j.append_flush(&flush(9)).unwrap();
    });
    check_torn_tail_at_every_offset(&dir, &bytes, last_offset);
}

/// Whether flipping the byte at `at` of a record starting at `start` turns it into what
/// a short write leaves: its declared length now runs past the end of the file.
fn flip_looks_short(bytes: &[u8], start: usize, at: usize) -> bool {
    if !(start + 4..start + 8).contains(&at) || bytes[start] != MAGIC {
        return false;
    }
    let len = u32::from_le_bytes(bytes[start + 4..start + 8].try_into().unwrap()) as usize;
    start + HEADER_LEN + len > bytes.len()
}

/// A byte flipped in the last record, which is complete: damage, not a short write —
/// the journal refuses to open and the file is left as it was. Only a flip that makes
/// the record claim more bytes than the file holds reads as a short write (cut).
#[test]
fn a_flipped_byte_anywhere_in_the_last_record_is_damage() {
    let dir = TempDir::new("flip");
    let (bytes, last_offset) = journal_with_last(&dir, |j| {
        j.append(&[entry("b", 1, Outcome::Applied)]).unwrap();
    });
    let path = dir.path("flipped.journal");
    let start = last_offset as usize;
    for at in start..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x20;
        fs::write(&path, &damaged).unwrap();
        match FileJournal::open(&path) {
            Ok(j) => {
                assert!(
                    flip_looks_short(&damaged, start, at),
                    "flip at {at} was cut"
                );
                assert_eq!(j.recovered().records, 2, "flip at {at}");
                assert_eq!(j.replay().unwrap().len(), 2);
            }
            Err(e) => {
                assert!(!flip_looks_short(&damaged, start, at), "flip at {at}: {e}");
                let c = e
                    .get_ref()
                    .and_then(|e| e.downcast_ref::<CorruptJournal>())
                    .unwrap_or_else(|| panic!("flip at {at}: {e}"));
                assert_eq!(
                    (c.offset, c.records_after),
                    (last_offset, 0),
                    "flip at {at}"
                );
                assert!(e.to_string().contains("fails its checksum"), "{e}");
                assert_eq!(fs::read(&path).unwrap(), damaged, "flip at {at}: untouched");
            }
        }
    }
}

#[test]
fn corruption_mid_file_refuses_to_open_and_leaves_the_file_alone() {
    let dir = TempDir::new("mid");
    let path = dir.path("room.journal");
    let j = FileJournal::open(&path).unwrap();
    j.append(&[entry("a", 1, Outcome::Applied)]).unwrap();
    let second = j.len_bytes().unwrap();
    j.append(&[entry("a", 2, Outcome::Applied)]).unwrap();
    j.append(&[entry("a", 3, Outcome::Applied)]).unwrap();
    drop(j);
    let mut bytes = fs::read(&path).unwrap();
    bytes[second as usize + HEADER_LEN + 3] ^= 1;
    fs::write(&path, &bytes).unwrap();
    let err = FileJournal::open(&path).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    let corrupt = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<CorruptJournal>())
        .expect("a CorruptJournal error");
    assert_eq!(corrupt.offset, second);
    assert_eq!(corrupt.records_after, 1);
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains(&format!("byte {second}")), "{text}");
    assert!(text.contains("1 intact record(s)"), "{text}");
    assert!(text.contains("rindle-room journal salvage"), "{text}");
    assert_eq!(
        fs::read(&path).unwrap(),
        bytes,
        "the file is never modified"
    );
}

/// One bit flipped at each of 20 positions spread over a multi-record journal: the
/// journal refuses to open, names the damaged record and the records after it, and leaves
/// the file as it was (a complete last record that fails its checksum is damage too); the
/// salvaged copy holds every record but the damaged one. Only a flip that makes the last
/// record claim more bytes than the file holds reads as a short write and is cut. Never
/// a silent loss.
#[test]
fn a_flipped_bit_is_damage_unless_it_looks_like_a_short_write() {
    let dir = TempDir::new("bits");
    let path = dir.path("room.journal");
    let j = FileJournal::open(&path).unwrap();
    let mut starts = Vec::new();
    for mid in 1..=60u64 {
        starts.push(j.len_bytes().unwrap());
        if mid % 10 == 0 {
            j.append_flush(&flush(mid / 10)).unwrap();
        } else {
            let client = ["a", "b", "c"][(mid % 3) as usize];
            j.append(&[entry(client, mid, Outcome::Applied)]).unwrap();
        }
    }
    drop(j);
    let original = fs::read(&path).unwrap();
    let total = starts.len() as u64;
    let last = *starts.last().unwrap();
    let damaged_path = dir.path("damaged.journal");
    for i in 0..20u64 {
        // Spread over the records, the last one included (i = 19 lands in it).
        let head = FILE_HEADER.len() as u64;
        let at = (head + i * (original.len() as u64 - head - 1) / 19) as usize;
        let bit = 1u8 << (i % 8);
        let mut bytes = original.clone();
        bytes[at] ^= bit;
        fs::write(&damaged_path, &bytes).unwrap();
        let hit = starts.iter().rposition(|&s| s as usize <= at).unwrap() as u64;
        match FileJournal::open(&damaged_path) {
            Ok(j) => {
                assert_eq!(
                    hit,
                    total - 1,
                    "flip at {at}: only the last record may be cut"
                );
                assert!(flip_looks_short(&bytes, last as usize, at), "flip at {at}");
                assert_eq!(j.recovered().records, total - 1, "flip at {at}");
                assert_eq!(j.recovered().truncated_bytes, original.len() as u64 - last);
                assert_eq!(file_len(&damaged_path), last);
            }
            Err(e) => {
                let c = e
                    .get_ref()
                    .and_then(|e| e.downcast_ref::<CorruptJournal>())
                    .unwrap_or_else(|| panic!("flip at {at}: {e}"));
                assert_eq!(c.offset, starts[hit as usize], "flip at {at}");
                assert_eq!(c.records_after, total - 1 - hit, "flip at {at}");
                assert_eq!(fs::read(&damaged_path).unwrap(), bytes, "flip at {at}");
                // The operator's way out: check, then salvage to a new file.
                let report = rindle_room_smol::journal::salvage::check(&damaged_path).unwrap();
                assert_eq!(report.intact(), total - 1, "flip at {at}: {report}");
                assert!(!report.is_clean() && !report.is_torn_tail_only());
                let out = dir.path(&format!("salvaged-{i}.journal"));
                rindle_room_smol::journal::salvage::salvage(&damaged_path, &out).unwrap();
                let j = FileJournal::open(&out).expect("the salvaged copy opens");
                assert_eq!(j.recovered().records, total - 1);
                assert_eq!(j.recovered().truncated_bytes, 0);
            }
        }
    }
}

#[test]
fn salvage_never_writes_in_place_or_over_a_file() {
    let dir = TempDir::new("salvage");
    let path = dir.path("room.journal");
    let j = FileJournal::open(&path).unwrap();
    j.append(&[entry("a", 1, Outcome::Applied)]).unwrap();
    drop(j);
    let salvage = rindle_room_smol::journal::salvage::salvage;
    assert!(salvage(&path, &path).is_err());
    let existing = dir.path("existing");
    fs::write(&existing, b"keep me").unwrap();
    assert!(salvage(&path, &existing).is_err());
    assert_eq!(fs::read(&existing).unwrap(), b"keep me");
    let report = rindle_room_smol::journal::salvage::check(&path).unwrap();
    assert!(report.is_clean(), "{report}");
}

/// After the last intact record: zeroes (the file grew, its data never reached the
/// disk) and a record cut short are torn tails, cut; other bytes are damage, refused
/// with the file left alone.
#[test]
fn zeroed_or_short_tails_are_truncated_and_garbage_is_refused() {
    let dir = TempDir::new("garbage");
    let path = dir.path("room.journal");
    let j = FileJournal::open(&path).unwrap();
    j.append(&[entry("a", 1, Outcome::Applied)]).unwrap();
    let good = j.len_bytes().unwrap();
    drop(j);
    let intact = fs::read(&path).unwrap()[..good as usize].to_vec();
    let mut short = hand_frame(VERSION, 1, r#"{"clientID":"a","mid":2}"#);
    short.truncate(short.len() - 3);
    for tail in [vec![0u8; 4096], vec![MAGIC], vec![MAGIC, VERSION, 1], short] {
        let mut bytes = intact.clone();
        bytes.extend_from_slice(&tail);
        fs::write(&path, &bytes).unwrap();
        let j = FileJournal::open(&path).unwrap();
        assert_eq!(j.recovered().truncated_bytes, tail.len() as u64);
        assert_eq!(j.replay().unwrap().len(), 1);
    }
    let mut bytes = intact.clone();
    bytes.extend_from_slice(b"garbage after a crash");
    fs::write(&path, &bytes).unwrap();
    let err = FileJournal::open(&path).unwrap_err();
    assert!(
        err.get_ref()
            .and_then(|e| e.downcast_ref::<CorruptJournal>())
            .is_some(),
        "{err}"
    );
    assert_eq!(fs::read(&path).unwrap(), bytes, "untouched");
}

#[test]
fn checksum_valid_but_unreadable_records_are_errors_not_truncations() {
    let dir = TempDir::new("unreadable");
    let path = dir.path("room.journal");
    let cases = [
        (hand_frame(VERSION + 1, 1, "{}"), "version"),
        (hand_frame(VERSION, 42, "{}"), "kind"),
        (
            hand_frame(
                VERSION,
                1,
                r#"{"clientID":"a","mid":1,"name":"m","args":1,"outcome":"maybe"}"#,
            ),
            "outcome",
        ),
        (hand_frame(VERSION, 2, r#"{"seq":"one"}"#), "undecodable"),
    ];
    for (record, what) in cases {
        let bytes = hand_file(&record);
        fs::write(&path, &bytes).unwrap();
        let err = FileJournal::open(&path).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{what}");
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains(what), "{msg}");
        // Nothing was cut.
        assert_eq!(fs::read(&path).unwrap(), bytes);
    }
}

#[test]
fn flush_records_survive_reopen_and_compaction_in_seq_order() {
    let dir = TempDir::new("flush");
    let path = dir.path("room.journal");
    let j = FileJournal::open(&path).unwrap();
    for seq in [2, 1, 4, 3] {
        j.append_flush(&flush(seq)).unwrap();
    }
    j.confirm_flush(3).unwrap();
    drop(j);

    let j = FileJournal::open(&path).unwrap();
    let (records, max) = j.replay_flushes().unwrap();
    assert_eq!((seqs(&records), max), (vec![1, 2, 4], 4));
    assert_eq!(records[2], flush(4));

    j.confirm_flush(4).unwrap(); // the max seq is now confirmed
    let before = j.len_bytes().unwrap();
    j.compact(&BTreeMap::new()).unwrap();
    assert!(j.len_bytes().unwrap() < before);
    assert_eq!(j.replay_flushes().unwrap(), (vec![flush(1), flush(2)], 4));
    drop(j);

    let j = FileJournal::open(&path).unwrap();
    assert_eq!(j.replay_flushes().unwrap(), (vec![flush(1), flush(2)], 4));
    j.confirm_flush(1).unwrap();
    j.confirm_flush(2).unwrap();
    j.compact(&BTreeMap::new()).unwrap();
    // Only the snapshot of the max seq is left.
    let kinds: Vec<_> = read_records(&path)
        .unwrap()
        .records
        .iter()
        .map(|r| r.kind)
        .collect();
    assert_eq!(kinds, [RecordKind::Snapshot]);
    drop(j);

    let j = FileJournal::open(&path).unwrap();
    assert_eq!(j.replay_flushes().unwrap(), (vec![], 4));
    // Compacting again keeps it; new seqs continue above it.
    j.compact(&BTreeMap::new()).unwrap();
    assert_eq!(j.replay_flushes().unwrap(), (vec![], 4));
    j.append_flush(&flush(5)).unwrap();
    j.confirm_flush(5).unwrap();
    j.compact(&BTreeMap::new()).unwrap();
    drop(j);
    assert_eq!(
        FileJournal::open(&path).unwrap().replay_flushes().unwrap(),
        (vec![], 5)
    );
}

#[test]
fn compaction_keeps_unsettled_entries_in_order_across_reopen() {
    let dir = TempDir::new("compact");
    let path = dir.path("room.journal");
    let j = FileJournal::open(&path).unwrap();
    let mut expected = Vec::new();
    for mid in 1..=50 {
        for client in ["a", "b", "c"] {
            let e = entry(client, mid, Outcome::Applied);
            j.append(std::slice::from_ref(&e)).unwrap();
            let settled = match client {
                "a" => mid <= 40,
                "b" => mid <= 10,
                _ => false, // `c` has no durable lmid yet
            };
            if !settled {
                expected.push(e);
            }
        }
        if mid == 25 {
            j.append_flush(&flush(1)).unwrap();
        }
    }
    let before = j.len_bytes().unwrap();
    j.compact(&durable(&[("a", 40), ("b", 10), ("z", 99)]))
        .unwrap();
    assert!(j.len_bytes().unwrap() < before);
    assert_eq!(j.len_bytes().unwrap(), file_len(&path));
    assert_eq!(j.replay().unwrap(), expected);
    assert_eq!(j.replay_flushes().unwrap(), (vec![flush(1)], 1));
    // The unconfirmed flush record keeps its place among the entries.
    let inspection = read_records(&path).unwrap();
    let flush_at = inspection
        .records
        .iter()
        .position(|r| r.kind == RecordKind::Flush)
        .unwrap();
    let entries_before_flush = expected.iter().filter(|e| e.mid <= 25).count();
    // Record 0 is the max-seq snapshot, then one binding record per client seen.
    assert_eq!(inspection.records[0].kind, RecordKind::Snapshot);
    let kinds: Vec<RecordKind> = inspection.records[1..4].iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [RecordKind::Binding; 3]);
    assert_eq!(flush_at, 4 + entries_before_flush);
    // Every client stays bound to its subject, the ones whose entries all went too.
    let bound: Vec<(String, String)> = j.bindings().unwrap().into_iter().take(3).collect();
    let want: Vec<(String, String)> = ["a", "b", "c"]
        .iter()
        .map(|c| (c.to_string(), entry(c, 1, Outcome::Applied).sub))
        .collect();
    assert_eq!(bound, want);

    // Nothing settled: compaction leaves the file alone.
    let len = j.len_bytes().unwrap();
    j.compact(&durable(&[("a", 40)])).unwrap();
    assert_eq!(j.len_bytes().unwrap(), len);
    drop(j);
    let j = FileJournal::open(&path).unwrap();
    assert_eq!(j.replay().unwrap(), expected);
    assert!(!dir.path("room.journal.compact").exists());
}

#[test]
fn a_stray_compaction_file_from_a_crash_is_removed_and_ignored() {
    let dir = TempDir::new("stray");
    let path = dir.path("room.journal");
    let stray = dir.path("room.journal.compact");
    let all = vec![
        entry("a", 1, Outcome::Applied),
        entry("a", 2, Outcome::Applied),
        entry("b", 1, Outcome::Applied),
    ];
    {
        let j = FileJournal::open(&path).unwrap();
        j.append(&all).unwrap();
    }
    // Crash after the compacted file was written and synced, before the rename: build a
    // real compacted file from a copy and leave it next to the original.
    let copy = dir.path("copy.journal");
    fs::copy(&path, &copy).unwrap();
    {
        let j = FileJournal::open(&copy).unwrap();
        j.compact(&durable(&[("a", 2)])).unwrap();
    }
    fs::rename(&copy, &stray).unwrap();
    let j = FileJournal::open(&path).unwrap();
    assert!(j.recovered().stale_compact_removed);
    assert!(!stray.exists());
    assert_eq!(j.replay().unwrap(), all); // the original is authoritative
    drop(j);

    // Crash mid-write of the compacted file: a torn `.compact`.
    fs::write(&stray, [MAGIC, VERSION, 1]).unwrap();
    let j = FileJournal::open(&path).unwrap();
    assert!(j.recovered().stale_compact_removed);
    assert!(!stray.exists());
    assert_eq!(j.replay().unwrap(), all);

    // Crash after the rename: the compacted file is the journal, and it is complete.
    j.compact(&durable(&[("a", 2)])).unwrap();
    drop(j);
    let j = FileJournal::open(&path).unwrap();
    assert!(!j.recovered().stale_compact_removed);
    assert_eq!(j.replay().unwrap(), [entry("b", 1, Outcome::Applied)]);
}

#[test]
fn concurrent_appends_from_two_threads_do_not_interleave_within_a_batch() {
    let dir = TempDir::new("threads");
    let path = dir.path("room.journal");
    let j = FileJournal::open(&path).unwrap();
    const BATCHES: u64 = 40;
    const SIZE: u64 = 7;
    std::thread::scope(|s| {
        for t in ["t0", "t1"] {
            let j = &j;
            s.spawn(move || {
                for batch in 0..BATCHES {
                    let entries: Vec<_> = (0..SIZE)
                        .map(|i| entry(t, batch * SIZE + i + 1, Outcome::Applied))
                        .collect();
                    j.append(&entries).unwrap();
                    if batch % 10 == 0 {
                        j.append_flush(&flush(batch + 1)).unwrap();
                    }
                }
            });
        }
    });
    drop(j);
    let all = FileJournal::open(&path).unwrap().replay().unwrap();
    assert_eq!(all.len() as u64, 2 * BATCHES * SIZE);
    for batch in all.chunks(SIZE as usize) {
        assert!(batch.iter().all(|e| e.client_id == batch[0].client_id));
        assert_eq!(batch[0].mid % SIZE, 1);
        assert!(batch.windows(2).all(|w| w[1].mid == w[0].mid + 1));
    }
}

#[test]
fn large_records_round_trip() {
    let dir = TempDir::new("large");
    let path = dir.path("room.journal");
    let body = format!(r#"{{"rows":"{}"}}"#, "x".repeat(1 << 20));
    let record = FlushRecord {
        seq: 1,
        epoch: 1,
        body,
    };
    let j = FileJournal::open(&path).unwrap();
    j.append_flush(&record).unwrap();
    drop(j);
    assert_eq!(
        FileJournal::open(&path).unwrap().replay_flushes().unwrap(),
        (vec![record], 1)
    );
}

#[test]
fn open_errors_name_the_path() {
    let dir = TempDir::new("errors");
    // The parent is a regular file.
    let blocker = dir.path("blocker");
    fs::write(&blocker, b"").unwrap();
    let under_file = blocker.join("room.journal");
    let msg = FileJournal::open(&under_file).unwrap_err().to_string();
    assert!(msg.contains(&blocker.display().to_string()), "{msg}");
    // The journal path is a directory.
    let is_dir = dir.path("a-directory");
    fs::create_dir_all(&is_dir).unwrap();
    let msg = FileJournal::open(&is_dir).unwrap_err().to_string();
    assert!(msg.contains(&is_dir.display().to_string()), "{msg}");
    // Inspection too.
    let missing = dir.path("missing.journal");
    let msg = read_records(&missing).unwrap_err().to_string();
    assert!(msg.contains(&missing.display().to_string()), "{msg}");
}

#[test]
fn a_failed_append_is_an_error_naming_the_path_and_poisons_the_journal() {
    // /dev/full accepts opens and fails every write with ENOSPC.
    let full = Path::new("/dev/full");
    if !full.exists() {
        eprintln!("skipped: no /dev/full");
        return;
    }
    let j = match FileJournal::open(full) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("skipped: cannot open /dev/full: {e}");
            return;
        }
    };
    let err = j.append(&[entry("a", 1, Outcome::Applied)]).unwrap_err();
    assert!(err.to_string().contains("/dev/full"), "{err}");
    assert!(err.to_string().contains("append"), "{err}");
    // Poisoned: later writes fail without touching the file.
    let err = j.confirm_flush(1).unwrap_err();
    assert!(err.to_string().contains("earlier failure"), "{err}");
    assert!(j.compact(&BTreeMap::new()).is_err());
}

#[test]
fn a_foreign_file_is_refused_and_left_alone() {
    let dir = TempDir::new("foreign");
    // Anything that does not start with the file header — a record of a journal
    // without it included, and a file whose first byte is a record's magic — is not a
    // journal: refused, never truncated.
    let random: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut magic_first = vec![MAGIC];
    magic_first.extend_from_slice(&random);
    for (name, bytes) in [
        ("text", b"hello\nworld\n".to_vec()),
        ("zeros", vec![0u8; 4096]),
        ("random", random.clone()),
        ("magic-first", magic_first),
        (
            "headerless-record",
            hand_frame(VERSION, 1, r#"{"clientID":"a","mid":1}"#),
        ),
    ] {
        let path = dir.path(name);
        fs::write(&path, &bytes).unwrap();
        let err = FileJournal::open(&path).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidData, "{name}");
        assert!(
            err.to_string().contains("not a rindle-room journal"),
            "{name}: {err}"
        );
        assert_eq!(fs::read(&path).unwrap(), bytes, "{name} is untouched");
    }
    // A journal whose creation was cut short (a prefix of the header) holds no record:
    // it is completed and opens empty.
    let path = dir.path("header-cut");
    fs::write(&path, &FILE_HEADER[..5]).unwrap();
    let j = FileJournal::open(&path).unwrap();
    assert_eq!(j.recovered().records, 0);
    drop(j);
    assert_eq!(fs::read(&path).unwrap(), FILE_HEADER);
    // The inspection tools refuse what is not a journal, and what is not a file.
    let text = dir.path("text");
    assert!(rindle_room_smol::journal::salvage::check(&text).is_err());
    let out = dir.path("salvaged-text");
    assert!(rindle_room_smol::journal::salvage::salvage(&text, &out).is_err());
    assert!(!out.exists(), "nothing was created");
    let fifo = dir.path("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let err = rindle_room_smol::journal::salvage::check(&fifo).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        assert!(FileJournal::open(&fifo).is_err());
        assert!(rindle_room_smol::journal::salvage::salvage(&fifo, dir.path("s2")).is_err());
    }
}

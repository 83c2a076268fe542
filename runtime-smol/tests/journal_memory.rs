//! `MemoryJournal`-specific behavior: shared handles and the failure hook. The shared
//! contract is in `journal_conformance.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use rindle_room_smol::journal::memory::MemoryJournal;
use rindle_room_smol::journal::{FlushRecord, Journal, JournalEntry, Outcome};

fn entry(mid: u64) -> JournalEntry {
    JournalEntry {
        client_id: "c".to_string(),
        mid,
        name: "m".to_string(),
        args: "{}".to_string(),
        sub: String::new(),
        outcome: Outcome::Applied,
    }
}

#[test]
fn a_clone_survives_the_first_handle_like_a_crash() {
    let journal = MemoryJournal::new();
    let first_incarnation: Arc<dyn Journal> = Arc::new(journal.clone());
    first_incarnation.append(&[entry(1), entry(2)]).unwrap();
    first_incarnation
        .append_flush(&FlushRecord {
            seq: 1,
            epoch: 1,
            body: "{}".to_string(),
        })
        .unwrap();
    drop(first_incarnation); // the "process" dies

    let second_incarnation: Arc<dyn Journal> = Arc::new(journal.clone());
    assert_eq!(
        second_incarnation.replay().unwrap(),
        vec![entry(1), entry(2)]
    );
    assert_eq!(second_incarnation.replay_flushes().unwrap().1, 1);
    assert_eq!(journal.entry_count(), 2);
}

#[test]
fn the_failure_hook_fails_every_mutation_without_effect() {
    let journal = MemoryJournal::new();
    journal.append(&[entry(1)]).unwrap();
    journal.set_failing(true);
    assert!(journal.append(&[entry(2)]).is_err());
    assert!(journal
        .append_flush(&FlushRecord {
            seq: 1,
            epoch: 1,
            body: String::new(),
        })
        .is_err());
    assert!(journal.confirm_flush(1).is_err());
    assert!(journal.compact(&BTreeMap::new()).is_err());
    // Reads still work and show nothing changed.
    assert_eq!(journal.replay().unwrap(), vec![entry(1)]);
    assert_eq!(journal.replay_flushes().unwrap(), (vec![], 0));
    journal.set_failing(false);
    journal.append(&[entry(2)]).unwrap();
    assert_eq!(journal.replay().unwrap(), vec![entry(1), entry(2)]);
}

#[test]
fn concurrent_batches_are_not_interleaved() {
    let journal = MemoryJournal::new();
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let journal = journal.clone();
            s.spawn(move || {
                for batch in 0..100u64 {
                    let entries: Vec<_> = (1..=10)
                        .map(|i| JournalEntry {
                            client_id: format!("t{t}"),
                            ..entry(batch * 10 + i)
                        })
                        .collect();
                    journal.append(&entries).unwrap();
                }
            });
        }
    });
    let all = journal.replay().unwrap();
    assert_eq!(all.len(), 2000);
    for batch in all.chunks(10) {
        assert!(batch.iter().all(|e| e.client_id == batch[0].client_id));
        assert_eq!(batch[0].mid % 10, 1);
        assert!(batch.windows(2).all(|w| w[1].mid == w[0].mid + 1));
    }
}

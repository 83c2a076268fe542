//! Per-room durability in fleet mode (docs/fleet.md, "Per-room storage", "Acknowledgement
//! modes"): journals under the data directory, a restarted box that settles acknowledged
//! writes before it is ready, and writes stranded by a placement that moved — kept, logged
//! and reported.

mod common;

use std::path::PathBuf;

use common::api::{FakeApi, SHELL_SECRET};
use common::fleet::*;
use common::*;
use serde_json::{json, Value};

fn data_dir(test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fleet_durability-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

const WRITES: &str = "[writes]\nowned_tables = [\"note\", \"tally\"]\n";

async fn fakes() -> (FakeApi, FakeRindled, FakeAuthority) {
    let rindled = FakeRindled::notes().await;
    let api = FakeApi::start(&rindled.ws_url).await;
    let authority = FakeAuthority::start().await;
    api.state.lock().unwrap().authority = Some(authority.clone());
    (api, rindled, authority)
}

#[test]
fn a_restarted_box_settles_acknowledged_writes_before_it_is_ready() {
    smol::block_on(within(async {
        let dir = data_dir("settle");
        let extra = format!("data_dir = \"{}\"", dir.display());
        let (api, rindled, authority) = fakes().await;
        authority.set_down(true);
        let one = start_box(api.clone(), rindled.clone(), SHELL_SECRET, &extra, WRITES).await;
        let mut c = writer(one.server.port(), "deck/1", "c1", "u1").await;
        c.send(&add_note("c1", 1, 10)).await;
        acked(&mut c, 1).await;
        one.server.abort().await;
        let room_dirs: Vec<_> = std::fs::read_dir(dir.join("rooms")).unwrap().collect();
        assert_eq!(room_dirs.len(), 1);
        assert_eq!(authority.row("note", json!([10])), None, "never flushed");

        authority.set_down(false);
        let two = start_box(api.clone(), rindled, SHELL_SECRET, &extra, WRITES).await;
        let server = &two.server;
        eventually("the restarted box is ready", || server.is_ready()).await;
        assert_eq!(
            authority.row("note", json!([10])),
            Some(json!([10, "b10", "u1"])),
            "settled before ready"
        );
        assert_eq!(api.boots_of("deck/1"), 2);
        let (_, stats) = fleet_control(&two, "GET", "/stats", "", Some(CONTROL)).await;
        let stats: Value = serde_json::from_str(&stats).unwrap();
        assert_eq!(stats["box"]["stranded"], json!([]), "{stats}");
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }));
}

/// A restarted box settles its unsettled rooms several at a time (each boot still
/// through the boot admission), not one after the other: with each room-boot call held
/// 300 ms by the API server, more than one is in flight during the settlement, and every
/// room's acknowledged write reaches its authority before the box is ready.
#[test]
fn a_restarted_box_settles_several_rooms_at_once() {
    smol::block_on(within(async {
        let dir = data_dir("settle-many");
        let extra = format!("data_dir = \"{}\"", dir.display());
        let (api, rindled, _) = fakes().await;
        api.state.lock().unwrap().per_doc_authority = true; // claims do not fence each other
        let one = start_box(api.clone(), rindled.clone(), SHELL_SECRET, &extra, WRITES).await;
        let docs: Vec<String> = (0..4).map(|i| format!("many/{i}")).collect();
        let authority_of = |doc: &str| api.state.lock().unwrap().authorities[doc].clone();
        for (i, doc) in docs.iter().enumerate() {
            let client = format!("c{i}");
            let mut c = writer(one.server.port(), doc, &client, "u1").await;
            authority_of(doc).set_down(true); // acknowledged, never flushed
            c.send(&add_note(&client, 1, 10 + i as u64)).await;
            acked(&mut c, 1).await;
        }
        one.server.abort().await;

        for doc in &docs {
            authority_of(doc).set_down(false);
        }
        {
            let mut s = api.state.lock().unwrap();
            s.delay_ms = 300;
            s.max_in_flight = 0;
        }
        let two = start_box(api.clone(), rindled, SHELL_SECRET, &extra, WRITES).await;
        let server = &two.server;
        eventually("the restarted box is ready", || server.is_ready()).await;
        for (i, doc) in docs.iter().enumerate() {
            let id = 10 + i as u64;
            assert!(
                authority_of(doc).row("note", json!([id])).is_some(),
                "note {id} settled before ready: {:#?}",
                two.logs.lock().unwrap()
            );
        }
        let most = api.state.lock().unwrap().max_in_flight;
        assert!(most >= 2, "room-boot calls in flight at once: {most}");
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }));
}

#[test]
fn writes_a_moved_doc_strands_are_kept_logged_and_reported() {
    smol::block_on(within(async {
        let dir = data_dir("strand");
        let extra = format!("data_dir = \"{}\"", dir.display());
        let (api, rindled, authority) = fakes().await;
        authority.set_down(true);
        let one = start_box(api.clone(), rindled.clone(), SHELL_SECRET, &extra, WRITES).await;
        let mut c = writer(one.server.port(), "d", "c1", "u1").await;
        c.send(&add_note("c1", 1, 10)).await;
        acked(&mut c, 1).await;
        one.server.abort().await;

        authority.set_down(false);
        api.state.lock().unwrap().steal_after_boot = true;
        let two = start_box(api.clone(), rindled, SHELL_SECRET, &extra, WRITES).await;
        let server = &two.server;
        eventually("the restarted box is ready", || server.is_ready()).await;
        let (_, stats) = fleet_control(&two, "GET", "/stats", "", Some(CONTROL)).await;
        let stats: Value = serde_json::from_str(&stats).unwrap();
        assert_eq!(
            stats["box"]["stranded"],
            json!([{"doc": "d", "clientID": "c1", "mid": 1, "name": "addNote"}]),
            "{stats}\n{}",
            two.logs.lock().unwrap().join("\n")
        );
        let (_, metrics) = fleet_control(&two, "GET", "/metrics", "", Some(CONTROL)).await;
        assert!(
            metrics.contains("rindle_room_stranded_mutations_total 1"),
            "{metrics}"
        );
        let logs = two.logs.lock().unwrap().join("\n");
        assert!(
            logs.contains("stranded mutation: doc d clientID c1 mid 1 name addNote"),
            "{logs}"
        );
        let journal = std::fs::read_dir(dir.join("rooms"))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("journal");
        let kept = rindle_room_smol::journal::file::FileJournal::open(&journal).unwrap();
        use rindle_room_smol::journal::Journal;
        assert_eq!(
            kept.replay().unwrap().len(),
            1,
            "the journal keeps the entry"
        );
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }));
}

/// A room that writes and hibernates again and again keeps a journal of what is
/// unconfirmed, not its history: after 40 write/hibernate cycles (each write confirmed
/// by the authority before the room drains), the journal holds at most one cycle's
/// entries, and the room's next boot replays no confirmed mutation.
#[test]
fn write_hibernate_cycles_leave_a_journal_of_what_is_unconfirmed() {
    smol::block_on(within_secs(120, async {
        let dir = data_dir("cycles");
        let extra = format!("data_dir = \"{}\"\nidle_evict_ms = 50", dir.display());
        let (api, rindled, authority) = fakes().await;
        // The daemon echoes each commit, as rindled does: each flush record is
        // confirmed at its echo, before the room hibernates.
        authority.echo_to(&rindled);
        let b = start_box(api.clone(), rindled, SHELL_SECRET, &extra, WRITES).await;
        let port = b.server.port();
        for cycle in 1..=40u64 {
            let mut c = writer(port, "d", "c1", "u1").await;
            c.send(&add_note("c1", cycle, 100 + cycle)).await;
            acked(&mut c, cycle).await;
            drop(c);
            let server = &b.server;
            eventually("the room hibernates", || {
                server
                    .rooms()
                    .first()
                    .is_some_and(|r| r.state == rindle_room_core::fleet::RoomState::Hibernated)
            })
            .await;
            assert_eq!(
                authority.row("note", json!([100 + cycle])),
                Some(json!([100 + cycle, format!("b{}", 100 + cycle), "u1"])),
                "cycle {cycle} reached the authority"
            );
        }
        let journals: Vec<PathBuf> = std::fs::read_dir(dir.join("rooms"))
            .unwrap()
            .map(|d| d.unwrap().path().join("journal"))
            .collect();
        assert_eq!(journals.len(), 1);
        let inspection = rindle_room_smol::journal::file::read_records(&journals[0]).unwrap();
        let entries = inspection
            .records
            .iter()
            .filter(|r| r.kind == rindle_room_smol::journal::file::RecordKind::Entry)
            .count();
        assert!(entries <= 1, "{entries} entries kept after 40 cycles");
        assert_eq!(api.boots_of("d"), 40);
        b.server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }));
}

/// A room of a box with a data directory creates its journal (and directory) at its
/// first write: a visitor who only reads leaves nothing on disk.
#[test]
fn a_room_nobody_writes_to_leaves_no_directory() {
    smol::block_on(within(async {
        let dir = data_dir("readers");
        let extra = format!("data_dir = \"{}\"", dir.display());
        let (api, rindled, _authority) = fakes().await;
        let b = start_box(api.clone(), rindled, SHELL_SECRET, &extra, WRITES).await;
        let port = b.server.port();
        let mut r = reader(port, "read/only", "read/only").await;
        assert_eq!(note_count(&r.subscribed().await), 3);
        let rooms = dir.join("rooms");
        let count = || std::fs::read_dir(&rooms).map(|d| d.count()).unwrap_or(0);
        assert_eq!(count(), 0, "no directory for a room nobody wrote to");
        let mut w = writer(port, "written", "c1", "u1").await;
        w.send(&add_note("c1", 1, 10)).await;
        acked(&mut w, 1).await;
        assert_eq!(count(), 1, "the first write creates the room's journal");
        b.server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }));
}

/// A room that hibernates with a journal holding nothing (its doc record only: every
/// write confirmed and compacted away, no client binding) leaves no directory; one whose
/// journal still binds a client keeps it.
#[test]
fn a_hibernated_room_whose_journal_holds_nothing_leaves_no_directory() {
    smol::block_on(within(async {
        let dir = data_dir("retire");
        let room_dir = |doc: &str| {
            dir.join("rooms")
                .join(rindle_room_core::fleet::room_dir_name(doc))
        };
        // What a previous placement left: a journal with its doc record only.
        let empty = room_dir("empty");
        rindle_room_smol::journal::file::FileJournal::open_for_doc(empty.join("journal"), "empty")
            .unwrap();
        assert!(empty.join("journal").exists());
        let extra = format!("data_dir = \"{}\"\nidle_evict_ms = 50", dir.display());
        let (api, rindled, _authority) = fakes().await;
        let b = start_box(api.clone(), rindled, SHELL_SECRET, &extra, WRITES).await;
        let port = b.server.port();
        let mut r = reader(port, "empty", "empty").await;
        assert_eq!(note_count(&r.subscribed().await), 3);
        drop(r);
        let mut w = writer(port, "bound", "c1", "u1").await;
        w.send(&add_note("c1", 1, 10)).await;
        acked(&mut w, 1).await;
        drop(w);
        let server = &b.server;
        eventually("both rooms hibernate", || {
            let rooms = server.rooms();
            rooms.len() == 2
                && rooms
                    .iter()
                    .all(|r| r.state == rindle_room_core::fleet::RoomState::Hibernated)
        })
        .await;
        eventually("the empty journal's directory goes", || !empty.exists()).await;
        assert!(
            room_dir("bound").join("journal").exists(),
            "a journal that binds a client stays"
        );
        b.server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }));
}

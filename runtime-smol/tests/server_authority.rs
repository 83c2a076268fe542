//! The write-behind flush against a fake authority: the body, drain, an outage with no
//! loss, a CAS conflict, fencing (4009), boot settlement of an unconfirmed flush with
//! the durable-lmid probe, and journal compaction.

mod common;

use std::sync::Arc;

use common::ws::Next;
use common::*;
use rindle_room_smol::journal::memory::MemoryJournal;
use rindle_room_smol::server::RoomServer;
use serde_json::{json, Value};

fn push(client: &str, mid: u64, name: &str, args: &str) -> String {
    format!(
        r#"{{"t":"pushMutation","envelope":{{"clientID":"{client}","mid":{mid},"name":"{name}","args":{args}}}}}"#
    )
}

/// The lmid an lmid-query frame carries, if it is one.
fn lmid_of(v: &Value) -> Option<u64> {
    if v["t"] != "nbatch" || v["queryId"] != 0 {
        return None;
    }
    let op = &v["batch"]["ops"][0];
    (if op["op"] == "add" {
        &op["row"]
    } else {
        &op["new"]
    })[1]
        .as_u64()
}

async fn acked(c: &mut WsClient, mid: u64) {
    c.until("the ack", |v| lmid_of(v).is_some_and(|l| l >= mid))
        .await;
}

/// An authority holding the daemon's rows (as the real one would).
async fn authority() -> FakeAuthority {
    let auth = FakeAuthority::start().await;
    auth.put("note", json!([1, "one", "u1"]));
    auth.put("note", json!([2, "two", "u1"]));
    auth.put("note", json!([3, "three", "u2"]));
    auth
}

fn with_authority(auth: &FakeAuthority) -> Opts {
    Opts {
        authority: Some(auth.base.clone()),
        ..Opts::default()
    }
}

#[test]
fn writes_flush_to_the_authority_and_drain_reports_the_last_seq() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let auth = authority().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &with_authority(&auth), &logs).await;
        let mut c = subscriber(&server, "c1", "u1", true).await;
        c.send(&push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#))
            .await;
        c.send(&push("c1", 2, "setBody", r#"{"id":1,"body":"uno"}"#))
            .await;
        c.send(&push("c1", 3, "refuse", "{}")).await;
        acked(&mut c, 3).await;
        let (status, body) = control(&server, "POST", "/drain", "").await;
        assert_eq!(status, 200);
        let drained: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(drained["drained"], true);
        let seq = drained["finalFlushSeq"].as_u64().unwrap();
        assert!(seq >= 1, "{body}");
        assert_eq!(
            auth.row("note", json!([10])),
            Some(json!([10, "ten", "u1"]))
        );
        assert_eq!(auth.row("note", json!([1])), Some(json!([1, "uno", "u1"])));
        assert_eq!(
            auth.row("_rindle_client_mutations", json!(["c1"])),
            Some(json!(["c1", 3]))
        );
        assert_eq!(
            auth.row("_rindle_room_mutation_outcomes", json!(["c1", 3])),
            Some(json!(["c1", 3, "rejected", "not allowed", null, null]))
        );
        let first = auth.state.lock().unwrap().bodies[0].clone();
        assert!(
            first.starts_with(
                r#"{"source":"room:doc/1:1","offset":"00000000000000000001","doc":"doc/1","epoch":1,"batchHash":""#
            ),
            "{first}"
        );
        assert!(
            first.contains(r#","cas":true,"changes":[{"table":"note","op":"#),
            "{first}"
        );
        let stats = server.stats().await.unwrap();
        assert!(
            stats.contains(r#""pendingMutations":0,"dirtyKeys":0,"placementEpoch":1"#),
            "{stats}"
        );
        assert!(
            stats.contains(&format!(r#""flushesConfirmed":{seq}"#)),
            "{stats}"
        );
        // Draining a quiet room reports the same seq without flushing.
        let again = control(&server, "POST", "/drain", "").await;
        assert_eq!(again, (200, body));
        drop(c);
        server.shutdown().await;
    });
}

#[test]
fn an_authority_outage_loses_nothing() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let auth = authority().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &with_authority(&auth), &logs).await;
        let mut c = subscriber(&server, "c1", "u1", true).await;
        auth.set_down(true);
        for mid in 1..=5u64 {
            let args = format!(r#"{{"id":{},"body":"n{mid}"}}"#, 10 + mid);
            c.send(&push("c1", mid, "addNote", &args)).await;
        }
        // Acks do not wait for the authority: the journal is the ack gate.
        acked(&mut c, 5).await;
        sleep(400).await;
        // c1 is new to the room, and the authority could not confirm it: its writes run
        // and are acknowledged, but no flush goes out before the authority answers (one
        // of them could be a mid it already committed; docs/fleet.md).
        let stats = server.stats().await.unwrap();
        assert!(stats.contains("\"dirtyKeys\":5"), "{stats}");
        assert!(stats.contains("\"flushInFlight\":false"), "{stats}");
        assert!(auth.rows("_rindle_client_mutations").is_empty());
        auth.set_down(false);
        let (status, _) = control(&server, "POST", "/drain", "").await;
        assert_eq!(status, 200);
        for mid in 1..=5u64 {
            let id = 10 + mid;
            assert_eq!(
                auth.row("note", json!([id])),
                Some(json!([id, format!("n{mid}"), "u1"]))
            );
        }
        assert_eq!(auth.rows("note").len(), 3 + 5);
        assert_eq!(
            auth.row("_rindle_client_mutations", json!(["c1"])),
            Some(json!(["c1", 5]))
        );
        assert!(
            logs.count("authority call failed (retrying in") >= 1,
            "{}",
            logs.dump()
        );
        let (_, metrics) = control(&server, "GET", "/metrics", "").await;
        assert!(
            !metrics.contains("rindle_room_authority_retries_total 0\n"),
            "{metrics}"
        );
        drop(c);
        server.shutdown().await;
    });
}

#[test]
fn a_cas_conflict_converges_to_the_authoritys_image() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let auth = authority().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &with_authority(&auth), &logs).await;
        let mut c = subscriber(&server, "c1", "u1", true).await;
        // Another writer changed note 1 at the authority; the room has not heard yet.
        auth.put("note", json!([1, "elsewhere", "u9"]));
        c.send(&push("c1", 1, "setBody", r#"{"id":1,"body":"mine"}"#))
            .await;
        let mine = c
            .until("my edit", |v| v["t"] == "nbatch" && v["queryId"] == 1)
            .await;
        assert_eq!(mine["batch"]["ops"][0]["new"], json!([1, "mine", "u1"]));
        // The flush conflicts; the room converges to the authority's row.
        let fix = c
            .until("the corrective edit", |v| {
                v["t"] == "nbatch" && v["queryId"] == 1
            })
            .await;
        assert_eq!(
            fix["batch"]["ops"],
            json!([{"table":"note","op":"edit","old":[1,"mine","u1"],"new":[1,"elsewhere","u9"]}])
        );
        let (status, _) = control(&server, "POST", "/drain", "").await;
        assert_eq!(status, 200);
        assert_eq!(
            auth.row("note", json!([1])),
            Some(json!([1, "elsewhere", "u9"]))
        );
        assert_eq!(
            auth.row("_rindle_client_mutations", json!(["c1"])),
            Some(json!(["c1", 1]))
        );
        assert!(logs.count("CAS-conflicted") >= 1);
        drop(c);
        server.shutdown().await;
    });
}

#[test]
fn a_flush_fenced_under_our_epoch_closes_with_4009_and_stops_the_room() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let auth = authority().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &with_authority(&auth), &logs).await;
        let mut c = subscriber(&server, "c1", "u1", true).await;
        auth.fence(); // another placement claimed the document
        c.send(&push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#))
            .await;
        assert_eq!(
            c.closed().await,
            Next::Closed(Some((4009, "room_moved".into())))
        );
        within(server.stopped()).await;
        assert!(server.is_stopped());
        assert_eq!(
            logs.count("room moved: flush 1 fenced (authority epoch 2)"),
            1,
            "{}",
            logs.dump()
        );
        assert!(auth.row("note", json!([10])).is_none());
    });
}

#[test]
fn a_restart_settles_the_unconfirmed_flush_probes_lmids_and_replays() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let auth = authority().await;
        let journal = MemoryJournal::new();
        let opts = with_authority(&auth);
        let start = |logs: &Logs| {
            builder(&rindled, &opts, logs)
                .journal(Arc::new(journal.clone()))
                .start()
        };
        let logs = Logs::default();
        let server = start(&logs).await.unwrap();
        within(server.await_live()).await;
        let mut c = subscriber(&server, "c1", "u1", true).await;
        c.send(&push("c1", 1, "addNote", r#"{"id":10,"body":"ten"}"#))
            .await;
        acked(&mut c, 1).await;
        within(server.drain()).await.unwrap();
        // (Mid 1's flush committed, and its record waits for an echo this daemon never
        // sends: it stays unconfirmed.) The authority goes away; mid 2 is journaled and
        // acked, its flush is journaled and never answered; then the process dies.
        auth.set_down(true);
        c.send(&push("c1", 2, "addNote", r#"{"id":11,"body":"eleven"}"#))
            .await;
        acked(&mut c, 2).await;
        eventually("both unconfirmed flushes", || {
            journal.replay_flushes_len() == 2
        })
        .await;
        server.abort().await;
        drop(c);
        let stuck = journal.unconfirmed_body();

        // The next process: claims epoch 2, re-sends the records verbatim (fenced: an old
        // epoch), probes the durable lmids (c1 → 1): mid 1's flush had been committed
        // (taken in), mid 2's not (dropped); replays mid 2, flushes it.
        auth.set_down(false);
        let logs2 = Logs::default();
        let server: RoomServer = start(&logs2).await.unwrap();
        within(server.await_live()).await;
        assert!(
            logs2.count("flush 2 (old epoch 1) fenced: dropped") == 1,
            "{}",
            logs2.dump()
        );
        assert_eq!(
            logs2.count("flush 1 (old epoch 1) fenced, but it had been committed"),
            1,
            "{}",
            logs2.dump()
        );
        assert_eq!(logs2.count("durable seed: c1→1"), 1, "{}", logs2.dump());
        let bodies = auth.state.lock().unwrap().bodies.clone();
        assert!(
            bodies.iter().filter(|b| **b == stuck).count() >= 2,
            "resent verbatim"
        );
        within(server.drain()).await.unwrap();
        assert_eq!(
            auth.row("note", json!([11])),
            Some(json!([11, "eleven", "u1"]))
        );
        assert_eq!(
            auth.row("_rindle_client_mutations", json!(["c1"])),
            Some(json!(["c1", 2]))
        );
        let mut c = subscriber(&server, "c1", "u1", true).await;
        c.send(&push("c1", 2, "addNote", r#"{"id":11,"body":"eleven"}"#))
            .await;
        c.quiet(200).await;
        drop(c);
        server.shutdown().await;
    });
}

#[test]
fn the_journal_is_compacted_after_successful_flushes() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let auth = authority().await;
        let journal = MemoryJournal::new();
        let logs = Logs::default();
        let server = builder(&rindled, &with_authority(&auth), &logs)
            .journal(Arc::new(journal.clone()))
            .start()
            .await
            .unwrap();
        within(server.await_live()).await;
        let mut c = subscriber(&server, "c1", "u1", true).await;
        for mid in 1..=20u64 {
            let args = format!(r#"{{"id":{},"body":"b"}}"#, 100 + mid);
            c.send(&push("c1", mid, "addNote", &args)).await;
            acked(&mut c, mid).await;
            server.flush_now().await;
        }
        eventually("a compaction", || journal.entry_count() < 20).await;
        drop(c);
        server.shutdown().await;
    });
}

/// Journal introspection for the tests.
trait Inspect {
    fn replay_flushes_len(&self) -> usize;
    fn unconfirmed_body(&self) -> String;
}

impl Inspect for MemoryJournal {
    fn replay_flushes_len(&self) -> usize {
        use rindle_room_smol::journal::Journal;
        self.replay_flushes().unwrap().0.len()
    }

    fn unconfirmed_body(&self) -> String {
        use rindle_room_smol::journal::Journal;
        let flushes = self.replay_flushes().unwrap().0;
        flushes.last().expect("an unconfirmed flush").body.clone()
    }
}

//! Hole 7: a clientID is bound to the subject of the first lease verified on a
//! connection that inits it. Another subject can neither push under it (which would
//! have the owner's next mutation absorbed as a duplicate) nor read its lmid row; the
//! binding survives a restart through the journal.

mod common;

use common::*;
use serde_json::Value;

fn push(client: &str, mid: u64, id: u64) -> String {
    format!(
        r#"{{"t":"pushMutation","envelope":{{"clientID":"{client}","mid":{mid},"name":"addNote","args":{{"id":{id},"body":"b{id}"}}}}}}"#
    )
}

fn lmid_row(v: &Value) -> Option<(String, u64)> {
    if v["t"] != "nbatch" || v["queryId"] != 0 {
        return None;
    }
    let op = &v["batch"]["ops"][0];
    let row = if op["op"] == "edit" {
        &op["new"]
    } else {
        &op["row"]
    };
    Some((row[0].as_str()?.to_string(), row[1].as_u64()?))
}

const BOUND: &str = "clientID `A` is bound to another subject";

#[test]
fn another_subject_cannot_push_under_a_bound_client_id() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &Opts::default(), &logs).await;
        let mut alice = subscriber(&server, "A", "alice", true).await;
        alice.send(&push("A", 1, 10)).await;
        alice
            .until("alice's ack", |v| lmid_row(v) == Some(("A".into(), 1)))
            .await;

        // Bob, with his own valid lease, takes alice's clientID and her next mid.
        let mut bob = subscriber(&server, "A", "bob", false).await;
        bob.send(&push("A", 2, 66)).await;
        let err = bob.until("the refusal", |v| v["t"] == "error").await;
        assert!(err["message"].as_str().unwrap().starts_with(BOUND), "{err}");

        // Alice's real mid 2 applies: not absorbed as a duplicate.
        alice.send(&push("A", 2, 20)).await;
        alice
            .until("alice's second ack", |v| {
                lmid_row(v) == Some(("A".into(), 2))
            })
            .await;
        let mut reader = subscriber(&server, "R", "carol", false).await;
        reader
            .send(&subscribe(5, &token(NOTES, "carol", 60_000)))
            .await;
        let snap = reader.subscribed().await;
        let ids: Vec<u64> = snap["batch"]["ops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|op| op["row"][0].as_u64().unwrap())
            .collect();
        assert_eq!(ids, [1, 2, 3, 10, 20], "bob's note never landed");
        server.shutdown().await;
    });
}

#[test]
fn another_subject_cannot_read_a_bound_lmid_row() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let logs = Logs::default();
        let server = start_live(&rindled, &Opts::default(), &logs).await;
        let mut alice = subscriber(&server, "A", "alice", true).await;
        alice.send(&push("A", 1, 10)).await;
        alice
            .until("alice's ack", |v| lmid_row(v) == Some(("A".into(), 1)))
            .await;

        // Authenticated as bob first, then the lmid query: refused.
        let mut bob = subscriber(&server, "A", "bob", false).await;
        bob.send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#)
            .await;
        let err = bob.expect_t("queryError").await;
        assert!(err["message"].as_str().unwrap().starts_with(BOUND), "{err}");

        // The lmid query first (no subject yet), then bob's lease: the lmid
        // subscription is dropped the moment the connection turns out to be bob's.
        let mut sneaky = WsClient::connect(server.port()).await;
        sneaky.send(r#"{"t":"init","clientID":"A"}"#).await;
        sneaky
            .send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#)
            .await;
        sneaky.subscribed().await;
        sneaky
            .send(&subscribe(1, &token(NOTES, "bob", 60_000)))
            .await;
        let err = sneaky.expect_t("queryError").await;
        assert_eq!(err["queryId"], 0);
        assert!(err["message"].as_str().unwrap().starts_with(BOUND), "{err}");
        sneaky.subscribed().await; // bob's own lease still reads what it grants
        alice.send(&push("A", 2, 20)).await;
        alice
            .until("alice's ack", |v| lmid_row(v) == Some(("A".into(), 2)))
            .await;
        sneaky.until("the note", |v| v["t"] == "nbatch").await;
        assert!(
            sneaky
                .log
                .iter()
                .chain([&Value::Null])
                .all(|v| lmid_row(v).is_none()),
            "no lmid frame reaches bob: {:?}",
            sneaky.log
        );
        server.shutdown().await;
    });
}

#[test]
fn the_binding_survives_a_restart_through_the_journal() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let dir = std::env::temp_dir().join(format!("rindle-room-binding-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let opts = Opts {
            journal_file: Some(dir.join("room.journal")),
            ..Opts::default()
        };
        let logs = Logs::default();
        let server = start_live(&rindled, &opts, &logs).await;
        let mut alice = subscriber(&server, "A", "alice", true).await;
        alice.send(&push("A", 1, 10)).await;
        alice
            .until("alice's ack", |v| lmid_row(v) == Some(("A".into(), 1)))
            .await;
        drop(alice);
        server.shutdown().await;

        let logs = Logs::default();
        let server = start_live(&rindled, &opts, &logs).await;
        // Bob is first on the restarted room, but the journal remembers alice.
        let mut bob = subscriber(&server, "A", "bob", false).await;
        bob.send(&push("A", 2, 66)).await;
        let err = bob.until("the refusal", |v| v["t"] == "error").await;
        assert!(err["message"].as_str().unwrap().starts_with(BOUND), "{err}");
        let mut alice = subscriber(&server, "A", "alice", true).await;
        alice.send(&push("A", 2, 20)).await;
        alice
            .until("alice's ack", |v| lmid_row(v) == Some(("A".into(), 2)))
            .await;
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    });
}

//! kill -9 mid-traffic: the real `rindle-room` binary, a file journal, SIGKILL while a
//! client pushes; after a restart every acknowledged mutation is present exactly once,
//! and the client's re-sends complete the stream. Then SIGTERM shuts down with exit 0.

mod common;

use std::process::Command;
use std::time::Duration;

use common::bin::{wait_exit, Room};
use common::ws::Next;
use common::*;
use serde_json::Value;

const MIDS: u64 = 300;

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

fn insert(mid: u64) -> String {
    format!(
        r#"{{"t":"pushMutation","envelope":{{"clientID":"c1","mid":{mid},"name":"note.insert","args":{{"id":{},"body":"m{mid}","owner":"u1"}}}}}}"#,
        1000 + mid
    )
}

async fn client(port: u16) -> (WsClient, Value, Value) {
    let mut c = WsClient::connect(port).await;
    c.send(r#"{"t":"init","clientID":"c1"}"#).await;
    c.send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid","args":{}}"#)
        .await;
    let lmid = c.subscribed().await;
    let tok = token(NOTES, "u1", 600_000);
    c.send(&format!(
        r#"{{"t":"subscribe","queryId":1,"leaseToken":"{tok}"}}"#
    ))
    .await;
    let notes = c.subscribed().await;
    (c, lmid, notes)
}

fn ids(snapshot: &Value) -> Vec<u64> {
    snapshot["batch"]["ops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["row"][0].as_u64().unwrap())
        .collect()
}

#[test]
fn kill_9_mid_traffic_loses_no_acknowledged_mutation_and_applies_each_once() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let dir = common::fresh_dir("crash");
        let config = dir.join("room.toml");
        std::fs::write(
            &config,
            format!(
                "[upstream]\nws_url = \"{}\"\ncontrol_url = \"{}\"\n\
                 footprint_ast = '{{\"table\":\"note\"}}'\n\
                 [downstream]\ndoc_id = \"{DOC}\"\n[downstream.token_keys]\n{KID} = \"{KEY}\"\n\
                 [writes]\nowned_tables = [\"note\"]\ncrud = true\ngroup_commit_ms = 2\n\
                 [writes.journal]\nkind = \"file\"\npath = \"journal\"\n",
                rindled.ws_url, rindled.control_url
            ),
        )
        .unwrap();

        // Push one mutation after another, reading acks as they come; SIGKILL the room
        // while mutations are in flight.
        let mut room = Room::start(&config).await;
        let (mut c, _, _) = client(room.port).await;
        let mut acked = 0;
        let mut sent = 0;
        for mid in 1..=MIDS {
            c.send(&insert(mid)).await;
            sent = mid;
            while let Next::Frame(v) = c.next_within(1).await {
                if let Some(l) = lmid_of(&v) {
                    acked = l;
                }
            }
            if acked >= 40 && mid >= 80 {
                break;
            }
        }
        assert!(
            acked >= 40,
            "acks arrive while pushing (acked {acked} of {sent})"
        );
        // A burst the room is still chewing on when it dies.
        for mid in sent + 1..=sent + 100 {
            c.send(&insert(mid)).await;
        }
        sent += 100;
        room.child.kill().expect("SIGKILL");
        let _ = room.child.wait();
        // Acks that were already on the wire count too.
        while let Next::Frame(v) = c.next_within(2_000).await {
            if let Some(l) = lmid_of(&v) {
                acked = acked.max(l);
            }
        }
        assert!(
            acked < MIDS,
            "the kill landed mid-traffic (acked {acked} of {sent} sent)"
        );

        // Restart on the same journal.
        let mut room = Room::start(&config).await;
        let (mut c, lmid, notes) = client(room.port).await;
        let durable = lmid_of(&lmid).or_else(|| lmid["batch"]["ops"][0]["row"][1].as_u64());
        let replayed = durable.expect("the ledger row survived");
        assert!(
            replayed >= acked,
            "acked {acked} but only {replayed} replayed"
        );
        eprintln!("sent {sent}, acked {acked} before the kill, {replayed} journaled and replayed");
        let expected: Vec<u64> = (1..=3).chain((1..=replayed).map(|m| 1000 + m)).collect();
        assert_eq!(
            ids(&notes),
            expected,
            "every journaled mutation exactly once"
        );
        room.drain_log().await;
        assert!(
            room.log.iter().all(|l| !l.contains("now rejecteds")),
            "no replayed mutation applied twice:\n{}",
            room.log.join("\n")
        );

        // The client re-sends what was never acked: dedup or apply, nothing twice.
        for mid in acked + 1..=MIDS {
            c.send(&insert(mid)).await;
        }
        c.until("the last ack", |v| lmid_of(v) == Some(MIDS)).await;
        let (_, _, notes) = client(room.port).await;
        let expected: Vec<u64> = (1..=3).chain((1..=MIDS).map(|m| 1000 + m)).collect();
        assert_eq!(ids(&notes), expected);
        assert!(c.log.iter().all(|v| v["t"] != "error"), "{:?}", c.log);

        // SIGTERM: a graceful shutdown, exit 0.
        let pid = room.child.id().to_string();
        let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(status.success());
        let closed = c.closed().await;
        assert!(
            matches!(closed, Next::Closed(Some((1001, _)))),
            "{closed:?}"
        );
        let code = wait_exit(&mut room.child, Duration::from_secs(10));
        assert_eq!(code, Some(0));
        let _ = std::fs::remove_dir_all(&dir);
    });
}

//! Hole 6 (`SIGXFSZ`): the real binary under a file-size limit (`ulimit -f`). A journal
//! append past the limit used to kill the process with `SIGXFSZ`; now it is an append
//! error like `ENOSPC`: the incarnation dies (clients see 1012), the process lives, and
//! a restart without the limit replays every acknowledged mutation.

mod common;

use std::process::Command;

use common::bin::Room;
use common::ws::Next;
use common::*;
use serde_json::Value;

fn insert(mid: u64) -> String {
    format!(
        r#"{{"t":"pushMutation","envelope":{{"clientID":"c1","mid":{mid},"name":"note.insert","args":{{"id":{},"body":"{}","owner":"u1"}}}}}}"#,
        1000 + mid,
        "b".repeat(200)
    )
}

fn lmid_of(v: &Value) -> Option<u64> {
    if v["t"] != "nbatch" || v["queryId"] != 0 {
        return None;
    }
    let op = &v["batch"]["ops"][0];
    (if op["op"] == "edit" {
        &op["new"]
    } else {
        &op["row"]
    })[1]
        .as_u64()
}

#[test]
fn a_file_size_limit_fails_the_append_instead_of_killing_the_process() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let dir = common::fresh_dir("xfsz");
        let config = dir.join("room.toml");
        std::fs::write(
            &config,
            format!(
                "[upstream]\nws_url = \"{}\"\ncontrol_url = \"{}\"\n\
                 footprint_ast = '{{\"table\":\"note\"}}'\n\
                 [downstream]\ndoc_id = \"{DOC}\"\n[downstream.token_keys]\n{KID} = \"{KEY}\"\n\
                 [writes]\nowned_tables = [\"note\"]\ncrud = true\ngroup_commit_ms = 1\n\
                 [writes.journal]\nkind = \"file\"\npath = \"journal\"\n",
                rindled.ws_url, rindled.control_url
            ),
        )
        .unwrap();
        // 16 blocks: 8 KiB under dash (512-byte blocks), 16 KiB under bash.
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(r#"ulimit -f 16 && exec "$0" --config "$1""#)
            .arg(env!("CARGO_BIN_EXE_rindle-room"))
            .arg(&config);
        let mut room = Room::spawn(cmd).await;
        let mut c = WsClient::connect(room.port).await;
        c.send(r#"{"t":"init","clientID":"c1"}"#).await;
        c.send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#)
            .await;
        c.subscribed().await;
        c.send(&subscribe(1, &token(NOTES, "u1", 600_000))).await;
        c.subscribed().await;
        let mut acked = 0;
        let mut ended = None;
        'push: for mid in 1..=200 {
            c.send(&insert(mid)).await;
            loop {
                match c.next_within(5_000).await {
                    Next::Frame(v) => {
                        if lmid_of(&v) == Some(mid) {
                            acked = mid;
                            continue 'push;
                        }
                    }
                    other => {
                        ended = Some(other);
                        break 'push;
                    }
                }
            }
        }
        assert_eq!(
            ended,
            Some(Next::Closed(Some((1012, "room re-subscribing".into())))),
            "the failed append kills the incarnation (acked {acked})"
        );
        assert!(acked > 5, "some appends fit under the limit: {acked}");
        room.wait_for("journal append failed").await;
        room.drain_log().await;
        assert!(
            room.log.iter().any(|l| l.contains("File too large")),
            "{}",
            room.log.join("\n")
        );
        sleep(300).await;
        assert!(
            room.child.try_wait().unwrap().is_none(),
            "the process is alive (no SIGXFSZ)"
        );
        room.child.kill().unwrap();
        let _ = room.child.wait();

        // Without the limit: every acknowledged mutation is there.
        let mut room = Room::start(&config).await;
        let mut c = WsClient::connect(room.port).await;
        c.send(r#"{"t":"init","clientID":"c1"}"#).await;
        c.send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#)
            .await;
        let lmid = c.subscribed().await;
        let replayed = lmid_of(&lmid).expect("the ledger row");
        assert!(replayed >= acked, "acked {acked}, replayed {replayed}");
        room.child.kill().unwrap();
        let _ = room.child.wait();
        let _ = std::fs::remove_dir_all(&dir);
    });
}

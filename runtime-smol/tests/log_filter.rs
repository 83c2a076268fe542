//! Logging through the `log` facade, filtered by `RINDLE_LOG`: the room's debug lines
//! for a connection's life (open, ignored frames, subscribe, mutation, unsubscribe,
//! close) under `rindle_room_smol::server::room`, a dependency's records (tungstenite)
//! when the filter enables them, none of either by default, and JSON lines.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::bin::Room;
use common::ws::Next;
use common::*;

fn room_config(rindled: &FakeRindled, name: &str, extra_server: &str) -> PathBuf {
    let dir = common::fresh_dir(&format!("log-{name}"));
    let config = dir.join("room.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\n{extra_server}\
             [upstream]\nws_url = \"{}\"\ncontrol_url = \"{}\"\n\
             footprint_ast = '{{\"table\":\"note\"}}'\n\
             [downstream]\ndoc_id = \"{DOC}\"\n[downstream.token_keys]\n{KID} = \"{KEY}\"\n\
             [writes]\nowned_tables = [\"note\"]\ncrud = true\n",
            rindled.ws_url, rindled.control_url
        ),
    )
    .unwrap();
    config
}

fn command(config: &Path, filter: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rindle-room"));
    cmd.arg("--config").arg(config);
    match filter {
        Some(f) => cmd.env("RINDLE_LOG", f),
        None => cmd.env_remove("RINDLE_LOG"),
    };
    cmd
}

/// One client's session: open, garbage, subscribe, a mutation, unsubscribe, close.
async fn session(port: u16) {
    let mut c = WsClient::connect(port).await;
    c.send("not json").await;
    c.send(r#"{"t":"wave"}"#).await;
    c.send(r#"{"t":"init","clientID":"c1"}"#).await;
    c.send(&subscribe(1, &token(NOTES, "u1", 600_000))).await;
    c.subscribed().await;
    c.send(
        r#"{"t":"pushMutation","envelope":{"clientID":"c1","mid":1,"name":"note.insert","args":{"id":7,"body":"b","owner":"u1"}}}"#,
    )
    .await;
    c.until("the insert", |v| v["t"] == "nbatch").await;
    c.send(r#"{"t":"unsubscribe","queryId":1}"#).await;
    while let Next::Frame(_) = c.next_within(200).await {}
}

#[test]
fn rindle_log_enables_the_rooms_debug_lines_and_dependencies_records() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let config = room_config(&rindled, "debug", "");
        let filter = "info,rindle_room_smol::server::room=debug,tungstenite::handshake=debug";
        let mut room = Room::spawn(command(&config, Some(filter))).await;
        session(room.port).await;
        room.wait_for("conn 1: closed (clientID c1, 0 subscription(s) detached)")
            .await;
        room.drain_log().await;
        let log = room.log.join("\n");
        for needle in [
            // A dependency's record, under its own target (the upstream handshake).
            " DEBUG tungstenite::handshake::client: Client handshake done.",
            " DEBUG room doc/1: conn 1: open",
            " DEBUG room doc/1: conn 1: ignored frame: not JSON (8 bytes)",
            " DEBUG room doc/1: conn 1: ignored frame: unknown type \"wave\"",
            " DEBUG room doc/1: conn 1: subscribed queryId 1 (sub u1, epoch 1, snapshot ",
            " DEBUG room doc/1: conn 1: mutation `note.insert` (c1:1) applied @ cv ",
            " DEBUG room doc/1: conn 1: unsubscribe queryId 1",
            " INFO  room doc/1: listening on ws://127.0.0.1:",
        ] {
            assert!(log.contains(needle), "{needle:?} missing from\n{log}");
        }
        // Targets the filter leaves at info show no debug line.
        assert!(
            !log.contains("downstream limits:"),
            "rindle_room_smol::server stays at info:\n{log}"
        );
        room.child.kill().unwrap();
        let _ = room.child.wait();
    });
}

#[test]
fn by_default_neither_debug_lines_nor_dependencies_debug_records_show() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let config = room_config(&rindled, "default", "");
        let mut room = Room::spawn(command(&config, None)).await;
        session(room.port).await;
        room.child.kill().unwrap();
        let _ = room.child.wait();
        room.drain_log().await;
        let log = room.log.join("\n");
        assert!(!log.contains(" DEBUG "), "{log}");
        assert!(!log.contains("tungstenite"), "{log}");
        assert!(log.contains(" INFO  room doc/1: live (bootId"), "{log}");
    });
}

#[test]
fn json_lines_carry_the_target_and_the_doc() {
    smol::block_on(async {
        let rindled = FakeRindled::notes().await;
        let config = room_config(&rindled, "json", "log_format = \"json\"\n");
        let filter = "warn,rindle_room_smol=debug,tungstenite::handshake=debug";
        let mut room = Room::spawn(command(&config, Some(filter))).await;
        session(room.port).await;
        room.wait_for("conn 1: closed").await;
        room.child.kill().unwrap();
        let _ = room.child.wait();
        room.drain_log().await;
        let mut targets = std::collections::BTreeSet::new();
        for line in &room.log {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
            let target = v["target"].as_str().expect("a target").to_string();
            if target.starts_with("rindle_room_smol") {
                assert_eq!(v["doc"], DOC, "{line}");
            } else {
                assert!(v.get("doc").is_none(), "{line}");
            }
            assert!(v["ts"].as_str().is_some_and(|t| t.ends_with('Z')), "{line}");
            targets.insert(target);
        }
        for t in [
            "rindle_room_smol::server",
            "rindle_room_smol::server::room",
            "tungstenite::handshake::client",
        ] {
            assert!(targets.contains(t), "{t} missing from {targets:?}");
        }
    });
}

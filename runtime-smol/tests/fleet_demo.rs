//! `rindle-room demo --fleet`: the embedded room-boot endpoint and a fleet over the demo
//! data — through the library, and through the binary as a user runs it.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::ws::Next;
use common::*;
use rindle_room_smol::server::demo::DemoData;
use rindle_room_smol::server::fleet::demo::{start_demo_fleet, DemoFleetOptions, DEMO_DOCS};

fn data_dir(test: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fleet_demo-{}-{test}", std::process::id()))
}

#[test]
fn the_demo_fleet_serves_two_docs_and_refuses_others() {
    smol::block_on(within(async {
        let dir = data_dir("lib");
        let demo = start_demo_fleet(DemoFleetOptions {
            data: DemoData::embedded(),
            port: 0,
            data_dir: dir.clone(),
            keep: false,
            json_logs: false,
        })
        .await
        .expect("the demo fleet starts");
        let port = demo.server.port();
        let mut clients = Vec::new();
        for (doc, token) in &demo.tokens {
            let path = rindle_room_core::fleet::room_path(doc);
            let mut c = WsClient::connect_path(port, &path).await;
            c.send(r#"{"t":"init","clientID":"c1"}"#).await;
            c.send(&subscribe(1, token)).await;
            let snap = c.subscribed().await;
            assert!(
                !snap["batch"]["ops"].as_array().unwrap().is_empty(),
                "{snap}"
            );
            clients.push(c);
        }
        let rooms = demo.server.rooms();
        let docs: Vec<&str> = rooms.iter().map(|r| r.doc.as_str()).collect();
        assert_eq!(docs, DEMO_DOCS);
        // Each room journals under the data directory; a write lands in its room.
        let c = &mut clients[0];
        c.send(
            r#"{"t":"pushMutation","envelope":{"clientID":"c1","mid":1,"name":"issue.update","args":{"id":5,"title":"renamed"}}}"#,
        )
        .await;
        c.until("the edit", |v| v.to_string().contains("renamed"))
            .await;
        // Only the room written to has a directory (created by its first journal write).
        let room_dirs = || std::fs::read_dir(dir.join("rooms")).map_or(0, |d| d.count());
        eventually("the written room's journal", || room_dirs() == 1).await;
        // Another document's token opens nothing: refused before any boot.
        let mut other = WsClient::connect_path(port, "/rooms/elsewhere").await;
        other.send(&subscribe(1, &demo.tokens[0].1)).await;
        assert_eq!(
            other.closed().await,
            Next::Closed(Some((1008, "lease token refused: wrong document".into())))
        );
        assert_eq!(room_dirs(), 1);
        demo.server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
    }));
}

#[test]
fn the_binary_prints_how_to_connect_to_two_rooms() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rindle-room"))
        .args(["demo", "--fleet", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().unwrap();
    let mut urls = Vec::new();
    let mut tokens = Vec::new();
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        let line = line.trim().to_string();
        if let Some(url) = line.strip_prefix("websocket") {
            urls.push(url.trim().to_string());
        }
        if let Some(t) = line.strip_prefix("lease token") {
            tokens.push(t.trim().to_string());
        }
        if line.starts_with("Ctrl-C") {
            break;
        }
    }
    assert_eq!(urls.len(), 2, "{urls:?}");
    assert!(urls[0].ends_with("/rooms/demo%2Fissues-a"), "{urls:?}");
    let port: u16 = urls[0]
        .trim_start_matches("ws://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    smol::block_on(within(async {
        let path = &urls[1][urls[1].find("/rooms/").unwrap()..];
        let mut c = WsClient::connect_path(port, path).await;
        c.send(&subscribe(1, &tokens[1])).await;
        c.subscribed().await;
    }));
    let _ = child.kill();
    let _ = child.wait();
}

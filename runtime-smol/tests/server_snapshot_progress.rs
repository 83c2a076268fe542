//! Progress while a large upstream snapshot arrives: a daemon that trickles a
//! 120,000-row seq-0 snapshot over about two seconds, and the real binary's info lines
//! (rows, bytes, time so far; then the whole frame) before the room goes live.

mod common;

use std::process::Command;
use std::time::Duration;

use async_tungstenite::tungstenite::Message;
use common::bin::Room;
use common::*;
use futures_lite::{AsyncWriteExt, StreamExt};
use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::TableSchema;
use rindle_room_smol::http;
use smol::net::TcpListener;

const ROWS: usize = 120_000;
/// Bytes per write, and the pause after each: about 3 MB/s.
const CHUNK: usize = 32 * 1024;
const PAUSE_MS: u64 = 10;

/// The seq-0 frame and the hello, for `ROWS` notes.
fn frames() -> (String, String) {
    let tables = [TableSchema::new("note", &["id", "body", "owner"], &[0])];
    let fp = normalized_fp(tables.iter());
    let mut schema = String::new();
    tables[0].write_json(&mut schema);
    let hello = format!(
        r#"{{"t":"nhello","queryId":1,"bootId":"slow-1","hello":{{"epoch":1,"comparatorVersion":2,"tables":[{schema}],"normalizedFp":"{fp}"}}}}"#
    );
    let mut snapshot = format!(
        r#"{{"t":"nbatch","queryId":1,"batch":{{"epoch":1,"seq":0,"normalizedFp":"{fp}","ops":["#
    );
    for i in 0..ROWS {
        if i > 0 {
            snapshot.push(',');
        }
        snapshot.push_str(&format!(
            r#"{{"table":"note","op":"add","row":[{i},"note number {i}","u1"]}}"#
        ));
    }
    snapshot.push_str(r#"],"cv":7}}"#);
    (hello, snapshot)
}

/// A daemon whose `/materialize` always answers and whose websocket sends the snapshot
/// as one frame, written by hand in slow chunks. Returns `(ws_url, control_url)`.
async fn slow_daemon() -> (String, String) {
    let http_l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ws_l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let urls = (
        format!("ws://{}", ws_l.local_addr().unwrap()),
        format!("http://{}", http_l.local_addr().unwrap()),
    );
    smol::spawn(async move {
        while let Ok((mut s, _)) = http_l.accept().await {
            smol::spawn(async move {
                if let Ok(Some(_)) = http::read_request(&mut s, 1 << 20).await {
                    let body = br#"{"leaseToken":"lease-1"}"#;
                    let _ = http::write_response(&mut s, 200, "application/json", body).await;
                }
            })
            .detach();
        }
    })
    .detach();
    smol::spawn(async move {
        while let Ok((s, _)) = ws_l.accept().await {
            smol::spawn(async move {
                let _ = s.set_nodelay(true);
                let Ok(mut ws) = async_tungstenite::accept_async(s).await else {
                    return;
                };
                while let Some(Ok(msg)) = ws.next().await {
                    let Message::Text(t) = msg else { continue };
                    if !t.as_str().contains("\"subscribe\"") {
                        continue;
                    }
                    let (hello, snapshot) = frames();
                    if ws.send(Message::text(hello)).await.is_err() {
                        return;
                    }
                    // One unmasked text frame: FIN + text, a 64-bit length, the payload.
                    let mut frame = vec![0x81, 127];
                    frame.extend_from_slice(&(snapshot.len() as u64).to_be_bytes());
                    frame.extend_from_slice(snapshot.as_bytes());
                    for piece in frame.chunks(CHUNK) {
                        if ws.get_mut().write_all(piece).await.is_err() {
                            return;
                        }
                        smol::Timer::after(Duration::from_millis(PAUSE_MS)).await;
                    }
                    let progress = r#"{"t":"progress","frame":{"cvMin":7}}"#;
                    if ws.send(Message::text(progress)).await.is_err() {
                        return;
                    }
                }
            })
            .detach();
        }
    })
    .detach();
    urls
}

#[test]
fn a_slow_snapshot_logs_its_progress_then_the_whole_frame() {
    smol::block_on(async {
        let (ws_url, control_url) = slow_daemon().await;
        let dir = common::fresh_dir("progress");
        let config = dir.join("room.toml");
        std::fs::write(
            &config,
            format!(
                "[upstream]\nws_url = \"{ws_url}\"\ncontrol_url = \"{control_url}\"\n\
                 footprint_ast = '{{\"table\":\"note\"}}'\n\
                 [downstream]\ndoc_id = \"{DOC}\"\n[downstream.token_keys]\n{KID} = \"{KEY}\"\n"
            ),
        )
        .unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rindle-room"));
        cmd.arg("--config").arg(&config).env_remove("RINDLE_LOG");
        let mut room = Room::spawn(cmd).await;
        room.drain_log().await;
        let log = room.log.join("\n");
        let arriving: Vec<&String> = room
            .log
            .iter()
            .filter(|l| l.contains("a large frame is arriving: "))
            .collect();
        assert!(!arriving.is_empty(), "no progress line in\n{log}");
        for line in &arriving {
            assert!(
                line.contains(" INFO  rindle_room_smol::server::upstream: upstream ws://")
                    && line.contains(" rows, ")
                    && line.contains(" MB in ")
                    && line.contains(" s so far"),
                "{line}"
            );
        }
        assert!(
            log.contains(&format!("received a frame of {ROWS} rows, ")),
            "no summary in\n{log}"
        );
        assert!(
            log.contains(&format!("upstream snapshot: {ROWS} rows @ cv 7")),
            "{log}"
        );
        // Progress comes before the snapshot is applied, which comes before live.
        let at = |needle: &str| room.log.iter().position(|l| l.contains(needle)).unwrap();
        assert!(at("a large frame is arriving") < at("upstream snapshot:"));
        assert!(at("upstream snapshot:") < at("live (bootId"));
        room.child.kill().unwrap();
        let _ = room.child.wait();
    });
}

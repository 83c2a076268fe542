//! The benchmark's stand-ins for the API server and rindled, on loopback in the bench
//! process: room-boot (a placement epoch per doc, the lease, flush routes on the same
//! origin), an authority that accepts every flush, and a normalized upstream that
//! answers every subscribe with a small snapshot and, as rindled does, streams every
//! flush the authority accepted back to its room (the echo of the room's own write).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_tungstenite::tungstenite::Message;
use futures_lite::{AsyncWriteExt, FutureExt, StreamExt};
use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::TableSchema;
use rindle_room_smol::http;
use smol::net::{TcpListener, TcpStream};

/// The shell secret room-boot checks.
pub const SECRET: &str = "fleet-bench-secret";

/// Rows per room's snapshot.
pub const ROWS: usize = 5;

/// Counters of the fakes, and where each doc's upstream connection takes its echoes.
#[derive(Default)]
pub struct FakeStats {
    pub boots: AtomicU64,
    pub applies: AtomicU64,
    pub subscribes: AtomicU64,
    /// doc → the upstream connection that serves it (the ops of each accepted flush).
    echoes: Mutex<HashMap<String, async_channel::Sender<Vec<serde_json::Value>>>>,
}

/// The upstream ops a flush body's changes make (the room's own tables left out).
fn echo_ops(body: &serde_json::Value) -> Vec<serde_json::Value> {
    let changes = body["changes"].as_array().cloned().unwrap_or_default();
    changes
        .iter()
        .filter(|c| !c["table"].as_str().unwrap_or("_").starts_with('_'))
        .map(|c| match c["op"].as_str() {
            Some("add") => serde_json::json!({"table": c["table"], "op": "add", "row": c["row"]}),
            Some("remove") => {
                serde_json::json!({"table": c["table"], "op": "remove", "row": c["old"]})
            }
            _ => serde_json::json!({"table": c["table"], "op": "edit", "old": c["old"], "new": c["row"]}),
        })
        .collect()
}

/// Starts room-boot + authority on one origin; returns it.
pub async fn start_api(upstream_ws: String, stats: Arc<FakeStats>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let epochs: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    smol::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (upstream_ws, stats, epochs) = (upstream_ws.clone(), stats.clone(), epochs.clone());
            smol::spawn(serve_api(stream, upstream_ws, stats, epochs)).detach();
        }
    })
    .detach();
    url
}

async fn serve_api(
    mut stream: TcpStream,
    upstream_ws: String,
    stats: Arc<FakeStats>,
    epochs: Arc<Mutex<HashMap<String, u64>>>,
) {
    let _ = stream.set_nodelay(true);
    // Connections kept alive between requests, as the API server's (Node's) are.
    while let Ok(Some(req)) = http::read_request(&mut stream, 1 << 24).await {
        let (status, text) = answer(&req, &upstream_ws, &stats, &epochs);
        let wire = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{text}",
            http::reason_phrase(status),
            text.len()
        );
        if stream.write_all(wire.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// The status and body the fake API server answers `req` with.
fn answer(
    req: &http::Request,
    upstream_ws: &str,
    stats: &FakeStats,
    epochs: &Mutex<HashMap<String, u64>>,
) -> (u16, String) {
    let body: serde_json::Value = serde_json::from_str(&req.body_text()).unwrap_or_default();
    let doc = body["doc"].as_str().unwrap_or("").to_string();
    match req.path.as_str() {
        "/api/rindle/room-boot" => {
            if req.header("authorization") != Some(format!("Bearer {SECRET}").as_str()) {
                (
                    403,
                    String::from("{\"error\":\"room-boot: shell secret refused\"}"),
                )
            } else {
                stats.boots.fetch_add(1, Ordering::Relaxed);
                let epoch = {
                    let mut e = epochs.lock().unwrap();
                    let v = e.entry(doc.clone()).or_insert(0);
                    *v += 1;
                    *v
                };
                let grant = serde_json::json!({
                    "epoch": epoch,
                    "upstreamLeaseToken": format!("lease-{epoch}-{doc}"),
                    "upstreamWsEndpoint": upstream_ws,
                    "flush": {"urls": {
                        "apply": "/api/rindle/apply-row-change-txn",
                        "claim": "/api/rindle/claim-room-epoch",
                        "lmids": "/api/rindle/room-lmids"
                    }}
                });
                (200, grant.to_string())
            }
        }
        "/api/rindle/apply-row-change-txn" => {
            stats.applies.fetch_add(1, Ordering::Relaxed);
            let ops = echo_ops(&body);
            if !ops.is_empty() {
                if let Some(tx) = stats.echoes.lock().unwrap().get(&doc) {
                    let _ = tx.try_send(ops);
                }
            }
            (200, String::from("{\"applied\":true}"))
        }
        "/api/rindle/room-lmids" => (200, String::from("{\"lmids\":{}}")),
        "/api/rindle/claim-room-epoch" => (200, String::from("{\"epoch\":1}")),
        _ => (404, String::from("{\"error\":\"unknown route\"}")),
    }
}

/// The room's tables: `note(id, body, owner)`.
pub fn tables() -> Vec<TableSchema> {
    vec![TableSchema::new("note", &["id", "body", "owner"], &[0])]
}

/// Starts the upstream; returns its ws URL.
pub async fn start_upstream(stats: Arc<FakeStats>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let tables = tables();
    let fp = normalized_fp(tables.iter());
    let schema: Vec<serde_json::Value> = tables
        .iter()
        .map(|t| {
            let mut s = String::new();
            t.write_json(&mut s);
            serde_json::from_str(&s).unwrap()
        })
        .collect();
    let ops: Vec<serde_json::Value> = (0..ROWS)
        .map(
            |i| serde_json::json!({"table":"note","op":"add","row":[i, format!("note {i}"), "u1"]}),
        )
        .collect();
    let hello = serde_json::json!({"t":"nhello","queryId":1,"bootId":"bench-daemon",
        "hello":{"epoch":1,"comparatorVersion":2,"tables":schema,"normalizedFp":fp}})
    .to_string();
    let snapshot = serde_json::json!({"t":"nbatch","queryId":1,"batch":{
        "epoch":1,"seq":0,"normalizedFp":fp,"ops":ops,"cv":1}})
    .to_string();
    let progress = String::from("{\"t\":\"progress\",\"frame\":{\"cvMin\":1}}");
    let answer: Arc<[String; 3]> = Arc::new([hello, snapshot, progress]);
    let fp_echo = fp.clone();
    smol::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (answer, stats, fp_echo) = (answer.clone(), stats.clone(), fp_echo.clone());
            smol::spawn(async move {
                // As rindled does: frames go out as written (Nagle would hold the
                // snapshot behind the hello until the room's delayed ACK, ~40 ms).
                let _ = stream.set_nodelay(true);
                let Ok(ws) = async_tungstenite::accept_async(stream).await else {
                    return;
                };
                let (mut sink, mut source) = ws.split();
                let (echo_tx, echo_rx) = async_channel::unbounded::<Vec<serde_json::Value>>();
                let (mut seq, mut cv) = (0u64, 1u64);
                loop {
                    let next = async { Err(source.next().await) }
                        .or(async { Ok(echo_rx.recv().await) })
                        .await;
                    let msg = match next {
                        Ok(Ok(ops)) => {
                            // The echo of a flush this doc's room made.
                            seq += 1;
                            cv += 1;
                            let batch = serde_json::json!({"t":"nbatch","queryId":1,"batch":{
                                "epoch":1,"seq":seq,"normalizedFp":fp_echo,"ops":ops,"cv":cv}});
                            let progress = serde_json::json!({"t":"progress","frame":{"cvMin":cv}});
                            for f in [batch, progress] {
                                if sink.send(Message::text(f.to_string())).await.is_err() {
                                    return;
                                }
                            }
                            continue;
                        }
                        Ok(Err(_)) => continue,
                        Err(Some(Ok(msg))) => msg,
                        Err(_) => return,
                    };
                    let Message::Text(t) = msg else { continue };
                    if t.as_str().contains("\"subscribe\"") {
                        stats.subscribes.fetch_add(1, Ordering::Relaxed);
                        let frame: serde_json::Value =
                            serde_json::from_str(t.as_str()).unwrap_or_default();
                        let lease = frame["leaseToken"].as_str().unwrap_or("");
                        if let Some(doc) = lease.splitn(3, '-').nth(2) {
                            stats
                                .echoes
                                .lock()
                                .unwrap()
                                .insert(doc.to_string(), echo_tx.clone());
                        }
                        (seq, cv) = (0, 1);
                        for f in answer.iter() {
                            if sink.send(Message::text(f.clone())).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            })
            .detach();
        }
    })
    .detach();
    url
}

/// Runs `fut` for at most `ms`.
pub async fn within<T>(ms: u64, fut: impl std::future::Future<Output = T>) -> Option<T> {
    async { Some(fut.await) }
        .or(async {
            smol::Timer::after(std::time::Duration::from_millis(ms)).await;
            None
        })
        .await
}

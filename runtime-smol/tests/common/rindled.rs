//! A fake `rindled`: `POST /materialize` on an HTTP control plane, and a normalized
//! upstream websocket that answers the room's `subscribe` (new epoch, `nhello`, seq-0
//! `nbatch`, `progress`) and lets the test push live batches, progress, `queryError`s,
//! garbage, or drop the socket.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_channel::Sender;
use async_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::TableSchema;
use rindle_room_smol::http;
use serde_json::{json, Value};
use smol::net::{TcpListener, TcpStream};

/// The fake daemon's state.
pub struct RState {
    pub tables: Vec<TableSchema>,
    /// `(table, pk JSON)` → row.
    pub rows: BTreeMap<(String, String), Value>,
    pub epoch: u64,
    pub seq: u64,
    pub cv: u64,
    pub boot: String,
    current: Option<Sender<Option<String>>>,
    pub subscribes: usize,
    pub mints: usize,
    pub fail_mint: bool,
    /// Refuse mints with this status (a 4xx: not worth retrying).
    pub refuse_mint: Option<u16>,
    pub hold: bool,
    held: bool,
    pub conns: usize,
    pub inits: Vec<String>,
    pub leases: Vec<String>,
    pub materialize_bodies: Vec<String>,
    pub auth_headers: Vec<Option<String>>,
    /// Every websocket upgrade's `Sec-WebSocket-Protocol` header, in order.
    pub offered_protocols: Vec<Option<String>>,
    /// Select this subprotocol when a client offers it (as an edge selects `rindle.v1`);
    /// `None` selects none, as rindled does.
    pub select_protocol: Option<String>,
}

/// The fake daemon.
#[derive(Clone)]
pub struct FakeRindled {
    pub ws_url: String,
    pub control_url: String,
    pub state: Arc<Mutex<RState>>,
}

fn pk_of(schema: &TableSchema, row: &Value) -> String {
    let cells: Vec<Value> = schema.primary_key.iter().map(|&i| row[i].clone()).collect();
    Value::Array(cells).to_string()
}

impl FakeRindled {
    /// A daemon serving `note(id, body, owner)` with three rows, and `tally(id)`.
    pub async fn notes() -> FakeRindled {
        let tables = vec![
            TableSchema::new("note", &["id", "body", "owner"], &[0]),
            TableSchema::new("tally", &["id", "mid"], &[0]),
        ];
        let rows = vec![
            ("note", json!([1, "one", "u1"])),
            ("note", json!([2, "two", "u1"])),
            ("note", json!([3, "three", "u2"])),
        ];
        FakeRindled::start(tables, rows).await
    }

    /// A daemon serving `tables` with `rows`.
    pub async fn start(tables: Vec<TableSchema>, rows: Vec<(&str, Value)>) -> FakeRindled {
        let mut map = BTreeMap::new();
        for (t, row) in rows {
            let schema = tables
                .iter()
                .find(|s| &*s.name == t)
                .expect("a known table");
            map.insert((t.to_string(), pk_of(schema, &row)), row);
        }
        let state = Arc::new(Mutex::new(RState {
            tables,
            rows: map,
            epoch: 0,
            seq: 0,
            cv: 100,
            boot: "daemon-boot-1".into(),
            current: None,
            subscribes: 0,
            mints: 0,
            fail_mint: false,
            refuse_mint: None,
            hold: false,
            held: false,
            conns: 0,
            inits: Vec::new(),
            leases: Vec::new(),
            materialize_bodies: Vec::new(),
            auth_headers: Vec::new(),
            offered_protocols: Vec::new(),
            select_protocol: None,
        }));
        let ws = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let http_l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let me = FakeRindled {
            ws_url: format!("ws://{}", ws.local_addr().unwrap()),
            control_url: format!("http://{}", http_l.local_addr().unwrap()),
            state,
        };
        let s = me.clone();
        smol::spawn(async move {
            while let Ok((stream, _)) = ws.accept().await {
                smol::spawn(s.clone().serve_ws(stream)).detach();
            }
        })
        .detach();
        let s = me.clone();
        smol::spawn(async move {
            while let Ok((stream, _)) = http_l.accept().await {
                smol::spawn(s.clone().serve_http(stream)).detach();
            }
        })
        .detach();
        me
    }

    async fn serve_http(self, mut stream: TcpStream) {
        let Ok(Some(req)) = http::read_request(&mut stream, 1 << 20).await else {
            return;
        };
        let (status, body) = {
            let mut s = self.state.lock().unwrap();
            s.materialize_bodies.push(req.body_text());
            s.auth_headers
                .push(req.header("authorization").map(String::from));
            if req.method != "POST" || req.path != "/materialize" {
                (404, String::from("{\"error\":\"no\"}"))
            } else if let Some(status) = s.refuse_mint {
                (status, String::from("{\"error\":\"not allowed\"}"))
            } else if s.fail_mint {
                (500, String::from("{\"error\":\"mint refused\"}"))
            } else {
                s.mints += 1;
                (200, format!("{{\"leaseToken\":\"lease-{}\"}}", s.mints))
            }
        };
        let _ =
            http::write_response(&mut stream, status, "application/json", body.as_bytes()).await;
    }

    async fn serve_ws(self, stream: TcpStream) {
        // As rindled does: frames go out as written (without it, the snapshot waits
        // behind the hello for the room's delayed ACK, ~40 ms per subscribe).
        let _ = stream.set_nodelay(true);
        let state = self.state.clone();
        // The signature is tungstenite's handshake callback; its error type is large.
        #[allow(clippy::result_large_err)]
        let negotiate =
            move |req: &Request, mut res: Response| -> Result<Response, ErrorResponse> {
                let offered = req
                    .headers()
                    .get("sec-websocket-protocol")
                    .map(|v| v.to_str().unwrap_or("(not text)").to_string());
                let mut s = state.lock().unwrap();
                let selected = s.select_protocol.clone().filter(|p| {
                    offered
                        .as_deref()
                        .is_some_and(|o| o.split(',').any(|x| x.trim() == p))
                });
                s.offered_protocols.push(offered);
                if let Some(p) = selected {
                    res.headers_mut()
                        .insert("sec-websocket-protocol", p.parse().unwrap());
                }
                Ok(res)
            };
        let Ok(ws) = async_tungstenite::accept_hdr_async(stream, negotiate).await else {
            return;
        };
        let (mut sink, mut source) = ws.split();
        let (tx, rx) = async_channel::unbounded::<Option<String>>();
        {
            let mut s = self.state.lock().unwrap();
            s.conns += 1;
            s.current = Some(tx.clone());
        }
        let me = self.clone();
        let reader = async move {
            while let Some(Ok(msg)) = source.next().await {
                let Message::Text(t) = msg else { continue };
                let Ok(v) = serde_json::from_str::<Value>(t.as_str()) else {
                    continue;
                };
                let mut s = me.state.lock().unwrap();
                match v["t"].as_str() {
                    Some("init") => s.inits.push(v["clientID"].as_str().unwrap_or("").into()),
                    Some("subscribe") => {
                        s.subscribes += 1;
                        s.leases.push(v["leaseToken"].as_str().unwrap_or("").into());
                        if s.hold {
                            s.held = true;
                        } else {
                            answer(&mut s, &tx);
                        }
                    }
                    _ => {}
                }
            }
        };
        let writer = async move {
            while let Ok(Some(text)) = rx.recv().await {
                if sink.send(Message::text(text)).await.is_err() {
                    return;
                }
            }
            let _ = sink.close(None).await;
        };
        reader.or(writer).await;
    }

    /// Sends a frame on the current upstream socket.
    pub fn send_raw(&self, text: &str) {
        let s = self.state.lock().unwrap();
        if let Some(tx) = &s.current {
            let _ = tx.try_send(Some(text.to_string()));
        }
    }

    /// A live batch of `ops` (seq + 1, cv + 1), then a `progress` at the new cv.
    pub fn live(&self, ops: &[Value]) {
        let mut s = self.state.lock().unwrap();
        s.seq += 1;
        s.cv += 1;
        for op in ops {
            apply(&mut s, op);
        }
        let fp = normalized_fp(s.tables.iter());
        let batch = json!({"t":"nbatch","queryId":1,"batch":{
            "epoch": s.epoch, "seq": s.seq, "normalizedFp": fp, "ops": ops, "cv": s.cv}});
        let progress = json!({"t":"progress","frame":{"cvMin": s.cv}});
        if let Some(tx) = &s.current {
            let _ = tx.try_send(Some(batch.to_string()));
            let _ = tx.try_send(Some(progress.to_string()));
        }
    }

    /// Drops the current upstream socket.
    pub fn drop_conn(&self) {
        let mut s = self.state.lock().unwrap();
        if let Some(tx) = s.current.take() {
            let _ = tx.try_send(None);
        }
    }

    /// Stops answering subscribes until [`FakeRindled::release`].
    pub fn hold(&self) {
        self.state.lock().unwrap().hold = true;
    }

    /// Answers a held subscribe, and every later one.
    pub fn release(&self) {
        let mut s = self.state.lock().unwrap();
        s.hold = false;
        if s.held {
            s.held = false;
            if let Some(tx) = s.current.clone() {
                answer(&mut s, &tx);
            }
        }
    }

    pub fn subscribes(&self) -> usize {
        self.state.lock().unwrap().subscribes
    }

    pub fn mints(&self) -> usize {
        self.state.lock().unwrap().mints
    }

    pub fn conns(&self) -> usize {
        self.state.lock().unwrap().conns
    }

    /// Every upgrade's offered subprotocols so far.
    pub fn offered_protocols(&self) -> Vec<Option<String>> {
        self.state.lock().unwrap().offered_protocols.clone()
    }
}

fn answer(s: &mut RState, tx: &Sender<Option<String>>) {
    s.epoch += 1;
    s.seq = 0;
    let fp = normalized_fp(s.tables.iter());
    let tables: Vec<Value> = s
        .tables
        .iter()
        .map(|t| {
            let mut text = String::new();
            t.write_json(&mut text);
            serde_json::from_str(&text).unwrap()
        })
        .collect();
    let hello = json!({"t":"nhello","queryId":1,"bootId": s.boot, "hello": {
        "epoch": s.epoch, "comparatorVersion": 2, "tables": tables, "normalizedFp": fp}});
    let ops: Vec<Value> = s
        .rows
        .iter()
        .map(|((t, _), row)| json!({"table": t, "op": "add", "row": row}))
        .collect();
    let snapshot = json!({"t":"nbatch","queryId":1,"batch":{
        "epoch": s.epoch, "seq": 0, "normalizedFp": fp, "ops": ops, "cv": s.cv}});
    let progress = json!({"t":"progress","frame":{"cvMin": s.cv}});
    for f in [hello, snapshot, progress] {
        let _ = tx.try_send(Some(f.to_string()));
    }
}

fn apply(s: &mut RState, op: &Value) {
    let table = op["table"].as_str().unwrap().to_string();
    let schema = s.tables.iter().find(|t| *t.name == table).unwrap().clone();
    match op["op"].as_str().unwrap() {
        "add" => {
            s.rows
                .insert((table, pk_of(&schema, &op["row"])), op["row"].clone());
        }
        "remove" => {
            s.rows.remove(&(table, pk_of(&schema, &op["row"])));
        }
        "edit" => {
            s.rows.remove(&(table.clone(), pk_of(&schema, &op["old"])));
            s.rows
                .insert((table, pk_of(&schema, &op["new"])), op["new"].clone());
        }
        other => panic!("unknown op {other}"),
    }
}

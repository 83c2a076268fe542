//! A fake write authority over HTTP: `claim-room-epoch` (bumps the epoch),
//! `room-lmids` (from its ledger rows), and `apply-row-change-txn` with epoch fencing,
//! dedup by `(source, offset)` (identity = `batchHash`), and all-or-nothing CAS.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rindle_room_smol::http;
use serde_json::{json, Value};
use smol::net::{TcpListener, TcpStream};

/// The authority's state.
#[derive(Default)]
pub struct AState {
    pub epoch: u64,
    pub cv: u64,
    /// `(source, offset)` → batchHash.
    pub applied: HashMap<(String, String), String>,
    /// `(table, pk JSON)` → row.
    pub rows: BTreeMap<(String, String), Value>,
    /// Down: every call answers 503.
    pub down: bool,
    /// Every apply body received (answered or not), in order.
    pub bodies: Vec<String>,
    pub claims: usize,
    /// Applies refused as fenced, by the epoch they carried.
    pub fenced: Vec<u64>,
    /// Streams each committed apply's data changes back through this daemon, as
    /// rindled does (the room confirms a flush's record at its echo); `None`: no echo.
    pub echo_to: Option<super::rindled::FakeRindled>,
}

/// The fake authority.
#[derive(Clone)]
pub struct FakeAuthority {
    pub base: String,
    pub state: Arc<Mutex<AState>>,
}

fn pk_cols(table: &str) -> &'static [usize] {
    match table {
        "_rindle_room_mutation_outcomes" => &[0, 1],
        _ => &[0],
    }
}

fn pk(table: &str, row: &Value) -> Value {
    Value::Array(pk_cols(table).iter().map(|&i| row[i].clone()).collect())
}

impl FakeAuthority {
    pub async fn start() -> FakeAuthority {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let me = FakeAuthority {
            base: format!("http://{}", l.local_addr().unwrap()),
            state: Arc::new(Mutex::new(AState::default())),
        };
        let s = me.clone();
        smol::spawn(async move {
            while let Ok((stream, _)) = l.accept().await {
                smol::spawn(s.clone().serve(stream)).detach();
            }
        })
        .detach();
        me
    }

    pub fn set_down(&self, down: bool) {
        self.state.lock().unwrap().down = down;
    }

    /// Another placement claims the document.
    pub fn fence(&self) {
        self.state.lock().unwrap().epoch += 1;
    }

    /// A row the authority holds.
    pub fn row(&self, table: &str, pk_cells: Value) -> Option<Value> {
        let key = (table.to_string(), pk_cells.to_string());
        self.state.lock().unwrap().rows.get(&key).cloned()
    }

    /// Rows of `table`.
    pub fn rows(&self, table: &str) -> Vec<Value> {
        let s = self.state.lock().unwrap();
        s.rows
            .iter()
            .filter(|((t, _), _)| t == table)
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// Puts a row as if another writer committed it.
    pub fn put(&self, table: &str, row: Value) {
        let key = (table.to_string(), pk(table, &row).to_string());
        self.state.lock().unwrap().rows.insert(key, row);
    }

    async fn serve(self, mut stream: TcpStream) {
        let Ok(Some(req)) = http::read_request(&mut stream, 1 << 24).await else {
            return;
        };
        let (status, body) = self.handle(&req.path, &req.body_text());
        let _ =
            http::write_response(&mut stream, status, "application/json", body.as_bytes()).await;
        let committed = req.path == "/apply-row-change-txn" && body.contains("\"applied\":true");
        let echo_to = self.state.lock().unwrap().echo_to.clone();
        if let (true, Some(daemon)) = (committed, echo_to) {
            let sent: Value = serde_json::from_str(&req.body_text()).unwrap_or_default();
            let ops = echo_ops(&sent);
            if !ops.is_empty() {
                daemon.live(&ops);
            }
        }
    }

    /// Echoes every committed apply through `daemon` from now on.
    pub fn echo_to(&self, daemon: &super::rindled::FakeRindled) {
        self.state.lock().unwrap().echo_to = Some(daemon.clone());
    }

    fn handle(&self, path: &str, body: &str) -> (u16, String) {
        let mut s = self.state.lock().unwrap();
        if path == "/apply-row-change-txn" {
            s.bodies.push(body.to_string());
        }
        if s.down {
            return (503, json!({"error":"authority down"}).to_string());
        }
        let Ok(v) = serde_json::from_str::<Value>(body) else {
            return (400, json!({"error":"invalid JSON"}).to_string());
        };
        match path {
            "/claim-room-epoch" => {
                s.epoch += 1;
                s.claims += 1;
                (200, json!({"epoch": s.epoch}).to_string())
            }
            "/room-lmids" => {
                let mut lmids = serde_json::Map::new();
                for c in v["clients"].as_array().cloned().unwrap_or_default() {
                    let key = (
                        "_rindle_client_mutations".to_string(),
                        Value::Array(vec![c.clone()]).to_string(),
                    );
                    let lmid = s.rows.get(&key).map_or(json!(0), |r| r[1].clone());
                    lmids.insert(c.as_str().unwrap_or("").to_string(), lmid);
                }
                (200, json!({"lmids": lmids}).to_string())
            }
            "/apply-row-change-txn" => apply(&mut s, &v),
            _ => (404, json!({"error":"unknown route"}).to_string()),
        }
    }
}

/// The upstream ops a committed apply's data changes make (the room's own tables, `_…`,
/// left out).
fn echo_ops(body: &Value) -> Vec<Value> {
    let changes = body["changes"].as_array().cloned().unwrap_or_default();
    changes
        .iter()
        .filter(|c| !c["table"].as_str().unwrap_or("_").starts_with('_'))
        .map(|c| match c["op"].as_str() {
            Some("add") => json!({"table": c["table"], "op": "add", "row": c["row"]}),
            Some("remove") => json!({"table": c["table"], "op": "remove", "row": c["old"]}),
            _ => json!({"table": c["table"], "op": "edit", "old": c["old"], "new": c["row"]}),
        })
        .collect()
}

fn apply(s: &mut AState, v: &Value) -> (u16, String) {
    let epoch = v["epoch"].as_u64().unwrap_or(0);
    if epoch != s.epoch {
        s.fenced.push(epoch);
        return (
            409,
            json!({"error":"fenced","currentEpoch": s.epoch}).to_string(),
        );
    }
    let id = (
        v["source"].as_str().unwrap_or("").to_string(),
        v["offset"].as_str().unwrap_or("").to_string(),
    );
    let hash = v["batchHash"].as_str().unwrap_or("").to_string();
    if let Some(prev) = s.applied.get(&id) {
        if *prev == hash {
            return (200, json!({"applied": false}).to_string());
        }
        return (
            500,
            json!({"error":"batch identity mismatch: same flush id, different body"}).to_string(),
        );
    }
    let changes = v["changes"].as_array().cloned().unwrap_or_default();
    let mut conflicts = Vec::new();
    for c in &changes {
        let table = c["table"].as_str().unwrap_or("");
        let image = if c["op"] == "add" {
            &c["row"]
        } else {
            &c["old"]
        };
        let key = (table.to_string(), pk(table, image).to_string());
        let current = s.rows.get(&key);
        let ok = match c["op"].as_str() {
            Some("add") => current.is_none(),
            _ => current == Some(&c["old"]),
        };
        if !ok {
            conflicts.push(json!({"table": table, "pk": pk(table, image), "current": current}));
        }
    }
    if !conflicts.is_empty() {
        return (
            409,
            json!({"error":"conflict","conflicts": conflicts}).to_string(),
        );
    }
    for c in &changes {
        let table = c["table"].as_str().unwrap_or("");
        match c["op"].as_str() {
            Some("remove") => {
                s.rows
                    .remove(&(table.to_string(), pk(table, &c["old"]).to_string()));
            }
            _ => {
                let key = (table.to_string(), pk(table, &c["row"]).to_string());
                s.rows.insert(key, c["row"].clone());
            }
        }
    }
    s.applied.insert(id, hash);
    s.cv += 1;
    (200, json!({"applied": true, "cv": s.cv}).to_string())
}

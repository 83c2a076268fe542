//! The client side of the load benchmark: real websocket connections (async-tungstenite
//! over smol), each `init`ed, subscribed to the lmid query and to its own view with a
//! lease token; then the push phase, which stamps every mutation's send, its fan-out
//! (the `nbatch` on the connection watching the touched view) and its ack (the lmid
//! frame on the pushing connection).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_channel::{Receiver, Sender};
use async_tungstenite::tungstenite::protocol::WebSocketConfig;
use async_tungstenite::tungstenite::Message;
use async_tungstenite::{WebSocketReceiver, WebSocketSender};
use futures_lite::{FutureExt, StreamExt};
use rindle_room_core::json::tree::JsValue;
use rindle_room_core::token::{self, MintOptions};
use serde_json::Value;
use smol::net::TcpStream;

use crate::server::{CREATOR, DOC, KEY, KID, MODIFIED};

/// `modified` of mutation `j` is `BASE + j`: never a value of the data set.
pub const BASE: u64 = 1_000_000_000;

/// Who pushes which mutation, touching which row.
///
/// Mutation `j` is pushed by connection `p = j % pushers` as its mid `j / pushers + 1`,
/// so every pushing connection sends its mutations in `j` order. It updates `modified`
/// of an issue of creator `c = (p + 1 + r % (clients - 1)) % clients`, `r = j / pushers`:
/// never the pusher's own view, so every fan-out crosses to another connection, and
/// consecutive mutations touch different views.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Connections, one view each (`issue where creatorID = u`).
    pub clients: usize,
    /// Connections that push (the first `pushers`).
    pub pushers: usize,
    /// Mutations in the push phase.
    pub mutations: usize,
    /// Rows of `issue` (a multiple of `clients`).
    pub rows: usize,
}

impl Plan {
    pub fn pusher(&self, j: usize) -> usize {
        j % self.pushers
    }

    pub fn mid(&self, j: usize) -> u64 {
        (j / self.pushers) as u64 + 1
    }

    /// The mutation that connection `p` pushed as `mid`.
    pub fn j_of(&self, p: usize, mid: u64) -> usize {
        p + (mid as usize - 1) * self.pushers
    }

    /// `(issue id, its creator)` that mutation `j` updates.
    pub fn target(&self, j: usize) -> (usize, usize) {
        let p = self.pusher(j);
        let r = j / self.pushers;
        let c = (p + 1 + r % (self.clients - 1)) % self.clients;
        let per_creator = self.rows / self.clients;
        (c + self.clients * (r % per_creator), c)
    }

    /// The `pushMutation` frame of mutation `j`.
    pub fn frame(&self, j: usize) -> String {
        let (id, _) = self.target(j);
        format!(
            "{{\"t\":\"pushMutation\",\"envelope\":{{\"clientID\":\"c{p}\",\"mid\":{mid},\
             \"name\":\"issue.update\",\"args\":{{\"id\":{id},\"modified\":{v}}}}}}}",
            p = self.pusher(j),
            mid = self.mid(j),
            v = BASE + j as u64,
        )
    }
}

/// The stamps of one push phase, in ns since `start` plus one (0 = not yet).
#[derive(Debug)]
pub struct Recorder {
    pub start: Instant,
    pub plan: Plan,
    /// When the push was handed to the socket.
    pub sent: Vec<AtomicU64>,
    /// When it was due (fixed-rate runs).
    pub due: Vec<AtomicU64>,
    /// When its fan-out `nbatch` arrived on the watching connection.
    pub fanout: Vec<AtomicU64>,
    /// When its lmid ack arrived on the pushing connection.
    pub acked: Vec<AtomicU64>,
    pub fanouts: AtomicUsize,
    pub acks: AtomicUsize,
    pub duplicate_fanouts: AtomicUsize,
    pub frames_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub problems: Mutex<Vec<String>>,
}

impl Recorder {
    pub fn new(plan: Plan) -> Recorder {
        let v = || (0..plan.mutations).map(|_| AtomicU64::new(0)).collect();
        Recorder {
            start: Instant::now(),
            plan,
            sent: v(),
            due: v(),
            fanout: v(),
            acked: v(),
            fanouts: AtomicUsize::new(0),
            acks: AtomicUsize::new(0),
            duplicate_fanouts: AtomicUsize::new(0),
            frames_in: AtomicU64::new(0),
            bytes_in: AtomicU64::new(0),
            problems: Mutex::new(Vec::new()),
        }
    }

    pub fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64 + 1
    }

    pub fn at(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.start).as_nanos() as u64 + 1
    }

    fn problem(&self, what: String) {
        let mut p = self.problems.lock().unwrap();
        if p.len() < 20 {
            p.push(what);
        }
    }

    pub fn complete(&self) -> bool {
        self.fanouts.load(Ordering::Relaxed) == self.plan.mutations
            && self.acks.load(Ordering::Relaxed) == self.plan.mutations
    }
}

/// A lease token for `sub` authorizing `issue where creatorID = creator`.
pub fn lease(creator: usize, sub: &str, now_ms: u64) -> String {
    let ast = format!(
        "{{\"table\":\"issue\",\"where\":{{\"type\":\"simple\",\"op\":\"=\",\
         \"left\":{{\"type\":\"column\",\"name\":\"creatorID\"}},\
         \"right\":{{\"type\":\"literal\",\"value\":{creator}}}}}}}"
    );
    let ast = JsValue::parse(&ast).expect("the view AST is JSON");
    token::mint(&MintOptions {
        doc: DOC,
        ast: Some(&ast),
        sub,
        kid: KID,
        key: KEY,
        ttl_ms: 3_600_000.0,
        now_ms: now_ms as f64,
        scopes_hash: None,
    })
    .expect("minting a lease token works")
}

/// One subscribed connection.
pub struct Conn {
    pub u: usize,
    tx: WebSocketSender<TcpStream>,
    rx: WebSocketReceiver<TcpStream>,
    /// Rows in the view's snapshot.
    pub snapshot_rows: usize,
}

fn text_of(msg: Message) -> Option<String> {
    match msg {
        Message::Text(t) => Some(t.as_str().to_string()),
        _ => None,
    }
}

/// Connects client `u` (`clientID c<u>`, subject `u<u>`), subscribes the lmid query
/// (queryId 0) and its view (queryId 1), and waits for both snapshots and the
/// `progress` that follows the second.
pub async fn connect(port: u16, u: usize, lease_token: &str) -> Result<Conn, String> {
    let stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| format!("client {u}: connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    let url = format!("ws://127.0.0.1:{port}/");
    // tungstenite's default read buffer (128 KiB) is zero-filled before every read: a
    // small one keeps the client's CPU for the server.
    let config = WebSocketConfig::default().read_buffer_size(8 * 1024);
    let (ws, _) = async_tungstenite::client_async_with_config(url, stream, Some(config))
        .await
        .map_err(|e| format!("client {u}: ws handshake: {e}"))?;
    let (mut tx, mut rx) = ws.split();
    let frames = [
        format!("{{\"t\":\"init\",\"clientID\":\"c{u}\"}}"),
        String::from(
            "{\"t\":\"subscribe\",\"queryId\":0,\"name\":\"_rindle/clientLmid\",\"args\":{}}",
        ),
        format!("{{\"t\":\"subscribe\",\"queryId\":1,\"leaseToken\":\"{lease_token}\"}}"),
    ];
    for f in frames {
        tx.send(Message::text(f))
            .await
            .map_err(|e| format!("client {u}: send: {e}"))?;
    }
    let (mut lmid_snapshot, mut view_snapshot, mut progress) = (false, None, 0);
    while !(lmid_snapshot && view_snapshot.is_some() && progress >= 2) {
        let msg = async { rx.next().await }
            .or(async {
                smol::Timer::after(Duration::from_secs(60)).await;
                None
            })
            .await;
        let text = match msg {
            Some(Ok(m)) => match text_of(m) {
                Some(t) => t,
                None => continue,
            },
            other => {
                return Err(format!(
                    "client {u}: socket ended while subscribing: {other:?}"
                ))
            }
        };
        let v: Value =
            serde_json::from_str(&text).map_err(|e| format!("client {u}: bad frame {e}"))?;
        match v["t"].as_str() {
            Some("nhello") => {}
            Some("progress") => progress += 1,
            Some("nbatch") if v["batch"]["seq"] == 0 => match v["queryId"].as_u64() {
                Some(0) => lmid_snapshot = true,
                Some(1) => {
                    view_snapshot = Some(v["batch"]["ops"].as_array().map_or(0, Vec::len));
                }
                _ => return Err(format!("client {u}: unexpected {text}")),
            },
            _ => return Err(format!("client {u}: unexpected {text}")),
        }
    }
    Ok(Conn {
        u,
        tx,
        rx,
        snapshot_rows: view_snapshot.unwrap_or(0),
    })
}

/// How mutations are fed to the pushing connections.
pub enum Feed {
    /// As fast as acks allow: at most `inflight` un-acked mutations per connection.
    MaxRate { inflight: usize },
    /// Mutation numbers from a scheduler (open loop).
    Scheduled(Receiver<usize>),
}

/// The two halves of one connection in the push phase.
pub fn run(conn: Conn, rec: Arc<Recorder>, feed: Option<Feed>) -> (ReadHalf, Option<WriteHalf>) {
    let Conn { u, tx, rx, .. } = conn;
    let (permit_tx, permit_rx) = match &feed {
        Some(Feed::MaxRate { inflight }) => {
            let (a, b) = async_channel::bounded::<()>(*inflight);
            (Some(a), Some(b))
        }
        _ => (None, None),
    };
    let read = ReadHalf {
        u,
        rx,
        rec: rec.clone(),
        permits: permit_rx,
        lmid: 0,
        client: format!("c{u}"),
    };
    let write = feed.map(|feed| WriteHalf {
        u,
        tx,
        rec,
        feed: Some(feed),
        permits: permit_tx,
    });
    (read, write)
}

/// The reading half: stamps fan-outs and acks.
pub struct ReadHalf {
    u: usize,
    rx: WebSocketReceiver<TcpStream>,
    rec: Arc<Recorder>,
    permits: Option<Receiver<()>>,
    lmid: u64,
    client: String,
}

impl ReadHalf {
    /// Reads until the socket ends.
    pub async fn run(mut self) {
        while let Some(msg) = self.rx.next().await {
            match msg {
                Ok(Message::Text(t)) => {
                    let now = self.rec.now();
                    self.rec.frames_in.fetch_add(1, Ordering::Relaxed);
                    self.rec
                        .bytes_in
                        .fetch_add(t.len() as u64, Ordering::Relaxed);
                    self.frame(t.as_str(), now);
                }
                Ok(Message::Close(c)) => {
                    self.rec.problem(format!(
                        "client {}: the room closed the socket: {c:?}",
                        self.u
                    ));
                    return;
                }
                Ok(_) => {}
                Err(e) => {
                    self.rec
                        .problem(format!("client {}: socket error: {e}", self.u));
                    return;
                }
            }
        }
    }

    fn frame(&mut self, text: &str, now: u64) {
        let rec = &*self.rec;
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            rec.problem(format!("client {}: non-JSON frame {text}", self.u));
            return;
        };
        match v["t"].as_str() {
            Some("progress") => {}
            Some("nbatch") => {
                let ops = v["batch"]["ops"].as_array().map_or(&[][..], Vec::as_slice);
                match v["queryId"].as_u64() {
                    Some(1) => {
                        for op in ops {
                            self.fanout(op, now);
                        }
                    }
                    Some(0) => {
                        for op in ops {
                            let row = if op["op"] == "edit" {
                                &op["new"]
                            } else {
                                &op["row"]
                            };
                            if row[0].as_str() == Some(self.client.as_str()) {
                                if let Some(lmid) = row[1].as_u64() {
                                    self.ack(lmid, now);
                                }
                            }
                        }
                    }
                    _ => rec.problem(format!("client {}: unexpected {text}", self.u)),
                }
            }
            _ => rec.problem(format!("client {}: unexpected {text}", self.u)),
        }
    }

    fn fanout(&self, op: &Value, now: u64) {
        let rec = &*self.rec;
        if op["op"] != "edit" {
            rec.problem(format!("client {}: unexpected op {op}", self.u));
            return;
        }
        let new = &op["new"];
        if new[CREATOR].as_u64() != Some(self.u as u64) {
            rec.problem(format!("client {}: a row of another view: {op}", self.u));
        }
        let Some(j) = new[MODIFIED]
            .as_u64()
            .and_then(|m| m.checked_sub(BASE))
            .map(|j| j as usize)
            .filter(|&j| j < rec.plan.mutations)
        else {
            rec.problem(format!("client {}: an edit no mutation made: {op}", self.u));
            return;
        };
        if rec.fanout[j]
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            rec.fanouts.fetch_add(1, Ordering::Relaxed);
        } else {
            rec.duplicate_fanouts.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn ack(&mut self, lmid: u64, now: u64) {
        let rec = &*self.rec;
        while self.lmid < lmid {
            self.lmid += 1;
            let j = rec.plan.j_of(self.u, self.lmid);
            if j < rec.plan.mutations
                && rec.acked[j]
                    .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
            {
                rec.acks.fetch_add(1, Ordering::Relaxed);
            }
            if let Some(p) = &self.permits {
                let _ = p.try_recv();
            }
        }
    }
}

/// The writing half of a pushing connection.
pub struct WriteHalf {
    u: usize,
    tx: WebSocketSender<TcpStream>,
    rec: Arc<Recorder>,
    feed: Option<Feed>,
    permits: Option<Sender<()>>,
}

impl WriteHalf {
    /// Pushes this connection's mutations as the feed says.
    pub async fn run(mut self) {
        let plan = self.rec.plan;
        match self.feed.take() {
            None => {}
            Some(Feed::MaxRate { .. }) => {
                let mut j = self.u;
                while j < plan.mutations {
                    if let Some(p) = &self.permits {
                        if p.send(()).await.is_err() {
                            return;
                        }
                    }
                    if !self.push(j).await {
                        return;
                    }
                    j += plan.pushers;
                }
            }
            Some(Feed::Scheduled(rx)) => {
                while let Ok(j) = rx.recv().await {
                    if !self.push(j).await {
                        return;
                    }
                }
            }
        }
    }

    async fn push(&mut self, j: usize) -> bool {
        let frame = self.rec.plan.frame(j);
        self.rec.sent[j].store(self.rec.now(), Ordering::Relaxed);
        if let Err(e) = self.tx.send(Message::text(frame)).await {
            self.rec
                .problem(format!("client {}: push failed: {e}", self.u));
            return false;
        }
        true
    }
}

//! Three boxes, one dies (docs/fleet.md, "Acknowledgement modes"): a fake API server
//! (room-boot with real epoch fencing, one write authority per doc with lmids and dedup), a
//! fake rindled, and three `rindle-room` processes in fleet mode. Thirty writers, one per
//! doc, find their box with `locate_room` over the live boxes and push mutations; one box
//! is killed with SIGKILL mid-traffic, its docs move to the survivors (new epochs), its
//! writers re-lease and reconnect; then it restarts, settles its journals (a new epoch
//! again: its docs move back, and the survivors' placements are fenced).
//!
//! - `ack = "flushed"`: every acknowledged mutation is at its doc's authority exactly
//!   once, and nothing else is; no writer ever sees its lmid go backwards.
//! - `ack = "journaled"`: a writer that reconnects and finds its lmid behind what a dead
//!   or fenced box acknowledged takes a fresh clientID (as an app does after a gap); every
//!   acknowledged mutation is at its authority or listed as stranded by the box that
//!   acknowledged it — none is lost silently.

mod common;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_tungstenite::tungstenite::Message;
use async_tungstenite::WebSocketStream;
use common::api::{FakeApi, SHELL_SECRET};
use common::bin::Room as Proc;
use common::{token_for, FakeRindled, CONTROL, KEY, KID};
use futures_lite::{FutureExt, StreamExt};
use rindle_room_core::fleet::{locate_room, room_path};
use serde_json::Value;
use smol::net::TcpStream;

const DOCS: usize = 30;
const BOXES: [&str; 3] = ["A", "B", "C"];
/// Mutations a writer keeps in flight.
const WINDOW: usize = 4;
const TALLY: &str = r#"{"table":"tally"}"#;

/// The live boxes (id → downstream port) and the writers' stop signal.
struct World {
    live: Mutex<BTreeMap<&'static str, u16>>,
    stop: AtomicBool,
}

impl World {
    fn locate(&self, doc: &str) -> Option<u16> {
        let live = self.live.lock().unwrap();
        let ids: Vec<&str> = live.keys().copied().collect();
        locate_room(doc, &ids).map(|id| live[id])
    }
}

/// What one writer saw.
#[derive(Debug, Default)]
struct Report {
    doc: String,
    /// `(clientID, mid)` whose lmid was released to the writer.
    acked: BTreeSet<(String, u64)>,
    /// Acknowledged mids a reconnect found the lmid behind (journaled mode).
    in_doubt: Vec<(String, u64)>,
    /// Sent and never acknowledged when the writer ran out of time.
    unfinished: Vec<(String, u64)>,
    /// Sent and never acknowledged under a clientID given up after a gap.
    abandoned: Vec<(String, u64)>,
    /// Frames a writer must never see here (outcomes: a rejection or a duplicate).
    unexpected: Vec<String>,
    sessions: usize,
}

/// A writer's identity and progress, carried across sessions.
struct Writer {
    doc_idx: usize,
    gen: u64,
    next_mid: u64,
    acked: u64,
    pending: VecDeque<u64>,
}

impl Writer {
    fn client(&self) -> String {
        format!("w{}-{}", self.doc_idx, self.gen)
    }

    fn note_id(&self, mid: u64) -> u64 {
        note_id(&self.client(), mid)
    }

    fn push(&self, mid: u64) -> String {
        let id = self.note_id(mid);
        format!(
            r#"{{"t":"pushMutation","envelope":{{"clientID":"{}","mid":{mid},"name":"note.insert","args":{{"id":{id},"body":"m{mid}","owner":"u1"}}}}}}"#,
            self.client()
        )
    }
}

type Ws = WebSocketStream<TcpStream>;

async fn connect(port: u16, path: &str) -> Option<Ws> {
    let attempt = async {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.ok()?;
        let url = format!("ws://127.0.0.1:{port}{path}");
        async_tungstenite::client_async(url, stream)
            .await
            .ok()
            .map(|(ws, _)| ws)
    };
    attempt
        .or(async {
            smol::Timer::after(Duration::from_secs(3)).await;
            None
        })
        .await
}

/// The next frame within `ms` (`None`: closed, dropped or quiet).
async fn next(ws: &mut Ws, ms: u64) -> Option<Value> {
    let read = async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => return serde_json::from_str(t.as_str()).ok(),
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return None,
                Some(Ok(_)) => continue,
            }
        }
    };
    read.or(async {
        smol::Timer::after(Duration::from_millis(ms)).await;
        None
    })
    .await
}

/// The lmid an lmid-query frame carries (`Some(0)` for an empty snapshot).
fn lmid_in(v: &Value) -> Option<u64> {
    if v["t"] != "nbatch" || v["queryId"] != 0 {
        return None;
    }
    let Some(op) = v["batch"]["ops"].as_array().and_then(|ops| ops.first()) else {
        return Some(0);
    };
    let row = if op["op"] == "edit" {
        &op["new"]
    } else {
        &op["row"]
    };
    row[1].as_u64()
}

/// One connection's life: init, the lmid query, a lease subscribe; the first released
/// lmid settles what the last session left open; then pushes until told to stop.
async fn session(world: &World, doc: &str, port: u16, w: &mut Writer, r: &mut Report) {
    let Some(mut ws) = connect(port, &room_path(doc)).await else {
        return;
    };
    let client = w.client();
    let frames = [
        format!(r#"{{"t":"init","clientID":"{client}"}}"#),
        String::from(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid","args":{}}"#),
        format!(
            r#"{{"t":"subscribe","queryId":1,"leaseToken":"{}"}}"#,
            token_for(doc, TALLY, "u1")
        ),
    ];
    for f in frames {
        if ws.send(Message::text(f)).await.is_err() {
            return;
        }
    }
    // (cv, lmid) frames not released yet; the release point.
    let mut held: Vec<(i64, u64)> = Vec::new();
    let mut confirmed: Option<u64> = None;
    loop {
        let Some(v) = next(&mut ws, 5_000).await else {
            return;
        };
        if let Some(lmid) = lmid_in(&v) {
            held.push((v["batch"]["cv"].as_i64().unwrap_or(i64::MAX), lmid));
            continue;
        }
        match v["t"].as_str() {
            Some("progress") => {
                let cv_min = v["frame"]["cvMin"].as_i64().unwrap_or(-1);
                let released = held
                    .iter()
                    .filter(|(cv, _)| *cv <= cv_min)
                    .map(|(_, l)| *l)
                    .max();
                held.retain(|(cv, _)| *cv > cv_min);
                let Some(lmid) = released else { continue };
                if confirmed.is_none() {
                    confirmed = Some(lmid);
                    if lmid < w.acked {
                        // What a box acknowledged never reached the authority (yet): the
                        // mids are in doubt, and this clientID's sequence is broken.
                        r.in_doubt
                            .extend((lmid + 1..=w.acked).map(|m| (client.clone(), m)));
                        r.abandoned
                            .extend(w.pending.drain(..).map(|m| (client.clone(), m)));
                        w.gen += 1;
                        w.next_mid = 1;
                        w.acked = 0;
                        return;
                    }
                    for &m in w.pending.iter().filter(|m| **m > lmid) {
                        if ws.send(Message::text(w.push(m))).await.is_err() {
                            return;
                        }
                    }
                }
                for m in w.pending.iter().filter(|m| **m <= lmid) {
                    r.acked.insert((client.clone(), *m));
                }
                w.pending.retain(|m| *m > lmid);
                w.acked = w.acked.max(lmid);
            }
            Some("mutationOutcome") | Some("error") => r.unexpected.push(v.to_string()),
            _ => {}
        }
        if confirmed.is_none() {
            continue;
        }
        if world.stop.load(Ordering::SeqCst) {
            if w.pending.is_empty() {
                return;
            }
            continue;
        }
        while w.pending.len() < WINDOW {
            let mid = w.next_mid;
            w.next_mid += 1;
            w.pending.push_back(mid);
            if ws.send(Message::text(w.push(mid))).await.is_err() {
                return;
            }
        }
    }
}

async fn writer(world: Arc<World>, doc_idx: usize, deadline: Instant) -> Report {
    let doc = format!("deck/{doc_idx}");
    let mut w = Writer {
        doc_idx,
        gen: 0,
        next_mid: 1,
        acked: 0,
        pending: VecDeque::new(),
    };
    let mut r = Report {
        doc: doc.clone(),
        ..Report::default()
    };
    loop {
        let stopping = world.stop.load(Ordering::SeqCst);
        if stopping && w.pending.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            let client = w.client();
            r.unfinished
                .extend(w.pending.drain(..).map(|m| (client.clone(), m)));
            break;
        }
        if let Some(port) = world.locate(&doc) {
            r.sessions += 1;
            session(&world, &doc, port, &mut w, &mut r).await;
        }
        smol::Timer::after(Duration::from_millis(50)).await;
    }
    r
}

fn write_config(dir: &Path, id: &str, api: &FakeApi, ack: &str, debounce_ms: u64) -> PathBuf {
    let text = format!(
        r#"
[fleet]
api_url = "{api}"
shell_secret = "{SHELL_SECRET}"
instance = "box-{id}"
data_dir = "{data}"
ack = "{ack}"
journal_sync = "box"
idle_evict_ms = 600000

[control]
auth_token = "{CONTROL}"

[downstream.token_keys]
{KID} = "{KEY}"

[writes]
owned_tables = ["note"]
crud = true
flush_debounce_ms = {debounce_ms}
"#,
        api = api.url,
        data = dir.join(id).display(),
    );
    let path = dir.join(format!("{id}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

async fn stats(port: u16) -> Value {
    let url = format!("http://127.0.0.1:{port}/stats");
    let headers = vec![("authorization".to_string(), format!("Bearer {CONTROL}"))];
    let res = rindle_room_smol::http::request("GET", &url, &headers, b"", common::WAIT)
        .await
        .expect("the control plane answers");
    serde_json::from_slice(&res.body).unwrap()
}

async fn ready(port: u16) -> bool {
    let url = format!("http://127.0.0.1:{port}/readyz");
    rindle_room_smol::http::request("GET", &url, &[], b"", common::WAIT)
        .await
        .is_ok_and(|r| r.status == 200)
}

/// Everything one run observed.
struct Run {
    reports: Vec<Report>,
    /// Per doc: note ids and ledger rows at its authority, and its epoch.
    notes: BTreeMap<String, BTreeSet<u64>>,
    lmids: BTreeMap<String, BTreeMap<String, u64>>,
    epochs: BTreeMap<String, u64>,
    /// Applies the authorities refused as fenced (a placement that lost its doc).
    fenced: usize,
    /// `(doc, clientID, mid)` listed as stranded by any box.
    stranded: BTreeSet<(String, String, u64)>,
    victim: &'static str,
    victim_docs: Vec<String>,
}

fn run(ack: &str, debounce_ms: u64) -> Run {
    smol::block_on(async {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("fleet_failover-{}-{ack}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let rindled = FakeRindled::notes().await;
        let api = FakeApi::start(&rindled.ws_url).await;
        api.state.lock().unwrap().per_doc_authority = true;

        let mut procs: BTreeMap<&'static str, Proc> = BTreeMap::new();
        let world = Arc::new(World {
            live: Mutex::new(BTreeMap::new()),
            stop: AtomicBool::new(false),
        });
        for id in BOXES {
            let p = Proc::start_fleet(&write_config(&dir, id, &api, ack, debounce_ms)).await;
            world.live.lock().unwrap().insert(id, p.port);
            procs.insert(id, p);
        }
        // The box owning the most docs dies.
        let docs: Vec<String> = (0..DOCS).map(|i| format!("deck/{i}")).collect();
        let victim = *BOXES
            .iter()
            .max_by_key(|b| {
                docs.iter()
                    .filter(|d| locate_room(d, &BOXES) == Some(**b))
                    .count()
            })
            .unwrap();
        let victim_docs: Vec<String> = docs
            .iter()
            .filter(|d| locate_room(d, &BOXES) == Some(victim))
            .cloned()
            .collect();

        let deadline = Instant::now() + Duration::from_secs(60);
        let tasks: Vec<_> = (0..DOCS)
            .map(|i| smol::spawn(writer(world.clone(), i, deadline)))
            .collect();
        smol::Timer::after(Duration::from_millis(2_500)).await;

        // kill -9 mid-traffic; the survivors take its docs.
        let mut dead = procs.remove(victim).unwrap();
        dead.child.kill().expect("SIGKILL");
        let _ = dead.child.wait();
        world.live.lock().unwrap().remove(victim);
        smol::Timer::after(Duration::from_millis(3_000)).await;

        // It comes back on its data directory; its docs come back to it.
        let back = Proc::start_fleet(&dir.join(format!("{victim}.toml"))).await;
        let control = back.control_port;
        world.live.lock().unwrap().insert(victim, back.port);
        procs.insert(victim, back);
        let settle = Instant::now() + Duration::from_secs(20);
        while !ready(control).await {
            assert!(Instant::now() < settle, "the restarted box never got ready");
            smol::Timer::after(Duration::from_millis(50)).await;
        }
        smol::Timer::after(Duration::from_millis(3_000)).await;

        world.stop.store(true, Ordering::SeqCst);
        let mut reports = Vec::new();
        for t in tasks {
            reports.push(t.await);
        }
        // Let the last acknowledged writes reach the authorities.
        smol::Timer::after(Duration::from_millis(debounce_ms + 1_000)).await;

        let mut stranded = BTreeSet::new();
        for p in procs.values_mut() {
            let s = stats(p.control_port).await;
            for m in s["box"]["stranded"].as_array().unwrap() {
                stranded.insert((
                    m["doc"].as_str().unwrap().to_string(),
                    m["clientID"].as_str().unwrap().to_string(),
                    m["mid"].as_u64().unwrap(),
                ));
            }
            assert_eq!(
                s["box"]["strandedTotal"].as_u64().unwrap() as usize,
                s["box"]["stranded"].as_array().unwrap().len()
            );
        }
        let (mut notes, mut lmids, mut epochs) =
            (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        let mut fenced = 0;
        let authorities = api.state.lock().unwrap().authorities.clone();
        for (doc, a) in authorities {
            let ids: BTreeSet<u64> = a
                .rows("note")
                .iter()
                .filter_map(|r| r[0].as_u64())
                .filter(|id| *id >= 1_000)
                .collect();
            let ledger: BTreeMap<String, u64> = a
                .rows("_rindle_client_mutations")
                .iter()
                .map(|r| (r[0].as_str().unwrap().to_string(), r[1].as_u64().unwrap()))
                .collect();
            epochs.insert(doc.clone(), a.state.lock().unwrap().epoch);
            fenced += a.state.lock().unwrap().fenced.len();
            notes.insert(doc.clone(), ids);
            lmids.insert(doc, ledger);
        }
        for mut p in procs.into_values() {
            let _ = p.child.kill();
            let _ = p.child.wait();
            p.drain_log().await;
        }
        let _ = std::fs::remove_dir_all(&dir);
        Run {
            reports,
            notes,
            lmids,
            epochs,
            fenced,
            stranded,
            victim,
            victim_docs,
        }
    })
}

/// The note id a writer's `(clientID, mid)` inserts (clear of the daemon's rows).
fn note_id(client: &str, mid: u64) -> u64 {
    let (idx, gen) = client[1..].split_once('-').unwrap();
    (idx.parse::<u64>().unwrap() + 1) * 1_000_000 + gen.parse::<u64>().unwrap() * 10_000 + mid
}

fn summary(run: &Run) -> String {
    let acked: usize = run.reports.iter().map(|r| r.acked.len()).sum();
    let doubt: usize = run.reports.iter().map(|r| r.in_doubt.len()).sum();
    let sessions: usize = run.reports.iter().map(|r| r.sessions).sum();
    let back = run
        .victim_docs
        .iter()
        .filter(|d| run.epochs[*d] >= 3)
        .count();
    format!(
        "victim {} ({} docs, {back} moved back): {acked} acknowledged, {doubt} in doubt, {} \
         stranded, {} fenced applies, {sessions} sessions",
        run.victim,
        run.victim_docs.len(),
        run.stranded.len(),
        run.fenced
    )
}

#[test]
fn with_ack_flushed_no_acknowledged_mutation_is_lost_or_duplicated_across_a_failover() {
    let run = run("flushed", 50);
    eprintln!("{}", summary(&run));
    for r in &run.reports {
        assert!(r.unexpected.is_empty(), "{}: {:?}", r.doc, r.unexpected);
        assert!(
            r.in_doubt.is_empty(),
            "{}: an lmid went backwards: {:?}",
            r.doc,
            r.in_doubt
        );
        assert!(
            r.unfinished.is_empty(),
            "{}: never acknowledged: {:?}",
            r.doc,
            r.unfinished
        );
        assert!(r.acked.len() >= 5, "{}: the writer made progress", r.doc);
        // Exactly the acknowledged mutations, each once: the notes they inserted and
        // nothing else, and the ledger at each writer's last mid.
        let want: BTreeSet<u64> = r.acked.iter().map(|(c, m)| note_id(c, *m)).collect();
        assert_eq!(run.notes[&r.doc], want, "{}", r.doc);
        let last = r.acked.iter().map(|(_, m)| *m).max().unwrap();
        let client = &r.acked.iter().next().unwrap().0;
        assert_eq!(run.lmids[&r.doc][client], last, "{}", r.doc);
    }
    assert!(run.stranded.is_empty(), "{:?}", run.stranded);
    placements_moved(&run);
}

/// Every doc of the dead box was placed again (a new epoch); placements that lost
/// their doc were fenced at the authority.
fn placements_moved(run: &Run) {
    for doc in &run.victim_docs {
        assert!(run.epochs[doc] >= 2, "{doc}: epoch {}", run.epochs[doc]);
    }
    assert!(run.fenced > 0, "no placement was ever fenced");
}

#[test]
fn with_ack_journaled_what_a_dead_box_acknowledged_is_delivered_or_reported() {
    let run = run("journaled", 400);
    eprintln!("{}", summary(&run));
    let mut acked_total = 0;
    for r in &run.reports {
        assert!(r.unexpected.is_empty(), "{}: {:?}", r.doc, r.unexpected);
        assert!(
            r.unfinished.is_empty(),
            "{}: never acknowledged: {:?}",
            r.doc,
            r.unfinished
        );
        acked_total += r.acked.len();
        for (client, mid) in &r.acked {
            let delivered = run.notes[&r.doc].contains(&note_id(client, *mid));
            let reported = run
                .stranded
                .contains(&(r.doc.clone(), client.clone(), *mid));
            assert!(
                delivered || reported,
                "{}: {client} mid {mid} was acknowledged, is not at the authority and no box \
                 reports it stranded",
                r.doc
            );
        }
    }
    assert!(acked_total > DOCS * 5, "the writers made progress");
    placements_moved(&run);
}

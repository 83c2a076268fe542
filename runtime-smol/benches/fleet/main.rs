//! Fleet benchmark: many small rooms on one box — the real `rindle-room`
//! binary in fleet mode as a child process, room-boot and rindled faked on loopback by
//! this program (`fakes.rs`).
//!
//! ```sh
//! cargo bench -p rindle-room-smol --bench fleet
//! FLEET_ROOMS=2000 FLEET_ACTIVE=200 cargo bench -p rindle-room-smol --bench fleet
//! ```
//!
//! Phases (each reports a Markdown table on stdout):
//!
//! 1. **Cold boots**: `FLEET_ROOMS` (10,000) docs, one client each, `FLEET_CONCURRENCY`
//!    (64) connecting at once: connect to `/rooms/<doc>`, subscribe with a lease token,
//!    wait for the snapshot, disconnect (the room stays live). Latency = connect →
//!    snapshot (room-boot, the upstream link, the snapshot, the subscribe). Then the
//!    box's `VmRSS` over its idle baseline, per live room.
//! 2. **Unloaded and warm**: 200 new rooms booted 4 at a time (cold), then the same
//!    subscribe on 500 rooms that are already live, 4 at a time (warm).
//! 3. **Mutations**: `FLEET_ACTIVE` (1,000) rooms, one writer each (`init`, the lmid
//!    query, the notes), each pushing `FLEET_MUTATIONS` (60) `note.insert`s with at most
//!    8 un-acked; mutations/s = acks / wall time.
//! 4. **Hibernated**: a second box with `idle_evict_ms = 1000` boots the same number of
//!    rooms; once every room hibernated, `VmRSS` over the baseline per room record.
//!
//! Journals are in memory (no `data_dir`): 10,000 open journal files would not fit the
//! file-descriptor limit beside 10,000 upstream sockets. `FLEET_BIN` overrides the binary.
//!
//! `FLEET_PHASE=sync` runs instead the **durable writes** comparison: `FLEET_ACTIVE`
//! rooms with file journals (`data_dir` under `FLEET_DATA_DIR`, default the target
//! directory — a real disk, not a tmpfs), one writer each as in phase 3, on a box with
//! `fleet.journal_sync = "room"` (an `fdatasync` per room per group of appends) and on
//! one with `"box"` (one `syncfs` for every room's appends), `FLEET_SYNC_ROUNDS` (2)
//! alternating rounds on fresh docs; mutations/s, syncs, flushes and box CPU per
//! mutation per run, and the ratio. `FLEET_WRITES` adds lines to every box's `[writes]`
//! table (e.g. `flush_debounce_ms = 300`).

mod fakes;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_tungstenite::tungstenite::Message;
use async_tungstenite::WebSocketStream;
use futures_lite::StreamExt;
use rindle_room_core::json::tree::JsValue;
use rindle_room_smol::server::demo::mint_token;
use smol::net::TcpStream;

const KID: &str = "bench";
const KEY: &str = "fleet-bench-key";
const CONTROL: &str = "fleet-bench-control";
const NOTES: &str = r#"{"table":"note"}"#;

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v:?} is not a number"))
        })
        .unwrap_or(default)
}

/// The box under test.
struct BoxProc {
    child: Child,
    port: u16,
    control: u16,
}

impl BoxProc {
    fn start(bin: &PathBuf, dir: &std::path::Path, api: &str, idle_ms: u64) -> BoxProc {
        BoxProc::start_with(bin, dir, api, idle_ms, "")
    }

    /// A box whose `[fleet]` section also has the `fleet` lines.
    fn start_with(
        bin: &PathBuf,
        dir: &std::path::Path,
        api: &str,
        idle_ms: u64,
        fleet: &str,
    ) -> BoxProc {
        std::fs::create_dir_all(dir).unwrap();
        let config = dir.join("fleet.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nport = 0\n\
                 [fleet]\napi_url = \"{api}\"\nshell_secret = \"{}\"\ninstance = \"bench\"\n\
                 idle_evict_ms = {idle_ms}\nmax_rooms = 100000\nboot_timeout_ms = 60000\n\
                 {fleet}\n\
                 [control]\nauth_token = \"{CONTROL}\"\n\
                 [downstream.token_keys]\n{KID} = \"{KEY}\"\n\
                 [writes]\nowned_tables = [\"note\"]\ncrud = true\n{}\n",
                fakes::SECRET,
                // More `[writes]` settings for the box (e.g. `flush_debounce_ms = 300`).
                std::env::var("FLEET_WRITES").unwrap_or_default()
            ),
        )
        .unwrap();
        let mut child = Command::new(bin)
            .arg("--config")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the box starts");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if std::env::var("FLEET_BOX_LOG").is_ok() {
                    eprintln!("box: {line}");
                }
                let _ = tx.send(line);
            }
        });
        let (mut port, mut control) = (0, 0);
        while port == 0 || control == 0 {
            let line = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("the box logs its ports");
            let after = |needle: &str| {
                line.split(needle)
                    .nth(1)
                    .and_then(|r| r.split(['/', ' ']).next())
                    .and_then(|p| p.parse::<u16>().ok())
            };
            if let Some(p) = after("fleet listening on ws://127.0.0.1:") {
                port = p;
            }
            if let Some(p) = after("fleet control plane on http://127.0.0.1:") {
                control = p;
            }
        }
        BoxProc {
            child,
            port,
            control,
        }
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// A counter from `/metrics` (0 when absent).
    async fn metric(&self, name: &str) -> u64 {
        let url = format!("http://127.0.0.1:{}/metrics", self.control);
        let headers = [(String::from("authorization"), format!("Bearer {CONTROL}"))];
        let res =
            rindle_room_smol::http::request("GET", &url, &headers, b"", Duration::from_secs(60))
                .await
                .expect("metrics");
        String::from_utf8_lossy(&res.body)
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or(0)
    }

    async fn stats(&self) -> serde_json::Value {
        let url = format!("http://127.0.0.1:{}/stats", self.control);
        let headers = [(String::from("authorization"), format!("Bearer {CONTROL}"))];
        let res =
            rindle_room_smol::http::request("GET", &url, &headers, b"", Duration::from_secs(60))
                .await
                .expect("stats");
        serde_json::from_slice(&res.body).expect("stats JSON")
    }

    /// User + system CPU seconds the box used so far.
    fn cpu_s(&self) -> f64 {
        cpu_of(&format!("/proc/{}/stat", self.child.id()))
    }

    fn stop(mut self) {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

/// User + system CPU seconds from a `/proc/…/stat` file (100 ticks per second).
fn cpu_of(path: &str) -> f64 {
    let (user, system) = cpu_split(path);
    user + system
}

/// User and system CPU seconds from a `/proc/…/stat` file.
fn cpu_split(path: &str) -> (f64, f64) {
    let stat = std::fs::read_to_string(path).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) / 100.0, tick(12) / 100.0)
}

type Ws = WebSocketStream<TcpStream>;

async fn connect(port: u16, doc: &str) -> Result<Ws, String> {
    let stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let url = format!(
        "ws://127.0.0.1:{port}{}",
        rindle_room_core::fleet::room_path(doc)
    );
    async_tungstenite::client_async(url, stream)
        .await
        .map(|(ws, _)| ws)
        .map_err(|e| e.to_string())
}

/// Reads frames until one satisfies `pred`.
async fn until(ws: &mut Ws, pred: impl Fn(&serde_json::Value) -> bool) -> Result<(), String> {
    while let Some(msg) = ws.next().await {
        match msg.map_err(|e| e.to_string())? {
            Message::Text(t) => {
                let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                if pred(&v) {
                    return Ok(());
                }
            }
            Message::Close(f) => return Err(format!("closed: {f:?}")),
            _ => {}
        }
    }
    Err(String::from("the socket ended"))
}

fn token(doc: &str) -> String {
    let ast = JsValue::parse(NOTES).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    mint_token(doc, &ast, "u1", KID, KEY, 3_600_000, now).unwrap()
}

/// Subscribes the notes of `doc` and waits for the snapshot: the latency.
async fn subscribe_once(port: u16, doc: String) -> Result<Duration, String> {
    let tok = token(&doc);
    let start = Instant::now();
    let mut ws = connect(port, &doc).await?;
    ws.send(Message::text(format!(
        r#"{{"t":"subscribe","queryId":1,"leaseToken":"{tok}"}}"#
    )))
    .await
    .map_err(|e| e.to_string())?;
    until(&mut ws, |v| v["t"] == "nbatch" && v["batch"]["seq"] == 0).await?;
    let took = start.elapsed();
    let _ = ws.close(None).await;
    Ok(took)
}

/// Runs `docs` through `subscribe_once`, `concurrency` at a time; returns latencies.
async fn boot_all(port: u16, docs: Vec<String>, concurrency: usize) -> Vec<Duration> {
    let docs = Arc::new(std::sync::Mutex::new(docs.into_iter()));
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let docs = docs.clone();
        workers.push(smol::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let next = docs.lock().unwrap().next();
                let Some(doc) = next else {
                    return lat;
                };
                match fakes::within(120_000, subscribe_once(port, doc.clone())).await {
                    Some(Ok(d)) => lat.push(d),
                    Some(Err(e)) => panic!("{doc}: {e}"),
                    None => panic!("{doc}: no snapshot within 120 s"),
                }
            }
        }));
    }
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.await);
    }
    all
}

fn pct(lat: &mut [Duration], p: f64) -> f64 {
    lat.sort();
    let i = ((lat.len() as f64 - 1.0) * p).round() as usize;
    lat[i].as_secs_f64() * 1e3
}

/// One writer: `init`, the lmid query, the notes, then `n` inserts, ≤ 8 un-acked.
/// A writer: connects, subscribes (its lmid and the notes), says it is `ready`, waits
/// for `go` to close, then pushes `n` mutations with at most 8 in flight.
async fn writer(
    port: u16,
    doc: String,
    n: usize,
    ready: async_channel::Sender<()>,
    go: async_channel::Receiver<()>,
) -> Result<(), String> {
    let tok = token(&doc);
    let mut ws = connect(port, &doc).await?;
    let send = |text: String| Message::text(text);
    ws.send(send(r#"{"t":"init","clientID":"w"}"#.into()))
        .await
        .map_err(|e| e.to_string())?;
    ws.send(send(
        r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid","args":{}}"#.into(),
    ))
    .await
    .map_err(|e| e.to_string())?;
    ws.send(send(format!(
        r#"{{"t":"subscribe","queryId":1,"leaseToken":"{tok}"}}"#
    )))
    .await
    .map_err(|e| e.to_string())?;
    until(&mut ws, |v| v["t"] == "nbatch" && v["queryId"] == 1).await?;
    let _ = ready.send(()).await;
    let _ = go.recv().await; // closed: everyone is connected
    let (mut sent, mut acked) = (0u64, 0u64);
    while acked < n as u64 {
        while sent < n as u64 && sent - acked < 8 {
            sent += 1;
            let id = 1000 + sent;
            ws.send(send(format!(
                r#"{{"t":"pushMutation","envelope":{{"clientID":"w","mid":{sent},"name":"note.insert","args":{{"id":{id},"body":"b","owner":"u1"}}}}}}"#
            )))
            .await
            .map_err(|e| e.to_string())?;
        }
        let Some(msg) = ws.next().await else {
            return Err(String::from("the socket ended"));
        };
        if let Message::Text(t) = msg.map_err(|e| e.to_string())? {
            let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap_or_default();
            if v["t"] == "nbatch" && v["queryId"] == 0 {
                for op in v["batch"]["ops"].as_array().into_iter().flatten() {
                    let row = if op["op"] == "add" {
                        &op["row"]
                    } else {
                        &op["new"]
                    };
                    if let Some(l) = row[1].as_u64() {
                        acked = acked.max(l);
                    }
                }
            }
        }
    }
    let _ = ws.close(None).await;
    Ok(())
}

/// Connects one writer per doc, then times their `n` mutations each: mutations/s and
/// the wall time.
async fn timed_writes(port: u16, docs: &[String], n: usize) -> (f64, Duration) {
    let (ready_tx, ready_rx) = async_channel::unbounded();
    let (go_tx, go_rx) = async_channel::bounded::<()>(1);
    let writers: Vec<_> = docs
        .iter()
        .map(|d| {
            let (ready, go) = (ready_tx.clone(), go_rx.clone());
            smol::spawn(writer(port, d.clone(), n, ready, go))
        })
        .collect();
    for _ in 0..docs.len() {
        ready_rx.recv().await.expect("every writer gets ready");
    }
    let started = Instant::now();
    drop(go_tx);
    for w in writers {
        w.await.expect("a writer finished");
    }
    let wall = started.elapsed();
    ((docs.len() * n) as f64 / wall.as_secs_f64(), wall)
}

/// The durable-writes comparison (`FLEET_PHASE=sync`): per-room fdatasync against the
/// box-level syncfs, alternating, on fresh docs each run.
async fn sync_phase(
    bin: &PathBuf,
    api: &str,
    stats: &fakes::FakeStats,
    active: usize,
    mutations: usize,
) {
    let rounds = env_num("FLEET_SYNC_ROUNDS", 2);
    let root = std::env::var("FLEET_DATA_DIR").map_or_else(
        |_| PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fleet-sync-bench"),
        PathBuf::from,
    );
    let _ = std::fs::remove_dir_all(&root);
    // (mode, mutations/s, box-level syncs, flushes, box CPU (user, system) s, wall)
    type Run<'a> = (&'a str, f64, u64, u64, (f64, f64), Duration);
    let mut runs: Vec<Run> = Vec::new();
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            ["room", "box"]
        } else {
            ["box", "room"]
        };
        for mode in order {
            let dir = root.join(format!("{mode}-{round}"));
            let data = dir.join("data");
            let fleet = format!(
                "data_dir = \"{}\"\njournal_sync = \"{mode}\"",
                data.display()
            );
            let b = BoxProc::start_with(bin, &dir, api, 3_600_000, &fleet);
            let docs: Vec<String> = (0..active)
                .map(|i| format!("sync{round}{mode}/{i:05}"))
                .collect();
            eprintln!("journal_sync = {mode}: {active} writers × {mutations} mutations…");
            let stat = format!("/proc/{}/stat", b.child.id());
            let cpu0 = cpu_split(&stat);
            let flushes0 = stats.applies.load(Ordering::Relaxed);
            let (rate, wall) = timed_writes(b.port, &docs, mutations).await;
            let cpu1 = cpu_split(&stat);
            let flushes = stats.applies.load(Ordering::Relaxed) - flushes0;
            let syncs = b.metric("rindle_fleet_journal_syncs_total").await;
            b.stop();
            let _ = std::fs::remove_dir_all(&dir);
            let cpu = (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1);
            runs.push((mode, rate, syncs, flushes, cpu, wall));
        }
    }
    let median = |mode: &str| {
        let mut v: Vec<f64> = runs.iter().filter(|r| r.0 == mode).map(|r| r.1).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("## Durable writes: {active} rooms with file journals, {mutations} mutations each (≤ 8 in flight)\n");
    println!("| run | journal_sync | mutations/s | box-level syncs | flushes | box CPU user / system, s | box CPU per mutation, µs | wall, s |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    let total = (active * mutations) as f64;
    for (i, (mode, rate, syncs, flushes, (user, system), wall)) in runs.iter().enumerate() {
        println!(
            "| {} | {mode} | {rate:.0} | {syncs} | {flushes} | {user:.2} / {system:.2} | {:.1} | {:.2} |",
            i + 1,
            (user + system) * 1e6 / total,
            wall.as_secs_f64()
        );
    }
    println!(
        "\nmedian: room {:.0}/s, box {:.0}/s — box / room = {:.2}×",
        median("room"),
        median("box"),
        median("box") / median("room")
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// Waits until `/stats` counts `n` hibernated rooms (panics past `deadline`), then the
/// two seconds the sweeper takes to hand freed pages back.
async fn all_hibernated(h: &BoxProc, n: u64, deadline: Instant) {
    loop {
        let s = h.stats().await;
        if s["box"]["rooms"]["hibernated"].as_u64() == Some(n) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "rooms did not hibernate: {}",
            s["box"]
        );
        smol::Timer::after(Duration::from_millis(500)).await;
    }
    smol::Timer::after(Duration::from_millis(2_000)).await;
}

fn main() {
    let rooms = env_num("FLEET_ROOMS", 10_000);
    let active = env_num("FLEET_ACTIVE", 1_000).min(rooms);
    let mutations = env_num("FLEET_MUTATIONS", 60);
    let concurrency = env_num("FLEET_CONCURRENCY", 64);
    let bin = std::env::var("FLEET_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_BIN_EXE_rindle-room")));
    let dir = std::env::temp_dir().join(format!("rindle-fleet-bench-{}", std::process::id()));
    smol::block_on(async {
        let stats = Arc::new(fakes::FakeStats::default());
        let upstream = fakes::start_upstream(stats.clone()).await;
        let api = fakes::start_api(upstream, stats.clone()).await;
        if std::env::var("FLEET_PHASE").is_ok_and(|p| p == "sync") {
            sync_phase(&bin, &api, &stats, active, mutations).await;
            return;
        }
        let docs: Vec<String> = (0..rooms).map(|i| format!("bench/{i:05}")).collect();

        // 1. Cold boots and live memory.
        let b = BoxProc::start(&bin, &dir.join("live"), &api, 3_600_000);
        smol::Timer::after(Duration::from_millis(500)).await;
        let base = b.rss_kib();
        eprintln!("booting {rooms} rooms, {concurrency} at a time…");
        let started = Instant::now();
        let mut cold = boot_all(b.port, docs.clone(), concurrency).await;
        let boot_wall = started.elapsed();
        smol::Timer::after(Duration::from_millis(500)).await;
        let live = b.rss_kib();
        // 2. Warm subscribes.
        let warm_docs: Vec<String> = docs.iter().step_by((rooms / 500).max(1)).cloned().collect();
        let mut warm = boot_all(b.port, warm_docs, 4).await;
        // Unloaded cold boots: a few new rooms, 4 at a time.
        let quiet_docs: Vec<String> = (0..200).map(|i| format!("quiet/{i:05}")).collect();
        let mut quiet = boot_all(b.port, quiet_docs, 4).await;
        // 3. Mutations across `active` rooms.
        eprintln!("{active} writers × {mutations} mutations…");
        // Connected and subscribed first (the first contact of each writer includes the
        // room's lmid fetch from the authority); the pushes are timed on their own.
        let (ready_tx, ready_rx) = async_channel::unbounded();
        let (go_tx, go_rx) = async_channel::bounded::<()>(1);
        let setup = Instant::now();
        let writers: Vec<_> = docs[..active]
            .iter()
            .map(|d| {
                let (ready, go) = (ready_tx.clone(), go_rx.clone());
                smol::spawn(writer(b.port, d.clone(), mutations, ready, go))
            })
            .collect();
        for _ in 0..active {
            ready_rx.recv().await.expect("every writer gets ready");
        }
        let setup_wall = setup.elapsed();
        let (box_cpu0, me_cpu0) = (b.cpu_s(), cpu_of("/proc/self/stat"));
        let started = Instant::now();
        drop(go_tx);
        for w in writers {
            w.await.expect("a writer finished");
        }
        let write_wall = started.elapsed();
        let (box_cpu, me_cpu) = (b.cpu_s() - box_cpu0, cpu_of("/proc/self/stat") - me_cpu0);
        let box_stats = b.stats().await;
        let after_writes = b.rss_kib();
        b.stop();

        // 4. Hibernated records.
        let h = BoxProc::start(&bin, &dir.join("hibernate"), &api, 1_000);
        smol::Timer::after(Duration::from_millis(500)).await;
        let h_base = h.rss_kib();
        eprintln!("booting {rooms} rooms to hibernate…");
        let _ = boot_all(h.port, docs.clone(), concurrency).await;
        let h_peak = h.rss_kib();
        let deadline = Instant::now() + Duration::from_secs(600);
        all_hibernated(&h, rooms as u64, deadline).await;
        let hibernated = h.rss_kib();
        // Freed memory the allocator keeps is reused, not leaked: a second wave of as
        // many new rooms, hibernated again, should barely move the RSS.
        let more: Vec<String> = (0..rooms).map(|i| format!("bench2/{i:05}")).collect();
        let _ = boot_all(h.port, more, concurrency).await;
        all_hibernated(&h, 2 * rooms as u64, deadline).await;
        let second = h.rss_kib();
        h.stop();
        let _ = std::fs::remove_dir_all(&dir);

        let per = |kib: u64, b: u64| (kib.saturating_sub(b)) as f64 * 1024.0 / rooms as f64;
        println!("## Fleet: {rooms} rooms on one box (fleet bench)\n");
        println!("| measure | value |");
        println!("|---|---:|");
        println!(
            "| cold boot latency p50 / p99 / max ({concurrency} at once) | {:.1} / {:.1} / {:.1} ms |",
            pct(&mut cold, 0.5),
            pct(&mut cold, 0.99),
            pct(&mut cold, 1.0)
        );
        println!(
            "| cold boots per second | {:.0} |",
            rooms as f64 / boot_wall.as_secs_f64()
        );
        println!(
            "| cold boot latency p50 / p99, 4 at once (200 more rooms) | {:.1} / {:.1} ms |",
            pct(&mut quiet, 0.5),
            pct(&mut quiet, 0.99)
        );
        println!(
            "| warm subscribe latency p50 / p99, 4 at once (500 live rooms) | {:.2} / {:.2} ms |",
            pct(&mut warm, 0.5),
            pct(&mut warm, 0.99)
        );
        println!(
            "| box VmRSS idle → {rooms} live rooms | {:.1} MiB → {:.1} MiB |",
            base as f64 / 1024.0,
            live as f64 / 1024.0
        );
        println!(
            "| RSS per live room | {:.1} KiB |",
            per(live, base) / 1024.0
        );
        println!(
            "| {active} writers connected and subscribed (lmid fetch included) | {:.0} ms |",
            setup_wall.as_secs_f64() * 1e3
        );
        println!(
            "| mutations/s across {active} rooms ({mutations} each, ≤ 8 in flight) | {:.0} |",
            (active * mutations) as f64 / write_wall.as_secs_f64()
        );
        println!(
            "| CPU during the writes: box / bench process (clients + fakes) | {:.1} s / {:.1} s over {:.1} s |",
            box_cpu,
            me_cpu,
            write_wall.as_secs_f64()
        );
        println!(
            "| box VmRSS after the writes | {:.1} MiB |",
            after_writes as f64 / 1024.0
        );
        println!(
            "| hibernating box: idle → {rooms} live (peak) → all hibernated | {:.1} → {:.1} → {:.1} MiB |",
            h_base as f64 / 1024.0,
            h_peak as f64 / 1024.0,
            hibernated as f64 / 1024.0
        );
        println!(
            "| RSS over the idle box once all hibernated, per room | {:.2} KiB |",
            per(hibernated, h_base) / 1024.0
        );
        println!(
            "| RSS growth per room for a second wave of {rooms} rooms, booted and hibernated | {:.2} KiB |",
            per(second, hibernated) / 1024.0
        );
        println!(
            "| fakes: boots {}, upstream subscribes {}, flushes {} |  |",
            stats.boots.load(Ordering::Relaxed),
            stats.subscribes.load(Ordering::Relaxed),
            stats.applies.load(Ordering::Relaxed)
        );
        println!("\nbox /stats after the writes: {}", box_stats["box"]);
    });
}

//! Server load benchmark: the real `rindle-room` binary as a child process,
//! 1,000 websocket clients each on its own view, 10,000 `pushMutation`s.
//!
//! ```sh
//! export CARGO_TARGET_DIR=/work/targets/load
//! cargo bench -p rindle-room-smol --bench load
//! ```
//!
//! Cargo builds the binary with the bench profile (release, `debug = 1`) and hands its
//! path to this program (`CARGO_BIN_EXE_rindle-room`; `LOAD_BIN` overrides it). Each run
//! starts a fresh server on a generated data set served by the embedded upstream
//! (`[demo] data`): `issue` with `LOAD_ROWS` rows (`creatorID = id % LOAD_CLIENTS`) and
//! `user`; `issue` is owned and its CRUD mutators are on (`issue.update`). A journal is
//! `file` (the durable default: group commit, one `fdatasync` per batch) or `memory`.
//!
//! Per run: the idle server's memory; `LOAD_CLIENTS` connections (`init`, the lmid query,
//! a lease-token subscribe to `issue where creatorID = u`), all snapshots in; then
//! `LOAD_MUTATIONS` mutations (`issue.update` of one row's `modified`), pushed by the
//! first `LOAD_PUSHERS` connections, each touching a row of another connection's view:
//!
//! - `max`: every pusher keeps at most `LOAD_INFLIGHT` mutations un-acked (the lmid ack
//!   releases them), so the room runs as fast as its acks allow;
//! - `rate`: a scheduler pushes one mutation every `1 / LOAD_RATE` s (open loop).
//!
//! Latency is push → fan-out: from handing the push frame to the socket to receiving the
//! `nbatch` carrying the edit on the connection that watches the row. Also reported:
//! push → ack (the lmid frame, after the journal append), throughput, the server's
//! memory (`VmRSS`, `VmHWM`) and the CPU time of server and client. The client runs on
//! one thread; client and server share the machine's cores.
//!
//! `LOAD_RUNS` (default `file-max,file-rate,memory-max,memory-rate`) picks the runs;
//! `LOAD_IDLE_DEMO=0` skips the idle measurement of `rindle-room demo`;
//! `LOAD_DIR` is where the scratch directory (data, configs, journals) goes (default:
//! the temp directory); `LOAD_GROUP_COMMIT_MS` (5) is the group-commit window;
//! `LOAD_SERVER_LOG=1` echoes the server's log. The program exits non-zero when a run
//! is incomplete or saw an unexpected frame. No target is asserted.

mod client;
mod server;
mod stats;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use smol::Executor;

use client::{Conn, Feed, Plan, Recorder};
use server::{Counters, JournalKind, Mem, ServerProc};
use stats::{lat, mib, Lat};

/// The client's executor: driven by the main thread only.
static EX: Executor<'static> = Executor::new();

/// Connections set up at once.
const CONNECT_CONCURRENCY: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Max,
    Rate,
}

#[derive(Clone, Debug)]
struct Opts {
    plan: Plan,
    inflight: usize,
    rate: f64,
    group_commit_ms: u64,
    runs: Vec<(JournalKind, Mode)>,
    bin: PathBuf,
    idle_demo: bool,
}

fn env_num<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

impl Opts {
    fn from_env() -> Opts {
        let clients = env_num("LOAD_CLIENTS", 1000usize);
        let plan = Plan {
            clients,
            pushers: env_num("LOAD_PUSHERS", clients),
            mutations: env_num("LOAD_MUTATIONS", 10_000usize),
            rows: env_num("LOAD_ROWS", 10_000usize),
        };
        assert!(plan.clients >= 2, "LOAD_CLIENTS must be at least 2");
        assert!(
            plan.pushers >= 1 && plan.pushers <= plan.clients,
            "LOAD_PUSHERS must be 1..=LOAD_CLIENTS"
        );
        assert!(
            plan.rows >= plan.clients && plan.rows.is_multiple_of(plan.clients),
            "LOAD_ROWS must be a multiple of LOAD_CLIENTS"
        );
        let runs_text = std::env::var("LOAD_RUNS")
            .unwrap_or_else(|_| String::from("file-max,file-rate,memory-max,memory-rate"));
        let runs = runs_text
            .split(',')
            .map(|r| match r.trim() {
                "file-max" => (JournalKind::File, Mode::Max),
                "file-rate" => (JournalKind::File, Mode::Rate),
                "memory-max" => (JournalKind::Memory, Mode::Max),
                "memory-rate" => (JournalKind::Memory, Mode::Rate),
                other => panic!("unknown run {other:?} in LOAD_RUNS"),
            })
            .collect();
        let bin = std::env::var_os("LOAD_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_rindle-room")));
        Opts {
            plan,
            inflight: env_num("LOAD_INFLIGHT", 4usize).max(1),
            rate: env_num("LOAD_RATE", 1000.0f64),
            group_commit_ms: env_num("LOAD_GROUP_COMMIT_MS", 5u64),
            runs,
            bin,
            idle_demo: std::env::var("LOAD_IDLE_DEMO").map_or(true, |v| v != "0"),
        }
    }
}

/// What one run measured.
#[derive(Debug)]
struct RunResult {
    journal: JournalKind,
    mode: Mode,
    idle: Mem,
    subscribed: Mem,
    end: Mem,
    setup_secs: f64,
    push_secs: f64,
    complete: bool,
    fanouts: usize,
    acks: usize,
    fanout: Lat,
    ack: Lat,
    /// Fixed rate: due time → fan-out, and due → sent (the client's own lag).
    due_fanout: Option<Lat>,
    lag: Option<Lat>,
    /// Mutations per second, first push → last fan-out / last ack.
    tput_fanout: f64,
    tput_ack: f64,
    /// Fan-outs per second between the 10th and the 90th percentile of fan-out times.
    tput_steady: f64,
    /// Achieved push rate (first push → last push).
    push_rate: f64,
    server_cpu: f64,
    client_cpu: f64,
    /// The server's counters over the push phase.
    counters: Option<Counters>,
    frames_in: u64,
    bytes_in: u64,
    duplicates: usize,
    problems: Vec<String>,
    complaints: Vec<String>,
    load: (String, String),
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_millis() as u64
}

fn sleep_ms(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

async fn connect_all(port: u16, plan: Plan) -> Result<Vec<Conn>, String> {
    let sem = Arc::new(async_channel::bounded::<()>(CONNECT_CONCURRENCY));
    let now = now_ms();
    let tasks: Vec<_> = (0..plan.clients)
        .map(|u| {
            let sem = sem.clone();
            let token = client::lease(u, &format!("u{u}"), now);
            EX.spawn(async move {
                let _ = sem.0.send(()).await;
                let r = client::connect(port, u, &token).await;
                let _ = sem.1.recv().await;
                r
            })
        })
        .collect();
    let mut conns = Vec::with_capacity(plan.clients);
    for t in tasks {
        conns.push(t.await?);
    }
    let want = plan.rows / plan.clients;
    if let Some(c) = conns.iter().find(|c| c.snapshot_rows != want) {
        return Err(format!(
            "client {}: its snapshot has {} rows, expected {want}",
            c.u, c.snapshot_rows
        ));
    }
    Ok(conns)
}

fn run_one(
    opts: &Opts,
    dir: &std::path::Path,
    data: &std::path::Path,
    (index, journal, mode): (usize, JournalKind, Mode),
    ticks: u64,
) -> Result<RunResult, String> {
    let plan = opts.plan;
    let mode_name = if mode == Mode::Max { "max" } else { "rate" };
    let name = format!("{}-{mode_name}", journal.name());
    // A fresh journal for every run: a journal left by an earlier run would be replayed.
    let config = dir.join(format!("run{index}-{name}.toml"));
    let journal_path = dir.join(format!("run{index}-{name}.journal"));
    server::write_config(&config, data, journal, &journal_path, opts.group_commit_ms)
        .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let config_arg = config.display().to_string();
    let mut srv = ServerProc::start(&opts.bin, &["--config", &config_arg], &name)?;
    let pid = srv.pid();
    sleep_ms(1000);
    let idle = server::mem_of(pid);
    let load_before = server::loadavg();

    let setup_start = Instant::now();
    let conns = smol::block_on(EX.run(connect_all(srv.port, plan)))?;
    let setup_secs = setup_start.elapsed().as_secs_f64();
    sleep_ms(500);
    let subscribed = server::mem_of(pid);
    eprintln!(
        "[{name}] {} clients subscribed in {setup_secs:.2} s; pushing {} mutations",
        conns.len(),
        plan.mutations
    );

    let counters0 = smol::block_on(Counters::fetch(srv.control_port));
    let server_cpu0 = server::cpu_seconds(&pid.to_string(), ticks);
    let client_cpu0 = server::cpu_seconds("self", ticks);
    let rec = Arc::new(Recorder::new(plan));
    let mut feeds: Vec<async_channel::Sender<usize>> = Vec::new();
    let mut tasks = Vec::new();
    for conn in conns {
        let feed = if conn.u >= plan.pushers {
            None
        } else if mode == Mode::Max {
            Some(Feed::MaxRate {
                inflight: opts.inflight,
            })
        } else {
            let (tx, rx) = async_channel::unbounded();
            feeds.push(tx);
            Some(Feed::Scheduled(rx))
        };
        let (read, write) = client::run(conn, rec.clone(), feed);
        tasks.push(EX.spawn(read.run()));
        if let Some(w) = write {
            tasks.push(EX.spawn(w.run()));
        }
    }
    let rate = opts.rate;
    let sched_rec = rec.clone();
    let scheduler = EX.spawn(async move {
        if feeds.is_empty() {
            return;
        }
        let t0 = Instant::now();
        for j in 0..plan.mutations {
            let due = t0 + Duration::from_secs_f64(j as f64 / rate);
            if Instant::now() < due {
                smol::Timer::at(due).await;
            }
            sched_rec.due[j].store(sched_rec.at(due), Ordering::Relaxed);
            let _ = feeds[plan.pusher(j)].try_send(j);
        }
    });
    let wait_rec = rec.clone();
    let complete = smol::block_on(EX.run(async move {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !wait_rec.complete() {
            if Instant::now() > deadline {
                return false;
            }
            smol::Timer::after(Duration::from_millis(5)).await;
        }
        true
    }));
    let server_cpu = server::cpu_seconds(&pid.to_string(), ticks) - server_cpu0;
    let client_cpu = server::cpu_seconds("self", ticks) - client_cpu0;
    let end = server::mem_of(pid);
    let load_after = server::loadavg();
    let counters = smol::block_on(Counters::fetch(srv.control_port))
        .zip(counters0)
        .map(|(after, before)| after.since(&before));
    if !srv.alive() {
        return Err(format!("{name}: the server died during the run"));
    }
    // Dropping the tasks cancels them and closes the sockets.
    drop(scheduler);
    drop(tasks);

    let n = plan.mutations;
    let get = |v: &[std::sync::atomic::AtomicU64], j: usize| v[j].load(Ordering::Relaxed);
    let mut fan = Vec::with_capacity(n);
    let mut ack = Vec::with_capacity(n);
    let mut due_fan = Vec::with_capacity(n);
    let mut lag = Vec::with_capacity(n);
    let (mut first_sent, mut last_sent, mut last_fan, mut last_ack) = (u64::MAX, 0, 0, 0);
    let mut fan_times = Vec::with_capacity(n);
    for j in 0..n {
        let s = get(&rec.sent, j);
        let f = get(&rec.fanout, j);
        let a = get(&rec.acked, j);
        let d = get(&rec.due, j);
        if s == 0 {
            continue;
        }
        first_sent = first_sent.min(s);
        last_sent = last_sent.max(s);
        if f != 0 {
            fan.push(f - s);
            last_fan = last_fan.max(f);
            fan_times.push(f);
            if d != 0 {
                due_fan.push(f.saturating_sub(d));
            }
        }
        if a != 0 {
            ack.push(a - s);
            last_ack = last_ack.max(a);
        }
        if d != 0 {
            lag.push(s.saturating_sub(d));
        }
    }
    fan_times.sort_unstable();
    let per_sec = |count: usize, from: u64, to: u64| {
        if to > from {
            count as f64 / ((to - from) as f64 / 1e9)
        } else {
            0.0
        }
    };
    let tput_steady = if fan_times.len() >= 10 {
        let lo = fan_times.len() / 10;
        let hi = fan_times.len() * 9 / 10;
        per_sec(hi - lo, fan_times[lo], fan_times[hi])
    } else {
        0.0
    };
    let result = RunResult {
        journal,
        mode,
        idle,
        subscribed,
        end,
        setup_secs,
        push_secs: last_fan.max(last_ack).saturating_sub(first_sent) as f64 / 1e9,
        complete,
        fanouts: rec.fanouts.load(Ordering::Relaxed),
        acks: rec.acks.load(Ordering::Relaxed),
        fanout: lat(fan),
        ack: lat(ack),
        due_fanout: (mode == Mode::Rate).then(|| lat(due_fan)),
        lag: (mode == Mode::Rate).then(|| lat(lag)),
        tput_fanout: per_sec(n, first_sent, last_fan),
        tput_ack: per_sec(n, first_sent, last_ack),
        tput_steady,
        push_rate: per_sec(n.saturating_sub(1), first_sent, last_sent),
        server_cpu,
        client_cpu,
        counters,
        frames_in: rec.frames_in.load(Ordering::Relaxed),
        bytes_in: rec.bytes_in.load(Ordering::Relaxed),
        duplicates: rec.duplicate_fanouts.load(Ordering::Relaxed),
        problems: rec.problems.lock().unwrap().clone(),
        complaints: srv.complaints.lock().unwrap().clone(),
        load: (load_before, load_after),
    };
    srv.stop();
    Ok(result)
}

fn print_run(r: &RunResult, opts: &Opts) {
    let mode = match r.mode {
        Mode::Max => format!("max rate, ≤ {} in flight per pusher", opts.inflight),
        Mode::Rate => format!("fixed rate {} /s", opts.rate),
    };
    println!("\n### {} journal, {mode}", r.journal.name());
    println!(
        "- complete: {} ({} / {} fan-outs, {} / {} acks, {} duplicate fan-outs)",
        r.complete, r.fanouts, opts.plan.mutations, r.acks, opts.plan.mutations, r.duplicates
    );
    println!(
        "- setup: {} connections subscribed in {:.2} s",
        opts.plan.clients, r.setup_secs
    );
    println!(
        "- throughput: {:.0} mutations/s to the last fan-out, {:.0}/s to the last ack, \
         {:.0}/s steady (fan-outs between the 10th and 90th percentile); pushes went out at \
         {:.0}/s; push phase {:.2} s",
        r.tput_fanout, r.tput_ack, r.tput_steady, r.push_rate, r.push_secs
    );
    println!(
        "- push → fan-out ms (p50 / p90 / p99 / p99.9 / max): {}  (mean {:.2})",
        r.fanout.row(),
        r.fanout.mean
    );
    println!(
        "- push → ack ms (p50 / p90 / p99 / p99.9 / max):     {}  (mean {:.2})",
        r.ack.row(),
        r.ack.mean
    );
    if let (Some(d), Some(l)) = (&r.due_fanout, &r.lag) {
        println!(
            "- due → fan-out ms (p50 / p90 / p99 / p99.9 / max):  {}; client send lag p99 {:.2} ms, max {:.2} ms",
            d.row(),
            l.p99,
            l.max
        );
    }
    println!(
        "- server memory: idle {} (VmRSS), subscribed {}, after the run {}, peak {} (VmHWM); {} threads",
        mib(r.idle.rss_kib),
        mib(r.subscribed.rss_kib),
        mib(r.end.rss_kib),
        mib(r.end.hwm_kib),
        r.end.threads
    );
    println!(
        "- CPU during the push phase: server {:.2} s, client {:.2} s (of {:.2} s wall × 2 cores); \
         {} frames / {:.1} MB received by the clients; load average {} → {}",
        r.server_cpu,
        r.client_cpu,
        r.push_secs,
        r.frames_in,
        r.bytes_in as f64 / 1e6,
        r.load.0,
        r.load.1
    );
    if let Some(c) = &r.counters {
        let n = opts.plan.mutations as f64;
        if c.appends > 0.0 {
            println!(
                "- journal: {:.0} appends ({:.1} mutations each), mean {:.2} ms per append \
                 (the blocking-pool call with its hand-off; for the file journal a write and \
                 an fdatasync), {:.0} % within 5 ms, {:.0} % within 10 ms",
                c.appends,
                n / c.appends,
                1e3 * c.append_secs / c.appends,
                100.0 * c.appends_le_5ms / c.appends,
                100.0 * c.appends_le_10ms / c.appends
            );
        }
        println!(
            "- the room queued {:.0} frames ({:.1} per mutation, {:.1} MB); {:.0} sockets terminated by the send budget",
            c.frames_out,
            c.frames_out / n,
            c.bytes_out / 1e6,
            c.budget_terminations
        );
    }
    for p in &r.problems {
        println!("- PROBLEM: {p}");
    }
    for c in r.complaints.iter().take(10) {
        println!("- server logged: {c}");
    }
}

fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{cores} cores ({model}), Linux {}, load average {}",
        kernel.trim(),
        server::loadavg()
    )
}

fn main() {
    let opts = Opts::from_env();
    let plan = opts.plan;
    let ticks = server::clock_ticks();
    let scratch = server::Scratch::new().expect("a scratch directory");
    let data = scratch.0.join("data.json");
    server::write_data(&data, plan.rows, plan.clients).expect("the data file is written");
    println!("# rindle-room load benchmark");
    println!("- machine: {}", machine());
    println!("- server: {}", opts.bin.display());
    println!(
        "- data: issue × {} (creatorID = id % {}), user × {}; {} clients, {} pushing, \
         {} mutations (issue.update), group commit {} ms; scratch {}",
        plan.rows,
        plan.clients,
        plan.clients,
        plan.clients,
        plan.pushers,
        plan.mutations,
        opts.group_commit_ms,
        scratch.0.display()
    );

    if opts.idle_demo {
        let journal = scratch.0.join("demo").join("journal");
        let journal_arg = journal.display().to_string();
        match ServerProc::start(
            &opts.bin,
            &["demo", "--port", "0", "--journal", &journal_arg],
            "demo",
        ) {
            Ok(srv) => {
                sleep_ms(1000);
                let m = server::mem_of(srv.pid());
                println!(
                    "- idle `rindle-room demo` (embedded data, live, no clients): VmRSS {}, \
                     VmHWM {}, {} threads",
                    mib(m.rss_kib),
                    mib(m.hwm_kib),
                    m.threads
                );
                srv.stop();
            }
            Err(e) => println!("- idle demo: FAILED: {e}"),
        }
    }

    let mut results = Vec::new();
    for (index, &(journal, mode)) in opts.runs.iter().enumerate() {
        match run_one(&opts, &scratch.0, &data, (index, journal, mode), ticks) {
            Ok(r) => {
                print_run(&r, &opts);
                results.push(r);
            }
            Err(e) => println!("\n### {} {mode:?}: FAILED: {e}", journal.name()),
        }
    }

    println!("\n### Summary\n");
    println!(
        "| run | mutations/s (last fan-out) | steady /s | fan-out p50 / p99 ms | ack p50 / p99 ms | idle RSS | peak RSS (VmHWM) | server CPU / wall |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &results {
        let mode = match r.mode {
            Mode::Max => String::from("max"),
            Mode::Rate => format!("{}/s", opts.rate),
        };
        println!(
            "| {} {mode}{} | {:.0} | {:.0} | {:.2} / {:.2} | {:.2} / {:.2} | {} | {} | {:.0} % |",
            r.journal.name(),
            if r.complete { "" } else { " (INCOMPLETE)" },
            r.tput_fanout,
            r.tput_steady,
            r.fanout.p50,
            r.fanout.p99,
            r.ack.p50,
            r.ack.p99,
            mib(r.idle.rss_kib),
            mib(r.end.hwm_kib),
            if r.push_secs > 0.0 {
                100.0 * r.server_cpu / r.push_secs
            } else {
                0.0
            },
        );
    }
    let failed = results.len() != opts.runs.len()
        || results
            .iter()
            .any(|r| !r.complete || !r.problems.is_empty() || r.duplicates > 0);
    if failed {
        eprintln!("load: some runs failed or saw problems (see above)");
        std::process::exit(1);
    }
}

//! `rindle-room`: the standalone room server.
//!
//! ```text
//! rindle-room --config room.toml
//! rindle-room demo [--data file.json] [--port N] [--journal PATH] [--log-format json]
//! rindle-room demo --fleet [--data file.json] [--port N] [--keep] [--log-format json]
//! rindle-room journal check PATH
//! rindle-room journal salvage PATH OUT
//! ```
//!
//! Logs go to stderr; the demo's connection details go to stdout. SIGINT/SIGTERM shut
//! down gracefully (stop accepting, flush and drain with an authority, close every
//! socket with 1001) and exit 0. Exit codes: 0 after a shutdown, 1 on a start-up error,
//! 2 on a usage error, 3 when the authority fenced the room (another placement owns the
//! document). `journal check` exits 0 when the room can open the journal (clean, or a
//! torn tail it truncates) and 1 when it is damaged; `journal salvage` exits 0 once the
//! copy is written and synced.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::sync::Arc;

use async_signal::{Signal, Signals};
use futures_lite::{FutureExt, StreamExt};
use rindle_room_core::json::tree::JsValue;
use rindle_room_smol::config::Config;
use rindle_room_smol::server::demo::{self, DemoData, DemoUpstream};
use rindle_room_smol::server::{Clock, FleetServer, RoomServer, SystemClock};

const USAGE: &str = "\
usage:
  rindle-room --config room.toml
  rindle-room demo [--data FILE.json] [--port N] [--journal PATH] [--log-format text|json]
  rindle-room demo --fleet [--data FILE.json] [--port N] [--keep] [--log-format text|json]
  rindle-room journal check PATH
  rindle-room journal salvage PATH OUT

  --config FILE    run the room a TOML file describes (see docs/config.md); with
                   [fleet], many rooms booted on demand (see docs/fleet.md)
  demo             run a self-contained room on demo data (no rindled, no authority):
    --data FILE    tables and rows as JSON (default: a built-in issue tracker)
    --port N       downstream websocket port (default 0: any free port)
    --journal PATH the write journal (default: <tmp>/rindle-room-demo/journal)
    --log-format   text (default) or json
    --fleet        many rooms in one process: ws://127.0.0.1:<port>/rooms/demo%2F<name>,
                   each booted on its first connection by an embedded room-boot
    --keep         (with --fleet) keep the rooms' journals from an earlier run
  journal check    report a journal's intact records and damage (read-only)
  journal salvage  write every intact record of PATH to the new file OUT (never in place)
";

/// How long the demo's printed token stays valid.
const DEMO_TOKEN_TTL_MS: u64 = 24 * 60 * 60 * 1000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Every `log` record (the server's and its dependencies') goes to stderr, filtered
    // by RINDLE_LOG; the configuration's `log_format` takes over once it is read.
    rindle_room_smol::server::log::install(rindle_room_smol::config::LogFormat::Text);
    // A write past `ulimit -f` must fail the append (the incarnation dies, nothing
    // acknowledged is lost), not kill the process; and every socket is a descriptor.
    rindle_room_smol::server::process::ignore_sigxfsz();
    rindle_room_smol::server::process::raise_nofile_limit();
    // A fleet's rooms are independent tasks: give the executor a thread per core (one
    // room still runs on one thread at a time). A single room keeps one thread.
    if std::env::var_os("SMOL_THREADS").is_none() && is_fleet(&args) {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::env::set_var("SMOL_THREADS", cores.to_string());
    }
    // Everything runs on smol's executor thread, start-up included: the configuration,
    // the demo data and the seed are then parsed on the thread that keeps the room, in
    // the allocator arena the room reuses. Parsed on the main thread, their freed memory
    // would stay resident in the main arena (about 3.5 MiB for 10,000 rows).
    let code = smol::block_on(smol::spawn(run(args)));
    std::process::exit(code);
}

/// Whether the arguments run a fleet: `demo --fleet`, or `--config` with a `[fleet]`
/// table (a file that does not parse is left to the real load to report).
fn is_fleet(args: &[String]) -> bool {
    match args.first().map(String::as_str) {
        Some("demo") => args.iter().any(|a| a == "--fleet"),
        Some("--config") => args
            .get(1)
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
            .is_some_and(|t| t.contains_key("fleet")),
        _ => false,
    }
}

async fn run(args: Vec<String>) -> i32 {
    match args.first().map(String::as_str) {
        Some("--help") | Some("-h") | None => {
            print!("{USAGE}");
            if args.is_empty() {
                2
            } else {
                0
            }
        }
        Some("--version") | Some("-V") => {
            println!("rindle-room {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Some("--config") => match args.get(1) {
            Some(path) if args.len() == 2 => run_config(path).await,
            _ => usage("--config takes exactly one file"),
        },
        Some("journal") => run_journal(&args[1..]),
        Some("demo") => match DemoArgs::parse(&args[1..]) {
            Ok(d) if d.fleet => run_demo_fleet(d).await,
            Ok(d) => run_demo(d).await,
            Err(e) => usage(&e),
        },
        Some(other) => usage(&format!("unknown argument {other:?}")),
    }
}

/// `journal check PATH` / `journal salvage PATH OUT`.
fn run_journal(args: &[String]) -> i32 {
    use rindle_room_smol::journal::salvage;
    match args {
        [cmd, path] if cmd == "check" => match salvage::check(path) {
            Ok(report) => {
                println!("{report}");
                if report.is_clean() || report.is_torn_tail_only() {
                    0
                } else {
                    1
                }
            }
            Err(e) => {
                eprintln!("rindle-room: {e}");
                1
            }
        },
        [cmd, path, out] if cmd == "salvage" => match salvage::salvage(path, out) {
            Ok(report) => {
                println!("{report}");
                println!(
                    "salvaged: {} intact record(s) written to {out} (synced); {} damaged \
                     range(s) and {} unreadable record(s) skipped; {path} is unchanged",
                    report.intact(),
                    report.damaged.len(),
                    report.unreadable.len()
                );
                0
            }
            Err(e) => {
                eprintln!("rindle-room: {e}");
                1
            }
        },
        _ => usage("journal takes `check PATH` or `salvage PATH OUT`"),
    }
}

fn usage(why: &str) -> i32 {
    eprintln!("rindle-room: {why}\n\n{USAGE}");
    2
}

async fn run_config(path: &str) -> i32 {
    let config = match Config::load(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rindle-room: {e}");
            return 1;
        }
    };
    if config.fleet.is_some() {
        return match FleetServer::builder(config).start().await {
            Ok(fleet) => serve_fleet(fleet).await,
            Err(e) => {
                eprintln!("rindle-room: cannot start the fleet: {e}");
                1
            }
        };
    }
    match RoomServer::builder(config).start().await {
        Ok(server) => serve(server).await,
        Err(e) => {
            eprintln!("rindle-room: cannot start: {e}");
            1
        }
    }
}

/// Runs a fleet until a signal: every room shuts down gracefully, then exit 0.
async fn serve_fleet(fleet: FleetServer) -> i32 {
    match Signals::new([Signal::Int, Signal::Term]) {
        Ok(mut signals) => {
            let _ = signals.next().await;
            fleet.shutdown().await;
            0
        }
        Err(e) => {
            eprintln!("rindle-room: cannot install signal handlers: {e}");
            fleet.shutdown().await;
            1
        }
    }
}

/// Runs until a signal (graceful shutdown, 0) or the room stops by itself (fenced, 3).
async fn serve(server: RoomServer) -> i32 {
    let mut signals = match Signals::new([Signal::Int, Signal::Term]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rindle-room: cannot install signal handlers: {e}");
            server.shutdown().await;
            return 1;
        }
    };
    let signalled = async {
        let _ = signals.next().await;
        true
    };
    let stopped = async {
        server.stopped().await;
        false
    };
    if signalled.or(stopped).await {
        server.shutdown().await;
        0
    } else {
        eprintln!(
            "rindle-room: the room stopped (fenced by the authority: another placement owns it)"
        );
        3
    }
}

#[derive(Debug, Default)]
struct DemoArgs {
    data: Option<PathBuf>,
    port: u16,
    journal: Option<PathBuf>,
    json_logs: bool,
    fleet: bool,
    keep: bool,
}

impl DemoArgs {
    fn parse(args: &[String]) -> Result<DemoArgs, String> {
        let mut d = DemoArgs::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match a.as_str() {
                "--data" => d.data = Some(PathBuf::from(value("--data")?)),
                "--journal" => d.journal = Some(PathBuf::from(value("--journal")?)),
                "--port" => {
                    let v = value("--port")?;
                    d.port = v
                        .parse()
                        .map_err(|_| format!("--port {v:?} is not a port number"))?;
                }
                "--log-format" => match value("--log-format")?.as_str() {
                    "text" => d.json_logs = false,
                    "json" => d.json_logs = true,
                    other => return Err(format!("--log-format {other:?}: use text or json")),
                },
                "--fleet" => d.fleet = true,
                "--keep" => d.keep = true,
                other => return Err(format!("unknown demo option {other:?}")),
            }
        }
        if d.keep && !d.fleet {
            return Err(String::from(
                "--keep applies to `demo --fleet` (the single-room demo keeps its journal)",
            ));
        }
        if d.fleet && d.journal.is_some() {
            return Err(String::from(
                "--journal applies to the single-room demo; `demo --fleet` keeps one journal \
                 per room under <tmp>/rindle-room-demo-fleet",
            ));
        }
        Ok(d)
    }
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// `demo --fleet`: an embedded room-boot endpoint and a fleet over the demo data.
async fn run_demo_fleet(args: DemoArgs) -> i32 {
    use rindle_room_smol::server::fleet::demo::{start_demo_fleet, DemoFleetOptions};
    let data = match &args.data {
        Some(path) => match DemoData::from_file(path) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("rindle-room: {e}");
                return 1;
            }
        },
        None => DemoData::embedded(),
    };
    let data_dir = std::env::temp_dir().join("rindle-room-demo-fleet");
    let demo = match start_demo_fleet(DemoFleetOptions {
        data,
        port: args.port,
        data_dir: data_dir.clone(),
        keep: args.keep,
        json_logs: args.json_logs,
    })
    .await
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("rindle-room: cannot start the demo fleet: {e}");
            return 1;
        }
    };
    let port = demo.server.port();
    let mut rooms = String::new();
    for (doc, token) in &demo.tokens {
        let url = format!(
            "ws://127.0.0.1:{port}{}",
            rindle_room_core::fleet::room_path(doc)
        );
        rooms.push_str(&format!(
            "\n  {doc}\n    websocket    {url}\n    lease token  {token}\n\
             \n    websocat {url}\n    {{\"t\":\"init\",\"clientID\":\"c1\"}}\
             \n    {{\"t\":\"subscribe\",\"queryId\":1,\"leaseToken\":\"{token}\"}}\n"
        ));
    }
    println!(
        "\nrindle-room demo --fleet — one process, a room per doc, booted on first \
         connection\n\
         \n  room-boot  {api}/api/rindle/room-boot   (embedded; grants every doc under demo/)\
         \n  control    http://127.0.0.1:{cport}   (Authorization: Bearer {ctl}; try GET /rooms)\
         \n  journals   {dir}   (emptied at start; --keep keeps them)\
         \n\n  two rooms to try (lease tokens for sub \"demo-user\", valid 24 h, for the query \
         {query}):\n{rooms}\
         \n  Any other doc under demo/ boots its own room; a doc outside it is closed with \
         4404.\n  Rooms idle for 60 s hibernate and boot again on their next connection.\
         \n  Ctrl-C stops every room.\n",
        api = demo.api_url,
        cport = demo.server.control_port(),
        ctl = demo.control_token,
        dir = data_dir.display(),
        query = demo.query.to_js_string(),
    );
    serve_fleet(demo.server).await
}

async fn run_demo(args: DemoArgs) -> i32 {
    let data = match &args.data {
        Some(path) => match DemoData::from_file(path) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("rindle-room: {e}");
                return 1;
            }
        },
        None => DemoData::embedded(),
    };
    let journal = args.journal.clone().unwrap_or_else(|| {
        std::env::temp_dir()
            .join("rindle-room-demo")
            .join("journal")
    });
    if let Some(dir) = journal.parent() {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("rindle-room: cannot create {}: {e}", dir.display());
            return 1;
        }
    }
    let doc = "demo/issues";
    let key = demo::random_secret();
    let control_token = demo::random_secret();
    let tables: Vec<String> = data.tables.iter().map(|t| t.name.to_string()).collect();
    let owned: Vec<String> = tables.iter().map(|t| toml_str(t)).collect();
    let toml_text = format!(
        "[server]\nport = {port}\nlog_format = {fmt}\n\
         [demo]\ndata = {data}\n\
         [downstream]\ndoc_id = {doc}\n[downstream.token_keys]\ndemo = {key}\n\
         [control]\nauth_token = {control}\n\
         [writes]\nowned_tables = [{owned}]\ncrud = true\n\
         [writes.journal]\nkind = \"file\"\npath = {journal}\n",
        port = args.port,
        fmt = toml_str(if args.json_logs { "json" } else { "text" }),
        data = toml_str(
            &args
                .data
                .as_ref()
                .map_or(String::from("<embedded>"), |p| p.display().to_string())
        ),
        doc = toml_str(doc),
        key = toml_str(&key),
        control = toml_str(&control_token),
        owned = owned.join(", "),
        journal = toml_str(&journal.display().to_string()),
    );
    let config = match Config::from_toml_str(&toml_text) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rindle-room: the demo configuration is invalid: {e}");
            return 1;
        }
    };
    let query = data.demo_query();
    let summary: Vec<String> = data.tables.iter().map(|t| t.name.to_string()).collect();
    let upstream = Arc::new(DemoUpstream::new(data));
    let server = match RoomServer::builder(config).upstream(upstream).start().await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rindle-room: cannot start the demo: {e}");
            return 1;
        }
    };
    server.await_live().await;
    let now = SystemClock.now_ms();
    let token = match demo::mint_token(
        doc,
        &query,
        "demo-user",
        "demo",
        &key,
        DEMO_TOKEN_TTL_MS,
        now,
    ) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("rindle-room: cannot mint the demo token: {e}");
            server.shutdown().await;
            return 1;
        }
    };
    print_banner(
        &server,
        doc,
        &summary,
        &journal,
        &control_token,
        &query,
        &token,
    );
    serve(server).await
}

fn print_banner(
    server: &RoomServer,
    doc: &str,
    tables: &[String],
    journal: &std::path::Path,
    control_token: &str,
    query: &JsValue,
    token: &str,
) {
    let port = server.port();
    let url = format!("ws://127.0.0.1:{port}");
    let mutators: Vec<String> = tables
        .iter()
        .map(|t| format!("{t}.insert|update|upsert|delete"))
        .collect();
    let first = &tables[0];
    let node = format!(
        "const ws=new WebSocket('{url}');ws.onopen=()=>{{\
         ws.send(JSON.stringify({{t:'init',clientID:'c1'}}));\
         ws.send(JSON.stringify({{t:'subscribe',queryId:0,name:'_rindle/clientLmid',args:{{}}}}));\
         ws.send(JSON.stringify({{t:'subscribe',queryId:1,leaseToken:'{token}'}}))}};\
         ws.onmessage=e=>console.log(e.data)"
    );
    println!(
        "\nrindle-room demo — document {doc:?}, tables: {}\n\
         \n  websocket  {url}\
         \n  control    http://127.0.0.1:{cport}   (Authorization: Bearer {control_token})\
         \n  journal    {journal}   (delete it to start from the snapshot again)\
         \n  mutators   {mutators}\
         \n\n  lease token (sub \"demo-user\", valid 24 h) for the query\n    {query}\n\n    {token}\n\
         \n  try it with websocat, pasting one frame per line:\
         \n    websocat {url}\
         \n    {{\"t\":\"init\",\"clientID\":\"c1\"}}\
         \n    {{\"t\":\"subscribe\",\"queryId\":0,\"name\":\"_rindle/clientLmid\",\"args\":{{}}}}\
         \n    {{\"t\":\"subscribe\",\"queryId\":1,\"leaseToken\":\"{token}\"}}\
         \n    {{\"t\":\"pushMutation\",\"envelope\":{{\"clientID\":\"c1\",\"mid\":1,\"name\":\"{first}.update\",\"args\":{{\"id\":5,\"title\":\"renamed\"}}}}}}\
         \n\n  or with Node.js (22+; add --experimental-websocket on 20/21):\
         \n    node -e \"{node}\"\n\
         \n  Ctrl-C stops the room.\n",
        tables.join(", "),
        cport = server.control_port(),
        journal = journal.display(),
        mutators = mutators.join(", "),
        query = query.to_js_string(),
    );
}

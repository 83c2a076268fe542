//! `rindle-room`: the standalone room server.
//!
//! ```text
//! rindle-room --config room.toml
//! rindle-room demo [--data file.json] [--port N] [--journal PATH] [--keep] [--log-format json]
//! rindle-room demo --fleet [--data file.json] [--port N] [--keep] [--log-format json]
//! rindle-room token --config room.toml [--doc D] --sub S --query AST [--ttl-ms N] [--kid K]
//! rindle-room journal check PATH
//! rindle-room journal salvage PATH OUT
//! ```
//!
//! `rindle-room --help` (and `COMMAND --help`) lists every option, the environment
//! variables and the exit codes ([`cli`]). Logs go to stderr; the demo's connection
//! details and a minted token go to stdout. SIGINT/SIGTERM shut down gracefully (stop
//! accepting, flush and drain with an authority, close every socket with 1001) and exit
//! 0. Exit codes: 0 after a shutdown, 1 on a start-up error, 2 on a usage error, 3 when
//! the authority fenced the room (another placement owns the document). `journal check`
//! exits 0 when the room can open the journal (clean, or a torn tail it truncates) and 1
//! when it is damaged; `journal salvage` exits 0 once the copy is written and synced.

#![forbid(unsafe_code)]

mod cli;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_signal::{Signal, Signals};
use cli::{Command, DemoArgs, TokenArgs};
use futures_lite::{FutureExt, StreamExt};
use rindle_room_core::json::tree::JsValue;
use rindle_room_smol::config::{Config, LogFormat};
use rindle_room_smol::server::demo::{self, DemoData, DemoUpstream};
use rindle_room_smol::server::{Clock, FleetServer, RoomServer, SystemClock};

/// How long the demo's printed token stays valid.
const DEMO_TOKEN_TTL_MS: u64 = 24 * 60 * 60 * 1000;

fn main() {
    // Every `log` record (the server's and its dependencies') goes to stderr, filtered
    // by RINDLE_LOG; the configuration's `log_format` takes over once it is read.
    rindle_room_smol::server::log::install(LogFormat::Text);
    // A write past `ulimit -f` must fail the append (the incarnation dies, nothing
    // acknowledged is lost), not kill the process; and every socket is a descriptor.
    rindle_room_smol::server::process::ignore_sigxfsz();
    rindle_room_smol::server::process::raise_nofile_limit();
    let command = match cli::parse(std::env::args_os().skip(1)) {
        Ok(c) => c,
        Err(usage) => {
            eprintln!("rindle-room: {}\n\n{}", usage.message, usage.help);
            std::process::exit(2);
        }
    };
    let command = match command {
        Command::Help(text) => {
            print!("{text}");
            std::process::exit(0);
        }
        Command::Version => {
            println!("rindle-room {}", env!("CARGO_PKG_VERSION"));
            std::process::exit(0);
        }
        Command::JournalCheck { path } => std::process::exit(journal_check(&path)),
        Command::JournalSalvage { path, out } => std::process::exit(journal_salvage(&path, &out)),
        Command::Token(t) => std::process::exit(run_token(t)),
        other => other,
    };
    // A fleet's rooms are independent tasks: give the executor a thread per core (one
    // room still runs on one thread at a time). A single room keeps one thread.
    if std::env::var_os("SMOL_THREADS").is_none() && is_fleet(&command) {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::env::set_var("SMOL_THREADS", cores.to_string());
    }
    // Everything runs on smol's executor thread, start-up included: the configuration,
    // the demo data and the seed are then parsed on the thread that keeps the room, in
    // the allocator arena the room reuses. Parsed on the main thread, their freed memory
    // would stay resident in the main arena (about 3.5 MiB for 10,000 rows).
    let code = smol::block_on(smol::spawn(run(command)));
    std::process::exit(code);
}

/// Whether the command runs a fleet: `demo --fleet`, or `--config` with a `[fleet]`
/// table (a file that does not parse is left to the real load to report).
fn is_fleet(command: &Command) -> bool {
    match command {
        Command::Demo(d) => d.fleet,
        Command::Run { config } => std::fs::read_to_string(config)
            .ok()
            .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
            .is_some_and(|t| t.contains_key("fleet")),
        _ => false,
    }
}

async fn run(command: Command) -> i32 {
    match command {
        Command::Run { config } => run_config(&config).await,
        Command::Demo(d) if d.fleet => run_demo_fleet(d).await,
        Command::Demo(d) => run_demo(d).await,
        // Answered before the executor starts.
        _ => 2,
    }
}

/// `journal check PATH`.
fn journal_check(path: &Path) -> i32 {
    use rindle_room_smol::journal::salvage;
    match salvage::check(path) {
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
    }
}

/// `journal salvage PATH OUT`.
fn journal_salvage(path: &Path, out: &Path) -> i32 {
    use rindle_room_smol::journal::salvage;
    match salvage::salvage(path, out) {
        Ok(report) => {
            println!("{report}");
            println!(
                "salvaged: {} intact record(s) written to {} (synced); {} damaged \
                 range(s) and {} unreadable record(s) skipped; {} is unchanged",
                report.intact(),
                out.display(),
                report.damaged.len(),
                report.unreadable.len(),
                path.display()
            );
            0
        }
        Err(e) => {
            eprintln!("rindle-room: {e}");
            1
        }
    }
}

/// `token`: mints a lease token with a key of the config's ring and prints it.
fn run_token(t: TokenArgs) -> i32 {
    let config = match Config::load(&t.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("rindle-room: {e}");
            return 1;
        }
    };
    let doc = match t.doc {
        Some(d) if !d.is_empty() => d,
        _ if !config.downstream.doc_id.is_empty() => config.downstream.doc_id.clone(),
        _ => {
            eprintln!(
                "rindle-room: token: --doc DOC is required: {} names no \
                 `downstream.doc_id` (a fleet serves every doc)",
                t.config.display()
            );
            return 2;
        }
    };
    let keys = &config.downstream.token_keys;
    let kids: Vec<&str> = keys.keys().map(String::as_str).collect();
    let kid = match (&t.kid, kids.as_slice()) {
        (Some(k), _) => k.as_str(),
        (None, [only]) => only,
        (None, _) => {
            eprintln!(
                "rindle-room: token: the key ring has {} keys ({}): choose one with --kid",
                kids.len(),
                kids.join(", ")
            );
            return 2;
        }
    };
    let Some(key) = keys.get(kid) else {
        eprintln!(
            "rindle-room: token: no key {kid:?} in the key ring (it has {})",
            kids.join(", ")
        );
        return 1;
    };
    let ast = match JsValue::parse(&t.query) {
        Ok(v @ JsValue::Obj(_)) if v.get("table").and_then(JsValue::as_str).is_some() => v,
        Ok(_) => {
            eprintln!(
                "rindle-room: token: --query must be a wire AST object with a \"table\", \
                 e.g. '{{\"table\":\"issue\"}}'"
            );
            return 2;
        }
        Err(e) => {
            eprintln!("rindle-room: token: --query is not JSON: {e}");
            return 2;
        }
    };
    let now = SystemClock.now_ms();
    match demo::mint_token(&doc, &ast, &t.sub, kid, key, t.ttl_ms, now) {
        Ok(token) => {
            println!("{token}");
            0
        }
        Err(e) => {
            eprintln!("rindle-room: token: {e}");
            1
        }
    }
}

async fn run_config(path: &Path) -> i32 {
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

/// Why the demo's journal was not emptied.
#[derive(Debug)]
enum EmptyJournalError {
    /// The path is not a regular file.
    NotAFile(PathBuf),
    /// The file does not start with the journal header: not ours to remove.
    NotAJournal(PathBuf),
    /// Reading or removing a file failed.
    Io {
        /// `read` or `remove`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl std::fmt::Display for EmptyJournalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmptyJournalError::NotAFile(path) => write!(
                f,
                "{} is not a regular file, so the demo does not empty it: pass another \
                 --journal",
                path.display()
            ),
            EmptyJournalError::NotAJournal(path) => write!(
                f,
                "{} is not a rindle-room journal, so the demo does not empty it: pass --keep \
                 or another --journal",
                path.display()
            ),
            EmptyJournalError::Io {
                action,
                path,
                source,
            } => write!(f, "cannot {action} {}: {source}", path.display()),
        }
    }
}

impl std::error::Error for EmptyJournalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EmptyJournalError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Empties the demo's journal for a fresh start: removes it (and a compaction's
/// leftover) when it is a rindle-room journal (it starts with the journal file header,
/// or a prefix of it: an empty file too); anything else is refused, never removed.
fn empty_demo_journal(journal: &Path) -> Result<(), EmptyJournalError> {
    use rindle_room_smol::journal::file::FILE_HEADER;
    use std::io::Read as _;
    let io_error = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| EmptyJournalError::Io {
            action,
            path,
            source,
        }
    };
    match std::fs::metadata(journal) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Ok(m) if !m.is_file() => return Err(EmptyJournalError::NotAFile(journal.to_path_buf())),
        _ => {}
    }
    let mut start = Vec::with_capacity(FILE_HEADER.len());
    let file = std::fs::File::open(journal).map_err(io_error("read", journal))?;
    let n = file
        .take(FILE_HEADER.len() as u64)
        .read_to_end(&mut start)
        .map_err(io_error("read", journal))?;
    if start[..] != FILE_HEADER[..n] {
        return Err(EmptyJournalError::NotAJournal(journal.to_path_buf()));
    }
    let mut compact = journal.as_os_str().to_os_string();
    compact.push(".compact");
    for path in [journal.to_path_buf(), PathBuf::from(compact)] {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error("remove", &path)(e)),
        }
    }
    Ok(())
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
    if !args.keep {
        if let Err(e) = empty_demo_journal(&journal) {
            eprintln!("rindle-room: {e}");
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
    // The file's first table leads: the sample lines write to it.
    let mut summary = vec![data.first_table.clone()];
    summary.extend(
        data.tables
            .iter()
            .map(|t| t.name.to_string())
            .filter(|t| *t != data.first_table),
    );
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
        (&journal, args.keep),
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
    (journal, kept): (&Path, bool),
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
         \n  journal    {journal}   ({journal_note})\
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
        journal_note = if kept {
            "kept from an earlier run (--keep)"
        } else {
            "emptied at start; --keep keeps it"
        },
        mutators = mutators.join(", "),
        query = query.to_js_string(),
    );
}

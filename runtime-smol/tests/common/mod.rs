//! Test support for the socket tests: a websocket client, a fake `rindled` (HTTP
//! `/materialize` + a normalized upstream the test drives), a fake authority (CAS,
//! dedup by source+offset, epoch fencing, lmids), token minting and server start-up.

#![allow(dead_code)]

pub mod api;
pub mod authority;
pub mod bin;
pub mod blackhole;
pub mod fleet;
pub mod raw;
pub mod rindled;
pub mod ws;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rindle_room_core::json::tree::JsValue;
use rindle_room_smol::config::{Config, LogFormat};
use rindle_room_smol::mutators::Registry;
use rindle_room_smol::server::{Clock, Logger, RoomServer, RoomServerBuilder, SystemClock};

#[allow(unused_imports)]
pub use authority::FakeAuthority;
pub use rindled::FakeRindled;
pub use ws::WsClient;

/// The room's document id in every test.
pub const DOC: &str = "doc/1";
/// The key ring: `k1` → `secret`.
pub const KID: &str = "k1";
/// The secret of `k1`.
pub const KEY: &str = "secret";
/// The control plane's bearer token.
pub const CONTROL: &str = "ctl-token";

/// Fails a test that waits too long.
pub const WAIT: Duration = Duration::from_secs(10);

/// An empty directory for one test's files: `rindle-room-{label}-{pid}` under the
/// system temp dir, emptied if a previous run left it behind.
pub fn fresh_dir(label: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rindle-room-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A lease token for `ast` and `sub`, valid `ttl_ms` from now.
pub fn token(ast: &str, sub: &str, ttl_ms: u64) -> String {
    token_at(ast, sub, SystemClock.now_ms(), ttl_ms)
}

/// A lease token issued at `iat`.
pub fn token_at(ast: &str, sub: &str, iat: u64, ttl_ms: u64) -> String {
    let ast = JsValue::parse(ast).expect("the test AST is JSON");
    rindle_room_smol::server::demo::mint_token(DOC, &ast, sub, KID, KEY, ttl_ms, iat)
        .expect("minting works")
}

/// A lease token for `doc` (fleet rooms), `ast` and `sub`.
pub fn token_for(doc: &str, ast: &str, sub: &str) -> String {
    let ast = JsValue::parse(ast).expect("the test AST is JSON");
    rindle_room_smol::server::demo::mint_token(
        doc,
        &ast,
        sub,
        KID,
        KEY,
        600_000,
        SystemClock.now_ms(),
    )
    .expect("minting works")
}

/// The note query every test subscribes.
pub const NOTES: &str = r#"{"table":"note"}"#;

/// Options for a read-only room.
pub fn read_only() -> Opts {
    Opts {
        writes: false,
        ..Opts::default()
    }
}

/// A lease-token subscribe frame.
pub fn subscribe(qid: u64, tok: &str) -> String {
    format!(r#"{{"t":"subscribe","queryId":{qid},"leaseToken":"{tok}"}}"#)
}

/// Options of a test server.
#[derive(Clone, Debug)]
pub struct Opts {
    pub writes: bool,
    pub authority: Option<String>,
    pub scopes: Option<String>,
    pub journal_file: Option<std::path::PathBuf>,
    pub send_budget: Option<usize>,
    pub flush_debounce_ms: u64,
    pub extra_downstream: String,
    /// Extra `[server]` lines (limits).
    pub extra_server: String,
    /// Extra `[upstream]` lines.
    pub extra_upstream: String,
}

impl Default for Opts {
    fn default() -> Opts {
        Opts {
            writes: true,
            authority: None,
            scopes: None,
            journal_file: None,
            send_budget: None,
            flush_debounce_ms: 20,
            extra_downstream: String::new(),
            extra_server: String::new(),
            extra_upstream: String::new(),
        }
    }
}

/// The configuration for a room following `rindled`.
pub fn config(rindled: &FakeRindled, o: &Opts) -> Config {
    let mut text = format!(
        "[server]\nport = 0\n{}\
         [upstream]\nws_url = \"{}\"\ncontrol_url = \"{}\"\nauth_token = \"up-token\"\n\
         footprint_ast = '{{\"table\":\"note\"}}'\n{}\
         [downstream]\ndoc_id = \"{DOC}\"\nsweep_interval_ms = 50\n{}",
        o.extra_server, rindled.ws_url, rindled.control_url, o.extra_upstream, o.extra_downstream
    );
    if let Some(b) = o.send_budget {
        text.push_str(&format!("send_budget_bytes = {b}\n"));
    }
    text.push_str(&format!(
        "[downstream.token_keys]\n{KID} = \"{KEY}\"\n[control]\nauth_token = \"{CONTROL}\"\n"
    ));
    if o.writes {
        text.push_str(&format!(
            "[writes]\nowned_tables = [\"note\"]\ngroup_commit_ms = 5\nflush_debounce_ms = {}\n",
            o.flush_debounce_ms
        ));
        if let Some(s) = &o.scopes {
            text.push_str(&format!("scopes = '{s}'\n"));
        }
        match &o.journal_file {
            Some(path) => text.push_str(&format!(
                "[writes.journal]\nkind = \"file\"\npath = {}\n",
                toml::Value::String(path.display().to_string())
            )),
            None => text.push_str("[writes.journal]\nkind = \"memory\"\n"),
        }
    }
    if let Some(base) = &o.authority {
        text.push_str(&format!(
            "[authority]\napply_url = \"{base}/apply-row-change-txn\"\n\
             claim_url = \"{base}/claim-room-epoch\"\nlmids_url = \"{base}/room-lmids\"\n"
        ));
    }
    Config::from_toml_str_with_env(&text, |_| None).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Captured log lines.
#[derive(Clone, Default)]
pub struct Logs(pub Arc<Mutex<Vec<String>>>);

impl Logs {
    pub fn logger(&self) -> Logger {
        let lines = self.0.clone();
        let echo = std::env::var("RINDLE_TEST_LOG").is_ok();
        Logger::with_sink(
            DOC,
            LogFormat::Text,
            Arc::new(move |_, line: &str| {
                if echo {
                    eprintln!("{line}");
                }
                lines.lock().unwrap().push(line.to_string());
            }),
        )
    }

    pub fn count(&self, needle: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    }

    pub fn dump(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }
}

/// The test mutators: `addNote {id, body}` (owner = the user), `setBody {id, body}`,
/// `refuse` (rejects), `needsQuery` (environment deopt), `bump {id}` (increments
/// `note.body` as a number and adds a `tally` row per call — for exactly-once checks).
pub fn registry() -> Registry {
    use rindle_room_core::Value;
    use rindle_room_smol::mutators::{MutatorCtx, MutatorError};
    use serde_json::Value as Json;
    type Tx<'a, 'b> = &'a mut rindle_room_core::MutationTx<'b>;
    fn cell(v: &Json) -> Value {
        match v {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::num(n.as_f64().unwrap_or(0.0)),
            Json::String(s) => Value::str(s),
            other => Value::string(other.to_string()),
        }
    }
    let mut r = Registry::new();
    r.register("addNote", |tx: Tx, args: &Json, ctx: &MutatorCtx| {
        tx.insert(
            "note",
            &[
                ("id".into(), cell(&args["id"])),
                ("body".into(), cell(&args["body"])),
                ("owner".into(), Value::str(&ctx.user)),
            ],
        )?;
        Ok::<(), MutatorError>(())
    });
    r.register("setBody", |tx: Tx, args: &Json, _: &MutatorCtx| {
        tx.update(
            "note",
            &[
                ("id".into(), cell(&args["id"])),
                ("body".into(), cell(&args["body"])),
            ],
        )?;
        Ok(())
    });
    r.register("refuse", |_: Tx, _: &Json, _: &MutatorCtx| {
        Err(MutatorError::Rejected("not allowed".into()))
    });
    r.register("needsQuery", |tx: Tx, _: &Json, _: &MutatorCtx| {
        tx.query()?;
        Ok(())
    });
    r.register(
        "panics",
        |_: Tx, _: &Json, _: &MutatorCtx| -> Result<(), MutatorError> { panic!("boom") },
    );
    r
}

/// A builder for a room following `rindled`, logging into `logs`.
pub fn builder(rindled: &FakeRindled, o: &Opts, logs: &Logs) -> RoomServerBuilder {
    RoomServer::builder(config(rindled, o))
        .registry(registry())
        .logger(logs.logger())
}

/// Starts a room and waits until it is live.
pub async fn start_live(rindled: &FakeRindled, o: &Opts, logs: &Logs) -> RoomServer {
    let server = builder(rindled, o, logs)
        .start()
        .await
        .expect("the room starts");
    within(server.await_live()).await;
    server
}

/// Runs `fut`, failing the test after [`WAIT`].
/// [`within`] with its own bound, for a test that does many rounds of real work.
pub async fn within_secs<T>(secs: u64, fut: impl std::future::Future<Output = T>) -> T {
    use futures_lite::FutureExt;
    async { Some(fut.await) }
        .or(async {
            smol::Timer::after(Duration::from_secs(secs)).await;
            None
        })
        .await
        .expect("timed out")
}

pub async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    use futures_lite::FutureExt;
    async { Some(fut.await) }
        .or(async {
            smol::Timer::after(WAIT).await;
            None
        })
        .await
        .expect("timed out")
}

/// Sleeps `ms` of real time.
pub async fn sleep(ms: u64) {
    smol::Timer::after(Duration::from_millis(ms)).await;
}

/// Polls `cond` every 10 ms until it holds (fails after [`WAIT`]).
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        sleep(10).await;
    }
}

/// A control-plane call: `(status, body)`.
pub async fn control(server: &RoomServer, method: &str, path: &str, body: &str) -> (u16, String) {
    control_with(server, method, path, body, Some(CONTROL)).await
}

/// A control-plane call with an explicit bearer token.
pub async fn control_with(
    server: &RoomServer,
    method: &str,
    path: &str,
    body: &str,
    token: Option<&str>,
) -> (u16, String) {
    let url = format!("http://127.0.0.1:{}{path}", server.control_port());
    let mut headers = vec![];
    if let Some(t) = token {
        headers.push(("authorization".to_string(), format!("Bearer {t}")));
    }
    let res = rindle_room_smol::http::request(method, &url, &headers, body.as_bytes(), WAIT)
        .await
        .expect("the control plane answers");
    (res.status, res.body_text())
}

/// A client that has sent `init` and subscribed the notes with a lease for `sub` (and
/// the lmid query when `lmid`), with the hello/snapshot/progress frames consumed.
pub async fn subscriber(server: &RoomServer, client: &str, sub: &str, lmid: bool) -> WsClient {
    let mut c = WsClient::connect(server.port()).await;
    c.send(&format!(r#"{{"t":"init","clientID":"{client}"}}"#))
        .await;
    if lmid {
        c.send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid","args":{}}"#)
            .await;
        c.expect_t("nhello").await;
        c.expect_t("nbatch").await;
        c.expect_t("progress").await;
    }
    let tok = token(NOTES, sub, 600_000);
    c.send(&format!(
        r#"{{"t":"subscribe","queryId":1,"leaseToken":"{tok}"}}"#
    ))
    .await;
    c.expect_t("nhello").await;
    c.expect_t("nbatch").await;
    c.expect_t("progress").await;
    c
}

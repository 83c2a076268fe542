//! `rindle-room demo --fleet`: an in-process room-boot endpoint, so a fleet runs with no
//! API server. It grants every doc under `demo/` (each room serves the demo data) and
//! answers 404 for any other; epochs count per doc, as a real claim would.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_channel::Receiver;
use rindle_room_core::host::{bearer_matches, error_body};
use rindle_room_core::json::tree::JsValue;
use rindle_room_core::json::write::{write_i64, write_str};
use smol::net::TcpListener;

use crate::http;
use crate::server::clock::Clock as _;
use crate::server::control_plane::{serve_with, Handler, JSON};
use crate::server::error::{Listener, StartError};

/// The docs the demo endpoint grants start with this.
pub const DEMO_DOC_PREFIX: &str = "demo/";

/// Serves room-boot on 127.0.0.1 (an ephemeral port) until `stop` fires; returns the
/// API origin (`http://127.0.0.1:<port>`) for `fleet.api_url`.
pub async fn serve_demo_boot(secret: String, stop: Receiver<()>) -> Result<String, StartError> {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|source| StartError::Listen {
            listener: Listener::DemoBoot,
            addr: String::from("127.0.0.1:0"),
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|source| StartError::NoAddress {
            listener: Listener::DemoBoot,
            source,
        })?;
    let epochs: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    let handler: Handler = Arc::new(move |req: http::Request| {
        let reply = answer(&req, &secret, &epochs);
        Box::pin(async move { (reply.0, JSON, reply.1.into_bytes()) })
    });
    smol::spawn(serve_with(listener, handler, stop)).detach();
    Ok(format!("http://{addr}"))
}

fn answer(
    req: &http::Request,
    secret: &str,
    epochs: &Mutex<HashMap<String, u64>>,
) -> (u16, String) {
    if req.method != "POST" || req.path != rindle_room_core::fleet::DEFAULT_BOOT_PATH {
        return (404, error_body("unknown endpoint"));
    }
    let expected = format!("Bearer {secret}");
    let given = req.header("authorization").unwrap_or("");
    if !bearer_matches(given.as_bytes(), expected.as_bytes()) {
        return (403, error_body("room-boot: shell secret refused"));
    }
    let body = JsValue::parse(&req.body_text()).ok();
    let Some(doc) = body
        .as_ref()
        .and_then(|b| b.get("doc"))
        .and_then(JsValue::as_str)
    else {
        return (400, error_body("doc must be a string"));
    };
    if !doc.starts_with(DEMO_DOC_PREFIX) || doc.len() == DEMO_DOC_PREFIX.len() {
        return (
            404,
            error_body(&format!(
                "no room profile matches doc {doc} (the demo serves docs under {DEMO_DOC_PREFIX})"
            )),
        );
    }
    let epoch = {
        let mut map = epochs.lock().unwrap_or_else(|p| p.into_inner());
        let e = map.entry(doc.to_string()).or_insert(0);
        *e += 1;
        *e
    };
    let mut s = String::from("{\"epoch\":");
    write_i64(&mut s, epoch as i64);
    s.push_str(",\"upstreamLeaseToken\":");
    write_str(&mut s, &format!("demo-lease-{epoch}"));
    s.push_str(
        ",\"flush\":{\"urls\":{\"apply\":\"/api/rindle/apply-row-change-txn\",\
         \"claim\":\"/api/rindle/claim-room-epoch\",\"lmids\":\"/api/rindle/room-lmids\"}}}",
    );
    (200, s)
}

/// What `demo --fleet` runs on.
#[derive(Clone, Debug)]
pub struct DemoFleetOptions {
    /// The demo data every room serves.
    pub data: crate::server::demo::DemoData,
    /// The downstream port (0: any).
    pub port: u16,
    /// Where the rooms' journals go; emptied first unless `keep`.
    pub data_dir: std::path::PathBuf,
    /// Keep the journals of an earlier run.
    pub keep: bool,
    /// JSON log lines.
    pub json_logs: bool,
}

/// A running demo fleet and what a user needs to connect.
#[derive(Debug)]
pub struct DemoFleet {
    /// The fleet.
    pub server: super::FleetServer,
    /// The in-process room-boot endpoint's origin.
    pub api_url: String,
    /// The control plane's bearer token.
    pub control_token: String,
    /// `(doc, lease token)` for the docs the banner shows.
    pub tokens: Vec<(String, String)>,
    /// The query the tokens authorize.
    pub query: JsValue,
    /// Stops the boot endpoint when dropped.
    _stop_boot: async_channel::Sender<()>,
}

/// The docs the demo banner shows.
pub const DEMO_DOCS: [&str; 2] = ["demo/issues-a", "demo/issues-b"];

/// Starts the embedded boot endpoint and a fleet over it: every room serves the demo
/// data through the embedded upstream and keeps its writes in its journal.
pub async fn start_demo_fleet(opts: DemoFleetOptions) -> Result<DemoFleet, StartError> {
    use crate::server::demo::{mint_token, random_secret, DemoUpstream};
    if !opts.keep {
        match std::fs::remove_dir_all(&opts.data_dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(StartError::DemoDataDir {
                    path: opts.data_dir.clone(),
                    source,
                })
            }
        }
    }
    let secret = random_secret();
    let key = random_secret();
    let control_token = random_secret();
    let (stop_boot, stop_rx) = async_channel::bounded::<()>(1);
    let api_url = serve_demo_boot(secret.clone(), stop_rx).await?;
    let owned: Vec<String> = opts
        .data
        .tables
        .iter()
        .map(|t| toml::Value::String(t.name.to_string()).to_string())
        .collect();
    let q = |s: &str| toml::Value::String(s.to_string()).to_string();
    let text = format!(
        "[server]\nport = {port}\nlog_format = {fmt}\n\
         [fleet]\napi_url = {api}\nshell_secret = {secret}\ninstance = \"demo\"\n\
         data_dir = {dir}\n\
         [downstream.token_keys]\ndemo = {key}\n\
         [control]\nauth_token = {control}\n\
         [writes]\nowned_tables = [{owned}]\ncrud = true\n",
        port = opts.port,
        fmt = q(if opts.json_logs { "json" } else { "text" }),
        api = q(&api_url),
        secret = q(&secret),
        dir = q(&opts.data_dir.display().to_string()),
        key = q(&key),
        control = q(&control_token),
        owned = owned.join(", "),
    );
    let config = crate::config::Config::from_toml_str_with_env(&text, |_| None)
        .map_err(StartError::DemoConfig)?;
    let query = opts.data.demo_query();
    let data = opts.data.clone();
    let server = super::FleetServer::builder(config)
        .upstream(Arc::new(move |_: &str| {
            Arc::new(DemoUpstream::new(data.clone()))
                as Arc<dyn crate::server::upstream::UpstreamConnector>
        }))
        .journal_only_writes()
        .start()
        .await?;
    let now = crate::server::clock::SystemClock.now_ms();
    let mut tokens = Vec::new();
    for doc in DEMO_DOCS {
        let t = mint_token(
            doc,
            &query,
            "demo-user",
            "demo",
            &key,
            24 * 60 * 60 * 1000,
            now,
        )
        .map_err(StartError::DemoToken)?;
        tokens.push((doc.to_string(), t));
    }
    Ok(DemoFleet {
        server,
        api_url,
        control_token,
        tokens,
        query,
        _stop_boot: stop_boot,
    })
}

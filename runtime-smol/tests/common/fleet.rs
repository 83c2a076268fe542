//! Fleet-mode support: a box over the fake API server and the fake rindled, readers of
//! a doc's room, control-plane calls.

use std::sync::{Arc, Mutex};

use rindle_room_smol::config::Config;
use rindle_room_smol::server::{FleetServer, Level};

use super::api::FakeApi;
use super::{subscribe, token_for, FakeRindled, WsClient, CONTROL, KEY, KID, NOTES, WAIT};

/// A fleet under test.
pub struct FleetBox {
    pub server: FleetServer,
    pub api: FakeApi,
    pub rindled: FakeRindled,
    pub logs: Arc<Mutex<Vec<String>>>,
}

/// A fleet configuration against `api` (`extra` lines go under `[fleet]`), with a
/// control plane.
pub fn fleet_config(api: &FakeApi, secret: &str, extra: &str) -> Config {
    let text = format!(
        r#"
[fleet]
api_url = "{}"
shell_secret = "{secret}"
instance = "box-test"
boot_timeout_ms = 3000
{extra}

[control]
auth_token = "{CONTROL}"

[downstream.token_keys]
{KID} = "{KEY}"
"#,
        api.url
    );
    Config::from_toml_str_with_env(&text, |_| None).expect("a valid fleet config")
}

/// Starts a fleet (and its fakes).
pub async fn start_fleet(secret: &str, extra: &str) -> FleetBox {
    let rindled = FakeRindled::notes().await;
    let api = FakeApi::start(&rindled.ws_url).await;
    let logs = Arc::new(Mutex::new(Vec::new()));
    let sink_logs = logs.clone();
    let server = FleetServer::builder(fleet_config(&api, secret, extra))
        .log_sink(Arc::new(move |_: Level, line: &str| {
            sink_logs.lock().unwrap().push(line.to_string())
        }))
        .start()
        .await
        .expect("the fleet starts");
    FleetBox {
        server,
        api,
        rindled,
        logs,
    }
}

/// Connects to `doc`'s room and subscribes the notes as `sub` with a token for
/// `token_doc`.
pub async fn reader_as(port: u16, doc: &str, token_doc: &str, sub: &str) -> WsClient {
    let path = rindle_room_core::fleet::room_path(doc);
    let mut c = WsClient::connect_path(port, &path).await;
    c.send(&subscribe(1, &token_for(token_doc, NOTES, sub)))
        .await;
    c
}

/// [`reader_as`] as `u1`.
pub async fn reader(port: u16, doc: &str, token_doc: &str) -> WsClient {
    reader_as(port, doc, token_doc, "u1").await
}

/// How many rows a snapshot carries.
pub fn note_count(snapshot: &serde_json::Value) -> usize {
    snapshot["batch"]["ops"].as_array().map_or(0, Vec::len)
}

/// A call to the fleet's control plane: `(status, body)`.
pub async fn fleet_control(
    b: &FleetBox,
    method: &str,
    path: &str,
    body: &str,
    token: Option<&str>,
) -> (u16, String) {
    let url = format!("http://127.0.0.1:{}{path}", b.server.control_port());
    let mut headers = vec![];
    if let Some(t) = token {
        headers.push(("authorization".to_string(), format!("Bearer {t}")));
    }
    let res = rindle_room_smol::http::request(method, &url, &headers, body.as_bytes(), WAIT)
        .await
        .expect("the control plane answers");
    (res.status, String::from_utf8_lossy(&res.body).into_owned())
}

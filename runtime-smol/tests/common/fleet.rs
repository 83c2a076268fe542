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
    start_box(api, rindled, secret, extra, "").await
}

/// Starts a fleet over existing fakes: `extra` goes under `[fleet]`, `sections` after
/// the configuration (`[writes]` …). With `[writes]`, the rooms get the test registry.
pub async fn start_box(
    api: FakeApi,
    rindled: FakeRindled,
    secret: &str,
    extra: &str,
    sections: &str,
) -> FleetBox {
    let logs = Arc::new(Mutex::new(Vec::new()));
    let sink_logs = logs.clone();
    let mut config = fleet_config(&api, secret, extra);
    if !sections.is_empty() {
        let text = format!(
            "[fleet]\napi_url = \"{}\"\nshell_secret = \"{secret}\"\n{extra}\n\n[control]\n\
             auth_token = \"{CONTROL}\"\n\n[downstream.token_keys]\n{KID} = \"{KEY}\"\n\n{sections}",
            api.url
        );
        config = Config::from_toml_str_with_env(&text, |_| None).expect("a valid fleet config");
    }
    let server = FleetServer::builder(config)
        .registry(super::registry())
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

/// A writer on `doc`'s room: `init` as `client`, the lmid query, the notes as `sub` —
/// sent back to back, as the Rindle client does (a room boots for the lease subscribe;
/// the lmid answer waits for it).
pub async fn writer(port: u16, doc: &str, client: &str, sub: &str) -> WsClient {
    let path = rindle_room_core::fleet::room_path(doc);
    let mut c = WsClient::connect_path(port, &path).await;
    c.send(&format!(r#"{{"t":"init","clientID":"{client}"}}"#))
        .await;
    c.send(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid","args":{}}"#)
        .await;
    c.send(&subscribe(1, &token_for(doc, NOTES, sub))).await;
    c.subscribed().await;
    c.subscribed().await;
    c
}

/// A `pushMutation` of `addNote {id}`.
pub fn add_note(client: &str, mid: u64, id: u64) -> String {
    format!(
        r#"{{"t":"pushMutation","envelope":{{"clientID":"{client}","mid":{mid},"name":"addNote","args":{{"id":{id},"body":"b{id}"}}}}}}"#
    )
}

/// Waits for the lmid ack of `mid`.
pub async fn acked(c: &mut WsClient, mid: u64) {
    c.until("the ack", |v| {
        if v["t"] != "nbatch" || v["queryId"] != 0 {
            return false;
        }
        let op = &v["batch"]["ops"][0];
        let row = if op["op"] == "add" {
            &op["row"]
        } else {
            &op["new"]
        };
        row[1].as_u64().is_some_and(|l| l >= mid)
    })
    .await;
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

/// A connection to `doc` that subscribes `ast` with a lease token for `doc` as `u1`.
pub async fn reader_with(port: u16, doc: &str, ast: &str) -> WsClient {
    let path = rindle_room_core::fleet::room_path(doc);
    let mut c = WsClient::connect_path(port, &path).await;
    c.send(&subscribe(1, &token_for(doc, ast, "u1"))).await;
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

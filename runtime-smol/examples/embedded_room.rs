//! Embeds a room in a Rust program: the built-in demo data as the upstream, one mutator
//! written in Rust, and a websocket client that subscribes, pushes a mutation and
//! prints every frame until the mutation is acknowledged.
//!
//! ```text
//! cargo run -p rindle-room-smol --example embedded_room
//! ```

use std::sync::Arc;

use async_tungstenite::tungstenite::Message;
use futures_lite::StreamExt;
use rindle_room_core::{MutationTx, Value};
use rindle_room_smol::config::Config;
use rindle_room_smol::mutators::{MutatorCtx, MutatorError, Registry};
use rindle_room_smol::server::demo::{self, DemoData, DemoUpstream};
use rindle_room_smol::server::{Clock, RoomServer, SystemClock};

const CONFIG: &str = r#"
[demo]
data = "<embedded>"          # replaced by the DemoUpstream handed to the builder

[downstream]
doc_id = "example/issues"
[downstream.token_keys]
k1 = "example-secret"

[writes]
owned_tables = ["issue"]
"#;

/// `renameIssue {id, title}`: a mutator in Rust. Deterministic: it reads only the
/// transaction and its arguments, so journal replay re-runs it exactly.
fn rename_issue(
    tx: &mut MutationTx<'_>,
    args: &serde_json::Value,
    _ctx: &MutatorCtx,
) -> Result<(), MutatorError> {
    let (Some(id), Some(title)) = (args["id"].as_f64(), args["title"].as_str()) else {
        return Err(MutatorError::Rejected(
            "renameIssue needs {id, title}".into(),
        ));
    };
    tx.update(
        "issue",
        &[
            ("id".into(), Value::num(id)),
            ("title".into(), Value::str(title)),
        ],
    )?;
    Ok(())
}

fn main() {
    smol::block_on(async {
        let config = Config::from_toml_str_with_env(CONFIG, |_| None).expect("a valid config");
        let mut registry = Registry::new();
        registry.register("renameIssue", rename_issue);
        let data = DemoData::embedded();
        let query = data.demo_query();
        let server = RoomServer::builder(config)
            .registry(registry)
            .upstream(Arc::new(DemoUpstream::new(data)))
            .start()
            .await
            .expect("the room starts");
        server.await_live().await;

        let now = SystemClock.now_ms();
        let token = demo::mint_token(
            "example/issues",
            &query,
            "ada",
            "k1",
            "example-secret",
            60_000,
            now,
        )
        .expect("a token");
        let url = format!("ws://127.0.0.1:{}/", server.port());
        let stream = smol::net::TcpStream::connect(("127.0.0.1", server.port()))
            .await
            .expect("connect");
        let (mut ws, _) = async_tungstenite::client_async(url, stream)
            .await
            .expect("handshake");
        for frame in [
            r#"{"t":"init","clientID":"example"}"#.to_string(),
            r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid","args":{}}"#.to_string(),
            format!(r#"{{"t":"subscribe","queryId":1,"leaseToken":"{token}"}}"#),
            r#"{"t":"pushMutation","envelope":{"clientID":"example","mid":1,"name":"renameIssue","args":{"id":5,"title":"renamed from Rust"}}}"#.to_string(),
        ] {
            println!("→ {frame}");
            ws.send(Message::text(frame)).await.expect("send");
        }
        while let Some(Ok(msg)) = ws.next().await {
            let Message::Text(text) = msg else { continue };
            println!("← {text}");
            // The lmid row reaching 1 is the acknowledgement: the mutation is journaled.
            if text.contains(r#""_rindle_client_mutations","op":"add","row":["example",1]"#) {
                break;
            }
        }
        server.shutdown().await;
    });
}

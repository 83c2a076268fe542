//! A small websocket client for the tests (async-tungstenite over smol).

use std::time::Duration;

use async_tungstenite::tungstenite::Message;
use async_tungstenite::WebSocketStream;
use futures_lite::{FutureExt, StreamExt};
use serde_json::Value;
use smol::net::TcpStream;

/// How a read ended.
#[derive(Debug, PartialEq)]
pub enum Next {
    /// A text frame, parsed.
    Frame(Value),
    /// A close frame (`code`, `reason`); `None` when it carried no status.
    Closed(Option<(u16, String)>),
    /// The socket ended without a close frame (terminated, reset).
    Dropped,
    /// Nothing arrived in time.
    Timeout,
}

/// A test client.
pub struct WsClient {
    ws: WebSocketStream<TcpStream>,
    /// Frames read but not yet consumed.
    pub log: Vec<Value>,
}

impl WsClient {
    /// Connects to the room on `port`.
    pub async fn connect(port: u16) -> WsClient {
        WsClient::connect_path(port, "/").await
    }

    /// Connects to `path` on `port` (a fleet room: `/rooms/<doc>`).
    pub async fn connect_path(port: u16, path: &str) -> WsClient {
        match WsClient::try_connect_path(port, path).await {
            Ok(c) => c,
            Err(status) => panic!("the upgrade of {path} was refused with HTTP {status}"),
        }
    }

    /// Connects to `path` on `port`; `Err(status)` when the upgrade is refused.
    pub async fn try_connect_path(port: u16, path: &str) -> Result<WsClient, u16> {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("the room accepts connections");
        let url = format!("ws://127.0.0.1:{port}{path}");
        match async_tungstenite::client_async(url, stream).await {
            Ok((ws, _)) => Ok(WsClient {
                ws,
                log: Vec::new(),
            }),
            Err(async_tungstenite::tungstenite::Error::Http(res)) => Err(res.status().as_u16()),
            Err(e) => panic!("the websocket handshake failed: {e}"),
        }
    }

    /// Sends a text frame.
    pub async fn send(&mut self, text: &str) {
        self.ws
            .send(Message::text(text.to_string()))
            .await
            .expect("send");
    }

    /// Reads the next event within `ms`.
    pub async fn next_within(&mut self, ms: u64) -> Next {
        let read = async {
            loop {
                match self.ws.next().await {
                    Some(Ok(Message::Text(t))) => {
                        let v: Value = serde_json::from_str(t.as_str())
                            .unwrap_or_else(|e| panic!("the room sent non-JSON {t}: {e}"));
                        return Next::Frame(v);
                    }
                    Some(Ok(Message::Close(frame))) => {
                        // Read on once so the queued close reply is flushed to the room.
                        let _ = self.ws.next().await;
                        return Next::Closed(
                            frame.map(|f| (u16::from(f.code), f.reason.as_str().to_string())),
                        );
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => return Next::Dropped,
                }
            }
        };
        read.or(async {
            smol::Timer::after(Duration::from_millis(ms)).await;
            Next::Timeout
        })
        .await
    }

    /// The next frame (fails on a close or after 10 s).
    pub async fn next(&mut self) -> Value {
        match self.next_within(10_000).await {
            Next::Frame(v) => v,
            other => panic!("expected a frame, got {other:?}"),
        }
    }

    /// The next frame, which must have `t` = `t`.
    pub async fn expect_t(&mut self, t: &str) -> Value {
        let v = self.next().await;
        assert_eq!(v["t"], t, "expected a {t} frame, got {v}");
        v
    }

    /// The `nhello` → `nbatch` (seq 0) → `progress` answer to a subscribe; returns the
    /// snapshot frame.
    pub async fn subscribed(&mut self) -> Value {
        self.expect_t("nhello").await;
        let snap = self.expect_t("nbatch").await;
        assert_eq!(snap["batch"]["seq"], 0, "{snap}");
        self.expect_t("progress").await;
        snap
    }

    /// Frames until one satisfies `pred` (the skipped ones go to `log`).
    pub async fn until(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        loop {
            match self.next_within(10_000).await {
                Next::Frame(v) if pred(&v) => return v,
                Next::Frame(v) => self.log.push(v),
                other => panic!("waiting for {what}: got {other:?} (after {:?})", self.log),
            }
        }
    }

    /// Asserts nothing arrives for `ms`.
    pub async fn quiet(&mut self, ms: u64) {
        match self.next_within(ms).await {
            Next::Timeout => {}
            other => panic!("expected silence, got {other:?}"),
        }
    }

    /// Reads until the socket closes; returns the close status (skipping frames).
    pub async fn closed(&mut self) -> Next {
        loop {
            match self.next_within(10_000).await {
                Next::Frame(v) => self.log.push(v),
                Next::Timeout => return Next::Timeout,
                other => return other,
            }
        }
    }
}

//! The private control plane (seed 002 `startControl`, authority.md §7): HTTP on
//! 127.0.0.1, every request gated on `Authorization: Bearer <token>` (exact match,
//! compared in constant time, else 401 `{"error":"unauthorized"}`).
//!
//! | Method + path | Reply |
//! |---|---|
//! | `GET /stats` | 200, the seed's fields |
//! | `POST /revoke {userId}` | 200 `{"revoked":n}`; 400 `{"error":"userId required"}` / `{"error":"invalid JSON"}` |
//! | `POST /drain` | 200 `{"finalFlushSeq":n,"drained":true}`; 500 `{"error":…}` |
//! | `GET /metrics` | 200, Prometheus text |
//! | `GET /healthz` | 200 `{"live":true}` when live, else 503 `{"live":false}` |
//! | anything else | 404 `{"error":"unknown endpoint"}` |
//!
//! Routing compares the method and the raw request-target exactly, as the seed does.

use std::time::Duration;

use async_channel::{Receiver, Sender};
use futures_lite::FutureExt;
use rindle_room_core::json::tree::JsValue;
use rindle_room_core::json::write::{write_i64, write_str};
use smol::net::{TcpListener, TcpStream};

use super::actor::{Control, Event};
use crate::http;

/// Largest request body the control plane reads.
const MAX_BODY: usize = 1 << 20;
/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Control-plane connections served at once; past it, new ones are closed at once (the
/// control plane is loopback-only, for one operator or probe at a time).
const MAX_CONNECTIONS: usize = 64;

/// Serves the control plane until `stop` fires.
pub(crate) async fn serve(
    listener: TcpListener,
    token: String,
    events: Sender<Event>,
    stop: Receiver<()>,
) {
    let expected = format!("Bearer {token}");
    let open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    loop {
        let accepted = async { Some(listener.accept().await) }
            .or(async {
                let _ = stop.recv().await;
                None
            })
            .await;
        match accepted {
            None => return,
            Some(Ok((stream, _))) => {
                use std::sync::atomic::Ordering;
                if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    open.fetch_sub(1, Ordering::SeqCst);
                    continue; // dropped: closes the socket
                }
                let events = events.clone();
                let expected = expected.clone();
                let open = open.clone();
                smol::spawn(async move {
                    handle(stream, expected, events).await;
                    open.fetch_sub(1, Ordering::SeqCst);
                })
                .detach();
            }
            Some(Err(_)) => {
                smol::Timer::after(Duration::from_millis(50)).await;
            }
        }
    }
}

fn error_body(message: &str) -> Vec<u8> {
    let mut s = String::from("{\"error\":");
    write_str(&mut s, message);
    s.push('}');
    s.into_bytes()
}

async fn handle(mut stream: TcpStream, expected: String, events: Sender<Event>) {
    let req = http::with_timeout(
        READ_TIMEOUT,
        http::read_request_continue(&mut stream, MAX_BODY),
    );
    let (status, ctype, body) = match req.await {
        Ok(Some(req)) => route(&req, &expected, &events).await,
        Ok(None) => return, // closed before a request
        Err(e) => (
            400,
            "application/json",
            error_body(&format!("bad request: {e}")),
        ),
    };
    let _ = http::write_response(&mut stream, status, ctype, &body).await;
}

/// Asks the room task; `None` when it has stopped.
async fn ask<T>(events: &Sender<Event>, make: impl FnOnce(Sender<T>) -> Control) -> Option<T> {
    let (tx, rx) = async_channel::bounded(1);
    events.send(Event::Control(make(tx))).await.ok()?;
    rx.recv().await.ok()
}

type Reply = (u16, &'static str, Vec<u8>);

const JSON: &str = "application/json";

fn closed() -> Reply {
    (503, JSON, error_body("the room is closed"))
}

/// Whether `given` equals `expected`, in time that depends only on `expected`'s length
/// (a timing side channel must not reveal how much of the token a guess got right).
fn ct_eq(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        let g = given.get(i).copied().unwrap_or(!e);
        diff |= g ^ e;
    }
    std::hint::black_box(diff) == 0
}

async fn route(req: &http::Request, expected: &str, events: &Sender<Event>) -> Reply {
    let authorized = req
        .header("authorization")
        .is_some_and(|given| ct_eq(given.as_bytes(), expected.as_bytes()));
    if !authorized {
        return (401, JSON, error_body("unauthorized"));
    }
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/stats") => match ask(events, Control::Stats).await {
            Some(stats) => (200, JSON, stats.into_bytes()),
            None => closed(),
        },
        ("POST", "/revoke") => {
            let user = match JsValue::parse(&req.body_text()) {
                Err(_) | Ok(JsValue::Null) => return (400, JSON, error_body("invalid JSON")),
                Ok(v) => match v.get("userId") {
                    Some(JsValue::Str(u)) if !u.is_empty() => u.clone(),
                    _ => return (400, JSON, error_body("userId required")),
                },
            };
            match ask(events, |reply| Control::Revoke { user, reply }).await {
                Some(n) => {
                    let mut s = String::from("{\"revoked\":");
                    write_i64(&mut s, n as i64);
                    s.push('}');
                    (200, JSON, s.into_bytes())
                }
                None => closed(),
            }
        }
        ("POST", "/drain") => match ask(events, Control::Drain).await {
            Some(Ok(seq)) => {
                let mut s = String::from("{\"finalFlushSeq\":");
                write_i64(&mut s, seq as i64);
                s.push_str(",\"drained\":true}");
                (200, JSON, s.into_bytes())
            }
            Some(Err(e)) => (500, JSON, error_body(&e)),
            None => closed(),
        },
        ("GET", "/metrics") => match ask(events, Control::Metrics).await {
            Some(text) => (200, "text/plain; version=0.0.4", text.into_bytes()),
            None => closed(),
        },
        ("GET", "/healthz") => match ask(events, Control::Health).await {
            Some(true) => (200, JSON, b"{\"live\":true}".to_vec()),
            Some(false) => (503, JSON, b"{\"live\":false}".to_vec()),
            None => closed(),
        },
        _ => (404, JSON, error_body("unknown endpoint")),
    }
}

#[cfg(test)]
mod tests {
    use super::ct_eq;

    #[test]
    fn the_bearer_comparison_is_exact() {
        assert!(ct_eq(b"Bearer abc", b"Bearer abc"));
        assert!(!ct_eq(b"Bearer abd", b"Bearer abc"));
        assert!(!ct_eq(b"Bearer ab", b"Bearer abc"));
        assert!(!ct_eq(b"Bearer abcd", b"Bearer abc"));
        assert!(!ct_eq(b"", b"Bearer abc"));
        assert!(ct_eq(b"", b""));
    }
}

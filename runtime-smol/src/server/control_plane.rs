//! The private control plane (the published room's Node shell calls it `startControl`;
//! revocation: docs/design/authority.md, "Revocation and the control plane"): HTTP on
//! `control.bind` (127.0.0.1 by default). The routes, the bearer check (constant time) and
//! the answers are the host's ([`rindle_room_core::host::route_control`]); this file reads
//! requests, asks the room task and writes responses.
//!
//! | Method + path | Token | Reply |
//! |---|---|---|
//! | `GET /healthz` | no | 200 `{"live":true}` while the room runs |
//! | `GET /readyz` | no | 200 `{"ready":true}` when live and not shutting down, else 503 `{"ready":false}` |
//! | `GET /stats` | yes | 200, the published shell's fields |
//! | `POST /revoke {userId}` | yes | 200 `{"revoked":n}`; 400 `{"error":"userId required"}` / `{"error":"invalid JSON"}` |
//! | `POST /drain` | yes | 200 `{"finalFlushSeq":n,"drained":true}`; 500 `{"error":…}` |
//! | `GET /metrics` | yes | 200, Prometheus text |
//! | anything else | yes | 404 `{"error":"unknown endpoint"}` |
//!
//! Routing compares the method and the raw request-target exactly, as the published
//! room's Node shell does.

use std::time::Duration;

use async_channel::{Receiver, Sender};
use futures_lite::FutureExt;
use rindle_room_core::host::{
    error_body, route_control, ControlLimits, ControlReply, ControlRequest, ControlRoute,
};
use smol::net::{TcpListener, TcpStream};

use super::actor::{Control, Event};
use crate::http;

/// The core's control-plane limits.
const LIMITS: ControlLimits = ControlLimits::DEFAULT;
/// Largest request body the control plane reads.
const MAX_BODY: usize = LIMITS.max_body_bytes;
/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_millis(LIMITS.read_timeout_ms);
/// Control-plane connections served at once; past it, a new one replaces the oldest one
/// still silent, or is closed at once when none is (the control plane is loopback-only,
/// for one operator or probe at a time).
const MAX_CONNECTIONS: usize = LIMITS.max_connections;

/// Answers one control-plane request: `(status, content type, body)`.
pub(crate) type Handler =
    std::sync::Arc<dyn Fn(http::Request) -> super::clock::BoxFuture<'static, Reply> + Send + Sync>;

/// Serves the control plane until `stop` fires.
pub(crate) async fn serve(
    listener: TcpListener,
    token: String,
    events: Sender<Event>,
    stop: Receiver<()>,
) {
    let handler: Handler = std::sync::Arc::new(move |req: http::Request| {
        let token = token.clone();
        let events = events.clone();
        Box::pin(async move { route(&req, &token, &events).await })
    });
    serve_with(listener, handler, stop).await
}

/// Connections still waiting for their request, oldest first: a cancel signal each.
type Waiting = std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<(u64, Sender<()>)>>>;

/// Serves HTTP on `listener` until `stop` fires, each request through `handler`
/// (bounded: [`MAX_CONNECTIONS`] at once, [`READ_TIMEOUT`] to send a request, bodies of
/// at most [`MAX_BODY`]). At the cap, a new connection takes the place of the one that
/// has waited longest without sending its request, so sockets opened and left silent
/// (a slowloris) cannot keep a probe out; only when every connection is being answered
/// is the new one dropped.
pub(crate) async fn serve_with(listener: TcpListener, handler: Handler, stop: Receiver<()>) {
    use std::sync::atomic::Ordering;
    let open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let waiting: Waiting = std::sync::Arc::default();
    let mut next_id = 0u64;
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
                if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                    let oldest = waiting
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .pop_front();
                    match oldest {
                        // Its task ends and gives its place back.
                        Some((_, cancel)) => {
                            let _ = cancel.try_send(());
                        }
                        None => {
                            open.fetch_sub(1, Ordering::SeqCst);
                            continue; // dropped: closes the socket
                        }
                    }
                }
                next_id += 1;
                let id = next_id;
                let (cancel, cancelled) = async_channel::bounded(1);
                waiting
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_back((id, cancel));
                let handler = handler.clone();
                let open = open.clone();
                let waiting = waiting.clone();
                smol::spawn(async move {
                    handle(stream, handler, id, &waiting, cancelled).await;
                    waiting
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .retain(|(i, _)| *i != id);
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

async fn handle(
    mut stream: TcpStream,
    handler: Handler,
    id: u64,
    waiting: &Waiting,
    cancelled: Receiver<()>,
) {
    let read = http::with_timeout(
        READ_TIMEOUT,
        http::read_request_continue(&mut stream, MAX_BODY),
    );
    let req = async { Some(read.await) }
        .or(async {
            let _ = cancelled.recv().await;
            None
        })
        .await;
    let Some(req) = req else {
        return; // evicted for a newer connection while silent
    };
    // Its request is in: no longer a candidate for eviction.
    waiting
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .retain(|(i, _)| *i != id);
    let (status, ctype, body) = match req {
        Ok(Some(req)) => handler(req).await,
        Ok(None) => return, // closed before a request
        Err(e) => (
            400,
            JSON,
            error_body(&format!("bad request: {e}")).into_bytes(),
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

pub(crate) type Reply = (u16, &'static str, Vec<u8>);

pub(crate) const JSON: &str = "application/json";

/// Routes through the host's router, asks the room task, renders the host's answer.
async fn route(req: &http::Request, token: &str, events: &Sender<Event>) -> Reply {
    let body = req.body_text();
    let route = route_control(
        &req.method,
        &req.path,
        req.header("authorization"),
        &body,
        token,
    );
    let request = match route {
        ControlRoute::Reply(status, body) => return (status, JSON, body.into_bytes()),
        ControlRoute::Metrics => {
            return match ask(events, Control::Metrics).await {
                Some(text) => (200, "text/plain; version=0.0.4", text.into_bytes()),
                None => json(ControlRoute::http(None)),
            };
        }
        ControlRoute::Host(request) => request,
    };
    let reply = match request {
        ControlRequest::Stats => ask(events, Control::Stats).await.map(ControlReply::Stats),
        ControlRequest::Health => ask(events, Control::Health).await.map(ControlReply::Health),
        ControlRequest::Ready => ask(events, Control::Ready).await.map(ControlReply::Ready),
        ControlRequest::Revoke { user } => ask(events, |reply| Control::Revoke { user, reply })
            .await
            .map(ControlReply::Revoked),
        ControlRequest::Drain => ask(events, Control::Drain)
            .await
            .map(|r| ControlReply::Drained(r.map_err(|e| e.to_string().into()))),
        // The router hands out nothing else.
        _ => None,
    };
    json(ControlRoute::http(reply.as_ref()))
}

fn json((status, body): (u16, String)) -> Reply {
    (status, JSON, body.into_bytes())
}

//! One downstream connection: the bounded upgrade, then a reader (frames to the owner,
//! through the inbound window) and a writer (what the owner queued, one write per
//! burst) until either ends, a close completes, or the close grace runs out.

use std::net::Shutdown;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use async_tungstenite::tungstenite::http;
use async_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use async_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use async_tungstenite::tungstenite::{Error as WsError, Message};
use futures_lite::{FutureExt, StreamExt};
use futures_sink::Sink;
use rindle_room_core::host::close_reason;
use smol::net::TcpStream;
use std::future::poll_fn;

use crate::inbound::{InboundWindow, INBOUND_WINDOW_FRAMES};
use crate::out::{Backlog, ConnOut, Out};
use crate::{ConnCtx, ConnEvent, ConnId, ConnLimits, ConnMetrics};

/// The websocket read buffer of a downstream connection. tungstenite's default is
/// 128 KiB, zero-filled up to its capacity before every socket read: 128 KiB resident
/// and a 128 KiB `memset` per read, per connection. Client frames are small (a
/// `pushMutation`, a subscribe with its lease token); a larger frame grows the buffer
/// for itself, up to `max_frame_bytes`.
const READ_BUFFER_BYTES: usize = 4 * 1024;

/// The websocket settings of a downstream connection: tungstenite's, with a small read
/// buffer and the message and frame size capped at `max_frame_bytes` (tungstenite checks
/// an unfinished fragmented message against it as it grows).
fn ws_config(limits: &ConnLimits) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_BYTES)
        .max_message_size(Some(limits.max_frame_bytes))
        .max_frame_size(Some(limits.max_frame_bytes))
}

/// Queued bytes a connection writes before it flushes in the middle of a burst.
const FLUSH_BYTES: usize = 64 * 1024;

/// Hands one frame to the websocket without flushing it.
async fn feed<S: Sink<Message> + Unpin>(sink: &mut S, msg: Message) -> Result<(), S::Error> {
    poll_fn(|cx| Pin::new(&mut *sink).poll_ready(cx)).await?;
    Pin::new(&mut *sink).start_send(msg)
}

/// Writes every frame handed over so far.
async fn flush<S: Sink<Message> + Unpin>(sink: &mut S) -> Result<(), S::Error> {
    poll_fn(|cx| Pin::new(&mut *sink).poll_flush(cx)).await
}

/// Runs `fut` for at most `limit`.
pub(crate) async fn with_timeout<T>(
    limit: Duration,
    fut: impl std::future::Future<Output = T>,
) -> Option<T> {
    async { Some(fut.await) }
        .or(async {
            smol::Timer::after(limit).await;
            None
        })
        .await
}

/// The close a websocket error calls for, if the socket can still carry one: the code
/// and the reason (which names the limit for 1009).
fn close_for_error(e: &WsError, limits: &ConnLimits) -> Option<(u16, String)> {
    let (max_frame_bytes, name) = (limits.max_frame_bytes, limits.frame_limit_name);
    use async_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
    match e {
        WsError::Capacity(CapacityError::MessageTooLong { size, .. }) => Some((
            1009,
            format!("message too big: {size} bytes, the limit is {max_frame_bytes} ({name})"),
        )),
        WsError::Capacity(other) => Some((1009, format!("message too big: {other}"))),
        WsError::Utf8(_) => Some((1007, String::from("invalid UTF-8 in a text message"))),
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake)
        | WsError::ConnectionClosed
        | WsError::AlreadyClosed
        | WsError::Io(_) => None,
        WsError::Protocol(p) => Some((1002, format!("protocol error: {p}"))),
        _ => Some((1011, String::from("internal error reading the socket"))),
    }
}

/// Closes an upgraded socket that got no owner (a gate's refusal, a route's close) with
/// `code` and `reason`, waiting at most the close grace for the peer, then drops it.
async fn refuse_unrouted(
    mut ws: async_tungstenite::WebSocketStream<TcpStream>,
    stream: &TcpStream,
    code: u16,
    reason: &str,
    limits: &ConnLimits,
) {
    let frame = CloseFrame {
        code: CloseCode::from(code),
        reason: close_reason(reason).into(),
    };
    let _ = with_timeout(limits.close_grace, async {
        let _ = ws.close(Some(frame)).await;
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
    let _ = stream.shutdown(Shutdown::Both);
}

/// Runs one connection: the ws handshake (bounded), then reader and writer until either
/// ends, a close completes, or the close grace runs out.
pub(crate) async fn serve_conn<E>(id: ConnId, stream: TcpStream, ctx: ConnCtx<E>)
where
    E: From<ConnEvent> + Send + 'static,
{
    let _ = stream.set_nodelay(true);
    // With a router, the request path picks the owner; a path naming none is refused
    // with an HTTP error during the upgrade.
    let key = Arc::new(std::sync::Mutex::new(None::<String>));
    let router = ctx.router.clone();
    let found = key.clone();
    #[allow(clippy::result_large_err)] // tungstenite's callback signature
    let callback = move |req: &Request, res: Response| -> Result<Response, ErrorResponse> {
        let Some(router) = &router else {
            return Ok(res);
        };
        match router.check(req.uri().path()) {
            Ok(k) => {
                *found.lock().unwrap_or_else(|p| p.into_inner()) = Some(k);
                Ok(res)
            }
            Err((status, body)) => {
                let mut refusal = ErrorResponse::new(Some(body));
                *refusal.status_mut() =
                    http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::NOT_FOUND);
                Err(refusal)
            }
        }
    };
    let handshake = async_tungstenite::accept_hdr_async_with_config(
        stream.clone(),
        callback,
        Some(ws_config(&ctx.limits)),
    );
    let mut ws = match with_timeout(ctx.limits.handshake_timeout, handshake).await {
        Some(Ok(ws)) => ws,
        Some(Err(_)) => return, // not a websocket client: nothing was registered
        None => {
            ConnMetrics::inc(&ctx.metrics.handshake_timeouts);
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
    };
    let key = key.lock().unwrap_or_else(|p| p.into_inner()).take();
    // The router may want to see frames before it routes (a lease subscribe before a
    // room boots); they are held and delivered first once routed.
    let mut shown: Vec<String> = Vec::new();
    if let (Some(router), Some(key)) = (&ctx.router, &key) {
        let until = std::time::Instant::now() + ctx.limits.handshake_timeout;
        loop {
            let refusal = match router.gate(key, &shown) {
                crate::Gate::Route => break,
                crate::Gate::Refuse(code, reason) => Some((code, reason)),
                crate::Gate::NeedMore => {
                    let left = until.saturating_duration_since(std::time::Instant::now());
                    match with_timeout(left, ws.next()).await {
                        Some(Some(Ok(Message::Text(t)))) => {
                            shown.push(t.as_str().to_string());
                            None
                        }
                        Some(Some(Ok(Message::Binary(b)))) => {
                            shown.push(String::from_utf8_lossy(&b).into_owned());
                            None
                        }
                        Some(Some(Ok(Message::Close(_)))) | Some(None) => return,
                        Some(Some(Ok(_))) => None,
                        Some(Some(Err(e))) => match close_for_error(&e, &ctx.limits) {
                            Some(close) => Some(close),
                            None => return,
                        },
                        None => Some((
                            1008,
                            format!(
                                "no lease subscribe within {} ms of the upgrade",
                                ctx.limits.handshake_timeout.as_millis()
                            ),
                        )),
                    }
                }
            };
            if let Some((code, reason)) = refusal {
                ConnMetrics::inc(&ctx.metrics.protocol_closes);
                return refuse_unrouted(ws, &stream, code, &reason, &ctx.limits).await;
            }
        }
    }
    let (events, _hold) = match (&ctx.router, key) {
        (Some(router), Some(key)) => match router.route(key).await {
            Ok(route) => (route.events, Some(route.hold)),
            Err((code, reason)) => {
                return refuse_unrouted(ws, &stream, code, &reason, &ctx.limits).await;
            }
        },
        _ => (ctx.events.clone(), None),
    };
    let (mut sink, mut source) = ws.split();
    let (tx, out_rx) = async_channel::unbounded();
    let (closing, closing_rx) = async_channel::bounded::<()>(1);
    let backlog = Arc::new(Backlog::new(ctx.gauge.clone()));
    ctx.gauge.unsent.join(id, &backlog, &tx, &closing);
    let out = ConnOut {
        tx: tx.clone(),
        backlog: backlog.clone(),
        closing: closing.clone(),
        tcp: Some(stream.clone()),
        is_closing: false,
    };
    if events
        .send(E::from(ConnEvent::Open { id, out }))
        .await
        .is_err()
    {
        return;
    }
    let window = InboundWindow::new(INBOUND_WINDOW_FRAMES, ctx.limits.max_inbound_bytes);
    // The frames the router saw first go first.
    for text in shown {
        let Some(slot) = window.take(text.len()).await else {
            return;
        };
        if events
            .send(E::from(ConnEvent::Frame { id, text, slot }))
            .await
            .is_err()
        {
            return;
        }
    }
    let limits = ctx.limits.clone();
    let metrics = ctx.metrics.clone();
    let reader = async {
        loop {
            let text = match source.next().await {
                Some(Ok(Message::Text(t))) => t.as_str().to_string(),
                // `String(buffer)` in the published shell: binary frames are read as UTF-8 text.
                Some(Ok(Message::Binary(b))) => String::from_utf8_lossy(&b).into_owned(),
                // A sign of life for the host's silence timeout (tungstenite answers a
                // ping itself). It takes a place in the inbound window like a frame, so
                // a ping flood waits on the owner instead of queueing without end.
                Some(Ok(Message::Pong(_) | Message::Ping(_))) => {
                    let Some(slot) = window.take(0).await else {
                        break;
                    };
                    if events
                        .send(E::from(ConnEvent::Heard { id, slot }))
                        .await
                        .is_err()
                    {
                        break;
                    }
                    continue;
                }
                // The peer's close (or its reply to ours): tungstenite answers it on the
                // next read, which then ends the stream.
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    if let Some((code, reason)) = close_for_error(&e, &limits) {
                        ConnMetrics::inc(&metrics.protocol_closes);
                        let _ = tx.try_send(Out::Close((code, reason)));
                        let _ = closing.try_send(());
                        // Let the writer send the close; the grace below ends the wait.
                        std::future::pending::<()>().await;
                    }
                    break;
                }
                None => break,
            };
            let Some(slot) = window.take(text.len()).await else {
                break;
            };
            if events
                .send(E::from(ConnEvent::Frame { id, text, slot }))
                .await
                .is_err()
            {
                break;
            }
        }
    };
    let writer = async {
        'socket: while let Ok(first) = out_rx.recv().await {
            // Everything queued by now goes out in one write: a drain's `nbatch` and the
            // `progress` after it, or a whole fan-out burst, cost one syscall.
            let mut next = Some(first);
            let mut unflushed = 0;
            while let Some(item) = next.take() {
                match item {
                    Out::Text { text, snapshot } => {
                        backlog.taken(text.len(), snapshot);
                        if backlog.discarding() {
                            next = out_rx.try_recv().ok();
                            continue;
                        }
                        unflushed += text.len();
                        if feed(&mut sink, Message::text(text)).await.is_err() {
                            break 'socket;
                        }
                        if unflushed >= FLUSH_BYTES {
                            if flush(&mut sink).await.is_err() {
                                break 'socket;
                            }
                            unflushed = 0;
                        }
                    }
                    Out::Ping => {
                        if feed(&mut sink, Message::Ping(Default::default()))
                            .await
                            .is_err()
                        {
                            break 'socket;
                        }
                    }
                    Out::Close((code, reason)) => {
                        if flush(&mut sink).await.is_err() {
                            break 'socket;
                        }
                        let frame = CloseFrame {
                            code: CloseCode::from(code),
                            reason: close_reason(&reason).into(),
                        };
                        let _ = sink.close(Some(frame)).await;
                        // The reader ends when the peer answers; the grace bounds the wait.
                        std::future::pending::<()>().await;
                    }
                }
                next = out_rx.try_recv().ok();
            }
            if flush(&mut sink).await.is_err() {
                break;
            }
        }
    };
    // Once a close starts (ours, or a violation's), the socket has the grace to finish
    // it — even a peer that never reads cannot hold it longer.
    let grace = async {
        if closing_rx.recv().await.is_ok() {
            smol::Timer::after(ctx.limits.close_grace).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    reader.or(writer).or(grace).await;
    window.close();
    let _ = stream.shutdown(Shutdown::Both);
    let _ = events.send(E::from(ConnEvent::Closed { id })).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn websocket_errors_map_to_close_codes() {
        use async_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
        let too_long = WsError::Capacity(CapacityError::MessageTooLong {
            size: 2_000_000,
            max_size: 1_048_576,
        });
        let limits = |max_frame_bytes| ConnLimits {
            max_frame_bytes,
            max_inbound_bytes: max_frame_bytes,
            max_connections: 1,
            handshake_timeout: Duration::from_secs(1),
            close_grace: Duration::from_secs(1),
            frame_limit_name: "downstream.maxFrameBytes",
        };
        let (code, reason) = close_for_error(&too_long, &limits(1_048_576)).unwrap();
        assert_eq!(code, 1009);
        assert!(
            reason.contains("2000000 bytes")
                && reason.contains("1048576")
                && reason.contains("downstream.maxFrameBytes"),
            "{reason}"
        );
        assert_eq!(
            close_for_error(&WsError::Utf8("x".into()), &limits(1))
                .unwrap()
                .0,
            1007
        );
        let bad = WsError::Protocol(ProtocolError::NonZeroReservedBits);
        assert_eq!(close_for_error(&bad, &limits(1)).unwrap().0, 1002);
        let eof = WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake);
        assert_eq!(close_for_error(&eof, &limits(1)), None);
        assert_eq!(
            close_for_error(&WsError::ConnectionClosed, &limits(1)),
            None
        );
    }
}

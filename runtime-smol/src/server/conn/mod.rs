//! The downstream websocket connections: the accept loop, one task per connection, and
//! the outbound handle the room task writes to ([`ConnOut`]).
//!
//! A connection task reads frames and forwards them to the room task in arrival order
//! (so each connection is handled serially), and writes what the room task queues on its
//! [`ConnOut`]. Every resource a client can make a connection hold is capped:
//!
//! | resource | cap | past it |
//! |---|---|---|
//! | sockets | `server.max_connections` (upgraded or in the handshake) | HTTP 503 |
//! | time to upgrade | `server.handshake_timeout_ms` | the TCP socket is dropped |
//! | one message, fragments included | `server.max_frame_bytes` | close 1009 |
//! | frames waiting for the room | 64 frames and `server.max_inbound_bytes` | the socket is not read (TCP pushes back) |
//! | unread outbound frames | see [`out`] | close 1008 |
//! | a closing socket | [`CLOSE_GRACE_MS`] | the TCP socket is dropped |
//!
//! A websocket violation (a bad frame, invalid UTF-8, a message too big) is answered
//! with a close frame naming it (1002, 1007, 1009) before the socket goes.

mod inbound;
mod out;

use std::net::Shutdown;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_channel::{Receiver, Sender};
use async_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use async_tungstenite::tungstenite::http;
use async_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use async_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use async_tungstenite::tungstenite::{Error as WsError, Message};
use futures_lite::{FutureExt, StreamExt};
use futures_sink::Sink;
use smol::net::{TcpListener, TcpStream};
use std::future::poll_fn;

pub(crate) use inbound::{InboundSlot, InboundWindow, INBOUND_WINDOW_FRAMES};
pub(crate) use out::ConnOut;
use rindle_room_core::host::close_reason;

use super::actor::Event;
use super::clock::Env;
use super::metrics::Metrics;
use out::{Backlog, Out};

/// How long a closing socket waits for the peer's close reply (and for the close frame
/// to get out at all) before it is dropped.
pub(crate) const CLOSE_GRACE_MS: u64 = 2_000;

/// How long a socket refused at `max_connections` may take to send its upgrade request
/// and read the 503.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(1);

/// How many refusals (503 answers) may be underway at once; past it, new sockets are
/// closed without an answer. Their descriptors come out of the configuration's
/// `RESERVED_FDS`.
const MAX_REFUSALS: usize = 32;

/// The websocket read buffer of a downstream connection. tungstenite's default is
/// 128 KiB, zero-filled up to its capacity before every socket read: 128 KiB resident
/// and a 128 KiB `memset` per read, per connection. Client frames are small (a
/// `pushMutation`, a subscribe with its lease token); a larger frame grows the buffer
/// for itself, up to `max_frame_bytes`.
const READ_BUFFER_BYTES: usize = 4 * 1024;

/// The connection limits, from `[server]`.
#[derive(Clone, Debug)]
pub(crate) struct ConnLimits {
    /// The largest message (and frame) a client may send.
    pub max_frame_bytes: usize,
    /// The most bytes of read frames waiting for the room task per connection.
    pub max_inbound_bytes: usize,
    /// The most sockets held at once (in the handshake or upgraded).
    pub max_connections: usize,
    /// How long the upgrade may take.
    pub handshake_timeout: Duration,
}

impl ConnLimits {
    /// The websocket settings of a downstream connection: tungstenite's, with a small
    /// read buffer and the message and frame size capped at `max_frame_bytes`
    /// (tungstenite checks an unfinished fragmented message against it as it grows).
    fn ws_config(&self) -> WebSocketConfig {
        WebSocketConfig::default()
            .read_buffer_size(READ_BUFFER_BYTES)
            .max_message_size(Some(self.max_frame_bytes))
            .max_frame_size(Some(self.max_frame_bytes))
    }
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

/// The socket counts the accept loop keeps.
#[derive(Debug, Default)]
pub(crate) struct SocketGauge {
    /// Sockets being served (in the handshake or upgraded).
    pub active: AtomicUsize,
    /// Sockets being answered with 503.
    refusing: AtomicUsize,
}

/// Decrements a gauge when dropped.
struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Everything a connection task needs besides its socket.
#[derive(Clone)]
pub(crate) struct ConnCtx {
    pub events: Sender<Event>,
    pub env: Env,
    pub limits: Arc<ConnLimits>,
    pub metrics: Arc<Metrics>,
    pub gauge: Arc<SocketGauge>,
}

/// Accepts downstream connections until `stop` fires; each gets a task.
pub(crate) async fn accept_loop(listener: TcpListener, ctx: ConnCtx, stop: Receiver<()>) {
    let mut next_id: u64 = 1;
    loop {
        let accepted = async { Some(listener.accept().await) }
            .or(async {
                let _ = stop.recv().await;
                None
            })
            .await;
        let Some(accepted) = accepted else {
            return;
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors or a reset during accept: back off briefly.
                smol::Timer::after(Duration::from_millis(50)).await;
                continue;
            }
        };
        let gauge = ctx.gauge.clone();
        if gauge.active.load(Ordering::SeqCst) >= ctx.limits.max_connections {
            ctx.metrics.inc(&ctx.metrics.connections_refused);
            if gauge.refusing.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSALS {
                gauge.refusing.fetch_sub(1, Ordering::SeqCst);
                let _ = stream.shutdown(Shutdown::Both);
                continue;
            }
            let max = ctx.limits.max_connections;
            ctx.env.spawn(async move {
                let _held = Held(&gauge.refusing);
                refuse(stream, max).await;
            });
            continue;
        }
        let id = next_id;
        next_id += 1;
        gauge.active.fetch_add(1, Ordering::SeqCst);
        let ctx2 = ctx.clone();
        ctx.env.spawn(async move {
            let _held = Held(&gauge.active);
            serve_conn(id, stream, ctx2).await;
        });
    }
}

/// Answers an upgrade at `max_connections` with 503 (bounded by [`REFUSAL_TIMEOUT`]).
#[allow(clippy::result_large_err)] // tungstenite's callback signature
async fn refuse(stream: TcpStream, max: usize) {
    let callback = move |_: &Request, _: Response| -> Result<Response, ErrorResponse> {
        let mut res = ErrorResponse::new(Some(format!(
            "this room server is at server.max_connections ({max}); retry shortly\n"
        )));
        *res.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
        res.headers_mut().insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("1"),
        );
        Err(res)
    };
    let answer = async_tungstenite::accept_hdr_async(stream.clone(), callback);
    let _ = with_timeout(REFUSAL_TIMEOUT, answer).await;
    let _ = stream.shutdown(Shutdown::Both);
}

/// Runs `fut` for at most `limit`.
async fn with_timeout<T>(limit: Duration, fut: impl std::future::Future<Output = T>) -> Option<T> {
    async { Some(fut.await) }
        .or(async {
            smol::Timer::after(limit).await;
            None
        })
        .await
}

/// The close a websocket error calls for, if the socket can still carry one: the code
/// and the reason (which names the limit for 1009).
fn close_for_error(e: &WsError, max_frame_bytes: usize) -> Option<(u16, String)> {
    use async_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
    match e {
        WsError::Capacity(CapacityError::MessageTooLong { size, .. }) => Some((
            1009,
            format!("message too big: {size} bytes, the limit is {max_frame_bytes} (server.max_frame_bytes)"),
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

/// Runs one connection: the ws handshake (bounded), then reader and writer until either
/// ends, a close completes, or the close grace runs out.
async fn serve_conn(id: u64, stream: TcpStream, ctx: ConnCtx) {
    let _ = stream.set_nodelay(true);
    let handshake =
        async_tungstenite::accept_async_with_config(stream.clone(), Some(ctx.limits.ws_config()));
    let ws = match with_timeout(ctx.limits.handshake_timeout, handshake).await {
        Some(Ok(ws)) => ws,
        Some(Err(_)) => return, // not a websocket client: nothing was registered
        None => {
            ctx.metrics.inc(&ctx.metrics.handshake_timeouts);
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
    };
    let (mut sink, mut source) = ws.split();
    let (tx, out_rx) = async_channel::unbounded();
    let (closing, closing_rx) = async_channel::bounded::<()>(1);
    let backlog = Arc::new(Backlog::default());
    let out = ConnOut {
        tx: tx.clone(),
        backlog: backlog.clone(),
        closing: closing.clone(),
        tcp: Some(stream.clone()),
        is_closing: false,
    };
    let events = ctx.events.clone();
    if events.send(Event::ConnOpen { id, out }).await.is_err() {
        return;
    }
    let window = InboundWindow::new(INBOUND_WINDOW_FRAMES, ctx.limits.max_inbound_bytes);
    let max_frame = ctx.limits.max_frame_bytes;
    let metrics = ctx.metrics.clone();
    let reader = async {
        loop {
            let text = match source.next().await {
                Some(Ok(Message::Text(t))) => t.as_str().to_string(),
                // `String(buffer)` in the seed: binary frames are read as UTF-8 text.
                Some(Ok(Message::Binary(b))) => String::from_utf8_lossy(&b).into_owned(),
                // The peer's close (or its reply to ours): tungstenite answers it on the
                // next read, which then ends the stream.
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    if let Some((code, reason)) = close_for_error(&e, max_frame) {
                        metrics.inc(&metrics.protocol_closes);
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
                .send(Event::ConnMsg { id, text, slot })
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
            smol::Timer::after(Duration::from_millis(CLOSE_GRACE_MS)).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    reader.or(writer).or(grace).await;
    window.close();
    let _ = stream.shutdown(Shutdown::Both);
    let _ = ctx.events.send(Event::ConnClosed { id }).await;
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
        let (code, reason) = close_for_error(&too_long, 1_048_576).unwrap();
        assert_eq!(code, 1009);
        assert!(
            reason.contains("2000000 bytes") && reason.contains("1048576"),
            "{reason}"
        );
        assert_eq!(
            close_for_error(&WsError::Utf8("x".into()), 1).unwrap().0,
            1007
        );
        let bad = WsError::Protocol(ProtocolError::NonZeroReservedBits);
        assert_eq!(close_for_error(&bad, 1).unwrap().0, 1002);
        let eof = WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake);
        assert_eq!(close_for_error(&eof, 1), None);
        assert_eq!(close_for_error(&WsError::ConnectionClosed, 1), None);
    }
}

//! The downstream websocket connections: the accept loop, one task per connection, and
//! the outbound handle the room task writes to.
//!
//! A connection task reads frames and forwards them to the room task in arrival order
//! (so each connection is handled serially), and writes what the room task queues on its
//! [`ConnOut`]. Queued-but-unwritten bytes are counted: that is the send budget's
//! `bufferedAmount` (seed 002 `sendBudgeted`). Terminating a connection shuts its TCP
//! socket down without a close frame.

use std::future::poll_fn;
use std::net::Shutdown;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_channel::{Receiver, Sender};
use async_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use async_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use futures_sink::Sink;
use smol::net::{TcpListener, TcpStream};

use super::actor::Event;
use super::clock::Env;

/// How long a closing socket waits for the peer's close reply before dropping it.
const CLOSE_GRACE_MS: u64 = 2_000;

/// How many of one connection's frames may wait for the room task at once. The room
/// task's event queue is shared by every connection and the upstream leg; without a
/// window, a client that writes faster than the room handles its frames would grow that
/// queue without bound. At the window, the connection stops reading its socket, so TCP
/// pushes back on the client (nothing is dropped, order is kept).
pub(crate) const INBOUND_WINDOW: usize = 64;

/// One inbound frame's place in its connection's [`INBOUND_WINDOW`]: taken before the
/// frame is queued for the room task, given back when the room task drops the event
/// (after handling it).
#[derive(Debug)]
pub(crate) struct InboundSlot(Receiver<()>);

impl InboundSlot {
    /// Waits for a free place in the window of `window` (the sending half).
    async fn take(window: &Sender<()>, held: &Receiver<()>) -> Option<InboundSlot> {
        window.send(()).await.ok()?;
        Some(InboundSlot(held.clone()))
    }
}

impl Drop for InboundSlot {
    fn drop(&mut self) {
        let _ = self.0.try_recv();
    }
}

/// The websocket read buffer of a downstream connection. tungstenite's default is
/// 128 KiB, zero-filled up to its capacity before every socket read: 128 KiB resident
/// and a 128 KiB `memset` per read, per connection. Client frames are small (a
/// `pushMutation`, a subscribe with its lease token); a larger frame grows the buffer
/// for itself.
const READ_BUFFER_BYTES: usize = 4 * 1024;

/// The websocket settings of a downstream connection (tungstenite's, with a small read
/// buffer).
fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(READ_BUFFER_BYTES)
}

/// One queued outbound item.
#[derive(Debug)]
enum Out {
    Text(String),
    /// A close frame; `None` = no status code (`ws.close()` without arguments).
    Close(Option<(u16, String)>),
}

/// The room task's handle on one connection's outbound side.
#[derive(Debug)]
pub(crate) struct ConnOut {
    tx: Sender<Out>,
    queued: Arc<AtomicUsize>,
    tcp: Option<TcpStream>,
    closing: bool,
}

/// What a budgeted send did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Queued (`bytes` long).
    Queued(usize),
    /// The socket is closing or gone: dropped, as `ws.send` on a non-open socket is.
    Dropped,
    /// The send budget was exceeded: the socket was terminated.
    Terminated,
}

impl ConnOut {
    /// Whether frames are still accepted (`readyState === OPEN`).
    pub(crate) fn is_open(&self) -> bool {
        !self.closing && !self.tx.is_closed()
    }

    /// Queues a frame without checking the budget (seed 002 `send`).
    pub(crate) fn send(&mut self, text: String) -> Sent {
        if !self.is_open() {
            return Sent::Dropped;
        }
        let n = text.len();
        self.queued.fetch_add(n, Ordering::Relaxed);
        if self.tx.try_send(Out::Text(text)).is_err() {
            self.queued.fetch_sub(n, Ordering::Relaxed);
            return Sent::Dropped;
        }
        Sent::Queued(n)
    }

    /// Queues a frame unless the queued bytes would exceed `budget`, in which case the
    /// socket is terminated (seed 002 `sendBudgeted`).
    pub(crate) fn send_budgeted(&mut self, text: String, budget: usize) -> Sent {
        if !self.is_open() {
            return Sent::Dropped;
        }
        if self.queued.load(Ordering::Relaxed) + text.len() > budget {
            self.terminate();
            return Sent::Terminated;
        }
        self.send(text)
    }

    /// Starts the close handshake with `code` and `reason` after the queued frames.
    pub(crate) fn close(&mut self, code: u16, reason: &str) {
        if !self.is_open() {
            return;
        }
        self.closing = true;
        let _ = self
            .tx
            .try_send(Out::Close(Some((code, reason.to_string()))));
    }

    /// Starts the close handshake without a status code.
    pub(crate) fn close_without_status(&mut self) {
        if !self.is_open() {
            return;
        }
        self.closing = true;
        let _ = self.tx.try_send(Out::Close(None));
    }

    /// Drops the socket at once, without a close frame (`ws.terminate()`).
    pub(crate) fn terminate(&mut self) {
        self.closing = true;
        self.tx.close();
        if let Some(tcp) = &self.tcp {
            let _ = tcp.shutdown(Shutdown::Both);
        }
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

/// Accepts downstream connections until `stop` fires; each gets a task.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    events: Sender<Event>,
    env: Env,
    stop: Receiver<()>,
    active: Arc<AtomicUsize>,
) {
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
        let id = next_id;
        next_id += 1;
        active.fetch_add(1, Ordering::SeqCst);
        let active = active.clone();
        let events = events.clone();
        env.spawn(async move {
            serve_conn(id, stream, events).await;
            active.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

/// Runs one connection: the ws handshake, then reader and writer until either ends.
async fn serve_conn(id: u64, stream: TcpStream, events: Sender<Event>) {
    let _ = stream.set_nodelay(true);
    let ws = match async_tungstenite::accept_async_with_config(stream.clone(), Some(ws_config()))
        .await
    {
        Ok(ws) => ws,
        Err(_) => return, // not a websocket client: nothing was registered
    };
    let (mut sink, mut source) = ws.split();
    let (tx, out_rx) = async_channel::unbounded();
    let queued = Arc::new(AtomicUsize::new(0));
    let out = ConnOut {
        tx,
        queued: queued.clone(),
        tcp: Some(stream.clone()),
        closing: false,
    };
    if events.send(Event::ConnOpen { id, out }).await.is_err() {
        return;
    }
    let (window, held) = async_channel::bounded::<()>(INBOUND_WINDOW);
    let reader = async {
        while let Some(msg) = source.next().await {
            let text = match msg {
                Ok(Message::Text(t)) => t.as_str().to_string(),
                // `String(buffer)` in the seed: binary frames are read as UTF-8 text.
                Ok(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
                Ok(Message::Close(_)) | Err(_) => break,
                Ok(_) => continue,
            };
            let Some(slot) = InboundSlot::take(&window, &held).await else {
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
            while let Some(out) = next.take() {
                match out {
                    Out::Text(text) => {
                        unflushed += text.len();
                        if feed(&mut sink, Message::text(text)).await.is_err() {
                            break 'socket;
                        }
                        if unflushed >= FLUSH_BYTES {
                            if flush(&mut sink).await.is_err() {
                                break 'socket;
                            }
                            queued.fetch_sub(unflushed, Ordering::Relaxed);
                            unflushed = 0;
                        }
                    }
                    Out::Close(status) => {
                        if flush(&mut sink).await.is_err() {
                            break 'socket;
                        }
                        queued.fetch_sub(unflushed, Ordering::Relaxed);
                        let frame = status.map(|(code, reason)| CloseFrame {
                            code: CloseCode::from(code),
                            reason: reason.into(),
                        });
                        let _ = sink.close(frame).await;
                        // Wait for the peer's close reply (the reader ends), at most this
                        // long (network time, not room time: real timers even under a
                        // fake clock).
                        smol::Timer::after(Duration::from_millis(CLOSE_GRACE_MS)).await;
                        break 'socket;
                    }
                }
                next = out_rx.try_recv().ok();
            }
            if flush(&mut sink).await.is_err() {
                break;
            }
            queued.fetch_sub(unflushed, Ordering::Relaxed);
        }
    };
    reader.or(writer).await;
    let _ = stream.shutdown(Shutdown::Both);
    let _ = events.send(Event::ConnClosed { id }).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inbound_window_holds_frames_until_the_room_task_drops_them() {
        smol::block_on(async {
            let (window, held) = async_channel::bounded::<()>(INBOUND_WINDOW);
            let mut slots = Vec::new();
            for _ in 0..INBOUND_WINDOW {
                slots.push(
                    InboundSlot::take(&window, &held)
                        .await
                        .expect("a free place"),
                );
            }
            // The window is full: the reader waits (it stops reading its socket).
            let mut next = Box::pin(InboundSlot::take(&window, &held));
            assert!(futures_lite::future::poll_once(&mut next).await.is_none());
            // The room task handles (drops) one frame: the reader goes on.
            drop(slots.pop());
            assert!(next.await.is_some());
            // A closed connection ends the wait instead of hanging.
            held.close();
            assert!(InboundSlot::take(&window, &held).await.is_none());
        });
    }
}

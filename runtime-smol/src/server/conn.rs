//! The downstream websocket connections: the accept loop, one task per connection, and
//! the outbound handle the room task writes to.
//!
//! A connection task reads frames and forwards them to the room task in arrival order
//! (so each connection is handled serially), and writes what the room task queues on its
//! [`ConnOut`]. Queued-but-unwritten bytes are counted: that is the send budget's
//! `bufferedAmount` (seed 002 `sendBudgeted`). Terminating a connection shuts its TCP
//! socket down without a close frame.

use std::net::Shutdown;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_channel::{Receiver, Sender};
use async_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use async_tungstenite::tungstenite::protocol::CloseFrame;
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use smol::net::{TcpListener, TcpStream};

use super::actor::Event;
use super::clock::Env;

/// How long a closing socket waits for the peer's close reply before dropping it.
const CLOSE_GRACE_MS: u64 = 2_000;

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
    let ws = match async_tungstenite::accept_async(stream.clone()).await {
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
    let reader = async {
        while let Some(msg) = source.next().await {
            let text = match msg {
                Ok(Message::Text(t)) => t.as_str().to_string(),
                // `String(buffer)` in the seed: binary frames are read as UTF-8 text.
                Ok(Message::Binary(b)) => String::from_utf8_lossy(&b).into_owned(),
                Ok(Message::Close(_)) | Err(_) => break,
                Ok(_) => continue,
            };
            if events.send(Event::ConnMsg { id, text }).await.is_err() {
                break;
            }
        }
    };
    let writer = async {
        while let Ok(out) = out_rx.recv().await {
            match out {
                Out::Text(text) => {
                    let n = text.len();
                    if sink.send(Message::text(text)).await.is_err() {
                        break;
                    }
                    queued.fetch_sub(n, Ordering::Relaxed);
                }
                Out::Close(status) => {
                    let frame = status.map(|(code, reason)| CloseFrame {
                        code: CloseCode::from(code),
                        reason: reason.into(),
                    });
                    let _ = sink.close(frame).await;
                    // Wait for the peer's close reply (the reader ends), at most this long
                    // (network time, not room time: real timers even under a fake clock).
                    smol::Timer::after(Duration::from_millis(CLOSE_GRACE_MS)).await;
                    break;
                }
            }
        }
    };
    reader.or(writer).await;
    let _ = stream.shutdown(Shutdown::Both);
    let _ = events.send(Event::ConnClosed { id }).await;
}

//! The accept loop: one task per downstream socket, up to `max_connections`; past it,
//! upgrades are answered with HTTP 503 (bounded in number and time).

use std::net::Shutdown;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_channel::Receiver;
use async_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use async_tungstenite::tungstenite::http;
use futures_lite::FutureExt;
use smol::net::{TcpListener, TcpStream};

use crate::conn::{serve_conn, with_timeout};
use crate::{ConnCtx, ConnEvent, ConnMetrics};

/// How long a socket refused at `max_connections` may take to send its upgrade request
/// and read the 503.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(1);

/// How many refusals (503 answers) may be underway at once; past it, new sockets are
/// closed without an answer.
const MAX_REFUSALS: usize = 32;

/// The socket counts the accept loop keeps.
#[derive(Debug, Default)]
pub struct SocketGauge {
    /// Sockets being served (in the handshake or upgraded).
    pub active: AtomicUsize,
    /// Sockets being answered with 503.
    pub refusing: AtomicUsize,
    /// Every socket's unsent bytes together (`server.max_unsent_bytes`).
    pub unsent: crate::Unsent,
}

/// Decrements a gauge when dropped.
struct Held<'a>(&'a AtomicUsize);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Accepts downstream connections until `stop` fires; each gets a task.
pub async fn accept_loop<E>(listener: TcpListener, ctx: ConnCtx<E>, stop: Receiver<()>)
where
    E: From<ConnEvent> + Send + 'static,
{
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
            ConnMetrics::inc(&ctx.metrics.connections_refused);
            if gauge.refusing.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSALS {
                gauge.refusing.fetch_sub(1, Ordering::SeqCst);
                let _ = stream.shutdown(Shutdown::Both);
                continue;
            }
            let max = ctx.limits.max_connections;
            (ctx.spawn)(Box::pin(async move {
                let _held = Held(&gauge.refusing);
                refuse(stream, max).await;
            }));
            continue;
        }
        let id = next_id;
        next_id += 1;
        gauge.active.fetch_add(1, Ordering::SeqCst);
        let ctx2 = ctx.clone();
        (ctx.spawn)(Box::pin(async move {
            let _held = Held(&gauge.active);
            serve_conn(id, stream, ctx2).await;
        }));
    }
}

/// Answers an upgrade at `max_connections` with 503 (bounded by [`REFUSAL_TIMEOUT`]).
#[allow(clippy::result_large_err)] // tungstenite's callback signature
async fn refuse(stream: TcpStream, max: usize) {
    let callback = move |_: &Request, _: Response| -> Result<Response, ErrorResponse> {
        let mut res = ErrorResponse::new(Some(format!(
            "this room is at its connection limit ({max}); retry shortly\n"
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

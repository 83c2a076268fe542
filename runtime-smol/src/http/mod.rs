//! A small HTTP/1.1 client and server framing over smol sockets, with `httparse`.
//!
//! The client sends one request and reads the whole [`Response`] ([`request`]), or
//! sends it over a kept-alive connection of a [`Pool`]; the server side reads one
//! [`Request`] ([`read_request`]) and writes one response ([`write_response`]).
//!
//!
//! # Scope
//!
//! This is deliberately the smallest HTTP/1.1 that the room needs: one request per
//! connection (`Connection: close` both ways) except through a [`Pool`] (the write
//! authority's client: kept-alive connections, bounded), `Content-Length` bodies,
//! `chunked` transfer-coding on receive, and hard caps on head and body sizes. No
//! pipelining, no redirects, no compression, no proxies.
//!
//! **TLS is out of scope.** The room's HTTP peers (the write authority, `rindled`'s
//! control plane, the room's own control plane) live on loopback or a private network
//! next to the room, as in the reference deployment; terminating TLS is the job of the
//! network layer (a sidecar, a service mesh, a tunnel), and pulling a TLS stack into the
//! room would add a large dependency for no benefit on those links. `https://` URLs are
//! therefore refused with an error that says so, rather than silently sent in clear.
//!
//! # Errors
//!
//! Everything returns [`io::Error`]. Client errors carry a message naming the method and
//! URL (credentials in a URL's user-info part are never echoed). Server-side framing
//! errors are `ErrorKind::InvalidData` wrapping an [`HttpError`]; [`error_status`] maps
//! them to the status a server should answer with (413, 431, 400).
//!
//! Nothing here panics on hostile input: every length is checked before it is used.
//!
//! | file | owns |
//! |---|---|
//! | `client.rs` | [`request`], [`read_response`], [`Response`] |
//! | `pool.rs` | [`Pool`]: kept-alive connections for repeated calls |
//! | `server.rs` | [`read_request`], [`write_response`], [`Request`], [`reason_phrase`] |
//! | `url.rs` | [`parse_url`]: which URLs the client accepts |
//! | `framing.rs` | both sides: head parsing, body delimiting, header checks |
//! | `reader.rs` | both sides: the buffered reader of heads, bodies and chunks |
//! | `error.rs` | [`HttpError`] and the status it maps to |

use std::fmt;
use std::future::Future;
use std::io;
use std::time::Duration;

use smol::Timer;

mod client;
mod error;
mod framing;
mod limits;
mod pool;
mod reader;
mod server;
mod url;

pub use client::{read_response, request, Response, MAX_RESPONSE_BODY};
pub use error::{error_status, http_error, HttpError};
pub use limits::{MAX_HEADERS, MAX_HEAD_BYTES};
pub use pool::{Pool, IDLE_FOR, MAX_IDLE_PER_ORIGIN};
pub use server::{
    read_request, read_request_continue, reason_phrase, write_response, write_response_with,
    Request,
};
pub use url::{parse_url, HttpUrl};

/// Run `fut`, failing with `ErrorKind::TimedOut` ("timed out") if it has not finished
/// within `dur`. The future is dropped on expiry.
pub async fn with_timeout<T>(
    dur: Duration,
    fut: impl Future<Output = io::Result<T>>,
) -> io::Result<T> {
    futures_lite::future::or(fut, async move {
        Timer::after(dur).await;
        Err(io::Error::new(io::ErrorKind::TimedOut, TimeoutMarker))
    })
    .await
}

/// The payload of [`with_timeout`]'s error (lets [`request`] tell its own deadline from a
/// socket-level timeout).
#[derive(Debug)]
pub(super) struct TimeoutMarker;

impl fmt::Display for TimeoutMarker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("timed out")
    }
}

impl std::error::Error for TimeoutMarker {}

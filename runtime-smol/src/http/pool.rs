//! Kept-alive connections for a client that calls the same servers over and over: the
//! write authority, which a box's rooms flush to every `flush_debounce_ms` each. A fresh
//! connection per call cost a connect, an accept and a close on both sides, and left a
//! socket in `TIME_WAIT` behind every flush.
//!
//! Limits: at most [`MAX_IDLE_PER_ORIGIN`] idle connections per origin (a connection
//! put back past that is closed), each kept at most [`IDLE_FOR`] (a server closing an idle
//! connection sooner is expected: see below). Connections in use are not counted: there
//! is one per call in flight, as without the pool.
//!
//! A connection goes back to the pool only when its response was delimited by its length
//! (not by the close), the server did not answer `Connection: close`, and nothing
//! followed the response. A call on a reused connection that fails before a response
//! head arrived — the server closed it meanwhile — is made once more on a fresh
//! connection. The calls made through a pool must be safe to repeat: the authority's
//! are (a flush is deduplicated by its offset, the lmid query reads).

use std::collections::HashMap;
use std::io;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use smol::net::TcpStream;

use super::client::{connect, exchange, named, request_wire};
use super::url::{parse_url, HttpUrl};
use super::{with_timeout, Response};

/// Idle connections kept per origin (host and port).
pub const MAX_IDLE_PER_ORIGIN: usize = 32;

/// How long an idle connection is kept: under the 5 s after which Node's HTTP server
/// (the API server's) closes one, so a reused connection is rarely one the server is
/// closing at that moment.
pub const IDLE_FOR: Duration = Duration::from_secs(4);

/// Idle connections by origin (host, port), each with when it went idle.
type IdleMap = HashMap<(String, u16), Vec<(TcpStream, Instant)>>;

/// A pool of kept-alive connections (see the module docs). Share it (`Arc`) between the
/// clients of one box.
#[derive(Debug, Default)]
pub struct Pool {
    idle: Mutex<IdleMap>,
}

impl Pool {
    /// An empty pool.
    pub fn new() -> Pool {
        Pool::default()
    }

    /// Idle connections held now, over every origin.
    pub fn idle(&self) -> usize {
        self.lock().values().map(Vec::len).sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, IdleMap> {
        // The map stays whole if a holder panicked: each step is one push or pop.
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle connection to `u`'s origin kept less than [`IDLE_FOR`], if any (older
    /// ones are closed on the way).
    fn take(&self, u: &HttpUrl) -> Option<TcpStream> {
        let mut idle = self.lock();
        let list = idle.get_mut(&(u.host.clone(), u.port))?;
        while let Some((stream, since)) = list.pop() {
            if since.elapsed() < IDLE_FOR {
                return Some(stream);
            }
        }
        None
    }

    fn put_back(&self, u: &HttpUrl, stream: TcpStream) {
        let mut idle = self.lock();
        let list = idle.entry((u.host.clone(), u.port)).or_default();
        list.retain(|(_, since)| since.elapsed() < IDLE_FOR);
        if list.len() < MAX_IDLE_PER_ORIGIN {
            list.push((stream, Instant::now()));
        }
    }

    /// [`super::request`] over a kept-alive connection when one is idle (the same
    /// arguments, limits and errors).
    pub async fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        body: &[u8],
        timeout: Duration,
    ) -> io::Result<Response> {
        let u = parse_url(url)?;
        with_timeout(timeout, self.exchange(method, &u, headers, body))
            .await
            .map_err(|e| named(e, method, url, timeout))
    }

    async fn exchange(
        &self,
        method: &str,
        u: &HttpUrl,
        headers: &[(String, String)],
        body: &[u8],
    ) -> io::Result<Response> {
        let wire = request_wire(method, u, headers, body, true)?;
        let head_request = method.eq_ignore_ascii_case("HEAD");
        if let Some(mut stream) = self.take(u) {
            let mut head_seen = false;
            match exchange(&mut stream, &wire, head_request, &mut head_seen).await {
                Ok(e) => {
                    if e.reusable {
                        self.put_back(u, stream);
                    }
                    return Ok(e.response);
                }
                // The server had closed it: once more, fresh.
                Err(_) if !head_seen => {}
                Err(e) => return Err(e),
            }
        }
        let mut stream = connect(u).await?;
        let e = exchange(&mut stream, &wire, head_request, &mut false).await?;
        if e.reusable {
            self.put_back(u, stream);
        }
        Ok(e.response)
    }
}

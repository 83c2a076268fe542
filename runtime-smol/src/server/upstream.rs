//! The upstream leg's transport: where the room's rows come from.
//!
//! The room task speaks the normalized protocol as a client (`init` → `subscribe
//! {queryId: 1, leaseToken}` → `nhello` → seq-0 `nbatch` → live tail) over an
//! [`UpstreamLink`]: two channels of frames. An [`UpstreamConnector`] mints the
//! footprint lease and opens links:
//!
//! - [`WsUpstream`]: `rindled` — `POST <controlUrl>/materialize` for the lease, a
//!   websocket to `wsUrl` for the frames;
//! - [`DemoUpstream`](super::demo::DemoUpstream): an embedded upstream serving rows from
//!   a JSON file (no `rindled`).

use std::fmt;
use std::time::Duration;

use async_channel::{Receiver, Sender};
use async_tungstenite::tungstenite::Message;
use futures_lite::{FutureExt, StreamExt};
use rindle_room_core::host::{lease_reply, materialize_body};
use rindle_room_core::json::tree::JsValue;
use smol::net::TcpStream;

use super::clock::BoxFuture;
use super::upstream_progress::{FrameMeter, Metered};
use crate::http;

/// How long one `/materialize` call or websocket connect may take.
const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);

/// An open upstream socket as two channels. The socket is gone when `from_upstream`
/// ends; dropping `to_upstream` closes it.
#[derive(Debug)]
pub struct UpstreamLink {
    /// What to send upstream.
    pub to_upstream: Sender<ToUpstream>,
    /// What came from upstream, in order.
    pub from_upstream: Receiver<FromUpstream>,
}

/// What the room sends on an upstream link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToUpstream {
    /// A text frame.
    Frame(String),
    /// A websocket ping (the link has been silent a while): the peer's pong comes back
    /// as [`FromUpstream::Heard`].
    Ping,
}

/// What an upstream link delivers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromUpstream {
    /// A text frame (a binary one read as UTF-8).
    Frame(String),
    /// The peer showed it is alive without a whole frame: a pong or a ping, or bytes of
    /// a frame still arriving (reported at most once per [`HEARD_EVERY`]).
    Heard,
    /// Reading failed (the link is gone): why, for the log.
    Failed(String),
}

/// The most often an upstream socket reports bytes of an unfinished frame as
/// [`FromUpstream::Heard`].
pub const HEARD_EVERY: Duration = Duration::from_millis(rindle_room_core::host::HEARD_EVERY_MS);

/// A failed lease mint: the host's own error, which also says whether start-up tries
/// again ([`MintError::is_transient`]).
pub use rindle_room_core::host::MintError;

/// A URL the upstream leg cannot use ([`origin`], [`ws_host_port`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlError {
    /// Not an absolute URL (no `scheme://`).
    NotAbsolute {
        /// The URL as given.
        url: String,
    },
    /// A `wss://` URL: this build speaks no TLS.
    Tls {
        /// The URL as given.
        url: String,
    },
    /// Not a `ws://` URL.
    NotWs {
        /// The URL as given.
        url: String,
    },
    /// The port is not a number from 0 to 65535.
    BadPort {
        /// The URL as given.
        url: String,
        /// The port as written.
        port: String,
    },
    /// The host is empty.
    NoHost {
        /// The URL as given.
        url: String,
    },
}

impl fmt::Display for UrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlError::NotAbsolute { url } => write!(
                f,
                "{url:?} is not an absolute URL (expected e.g. http://127.0.0.1:7600)"
            ),
            UrlError::Tls { url } => write!(
                f,
                "{url:?}: wss:// is not supported; run the room next to rindled and use ws://, \
                 or put a TLS terminator in front of rindled"
            ),
            UrlError::NotWs { url } => write!(f, "{url:?} is not a ws:// URL"),
            UrlError::BadPort { url, port } => write!(f, "{url:?}: bad port {port:?}"),
            UrlError::NoHost { url } => write!(f, "{url:?} has no host"),
        }
    }
}

impl std::error::Error for UrlError {}

/// Mints the room's footprint lease and opens upstream sockets.
pub trait UpstreamConnector: Send + Sync + 'static {
    /// Mints the footprint lease (the token the upstream `subscribe` carries).
    fn mint_lease(&self) -> BoxFuture<'static, Result<String, MintError>>;
    /// Opens a socket.
    fn connect(&self) -> BoxFuture<'static, Result<UpstreamLink, ConnectError>>;
    /// The `init` clientID to use, when configured (default `room-shell-<bootId>`).
    fn client_id(&self) -> Option<String> {
        None
    }
}

/// `rindled` over HTTP + websocket (the published room's Node shell: `mintLease`,
/// `connectUpstream`).
#[derive(Clone, Debug)]
pub struct WsUpstream {
    /// `ws://host:port[/path]`.
    pub ws_url: String,
    /// `http://host:port` (the lease is minted at `/materialize` on its origin).
    pub control_url: String,
    /// Bearer token for `/materialize`.
    pub auth_token: Option<String>,
    /// The footprint AST (JSON).
    pub footprint_ast: JsValue,
    /// `leaseTtlMs`, when set.
    pub lease_ttl_ms: Option<u64>,
    /// The upstream `init` clientID.
    pub client_id: Option<String>,
    /// The largest message taken from the socket (`upstream.max_frame_bytes`).
    pub max_frame_bytes: usize,
}

impl WsUpstream {
    /// The `/materialize` body: `{"ast":…,"leaseTtlMs"?:…}` (the host's form).
    pub fn materialize_body(&self) -> String {
        materialize_body(&self.footprint_ast, self.lease_ttl_ms)
    }
}

impl UpstreamConnector for WsUpstream {
    fn mint_lease(&self) -> BoxFuture<'static, Result<String, MintError>> {
        let me = self.clone();
        Box::pin(async move { mint_lease(&me).await })
    }

    fn connect(&self) -> BoxFuture<'static, Result<UpstreamLink, ConnectError>> {
        let url = self.ws_url.clone();
        let limit = FrameLimit {
            bytes: self.max_frame_bytes,
            setting: "upstream.max_frame_bytes",
        };
        Box::pin(async move { connect_ws(&url, None, limit).await })
    }

    fn client_id(&self) -> Option<String> {
        self.client_id.clone()
    }
}

/// `POST <origin of controlUrl>/materialize` → `{leaseToken}`; the error texts are the
/// published room's Node shell's. The host reads the reply ([`lease_reply`]) and decides
/// what is worth another try ([`MintError::is_transient`]).
async fn mint_lease(up: &WsUpstream) -> Result<String, MintError> {
    let unusable = |e: UrlError| MintError::Unusable(e.to_string());
    let url = format!("{}/materialize", origin(&up.control_url).map_err(unusable)?);
    let mut headers = vec![(
        String::from("content-type"),
        String::from("application/json"),
    )];
    if let Some(token) = &up.auth_token {
        headers.push((String::from("authorization"), format!("Bearer {token}")));
    }
    let body = up.materialize_body();
    let res = http::request("POST", &url, &headers, body.as_bytes(), UPSTREAM_TIMEOUT)
        .await
        .map_err(|e| MintError::Transport(format!("upstream /materialize at {url} failed: {e}")))?;
    lease_reply(res.status, &String::from_utf8_lossy(&res.body))
}

/// `scheme://authority` of a URL (what `new URL("/x", base)` keeps).
pub fn origin(url: &str) -> Result<&str, UrlError> {
    let Some(i) = url.find("://") else {
        return Err(UrlError::NotAbsolute {
            url: url.to_string(),
        });
    };
    let rest = &url[i + 3..];
    let end = rest.find(['/', '?', '#']).map_or(url.len(), |j| i + 3 + j);
    Ok(&url[..end])
}

/// Splits `ws://host:port/path` into `(host, port)`; `wss` is refused (no TLS here).
pub fn ws_host_port(url: &str) -> Result<(String, u16), UrlError> {
    let rest = if let Some(r) = url.strip_prefix("ws://") {
        r
    } else if url.starts_with("wss://") {
        return Err(UrlError::Tls {
            url: url.to_string(),
        });
    } else {
        return Err(UrlError::NotWs {
            url: url.to_string(),
        });
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
            let port = p.parse::<u16>().map_err(|_| UrlError::BadPort {
                url: url.to_string(),
                port: p.to_string(),
            })?;
            (h, port)
        }
        _ => (authority, 80),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(UrlError::NoHost {
            url: url.to_string(),
        });
    }
    Ok((host.to_string(), port))
}

/// The upstream socket's settings: tungstenite's, with a small read buffer. Its default
/// (128 KiB, zero-filled up to capacity before every read) would be resident per room —
/// most of a small fleet room's memory. Messages are assembled outside this buffer, so
/// a large snapshot only takes more reads.
fn upstream_ws_config(
    limit: &FrameLimit,
) -> async_tungstenite::tungstenite::protocol::WebSocketConfig {
    async_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(UPSTREAM_READ_BUFFER_BYTES)
        .max_message_size(Some(limit.bytes))
        .max_frame_size(Some(limit.bytes))
}

/// The largest message an upstream link takes, and the setting that says so (named
/// when a message passes it).
#[derive(Clone, Copy, Debug)]
pub struct FrameLimit {
    /// Bytes.
    pub bytes: usize,
    /// `upstream.max_frame_bytes`, `fleet.upstream_max_frame_bytes`.
    pub setting: &'static str,
}

impl Default for FrameLimit {
    fn default() -> FrameLimit {
        FrameLimit {
            bytes: rindle_room_core::host::DriverLimits::default().max_upstream_frame_bytes,
            setting: "upstream.max_frame_bytes",
        }
    }
}

/// Why a link's read failed, for the host's log: a message past the limit names it.
fn read_failure(e: &async_tungstenite::tungstenite::Error, limit: &FrameLimit) -> String {
    use async_tungstenite::tungstenite::error::{CapacityError, Error};
    match e {
        Error::Capacity(CapacityError::MessageTooLong { size, max_size }) => format!(
            "an upstream message of {size} bytes passes {}: the limit is {max_size}; raise it \
             to follow a footprint this large",
            limit.setting
        ),
        other => format!("upstream read failed: {other}"),
    }
}

/// See [`upstream_ws_config`].
const UPSTREAM_READ_BUFFER_BYTES: usize = 8 * 1024;

/// A failed websocket connect ([`connect_ws`]).
#[derive(Clone, Debug)]
pub struct ConnectError {
    /// What went wrong, naming the URL.
    pub message: String,
    /// The upstream upgraded the socket but selected none of the subprotocols offered
    /// (no `Sec-WebSocket-Protocol` in its reply), which the websocket client refuses.
    pub no_subprotocol_selected: bool,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConnectError {}

impl ConnectError {
    fn other(message: String) -> ConnectError {
        ConnectError {
            message,
            no_subprotocol_selected: false,
        }
    }
}

/// Opens a websocket and pumps it through a pair of channels. `protocols` is offered as
/// `Sec-WebSocket-Protocol` (a room-boot affinity ticket: `rindle.v1, <ticket>`).
pub async fn connect_ws(
    url: &str,
    protocols: Option<&str>,
    limit: FrameLimit,
) -> Result<UpstreamLink, ConnectError> {
    open_ws(url, protocols, limit).await
}

/// [`connect_ws`], saying whether the upstream selected none of the offered subprotocols.
pub(crate) async fn open_ws(
    url: &str,
    protocols: Option<&str>,
    limit: FrameLimit,
) -> Result<UpstreamLink, ConnectError> {
    use async_tungstenite::tungstenite::client::IntoClientRequest;
    use async_tungstenite::tungstenite::error::{Error, ProtocolError, SubProtocolError};
    use async_tungstenite::tungstenite::http::HeaderValue;
    let mut request = url
        .into_client_request()
        .map_err(|e| ConnectError::other(format!("{url:?} is not a websocket URL: {e}")))?;
    if let Some(p) = protocols {
        let value = HeaderValue::from_str(p).map_err(|_| {
            ConnectError::other(format!(
                "the upstream subprotocols {p:?} are not a header value"
            ))
        })?;
        request
            .headers_mut()
            .insert("sec-websocket-protocol", value);
    }
    let (host, port) = ws_host_port(url).map_err(|e| ConnectError::other(e.to_string()))?;
    let (inbound, from_upstream) = async_channel::unbounded::<FromUpstream>();
    let meter = FrameMeter::new(url, Some(inbound.clone()));
    let connect = async {
        let stream = TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| ConnectError::other(format!("upstream connect to {url} failed: {e}")))?;
        let _ = stream.set_nodelay(true);
        let stream = Metered::new(stream, meter);
        async_tungstenite::client_async_with_config(
            request,
            stream,
            Some(upstream_ws_config(&limit)),
        )
        .await
        .map(|(ws, _)| ws)
        .map_err(|e| ConnectError {
            no_subprotocol_selected: matches!(
                e,
                Error::Protocol(ProtocolError::SecWebSocketSubProtocolError(
                    SubProtocolError::NoSubProtocol
                ))
            ),
            message: format!("upstream websocket handshake with {url} failed: {e}"),
        })
    };
    let timeout = async {
        smol::Timer::after(UPSTREAM_TIMEOUT).await;
        Err(ConnectError::other(format!(
            "upstream connect to {url} timed out"
        )))
    };
    let ws = connect.or(timeout).await?;
    let (mut sink, mut source) = ws.split();
    let (to_upstream, outbound) = async_channel::unbounded::<ToUpstream>();
    smol::spawn(async move {
        let reader = async {
            while let Some(msg) = source.next().await {
                let item = match msg {
                    Ok(Message::Text(t)) => FromUpstream::Frame(t.as_str().to_string()),
                    Ok(Message::Binary(b)) => {
                        FromUpstream::Frame(String::from_utf8_lossy(&b).into_owned())
                    }
                    // tungstenite answers a ping itself. Anything already queued counts as
                    // a sign of life when it is handled, so a ping flood adds nothing.
                    Ok(Message::Pong(_) | Message::Ping(_)) if inbound.is_empty() => {
                        FromUpstream::Heard
                    }
                    Ok(Message::Close(_)) => break,
                    Err(e) => {
                        let _ = inbound
                            .send(FromUpstream::Failed(read_failure(&e, &limit)))
                            .await;
                        break;
                    }
                    Ok(_) => continue,
                };
                if inbound.send(item).await.is_err() {
                    break;
                }
            }
        };
        let writer = async {
            while let Ok(item) = outbound.recv().await {
                let msg = match item {
                    ToUpstream::Frame(text) => Message::text(text),
                    ToUpstream::Ping => Message::Ping(Default::default()),
                };
                if sink.send(msg).await.is_err() {
                    return;
                }
            }
            // The room dropped its sender: close politely.
            let _ = sink.close(None).await;
            smol::Timer::after(Duration::from_millis(500)).await;
        };
        reader.or(writer).await;
        inbound.close();
    })
    .detach();
    Ok(UpstreamLink {
        to_upstream,
        from_upstream,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_ws_addresses() {
        assert_eq!(
            origin("http://127.0.0.1:7600").unwrap(),
            "http://127.0.0.1:7600"
        );
        assert_eq!(origin("http://h:1/a/b?c").unwrap(), "http://h:1");
        assert!(origin("localhost:1").is_err());
        assert_eq!(
            ws_host_port("ws://127.0.0.1:7601").unwrap(),
            ("127.0.0.1".into(), 7601)
        );
        assert_eq!(ws_host_port("ws://h/x").unwrap(), ("h".into(), 80));
        assert_eq!(ws_host_port("ws://[::1]:9/").unwrap(), ("::1".into(), 9));
        assert!(ws_host_port("wss://h:1").is_err());
        assert!(ws_host_port("http://h:1").is_err());
    }

    #[test]
    fn materialize_body_keeps_the_seed_member_order() {
        let up = WsUpstream {
            ws_url: String::new(),
            control_url: String::new(),
            auth_token: None,
            footprint_ast: JsValue::parse(r#"{"table":"issue"}"#).unwrap(),
            lease_ttl_ms: Some(60_000),
            client_id: None,
            max_frame_bytes: 1 << 20,
        };
        assert_eq!(
            up.materialize_body(),
            r#"{"ast":{"table":"issue"},"leaseTtlMs":60000}"#
        );
    }
}

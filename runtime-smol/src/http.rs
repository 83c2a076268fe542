//! A small HTTP/1.1 client and server framing over smol sockets, with `httparse`.
//!
//! Interface pinned by the lead:
//! - `pub struct Response { pub status: u16, pub headers: Vec<(String, String)>, pub body: Vec<u8> }`
//! - `pub async fn request(method: &str, url: &str, headers: &[(String, String)], body: &[u8], timeout: Duration) -> io::Result<Response>`
//! - `pub struct Request { pub method: String, pub path: String, pub headers: Vec<(String, String)>, pub body: Vec<u8> }`
//! - `pub async fn read_request<S: AsyncRead + Unpin>(stream: &mut S, max_body: usize) -> io::Result<Option<Request>>`
//! - `pub async fn write_response<S: AsyncWrite + Unpin>(stream: &mut S, status: u16, content_type: &str, body: &[u8]) -> io::Result<()>`
//!
//! # Scope
//!
//! This is deliberately the smallest HTTP/1.1 that the room needs: one request per
//! connection (`Connection: close` both ways), `Content-Length` bodies, `chunked`
//! transfer-coding on receive, and hard caps on head and body sizes. No keep-alive, no
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

use std::fmt;
use std::future::Future;
use std::io;
use std::time::Duration;

use futures_lite::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use smol::net::TcpStream;
use smol::Timer;

/// The largest response body [`request`] accepts (16 MiB); larger is an error.
pub const MAX_RESPONSE_BODY: usize = 16 * 1024 * 1024;

/// The largest request/response head (start line + headers) accepted (64 KiB).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The most header fields accepted in one head.
pub const MAX_HEADERS: usize = 100;

/// The longest chunk-size line (size + extensions) accepted in a chunked body.
const MAX_CHUNK_LINE: usize = 4096;

/// The most 1xx interim responses skipped before a final one.
const MAX_INTERIM: usize = 16;

/// Heads shorter than this are re-parsed on every read (early refusal of junk).
const EAGER_PARSE_BYTES: usize = 512;

/// Socket read granularity.
const READ_CHUNK: usize = 16 * 1024;

/// A received HTTP response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header fields in arrival order; names are lowercased, values as sent (lossy UTF-8).
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The body as text (lossy UTF-8).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// A received HTTP request (server side).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The method, as sent (case-sensitive, e.g. `GET`).
    pub method: String,
    /// The raw request-target, as sent (path plus any `?query`, e.g. `/stats?x=1`).
    pub path: String,
    /// Header fields in arrival order; names are lowercased, values as sent (lossy UTF-8).
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The path without the query string.
    pub fn path_only(&self) -> &str {
        self.path
            .split_once('?')
            .map_or(self.path.as_str(), |(p, _)| p)
    }

    /// The body as text (lossy UTF-8).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A framing error, carried inside an `io::Error` of kind `InvalidData`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// The body exceeds the caller's limit (a server answers 413).
    BodyTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The head exceeds [`MAX_HEAD_BYTES`] or [`MAX_HEADERS`] (a server answers 431).
    HeadTooLarge,
    /// Anything else malformed (a server answers 400).
    Malformed(String),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::BodyTooLarge { limit } => write!(f, "body exceeds {limit} bytes"),
            HttpError::HeadTooLarge => write!(
                f,
                "head exceeds {MAX_HEAD_BYTES} bytes or {MAX_HEADERS} header fields"
            ),
            HttpError::Malformed(why) => write!(f, "malformed HTTP: {why}"),
        }
    }
}

impl std::error::Error for HttpError {}

impl From<HttpError> for io::Error {
    fn from(e: HttpError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

/// The [`HttpError`] inside `err`, if it is one of ours.
pub fn http_error(err: &io::Error) -> Option<&HttpError> {
    err.get_ref().and_then(|e| e.downcast_ref::<HttpError>())
}

/// The status a server should answer a failed [`read_request`] with: 413 for an
/// oversized body, 431 for an oversized head, 400 for anything malformed; `None` for
/// transport errors (EOF mid-request, reset, timeout — just drop the connection).
///
/// After writing the error response, close the connection: the unread rest of the
/// request is not drained.
pub fn error_status(err: &io::Error) -> Option<u16> {
    match http_error(err)? {
        HttpError::BodyTooLarge { .. } => Some(413),
        HttpError::HeadTooLarge => Some(431),
        HttpError::Malformed(_) => Some(400),
    }
}

fn malformed(why: impl Into<String>) -> io::Error {
    HttpError::Malformed(why.into()).into()
}

// ---------------------------------------------------------------------------------------
// URLs
// ---------------------------------------------------------------------------------------

/// A parsed `http://host[:port]/path` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpUrl {
    /// Host name or IP literal (IPv6 without brackets).
    pub host: String,
    /// Port (80 when absent).
    pub port: u16,
    /// The `Host` header value (`host[:port]` as written, IPv6 bracketed).
    pub authority: String,
    /// The request-target: path plus any query, always starting with `/`; no fragment.
    pub target: String,
}

/// Parse and validate an `http://` URL. `https://` is refused (TLS is out of scope —
/// see the module docs), as are other schemes, user-info, empty hosts, bad ports, and
/// request-targets with spaces, control or non-ASCII characters (percent-encode them).
pub fn parse_url(url: &str) -> io::Result<HttpUrl> {
    let bad = |why: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid URL {}: {why}", redact(url)),
        )
    };
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("expected http://host:port/path"))?;
    if scheme.eq_ignore_ascii_case("https") {
        return Err(bad(
            "https is not supported: TLS is out of scope for the room's HTTP client \
             (it talks to loopback/private-network peers); terminate TLS outside the room",
        ));
    }
    if !scheme.eq_ignore_ascii_case("http") {
        return Err(bad("only http:// URLs are supported"));
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    if authority.contains('@') {
        return Err(bad("user-info in URLs is not supported (use headers)"));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6
            .split_once(']')
            .ok_or_else(|| bad("unterminated IPv6 literal"))?;
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(bad("invalid IPv6 literal"));
        }
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(|| bad("junk after IPv6 literal"))?,
            ),
        };
        (h, port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(bad("empty host"));
    }
    if !authority.starts_with('[')
        && !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
    {
        return Err(bad("invalid host"));
    }
    let port = match port {
        None => 80,
        Some(p) => {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("invalid port"));
            }
            match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err(bad("port out of range")),
                Ok(n) => n,
            }
        }
    };
    let tail = tail.split_once('#').map_or(tail, |(t, _)| t);
    let target = if tail.starts_with('/') {
        tail.to_owned()
    } else {
        format!("/{tail}")
    };
    if !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad(
            "path must be printable ASCII without spaces (percent-encode it)",
        ));
    }
    Ok(HttpUrl {
        host: host.to_owned(),
        port,
        authority: authority.to_owned(),
        target,
    })
}

/// `url` with any user-info replaced by `***`, for messages.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

// ---------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------

/// Send one HTTP/1.1 request and read the whole response.
///
/// - `url` must be `http://host[:port]/path[?query]` (see [`parse_url`]).
/// - `headers` are sent as given, except `content-length`, `transfer-encoding` and
///   `connection`, which this client owns (ignored if passed); a `host` header replaces
///   the default one. Names must be tokens; values must not contain CR, LF or NUL.
/// - The body is sent with `Content-Length` (always, even when empty); every request
///   carries `Connection: close` and uses a fresh connection.
/// - The response body may be `Content-Length`, `chunked` or close-delimited, and is
///   capped at [`MAX_RESPONSE_BODY`]; 1xx interim responses are skipped; no redirects
///   are followed.
/// - `timeout` bounds the whole exchange: resolve + connect + send + receive. On expiry
///   the error kind is `TimedOut`.
///
/// Every error names the method and URL.
pub async fn request(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
    timeout: Duration,
) -> io::Result<Response> {
    let u = parse_url(url)?;
    let shown = redact(url);
    let limit_ms = timeout.as_millis();
    with_timeout(timeout, request_inner(method, &u, headers, body))
        .await
        .map_err(|e| {
            if e.get_ref().is_some_and(|r| r.is::<TimeoutMarker>()) {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{method} {shown}: timed out after {limit_ms} ms"),
                )
            } else {
                io::Error::new(e.kind(), format!("{method} {shown}: {e}"))
            }
        })
}

async fn request_inner(
    method: &str,
    u: &HttpUrl,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<Response> {
    if method.is_empty() || !method.bytes().all(is_token_byte) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "invalid method",
        ));
    }
    let mut head = format!("{method} {} HTTP/1.1\r\n", u.target);
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {}\r\n", u.authority));
    }
    for (name, value) in headers {
        check_header(name, value)?;
        if is_framing_header(name) {
            continue;
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut wire = Vec::with_capacity(head.len() + body.len());
    wire.extend_from_slice(head.as_bytes());
    wire.extend_from_slice(body);

    let mut stream = TcpStream::connect((u.host.as_str(), u.port)).await?;
    // Best effort: a failure to disable Nagle only costs latency.
    let _ = stream.set_nodelay(true);
    let head_request = method.eq_ignore_ascii_case("HEAD");
    let sent = async {
        stream.write_all(&wire).await?;
        stream.flush().await
    }
    .await;
    if let Err(write_err) = sent {
        // A server may answer early (say 413) and close before taking the whole body:
        // prefer its response, if one arrived, over the write error.
        return match read_response(&mut stream, head_request).await {
            Ok(resp) => Ok(resp),
            Err(_) => Err(write_err),
        };
    }
    read_response(&mut stream, head_request).await
}

/// The headers this module owns on both sides.
fn is_framing_header(name: &str) -> bool {
    ["content-length", "transfer-encoding", "connection"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

fn check_header(name: &str, value: &str) -> io::Result<()> {
    if name.is_empty() || !name.bytes().all(is_token_byte) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid header name {name:?}"),
        ));
    }
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("header {name} has CR/LF/NUL in its value"),
        ));
    }
    Ok(())
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Read one response from `stream` (the client half of [`request`], exposed for callers
/// that drive their own connection). `head_request`: the request was `HEAD` (no body
/// follows whatever the headers say). Interim 1xx responses (except 101) are skipped.
/// The body is capped at [`MAX_RESPONSE_BODY`].
pub async fn read_response<S: AsyncRead + Unpin>(
    stream: &mut S,
    head_request: bool,
) -> io::Result<Response> {
    let mut r = Reader::new(stream);
    let mut interim = 0;
    loop {
        let head = match r.read_head(parse_response_head, false).await? {
            Some(h) => h,
            None => return Err(io::ErrorKind::UnexpectedEof.into()),
        };
        let status = head.status;
        if (100..200).contains(&status) && status != 101 {
            interim += 1;
            if interim > MAX_INTERIM {
                return Err(malformed("too many 1xx interim responses"));
            }
            continue;
        }
        let no_body =
            head_request || (100..200).contains(&status) || status == 204 || status == 304;
        let body = if no_body {
            Vec::new()
        } else {
            match body_framing(&head.headers, true)? {
                Framing::Length(n) => {
                    if n > MAX_RESPONSE_BODY as u64 {
                        return Err(too_big_response());
                    }
                    r.read_exact_vec(n as usize).await?
                }
                Framing::Chunked => r.read_chunked(MAX_RESPONSE_BODY, too_big_response).await?,
                Framing::Close => r.read_to_end(MAX_RESPONSE_BODY, too_big_response).await?,
            }
        };
        return Ok(Response {
            status,
            headers: head.headers,
            body,
        });
    }
}

fn too_big_response() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("response body exceeds {MAX_RESPONSE_BODY} bytes"),
    )
}

// ---------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------

/// Read one request from `stream`.
///
/// - `Ok(None)`: the peer closed cleanly before sending any byte.
/// - The head is capped at [`MAX_HEAD_BYTES`] / [`MAX_HEADERS`]; the body (a
///   `Content-Length` or `chunked` body; none if neither is present) at `max_body`.
/// - Framing errors are `InvalidData` wrapping an [`HttpError`]: map them with
///   [`error_status`] (413 body too large, 431 head too large, 400 malformed — including
///   a request carrying both `Content-Length` and `Transfer-Encoding`, or a
///   transfer-coding other than `chunked`). EOF mid-request is `UnexpectedEof`.
/// - No timeout of its own: wrap it (e.g. [`with_timeout`]) against slow peers.
/// - `Expect: 100-continue` is not answered (this needs only `AsyncRead`); clients such
///   as curl then send the body after a short wait. [`read_request_continue`] answers it.
/// - One request per connection: bytes pipelined after the request are discarded.
pub async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    max_body: usize,
) -> io::Result<Option<Request>> {
    let mut r = Reader::new(stream);
    let Some(head) = r.read_head(parse_request_head, true).await? else {
        return Ok(None);
    };
    let framing = request_framing(&head, max_body)?;
    read_request_body(&mut r, head, framing, max_body)
        .await
        .map(Some)
}

/// [`read_request`], but answering `Expect: 100-continue` with `100 Continue` once the
/// head is accepted (and the declared body fits `max_body`).
pub async fn read_request_continue<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    max_body: usize,
) -> io::Result<Option<Request>> {
    let mut r = Reader::new(stream);
    let Some(head) = r.read_head(parse_request_head, true).await? else {
        return Ok(None);
    };
    let framing = request_framing(&head, max_body)?;
    let wants_continue = head.version == 1
        && find_header(&head.headers, "expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
        && !matches!(framing, Framing::Length(0))
        && r.available().is_empty();
    if wants_continue {
        r.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        r.stream.flush().await?;
    }
    read_request_body(&mut r, head, framing, max_body)
        .await
        .map(Some)
}

fn request_framing(head: &Head, max_body: usize) -> io::Result<Framing> {
    let framing = body_framing(&head.headers, false)?;
    if let Framing::Length(n) = framing {
        if n > max_body as u64 {
            return Err(HttpError::BodyTooLarge { limit: max_body }.into());
        }
    }
    Ok(framing)
}

async fn read_request_body<S: AsyncRead + Unpin>(
    r: &mut Reader<'_, S>,
    head: Head,
    framing: Framing,
    max_body: usize,
) -> io::Result<Request> {
    let body = match framing {
        Framing::Length(n) => r.read_exact_vec(n as usize).await?,
        Framing::Chunked => {
            r.read_chunked(max_body, || {
                HttpError::BodyTooLarge { limit: max_body }.into()
            })
            .await?
        }
        Framing::Close => Vec::new(),
    };
    Ok(Request {
        method: head.method,
        path: head.path,
        headers: head.headers,
        body,
    })
}

/// Write a complete response: status line with the standard reason phrase,
/// `Content-Type` (omitted when `content_type` is empty), `Content-Length` and
/// `Connection: close`, then the body; flushed. See [`write_response_with`] for extra
/// headers.
pub async fn write_response<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> io::Result<()> {
    write_response_with(stream, status, &[], content_type, body).await
}

/// [`write_response`] with extra header fields (e.g. `WWW-Authenticate`, `Retry-After`).
/// `content-length`, `transfer-encoding` and `connection` in `headers` are ignored.
/// For 1xx/204/304 no body (and for 1xx/204 no `Content-Length`) is written; a
/// non-empty body with those statuses is an `InvalidInput` error, as is a status outside
/// 100..=999 or a header with CR/LF/NUL.
pub async fn write_response_with<S: AsyncWrite + Unpin>(
    stream: &mut S,
    status: u16,
    headers: &[(String, String)],
    content_type: &str,
    body: &[u8],
) -> io::Result<()> {
    let wire = encode_response(status, headers, content_type, body)?;
    stream.write_all(&wire).await?;
    stream.flush().await
}

fn encode_response(
    status: u16,
    headers: &[(String, String)],
    content_type: &str,
    body: &[u8],
) -> io::Result<Vec<u8>> {
    if !(100..=999).contains(&status) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad status {status}"),
        ));
    }
    let bodyless = (100..200).contains(&status) || status == 204 || status == 304;
    if bodyless && !body.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("status {status} cannot carry a body"),
        ));
    }
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status));
    if !content_type.is_empty() {
        check_header("content-type", content_type)?;
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    for (name, value) in headers {
        check_header(name, value)?;
        if is_framing_header(name) {
            continue;
        }
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if !((100..200).contains(&status) || status == 204) {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    let mut wire = Vec::with_capacity(head.len() + body.len());
    wire.extend_from_slice(head.as_bytes());
    if !bodyless {
        wire.extend_from_slice(body);
    }
    Ok(wire)
}

/// The standard reason phrase for `status` (`""` for unregistered codes).
pub fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

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
struct TimeoutMarker;

impl fmt::Display for TimeoutMarker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("timed out")
    }
}

impl std::error::Error for TimeoutMarker {}

// ---------------------------------------------------------------------------------------
// Framing internals
// ---------------------------------------------------------------------------------------

/// A parsed head (request or response; unused fields empty).
struct Head {
    method: String,
    path: String,
    status: u16,
    version: u8,
    headers: Vec<(String, String)>,
}

/// A head parser: `Some((consumed, head))` once complete, `None` while partial.
type HeadParser = fn(&[u8]) -> io::Result<Option<(usize, Head)>>;

enum Framing {
    Length(u64),
    Chunked,
    /// Response: read to EOF. Request: no body.
    Close,
}

fn owned_headers(raw: &[httparse::Header<'_>]) -> Vec<(String, String)> {
    raw.iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect()
}

fn map_parse_error(e: httparse::Error) -> io::Error {
    match e {
        httparse::Error::TooManyHeaders => HttpError::HeadTooLarge.into(),
        other => malformed(other.to_string()),
    }
}

fn parse_request_head(buf: &[u8]) -> io::Result<Option<(usize, Head)>> {
    let mut raw = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut raw);
    match req.parse(buf).map_err(map_parse_error)? {
        httparse::Status::Partial => Ok(None),
        httparse::Status::Complete(n) => Ok(Some((
            n,
            Head {
                method: req.method.unwrap_or_default().to_owned(),
                path: req.path.unwrap_or_default().to_owned(),
                status: 0,
                version: req.version.unwrap_or(1),
                headers: owned_headers(req.headers),
            },
        ))),
    }
}

fn parse_response_head(buf: &[u8]) -> io::Result<Option<(usize, Head)>> {
    let mut raw = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut raw);
    match resp.parse(buf).map_err(map_parse_error)? {
        httparse::Status::Partial => Ok(None),
        httparse::Status::Complete(n) => {
            let status = resp.code.unwrap_or(0);
            if !(100..=999).contains(&status) {
                return Err(malformed(format!("status code {status} out of range")));
            }
            Ok(Some((
                n,
                Head {
                    method: String::new(),
                    path: String::new(),
                    status,
                    version: resp.version.unwrap_or(1),
                    headers: owned_headers(resp.headers),
                },
            )))
        }
    }
}

/// Decide how the body is delimited. `response`: absence of both headers means
/// close-delimited, and `Transfer-Encoding` wins over `Content-Length` (RFC 9112 §6.3);
/// for requests, both together are refused (request smuggling) and absence means none.
fn body_framing(headers: &[(String, String)], response: bool) -> io::Result<Framing> {
    let mut codings: Vec<String> = Vec::new();
    let mut length: Option<u64> = None;
    for (name, value) in headers {
        if name == "transfer-encoding" {
            codings.extend(
                value
                    .split(',')
                    .map(|c| c.trim().to_ascii_lowercase())
                    .filter(|c| !c.is_empty()),
            );
        } else if name == "content-length" {
            for part in value.split(',') {
                let part = part.trim();
                if part.is_empty() || part.len() > 19 || !part.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(malformed(format!("invalid content-length {value:?}")));
                }
                let n: u64 = part
                    .parse()
                    .map_err(|_| malformed(format!("invalid content-length {value:?}")))?;
                if length.is_some_and(|l| l != n) {
                    return Err(malformed("conflicting content-length values"));
                }
                length = Some(n);
            }
        }
    }
    let has_te = headers.iter().any(|(n, _)| n == "transfer-encoding");
    if has_te {
        if !response && length.is_some() {
            return Err(malformed("both content-length and transfer-encoding"));
        }
        return match codings.as_slice() {
            [only] if only == "chunked" => Ok(Framing::Chunked),
            _ => Err(malformed(format!(
                "unsupported transfer-coding {codings:?}"
            ))),
        };
    }
    Ok(match length {
        Some(n) => Framing::Length(n),
        None => Framing::Close,
    })
}

/// A buffered reader over a borrowed stream; only ever over-reads while parsing a head
/// or a chunk line, never past a body's declared end.
struct Reader<'a, S> {
    stream: &'a mut S,
    buf: Vec<u8>,
    pos: usize,
}

impl<'a, S: AsyncRead + Unpin> Reader<'a, S> {
    fn new(stream: &'a mut S) -> Self {
        Reader {
            stream,
            buf: Vec::new(),
            pos: 0,
        }
    }

    fn available(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Read more bytes into the buffer; 0 on EOF.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let old = self.buf.len();
        self.buf.resize(old + READ_CHUNK, 0);
        let res = self.stream.read(&mut self.buf[old..]).await;
        let n = *res.as_ref().unwrap_or(&0);
        self.buf.truncate(old + n);
        res
    }

    /// Read a head with `parse`. `Ok(None)` only when `clean_eof_ok` and the stream ended
    /// before any byte arrived.
    async fn read_head(
        &mut self,
        parse: HeadParser,
        clean_eof_ok: bool,
    ) -> io::Result<Option<Head>> {
        // Offset (into `available()`) up to which no head terminator was found. Re-parsing
        // only when a terminator may have arrived keeps a byte-at-a-time peer linear; short
        // prefixes are still parsed eagerly so junk is refused without waiting for more.
        let mut scanned = 0;
        loop {
            let avail = self.available();
            let probe = &avail[..avail.len().min(MAX_HEAD_BYTES)];
            let from = scanned.min(probe.len()).saturating_sub(3);
            let terminated = probe[from..].windows(2).any(|w| w == b"\n\n")
                || probe[from..].windows(3).any(|w| w == b"\n\r\n");
            if terminated || probe.len() <= EAGER_PARSE_BYTES {
                if let Some((n, head)) = parse(probe)? {
                    self.pos += n;
                    return Ok(Some(head));
                }
            }
            scanned = probe.len();
            if avail.len() >= MAX_HEAD_BYTES {
                return Err(HttpError::HeadTooLarge.into());
            }
            if self.fill().await? == 0 {
                if clean_eof_ok && self.available().is_empty() {
                    return Ok(None);
                }
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "EOF inside the head",
                ));
            }
        }
    }

    /// Exactly `n` body bytes (the caller has bounded `n`).
    async fn read_exact_vec(&mut self, n: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_exact_into(&mut out, n).await?;
        Ok(out)
    }

    async fn read_exact_into(&mut self, out: &mut Vec<u8>, n: usize) -> io::Result<()> {
        let take = n.min(self.available().len());
        out.extend_from_slice(&self.buf[self.pos..self.pos + take]);
        self.pos += take;
        let mut filled = out.len();
        let end = filled + (n - take);
        // Grow as data arrives rather than trusting the declared length up front.
        while filled < end {
            let step = (end - filled).min(READ_CHUNK.max(filled / 2));
            out.resize(filled + step, 0);
            let got = self.stream.read(&mut out[filled..filled + step]).await;
            let got = match got {
                Ok(0) => {
                    out.truncate(filled);
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("body truncated: {} of {} bytes", filled, end),
                    ));
                }
                Ok(k) => k,
                Err(e) => {
                    out.truncate(filled);
                    return Err(e);
                }
            };
            filled += got;
            out.truncate(filled);
        }
        Ok(())
    }

    /// One line (without its CRLF or bare LF), at most `max` bytes.
    async fn read_line(&mut self, max: usize) -> io::Result<Vec<u8>> {
        loop {
            let avail = self.available();
            if let Some(i) = avail.iter().position(|&b| b == b'\n') {
                let mut line = avail[..i].to_vec();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.len() > max {
                    return Err(malformed("line too long"));
                }
                self.pos += i + 1;
                return Ok(line);
            }
            if avail.len() > max.saturating_add(1) {
                return Err(malformed("line too long"));
            }
            if self.fill().await? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "EOF inside a chunked body",
                ));
            }
        }
    }

    /// A `chunked` body, at most `limit` bytes once decoded; trailers are read and dropped.
    async fn read_chunked(
        &mut self,
        limit: usize,
        too_big: impl Fn() -> io::Error,
    ) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let line = self.read_line(MAX_CHUNK_LINE).await?;
            let size = parse_chunk_size(&line)?;
            if size == 0 {
                break;
            }
            if size > (limit - out.len()) as u64 {
                return Err(too_big());
            }
            self.read_exact_into(&mut out, size as usize).await?;
            // The CRLF after the data (max 0: anything else is "line too long").
            self.read_line(0).await.map_err(|e| match http_error(&e) {
                Some(HttpError::Malformed(_)) => malformed("chunk data not followed by CRLF"),
                _ => e,
            })?;
        }
        let mut trailer_bytes = 0usize;
        loop {
            let line = self.read_line(MAX_HEAD_BYTES).await?;
            if line.is_empty() {
                return Ok(out);
            }
            trailer_bytes += line.len() + 2;
            if trailer_bytes > MAX_HEAD_BYTES {
                return Err(HttpError::HeadTooLarge.into());
            }
        }
    }

    /// Everything until EOF, at most `limit` bytes.
    async fn read_to_end(
        &mut self,
        limit: usize,
        too_big: impl Fn() -> io::Error,
    ) -> io::Result<Vec<u8>> {
        let mut out = self.available().to_vec();
        self.pos = self.buf.len();
        if out.len() > limit {
            return Err(too_big());
        }
        loop {
            let filled = out.len();
            // Read one byte past the limit so that "exactly limit" is accepted.
            let step = READ_CHUNK.min(limit.saturating_add(1) - filled);
            out.resize(filled + step, 0);
            let got = self.stream.read(&mut out[filled..]).await;
            match got {
                Ok(0) => {
                    out.truncate(filled);
                    return Ok(out);
                }
                Ok(k) => {
                    out.truncate(filled + k);
                    if out.len() > limit {
                        return Err(too_big());
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn parse_chunk_size(line: &[u8]) -> io::Result<u64> {
    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
    let digits = trim_ascii_ws(digits);
    if digits.is_empty() || digits.len() > 15 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err(malformed(format!(
            "invalid chunk size {:?}",
            String::from_utf8_lossy(line)
        )));
    }
    let text = std::str::from_utf8(digits).map_err(|_| malformed("invalid chunk size"))?;
    u64::from_str_radix(text, 16).map_err(|_| malformed("invalid chunk size"))
}

fn trim_ascii_ws(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

//! The client: one request on a fresh connection, the whole response read back.

use std::io;
use std::time::Duration;

use futures_lite::io::{AsyncRead, AsyncWriteExt};
use smol::net::TcpStream;

use super::error::malformed;
use super::framing::{
    body_framing, check_header, find_header, is_framing_header, is_token_byte, parse_response_head,
    Framing,
};
use super::reader::Reader;
use super::url::{parse_url, redact, HttpUrl};
use super::{with_timeout, TimeoutMarker};

/// The largest response body [`request`] accepts (16 MiB); larger is an error.
pub const MAX_RESPONSE_BODY: usize = 16 * 1024 * 1024;

/// The most 1xx interim responses skipped before a final one.
const MAX_INTERIM: usize = 16;

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
    with_timeout(timeout, request_inner(method, &u, headers, body))
        .await
        .map_err(|e| named(e, method, url, timeout))
}

/// `e` with the method and (redacted) URL in front; the request's own deadline as
/// `TimedOut` with the limit.
pub(super) fn named(e: io::Error, method: &str, url: &str, timeout: Duration) -> io::Error {
    let shown = redact(url);
    if e.get_ref().is_some_and(|r| r.is::<TimeoutMarker>()) {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "{method} {shown}: timed out after {} ms",
                timeout.as_millis()
            ),
        )
    } else {
        io::Error::new(e.kind(), format!("{method} {shown}: {e}"))
    }
}

async fn request_inner(
    method: &str,
    u: &HttpUrl,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<Response> {
    let wire = request_wire(method, u, headers, body, false)?;
    let mut stream = connect(u).await?;
    let head_request = method.eq_ignore_ascii_case("HEAD");
    exchange(&mut stream, &wire, head_request, &mut false)
        .await
        .map(|e| e.response)
}

/// Sends `wire` on `stream` and reads the response. A server may answer early (say
/// 413) and close before taking the whole body: when the write fails, its response is
/// preferred, if one arrived (and the connection is not reusable).
pub(super) async fn exchange(
    stream: &mut TcpStream,
    wire: &[u8],
    head_request: bool,
    head_seen: &mut bool,
) -> io::Result<Exchange> {
    if let Err(write_err) = send(stream, wire).await {
        return match read_exchange(stream, head_request, head_seen).await {
            Ok(e) => Ok(Exchange {
                reusable: false,
                ..e
            }),
            Err(_) => Err(write_err),
        };
    }
    read_exchange(stream, head_request, head_seen).await
}

/// Opens a connection to `u`'s host, Nagle off.
pub(super) async fn connect(u: &HttpUrl) -> io::Result<TcpStream> {
    let stream = TcpStream::connect((u.host.as_str(), u.port)).await?;
    // Best effort: a failure to disable Nagle only costs latency.
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// Writes a whole request.
async fn send(stream: &mut TcpStream, wire: &[u8]) -> io::Result<()> {
    stream.write_all(wire).await?;
    stream.flush().await
}

/// A request's bytes: head (with `Connection: close`, or `keep-alive`) and body.
pub(super) fn request_wire(
    method: &str,
    u: &HttpUrl,
    headers: &[(String, String)],
    body: &[u8],
    keep_alive: bool,
) -> io::Result<Vec<u8>> {
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
    let connection = if keep_alive { "keep-alive" } else { "close" };
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: {connection}\r\n\r\n",
        body.len()
    ));
    let mut wire = Vec::with_capacity(head.len() + body.len());
    wire.extend_from_slice(head.as_bytes());
    wire.extend_from_slice(body);
    Ok(wire)
}

/// Read one response from `stream` (the client half of [`request`], exposed for callers
/// that drive their own connection). `head_request`: the request was `HEAD` (no body
/// follows whatever the headers say). Interim 1xx responses (except 101) are skipped.
/// The body is capped at [`MAX_RESPONSE_BODY`].
pub async fn read_response<S: AsyncRead + Unpin>(
    stream: &mut S,
    head_request: bool,
) -> io::Result<Response> {
    read_exchange(stream, head_request, &mut false)
        .await
        .map(|e| e.response)
}

/// A response, and whether its connection can carry another request.
pub(super) struct Exchange {
    pub(super) response: Response,
    /// The body ended by its length (not by the close), the server did not say
    /// `Connection: close`, and nothing followed the response.
    pub(super) reusable: bool,
}

/// [`read_response`], telling whether the connection can be reused; `head_seen` is set
/// once a response head arrived.
pub(super) async fn read_exchange<S: AsyncRead + Unpin>(
    stream: &mut S,
    head_request: bool,
    head_seen: &mut bool,
) -> io::Result<Exchange> {
    let mut r = Reader::new(stream);
    let mut interim = 0;
    loop {
        let head = match r.read_head(parse_response_head, false).await? {
            Some(h) => h,
            None => return Err(io::ErrorKind::UnexpectedEof.into()),
        };
        *head_seen = true;
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
        let mut delimited = true;
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
                Framing::Close => {
                    delimited = false;
                    r.read_to_end(MAX_RESPONSE_BODY, too_big_response).await?
                }
            }
        };
        let closing = find_header(&head.headers, "connection").is_some_and(|v| {
            v.split(',')
                .any(|token| token.trim().eq_ignore_ascii_case("close"))
        });
        let reusable = delimited && !closing && status != 101 && r.available().is_empty();
        return Ok(Exchange {
            response: Response {
                status,
                headers: head.headers,
                body,
            },
            reusable,
        });
    }
}

fn too_big_response() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("response body exceeds {MAX_RESPONSE_BODY} bytes"),
    )
}

//! The server side: read one request, write one response (`Connection: close`).

use std::io;

use futures_lite::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

use super::error::HttpError;
use super::framing::{
    body_framing, check_header, find_header, is_framing_header, parse_request_head, Framing, Head,
};
use super::reader::Reader;

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
///
/// [`MAX_HEAD_BYTES`]: super::MAX_HEAD_BYTES
/// [`MAX_HEADERS`]: super::MAX_HEADERS
/// [`error_status`]: super::error_status
/// [`with_timeout`]: super::with_timeout
pub async fn read_request<S: AsyncRead + Unpin>(
    stream: &mut S,
    max_body: usize,
) -> io::Result<Option<Request>> {
    let mut r = Reader::new(stream);
    let Some((head, framing)) = read_accepted_head(&mut r, max_body).await? else {
        return Ok(None);
    };
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
    let Some((head, framing)) = read_accepted_head(&mut r, max_body).await? else {
        return Ok(None);
    };
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

/// The request's head and how its body is framed, once the head parsed and the body's
/// declared length fits `max_body`; `None` when the peer closed before any byte.
async fn read_accepted_head<S: AsyncRead + Unpin>(
    r: &mut Reader<'_, S>,
    max_body: usize,
) -> io::Result<Option<(Head, Framing)>> {
    let Some(head) = r.read_head(parse_request_head, true).await? else {
        return Ok(None);
    };
    let framing = request_framing(&head, max_body)?;
    Ok(Some((head, framing)))
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

//! What client and server share: head parsing (via `httparse`), deciding how a body
//! is delimited, and the checks on header names and values.

use std::io;

use super::error::{malformed, HttpError};

pub use super::limits::{MAX_HEADERS, MAX_HEAD_BYTES};

pub(super) fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The headers this module owns on both sides.
pub(super) fn is_framing_header(name: &str) -> bool {
    ["content-length", "transfer-encoding", "connection"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
}

pub(super) fn check_header(name: &str, value: &str) -> io::Result<()> {
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

pub(super) fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A parsed head (request or response; unused fields empty).
pub(super) struct Head {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) status: u16,
    pub(super) version: u8,
    pub(super) headers: Vec<(String, String)>,
}

/// A head parser: `Some((consumed, head))` once complete, `None` while partial.
pub(super) type HeadParser = fn(&[u8]) -> io::Result<Option<(usize, Head)>>;

pub(super) enum Framing {
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

pub(super) fn parse_request_head(buf: &[u8]) -> io::Result<Option<(usize, Head)>> {
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

pub(super) fn parse_response_head(buf: &[u8]) -> io::Result<Option<(usize, Head)>> {
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
pub(super) fn body_framing(headers: &[(String, String)], response: bool) -> io::Result<Framing> {
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

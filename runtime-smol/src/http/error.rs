//! [`HttpError`]: a framing error, and the status a server answers it with.

use std::fmt;
use std::io;

use super::limits::{MAX_HEADERS, MAX_HEAD_BYTES};

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
///
/// [`read_request`]: super::read_request
pub fn error_status(err: &io::Error) -> Option<u16> {
    match http_error(err)? {
        HttpError::BodyTooLarge { .. } => Some(413),
        HttpError::HeadTooLarge => Some(431),
        HttpError::Malformed(_) => Some(400),
    }
}

pub(super) fn malformed(why: impl Into<String>) -> io::Error {
    HttpError::Malformed(why.into()).into()
}

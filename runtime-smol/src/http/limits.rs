//! The bounds on a message head, shared by the parser that enforces them and the
//! errors that name them.

/// The largest request/response head (start line + headers) accepted (64 KiB).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// The most header fields accepted in one head.
pub const MAX_HEADERS: usize = 100;

//! # rindle-room-smol
//!
//! The Rindle room as a standalone server on smol + async-tungstenite: the upstream leg
//! to `rindled`, the downstream websocket server, leases and revocation, the durable
//! journal, the authority client and the write-behind flush. Every room rule lives in
//! `rindle-room-core`; this crate only drives it.

// Unsafe code is refused everywhere but `server::process` (three libc calls, each with
// its SAFETY note).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod authority;
pub mod config;
pub mod http;
/// The durable journal ([`rindle_room_journal`]), re-exported under its old path.
pub mod journal {
    pub use rindle_room_journal::*;
}
pub mod mutators;
pub mod server;

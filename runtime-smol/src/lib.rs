//! # rindle-room-smol
//!
//! The Rindle room as a standalone server on smol + async-tungstenite: the upstream leg
//! to `rindled`, the downstream websocket server, leases and revocation, the durable
//! journal, the authority client and the write-behind flush. Every room rule lives in
//! `rindle-room-core`; this crate only drives it.

// Unsafe code is refused everywhere but `server::process`, which allows it for five
// `unsafe` blocks around six libc calls, each with its SAFETY note:
//
// - `raise_nofile_limit`: `getrlimit(RLIMIT_NOFILE)` into a local `rlimit`, then
//   `setrlimit` from a local `rlimit`. Sound: both take a pointer to a live, properly
//   aligned struct for the length of the call; a failed `setrlimit` changes nothing.
// - `nofile_limit`: `getrlimit(RLIMIT_NOFILE)` into a local `rlimit` (as above).
// - `ignore_sigxfsz`: `signal(SIGXFSZ, SIG_IGN)`. Sound: no handler is installed, so no
//   code runs in signal context; ignoring a signal has no preconditions.
// - `return_free_memory` (glibc only): `malloc_trim(0)` then `mallinfo()`. Sound: the
//   first only walks the allocator's own free lists under its locks, the second returns
//   counters by value; neither touches memory the program owns.
//
// The binary (`main.rs`) forbids unsafe code outright.
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

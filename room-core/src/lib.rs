//! # rindle-room-core
//!
//! The Rindle room engine: one document's base rows (fed by the upstream daemon),
//! incrementally maintained queries for many downstream subscribers, and the normalized
//! fan-out they receive. `#![no_std]` + `alloc`: no I/O, no clock — time is an argument.
//!
//! Two faces of the same engine:
//! - [`Room`], the typed API;
//! - [`contract::JsonRoom`], the exact `WasmRoom` JSON contract of `@rindle/room` 0.9 that the C
//!   ABI, the Node binding and the server all wrap, so all three produce byte-identical
//!   JSON.
//!
//! ## The loop: mutate, then drain
//!
//! 1. [`Room::open`] from the upstream `nhello.hello`.
//! 2. [`Room::apply`] each upstream `nbatch.batch`. The seq-0 snapshot makes the room
//!    live; a live batch changes the head — **drain next**.
//! 3. [`Room::subscribe`] a downstream query: send its hello and seq-0 snapshot at once.
//! 4. [`Room::commit_all`] after every input that changed the head: it returns at most
//!    one net batch per subscriber, stamped with [`Room::head_cv`]. Ship them, then the
//!    shell's `progress` frame.
//! 5. [`Room::unsubscribe`] detaches; [`Room::sweep`] on the host's clock reclaims
//!    queries idle past the TTL.
//!
//! Inputs never emit; only the drain does. Every input validates before it changes
//! anything, except an upstream batch that contradicts the store (a duplicate add, a
//! missing key, a wrong width): that poisons the store ([`Room::is_poisoned`]) and the
//! host must open a new room from a new upstream hello.
//!
//! Bad input never panics: every error is an [`Error`] with a stable [`ErrorCode`].
//!
//! The crate denies `unsafe` everywhere but three modules, each with its `SAFETY` comments:
//! - `value::text`: a text cell's string in 15 bytes (inline when short, one exact-size
//!   allocation when long), which makes a cell two words — allocation, copy, the slice
//!   and `&str` views, and deallocation;
//! - `value::row`: a row image packed into one shared allocation — the uninitialized
//!   buffer it is written into, and unchecked reads of the header, offsets and cells;
//! - `value::row_image`: that allocation — a 4-byte atomic count in front of the image
//!   behind one thin pointer, allocated, shared, and freed by its last holder with the
//!   length the image states.

#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_code)]
#![warn(clippy::std_instead_of_core, clippy::std_instead_of_alloc)]
#![warn(clippy::alloc_instead_of_core)]

extern crate alloc;

pub mod ast;
pub mod calls;
mod canonical;
pub mod contract;
pub mod error;
pub mod fingerprint;
pub mod fleet;
pub mod host;
mod ivm;
pub mod json;
mod keys;
mod net_op;
pub mod predicate;
mod projection;
mod retained;
mod room;
pub mod schema;
mod serve;
mod store;
pub mod texts;
pub mod token;
mod upstream;
pub mod value;
pub mod write;

pub use canonical::canonical_text;
pub use error::{Error, ErrorCode};
pub use net_op::NetOp;
pub use room::{ApplyStatus, Room, UpstreamBatch};
pub use schema::{Hello, TableSchema};
pub use serve::{Batch, DownstreamHello, Frame, Subscribed};
pub use store::Row;
pub use value::Value;
pub use write::keyed::{KeyedRow, MutationTx};
pub use write::{Begin, Commit, Conflict, Deopt, FlushBatch, FlushChange, FlushOk};

//! The room server: a driver around `rindle-room-core`, not a second engine.
//!
//! ```text
//!  rindled ──ws──▶ upstream leg ─┐                       ┌─▶ conn task ──ws──▶ client
//!  (or the demo upstream)        ├─▶ room task (Room) ───┼─▶ conn task ──ws──▶ client
//!  journal writer / flush tasks ─┤   one per room:       └─▶ …
//!  control plane (HTTP) ─────────┘   event → core → drain → send
//! ```
//!
//! - **The room task** (`actor`) owns the core's room and every piece of state. It loops
//!   "wait for an event or a deadline → call the core → drain → send". Connections,
//!   the upstream socket, the journal writer, flush settlements and control requests
//!   reach it as events on one channel, so each connection is handled serially and the
//!   core is never shared.
//! - **Connections** (`conn`) are tasks with an outbound queue whose unwritten bytes
//!   are counted: the per-socket send budget terminates a stalled reader.
//! - **The upstream leg** ([`upstream`]) mints the footprint lease and opens the socket;
//!   the room task speaks the protocol. [`demo`] is an embedded upstream.
//! - **Durability**: journal appends and flushes run off the room task
//!   (`smol::unblock`, spawned tasks) and come back as events tagged with the
//!   incarnation that started them.
//! - **Time** comes from a [`Clock`] and tasks start through a [`Spawner`], so tests can
//!   run the room on a [`ManualClock`].
//!
//! Behaviour follows seed 002 (`shell.js` of `@rindle/room` 0.5.0): same frames, same
//! error texts, same defaults. Start one with [`RoomServer::builder`].

pub(crate) mod actor;
mod assemble;
pub mod authority;
pub mod clock;
pub(crate) mod control_plane;
mod deferred_journal;
pub mod demo;
pub mod error;
pub mod fleet;
pub mod frames;
pub mod log;
pub mod metrics;
pub mod process;
pub(crate) mod room_server;
pub(crate) mod settings;
pub mod upstream;
mod upstream_progress;

pub use authority::Authority;
pub use clock::{BoxFuture, Clock, Env, ManualClock, SmolSpawner, Spawner, SystemClock};
pub use demo::{DemoData, DemoError, DemoUpstream};
pub use error::{DrainError, JournalOpenError, Listener, StartError};
pub use fleet::{FleetServer, FleetServerBuilder, RoomInfo};
pub use log::{Level, LogSink, Logger};
pub use room_server::{RoomServer, RoomServerBuilder};
pub use upstream::{
    ConnectError, MintError, UpstreamConnector, UpstreamLink, UrlError, WsUpstream,
};

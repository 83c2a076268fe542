//! The room server: a driver around `rindle-room-core`'s [`Host`], not a second engine.
//!
//! ```text
//!  rindled ──ws──▶ upstream link ─┐                   ┌─▶ connection ──ws──▶ client
//!  (or the demo upstream)         ├─▶ room task ──────┼─▶ connection ──ws──▶ client
//!  journal writer, authority ─────┤   (one per room:  └─▶ …
//!  calls, control plane ──────────┘   event → Host → outputs)
//! ```
//!
//! - **The host decides, the room task drives.** The core's [`Host`] holds every rule
//!   of a room (leases, incarnations, group commit, flush, revocation, drain). The room
//!   task (`actor`) owns one host and loops "wait for an event or the host's next
//!   deadline → `handle` → carry out the outputs": it writes frames to connections,
//!   opens the upstream link, queues journal work, calls the authority, answers control
//!   requests and logs, and feeds every result back as an input, tagged so the host
//!   recognises an answer meant for an incarnation that has since ended. Nothing else
//!   touches the host.
//! - **Connections** are the `rindle-room-downstream` crate's: its accept loop runs one
//!   task per socket, hands frames to the room task as events in arrival order, and
//!   writes what the room task queues on the connection's outbound queue (counted, so
//!   the send budget and `server.max_unsent_bytes` can cut a stalled reader).
//! - **The upstream leg** ([`upstream`]): an [`UpstreamConnector`] mints the footprint
//!   lease and opens the link; [`WsUpstream`] talks to `rindled`, [`DemoUpstream`]
//!   serves a JSON file. The room task speaks the protocol over the link.
//! - **Durability**: a serial journal writer task runs appends (group commits), flush
//!   records and compaction off the room task (`smol::unblock`); a file journal that
//!   does not exist yet is created by its first write (`deferred_journal`). The write
//!   authority is an [`Authority`] ([`HttpAuthority`](crate::authority::HttpAuthority)
//!   over HTTP); each call runs on its own task.
//! - **Placing rooms**: `assemble` builds a room task from the configuration and a
//!   placement. The single-room server ([`RoomServer`]) places one room from its
//!   configuration; the [`fleet`] places many through room-boot, with the core's room
//!   table deciding which doc boots, waits, hibernates or is refused.
//! - **Around them**: the private control plane (`control_plane`, routes answered by
//!   the host), [`metrics`], [`log`], [`process`] (open-file limit, `SIGXFSZ`, returning
//!   freed memory), and [`StartError`] and friends ([`error`]).
//! - **Time** comes from a [`Clock`] and tasks start through a [`Spawner`], so tests can
//!   run a room on a [`ManualClock`].
//!
//! The frames, error texts and defaults match the published room's Node shell
//! (`@rindle/room` 0.5.0). Start one room with [`RoomServer::builder`], many with
//! [`FleetServer::builder`].
//!
//! [`Host`]: rindle_room_core::host::Host

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
    ConnectError, FrameLimit, FromUpstream, MintError, ToUpstream, UpstreamConnector, UpstreamLink,
    UrlError, WsUpstream, HEARD_EVERY,
};

//! Routing connections by request path: one listener, many owners (the fleet's rooms).
//!
//! During the upgrade the router reads the request path ([`Router::check`]): a path
//! that names no owner is answered with an HTTP error and never becomes a websocket.
//! After the upgrade the router may first want to see frames ([`Router::gate`]: the
//! fleet boots a room only for a verified lease subscribe); those frames are held and
//! handed to the owner first. Then the connection asks where its events go
//! ([`Router::route`]); the answer may take a while (the room boots) and may be a close
//! instead.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;

use async_channel::Sender;

pub use rindle_room_core::fleet::Gate;

/// Where one routed connection's events go.
pub struct Route<E> {
    /// The owner's event channel.
    pub events: Sender<E>,
    /// Held for the connection's lifetime and dropped when it ends (a per-owner
    /// connection count, for instance).
    pub hold: Box<dyn Any + Send>,
}

impl<E> std::fmt::Debug for Route<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Route").finish_non_exhaustive()
    }
}

/// What [`Router::route`] returns: the route, or the close `(code, reason)` to send.
pub type RouteFuture<E> = Pin<Box<dyn Future<Output = Result<Route<E>, (u16, String)>> + Send>>;

/// Maps an upgrade's request path to the owner of the connection.
pub trait Router<E>: Send + Sync + 'static {
    /// During the upgrade: the owner key `path` names, or the HTTP refusal
    /// `(status, body)`.
    fn check(&self, path: &str) -> Result<String, (u16, String)>;

    /// After the upgrade, before [`Router::route`]: whether the frames `shown` so far
    /// (held, not yet delivered) are enough to route the connection. `NeedMore` reads
    /// another one — within the limits the gate itself enforces, and the handshake
    /// timeout counted again from the upgrade. Routes at once by default.
    fn gate(&self, key: &str, shown: &[String]) -> Gate {
        let _ = (key, shown);
        Gate::Route
    }

    /// After the upgrade: the owner of a connection to `key`. The connection waits for
    /// it (the router bounds the wait); an `Err` closes the socket with that code and
    /// reason.
    fn route(&self, key: String) -> RouteFuture<E>;
}

//! The room task: a driver of the core's [`Host`], which makes every room decision.
//! This task owns the host and carries out what it asks — socket writes and closes, the
//! upstream link, journal operations (through the serial writer), authority calls,
//! control replies, log lines — and feeds back what happened, on one channel of
//! [`Event`]s, so a connection's frames reach the host in arrival order.
//!
//! It loops "wait for an event or the host's next deadline → `handle` →
//! carry out the outputs", and checks the deadline after every event too, so a steady
//! stream of frames cannot hold back the group commit, the lease sweep or the flush.

mod control;
mod driver;
mod ids;
mod journal_writer;
mod outputs;

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use async_channel::{Receiver, Sender};
use futures_lite::FutureExt;
use rindle_room_core::host::{
    AuthorityError, AuthorityReply, ConnId, ControlReply, Host, Input, IoId, JournalContents,
};

use super::authority::Authority;
use super::clock::Env;
use super::log::Logger;
use super::metrics::Metrics;
use super::upstream::{MintError, ToUpstream, UpstreamConnector};
use crate::config::Config;
use crate::journal::Journal;
use crate::mutators::Registry;
use crate::server::error::{DrainError, StartError};
use rindle_room_downstream::{ConnEvent, ConnOut};

pub(crate) use control::Control;
pub(crate) use ids::{entropy, hex, new_boot_id, random_bytes};

/// Everything the room task reacts to.
pub(crate) enum Event {
    /// Upstream link `link` opened.
    UpOpen {
        link: u64,
        to_upstream: Sender<ToUpstream>,
    },
    /// A frame from upstream link `link`.
    UpFrame { link: u64, text: String },
    /// Upstream link `link` showed it is alive (a pong, bytes of a frame arriving).
    UpHeard { link: u64 },
    /// Upstream link `link` closed (or never opened: `error`).
    UpClosed { link: u64, error: Option<String> },
    /// A lease mint finished.
    LeaseMinted { result: Result<String, MintError> },
    /// A downstream connection opened, sent a frame (holding its place in the
    /// connection's inbound window until the event is dropped), or closed.
    Conn(ConnEvent),
    /// A journal read finished.
    JournalRead {
        io: IoId,
        result: Result<JournalContents, Arc<io::Error>>,
    },
    /// A journal write finished (durable on `Ok`).
    JournalWritten {
        io: IoId,
        result: Result<(), Arc<io::Error>>,
    },
    /// An authority call finished.
    Authority {
        io: IoId,
        result: Result<AuthorityReply, AuthorityError>,
    },
    /// A control-plane or embedder request.
    Control(Control),
}

impl From<ConnEvent> for Event {
    fn from(e: ConnEvent) -> Event {
        Event::Conn(e)
    }
}

/// What the room task is built from.
pub(crate) struct Parts {
    pub env: Env,
    pub log: Logger,
    pub metrics: Arc<Metrics>,
    pub host: Host,
    /// The host's own mutators (win over the configuration's on a name clash).
    pub host_registry: Registry,
    /// The configuration, when its `[mutators.*]` / `writes.crud` build the registry.
    pub config: Option<Arc<Config>>,
    pub journal: Option<Arc<dyn Journal>>,
    pub authority: Option<Arc<dyn Authority>>,
    pub upstream: Arc<dyn UpstreamConnector>,
    pub stop_listeners: Sender<()>,
    /// Told once start-up finished (`Ok`) or failed.
    pub started: Sender<Result<(), StartError>>,
    /// Set when the host stops because another placement owns the document.
    pub moved: Arc<std::sync::atomic::AtomicBool>,
    /// Told the acknowledged mutations a fenced room could not deliver (fleet mode
    /// counts and lists them; without a sink the host's log lines are the report).
    pub stranded: Option<StrandedSink>,
}

/// Where a fenced room's stranded mutations go.
pub(crate) type StrandedSink =
    Arc<dyn Fn(Vec<rindle_room_core::fleet::StrandedMutation>) + Send + Sync>;

/// A reply the room task owes a control request.
pub(crate) enum Waiter {
    Stats(Sender<String>),
    /// `/healthz` or `/readyz`.
    Health(Sender<bool>),
    Revoke(Sender<u64>),
    Drain(Sender<Result<u64, DrainError>>),
    Unit(Sender<()>),
}

/// The room task's state: the host, and the handles of everything it drives.
pub(crate) struct Actor {
    pub env: Env,
    pub log: Logger,
    pub metrics: Arc<Metrics>,
    pub host: Host,
    /// This incarnation's registry (rebuilt from the config and the host's at each boot).
    pub registry: Registry,
    pub host_registry: Registry,
    pub config: Option<Arc<Config>>,
    pub journal_jobs: Option<Sender<journal_writer::JournalJob>>,
    pub authority: Option<Arc<dyn Authority>>,
    pub connector: Arc<dyn UpstreamConnector>,
    pub events: Sender<Event>,
    pub conns: HashMap<ConnId, ConnOut>,
    /// The upstream link the host last asked for.
    pub want_link: u64,
    /// That link, once it is up.
    pub up: Option<(u64, Sender<ToUpstream>)>,
    pub stop_listeners: Option<Sender<()>>,
    pub started: Option<Sender<Result<(), StartError>>>,
    pub live_waiters: Vec<Sender<()>>,
    pub waiters: HashMap<u64, Waiter>,
    pub next_request: u64,
    /// The host stopped: the loop ends.
    pub stopped: bool,
    pub moved: Arc<std::sync::atomic::AtomicBool>,
    pub stranded: Option<StrandedSink>,
}

impl Actor {
    /// Builds the room task's state and its event channel.
    pub(crate) fn new(parts: Parts) -> (Actor, Receiver<Event>) {
        let (events, rx) = async_channel::unbounded();
        let journal_jobs = parts.journal.as_ref().map(|j| {
            journal_writer::spawn(&parts.env, j.clone(), events.clone(), parts.metrics.clone())
        });
        let actor = Actor {
            env: parts.env,
            log: parts.log,
            metrics: parts.metrics,
            host: parts.host,
            registry: parts.host_registry.clone(),
            host_registry: parts.host_registry,
            config: parts.config,
            journal_jobs,
            authority: parts.authority,
            connector: parts.upstream,
            events,
            conns: HashMap::new(),
            want_link: 0,
            up: None,
            stop_listeners: Some(parts.stop_listeners),
            started: Some(parts.started),
            live_waiters: Vec::new(),
            waiters: HashMap::new(),
            next_request: 1,
            stopped: false,
            moved: parts.moved,
            stranded: parts.stranded,
        };
        (actor, rx)
    }

    /// A sender into this task (for the server handle).
    pub(crate) fn sender(&self) -> Sender<Event> {
        self.events.clone()
    }

    /// Runs until the host stops: wait for an event or the next deadline, handle it.
    pub(crate) async fn run(mut self, rx: Receiver<Event>) {
        let now = self.env.now_ms();
        self.host.start(now);
        self.carry_out();
        while !self.stopped {
            let event = match self.host.next_deadline() {
                Some(deadline) => {
                    let sleep = self.env.clock.sleep_until(deadline);
                    async { Some(rx.recv().await) }
                        .or(async {
                            sleep.await;
                            None
                        })
                        .await
                }
                None => Some(rx.recv().await),
            };
            match event {
                Some(Ok(ev)) => {
                    self.handle(ev);
                    // The event branch wins while events keep coming: check the deadline
                    // here too, or a steady stream of frames would hold back the timers.
                    if self
                        .host
                        .next_deadline()
                        .is_some_and(|d| d <= self.env.now_ms())
                    {
                        self.timeout();
                    }
                }
                Some(Err(_)) => break, // every sender is gone
                None => self.timeout(),
            }
        }
        self.log.debug("room task stopped");
    }

    fn timeout(&mut self) {
        let now = self.env.now_ms();
        let mut d = driver::SmolDriver {
            registry: &mut self.registry,
            host_registry: &self.host_registry,
            config: self.config.as_deref(),
            conns: &self.conns,
        };
        self.host.handle_timeout(now, &mut d);
        self.carry_out();
    }

    /// Feeds one input to the host and carries out what it asks.
    fn input(&mut self, input: Input<'_>) {
        let now = self.env.now_ms();
        let mut d = driver::SmolDriver {
            registry: &mut self.registry,
            host_registry: &self.host_registry,
            config: self.config.as_deref(),
            conns: &self.conns,
        };
        self.host.handle(now, input, &mut d);
        self.carry_out();
    }

    fn handle(&mut self, ev: Event) {
        match ev {
            Event::UpOpen { link, to_upstream } => {
                if link != self.want_link {
                    return; // superseded: dropping the sender closes it
                }
                self.up = Some((link, to_upstream));
                self.input(Input::UpstreamOpened { link });
            }
            Event::UpFrame { link, text } => {
                self.input(Input::UpstreamFrame { link, text: &text });
            }
            Event::UpHeard { link } => self.input(Input::UpstreamHeard { link }),
            Event::UpClosed { link, error } => {
                if self.up.as_ref().is_some_and(|(l, _)| *l == link) {
                    self.up = None;
                }
                self.input(Input::UpstreamClosed {
                    link,
                    error: error.as_deref(),
                });
            }
            Event::LeaseMinted { result } => self.input(Input::LeaseMinted(result)),
            Event::Conn(ConnEvent::Open { id, out }) => {
                self.conns.insert(id, out);
                self.input(Input::ConnOpened { conn: id });
            }
            Event::Conn(ConnEvent::Frame { id, text, slot }) => {
                self.input(Input::ConnFrame {
                    conn: id,
                    text: &text,
                });
                drop(slot);
            }
            Event::Conn(ConnEvent::Heard { id, slot }) => {
                self.input(Input::ConnHeard { conn: id });
                drop(slot);
            }
            Event::Conn(ConnEvent::Closed { id }) => {
                self.conns.remove(&id);
                self.input(Input::ConnClosed { conn: id });
            }
            Event::JournalRead { io, result } => self.input(Input::JournalRead {
                io,
                result: result.map_err(|e| e.to_string().into()),
            }),
            Event::JournalWritten { io, result } => self.input(Input::JournalWritten {
                io,
                result: result.map_err(|e| e.to_string().into()),
            }),
            Event::Authority { io, result } => self.input(Input::Authority { io, result }),
            Event::Control(c) => self.on_control(c),
        }
    }

    /// Answers a control request the host replied to.
    fn reply(&mut self, id: u64, reply: ControlReply) {
        let Some(waiter) = self.waiters.remove(&id) else {
            return;
        };
        match (waiter, reply) {
            (Waiter::Stats(tx), ControlReply::Stats(s)) => {
                let _ = tx.try_send(s);
            }
            (Waiter::Health(tx), ControlReply::Health(h) | ControlReply::Ready(h)) => {
                let _ = tx.try_send(h);
            }
            (Waiter::Revoke(tx), ControlReply::Revoked(n)) => {
                let _ = tx.try_send(n);
            }
            (Waiter::Drain(tx), ControlReply::Drained(r)) => {
                let _ = tx.try_send(r.map_err(|e| DrainError::Refused(e.to_string())));
            }
            (Waiter::Unit(tx), _) => {
                let _ = tx.try_send(());
            }
            // A drain the host stopped before answering: dropping the sender tells the
            // caller the room is closed.
            _ => {}
        }
    }
}

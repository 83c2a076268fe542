//! The driver of the core's room table ([`RoomTable`]; docs/fleet.md, "Where a client
//! connects", "Booting a room", "Hibernation"): every decision about which doc boots,
//! waits, is refused, drains or hibernates is the table's; this feeds it what happened
//! (connections, room-boot answers, room tasks starting and ending, drains, memory) and
//! carries out what it asks, on smol tasks.
//!
//! One mutex guards the table and the handles the driver keeps beside it (the live
//! rooms' channels, the waiting connections' answer channels, the hibernation
//! records). Nothing is awaited under it; values whose drop would re-enter it (a
//! connection's hold) are dropped after it is released.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_channel::{Receiver, Sender};
use futures_lite::FutureExt;
use rindle_room_core::fleet::{
    doc_from_path, gate, sorted, ConnId, Gate, HibernationRecord, Incarnation, Input, Output,
    RoomSummary, RoomTable, StopWhy, TableCounters, TableRules, CLOSE_BOOT_FAILED,
};
use rindle_room_core::host::Level;
use rindle_room_downstream::{Route, RouteFuture, Router};

use super::boot::{call_room_boot, retire_empty_journal, start_room};
use super::records::Records;
use super::Shared;
use crate::server::actor::{Control, Event};
use crate::server::error::DrainError;

/// The most hibernation records a box keeps; past it the oldest goes (a record only
/// answers `/drain?doc=` and `/rooms` for a room that is not running).
pub(crate) const MAX_RECORDS: usize = 100_000;

/// A close code and reason for a connection that gets no room.
pub(crate) type Refusal = (u16, String);

/// One started room: its task's channels.
pub(crate) struct LiveRoom {
    pub doc: String,
    pub incarnation: Incarnation,
    pub events: Sender<Event>,
    /// Closed once the room task has stopped.
    pub done: Receiver<()>,
    /// Set when it stopped because another placement owns the doc (fenced).
    pub moved: Arc<AtomicBool>,
}

impl LiveRoom {
    /// Drains the room (flushes until nothing is dirty or pending): `Some(Ok(final
    /// flush seq))`, `Some(Err(why))`, or `None` when the room stopped first.
    async fn drain_once(&self) -> Option<Result<u64, DrainError>> {
        let (tx, rx) = async_channel::bounded(1);
        self.events
            .send(Event::Control(Control::Drain(tx)))
            .await
            .ok()?;
        rx.recv().await.ok()
    }
}

/// A connection the table admitted: its room, and the hold that reports its close.
pub(crate) struct Admitted {
    pub room: Arc<LiveRoom>,
    pub hold: ConnHold,
}

/// Held by an admitted connection for its lifetime: its drop tells the table.
pub(crate) struct ConnHold {
    rooms: Arc<Rooms>,
    doc: String,
    incarnation: Incarnation,
}

impl Drop for ConnHold {
    fn drop(&mut self) {
        self.rooms.step(Some(Input::Disconnect {
            doc: std::mem::take(&mut self.doc),
            incarnation: self.incarnation,
        }));
    }
}

/// Tells the table a waiting connection left, unless it got its answer.
struct WaitGuard<'a> {
    rooms: &'a Arc<Rooms>,
    conn: ConnId,
    answered: bool,
}

impl Drop for WaitGuard<'_> {
    fn drop(&mut self) {
        if !self.answered {
            let answer = self.rooms.inner().waiting.remove(&self.conn);
            drop(answer);
            self.rooms.step(Some(Input::Abandon { conn: self.conn }));
        }
    }
}

type Answer = Sender<Result<Admitted, Refusal>>;

/// The table and what the driver keeps beside it.
struct Inner {
    table: RoomTable,
    /// Started rooms (live or stopping), by doc.
    handles: HashMap<String, Arc<LiveRoom>>,
    /// Where each waiting connection's answer goes.
    waiting: HashMap<ConnId, Answer>,
    records: Records,
    next_conn: ConnId,
}

/// Values dropped once the lock is released (their drop may take it again).
#[derive(Default)]
struct Deferred {
    admitted: Vec<Admitted>,
    answers: Vec<Answer>,
}

/// The room table and its driver.
pub(crate) struct Rooms {
    pub shared: Arc<Shared>,
    inner: Mutex<Inner>,
    /// Re-arms the deadline task when the table's next deadline may have moved.
    wake: (Sender<()>, Receiver<()>),
}

impl Rooms {
    pub fn new(shared: Arc<Shared>) -> Arc<Rooms> {
        let rules = TableRules {
            max_rooms: shared.fleet.max_rooms,
            boot_timeout_ms: shared.fleet.boot_timeout_ms,
            idle_evict_ms: shared.fleet.idle_evict_ms,
            max_box_bytes: shared.fleet.max_box_bytes,
            boot: shared.fleet.boot_limits(),
        };
        Arc::new(Rooms {
            shared,
            inner: Mutex::new(Inner {
                table: RoomTable::new(rules),
                handles: HashMap::new(),
                waiting: HashMap::new(),
                records: Records::default(),
                next_conn: 0,
            }),
            wake: async_channel::bounded(1),
        })
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Feeds the table one input (`None`: its deadline) and carries out what it asks.
    pub fn step(self: &Arc<Self>, input: Option<Input>) {
        let mut deferred = Deferred::default();
        {
            let mut inner = self.inner();
            let now = self.shared.env.now_ms();
            match input {
                Some(input) => inner.table.handle(now, input),
                None => inner.table.handle_timeout(now),
            }
            while let Some(output) = inner.table.poll_output() {
                self.carry_out(&mut inner, output, &mut deferred);
            }
        }
        drop(deferred);
        let _ = self.wake.0.try_send(());
    }

    fn carry_out(self: &Arc<Self>, inner: &mut Inner, output: Output, deferred: &mut Deferred) {
        match output {
            Output::CallRoomBoot { doc, timeout_ms } => {
                let me = self.clone();
                self.shared.env.spawn(async move {
                    let timeout = Duration::from_millis(timeout_ms);
                    let reply = call_room_boot(&me.shared, &doc, timeout).await;
                    me.step(Some(Input::BootReply { doc, reply }));
                });
            }
            Output::StartRoom {
                doc,
                incarnation,
                grant,
            } => {
                inner.records.remove(&doc);
                let me = self.clone();
                self.shared.env.spawn(async move {
                    let result = match start_room(&me.shared, &doc, grant).await {
                        Ok(started) => {
                            me.watch(LiveRoom {
                                doc: doc.clone(),
                                incarnation,
                                events: started.events,
                                done: started.done,
                                moved: started.moved,
                            });
                            Ok(())
                        }
                        Err(e) => Err(e.to_string().into()),
                    };
                    me.step(Some(Input::Started {
                        doc,
                        incarnation,
                        result,
                    }));
                });
            }
            Output::Admit {
                conn,
                doc,
                incarnation,
            } => {
                let Some(room) = inner.handles.get(&doc).cloned() else {
                    // Only a started room admits; keep the count honest regardless.
                    self.shared
                        .log
                        .error(&format!("room {doc} admitted a connection but has no task"));
                    return;
                };
                let admitted = Admitted {
                    room,
                    hold: ConnHold {
                        rooms: self.clone(),
                        doc,
                        incarnation,
                    },
                };
                match inner.waiting.remove(&conn) {
                    Some(answer) => {
                        if let Err(e) = answer.try_send(Ok(admitted)) {
                            if let Ok(a) = e.into_inner() {
                                deferred.admitted.push(a);
                            }
                        }
                        deferred.answers.push(answer);
                    }
                    // It left as it was admitted: its hold reports the close.
                    None => deferred.admitted.push(admitted),
                }
            }
            Output::Refuse { conn, code, reason } => {
                if let Some(answer) = inner.waiting.remove(&conn) {
                    let _ = answer.try_send(Err((code, reason)));
                    deferred.answers.push(answer);
                }
            }
            Output::Drain { doc, .. } => {
                if let Some(room) = inner.handles.get(&doc).cloned() {
                    let me = self.clone();
                    self.shared.env.spawn(async move {
                        me.drain(&room).await;
                    });
                }
            }
            Output::StopRoom { doc, incarnation } => {
                if let Some(room) = inner.handles.get(&doc) {
                    if room.incarnation == incarnation {
                        let (tx, _rx) = async_channel::bounded(1);
                        let _ = room.events.try_send(Event::Control(Control::Shutdown(tx)));
                    }
                }
            }
            Output::MeasureMemory => {
                let live: Vec<Arc<LiveRoom>> = inner.handles.values().cloned().collect();
                let me = self.clone();
                self.shared.env.spawn(async move {
                    let mut retained = Vec::with_capacity(live.len());
                    for room in live {
                        if let Some((bytes, _)) = super::memory_of(&room).await {
                            retained.push((room.doc.clone(), bytes));
                        }
                    }
                    me.step(Some(Input::Memory { retained }));
                });
            }
            Output::Hibernated { doc, record } => {
                inner.records.insert(&doc, record);
                inner.records.bound(MAX_RECORDS);
                // Under the lock, so no new boot of the doc opens the journal meanwhile
                // (a journal that holds nothing is a few hundred bytes to read).
                if let Some(dir) = &self.shared.fleet.data_dir {
                    retire_empty_journal(dir, &doc, &self.shared.log);
                }
            }
            Output::Log { level, text } => match level {
                Level::Debug => self.shared.log.debug(&text),
                Level::Info => self.shared.log.info(&text),
                Level::Warn => self.shared.log.warn(&text),
                Level::Error => self.shared.log.error(&text),
            },
            // An output a newer core adds: this driver does not know how to carry it.
            _ => {}
        }
    }

    /// Keeps a started room's handle, and reports its task's end.
    fn watch(self: &Arc<Self>, room: LiveRoom) {
        let room = Arc::new(room);
        self.inner().handles.insert(room.doc.clone(), room.clone());
        let me = self.clone();
        self.shared.env.spawn(async move {
            let _ = room.done.recv().await;
            {
                let mut inner = me.inner();
                if inner
                    .handles
                    .get(&room.doc)
                    .is_some_and(|r| r.incarnation == room.incarnation)
                {
                    inner.handles.remove(&room.doc);
                }
            }
            me.step(Some(Input::Stopped {
                doc: room.doc.clone(),
                incarnation: room.incarnation,
            }));
        });
    }

    /// Drains `room` and tells the table (it keeps the final flush seq for the room's
    /// record, and hibernates a room it asked to drain).
    pub async fn drain(self: &Arc<Self>, room: &LiveRoom) -> Option<Result<u64, DrainError>> {
        let drained = room.drain_once().await;
        if let Some(result) = &drained {
            self.step(Some(Input::Drained {
                doc: room.doc.clone(),
                incarnation: room.incarnation,
                result: result.clone().map_err(|e| e.to_string().into()),
            }));
        }
        drained
    }

    /// Runs the table's deadlines until `stop`.
    pub async fn run_deadlines(self: Arc<Self>, stop: Receiver<()>) {
        loop {
            let next = self.inner().table.next_deadline();
            let now = self.shared.env.now_ms();
            if next.is_some_and(|at| at <= now) {
                self.step(None);
                continue;
            }
            let wait = async {
                match next {
                    Some(at) => smol::Timer::after(Duration::from_millis(at - now)).await,
                    None => std::future::pending().await,
                };
                false
            };
            let woken = async {
                let _ = self.wake.1.recv().await;
                false
            };
            let stopped = async {
                let _ = stop.recv().await;
                true
            };
            if wait.or(woken).or(stopped).await {
                return;
            }
        }
    }

    /// The live room of `doc`, booting it if needed: the table decides, and closes a
    /// connection that waited `boot_timeout_ms`.
    pub async fn room_for(self: &Arc<Self>, doc: &str) -> Result<Admitted, Refusal> {
        let (tx, rx) = async_channel::bounded(1);
        let conn = {
            let mut inner = self.inner();
            inner.next_conn += 1;
            let conn = inner.next_conn;
            inner.waiting.insert(conn, tx);
            conn
        };
        let mut guard = WaitGuard {
            rooms: self,
            conn,
            answered: false,
        };
        self.step(Some(Input::Connect {
            conn,
            doc: doc.to_string(),
        }));
        let answer = rx
            .recv()
            .await
            .unwrap_or_else(|_| Err((CLOSE_BOOT_FAILED.0, CLOSE_BOOT_FAILED.1.to_string())));
        guard.answered = true;
        answer
    }

    /// Boots `doc` (if it is not up) and waits until it is live: its journal's flush
    /// records settled, its entries replayed. The hold keeps it from hibernating.
    ///
    /// `Err(Some(room))`: it booted but stopped before going live (see
    /// [`LiveRoom::moved`]); `Err(None)`: it did not boot.
    pub async fn boot_for_settlement(
        self: &Arc<Self>,
        doc: &str,
    ) -> Result<Admitted, (Option<Arc<LiveRoom>>, Refusal)> {
        let admitted = self.room_for(doc).await.map_err(|r| (None, r))?;
        let (tx, rx) = async_channel::bounded(1);
        let live = async {
            admitted
                .room
                .events
                .send(Event::Control(Control::AwaitLive(tx)))
                .await
                .ok()?;
            rx.recv().await.ok()
        };
        match live.await {
            Some(()) => Ok(admitted),
            None => Err((
                Some(admitted.room.clone()),
                (
                    CLOSE_BOOT_FAILED.0,
                    String::from("the room stopped before it went live"),
                ),
            )),
        }
    }

    /// Stops `doc`'s live room (it drains as it shuts down; connections that arrive
    /// meanwhile wait and boot it again). Returns whether a live room was found.
    pub fn stop_room(self: &Arc<Self>, doc: &str, why: StopWhy) -> bool {
        if self.inner().table.live(doc).is_none() {
            return false;
        }
        self.step(Some(Input::Stop {
            doc: doc.to_string(),
            why,
        }));
        true
    }

    /// `doc`'s started room, or its hibernation record.
    pub fn lookup(&self, doc: &str) -> Option<Result<Arc<LiveRoom>, HibernationRecord>> {
        let inner = self.inner();
        if let Some(room) = inner.handles.get(doc) {
            return Some(Ok(room.clone()));
        }
        if inner.table.has_slot(doc) {
            return None;
        }
        inner.records.get(doc).map(Err)
    }

    /// Every started room.
    pub fn live_rooms(&self) -> Vec<Arc<LiveRoom>> {
        self.inner().handles.values().cloned().collect()
    }

    /// Whether `/readyz` says ready.
    pub fn is_ready(&self) -> bool {
        self.inner().table.is_ready()
    }

    /// Whether new boots are refused for the memory budget.
    pub fn over_budget(&self) -> bool {
        self.inner().table.over_budget()
    }

    /// What the table counted.
    pub fn counters(&self) -> TableCounters {
        self.inner().table.counters()
    }

    /// The table, sorted by doc: slots, then records of docs without one.
    pub fn list(&self) -> Vec<RoomSummary> {
        let inner = self.inner();
        let mut rooms = inner.table.summaries();
        rooms.extend(
            inner
                .records
                .iter()
                .filter(|(doc, _)| !inner.table.has_slot(doc))
                .map(|(doc, rec)| RoomSummary {
                    doc: doc.to_string(),
                    state: rindle_room_core::fleet::RoomState::Hibernated,
                    connections: 0,
                    epoch: rec.epoch,
                    hibernated_at_ms: Some(rec.since_ms),
                }),
        );
        sorted(rooms)
    }
}

/// The downstream router over the room table.
pub(crate) struct RoomRouter(pub Arc<Rooms>);

impl Router<Event> for RoomRouter {
    fn check(&self, path: &str) -> Result<String, (u16, String)> {
        doc_from_path(path).map_err(|e| (404, format!("{e}\n")))
    }

    /// A connection to a live room is routed at once; one that would boot a room must
    /// first show a lease subscribe that verifies for the doc (the core's gate).
    fn gate(&self, doc: &str, shown: &[String]) -> Gate {
        if self.0.inner().table.live(doc).is_some() {
            return Gate::Route;
        }
        let keys: Vec<(String, String)> = self
            .0
            .shared
            .config
            .downstream
            .token_keys
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        gate(doc, shown, &keys, self.0.shared.env.now_ms())
    }

    fn route(&self, doc: String) -> RouteFuture<Event> {
        let me = self.0.clone();
        Box::pin(async move {
            let Admitted { room, hold } = me.room_for(&doc).await?;
            Ok(Route {
                events: room.events.clone(),
                hold: Box::new(hold),
            })
        })
    }
}

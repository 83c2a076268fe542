//! The fleet's room table and the connection router (fleet.md F1, F2, F5).
//!
//! A doc's slot is `Booting` (connections wait on the one boot), `Live`, `Stopping`
//! (hibernating or re-booting: connections wait, then boot it again) or `Hibernated` (a
//! small record). Concurrent first connections cause one boot; a connection waits at
//! most `boot_timeout_ms`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_channel::{Receiver, Sender};
use futures_lite::FutureExt;
use rindle_room_core::fleet::{
    doc_from_path, gate, idle_to_hibernate, sorted, BootAdmission, BootAdmit, BootEnd, Gate,
    LiveRoomView, RoomState, RoomSummary, CLOSE_BOOT_FAILED, CLOSE_BOOT_TIMED_OUT,
};
use rindle_room_downstream::{Route, RouteFuture, Router};

use super::boot::{call_room_boot, start_room};
use super::records::Records;
use super::Shared;
use crate::server::actor::{Control, Event};

/// The most hibernation records a box keeps; past it the oldest goes (a record only
/// answers `/drain?doc=` and `/rooms` for a room that is not running).
pub(crate) const MAX_RECORDS: usize = 100_000;

/// A close code and reason for a connection that gets no room.
pub(crate) type Refusal = (u16, String);

/// One live room.
pub(crate) struct LiveRoom {
    pub doc: String,
    pub events: Sender<Event>,
    pub epoch: u64,
    /// Closed once the room task has stopped.
    pub done: Receiver<()>,
    pub conns: AtomicUsize,
    /// When the last connection went (ms, the fleet's clock).
    pub idle_since: AtomicU64,
    /// The last committed flush seq its last drain reported (`u64::MAX`: none yet).
    pub final_flush_seq: AtomicU64,
    /// Set when it stopped because another placement owns the doc (fenced).
    pub moved: Arc<std::sync::atomic::AtomicBool>,
}

impl LiveRoom {
    /// What the core's hibernation rules see of it (`retained`: its bytes, if known).
    pub fn view(&self, retained: Option<u64>) -> LiveRoomView {
        LiveRoomView {
            doc: self.doc.clone(),
            connections: self.conns.load(Ordering::SeqCst),
            idle_since: self.idle_since.load(Ordering::SeqCst),
            retained,
        }
    }

    /// Drains the room (flushes until nothing is dirty or pending): `Some(Ok(final
    /// flush seq))`, `Some(Err(why))`, or `None` when the room stopped first. A drain
    /// that succeeds also records its seq for the room's hibernation record.
    pub async fn drain(&self) -> Option<Result<u64, String>> {
        let (tx, rx) = async_channel::bounded(1);
        self.events
            .send(Event::Control(Control::Drain(tx)))
            .await
            .ok()?;
        let drained = rx.recv().await.ok()?;
        if let Ok(seq) = drained {
            self.final_flush_seq.store(seq, Ordering::SeqCst);
        }
        Some(drained)
    }
}

/// A hibernated (or stopped) room's record.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Record {
    pub epoch: u64,
    pub since_ms: u64,
    /// The last committed flush seq its final drain reported, when it drained.
    pub final_flush_seq: Option<u64>,
}

type Waiter = Sender<Result<Arc<LiveRoom>, Refusal>>;

enum Slot {
    Booting(Vec<Waiter>),
    Live(Arc<LiveRoom>),
    Stopping {
        room: Arc<LiveRoom>,
        waiters: Vec<Waiter>,
    },
}

/// The room table.
pub(crate) struct Rooms {
    pub shared: Arc<Shared>,
    table: Mutex<Table>,
}

/// Rooms booting, live or stopping; the hibernated ones' records; and boot admission
/// (slots, the queue, refused documents: the core's rules).
struct Table {
    slots: HashMap<String, Slot>,
    records: Records,
    admission: BootAdmission,
}

/// Held by a connection for its lifetime: counts it against its room.
struct ConnHold {
    room: Arc<LiveRoom>,
    clock: crate::server::clock::Env,
}

impl Drop for ConnHold {
    fn drop(&mut self) {
        if self.room.conns.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.room
                .idle_since
                .store(self.clock.now_ms(), Ordering::SeqCst);
        }
    }
}

impl Rooms {
    pub fn new(shared: Arc<Shared>) -> Arc<Rooms> {
        let admission = BootAdmission::new(shared.fleet.boot_limits());
        Arc::new(Rooms {
            shared,
            table: Mutex::new(Table {
                slots: HashMap::new(),
                records: Records::default(),
                admission,
            }),
        })
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The live room of `doc`, booting it if needed; waits at most the boot timeout.
    pub async fn room_for(self: &Arc<Self>, doc: &str) -> Result<Arc<LiveRoom>, Refusal> {
        let (tx, rx) = async_channel::bounded(1);
        {
            let mut table = self.table();
            match table.slots.get_mut(doc) {
                Some(Slot::Live(room)) if !room.done.is_closed() => return Ok(room.clone()),
                Some(Slot::Booting(waiters)) | Some(Slot::Stopping { waiters, .. }) => {
                    waiters.push(tx)
                }
                _ => {
                    if self.shared.shutting_down.load(Ordering::SeqCst) {
                        return Err((1001, String::from("the box is shutting down")));
                    }
                    if self.shared.over_budget.load(Ordering::SeqCst) {
                        let (code, reason) = rindle_room_core::fleet::CLOSE_BOX_BUDGET;
                        return Err((code, reason.to_string()));
                    }
                    if table.slots.len() >= self.shared.fleet.max_rooms {
                        return Err((
                            1013,
                            format!(
                                "box room limit reached ({} rooms; fleet.max_rooms and the \
                                 open-file limit)",
                                self.shared.fleet.max_rooms
                            ),
                        ));
                    }
                    let now = self.shared.env.now_ms();
                    self.expire_queued(&mut table, now);
                    match table.admission.request(now, doc) {
                        BootAdmit::Refuse(code, reason) => return Err((code, reason)),
                        admit => {
                            table.records.remove(doc);
                            table.slots.insert(doc.to_string(), Slot::Booting(vec![tx]));
                            if admit == BootAdmit::Start {
                                self.spawn_boot(doc.to_string());
                            }
                        }
                    }
                }
            }
        }
        let wait = Duration::from_millis(self.shared.fleet.boot_timeout_ms);
        let timeout = async {
            smol::Timer::after(wait).await;
            Err((CLOSE_BOOT_TIMED_OUT.0, CLOSE_BOOT_TIMED_OUT.1.to_string()))
        };
        async {
            rx.recv()
                .await
                .unwrap_or_else(|_| Err((CLOSE_BOOT_FAILED.0, CLOSE_BOOT_FAILED.1.to_string())))
        }
        .or(timeout)
        .await
    }

    /// Boots `doc` (if it is not up) and waits until it is live: its journal's flush
    /// records settled, its entries replayed.
    ///
    /// `Err(Some(room))`: it booted but stopped before going live (see
    /// [`LiveRoom::moved`]); `Err(None)`: it did not boot.
    pub async fn boot_for_settlement(
        self: &Arc<Self>,
        doc: &str,
    ) -> Result<Arc<LiveRoom>, (Option<Arc<LiveRoom>>, Refusal)> {
        let room = self.room_for(doc).await.map_err(|r| (None, r))?;
        let (tx, rx) = async_channel::bounded(1);
        let live = async {
            room.events
                .send(Event::Control(Control::AwaitLive(tx)))
                .await
                .ok()?;
            rx.recv().await.ok()
        };
        match live.await {
            Some(()) => Ok(room),
            None => Err((
                Some(room),
                (
                    CLOSE_BOOT_FAILED.0,
                    String::from("the room stopped before it went live"),
                ),
            )),
        }
    }

    /// Boots `doc` in a slot admission gave it (its slot is `Booting`).
    fn spawn_boot(self: &Arc<Self>, doc: String) {
        let me = self.clone();
        self.shared.env.spawn(async move {
            let mut end = BootEnd::Done;
            let result = me.boot(&doc, &mut end).await;
            let counter = match result {
                Ok(_) => &me.shared.counters.boots,
                Err(_) => &me.shared.counters.boot_failures,
            };
            counter.fetch_add(1, Ordering::Relaxed);
            me.booted(&doc, result, end);
        });
    }

    /// Drops queued boots whose wait ran out, closing their connections.
    fn expire_queued(&self, table: &mut Table, now: u64) {
        for (doc, code, reason) in table.admission.expire(now) {
            if let Some(Slot::Booting(waiters)) = table.slots.remove(&doc) {
                for w in waiters {
                    let _ = w.try_send(Err((code, reason.clone())));
                }
            }
        }
    }

    async fn boot(&self, doc: &str, end: &mut BootEnd) -> Result<Arc<LiveRoom>, Refusal> {
        let shared = &self.shared;
        let deadline = Instant::now() + Duration::from_millis(shared.fleet.boot_timeout_ms);
        let grant = call_room_boot(shared, doc, deadline).await.map_err(|f| {
            match f {
                rindle_room_core::fleet::BootFailure::Refused(_) => shared.log.error(f.message()),
                rindle_room_core::fleet::BootFailure::NoRoom(_) => shared.log.info(f.message()),
                _ => shared.log.warn(&format!("room boot for {doc} failed: {f}")),
            }
            *end = BootEnd::of(&f);
            let (code, reason) = f.close();
            (code, reason.to_string())
        })?;
        let started = start_room(shared, doc, grant).await.map_err(|e| {
            shared
                .log
                .error(&format!("room {doc} failed to start: {e}"));
            (CLOSE_BOOT_FAILED.0, CLOSE_BOOT_FAILED.1.to_string())
        })?;
        Ok(Arc::new(LiveRoom {
            doc: doc.to_string(),
            events: started.events.clone(),
            epoch: started.epoch,
            done: started.done.clone(),
            conns: AtomicUsize::new(0),
            idle_since: AtomicU64::new(shared.env.now_ms()),
            final_flush_seq: AtomicU64::new(u64::MAX),
            moved: started.moved.clone(),
        }))
    }

    /// A boot finished: wake its waiters; watch the room for its end; give its slot to
    /// the next queued boot somebody still waits for.
    fn booted(self: &Arc<Self>, doc: &str, result: Result<Arc<LiveRoom>, Refusal>, end: BootEnd) {
        let waiters = {
            let mut table = self.table();
            let now = self.shared.env.now_ms();
            let mut next = table.admission.finished(now, doc, end);
            while let Some(queued) = next.take() {
                let waited = match table.slots.get(&queued) {
                    Some(Slot::Booting(w)) => w.iter().any(|w| !w.is_closed()),
                    _ => false,
                };
                if waited {
                    self.spawn_boot(queued);
                } else {
                    // Everybody gave up on it: no boot, and the slot goes on.
                    if matches!(table.slots.get(&queued), Some(Slot::Booting(_))) {
                        table.slots.remove(&queued);
                    }
                    next = table.admission.finished(now, &queued, BootEnd::Done);
                }
            }
            let waiters = match table.slots.remove(doc) {
                Some(Slot::Booting(w)) => w,
                other => {
                    // Only a boot puts `Booting`; keep whatever replaced it.
                    if let Some(slot) = other {
                        table.slots.insert(doc.to_string(), slot);
                    }
                    Vec::new()
                }
            };
            if let Ok(room) = &result {
                table
                    .slots
                    .insert(doc.to_string(), Slot::Live(room.clone()));
            }
            waiters
        };
        if let Ok(room) = &result {
            let me = self.clone();
            let room = room.clone();
            self.shared.env.spawn(async move {
                let _ = room.done.recv().await;
                me.stopped(&room);
            });
        }
        for w in waiters {
            let _ = w.try_send(result.clone());
        }
    }

    /// A room task ended (hibernated, re-booting, fenced, failed): record it, and boot it
    /// again if connections are waiting.
    fn stopped(self: &Arc<Self>, room: &Arc<LiveRoom>) {
        let mut table = self.table();
        let seq = room.final_flush_seq.load(Ordering::SeqCst);
        let record = Record {
            epoch: room.epoch,
            since_ms: self.shared.env.now_ms(),
            final_flush_seq: (seq != u64::MAX).then_some(seq),
        };
        let slot = table.slots.remove(&room.doc);
        let ours = match &slot {
            Some(Slot::Live(r)) | Some(Slot::Stopping { room: r, .. }) => Arc::ptr_eq(r, room),
            _ => false,
        };
        if !ours {
            // The slot moved on (a newer boot): leave it untouched.
            if let Some(slot) = slot {
                table.slots.insert(room.doc.clone(), slot);
            }
            return;
        }
        match slot {
            Some(Slot::Stopping { waiters, .. }) if !waiters.is_empty() => {
                let now = self.shared.env.now_ms();
                match table.admission.request(now, &room.doc) {
                    BootAdmit::Refuse(code, reason) => {
                        for w in waiters {
                            let _ = w.try_send(Err((code, reason.clone())));
                        }
                    }
                    admit => {
                        table.slots.insert(room.doc.clone(), Slot::Booting(waiters));
                        if admit == BootAdmit::Start {
                            self.spawn_boot(room.doc.clone());
                        }
                    }
                }
            }
            _ => {
                self.shared
                    .counters
                    .hibernations
                    .fetch_add(1, Ordering::Relaxed);
                self.shared.log.info(&format!(
                    "room {} hibernated (placement epoch {})",
                    room.doc, room.epoch
                ));
                table.records.insert(&room.doc, record);
                table.records.bound(MAX_RECORDS);
            }
        }
    }

    /// Starts hibernating (or re-booting) `doc`'s live room: it drains and shuts down;
    /// connections that arrive meanwhile wait and boot it again. Returns whether a live
    /// room was found.
    pub fn stop_room(&self, doc: &str) -> bool {
        let room = {
            let mut table = self.table();
            match table.slots.remove(doc) {
                Some(Slot::Live(room)) => {
                    table.slots.insert(
                        doc.to_string(),
                        Slot::Stopping {
                            room: room.clone(),
                            waiters: Vec::new(),
                        },
                    );
                    room
                }
                Some(other) => {
                    table.slots.insert(doc.to_string(), other);
                    return false;
                }
                None => return false,
            }
        };
        let (tx, _rx) = async_channel::bounded(1);
        let _ = room.events.try_send(Event::Control(Control::Shutdown(tx)));
        true
    }

    /// `doc`'s live (or stopping) room, or its hibernation record.
    pub fn lookup(&self, doc: &str) -> Option<Result<Arc<LiveRoom>, Record>> {
        let table = self.table();
        match table.slots.get(doc) {
            Some(Slot::Live(r)) | Some(Slot::Stopping { room: r, .. }) => Some(Ok(r.clone())),
            Some(Slot::Booting(_)) => None,
            None => table.records.get(doc).map(Err),
        }
    }

    /// Live rooms with no connection for at least `idle_ms` at `now`.
    pub fn idle_rooms(&self, now: u64, idle_ms: u64) -> Vec<Arc<LiveRoom>> {
        let live: Vec<Arc<LiveRoom>> = self
            .table()
            .slots
            .values()
            .filter_map(|s| match s {
                Slot::Live(r) => Some(r.clone()),
                _ => None,
            })
            .collect();
        let views: Vec<LiveRoomView> = live.iter().map(|r| r.view(None)).collect();
        let idle = idle_to_hibernate(&views, now, idle_ms);
        live.into_iter().filter(|r| idle.contains(&r.doc)).collect()
    }

    /// Every live room.
    pub fn live_rooms(&self) -> Vec<Arc<LiveRoom>> {
        self.table()
            .slots
            .values()
            .filter_map(|s| match s {
                Slot::Live(r) | Slot::Stopping { room: r, .. } => Some(r.clone()),
                _ => None,
            })
            .collect()
    }

    /// The table, sorted by doc.
    pub fn list(&self) -> Vec<RoomSummary> {
        let table = self.table();
        let hibernated = table.records.iter().map(|(doc, rec)| RoomSummary {
            doc: doc.to_string(),
            state: RoomState::Hibernated,
            connections: 0,
            epoch: rec.epoch,
            hibernated_at_ms: Some(rec.since_ms),
        });
        let rooms = table
            .slots
            .iter()
            .map(|(doc, slot)| {
                let (state, connections, epoch, hibernated_at_ms) = match slot {
                    Slot::Booting(_) => (RoomState::Booting, 0, 0, None),
                    Slot::Live(r) => (
                        RoomState::Live,
                        r.conns.load(Ordering::SeqCst),
                        r.epoch,
                        None,
                    ),
                    Slot::Stopping { room, .. } => (
                        RoomState::Stopping,
                        room.conns.load(Ordering::SeqCst),
                        room.epoch,
                        None,
                    ),
                };
                RoomSummary {
                    doc: doc.clone(),
                    state,
                    connections,
                    epoch,
                    hibernated_at_ms,
                }
            })
            .chain(hibernated)
            .collect();
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
        if let Some(Slot::Live(room)) = self.0.table().slots.get(doc) {
            if !room.done.is_closed() {
                return Gate::Route;
            }
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
            let room = me.room_for(&doc).await?;
            room.conns.fetch_add(1, Ordering::SeqCst);
            Ok(Route {
                events: room.events.clone(),
                hold: Box::new(ConnHold {
                    room,
                    clock: me.shared.env.clone(),
                }),
            })
        })
    }
}

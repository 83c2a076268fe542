//! Live rooms: their connections, the idle sweep and the memory budget that hibernate
//! them, stops on request, and what a stopped room leaves behind.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::{HibernationRecord, Incarnation, Output, RoomTable, StopWhy, Waiter};
use crate::fleet::admission::BootAdmit;
use crate::fleet::boot_wire::CLOSE_BOOT_TIMED_OUT;
use crate::fleet::hibernation::{budget_plan, idle_to_hibernate, LiveRoomView};
use crate::host::Level;

/// How long a memory measurement may stay unanswered before the sweep asks again (ms).
const MEASURE_PATIENCE_MS: u64 = 30_000;

/// A started room.
#[derive(Debug)]
pub(super) struct Room {
    pub incarnation: Incarnation,
    pub epoch: u64,
    pub conns: usize,
    /// When its last connection went (ms).
    pub idle_since: u64,
    pub final_flush_seq: Option<u64>,
    pub phase: RoomPhase,
}

/// Where a started room is.
#[derive(Debug)]
pub(super) enum RoomPhase {
    Serving,
    /// Asked to drain before it hibernates.
    Draining(Hibernate),
    /// Shutting down; connections that arrive wait and boot it again.
    Stopping {
        waiters: Vec<Waiter>,
    },
}

/// Why a room is drained to hibernate.
#[derive(Clone, Copy, Debug)]
pub(super) enum Hibernate {
    Idle,
    /// The box budget: its bytes, and the live rooms' total when it was chosen.
    Budget {
        bytes: u64,
        total: u64,
        max: u64,
    },
}

impl Room {
    pub fn new(incarnation: Incarnation, epoch: u64, now: u64) -> Room {
        Room {
            incarnation,
            epoch,
            conns: 0,
            idle_since: now,
            final_flush_seq: None,
            phase: RoomPhase::Serving,
        }
    }

    /// Whether it takes connections (serving or draining).
    pub fn serving(&self) -> bool {
        !matches!(self.phase, RoomPhase::Stopping { .. })
    }

    /// When the first connection waiting on this stopping room has waited too long.
    pub fn waiter_deadline(&self) -> Option<u64> {
        match &self.phase {
            RoomPhase::Stopping { waiters } => waiters.iter().map(|w| w.until).min(),
            _ => None,
        }
    }

    /// The connections waiting on a stopping room (`None` while it serves).
    pub fn waiters_mut(&mut self) -> Option<&mut Vec<Waiter>> {
        match &mut self.phase {
            RoomPhase::Stopping { waiters } => Some(waiters),
            _ => None,
        }
    }
}

impl RoomTable {
    fn room(&mut self, doc: &str, incarnation: Incarnation) -> Option<&mut Room> {
        self.rooms
            .get_mut(doc)
            .filter(|r| r.incarnation == incarnation)
    }

    pub(super) fn disconnect(&mut self, now: u64, doc: &str, incarnation: Incarnation) {
        if let Some(room) = self.room(doc, incarnation) {
            room.conns = room.conns.saturating_sub(1);
            if room.conns == 0 {
                room.idle_since = now;
            }
        }
    }

    pub(super) fn drained(
        &mut self,
        now: u64,
        doc: &str,
        incarnation: Incarnation,
        result: Result<u64, crate::host::DrainError>,
    ) {
        let Some(room) = self.room(doc, incarnation) else {
            return;
        };
        let why = match room.phase {
            RoomPhase::Draining(why) => Some(why),
            _ => None,
        };
        if let Ok(seq) = result {
            room.final_flush_seq = Some(seq);
        }
        let Some(why) = why else {
            return;
        };
        room.phase = RoomPhase::Serving;
        match result {
            Err(e) => {
                // Tried again after another idle period, not every sweep.
                room.idle_since = now;
                self.log(
                    Level::Warn,
                    format!("room {doc} stays up: its writes are not confirmed yet ({e})"),
                );
            }
            // A client came back while it drained: it stays.
            Ok(_) if room.conns > 0 => {}
            Ok(_) => {
                room.phase = RoomPhase::Stopping {
                    waiters: Vec::new(),
                };
                if let Hibernate::Budget { bytes, total, max } = why {
                    self.log(
                        Level::Info,
                        format!(
                            "box budget: hibernating idle room {doc} ({bytes} bytes) — the \
                             live rooms retain {total} bytes, fleet.max_box_bytes is {max}"
                        ),
                    );
                }
                self.outputs.push_back(Output::StopRoom {
                    doc: String::from(doc),
                    incarnation,
                });
            }
        }
    }

    /// A room task ended: boot it again for the connections waiting, or keep its record.
    pub(super) fn stopped(&mut self, now: u64, doc: &str, incarnation: Incarnation) {
        if self.room(doc, incarnation).is_none() {
            return;
        }
        let Some(room) = self.rooms.remove(doc) else {
            return;
        };
        let waiters = match room.phase {
            RoomPhase::Stopping { waiters } => waiters,
            _ => Vec::new(),
        };
        if !waiters.is_empty() {
            let admit = if self.shutting_down {
                let (code, reason) = super::CLOSE_SHUTTING_DOWN;
                BootAdmit::Refuse(code, String::from(reason))
            } else {
                self.admission.request(now, doc)
            };
            let rebooting = !matches!(admit, BootAdmit::Refuse(..));
            self.begin_boot(now, String::from(doc), waiters, admit);
            if rebooting {
                return;
            }
        }
        self.counters.hibernations += 1;
        self.log(
            Level::Info,
            format!("room {doc} hibernated (placement epoch {})", room.epoch),
        );
        self.outputs.push_back(Output::Hibernated {
            doc: String::from(doc),
            record: HibernationRecord {
                epoch: room.epoch,
                since_ms: now,
                final_flush_seq: room.final_flush_seq,
            },
        });
    }

    /// Stops `doc`'s live room now.
    pub(super) fn stop(&mut self, doc: &str, why: StopWhy) {
        let Some(room) = self.rooms.get_mut(doc).filter(|r| r.serving()) else {
            return;
        };
        room.phase = RoomPhase::Stopping {
            waiters: Vec::new(),
        };
        let incarnation = room.incarnation;
        if why == StopWhy::Relet {
            self.log(
                Level::Info,
                format!("room {doc} needs a new upstream lease: re-booting it"),
            );
        }
        self.outputs.push_back(Output::StopRoom {
            doc: String::from(doc),
            incarnation,
        });
    }

    fn views(&self) -> Vec<LiveRoomView> {
        self.rooms
            .iter()
            .filter(|(_, r)| matches!(r.phase, RoomPhase::Serving))
            .map(|(doc, r)| LiveRoomView {
                doc: doc.clone(),
                connections: r.conns,
                idle_since: r.idle_since,
                retained: None,
            })
            .collect()
    }

    /// The periodic sweep: connections waiting on a stopping room too long are closed,
    /// idle rooms drain to hibernate, and the box budget is measured.
    pub(super) fn sweep(&mut self, now: u64) {
        let mut late = Vec::new();
        for room in self.rooms.values_mut() {
            if let RoomPhase::Stopping { waiters } = &mut room.phase {
                late.extend(waiters.iter().filter(|w| w.until <= now).map(|w| w.conn));
                waiters.retain(|w| w.until > now);
            }
        }
        for conn in late {
            self.refuse(conn, CLOSE_BOOT_TIMED_OUT);
        }
        let idle = idle_to_hibernate(&self.views(), now, self.rules.idle_evict_ms);
        for doc in idle {
            self.drain_to_hibernate(&doc, Hibernate::Idle);
        }
        if self.rules.max_box_bytes.is_some()
            && self
                .measuring_since
                .is_none_or(|at| now.saturating_sub(at) >= MEASURE_PATIENCE_MS)
        {
            self.measuring_since = Some(now);
            self.outputs.push_back(Output::MeasureMemory);
        }
    }

    fn drain_to_hibernate(&mut self, doc: &str, why: Hibernate) {
        if let Some(room) = self.rooms.get_mut(doc) {
            if matches!(room.phase, RoomPhase::Serving) {
                room.phase = RoomPhase::Draining(why);
                let incarnation = room.incarnation;
                self.outputs.push_back(Output::Drain {
                    doc: String::from(doc),
                    incarnation,
                });
            }
        }
    }

    /// The live rooms' retained bytes arrived: hibernate idle rooms, least recently used
    /// first, until the box is under `max_box_bytes`; refuse new boots if it cannot be.
    pub(super) fn memory(&mut self, retained: Vec<(String, u64)>) {
        self.measuring_since = None;
        let Some(max) = self.rules.max_box_bytes else {
            return;
        };
        let mut views = self.views();
        for v in &mut views {
            v.retained = retained
                .iter()
                .find(|(doc, _)| *doc == v.doc)
                .map(|(_, b)| *b);
        }
        let plan = budget_plan(&views, max);
        let mut total = plan.total;
        for (doc, bytes) in plan.hibernate {
            if total <= max {
                break;
            }
            self.drain_to_hibernate(&doc, Hibernate::Budget { bytes, total, max });
            total = total.saturating_sub(bytes);
        }
        let over = total > max;
        if over && !self.over_budget {
            self.log(
                Level::Warn,
                format!(
                    "box budget: the live rooms retain {total} bytes, past \
                     fleet.max_box_bytes {max}, and none is idle: new boots are refused \
                     (1013) until they shrink"
                ),
            );
        }
        self.over_budget = over;
    }
}

//! Booting: who gets a boot, the room-boot call and its retries, the start, and the
//! connections that wait meanwhile.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::rooms::Room;
use super::{Incarnation, Output, RoomTable, Waiter, CLOSE_SHUTTING_DOWN};
use crate::fleet::admission::{BootAdmit, BootEnd};
use crate::fleet::boot_wire::{
    boot_backoff_ms, BootFailure, BootGrant, CLOSE_BOOT_FAILED, CLOSE_BOOT_TIMED_OUT,
    CLOSE_BOX_BUDGET,
};
use crate::host::Level;

/// A doc whose room is on its way.
#[derive(Debug)]
pub(super) struct Boot {
    pub incarnation: Incarnation,
    pub waiters: Vec<Waiter>,
    pub phase: Phase,
}

/// Where a boot is.
#[derive(Debug)]
pub(super) enum Phase {
    /// Waiting for a boot slot (admission's queue).
    Queued,
    /// A room-boot call is out; the boot gives up at `deadline`.
    Calling { attempt: u32, deadline: u64 },
    /// The last call failed in a way worth retrying: call again at `retry_at`.
    Backoff {
        attempt: u32,
        deadline: u64,
        retry_at: u64,
    },
    /// Granted: the room is starting with this placement epoch.
    Starting { epoch: u64 },
}

impl Boot {
    /// The earliest time something about this boot is due.
    pub fn deadline(&self) -> Option<u64> {
        let waiter = self.waiters.iter().map(|w| w.until).min();
        let retry = match self.phase {
            Phase::Backoff { retry_at, .. } => Some(retry_at),
            _ => None,
        };
        [waiter, retry].into_iter().flatten().min()
    }
}

impl RoomTable {
    /// A connection wants `doc`'s room: admit it to the live room, let it wait for the
    /// one on its way, or start a boot when admission allows.
    pub(super) fn connect(&mut self, now: u64, conn: u64, doc: String) {
        let until = now.saturating_add(self.rules.boot_timeout_ms);
        let waiter = Waiter { conn, until };
        if let Some(room) = self.rooms.get_mut(&doc) {
            if room.serving() {
                room.conns += 1;
                let incarnation = room.incarnation;
                self.outputs.push_back(Output::Admit {
                    conn,
                    doc,
                    incarnation,
                });
            } else if let Some(waiters) = room.waiters_mut() {
                waiters.push(waiter);
                self.waiting.insert(conn, doc);
            }
            return;
        }
        if let Some(boot) = self.boots.get_mut(&doc) {
            boot.waiters.push(waiter);
            self.waiting.insert(conn, doc);
            return;
        }
        if let Some(close) = self.boot_refusal() {
            self.outputs.push_back(Output::Refuse {
                conn,
                code: close.0,
                reason: close.1,
            });
            return;
        }
        self.expire_queued(now);
        let admit = self.admission.request(now, &doc);
        self.begin_boot(now, doc, alloc::vec![waiter], admit);
    }

    /// Why no new boot may start now, if so.
    fn boot_refusal(&self) -> Option<(u16, String)> {
        if self.shutting_down {
            return Some((CLOSE_SHUTTING_DOWN.0, String::from(CLOSE_SHUTTING_DOWN.1)));
        }
        if self.over_budget {
            return Some((CLOSE_BOX_BUDGET.0, String::from(CLOSE_BOX_BUDGET.1)));
        }
        if self.boots.len() + self.rooms.len() >= self.rules.max_rooms {
            return Some((
                1013,
                format!(
                    "box room limit reached ({} rooms; fleet.max_rooms and the open-file \
                     limit)",
                    self.rules.max_rooms
                ),
            ));
        }
        None
    }

    /// Puts `doc` into a boot slot as admission decided, its waiters with it.
    pub(super) fn begin_boot(
        &mut self,
        now: u64,
        doc: String,
        waiters: Vec<Waiter>,
        admit: BootAdmit,
    ) {
        let phase = match admit {
            BootAdmit::Refuse(code, reason) => {
                for w in waiters {
                    self.refuse(w.conn, (code, &reason));
                }
                return;
            }
            BootAdmit::Queued => Phase::Queued,
            BootAdmit::Start => self.call(now, &doc, 0, now + self.rules.boot_timeout_ms),
        };
        for w in &waiters {
            self.waiting.insert(w.conn, doc.clone());
        }
        let incarnation = self.new_incarnation();
        self.boots.insert(
            doc,
            Boot {
                incarnation,
                waiters,
                phase,
            },
        );
    }

    /// Asks for a room-boot call; the phase it puts the boot in.
    fn call(&mut self, now: u64, doc: &str, attempt: u32, deadline: u64) -> Phase {
        self.outputs.push_back(Output::CallRoomBoot {
            doc: String::from(doc),
            timeout_ms: deadline.saturating_sub(now).max(1),
        });
        Phase::Calling { attempt, deadline }
    }

    /// A waiting connection went away; a queued boot nobody waits for is taken back.
    pub(super) fn abandon(&mut self, conn: u64) {
        let Some(doc) = self.waiting.remove(&conn) else {
            return;
        };
        if let Some(room) = self.rooms.get_mut(&doc) {
            if let Some(waiters) = room.waiters_mut() {
                waiters.retain(|w| w.conn != conn);
            }
            return;
        }
        if let Some(boot) = self.boots.get_mut(&doc) {
            boot.waiters.retain(|w| w.conn != conn);
            if boot.waiters.is_empty() && matches!(boot.phase, Phase::Queued) {
                self.boots.remove(&doc);
                self.admission.withdraw(&doc);
            }
        }
    }

    pub(super) fn boot_reply(
        &mut self,
        now: u64,
        doc: &str,
        reply: Result<BootGrant, BootFailure>,
    ) {
        let Some(boot) = self.boots.get_mut(doc) else {
            return;
        };
        let Phase::Calling { attempt, deadline } = boot.phase else {
            return;
        };
        let failure = match reply {
            Ok(grant) => {
                boot.phase = Phase::Starting { epoch: grant.epoch };
                let incarnation = boot.incarnation;
                self.outputs.push_back(Output::StartRoom {
                    doc: String::from(doc),
                    incarnation,
                    grant,
                });
                return;
            }
            Err(f) => f,
        };
        let attempt = attempt + 1;
        let delay = boot_backoff_ms(attempt);
        if failure.is_retryable() && now.saturating_add(delay) < deadline {
            boot.phase = Phase::Backoff {
                attempt,
                deadline,
                retry_at: now + delay,
            };
            self.log(
                Level::Warn,
                format!("room boot for {doc} failed, retrying in {delay} ms: {failure}"),
            );
            return;
        }
        match &failure {
            BootFailure::Refused(_) => self.log(Level::Error, String::from(failure.message())),
            BootFailure::NoRoom(_) => self.log(Level::Info, String::from(failure.message())),
            _ => self.log(
                Level::Warn,
                format!("room boot for {doc} failed: {failure}"),
            ),
        }
        self.end_boot(now, doc, BootEnd::of(&failure), failure.close());
    }

    /// Ends `doc`'s boot unsuccessfully: its waiters get `close`, its slot goes to the
    /// next queued boot.
    fn end_boot(&mut self, now: u64, doc: &str, end: BootEnd, close: (u16, &str)) {
        self.counters.boot_failures += 1;
        if let Some(boot) = self.boots.remove(doc) {
            self.refuse_all(boot.waiters, close);
        }
        let next = self.admission.finished(now, doc, end);
        self.start_queued(now, next);
    }

    pub(super) fn started(
        &mut self,
        now: u64,
        doc: &str,
        incarnation: Incarnation,
        result: Result<(), super::StartError>,
    ) {
        let epoch = match self.boots.get(doc) {
            Some(Boot {
                incarnation: i,
                phase: Phase::Starting { epoch },
                ..
            }) if *i == incarnation => *epoch,
            _ => return,
        };
        if let Err(e) = result {
            self.log(Level::Error, format!("room {doc} failed to start: {e}"));
            self.end_boot(now, doc, BootEnd::Done, CLOSE_BOOT_FAILED);
            return;
        }
        self.counters.boots += 1;
        let waiters = self
            .boots
            .remove(doc)
            .map(|b| b.waiters)
            .unwrap_or_default();
        let mut room = Room::new(incarnation, epoch, now);
        for w in waiters {
            self.waiting.remove(&w.conn);
            room.conns += 1;
            self.outputs.push_back(Output::Admit {
                conn: w.conn,
                doc: String::from(doc),
                incarnation,
            });
        }
        self.rooms.insert(String::from(doc), room);
        let next = self.admission.finished(now, doc, BootEnd::Done);
        self.start_queued(now, next);
    }

    /// Gives a freed boot slot to `next` (admission took the slot for it), or to the
    /// queued boot after it when nobody waits for `next` any more.
    fn start_queued(&mut self, now: u64, mut next: Option<String>) {
        while let Some(doc) = next.take() {
            let waited = match self.boots.get(&doc) {
                Some(b) => matches!(b.phase, Phase::Queued) && !b.waiters.is_empty(),
                None => false,
            };
            if waited {
                let phase = self.call(now, &doc, 0, now + self.rules.boot_timeout_ms);
                if let Some(b) = self.boots.get_mut(&doc) {
                    b.phase = phase;
                }
                return;
            }
            if self
                .boots
                .get(&doc)
                .is_some_and(|b| matches!(b.phase, Phase::Queued))
            {
                self.boots.remove(&doc);
            }
            next = self.admission.finished(now, &doc, BootEnd::Done);
        }
    }

    /// Queued boots whose wait ran out: their connections are told the box is busy.
    pub(super) fn expire_queued(&mut self, now: u64) {
        for (doc, code, reason) in self.admission.expire(now) {
            if let Some(boot) = self.boots.remove(&doc) {
                for w in boot.waiters {
                    self.refuse(w.conn, (code, &reason));
                }
            }
        }
    }

    /// Connections that waited `boot_timeout_ms` for a boot, or for a stopping room to
    /// stop so that it boots again, are closed (the boot goes on; a queued boot nobody
    /// waits for is taken back).
    pub(super) fn expire_waiters(&mut self, now: u64) {
        let mut late_for_stop = Vec::new();
        for room in self.rooms.values_mut() {
            if let Some(waiters) = room.waiters_mut() {
                waiters.retain(|w| {
                    let late = w.until <= now;
                    if late {
                        late_for_stop.push(w.conn);
                    }
                    !late
                });
            }
        }
        for conn in late_for_stop {
            self.refuse(conn, CLOSE_BOOT_TIMED_OUT);
        }
        let mut late = Vec::new();
        for (doc, boot) in &self.boots {
            for w in boot.waiters.iter().filter(|w| w.until <= now) {
                late.push((w.conn, doc.clone()));
            }
        }
        for (conn, _) in &late {
            self.refuse(*conn, CLOSE_BOOT_TIMED_OUT);
        }
        for (conn, doc) in late {
            if let Some(boot) = self.boots.get_mut(&doc) {
                boot.waiters.retain(|w| w.conn != conn);
                if boot.waiters.is_empty() && matches!(boot.phase, Phase::Queued) {
                    self.boots.remove(&doc);
                    self.admission.withdraw(&doc);
                }
            }
        }
    }

    /// Boots whose backoff is over call room-boot again.
    pub(super) fn retry_boots(&mut self, now: u64) {
        let due: Vec<(String, u32, u64)> = self
            .boots
            .iter()
            .filter_map(|(doc, b)| match b.phase {
                Phase::Backoff {
                    attempt,
                    deadline,
                    retry_at,
                } if retry_at <= now => Some((doc.clone(), attempt, deadline)),
                _ => None,
            })
            .collect();
        for (doc, attempt, deadline) in due {
            let phase = self.call(now, &doc, attempt, deadline);
            if let Some(b) = self.boots.get_mut(&doc) {
                b.phase = phase;
            }
        }
    }
}

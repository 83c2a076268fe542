//! The box's room table driven by byte scripts: each step's first byte picks an input —
//! a connection for one of six docs, a connection leaving (waiting or admitted), an
//! answer to a room-boot call (a grant, 503, 404, 403, a bad reply), a room start that
//! works or fails, a drain that works or fails, a room task ending (asked to or not), a
//! memory report, a stop, an operator drain of an idle room, a shutdown, time passing —
//! and the next bytes fill in which and how much. After every step the table must not
//! have panicked, must answer every connection at most once, must keep its boot slots
//! and its room count within its rules, and its connection counts must be the admitted
//! connections still open; at the end, given time, every connection is answered.
//!
//! Shared by the `table` fuzz target and `tests/tests/table_fuzz_smoke.rs` (CI).

use std::collections::{BTreeMap, BTreeSet};

use rindle_room_core::fleet::{
    BootFailure, BootGrant, BootLimits, ConnId, FlushEndpoints, Incarnation, Input, Output,
    RoomState, RoomTable, StopWhy, TableRules,
};

/// The most steps a script runs.
pub const MAX_TABLE_STEPS: usize = 500;

/// What a script reached, so the smoke test can tell the scripts mean something.
#[derive(Debug, Default)]
pub struct TableRun {
    pub admitted: usize,
    pub refused: usize,
    pub hibernated: usize,
}

fn rules() -> TableRules {
    TableRules {
        max_rooms: 4,
        boot_timeout_ms: 3_000,
        idle_evict_ms: 1_000,
        max_box_bytes: Some(5_000),
        boot: BootLimits {
            max_in_flight: 2,
            max_queued: 3,
            queue_wait_ms: 2_000,
            refused_ttl_ms: 4_000,
            max_refused: 3,
        },
    }
}

fn grant(epoch: u64) -> BootGrant {
    BootGrant {
        epoch,
        upstream_lease_token: String::from("lease"),
        upstream_ws_endpoint: None,
        upstream_affinity: None,
        scopes: None,
        flush: FlushEndpoints {
            apply: String::new(),
            claim: String::new(),
            lmids: String::new(),
            headers: Vec::new(),
        },
    }
}

/// The driver's side of the run.
#[derive(Default)]
struct Driver {
    next_conn: ConnId,
    waiting: BTreeSet<ConnId>,
    answered: BTreeSet<ConnId>,
    open: BTreeMap<ConnId, (String, Incarnation)>,
    calls: BTreeSet<String>,
    starts: BTreeMap<String, Incarnation>,
    drains: BTreeMap<String, Incarnation>,
    rooms: BTreeMap<String, Incarnation>,
    run: TableRun,
}

impl Driver {
    fn take(&mut self, t: &mut RoomTable) {
        while let Some(o) = t.poll_output() {
            match o {
                Output::CallRoomBoot { doc, timeout_ms } => {
                    assert!(timeout_ms > 0, "a call with no time");
                    assert!(self.calls.insert(doc), "two calls for one doc");
                }
                Output::StartRoom {
                    doc, incarnation, ..
                } => {
                    assert!(!self.calls.contains(&doc), "a start while a call is out");
                    assert!(
                        self.starts.insert(doc, incarnation).is_none(),
                        "two starts for one doc"
                    );
                }
                Output::Admit {
                    conn,
                    doc,
                    incarnation,
                } => {
                    assert!(self.waiting.remove(&conn), "admitted a stranger: {conn}");
                    assert!(self.answered.insert(conn), "answered twice: {conn}");
                    assert_eq!(self.rooms.get(&doc), Some(&incarnation), "to a room not up");
                    self.open.insert(conn, (doc, incarnation));
                    self.run.admitted += 1;
                }
                Output::Refuse { conn, code, reason } => {
                    assert!(self.waiting.remove(&conn), "refused a stranger: {conn}");
                    assert!(self.answered.insert(conn), "answered twice: {conn}");
                    assert!((1000..5000).contains(&code), "close code {code}");
                    assert!(
                        !reason.is_empty() && reason.len() <= 123,
                        "reason {reason:?}"
                    );
                    self.run.refused += 1;
                }
                Output::Drain { doc, incarnation } => {
                    self.drains.insert(doc, incarnation);
                }
                Output::StopRoom { doc, incarnation } => {
                    assert_eq!(
                        self.rooms.get(&doc),
                        Some(&incarnation),
                        "stop a room not up"
                    );
                }
                Output::Hibernated { .. } => self.run.hibernated += 1,
                Output::MeasureMemory | Output::Log { .. } => {}
                other => panic!("the script does not know {other:?}"),
            }
        }
    }

    fn check(&self, t: &RoomTable, r: &TableRules) {
        let (in_flight, queued) = t.boots_in_flight();
        assert!(in_flight <= r.boot.max_in_flight && queued <= r.boot.max_queued);
        let summaries = t.summaries();
        assert!(summaries.len() <= r.max_rooms, "{} rooms", summaries.len());
        assert_eq!(t.waiting(), self.waiting.len(), "waiting connections");
        for s in summaries {
            if s.state == RoomState::Booting {
                continue;
            }
            let inc = self.rooms.get(&s.doc).copied();
            let open = self
                .open
                .values()
                .filter(|(d, i)| *d == s.doc && Some(*i) == inc)
                .count();
            assert_eq!(s.connections, open, "connections of {}", s.doc);
        }
    }

    /// A room task ended: its sockets close with it.
    fn ended(&mut self, t: &mut RoomTable, now: u64, doc: String) {
        if let Some(incarnation) = self.rooms.remove(&doc) {
            self.open
                .retain(|_, (d, i)| !(*d == doc && *i == incarnation));
            t.handle(now, Input::Stopped { doc, incarnation });
        }
    }
}

fn doc(b: u8) -> String {
    format!("doc-{}", b % 6)
}

/// Runs one script; panics when the table breaks a rule.
pub fn run_table_script(data: &[u8]) -> TableRun {
    let r = rules();
    let mut t = RoomTable::new(r.clone());
    let mut d = Driver::default();
    let mut now = 0u64;
    let mut bytes = data.iter().copied();
    let mut next = move || bytes.next();
    for _ in 0..MAX_TABLE_STEPS {
        let Some(op) = next() else { break };
        let arg = next().unwrap_or(0);
        match op % 13 {
            0 | 1 => {
                d.next_conn += 1;
                d.waiting.insert(d.next_conn);
                t.handle(
                    now,
                    Input::Connect {
                        conn: d.next_conn,
                        doc: doc(arg),
                    },
                );
            }
            2 => {
                let open: Vec<ConnId> = d.open.keys().copied().collect();
                if let Some(conn) = open.get(usize::from(arg) % open.len().max(1)) {
                    let (doc, incarnation) = d.open.remove(conn).unwrap_or_default();
                    t.handle(now, Input::Disconnect { doc, incarnation });
                }
            }
            3 => {
                let waiting: Vec<ConnId> = d.waiting.iter().copied().collect();
                if let Some(conn) = waiting.get(usize::from(arg) % waiting.len().max(1)) {
                    d.waiting.remove(conn);
                    d.answered.insert(*conn);
                    t.handle(now, Input::Abandon { conn: *conn });
                }
            }
            4 | 5 => {
                if d.calls.remove(&doc(arg)) {
                    let reply = match next().unwrap_or(0) % 6 {
                        0..=2 => Ok(grant(u64::from(arg) + 1)),
                        3 => Err(BootFailure::Retryable(String::from("503"))),
                        4 => Err(BootFailure::NoRoom(String::from("404"))),
                        _ => Err(BootFailure::Refused(String::from("403"))),
                    };
                    t.handle(
                        now,
                        Input::BootReply {
                            doc: doc(arg),
                            reply,
                        },
                    );
                }
            }
            6 => {
                if let Some(incarnation) = d.starts.remove(&doc(arg)) {
                    let ok = next().unwrap_or(0) % 4 != 0;
                    if ok {
                        d.rooms.insert(doc(arg), incarnation);
                    }
                    let result = if ok {
                        Ok(())
                    } else {
                        Err(String::from("no").into())
                    };
                    t.handle(
                        now,
                        Input::Started {
                            doc: doc(arg),
                            incarnation,
                            result,
                        },
                    );
                }
            }
            7 => {
                if let Some(incarnation) = d.drains.remove(&doc(arg)) {
                    let result = if arg % 3 == 0 {
                        Err(String::from("no").into())
                    } else {
                        Ok(9)
                    };
                    t.handle(
                        now,
                        Input::Drained {
                            doc: doc(arg),
                            incarnation,
                            result,
                        },
                    );
                }
            }
            8 => d.ended(&mut t, now, doc(arg)),
            9 => {
                let retained = d
                    .rooms
                    .keys()
                    .map(|doc| (doc.clone(), u64::from(arg) * 40))
                    .collect();
                t.handle(now, Input::Memory { retained });
            }
            10 => {
                let why = if arg % 2 == 0 {
                    StopWhy::Relet
                } else {
                    StopWhy::Operator
                };
                t.handle(now, Input::Stop { doc: doc(arg), why });
            }
            11 => {
                if arg == 255 {
                    t.handle(now, Input::Shutdown);
                } else if let Some(&incarnation) = d.rooms.get(&doc(arg)) {
                    // An operator's drain of a live room.
                    t.handle(
                        now,
                        Input::Drained {
                            doc: doc(arg),
                            incarnation,
                            result: Ok(u64::from(arg)),
                        },
                    );
                }
            }
            _ => {
                let until = now + u64::from(arg) * 25;
                while let Some(at) = t.next_deadline().filter(|at| *at <= until) {
                    now = at.max(now);
                    t.handle_timeout(now);
                    d.take(&mut t);
                }
                now = until;
            }
        }
        d.take(&mut t);
        d.check(&t, &r);
    }
    // Given time, every connection is answered (rooms that stop on request end).
    for _ in 0..20 {
        if d.waiting.is_empty() {
            break;
        }
        now += 5_000;
        let up: Vec<String> = d.rooms.keys().cloned().collect();
        for doc in up {
            d.ended(&mut t, now, doc);
        }
        t.handle_timeout(now);
        d.take(&mut t);
    }
    assert!(d.waiting.is_empty(), "never answered: {:?}", d.waiting);
    d.run
}

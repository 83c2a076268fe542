//! The room table on a virtual clock: scenarios named after behaviours, and a proptest
//! over random input sequences that checks the table's invariants after every step.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use proptest::prelude::*;

use super::boots::Phase;
use super::rooms::RoomPhase;
use super::*;
use crate::fleet::boot_wire::{BootFailure, BootGrant, FlushEndpoints};

fn rules() -> TableRules {
    TableRules {
        max_rooms: 100,
        boot_timeout_ms: 10_000,
        idle_evict_ms: 4_000,
        max_box_bytes: None,
        boot: BootLimits {
            max_in_flight: 2,
            max_queued: 2,
            queue_wait_ms: 5_000,
            refused_ttl_ms: 60_000,
            max_refused: 100,
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

/// A table, a virtual clock and every output so far.
struct Sim {
    table: RoomTable,
    now: u64,
    out: Vec<Output>,
}

impl Sim {
    fn new(rules: TableRules) -> Sim {
        Sim {
            table: RoomTable::new(rules),
            now: 0,
            out: Vec::new(),
        }
    }

    fn input(&mut self, input: Input) -> Vec<Output> {
        self.table.handle(self.now, input);
        self.collect()
    }

    fn collect(&mut self) -> Vec<Output> {
        let mut got = Vec::new();
        while let Some(o) = self.table.poll_output() {
            got.push(o.clone());
            self.out.push(o);
        }
        got
    }

    /// Moves the clock to `t`, running every deadline on the way.
    fn advance_to(&mut self, t: u64) -> Vec<Output> {
        let mut got = Vec::new();
        while let Some(d) = self.table.next_deadline().filter(|d| *d <= t) {
            self.now = d.max(self.now);
            self.table.handle_timeout(self.now);
            got.extend(self.collect());
        }
        self.now = t;
        got
    }

    fn connect(&mut self, conn: ConnId, doc: &str) -> Vec<Output> {
        self.input(Input::Connect {
            conn,
            doc: doc.to_string(),
        })
    }

    /// Grants `doc`'s boot and reports its room started; its incarnation.
    fn boot(&mut self, doc: &str, epoch: u64) -> Incarnation {
        let out = self.input(Input::BootReply {
            doc: doc.to_string(),
            reply: Ok(grant(epoch)),
        });
        let incarnation = out
            .iter()
            .find_map(|o| match o {
                Output::StartRoom { incarnation, .. } => Some(*incarnation),
                _ => None,
            })
            .expect("a grant starts the room");
        self.input(Input::Started {
            doc: doc.to_string(),
            incarnation,
            result: Ok(()),
        });
        incarnation
    }
}

fn calls(out: &[Output]) -> Vec<&str> {
    out.iter()
        .filter_map(|o| match o {
            Output::CallRoomBoot { doc, .. } => Some(doc.as_str()),
            _ => None,
        })
        .collect()
}

fn refusals(out: &[Output]) -> Vec<(ConnId, u16, &str)> {
    out.iter()
        .filter_map(|o| match o {
            Output::Refuse { conn, code, reason } => Some((*conn, *code, reason.as_str())),
            _ => None,
        })
        .collect()
}

fn admitted(out: &[Output]) -> Vec<ConnId> {
    out.iter()
        .filter_map(|o| match o {
            Output::Admit { conn, .. } => Some(*conn),
            _ => None,
        })
        .collect()
}

#[test]
fn concurrent_first_connections_cause_one_boot_and_all_are_admitted() {
    let mut s = Sim::new(rules());
    let mut out = Vec::new();
    for conn in 1..=5 {
        out.extend(s.connect(conn, "a"));
    }
    assert_eq!(calls(&out), vec!["a"]);
    s.boot("a", 7);
    assert_eq!(admitted(&s.out), vec![1, 2, 3, 4, 5]);
    assert_eq!(s.table.live("a"), Some(1));
    assert_eq!(s.table.summaries()[0].connections, 5);
    assert_eq!(s.table.waiting(), 0);
}

#[test]
fn a_retryable_failure_is_retried_with_backoff_until_the_boot_timeout() {
    let mut s = Sim::new(rules());
    s.connect(1, "a");
    let fail = || Input::BootReply {
        doc: String::from("a"),
        reply: Err(BootFailure::Retryable(String::from("503"))),
    };
    s.input(fail());
    assert_eq!(
        s.table.next_deadline(),
        Some(100),
        "first retry after 100 ms"
    );
    assert_eq!(calls(&s.advance_to(100)), vec!["a"]);
    s.input(fail());
    assert_eq!(s.table.next_deadline(), Some(300), "then 200 ms");
    // The connection's own wait ends at the boot timeout.
    let mut out = Vec::new();
    while let Some(d) = s.table.next_deadline() {
        out.extend(s.advance_to(d));
        out.extend(s.input(fail()));
    }
    assert_eq!(refusals(&out), vec![(1, 1013, "room boot timed out")]);
    // 100 + 200 + … + 2,000 ms: the next retry would land past the boot timeout.
    assert_eq!(s.now, 9_100);
    assert_eq!(calls(&s.out).len(), 9, "the first call and eight retries");
}

#[test]
fn a_document_the_api_has_no_room_for_is_not_asked_again_for_the_ttl() {
    let mut s = Sim::new(rules());
    s.connect(1, "gone");
    let out = s.input(Input::BootReply {
        doc: String::from("gone"),
        reply: Err(BootFailure::NoRoom(String::from("404"))),
    });
    assert_eq!(refusals(&out), vec![(1, 4404, "no room for doc")]);
    s.advance_to(59_000);
    let out = s.connect(2, "gone");
    assert!(calls(&out).is_empty(), "cached: no call");
    assert_eq!(refusals(&out), vec![(2, 4404, "no room for doc")]);
    s.advance_to(60_000);
    assert_eq!(
        calls(&s.connect(3, "gone")),
        vec!["gone"],
        "the TTL ran out"
    );
}

#[test]
fn boots_past_the_in_flight_cap_queue_and_then_are_told_to_retry() {
    let mut s = Sim::new(rules());
    for (conn, doc) in [(1, "a"), (2, "b"), (3, "c"), (4, "d")] {
        s.connect(conn, doc);
    }
    assert_eq!(calls(&s.out), vec!["a", "b"], "two slots");
    let out = s.connect(5, "e");
    let r = refusals(&out);
    assert_eq!(r.len(), 1, "the queue holds two");
    assert!(r[0].2.contains("retry in 5 s"), "{}", r[0].2);
    // a finishes: c gets its slot.
    s.boot("a", 1);
    assert_eq!(calls(&s.out), vec!["a", "b", "c"]);
    // d waited past the queue deadline.
    let out = s.advance_to(5_000);
    assert_eq!(refusals(&out).len(), 1);
    assert_eq!(refusals(&out)[0].0, 4);
    assert!(!s.table.has_slot("d"));
}

#[test]
fn a_queued_boot_nobody_waits_for_is_taken_back() {
    let mut s = Sim::new(rules());
    for (conn, doc) in [(1, "a"), (2, "b"), (3, "c")] {
        s.connect(conn, doc);
    }
    s.input(Input::Abandon { conn: 3 });
    assert!(!s.table.has_slot("c"));
    s.boot("a", 1);
    assert_eq!(calls(&s.out), vec!["a", "b"], "c is never called");
    assert_eq!(s.table.boots_in_flight(), (1, 0));
}

#[test]
fn an_idle_room_drains_then_hibernates_and_leaves_its_record() {
    let mut s = Sim::new(rules());
    s.connect(1, "a");
    let inc = s.boot("a", 3);
    s.advance_to(1_000);
    s.input(Input::Disconnect {
        doc: String::from("a"),
        incarnation: inc,
    });
    let out = s.advance_to(4_999);
    assert!(!out.iter().any(|o| matches!(o, Output::Drain { .. })));
    let out = s.advance_to(6_000);
    assert!(out.contains(&Output::Drain {
        doc: String::from("a"),
        incarnation: inc
    }));
    let out = s.input(Input::Drained {
        doc: String::from("a"),
        incarnation: inc,
        result: Ok(42),
    });
    assert!(out.contains(&Output::StopRoom {
        doc: String::from("a"),
        incarnation: inc
    }));
    let out = s.input(Input::Stopped {
        doc: String::from("a"),
        incarnation: inc,
    });
    let record = out.iter().find_map(|o| match o {
        Output::Hibernated { record, .. } => Some(*record),
        _ => None,
    });
    assert_eq!(
        record,
        Some(HibernationRecord {
            epoch: 3,
            since_ms: 6_000,
            final_flush_seq: Some(42)
        })
    );
    assert!(!s.table.has_slot("a"));
    assert_eq!(s.table.counters().hibernations, 1);
    assert_eq!(s.table.next_deadline(), None, "nothing left to sweep");
}

#[test]
fn a_client_that_returns_during_the_drain_keeps_its_room() {
    let mut s = Sim::new(rules());
    s.connect(1, "a");
    let inc = s.boot("a", 1);
    s.input(Input::Disconnect {
        doc: String::from("a"),
        incarnation: inc,
    });
    s.advance_to(5_000);
    assert_eq!(
        admitted(&s.connect(2, "a")),
        vec![2],
        "served while it drains"
    );
    let out = s.input(Input::Drained {
        doc: String::from("a"),
        incarnation: inc,
        result: Ok(1),
    });
    assert!(!out.iter().any(|o| matches!(o, Output::StopRoom { .. })));
    assert_eq!(s.table.live("a"), Some(inc));
}

#[test]
fn a_room_that_cannot_drain_stays_up_and_is_tried_again_an_idle_period_later() {
    let mut s = Sim::new(rules());
    s.connect(1, "a");
    let inc = s.boot("a", 1);
    s.input(Input::Disconnect {
        doc: String::from("a"),
        incarnation: inc,
    });
    s.advance_to(5_000);
    let out = s.input(Input::Drained {
        doc: String::from("a"),
        incarnation: inc,
        result: Err(String::from("authority down").into()),
    });
    assert!(
        matches!(&out[0], Output::Log { level: Level::Warn, text } if text.contains("stays up"))
    );
    let out = s.advance_to(8_000);
    assert!(!out.iter().any(|o| matches!(o, Output::Drain { .. })));
    let out = s.advance_to(10_000);
    assert!(out.iter().any(|o| matches!(o, Output::Drain { .. })));
}

/// Room `a` live with connection 1, told to stop; connection 2 arrives and waits.
fn a_stopping_room_with_a_waiter() -> (Sim, Incarnation) {
    let mut s = Sim::new(rules());
    s.connect(1, "a");
    let inc = s.boot("a", 1);
    s.input(Input::Stop {
        doc: String::from("a"),
        why: StopWhy::Relet,
    });
    assert!(s.connect(2, "a").is_empty(), "waits");
    (s, inc)
}

#[test]
fn connections_that_arrive_while_a_room_stops_boot_it_again() {
    let (mut s, inc) = a_stopping_room_with_a_waiter();
    let out = s.input(Input::Stopped {
        doc: String::from("a"),
        incarnation: inc,
    });
    assert_eq!(calls(&out), vec!["a"], "a new placement");
    assert!(!out.iter().any(|o| matches!(o, Output::Hibernated { .. })));
    let inc2 = s.boot("a", 2);
    assert_ne!(inc, inc2);
    assert_eq!(admitted(&s.out), vec![1, 2]);
    // A late report about the old room changes nothing.
    s.input(Input::Disconnect {
        doc: String::from("a"),
        incarnation: inc,
    });
    s.input(Input::Stopped {
        doc: String::from("a"),
        incarnation: inc,
    });
    assert_eq!(s.table.live("a"), Some(inc2));
    assert_eq!(s.table.summaries()[0].connections, 1);
}

#[test]
fn a_connection_waiting_for_a_room_that_never_stops_is_closed_at_the_boot_timeout() {
    let (mut s, inc) = a_stopping_room_with_a_waiter();
    assert!(s.advance_to(9_999).is_empty());
    let out = s.advance_to(10_000);
    assert_eq!(refusals(&out).len(), 1);
    assert_eq!(refusals(&out)[0].0, 2);
    assert!(s.table.waiting.is_empty());
    // The room stops at last: nobody waits, so nothing boots.
    let out = s.input(Input::Stopped {
        doc: String::from("a"),
        incarnation: inc,
    });
    assert!(calls(&out).is_empty());
    assert!(s.table.next_deadline().is_none_or(|d| d >= s.now));
}

#[test]
fn the_budget_hibernates_idle_rooms_least_recently_used_first_then_refuses_boots() {
    let mut s = Sim::new(TableRules {
        max_box_bytes: Some(1_000),
        idle_evict_ms: 1_000_000,
        ..rules()
    });
    let mut inc = BTreeMap::new();
    for (conn, doc) in [(1, "a"), (2, "b"), (3, "c")] {
        s.connect(conn, doc);
        inc.insert(doc, s.boot(doc, 1));
        s.now += 10;
    }
    for doc in ["b", "a"] {
        s.input(Input::Disconnect {
            doc: doc.to_string(),
            incarnation: inc[doc],
        });
        s.now += 10;
    }
    let out = s.advance_to(2_000);
    assert!(out.contains(&Output::MeasureMemory));
    let out = s.input(Input::Memory {
        retained: vec![
            (String::from("a"), 400),
            (String::from("b"), 400),
            (String::from("c"), 500),
        ],
    });
    let drained: Vec<&str> = out
        .iter()
        .filter_map(|o| match o {
            Output::Drain { doc, .. } => Some(doc.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(drained, vec!["b"], "b went idle first; 900 fits");
    assert!(!s.table.over_budget());
    // c alone is past the budget and busy: boots are refused.
    s.input(Input::Memory {
        retained: vec![(String::from("c"), 5_000)],
    });
    assert!(s.table.over_budget());
    assert_eq!(
        refusals(&s.connect(9, "z")),
        vec![(9, 1013, "box memory budget exceeded")]
    );
    assert_eq!(
        admitted(&s.connect(10, "c")),
        vec![10],
        "live rooms still serve"
    );
}

#[test]
fn the_room_limit_refuses_new_documents_but_not_live_ones() {
    let mut s = Sim::new(TableRules {
        max_rooms: 1,
        ..rules()
    });
    s.connect(1, "a");
    s.boot("a", 1);
    let out = s.connect(2, "b");
    let r = refusals(&out);
    assert_eq!(r[0].1, 1013);
    assert!(r[0].2.contains("box room limit reached"));
    assert_eq!(admitted(&s.connect(3, "a")), vec![3]);
}

#[test]
fn a_box_shutting_down_boots_nothing_new() {
    let mut s = Sim::new(rules());
    s.input(Input::Settled);
    assert!(s.table.is_ready());
    s.input(Input::Shutdown);
    assert!(!s.table.is_ready());
    assert_eq!(
        refusals(&s.connect(1, "a")),
        vec![(1, 1001, "the box is shutting down")]
    );
}

#[test]
fn a_room_that_fails_to_start_frees_its_slot_and_refuses_its_waiters() {
    let mut s = Sim::new(rules());
    s.connect(1, "a");
    let out = s.input(Input::BootReply {
        doc: String::from("a"),
        reply: Ok(grant(1)),
    });
    let Some(Output::StartRoom { incarnation, .. }) = out.into_iter().next() else {
        panic!("starts")
    };
    let out = s.input(Input::Started {
        doc: String::from("a"),
        incarnation,
        result: Err(String::from("journal corrupt").into()),
    });
    assert_eq!(refusals(&out), vec![(1, 1013, "room boot failed")]);
    assert_eq!(s.table.boots_in_flight(), (0, 0));
    assert_eq!(s.table.counters().boot_failures, 1);
}

// ---- the proptest over input sequences --------------------------------------------

/// What a random step does.
#[derive(Clone, Debug)]
enum Step {
    Connect(u8),
    Leave(u8),
    AnswerCall(u8, u8),
    AnswerStart(u8, bool),
    AnswerDrain(u8, bool),
    FinishStop(u8),
    Memory(u16),
    Stop(u8),
    Wait(u16),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0u8..6).prop_map(Step::Connect),
        2 => any::<u8>().prop_map(Step::Leave),
        3 => (0u8..6, 0u8..5).prop_map(|(d, k)| Step::AnswerCall(d, k)),
        3 => (0u8..6, any::<bool>()).prop_map(|(d, ok)| Step::AnswerStart(d, ok)),
        2 => (0u8..6, any::<bool>()).prop_map(|(d, ok)| Step::AnswerDrain(d, ok)),
        2 => (0u8..6).prop_map(Step::FinishStop),
        1 => (0u16..2_000).prop_map(Step::Memory),
        1 => (0u8..6).prop_map(Step::Stop),
        3 => (0u16..6_000).prop_map(Step::Wait),
    ]
}

/// The driver's side: what it was asked and what it holds.
#[derive(Default)]
struct Model {
    next_conn: ConnId,
    /// Connections answered, and how.
    answered: BTreeMap<ConnId, bool>,
    /// Admitted connections still open: (doc, incarnation).
    open: BTreeMap<ConnId, (String, Incarnation)>,
    calls: BTreeSet<String>,
    starts: BTreeMap<String, Incarnation>,
    drains: BTreeMap<String, Incarnation>,
    stops: BTreeMap<String, Incarnation>,
}

fn doc(i: u8) -> String {
    alloc::format!("d{}", i % 6)
}

fn check(t: &RoomTable, m: &Model, r: &TableRules) {
    // Every waiting connection waits in exactly one place, and nowhere else.
    let mut waiters = BTreeMap::new();
    for (d, b) in &t.boots {
        for w in &b.waiters {
            assert!(waiters.insert(w.conn, d.clone()).is_none());
        }
    }
    for (d, room) in &t.rooms {
        if let RoomPhase::Stopping { waiters: ws } = &room.phase {
            for w in ws {
                assert!(waiters.insert(w.conn, d.clone()).is_none());
            }
        }
    }
    assert_eq!(waiters, t.waiting);
    for conn in t.waiting.keys() {
        assert!(!m.answered.contains_key(conn), "answered and still waiting");
    }
    assert!(t.boots.len() + t.rooms.len() <= r.max_rooms);
    // Boot slots: one per boot past the queue.
    let busy = t
        .boots
        .values()
        .filter(|b| !matches!(b.phase, Phase::Queued))
        .count();
    assert_eq!(t.admission.in_flight(), busy);
    assert!(busy <= r.boot.max_in_flight);
    assert_eq!(
        t.admission.queued(),
        t.boots.len() - busy,
        "the queue is the queued boots"
    );
    assert!(t.admission.queued() <= r.boot.max_queued);
    for (d, b) in &t.boots {
        assert!(!t.rooms.contains_key(d), "a doc has one slot");
        if matches!(b.phase, Phase::Queued) {
            assert!(!b.waiters.is_empty(), "a queued boot somebody waits for");
        }
    }
    // A room's connection count is its admitted connections still open.
    for (d, room) in &t.rooms {
        let open = m
            .open
            .values()
            .filter(|(od, oi)| od == d && *oi == room.incarnation)
            .count();
        assert_eq!(room.conns, open, "{d}");
    }
    if !t.rooms.is_empty() {
        assert!(t.next_deadline().is_some(), "a sweep is armed");
    }
}

fn run(steps: Vec<Step>) {
    let r = TableRules {
        max_rooms: 4,
        max_box_bytes: Some(2_000),
        ..rules()
    };
    let mut t = RoomTable::new(r.clone());
    let mut m = Model::default();
    let mut now = 0u64;
    for s in steps {
        match s {
            Step::Connect(d) => {
                m.next_conn += 1;
                t.handle(
                    now,
                    Input::Connect {
                        conn: m.next_conn,
                        doc: doc(d),
                    },
                );
            }
            Step::Leave(k) => {
                let waiting: Vec<ConnId> = t.waiting.keys().copied().collect();
                let open: Vec<ConnId> = m.open.keys().copied().collect();
                if k % 2 == 0 && !waiting.is_empty() {
                    let conn = waiting[k as usize % waiting.len()];
                    t.handle(now, Input::Abandon { conn });
                    m.answered.insert(conn, false);
                } else if !open.is_empty() {
                    let conn = open[k as usize % open.len()];
                    let (doc, incarnation) = m.open.remove(&conn).unwrap_or_default();
                    t.handle(now, Input::Disconnect { doc, incarnation });
                }
            }
            Step::AnswerCall(d, kind) => {
                if m.calls.remove(&doc(d)) {
                    let reply = match kind {
                        0 | 1 => Ok(grant(u64::from(kind) + 1)),
                        2 => Err(BootFailure::Retryable(String::from("503"))),
                        3 => Err(BootFailure::NoRoom(String::from("404"))),
                        _ => Err(BootFailure::Invalid(String::from("?"))),
                    };
                    t.handle(now, Input::BootReply { doc: doc(d), reply });
                }
            }
            Step::AnswerStart(d, ok) => {
                if let Some(incarnation) = m.starts.remove(&doc(d)) {
                    let result = if ok {
                        Ok(())
                    } else {
                        Err(String::from("no").into())
                    };
                    t.handle(
                        now,
                        Input::Started {
                            doc: doc(d),
                            incarnation,
                            result,
                        },
                    );
                }
            }
            Step::AnswerDrain(d, ok) => {
                if let Some(incarnation) = m.drains.remove(&doc(d)) {
                    let result = if ok {
                        Ok(5)
                    } else {
                        Err(String::from("no").into())
                    };
                    t.handle(
                        now,
                        Input::Drained {
                            doc: doc(d),
                            incarnation,
                            result,
                        },
                    );
                }
            }
            Step::FinishStop(d) => {
                if let Some(incarnation) = m.stops.remove(&doc(d)) {
                    m.open
                        .retain(|_, (od, oi)| !(*od == doc(d) && *oi == incarnation));
                    t.handle(
                        now,
                        Input::Stopped {
                            doc: doc(d),
                            incarnation,
                        },
                    );
                }
            }
            Step::Memory(bytes) => {
                let retained = t
                    .rooms
                    .keys()
                    .map(|d| (d.clone(), u64::from(bytes)))
                    .collect();
                t.handle(now, Input::Memory { retained });
            }
            Step::Stop(d) => t.handle(
                now,
                Input::Stop {
                    doc: doc(d),
                    why: StopWhy::Operator,
                },
            ),
            Step::Wait(ms) => {
                let until = now + u64::from(ms);
                while let Some(at) = t.next_deadline().filter(|at| *at <= until) {
                    assert!(at >= now, "a deadline in the past: {at} < {now}");
                    now = at;
                    t.handle_timeout(now);
                    drain(&mut t, &mut m);
                }
                now = until;
            }
        }
        drain(&mut t, &mut m);
        check(&t, &m, &r);
    }
    // Given time and answers, every connection is answered.
    for _ in 0..50 {
        if t.waiting.is_empty() {
            break;
        }
        now += 20_000;
        t.handle_timeout(now);
        drain(&mut t, &mut m);
    }
    assert!(
        t.waiting.is_empty(),
        "connections left waiting: {:?}",
        t.waiting
    );
}

fn drain(t: &mut RoomTable, m: &mut Model) {
    while let Some(o) = t.poll_output() {
        match o {
            Output::CallRoomBoot { doc, timeout_ms } => {
                assert!(timeout_ms > 0);
                assert!(m.calls.insert(doc), "one call per doc at a time");
            }
            Output::StartRoom {
                doc, incarnation, ..
            } => {
                m.calls.remove(&doc);
                m.starts.insert(doc, incarnation);
            }
            Output::Admit {
                conn,
                doc,
                incarnation,
            } => {
                assert!(m.answered.insert(conn, true).is_none(), "answered twice");
                m.open.insert(conn, (doc, incarnation));
            }
            Output::Refuse { conn, code, reason } => {
                assert!(m.answered.insert(conn, false).is_none(), "answered twice");
                assert!(code >= 1000 && !reason.is_empty() && reason.len() <= 123);
            }
            Output::Drain { doc, incarnation } => {
                m.drains.insert(doc, incarnation);
            }
            Output::StopRoom { doc, incarnation } => {
                m.stops.insert(doc, incarnation);
            }
            Output::Hibernated { doc, .. } => {
                assert!(!t.rooms.contains_key(&doc) && !t.boots.contains_key(&doc));
            }
            Output::MeasureMemory | Output::Log { .. } => {}
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn the_table_keeps_its_invariants_over_random_input_sequences(
        steps in proptest::collection::vec(step(), 1..120)
    ) {
        run(steps);
    }
}

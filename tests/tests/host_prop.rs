//! The room host under random input sequences (proptest): clients that connect, push,
//! stall and leave; upstream batches and drops; time passing; journal failures and
//! holds; authority outages; kill-and-reboot from the journal. After every step:
//!
//! - nothing panicked (the harness also fails on a frame for an unknown connection);
//! - every lmid a client saw is durable: acks never run ahead of the journal;
//! - no frame goes to a connection after its close (nothing from a dead incarnation);
//! - a stalled socket never holds more unread live bytes than the send budget — past
//!   it, it was cut;
//! - after a reboot, the room holds exactly the applied mutations the journal holds
//!   (and those the authority committed), each once.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use rindle_room_core::host::{ControlRequest, Outcome};
use rindle_room_tests::pair::*;
use serde_json::json;

const CLIENTS: [(&str, &str); 3] = [("A", "alice"), ("B", "bob"), ("C", "carol")];
const BUDGET: usize = 3_000;

#[derive(Clone, Debug)]
enum Action {
    Connect(usize),
    Push(usize, u8),
    Disconnect(usize),
    Stall(usize, bool),
    Upstream(u8),
    DropUpstream,
    Advance(u16),
    JournalFail(bool),
    JournalHold(bool),
    AuthorityDown(bool),
    Reboot,
    Drain,
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => (0..3usize).prop_map(Action::Connect),
        6 => (0..3usize, 0..4u8).prop_map(|(c, m)| Action::Push(c, m)),
        1 => (0..3usize).prop_map(Action::Disconnect),
        1 => (0..3usize, any::<bool>()).prop_map(|(c, s)| Action::Stall(c, s)),
        2 => (0..20u8).prop_map(Action::Upstream),
        1 => Just(Action::DropUpstream),
        4 => (0..3000u16).prop_map(Action::Advance),
        1 => any::<bool>().prop_map(Action::JournalFail),
        1 => any::<bool>().prop_map(Action::JournalHold),
        1 => any::<bool>().prop_map(Action::AuthorityDown),
        1 => Just(Action::Reboot),
        1 => Just(Action::Drain),
    ]
}

/// What the test remembers across reboots.
#[derive(Default)]
struct Model {
    /// The connection of each client, while one is open.
    conns: BTreeMap<usize, u64>,
    /// The next mid of each client.
    next_mid: BTreeMap<usize, u64>,
    /// Every (client, mid) ever made durable by an append.
    durable: BTreeSet<(String, u64)>,
    /// The next unique tally id.
    next_tally: u64,
}

fn options(authority: bool, ack_after_flush: bool, group_commit_ms: u64) -> Options {
    Options {
        authority,
        ack_after_flush,
        send_budget: BUDGET,
        group_commit_ms,
        ..Options::default()
    }
}

fn step(p: &mut Pair, m: &mut Model, a: &Action, o: &Options) {
    match a {
        Action::Connect(i) => {
            if m.conns.contains_key(i) {
                return;
            }
            let (client, sub) = CLIENTS[*i];
            let c = p.connect();
            p.send(c, &format!(r#"{{"t":"init","clientID":"{client}"}}"#));
            p.send(
                c,
                r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid"}"#,
            );
            let tok = p.token(NOTES, sub, 600_000);
            p.send(c, &subscribe_frame(1, &tok));
            m.conns.insert(*i, c);
        }
        Action::Push(i, kind) => {
            let Some(&c) = m.conns.get(i) else { return };
            let mid = m.next_mid.entry(*i).or_insert(1);
            let (name, args) = match kind {
                0 | 1 => {
                    m.next_tally += 1;
                    ("tally", format!(r#"{{"id":{0},"mid":{0}}}"#, m.next_tally))
                }
                2 => (
                    "addNote",
                    format!(r#"{{"id":{},"body":"b"}}"#, 1000 + m.next_tally),
                ),
                _ => ("refuse", String::from("{}")),
            };
            p.send(c, &push(CLIENTS[*i].0, *mid, name, &args));
            *mid += 1;
        }
        Action::Disconnect(i) => {
            if let Some(c) = m.conns.remove(i) {
                if p.clients.contains_key(&c) {
                    p.disconnect(c);
                }
            }
        }
        Action::Stall(i, s) => {
            if let Some(&c) = m.conns.get(i) {
                p.stall(c, *s);
            }
        }
        Action::Upstream(n) => {
            let id = 100 + u64::from(*n);
            let key = ("note".to_string(), format!("[{id}]"));
            let op = match p.daemon.rows.get(&key) {
                Some(row) => json!({"table":"note","op":"remove","row":row}),
                None => json!({"table":"note","op":"add","row":[id, "x".repeat(200), "u"]}),
            };
            p.upstream(&[op]);
        }
        Action::DropUpstream => p.drop_upstream(),
        Action::Advance(ms) => p.advance(u64::from(*ms)),
        Action::JournalFail(f) => p.journal.failing = *f,
        Action::JournalHold(h) => {
            if *h {
                p.journal.hold = true;
            } else {
                p.release_journal();
            }
        }
        Action::AuthorityDown(d) => p.authority.down = *d,
        Action::Drain => {
            let _ = p.control(ControlRequest::Drain);
        }
        Action::Reboot => {
            for (c, mid) in p.durable.drain(..) {
                m.durable.insert((c, mid));
            }
            let old = std::mem::replace(p, Pair::new(o, Default::default(), Default::default()));
            let mut next = old.reboot(o);
            // The disk and the authority recover.
            next.journal.failing = false;
            next.authority.down = false;
            *p = next;
            p.start();
            m.conns.clear();
            check_exactly_once(p);
        }
    }
}

/// After a reboot (live, nothing in flight): the tally rows are exactly the journal's
/// applied tally entries.
fn check_exactly_once(p: &mut Pair) {
    if !p.host.is_live() {
        return;
    }
    let journaled: BTreeSet<u64> = p
        .journal
        .entries
        .iter()
        .filter(|e| e.name == "tally" && e.outcome == Outcome::Applied)
        .filter_map(|e| serde_json::from_str::<serde_json::Value>(&e.args).ok()?["id"].as_u64())
        .collect();
    // What the authority committed reaches the daemon's snapshot (a flush may carry a
    // mutation whose append later failed: the authority's ledger then holds its mid,
    // so the client's re-send is a dedup — still exactly once).
    let committed: BTreeSet<u64> = p
        .daemon
        .rows
        .iter()
        .filter(|((t, _), _)| t == "tally")
        .filter_map(|(_, row)| row[0].as_u64())
        .collect();
    let journaled: BTreeSet<u64> = journaled.union(&committed).copied().collect();
    let room = p.host.room().expect("live");
    let rows: Vec<u64> = room
        .rows("tally")
        .iter()
        .filter_map(|r| match r.get(0) {
            rindle_room_core::value::CellRef::Num(n) => Some(n as u64),
            _ => None,
        })
        .collect();
    let unique: BTreeSet<u64> = rows.iter().copied().collect();
    assert_eq!(unique.len(), rows.len(), "a tally row twice");
    assert_eq!(
        unique, journaled,
        "the room holds exactly the journaled tallies"
    );
}

fn check_invariants(p: &Pair, m: &mut Model, ack_after_flush: bool) {
    for (c, mid) in &p.durable {
        m.durable.insert((c.clone(), *mid));
    }
    for (conn, client) in &p.clients {
        assert_eq!(
            client.after_close, 0,
            "a frame after connection {conn} closed"
        );
        let unread: usize = client
            .unread
            .iter()
            .filter(|(_, class)| *class != rindle_room_core::host::SendClass::Snapshot)
            .map(|(t, _)| t.len())
            .sum();
        assert!(
            unread <= BUDGET || client.closed.is_some(),
            "connection {conn} holds {unread} unread bytes without being cut"
        );
        for f in &client.frames {
            if let Some((who, lmid)) = lmid_of(f) {
                // Durable: appended to the journal, or committed by the authority (a
                // room fetches a writer's lmid it has no journal entries for).
                let key = (
                    "_rindle_client_mutations".to_string(),
                    format!("[\"{who}\"]"),
                );
                let committed = p
                    .authority
                    .rows
                    .get(&key)
                    .map_or(0, |r| r[1].as_u64().unwrap());
                let durable_max = m
                    .durable
                    .iter()
                    .filter(|(c, _)| *c == who)
                    .map(|(_, mid)| *mid)
                    .max()
                    .unwrap_or(0)
                    .max(committed);
                assert!(
                    lmid <= durable_max,
                    "{who} saw lmid {lmid}, but only {durable_max} is durable"
                );
            }
        }
        if ack_after_flush {
            released_lmids_are_committed(p, client);
        }
    }
}

/// `ack = "flushed"`: an lmid frame released by a progress frame is one the authority
/// has committed (its ledger row only grows, so checking after every step suffices).
fn released_lmids_are_committed(p: &Pair, client: &rindle_room_tests::pair::Client) {
    let mut held: Vec<(i64, String, u64)> = Vec::new();
    for f in &client.frames {
        if let Some((who, lmid)) = lmid_of(f) {
            held.push((f["batch"]["cv"].as_i64().unwrap(), who, lmid));
        } else if f["t"] == "progress" {
            let cv_min = f["frame"]["cvMin"].as_i64().unwrap();
            for (_, who, lmid) in held.iter().filter(|(cv, ..)| *cv <= cv_min) {
                let key = (
                    "_rindle_client_mutations".to_string(),
                    format!("[\"{who}\"]"),
                );
                let committed = p
                    .authority
                    .rows
                    .get(&key)
                    .map_or(0, |r| r[1].as_u64().unwrap());
                assert!(
                    *lmid <= committed,
                    "{who}'s lmid {lmid} was released, the authority holds {committed}"
                );
            }
            held.retain(|(cv, ..)| *cv > cv_min);
        }
    }
}

/// `ack = "flushed"`, liveness: once the disk and the authority are healthy and every
/// connection reads, every lmid frame a connection got is released by a later progress
/// frame — an ack may wait for the flush, never for the next write.
fn acks_come_through(p: &mut Pair, m: &Model) {
    p.journal.failing = false;
    p.authority.down = false;
    p.release_journal();
    for &c in m.conns.values() {
        if p.clients.contains_key(&c) {
            p.stall(c, false);
        }
    }
    p.advance(10_000);
    if !p.host.is_live() {
        return;
    }
    for (conn, client) in &p.clients {
        if client.closed.is_some() {
            continue;
        }
        let mut last_lmid: Option<(i64, u64)> = None;
        let mut released = i64::MIN;
        for f in &client.frames {
            if let Some((_, lmid)) = lmid_of(f) {
                last_lmid = Some((f["batch"]["cv"].as_i64().unwrap(), lmid));
            } else if f["t"] == "progress" {
                released = released.max(f["frame"]["cvMin"].as_i64().unwrap());
            }
        }
        if let Some((cv, lmid)) = last_lmid {
            assert!(
                released >= cv,
                "connection {conn}: lmid {lmid} (cv {cv}) never released (progress {released}) \
                 with the disk and the authority healthy"
            );
        }
    }
}

fn run(actions: &[Action], authority: bool, ack_after_flush: bool, group_commit_ms: u64) {
    let o = options(authority, ack_after_flush, group_commit_ms);
    let mut p = Pair::live(&o);
    let mut m = Model::default();
    for a in actions {
        step(&mut p, &mut m, a, &o);
        check_invariants(&p, &mut m, ack_after_flush);
    }
    if ack_after_flush {
        acks_come_through(&mut p, &m);
        check_invariants(&p, &mut m, ack_after_flush);
    }
    // Finally: heal everything, reboot, and check the journal's story once more.
    p.journal.failing = false;
    p.release_journal();
    step(&mut p, &mut m, &Action::Reboot, &o);
}

/// Cases per property unless `PROPTEST_CASES` says otherwise (a soak).
const DEFAULT_CASES: u32 = 96;

fn config() -> ProptestConfig {
    let cases = rindle_room_tests::proptest_cases(DEFAULT_CASES);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_sessions_keep_the_host_invariants(actions in prop::collection::vec(action(), 1..60)) {
        run(&actions, false, false, 5);
    }

    #[test]
    fn random_sessions_with_an_authority_keep_the_host_invariants(
        actions in prop::collection::vec(action(), 1..60)
    ) {
        run(&actions, true, false, 5);
    }

    /// Group-commit windows shorter and longer than the flush debounce (20 ms): with the
    /// longer one, appends are made after the flush that carried their mutations.
    #[test]
    fn random_sessions_acking_after_the_flush_release_only_committed_lmids_and_all_of_them(
        actions in prop::collection::vec(action(), 1..60),
        group_commit_ms in prop_oneof![Just(5u64), Just(60u64)],
    ) {
        run(&actions, true, true, group_commit_ms);
    }
}

//! The room host under random input sequences (proptest): clients that connect, push,
//! stall and leave; upstream batches and drops; time passing; journal failures and
//! holds; authority outages; kill-and-reboot from the journal, and graceful restarts (a
//! shutdown, which stops within its drain's deadline, then the reboot). After every step:
//!
//! - nothing panicked (the harness also fails on a frame for an unknown connection);
//! - every lmid a client saw is durable: acks never run ahead of the journal;
//! - no frame goes to a connection after its close (nothing from a dead incarnation);
//! - a stalled socket never holds more unread live bytes than the send budget — past
//!   it, it was cut;
//! - after a reboot, the room holds exactly the applied mutations the journal holds
//!   (and those the authority committed), each once — an insert per `tally` and one
//!   `+` appended to the writer's counter note per `bump` (a mutation that is not
//!   idempotent: a second run, or a lost one, shows).
//!
//! And at the end of a sequence, once the disk and the authority are healthy (liveness):
//!
//! - with `ack = "flushed"`, every lmid frame is released by a progress frame;
//! - every drain asked of the incarnation is answered;
//! - on a live room, every push on a connection still open is answered there; with an
//!   authority, nothing is left dirty or pending and every journaled mutation is
//!   covered by the authority's ledger;
//! - after a reboot, a client that reconnects and re-sends what it pushed gets an lmid
//!   covering every push; with an authority, its ledger row reaches the authority and
//!   the room is left with nothing dirty or pending.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use rindle_room_core::host::{ControlReply, ControlRequest, Outcome};
use rindle_room_tests::pair::*;
use serde_json::json;

const CLIENTS: [(&str, &str); 3] = [("A", "alice"), ("B", "bob"), ("C", "carol")];
const BUDGET: usize = 3_000;
/// The first of the clients' counter notes (one each; `bump` appends a `+` to its body).
const COUNTER: u64 = 5_000;

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
    /// A graceful restart: a shutdown (its drain, its wait for echoes), then the reboot.
    Restart,
    Drain,
    /// Another placement claims the doc (the authority's epoch moves on): this room's
    /// next flush is fenced.
    Fence,
    /// Someone else adds, at the authority, the note the next `addNote` will add: the
    /// room's flush of it CAS-conflicts.
    ForeignAdd,
    /// The daemon falls behind the authority (its snapshots lack what is committed from
    /// now on, and no echo comes), or catches up. It catches up by itself after
    /// [`MAX_LAG_MS`].
    DaemonLag(bool),
    /// The open upstream link goes dark (a partition: nothing crosses, not even a
    /// pong); the room must take it as dead and reconnect.
    UpstreamDark,
    /// A client's socket goes dark: it answers no ping and sends nothing more.
    ClientDark(usize),
}

/// The longest a daemon lags in these sessions (well under the echo wait, past which a
/// committed flush is confirmed without its echo).
const MAX_LAG_MS: u64 = 10_000;

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        3 => (0..3usize).prop_map(Action::Connect),
        6 => (0..3usize, 0..5u8).prop_map(|(c, m)| Action::Push(c, m)),
        1 => (0..3usize).prop_map(Action::Disconnect),
        1 => (0..3usize, any::<bool>()).prop_map(|(c, s)| Action::Stall(c, s)),
        2 => (0..20u8).prop_map(Action::Upstream),
        1 => Just(Action::DropUpstream),
        4 => (0..3000u16).prop_map(Action::Advance),
        1 => any::<bool>().prop_map(Action::JournalFail),
        1 => any::<bool>().prop_map(Action::JournalHold),
        1 => any::<bool>().prop_map(Action::AuthorityDown),
        1 => Just(Action::Reboot),
        1 => Just(Action::Restart),
        1 => Just(Action::Drain),
        1 => Just(Action::Fence),
        1 => Just(Action::ForeignAdd),
        1 => any::<bool>().prop_map(Action::DaemonLag),
        1 => Just(Action::UpstreamDark),
        1 => (0..3usize).prop_map(Action::ClientDark),
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
    /// Every push of each client, `(mid, name, args)`: what it re-sends on reconnect.
    pushes: BTreeMap<usize, Vec<(u64, &'static str, String)>>,
    /// The highest lmid each client has seen released, on any connection.
    seen_lmid: BTreeMap<usize, u64>,
    /// The last mid pushed on each open connection.
    last_push_on: BTreeMap<u64, u64>,
    /// Drains asked of this incarnation, and how many it answered at once.
    drains_asked: usize,
    drains_answered: usize,
    /// Since when the daemon lags.
    lag_since: Option<u64>,
}

fn options(authority: bool, ack_after_flush: bool, group_commit_ms: u64) -> Options {
    Options {
        authority,
        ack_after_flush,
        send_budget: BUDGET,
        group_commit_ms,
        // Short enough that sessions reach them (steps advance up to 3 s).
        upstream_silence_timeout_ms: 6_000,
        silence_timeout_ms: 9_000,
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
            // As a client does on every connect: re-send what is not acknowledged yet.
            let seen = m.seen_lmid.get(i).copied().unwrap_or(0);
            let pending: Vec<_> = m
                .pushes
                .get(i)
                .into_iter()
                .flatten()
                .filter(|(mid, ..)| *mid > seen)
                .cloned()
                .collect();
            for (mid, name, args) in pending {
                p.send(c, &push(client, mid, name, &args));
                m.last_push_on.insert(c, mid);
            }
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
                3 => ("refuse", String::from("{}")),
                // Not idempotent: a second run of one mid shows as a second `+`.
                _ => ("bump", format!(r#"{{"id":{}}}"#, COUNTER + *i as u64)),
            };
            // A dark socket's frames never arrive: the client re-sends on its next
            // connection.
            if !p.clients.get(&c).is_some_and(|cl| cl.dark) {
                p.send(c, &push(CLIENTS[*i].0, *mid, name, &args));
                m.last_push_on.insert(c, *mid);
            }
            m.pushes.entry(*i).or_default().push((*mid, name, args));
            *mid += 1;
        }
        Action::Disconnect(i) => {
            if let Some(c) = m.conns.remove(i) {
                m.last_push_on.remove(&c);
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
        Action::UpstreamDark => p.daemon.dark = true,
        Action::ClientDark(i) => {
            if let Some(c) = m.conns.get(i).and_then(|c| p.clients.get_mut(c)) {
                c.dark = true;
            }
        }
        Action::Advance(ms) => {
            p.advance(u64::from(*ms));
            if m.lag_since.is_some_and(|t| p.now >= t + MAX_LAG_MS) {
                m.lag_since = None;
                p.catch_up_daemon();
            }
        }
        Action::DaemonLag(true) => {
            if m.lag_since.is_none() {
                m.lag_since = Some(p.now);
                p.daemon.lagging = true;
            }
        }
        Action::DaemonLag(false) => {
            m.lag_since = None;
            p.catch_up_daemon();
        }
        Action::JournalFail(f) => p.journal.failing = *f,
        Action::JournalHold(h) => {
            if *h {
                p.journal.hold = true;
            } else {
                p.release_journal();
            }
        }
        Action::AuthorityDown(d) => p.authority.down = *d,
        Action::Fence => p.authority.epoch += 1,
        Action::ForeignAdd => {
            let id = 1000 + m.next_tally;
            let key = ("note".to_string(), format!("[{id}]"));
            let row = json!([id, "foreign", "z"]);
            if !p.authority.rows.contains_key(&key) {
                p.authority.rows.insert(key.clone(), row.clone());
                p.daemon.rows.insert(key, row);
            }
        }
        Action::Drain => {
            m.drains_asked += 1;
            if p.control(ControlRequest::Drain).is_some() {
                m.drains_answered += 1;
            }
        }
        Action::Restart => {
            if p.stopped.is_none() {
                let _ = p.control(ControlRequest::Shutdown);
                // A shutdown closes anyway once its drain's deadline (10 s) passes.
                let deadline = p.now + SHUTDOWN_BOUND_MS;
                while p.stopped.is_none() && p.now < deadline {
                    p.advance(100);
                }
                assert!(
                    p.stopped.is_some(),
                    "a shutdown stops within {SHUTDOWN_BOUND_MS} ms: {:#?}",
                    &p.logs[p.logs.len().saturating_sub(20)..]
                );
            }
            reboot(p, m, o);
        }
        Action::Reboot => reboot(p, m, o),
    }
}

/// The longest a shutdown may take: its drain's deadline, and a margin.
const SHUTDOWN_BOUND_MS: u64 = 12_000;

/// The process dies (or has stopped) and a new one boots on the same journal and
/// authority; the disk and the authority recover.
fn reboot(p: &mut Pair, m: &mut Model, o: &Options) {
    for (c, mid) in p.durable.drain(..) {
        m.durable.insert((c, mid));
    }
    let old = std::mem::replace(p, Pair::new(o, Default::default(), Default::default()));
    let mut next = old.reboot(o);
    // The disk and the authority recover.
    next.journal.failing = false;
    next.authority.down = false;
    *p = next;
    // The new pair's clock starts over; a lag goes on from there.
    if m.lag_since.is_some() {
        m.lag_since = Some(p.now);
    }
    p.start();
    m.conns.clear();
    m.last_push_on.clear();
    m.drains_asked = 0;
    m.drains_answered = 0;
    check_exactly_once(p, m);
}

/// After a reboot (live, nothing in flight): the tally rows are exactly the journal's
/// applied tally entries.
fn check_exactly_once(p: &mut Pair, m: &Model) {
    if !p.host.is_live() {
        return;
    }
    bumps_ran_once(p, m);
    let journaled: BTreeSet<u64> = p
        .journal
        .entries
        .iter()
        .filter(|e| e.name == "tally" && e.outcome == Outcome::Applied)
        .filter_map(|e| serde_json::from_str::<serde_json::Value>(&e.args).ok()?["id"].as_u64())
        .collect();
    // What the authority committed is in the head, whether or not the daemon's snapshot
    // has it yet (a flush may carry a mutation whose append later failed: the
    // authority's ledger then holds its mid, so the client's re-send is a dedup — still
    // exactly once).
    let committed: BTreeSet<u64> = p
        .authority
        .rows
        .iter()
        .filter(|((t, _), _)| t == "tally")
        .filter_map(|(_, row)| row[0].as_u64())
        .collect();
    let journaled: BTreeSet<u64> = journaled.union(&committed).copied().collect();
    let rows = room_ids(p, "tally");
    let unique: BTreeSet<u64> = rows.iter().copied().collect();
    assert_eq!(unique.len(), rows.len(), "a tally row twice");
    assert_eq!(
        unique, journaled,
        "the room holds exactly the journaled tallies"
    );
}

/// After a reboot (live): each client's counter holds one `+` per distinct `bump` mid
/// that is journaled as applied or that the authority's ledger covers (a bump always
/// applies) — a mid run twice would show as one more.
fn bumps_ran_once(p: &Pair, m: &Model) {
    let room = p.host.room().expect("live");
    for (i, (who, _)) in CLIENTS.iter().enumerate() {
        let committed = committed_lmid(p, who);
        let mut expected: BTreeSet<u64> = (m.pushes.get(&i).into_iter().flatten())
            .filter(|(mid, name, _)| *name == "bump" && *mid <= committed)
            .map(|(mid, ..)| *mid)
            .collect();
        expected.extend(
            (p.journal.entries.iter())
                .filter(|e| e.client_id == *who && e.name == "bump")
                .filter(|e| e.outcome == Outcome::Applied)
                .map(|e| e.mid),
        );
        let id = (COUNTER + i as u64) as f64;
        let rows = room.rows("note");
        let row = (rows.iter())
            .find(|r| matches!(r.get(0), rindle_room_core::value::CellRef::Num(n) if n == id))
            .expect("the counter notes stay");
        let rindle_room_core::value::CellRef::Str(body) = row.get(1) else {
            panic!("a counter's body is text");
        };
        assert_eq!(
            body.len(),
            expected.len(),
            "{who}'s counter reads {body:?}; bump mids applied: {expected:?}"
        );
    }
}

/// A live pair whose daemon and authority also hold the clients' counter notes.
fn live_pair(o: &Options) -> Pair {
    let mut p = Pair::new(o, Default::default(), Default::default());
    for i in 0..CLIENTS.len() as u64 {
        p.seed_row("note", json!([COUNTER + i, "", "u"]));
    }
    p.start();
    assert!(p.host.is_live());
    p
}

/// What each client counts as acknowledged: an lmid frame a progress frame released
/// (the client applies a batch once a `progress` covers its cv).
fn note_acks(p: &Pair, m: &mut Model) {
    for (&i, c) in &m.conns {
        let Some(client) = p.clients.get(c) else {
            continue;
        };
        let who = CLIENTS[i].0;
        let released = client
            .frames
            .iter()
            .filter(|f| f["t"] == "progress")
            .filter_map(|f| f["frame"]["cvMin"].as_i64())
            .max()
            .unwrap_or(i64::MIN);
        for f in &client.frames {
            if let Some((w, lmid)) = lmid_of(f) {
                if w == who && f["batch"]["cv"].as_i64().is_some_and(|cv| cv <= released) {
                    let seen = m.seen_lmid.entry(i).or_insert(0);
                    *seen = (*seen).max(lmid);
                }
            }
        }
    }
}

fn check_invariants(p: &Pair, m: &mut Model, ack_after_flush: bool) {
    note_acks(p, m);
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

/// Whether the room serves as the doc's placement: live, not stopped, not moved (a
/// fenced room owes its flushes to nobody; its journal does, at the next boot).
fn serving(p: &Pair) -> bool {
    p.host.is_live() && !p.host.is_moved() && !p.host.is_stopped()
}

/// A fenced room (`ack = "journaled"`): every mutation its client saw acknowledged that
/// the authority's ledger does not cover was reported stranded — never dropped
/// silently. (One journaled but never acknowledged — its incarnation died first — is
/// owed to nobody: the client re-sends it, and the journal replays it at the doc's next
/// boot here.)
fn fenced_rooms_report_what_they_owe(p: &Pair, m: &Model, ack_after_flush: bool) {
    if !p.host.is_moved() {
        return;
    }
    let stranded: BTreeSet<(String, u64)> = (p.stranded.iter())
        .map(|s| (s.client_id.clone(), s.mid))
        .collect();
    if ack_after_flush {
        assert!(
            stranded.is_empty(),
            "with ack = flushed nothing is stranded: {stranded:?}"
        );
        return;
    }
    for (i, (who, _)) in CLIENTS.iter().enumerate() {
        let acked = m.seen_lmid.get(&i).copied().unwrap_or(0);
        for mid in committed_lmid(p, who) + 1..=acked {
            assert!(
                stranded.contains(&(who.to_string(), mid)),
                "{who}'s mid {mid} was acknowledged, is not at the authority, and was not \
                 reported stranded: {stranded:?}"
            );
        }
    }
}

/// The disk and the authority recover, every connection reads again, and ten seconds
/// pass.
fn heal(p: &mut Pair, m: &mut Model) {
    p.journal.failing = false;
    p.authority.down = false;
    m.lag_since = None;
    p.catch_up_daemon();
    p.release_journal();
    for &c in m.conns.values() {
        if p.clients.contains_key(&c) {
            p.stall(c, false);
        }
    }
    p.advance(10_000);
}

/// The numeric first cells of the live room's rows of `table`.
fn room_ids(p: &Pair, table: &str) -> Vec<u64> {
    let room = p.host.room().expect("live");
    room.rows(table)
        .iter()
        .filter_map(|r| match r.get(0) {
            rindle_room_core::value::CellRef::Num(n) => Some(n as u64),
            _ => None,
        })
        .collect()
}

/// Liveness (after [`heal`]): a live room holds the daemon's rows. Only the daemon writes
/// notes 100–119 (`Action::Upstream`), so the room has each exactly when the daemon has
/// it: a room that missed a batch — a link gone dark and never taken as dead, say — does
/// not.
fn the_room_follows_the_daemon(p: &Pair) {
    if !serving(p) {
        return;
    }
    let mut in_room: Vec<u64> = room_ids(p, "note")
        .into_iter()
        .filter(|id| (100..120).contains(id))
        .collect();
    in_room.sort_unstable();
    let at_daemon: Vec<u64> = p
        .daemon
        .rows
        .iter()
        .filter(|((t, _), _)| t == "note")
        .filter_map(|(_, row)| row[0].as_u64())
        .filter(|id| (100..120).contains(id))
        .collect();
    assert_eq!(
        in_room, at_daemon,
        "the room's upstream notes against the daemon's"
    );
}

/// `ack = "flushed"`, liveness (after [`heal`]): every lmid frame a connection got is
/// released by a later progress frame — an ack may wait for the flush, never for the
/// next write.
fn acks_come_through(p: &Pair) {
    if !serving(p) {
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

/// Liveness (after [`heal`]): every drain asked of this incarnation was answered — done,
/// or the error that says it could not quiesce — whether or not the room is still live.
fn drains_are_answered(p: &Pair, m: &Model) {
    let later = p
        .replies
        .values()
        .filter(|r| matches!(r, ControlReply::Drained(_)))
        .count();
    assert_eq!(
        m.drains_answered + later,
        m.drains_asked,
        "drains asked and answered, with the disk and the authority healthy"
    );
}

/// The highest lmid of `who` a connection got (released or not; 0: none).
fn newest_lmid(client: &rindle_room_tests::pair::Client, who: &str) -> u64 {
    (client.frames.iter().filter_map(lmid_of))
        .filter(|(w, _)| w == who)
        .map(|(_, lmid)| lmid)
        .max()
        .unwrap_or(0)
}

/// The authority's lmid of `who` (0 without a ledger row).
fn committed_lmid(p: &Pair, who: &str) -> u64 {
    let key = (
        "_rindle_client_mutations".to_string(),
        format!("[\"{who}\"]"),
    );
    p.authority
        .rows
        .get(&key)
        .map_or(0, |r| r[1].as_u64().unwrap())
}

/// Liveness (after [`heal`]): on a live room, every push on a connection still open is
/// answered there — a client does not re-send on a socket it still holds. The answer
/// is an lmid covering the connection's last push or, with `ack = "journaled"`, the
/// refusal of a gap: a writer whose first frames waited out an authority outage is
/// served from the room's own ledger (which, after a compacted journal, may not know
/// it), its next mid refused as a gap — an error it sees, never a silent loss; its
/// reconnect sets it right (checked at the end, [`pending_writes_are_answered`]). With
/// `ack = "flushed"` such a writer's mutations close its socket instead (1013).
fn pushes_on_open_connections_are_answered(p: &Pair, m: &Model, ack_after_flush: bool) {
    if !serving(p) {
        return;
    }
    for (&i, &c) in &m.conns {
        let (Some(client), Some(&last)) = (p.clients.get(&c), m.last_push_on.get(&c)) else {
            continue;
        };
        if client.closed.is_some() {
            continue;
        }
        let who = CLIENTS[i].0;
        let seen = newest_lmid(client, who);
        let gap = !ack_after_flush
            && client.frames.iter().any(|f| {
                f["t"] == "error"
                    && f["message"]
                        .as_str()
                        .is_some_and(|t| t.starts_with(&format!("mutation gap for {who}:")))
            });
        assert!(
            seen >= last || gap,
            "{who} pushed mid {last} on open connection {c}, its lmid there reads {seen}"
        );
    }
}

/// Liveness with an authority (after [`heal`]): a live room has flushed everything —
/// nothing dirty or pending, and every mutation an append ever made durable is covered
/// by its client's ledger row at the authority (nothing a fence could strand).
fn journal_reaches_the_authority(p: &Pair, m: &Model) {
    let Some(room) = p.host.room().filter(|_| serving(p)) else {
        return;
    };
    assert_eq!(
        (room.dirty_len(), room.pending_len()),
        (0, 0),
        "dirty keys and pending mutations left with the authority healthy"
    );
    for (who, mid) in &m.durable {
        let committed = committed_lmid(p, who);
        assert!(
            committed >= *mid,
            "{who}'s mid {mid} is journaled, the authority's ledger holds {committed}"
        );
    }
}

/// Liveness, on a freshly rebooted room: every client reconnects (re-sending what it has
/// not seen acknowledged); ten seconds later each client's newest lmid covers its last push. With an
/// authority, every client's ledger row there covers it too, and the room has nothing
/// dirty or pending — nothing a fence could strand.
fn pending_writes_are_answered(p: &mut Pair, m: &mut Model, o: &Options) {
    assert!(p.host.is_live(), "the rebooted room is live: {:?}", p.logs);
    let pushes = m.pushes.clone();
    for &i in pushes.keys() {
        step(p, m, &Action::Disconnect(i), o);
        step(p, m, &Action::Connect(i), o);
    }
    p.advance(10_000);
    for (&i, sent) in &pushes {
        let who = CLIENTS[i].0;
        let last = sent.last().map_or(0, |(mid, ..)| *mid);
        let client = &p.clients[&m.conns[&i]];
        assert_eq!(client.closed, None, "{who}'s new connection was closed");
        let seen = newest_lmid(client, who);
        assert!(
            seen >= last,
            "{who} pushed up to mid {last}, its lmid reads {seen}"
        );
        if o.authority {
            let committed = committed_lmid(p, who);
            assert!(
                committed >= last,
                "{who} pushed up to mid {last}, the authority's ledger holds {committed}"
            );
        }
    }
    if o.authority {
        journal_reaches_the_authority(p, m);
    }
}

fn run(actions: &[Action], authority: bool, ack_after_flush: bool, group_commit_ms: u64) {
    let o = options(authority, ack_after_flush, group_commit_ms);
    let mut p = live_pair(&o);
    let mut m = Model::default();
    for a in actions {
        step(&mut p, &mut m, a, &o);
        check_invariants(&p, &mut m, ack_after_flush);
    }
    heal(&mut p, &mut m);
    check_invariants(&p, &mut m, ack_after_flush);
    the_room_follows_the_daemon(&p);
    if ack_after_flush {
        acks_come_through(&p);
    }
    drains_are_answered(&p, &m);
    fenced_rooms_report_what_they_owe(&p, &m, ack_after_flush);
    pushes_on_open_connections_are_answered(&p, &m, ack_after_flush);
    if authority {
        journal_reaches_the_authority(&p, &m);
    }
    // Finally: reboot, check the journal's story once more, and let every client come
    // back for what it pushed.
    step(&mut p, &mut m, &Action::Reboot, &o);
    pending_writes_are_answered(&mut p, &mut m, &o);
    check_invariants(&p, &mut m, ack_after_flush);
    if ack_after_flush {
        acks_come_through(&p);
    }
}

/// The longest sequence, exclusive: 60 unless `HOST_PROP_STEPS` says otherwise (a soak
/// of longer sessions).
fn max_steps() -> usize {
    std::env::var("HOST_PROP_STEPS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n >= 2)
        .unwrap_or(60)
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
    fn random_sessions_keep_the_host_invariants(actions in prop::collection::vec(action(), 1..max_steps())) {
        run(&actions, false, false, 5);
    }

    #[test]
    fn random_sessions_with_an_authority_keep_the_host_invariants(
        actions in prop::collection::vec(action(), 1..max_steps())
    ) {
        run(&actions, true, false, 5);
    }

    /// Group-commit windows shorter and longer than the flush debounce (20 ms): with the
    /// longer one, appends are made after the flush that carried their mutations.
    #[test]
    fn random_sessions_acking_after_the_flush_release_only_committed_lmids_and_all_of_them(
        actions in prop::collection::vec(action(), 1..max_steps()),
        group_commit_ms in prop_oneof![Just(5u64), Just(60u64)],
    ) {
        run(&actions, true, true, group_commit_ms);
    }
}

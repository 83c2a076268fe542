//! Crash-replay equivalence: the boot and mutation paths of the published room's Node shell
//! (docs/design/authority.md, "Placement epochs and drain-before-downgrade").
//!
//! Room A, the live incarnation, runs a random envelope stream and journals every
//! processed envelope `{clientID, mid, name, args, outcome}` exactly as the shell does
//! (`applied` / `rejected` / `deopt`; dedups and gaps are never journaled), acking in
//! random batches. Then A "crashes" and room B boots from a fresh snapshot and replays
//! the journal as `finishBoot` does: per entry `begin_mutation`; a non-applied outcome
//! replays as `reject_mutation(outcome)` without running anything; an applied one
//! re-invokes the same mutator; then one `ack` of every entry.
//!
//! - Journal-only (no authority): B opens from A's snapshot and must equal A — every
//!   table's rows, the ledger rows, applied/acked per client — with every entry
//!   replaying to its journaled outcome.
//! - Durable: A also flushes to a CAS authority (some batches built while writes are in
//!   flight; the batch in flight at the crash either landed or was lost). B opens from
//!   the authority's rows, `seed_durable`s the authority's lmids before replay, and the
//!   covered entries must dedup; the rest replay to their outcomes; B must equal A.
//! - Moved base: before the replay the authority changes rows and B receives them as an
//!   upstream batch. An applied entry may now reject or deopt; its mid is consumed all
//!   the same, and B matches the reference model replaying the same journal.
//!
//! Every variant ends by flushing B to the authority: each batch must land without a
//! CAS conflict (no outcome row or ledger row already there, every base current), and
//! the authority then holds B's rows, lmids and exactly one outcome row per non-applied
//! mid. `PROPTEST_CASES` overrides the case count.

mod write_support;

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{TestCaseError, TestRunner};
use rindle_room_core::{ErrorCode, Room};
use serde_json::Value as Json;

use write_support::*;

const DEFAULT_CASES: u32 = 1024;

fn config() -> ProptestConfig {
    let cases = rindle_room_tests::proptest_cases(DEFAULT_CASES);
    ProptestConfig {
        cases,
        max_shrink_iters: 2048,
        ..ProptestConfig::default()
    }
}

type R<T> = Result<T, String>;

/// One journaled envelope (a `RoomJournalEntry`, without `sub`).
#[derive(Clone, Debug)]
struct Entry {
    client: String,
    mid: u64,
    name: String,
    args: Json,
    outcome: &'static str,
}

impl Entry {
    fn key(&self) -> (String, u64) {
        (self.client.clone(), self.mid)
    }
}

#[derive(Clone, Debug)]
enum Step {
    Mutate {
        client: u8,
        kind: u8,
        a: u8,
        b: u8,
        c: u8,
    },
    Resend {
        client: u8,
        back: u8,
    },
    Gap {
        client: u8,
    },
    Ack {
        count: u8,
    },
    BeginFlush,
    Settle,
}

#[derive(Clone, Debug)]
struct Scenario {
    mode: WriteMode,
    snapshot: Vec<(u8, u8, u8)>,
    steps: Vec<Step>,
    /// A flushes to an authority; B seeds the authority's lmids.
    durable: bool,
    /// The batch in flight at the crash landed at the authority.
    landed: bool,
    /// Authority changes B receives before the replay (empty: the base did not move).
    moved: Vec<(u8, u8, u8)>,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => (0..3u8, any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>())
            .prop_map(|(client, kind, a, b, c)| Step::Mutate { client, kind, a, b, c }),
        1 => (0..3u8, any::<u8>()).prop_map(|(client, back)| Step::Resend { client, back }),
        1 => (0..3u8).prop_map(|client| Step::Gap { client }),
        3 => any::<u8>().prop_map(|count| Step::Ack { count }),
        2 => Just(Step::BeginFlush),
        2 => Just(Step::Settle),
    ]
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        prop_oneof![
            Just(WriteMode::V1),
            Just(WriteMode::V2 { owned: false }),
            Just(WriteMode::V2 { owned: true }),
        ],
        prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 4..16),
        prop::collection::vec(step(), 5..60),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![
            2 => Just(Vec::new()),
            1 => prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 1..5),
        ],
    )
        .prop_map(|(mode, snapshot, steps, durable, landed, moved)| Scenario {
            mode,
            snapshot,
            steps,
            durable,
            landed,
            moved,
        })
}

#[derive(Clone, Debug, Default)]
struct Stats {
    entries: usize,
    seeded_dedups: usize,
    landed_at_crash: usize,
    lost_at_crash: usize,
    /// `journaled outcome -> replayed outcome` when they differ (moved base only).
    changed: BTreeMap<String, usize>,
    moved_cases: usize,
}

/// What A looked like at the crash, every journaled entry acked.
struct Crashed {
    journal: Vec<Entry>,
    rows: Tables,
    ledger: Vec<(String, u64)>,
    marks: BTreeMap<String, (u64, u64)>,
    auth: Authority,
}

/// Room A: runs the steps, journaling like the shell; the authority (durable variant)
/// settles every flush; at the crash the batch in flight lands or is lost.
fn live(s: &Scenario, snapshot: &Tables, stats: &mut Stats) -> R<Crashed> {
    let mut a = open_room(snapshot);
    enable(&mut a, s.mode);
    let mut auth = Authority::new(snapshot);
    let mut journal: Vec<Entry> = Vec::new();
    let mut acked = 0;
    let mut flight: Option<Batch> = None;
    for (i, step) in s.steps.iter().enumerate() {
        let at = |e: String| format!("A step {i} {step:?}: {e}");
        match *step {
            Step::Mutate {
                client,
                kind,
                a: x,
                b,
                c,
            } => {
                let client = CLIENTS[client as usize];
                let mid = a.applied_mid(client) + 1;
                let (name, args) = Mutation::pick(kind, x, b, c).envelope();
                let v = run_on_room(&mut a, client, mid, &name, &args, None)
                    .map_err(|e| at(e.message().to_string()))?;
                if v == Verdict::Dedup {
                    return Err(at("a fresh mid deduped".into()));
                }
                journal.push(Entry {
                    client: client.into(),
                    mid,
                    name,
                    args,
                    outcome: v.outcome(),
                });
            }
            Step::Resend { client, back } => {
                let client = CLIENTS[client as usize];
                let applied = a.applied_mid(client);
                let mid = applied - u64::from(back) % (applied + 1);
                let v = run_on_room(&mut a, client, mid, "noop", &Json::Null, None)
                    .map_err(|e| at(e.message().to_string()))?;
                if v != Verdict::Dedup {
                    return Err(at(format!("a re-sent mid gave {v:?}")));
                }
            }
            Step::Gap { client } => {
                let client = CLIENTS[client as usize];
                let mid = a.applied_mid(client) + 2;
                match a.begin_mutation(client, mid, Some("noop"), None) {
                    Err(e) if e.code() == ErrorCode::MutationGap => {}
                    other => {
                        return Err(at(format!(
                            "a gap gave {:?}",
                            other.map_err(|e| e.message().to_string())
                        )))
                    }
                }
            }
            Step::Ack { count } => {
                if acked < journal.len() {
                    let k = 1 + count as usize % (journal.len() - acked);
                    let entries: Vec<(String, u64)> =
                        journal[acked..acked + k].iter().map(Entry::key).collect();
                    a.ack(&entries).map_err(|e| at(e.message().to_string()))?;
                    acked += k;
                }
            }
            Step::BeginFlush if s.durable && flight.is_none() => {
                if let Some(b) = a.begin_flush().map_err(|e| at(e.message().to_string()))? {
                    flight = Some(Batch {
                        changes: b.changes.iter().map(Change::from_core).collect(),
                        lmids: b.lmids,
                    });
                }
            }
            Step::Settle => {
                if let Some(b) = flight.take() {
                    match auth.apply(&b.changes) {
                        Settled::Ok(_) => {
                            a.flush_ok().map_err(|e| at(e.message().to_string()))?;
                        }
                        Settled::Conflict(c) => {
                            return Err(at(format!(
                                "A's flush conflicted with no other writer: {c:?}"
                            )))
                        }
                    }
                }
            }
            Step::BeginFlush => {}
        }
        a.commit_all();
    }
    if let Some(b) = flight.take() {
        if s.landed {
            if let Settled::Conflict(c) = auth.apply(&b.changes) {
                return Err(format!(
                    "the batch in flight at the crash conflicted: {c:?}"
                ));
            }
            stats.landed_at_crash += 1;
        } else {
            stats.lost_at_crash += 1;
        }
    }
    // Journal presence is the ack: the target state has every entry acked.
    let rest: Vec<(String, u64)> = journal[acked..].iter().map(Entry::key).collect();
    a.ack(&rest)
        .map_err(|e| format!("A's final ack: {}", e.message()))?;
    let marks = CLIENTS
        .iter()
        .map(|c| (c.to_string(), (a.applied_mid(c), a.acked_lmid(c))))
        .collect();
    Ok(Crashed {
        rows: room_tables(&a),
        ledger: room_ledger(&a),
        marks,
        journal,
        auth,
    })
}

/// Room B: boot (snapshot, enable, moved base, seed), replay, ack, compare, flush.
fn replay(s: &Scenario, snapshot: &Tables, mut crashed: Crashed, stats: &mut Stats) -> R<()> {
    let auth = &mut crashed.auth;
    let base = if s.durable {
        auth.rows.clone()
    } else {
        snapshot.clone()
    };
    let mut b = open_room(&base);
    enable(&mut b, s.mode);
    let mut model = Model::new(&base, s.mode);
    if !s.moved.is_empty() {
        let ops: Vec<_> = s
            .moved
            .iter()
            .map(|&(t, k, val)| auth.own_change(t as usize % 3, k, val))
            .collect();
        b.apply(&upstream_batch(1, ops.clone()))
            .map_err(|e| format!("B's upstream batch: {}", e.message()))?;
        model.upstream(SNAPSHOT_CV + 1, &ops);
        b.commit_all();
        stats.moved_cases += 1;
    }
    // The boot probe (durable variant): the authority's lmids.
    let seeds: Vec<(String, u64)> = if s.durable {
        auth.ledger.iter().map(|(c, m)| (c.clone(), *m)).collect()
    } else {
        Vec::new()
    };
    let seeded: BTreeMap<String, u64> = seeds.iter().cloned().collect();
    if !seeds.is_empty() {
        let got = b
            .seed_durable(&seeds)
            .map_err(|e| e.message().to_string())?;
        if got != model.seed(&seeds) {
            return Err(format!("seed_durable cv {got:?}"));
        }
        b.commit_all();
    }
    let mut non_applied = BTreeMap::new();
    for e in &crashed.journal {
        let at = |m: String| format!("replay {}:{} {} {}: {m}", e.client, e.mid, e.name, e.args);
        let got = run_on_room(&mut b, &e.client, e.mid, &e.name, &e.args, Some(e.outcome))
            .map_err(|x| at(x.message().to_string()))?;
        let want = model
            .run(&e.client, e.mid, &e.name, &e.args, Some(e.outcome))
            .map_err(at)?;
        if !got.agrees(&want) {
            return Err(at(format!("room {got:?}, model {want:?}")));
        }
        if let Verdict::Rejected {
            reason,
            refused: true,
        } = &got
        {
            model.set_last_reason(reason.clone());
        }
        stats.entries += 1;
        let covered = seeded.get(&e.client).is_some_and(|m| e.mid <= *m);
        if covered {
            if got != Verdict::Dedup {
                return Err(at(format!("a seeded mid did not dedup: {got:?}")));
            }
            stats.seeded_dedups += 1;
            if e.outcome != "applied" {
                non_applied.insert(e.key(), e.outcome.to_string());
            }
            continue;
        }
        if got == Verdict::Dedup {
            return Err(at("an unseeded mid deduped".into()));
        }
        if got.outcome() != "applied" {
            non_applied.insert(e.key(), got.outcome().to_string());
        }
        if got.outcome() != e.outcome {
            if s.moved.is_empty() {
                return Err(at(format!(
                    "replayed to {got:?} on the same base, journaled {}",
                    e.outcome
                )));
            }
            if e.outcome != "applied" {
                return Err(at(format!("a journaled {} entry ran: {got:?}", e.outcome)));
            }
            *stats
                .changed
                .entry(format!("{} -> {}", e.outcome, got.outcome()))
                .or_default() += 1;
        }
    }
    let all: Vec<(String, u64)> = crashed.journal.iter().map(Entry::key).collect();
    let got = b
        .ack(&all)
        .map_err(|e| format!("B's ack: {}", e.message()))?;
    if got != model.ack(&all)? {
        return Err(format!("B's ack cv {got:?}"));
    }
    b.commit_all();
    model
        .check_room(&b)
        .map_err(|e| format!("B vs the model: {e}"))?;
    // Every mid is consumed and acked exactly as in A.
    for c in CLIENTS {
        let (applied, acked) = crashed.marks[c];
        let got = (b.applied_mid(c), b.acked_lmid(c));
        if got != (applied, acked) {
            return Err(format!(
                "{c}: B applied/acked {got:?}, A {:?}",
                (applied, acked)
            ));
        }
        let seed = seeded.get(c).copied().unwrap_or(0);
        if b.durable_lmid(c) != seed {
            return Err(format!(
                "{c}: B durable {} != seed {seed}",
                b.durable_lmid(c)
            ));
        }
    }
    if room_ledger(&b) != crashed.ledger {
        return Err(format!(
            "ledger rows: B {:?}, A {:?}",
            room_ledger(&b),
            crashed.ledger
        ));
    }
    let unseeded = crashed
        .journal
        .iter()
        .filter(|e| seeded.get(&e.client).is_none_or(|m| e.mid > *m))
        .count();
    if b.pending_len() != unseeded {
        return Err(format!(
            "B pending {} != unseeded entries {unseeded}",
            b.pending_len()
        ));
    }
    if s.moved.is_empty() && room_tables(&b) != crashed.rows {
        return Err(format!(
            "B's head differs from A's\n  B: {:?}\n  A: {:?}",
            room_tables(&b),
            crashed.rows
        ));
    }
    // B's write-behind lands cleanly and the authority ends where B is.
    for round in 0.. {
        if round > 10 {
            return Err("B does not quiesce".into());
        }
        let Some(batch) = b.begin_flush().map_err(|e| e.message().to_string())? else {
            break;
        };
        let changes: Vec<Change> = batch.changes.iter().map(Change::from_core).collect();
        let predicted = model
            .begin_flush()
            .ok_or("the model has nothing to flush")?;
        if predicted.changes != changes || predicted.lmids != batch.lmids {
            return Err(format!("B's batch {changes:?}\n model's {predicted:?}"));
        }
        if let Settled::Conflict(c) = auth.apply(&changes) {
            return Err(format!("B's flush conflicted at the authority: {c:?}"));
        }
        b.flush_ok().map_err(|e| e.message().to_string())?;
        model.flush_ok();
    }
    if (b.dirty_len(), b.pending_len()) != (0, 0) {
        return Err(format!(
            "B dirty {} pending {}",
            b.dirty_len(),
            b.pending_len()
        ));
    }
    if room_tables(&b) != auth.rows {
        return Err("the authority does not hold B's rows".into());
    }
    for c in CLIENTS {
        if auth.ledger.get(c).copied().unwrap_or(0) != b.applied_mid(c) {
            return Err(format!("{c}: authority lmid {:?}", auth.ledger.get(c)));
        }
    }
    let outcomes: BTreeMap<(String, u64), String> = auth
        .outcomes
        .iter()
        .map(|(k, r)| (k.clone(), as_text(&r[2])))
        .collect();
    if outcomes != non_applied {
        return Err(format!(
            "outcome rows {outcomes:?}, expected {non_applied:?}"
        ));
    }
    Ok(())
}

fn run(s: &Scenario) -> R<Stats> {
    let mut stats = Stats::default();
    let snapshot = snapshot_from(&s.snapshot);
    let crashed = live(s, &snapshot, &mut stats)?;
    replay(s, &snapshot, crashed, &mut stats)?;
    Ok(stats)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn replay_reproduces_the_crashed_room(s in scenario()) {
        run(&s).map_err(TestCaseError::fail)?;
    }
}

/// The generator reaches every variant: seeded dedups, batches that landed and that were
/// lost at the crash, and applied entries that reject and that deopt on a moved base.
#[test]
fn generator_reaches_every_variant() {
    let mut runner = TestRunner::deterministic();
    let strategy = scenario();
    let mut total = Stats::default();
    for _ in 0..200 {
        let s = strategy
            .new_tree(&mut runner)
            .expect("a scenario")
            .current();
        let stats = run(&s).unwrap_or_else(|e| panic!("{e}\n{s:?}"));
        total.entries += stats.entries;
        total.seeded_dedups += stats.seeded_dedups;
        total.landed_at_crash += stats.landed_at_crash;
        total.lost_at_crash += stats.lost_at_crash;
        total.moved_cases += stats.moved_cases;
        for (k, v) in stats.changed {
            *total.changed.entry(k).or_default() += v;
        }
    }
    eprintln!("coverage over 200 scenarios: {total:?}");
    assert!(total.seeded_dedups > 0 && total.landed_at_crash > 0 && total.lost_at_crash > 0);
    assert!(total.moved_cases > 0);
    for class in ["applied -> rejected", "applied -> deopt"] {
        assert!(total.changed.contains_key(class), "no {class}: {total:?}");
    }
}

// ------------------------------------------------------------ fixed scenarios

fn item(id: i64, owner: &str, qty: f64) -> Image {
    vec![num(id as f64), text(owner), num(qty)]
}

fn base() -> Tables {
    let mut t: Tables = Default::default();
    t[ITEM].insert(1, item(1, "ann", 42.0));
    t[CTX].insert(1, vec![num(1.0), num(1.0)]);
    t
}

fn entry(client: &str, mid: u64, m: Mutation, outcome: &'static str) -> Entry {
    let (name, args) = m.envelope();
    Entry {
        client: client.into(),
        mid,
        name,
        args,
        outcome,
    }
}

/// Boots B from `base`, applies `moved` upstream, enables `mode`, replays `journal`
/// and acks it; returns B and each entry's replayed verdict.
fn boot(
    base: &Tables,
    mode: WriteMode,
    moved: Vec<rindle_room_core::NetOp>,
    journal: &[Entry],
) -> (Room, Vec<Verdict>) {
    let mut b = open_room(base);
    enable(&mut b, mode);
    if !moved.is_empty() {
        b.apply(&upstream_batch(1, moved)).expect("a live batch");
    }
    let verdicts = journal
        .iter()
        .map(|e| {
            run_on_room(&mut b, &e.client, e.mid, &e.name, &e.args, Some(e.outcome))
                .expect("replays")
        })
        .collect();
    let all: Vec<(String, u64)> = journal.iter().map(Entry::key).collect();
    b.ack(&all).expect("acks");
    b.commit_all();
    (b, verdicts)
}

fn outcome_rows(b: &mut Room) -> Vec<Image> {
    let batch = b.begin_flush().expect("builds").expect("a batch");
    batch
        .changes
        .iter()
        .map(Change::from_core)
        .filter(|c| c.table == "_rindle_room_mutation_outcomes")
        .map(|c| c.row.expect("an add"))
        .collect()
}

/// An `addTag` journaled applied replays against a base where its item is gone: the
/// mutator throws, the entry is rejected, no tag exists, the mid is consumed (the next
/// mid opens a transaction) and the outcome row rides the next flush.
#[test]
fn applied_entry_rejects_against_a_moved_base() {
    let mut auth = Authority::new(&base());
    let moved = vec![auth.write(ITEM, 1, None)];
    let journal = [entry(
        "alice",
        1,
        Mutation::AddTag {
            id: 3,
            item: 1,
            label: "x".into(),
        },
        "applied",
    )];
    let (mut b, verdicts) = boot(&base(), WriteMode::V1, moved, &journal);
    assert_eq!(
        verdicts,
        [Verdict::Rejected {
            reason: Some("item 1 does not exist".into()),
            refused: false
        }]
    );
    assert!(b.rows("tag").is_empty());
    assert_eq!((b.applied_mid("alice"), b.acked_lmid("alice")), (1, 1));
    assert_eq!(
        b.begin_mutation("alice", 2, None, None).expect("next mid"),
        rindle_room_core::Begin::Tx
    );
    b.reject_mutation(None, None).expect("rejects");
    assert_eq!(
        outcome_rows(&mut b)[0],
        vec![
            text("alice"),
            num(1.0),
            text("rejected"),
            text("item 1 does not exist"),
            rindle_room_core::Value::Null,
            rindle_room_core::Value::Null
        ]
    );
}

/// Under v2 a `bump` (+30 × ctx v 1) journaled applied at qty 42 → 72 replays after the
/// authority moved the qty to 99: 129 is outside `qty < 100`, so the commit gate deopts
/// (`writeOutOfScope`, `edit`). Nothing applies; the mid is consumed and acked.
#[test]
fn applied_entry_deopts_against_a_moved_base() {
    let mut auth = Authority::new(&base());
    let moved = vec![auth.write(ITEM, 1, Some(item(1, "ann", 99.0)))];
    let bump = Mutation::Bump {
        id: 1,
        by: 30.0,
        ctx: 1,
    };
    let journal = [entry("alice", 1, bump, "applied")];
    let (b, verdicts) = boot(&base(), WriteMode::V2 { owned: true }, moved, &journal);
    match &verdicts[0] {
        Verdict::Deopt { gate: Some(g), .. } => {
            assert_eq!(
                (g.reason.as_str(), g.op.as_deref()),
                ("writeOutOfScope", Some("edit"))
            );
            assert_eq!(g.pk, vec![num(1.0)]);
        }
        other => panic!("expected a gate deopt, got {other:?}"),
    }
    assert_eq!(b.rows("item"), vec![row(&item(1, "ann", 99.0))]);
    assert_eq!(
        (b.applied_mid("alice"), b.acked_lmid("alice"), b.dirty_len()),
        (1, 1, 0)
    );
}

/// Journaled non-applied entries replay without running, even where they would now
/// succeed: an `addTag` rejected (item 9 was missing) and a `setQty` deopted
/// (`absentReadUnproven` on item 51) replay against a base that has both items; no tag
/// appears and item 51 keeps its qty. Their outcome rows carry no reason (the journal
/// keeps none) and the deopt row echoes the envelope.
#[test]
fn non_applied_entries_replay_without_running() {
    let mut moved_base = base();
    moved_base[ITEM].insert(9, item(9, "bob", 1.0));
    moved_base[ITEM].insert(51, item(51, "cy", 5.0));
    let set = Mutation::SetQty { id: 51, qty: 0.0 };
    let (set_name, set_args) = set.envelope();
    let journal = [
        entry(
            "alice",
            1,
            Mutation::AddTag {
                id: 1,
                item: 9,
                label: "y".into(),
            },
            "rejected",
        ),
        entry("alice", 2, set, "deopt"),
    ];
    let (mut b, verdicts) = boot(
        &moved_base,
        WriteMode::V2 { owned: false },
        Vec::new(),
        &journal,
    );
    assert_eq!(verdicts[0].outcome(), "rejected");
    assert_eq!(verdicts[1].outcome(), "deopt");
    assert!(b.rows("tag").is_empty());
    assert!(b.rows("item").contains(&row(&item(51, "cy", 5.0))));
    let null = rindle_room_core::Value::Null;
    assert_eq!(
        outcome_rows(&mut b),
        vec![
            vec![
                text("alice"),
                num(1.0),
                text("rejected"),
                null.clone(),
                null.clone(),
                null.clone()
            ],
            vec![
                text("alice"),
                num(2.0),
                text("deopt"),
                null,
                text(&set_name),
                text(&set_args.to_string())
            ],
        ]
    );
}

/// A flushes alice 1–3 and Bob 1, then runs alice 4 and crashes. B opens from the
/// authority's rows, seeds `{alice: 3, Bob: 1}`: those entries dedup (their effects are
/// in the snapshot, their outcome rows at the authority), alice 4 re-invokes. B equals
/// A, and B's flush carries only alice 4's effects and the ledger edit from 3 to 4.
#[test]
fn seeded_mids_dedup_on_replay() {
    let snapshot = base();
    let mut a = open_room(&snapshot);
    enable(&mut a, WriteMode::V1);
    let stream = [
        ("alice", Mutation::SetQty { id: 1, qty: 5.0 }),
        ("alice", Mutation::Fail { msg: "no".into() }),
        (
            "Bob",
            Mutation::InsertItem {
                id: 2,
                owner: "bob".into(),
                qty: 1.0,
            },
        ),
        (
            "alice",
            Mutation::AddTag {
                id: 1,
                item: 2,
                label: "z".into(),
            },
        ),
        ("alice", Mutation::DeleteItem { id: 1 }),
    ];
    let mut journal = Vec::new();
    let mut auth = Authority::new(&snapshot);
    for (i, (client, m)) in stream.iter().enumerate() {
        let mid = a.applied_mid(client) + 1;
        let (name, args) = m.envelope();
        let v = run_on_room(&mut a, client, mid, &name, &args, None).expect("runs");
        journal.push(entry(client, mid, m.clone(), v.outcome()));
        if i == 3 {
            let b = a.begin_flush().expect("builds").expect("a batch");
            let changes: Vec<Change> = b.changes.iter().map(Change::from_core).collect();
            assert!(matches!(auth.apply(&changes), Settled::Ok(_)));
            a.flush_ok().expect("settles");
        }
    }
    let all: Vec<(String, u64)> = journal.iter().map(Entry::key).collect();
    a.ack(&all).expect("acks");
    assert_eq!(
        auth.ledger,
        BTreeMap::from([("Bob".into(), 1), ("alice".into(), 3)])
    );
    let seeds: Vec<(String, u64)> = auth.ledger.iter().map(|(c, m)| (c.clone(), *m)).collect();

    let mut b = open_room(&auth.rows);
    enable(&mut b, WriteMode::V1);
    assert!(b.seed_durable(&seeds).expect("seeds").is_some());
    let verdicts: Vec<Verdict> = journal
        .iter()
        .map(|e| {
            run_on_room(&mut b, &e.client, e.mid, &e.name, &e.args, Some(e.outcome))
                .expect("replays")
        })
        .collect();
    assert_eq!(
        verdicts[..4],
        [
            Verdict::Dedup,
            Verdict::Dedup,
            Verdict::Dedup,
            Verdict::Dedup
        ]
    );
    assert_eq!(verdicts[4], Verdict::Applied);
    b.ack(&all).expect("acks");
    assert_eq!(room_tables(&b), room_tables(&a));
    assert_eq!(room_ledger(&b), room_ledger(&a));
    assert_eq!((b.durable_lmid("alice"), b.pending_len()), (3, 1));
    let batch = b.begin_flush().expect("builds").expect("a batch");
    let changes: Vec<Change> = batch.changes.iter().map(Change::from_core).collect();
    assert_eq!(
        changes,
        vec![
            Change {
                table: "item".into(),
                op: "remove",
                old: Some(item(1, "ann", 5.0)),
                row: None
            },
            Change {
                table: "_rindle_client_mutations".into(),
                op: "edit",
                old: Some(vec![text("alice"), num(3.0)]),
                row: Some(vec![text("alice"), num(4.0)])
            },
        ]
    );
    assert!(matches!(auth.apply(&changes), Settled::Ok(_)));
    assert_eq!(batch.lmids, vec![("alice".to_string(), 4)]);
}

//! The write plane against a reference model (DECISIONS D6/D7, seed 002's host loop).
//!
//! A room over `item` / `tag` (writable) and `ctx` (context) is driven by random
//! streams: mutations by three clients through the keyed layer (inserts, updates,
//! upserts, deletes, positional writes, reads of context rows, throws, an environment
//! shortfall, an unknown mutator, writes that trip each v2 gate reason), re-sent mids,
//! mid gaps, batched acks, flushes settled by a CAS authority (ok or conflict; the
//! authority may decide a batch well before the room hears back), the authority
//! changing rows on its own and streaming them (and the echo of every committed flush)
//! upstream with a lag, and writes landing while a flush is in flight.
//!
//! After every step the room must match the model exactly (head rows, ledger rows,
//! watermarks, pending/dirty counts, flight, `headCv`; every verdict and every flush
//! batch), ledger rows never go backwards, `applied >= acked` and `durable <= applied`,
//! after a conflict each conflicted key holds the authority's image, and every
//! subscription's maintained footprint equals the naive evaluator's and its client's
//! folded frames (lmid subscriptions: exactly the client's ledger row). Each case ends
//! by flushing to quiescence: `begin_flush` returns nothing, nothing is dirty or
//! pending, every processed mid was covered by a committed flush's `lmids`, and the
//! room's rows, the authority's rows, ledger and outcome rows all agree.
//!
//! Two races between a settlement and the change feed make the room diverge from the
//! authority for good; they have minimal failing tests at the end of this file and the
//! random streams steer around them (`AVOID_SETTLEMENT_RACE`).
//!
//! `PROPTEST_CASES` overrides the case count.

mod write_support;

use std::collections::{BTreeMap, VecDeque};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{TestCaseError, TestRunner};
use rindle_room_core::ast::Query;
use rindle_room_core::write::LEDGER_TABLE;
use rindle_room_core::{ApplyStatus, ErrorCode, NetOp, Room};
use rindle_room_tests::client::ClientModel;
use rindle_room_tests::naive::{self, Db, Member};
use serde_json::{json, Value as Json};

use write_support::*;

const DEFAULT_CASES: u32 = 512;

/// While the authority has decided a batch the room has not heard back about, the
/// authority makes no change of its own to a key that batch carries. Such a change,
/// streamed to the room before the settlement, is swallowed by `flush_ok` /
/// `flush_conflict` and the room never converges (the two `settlement_race_*` tests
/// below). Set to `false` once the core handles it; the model will then need the
/// core's chosen resolution for those keys.
const AVOID_SETTLEMENT_RACE: bool = true;

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    ProptestConfig {
        cases,
        max_shrink_iters: 2048,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------- the scenario

/// A subscription AST selector: root table, filter, literal, order, limit + related.
type AstSel = (u8, u8, u8, u8, u8);

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
        ahead: u8,
    },
    Ack {
        count: u8,
    },
    BadAck {
        client: u8,
    },
    BeginFlush,
    /// The authority decides the batch in flight; the room has not heard back yet (the
    /// change feed may deliver the commit's echo, and later writes, first).
    Decide,
    Settle,
    Authority {
        table: u8,
        key: u8,
        val: u8,
    },
    Deliver {
        count: u8,
    },
    Subscribe {
        ast: AstSel,
    },
}

#[derive(Clone, Debug)]
struct Scenario {
    mode: WriteMode,
    snapshot: Vec<(u8, u8, u8)>,
    asts: Vec<AstSel>,
    steps: Vec<Step>,
}

fn ast_sel() -> impl Strategy<Value = AstSel> {
    (
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
    )
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        12 => (0..3u8, any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>())
            .prop_map(|(client, kind, a, b, c)| Step::Mutate { client, kind, a, b, c }),
        1 => (0..3u8, any::<u8>()).prop_map(|(client, back)| Step::Resend { client, back }),
        1 => (0..3u8, any::<u8>()).prop_map(|(client, ahead)| Step::Gap { client, ahead }),
        3 => any::<u8>().prop_map(|count| Step::Ack { count }),
        1 => (0..3u8).prop_map(|client| Step::BadAck { client }),
        3 => Just(Step::BeginFlush),
        2 => Just(Step::Decide),
        3 => Just(Step::Settle),
        3 => (0..3u8, any::<u8>(), any::<u8>())
            .prop_map(|(table, key, val)| Step::Authority { table, key, val }),
        2 => (1..3u8).prop_map(|count| Step::Deliver { count }),
        1 => ast_sel().prop_map(|ast| Step::Subscribe { ast }),
    ]
}

fn mode() -> impl Strategy<Value = WriteMode> {
    prop_oneof![
        Just(WriteMode::V1),
        Just(WriteMode::V2 { owned: false }),
        Just(WriteMode::V2 { owned: true }),
    ]
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        mode(),
        prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 4..16),
        prop::collection::vec(ast_sel(), 1..4),
        prop::collection::vec(step(), 20..90),
    )
        .prop_map(|(mode, snapshot, asts, steps)| Scenario {
            mode,
            snapshot,
            asts,
            steps,
        })
}

fn cond(col: &str, op: &str, value: Json) -> Json {
    json!({"type": "simple", "op": op, "left": {"type": "column", "name": col},
           "right": {"type": "literal", "value": value}})
}

/// A small wire AST over one table, optionally gated by (NOT) EXISTS on the other
/// writable table and with a `related` level; never a self-join.
fn ast_json(sel: AstSel) -> String {
    let (root, filter, lit, order, extra) = sel;
    let t = root as usize % 3;
    let other = if t == ITEM { TAG } else { ITEM };
    // item.id = tag.itemId, from either side.
    let link = |from: usize| {
        if from == ITEM {
            json!({"parentField": ["id"], "childField": ["itemId"]})
        } else {
            json!({"parentField": ["itemId"], "childField": ["id"]})
        }
    };
    let child_where = |lit: u8| {
        if other == TAG {
            cond("label", "=", json!(pick(&LABELS, lit)))
        } else {
            cond("owner", "!=", json!(pick(&OWNERS, lit)))
        }
    };
    let exists = |negated: bool, flip: bool, with_where: bool| {
        let mut sub = json!({"table": NAMES[other], "alias": "gate"});
        if with_where {
            sub["where"] = child_where(lit / 3);
        }
        let op = if negated { "NOT EXISTS" } else { "EXISTS" };
        let mut c = json!({"type": "correlatedSubquery", "op": op,
                           "related": {"correlation": link(t), "subquery": sub}});
        if flip {
            c["flip"] = json!(true);
        }
        c
    };
    let local = |lit: u8| match t {
        ITEM => match lit % 2 {
            0 => cond("qty", "<", json!(pick(&[1, 5, 42, 100, 150], lit / 2))),
            _ => cond("owner", "=", json!(pick(&OWNERS, lit / 2))),
        },
        TAG => match lit % 2 {
            0 => cond("label", "=", json!(pick(&LABELS, lit / 2))),
            _ => cond("itemId", "<=", json!(pick(&ITEM_IDS, lit / 2))),
        },
        _ => cond("v", ">", json!(pick(&[0, 1, 2], lit))),
    };
    let mut q = json!({"table": NAMES[t]});
    let where_ = match (t, filter % 6) {
        (_, 0) => None,
        (CTX, _) | (_, 1) => Some(local(lit)),
        (_, 2) => Some(exists(false, false, lit % 2 == 0)),
        (_, 3) => Some(exists(true, false, lit % 2 == 0)),
        (_, 4) => {
            Some(json!({"type": "or", "conditions": [local(lit), exists(false, true, true)]}))
        }
        _ => Some(json!({"type": "and", "conditions": [local(lit), exists(false, false, false)]})),
    };
    if let Some(w) = where_ {
        q["where"] = w;
    }
    let sort_col = ["qty", "label", "v"][t];
    match order % 3 {
        1 => q["orderBy"] = json!([[sort_col, "asc"]]),
        2 => q["orderBy"] = json!([[sort_col, "desc"]]),
        _ => {}
    }
    if extra % 4 != 0 {
        q["limit"] = json!(extra % 4);
    }
    if (extra / 4) % 2 == 1 && t != CTX {
        let rel_col = if other == TAG { "label" } else { "owner" };
        let mut sub = json!({"table": NAMES[other], "alias": "rel", "orderBy": [[rel_col, "asc"]]});
        if (extra / 8) % 2 == 1 {
            sub["limit"] = json!(2);
        }
        q["related"] = json!([{"correlation": link(t), "subquery": sub}]);
    }
    q.to_string()
}

// ------------------------------------------------------------------- the world

struct Sub {
    name: String,
    /// The parsed AST, or `None` for an lmid subscription of `lmid_client`.
    query: Option<Query>,
    lmid_client: Option<String>,
    view: ClientModel,
}

#[derive(Clone, Debug, Default)]
struct Stats {
    verdicts: BTreeMap<String, usize>,
    dedups: usize,
    gaps: usize,
    flushes_ok: usize,
    conflicts: usize,
    redirtied: usize,
    writes_in_flight: usize,
    upstream_on_dirty: usize,
    frames: usize,
    races_avoided: usize,
}

struct World {
    room: Room,
    model: Model,
    auth: Authority,
    /// Authority changes (own ones and flush echoes) not yet streamed to the room.
    upstream: VecDeque<Vec<NetOp>>,
    next_seq: u64,
    subs: Vec<Sub>,
    /// Processed `(client, mid)`s not yet acked, in journal order.
    unacked: VecDeque<(String, u64)>,
    /// Every processed `(client, mid, outcome)`.
    processed: Vec<(String, u64, &'static str)>,
    /// The highest lmid per client over committed flushes.
    covered: BTreeMap<String, u64>,
    /// The last ledger row seen per client.
    last_ledger: BTreeMap<String, u64>,
    /// The batch in flight, as the room built it.
    flight: Option<Batch>,
    /// The authority's decision on it, not yet reported to the room.
    decided: Option<Settled>,
    stats: Stats,
}

type R<T> = Result<T, String>;

impl World {
    fn open(s: &Scenario) -> R<World> {
        let snapshot = snapshot_from(&s.snapshot);
        let mut room = open_room(&snapshot);
        enable(&mut room, s.mode);
        let mut w = World {
            room,
            model: Model::new(&snapshot, s.mode),
            auth: Authority::new(&snapshot),
            upstream: VecDeque::new(),
            next_seq: 1,
            subs: Vec::new(),
            unacked: VecDeque::new(),
            processed: Vec::new(),
            covered: BTreeMap::new(),
            last_ledger: BTreeMap::new(),
            flight: None,
            decided: None,
            stats: Stats::default(),
        };
        for c in CLIENTS {
            let name = format!("lmid-{c}");
            let sub = w
                .room
                .lmid_subscribe(&name, 1, c, 0)
                .map_err(|e| format!("lmid_subscribe {c}: {}", e.message()))?;
            w.subs.push(Sub {
                name,
                query: None,
                lmid_client: Some(c.to_string()),
                view: ClientModel::new(&sub.hello, &sub.snapshot)?,
            });
        }
        for &ast in &s.asts {
            w.subscribe(ast)?;
        }
        w.check()?;
        Ok(w)
    }

    fn subscribe(&mut self, ast: AstSel) -> R<()> {
        let text = ast_json(ast);
        let query = self
            .room
            .parse_query(&text)
            .map_err(|e| format!("parse {text}: {}", e.message()))?;
        let name = format!("q{}", self.subs.len());
        let sub = self
            .room
            .subscribe(&name, 1, &query, 0)
            .map_err(|e| format!("subscribe {text}: {}", e.message()))?;
        if sub.snapshot.cv != self.room.head_cv() {
            return Err(format!("snapshot cv {} != headCv", sub.snapshot.cv));
        }
        let view =
            ClientModel::new(&sub.hello, &sub.snapshot).map_err(|e| format!("{name}: {e}"))?;
        self.subs.push(Sub {
            name,
            query: Some(query),
            lmid_client: None,
            view,
        });
        Ok(())
    }

    /// `commitAll` and fold every frame into its subscriber's view.
    fn drain(&mut self) -> R<()> {
        let frames = self.room.commit_all();
        let head_cv = self.room.head_cv();
        let mut seen = Vec::new();
        for f in &frames {
            if seen.contains(&f.sub) {
                return Err(format!("two frames for {} in one drain", f.sub));
            }
            if f.batch.cv != head_cv {
                return Err(format!("frame cv {} != headCv {head_cv}", f.batch.cv));
            }
            let sub = self
                .subs
                .iter_mut()
                .find(|s| *s.name == *f.sub)
                .ok_or_else(|| format!("frame for unknown subscriber {}", f.sub))?;
            sub.view
                .apply(&f.batch)
                .map_err(|e| format!("{}: {e}", f.sub))?;
            seen.push(f.sub.clone());
        }
        self.stats.frames += frames.len();
        Ok(())
    }

    /// Every per-step property.
    fn check(&mut self) -> R<()> {
        self.model.check_room(&self.room)?;
        for (c, m) in room_ledger(&self.room) {
            let last = self.last_ledger.insert(c.clone(), m).unwrap_or(0);
            if m < last {
                return Err(format!("ledger row of {c} went backwards: {last} -> {m}"));
            }
        }
        for c in CLIENTS {
            let (applied, acked, durable) = (
                self.room.applied_mid(c),
                self.room.acked_lmid(c),
                self.room.durable_lmid(c),
            );
            if acked > applied || durable > applied {
                return Err(format!(
                    "{c}: applied {applied}, acked {acked}, durable {durable}"
                ));
            }
        }
        let db = Db::from_room(&self.room);
        for s in &self.subs {
            let want: Vec<Member> = match (&s.query, &s.lmid_client) {
                (Some(q), _) => naive::footprint(&db, q),
                (None, Some(c)) => {
                    let acked = self.room.acked_lmid(c);
                    if acked == 0 {
                        Vec::new()
                    } else {
                        vec![(LEDGER_TABLE.to_string(), vec![text(c), num(acked as f64)])]
                    }
                }
                (None, None) => unreachable!(),
            };
            let got: Vec<Member> = self
                .room
                .footprint(&s.name)
                .ok_or_else(|| format!("room lost subscriber {}", s.name))?
                .into_iter()
                .map(|(t, r)| (t.to_string(), r.to_vec()))
                .collect();
            if got != want {
                return Err(format!(
                    "{}: maintained footprint differs from the naive one\n  \
                     want {want:?}\n  got  {got:?}",
                    s.name
                ));
            }
            let held = s.view.members();
            if held != want {
                return Err(format!(
                    "{}: client view differs from the footprint\n  want {want:?}\n  held {held:?}",
                    s.name
                ));
            }
        }
        Ok(())
    }

    fn mutate(&mut self, client: &str, m: &Mutation) -> R<()> {
        let mid = self.model.marks(client).applied + 1;
        let (name, args) = m.envelope();
        let in_flight = self.model.in_flight();
        let got = run_on_room(&mut self.room, client, mid, &name, &args, None)
            .map_err(|e| format!("{client}:{mid} {name} {args}: room error {}", e.message()))?;
        let want = self.model.run(client, mid, &name, &args, None)?;
        if !got.agrees(&want) {
            return Err(format!(
                "{client}:{mid} {name} {args}: room {got:?}, model {want:?}"
            ));
        }
        if let Verdict::Rejected {
            reason,
            refused: true,
        } = &got
        {
            self.model.set_last_reason(reason.clone());
        }
        let class = match &got {
            Verdict::Deopt { gate: Some(g), .. } => {
                format!("deopt:{}:{}", g.reason, g.op.as_deref().unwrap_or(""))
            }
            Verdict::Deopt { reason, .. } => format!("deopt:{}", reason.as_deref().unwrap_or("")),
            Verdict::Rejected { refused, .. } => {
                format!("rejected:{}", if *refused { "refused" } else { "thrown" })
            }
            v => v.outcome().to_string(),
        };
        *self.stats.verdicts.entry(class).or_default() += 1;
        if in_flight && got == Verdict::Applied {
            self.stats.writes_in_flight += 1;
        }
        self.unacked.push_back((client.to_string(), mid));
        self.processed
            .push((client.to_string(), mid, got.outcome()));
        Ok(())
    }

    fn begin_flush(&mut self) -> R<()> {
        if self.model.in_flight() {
            if self.room.begin_flush().is_ok() {
                return Err("begin_flush succeeded with a flush in flight".into());
            }
            return Ok(());
        }
        let got = self
            .room
            .begin_flush()
            .map_err(|e| format!("begin_flush: {}", e.message()))?;
        let want = self.model.begin_flush();
        let got = got.map(|b| {
            (
                Batch {
                    changes: b.changes.iter().map(Change::from_core).collect(),
                    lmids: b.lmids.clone(),
                },
                b.batch_hash,
            )
        });
        match (&got, &want) {
            (None, None) => Ok(()),
            (Some((batch, hash)), Some(w)) if batch == w => {
                check_change_order(&batch.changes)?;
                if hash.len() != 16
                    || !hash
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                {
                    return Err(format!("batchHash {hash:?} is not 16 lowercase hex chars"));
                }
                self.flight = Some(batch.clone());
                Ok(())
            }
            _ => Err(format!(
                "flush batch differs\n  room:  {got:?}\n  model: {want:?}"
            )),
        }
    }

    /// The authority decides the batch in flight (once); a commit's echo joins the
    /// upstream queue at once.
    fn decide(&mut self) {
        if self.decided.is_some() {
            return;
        }
        let Some(batch) = &self.flight else {
            return;
        };
        let settled = self.auth.apply(&batch.changes);
        if let Settled::Ok(echo) = &settled {
            if !echo.is_empty() {
                self.upstream.push_back(echo.clone());
            }
        }
        self.decided = Some(settled);
    }

    /// The room learns the authority's decision.
    fn settle(&mut self) -> R<()> {
        self.decide();
        let (Some(batch), Some(decided)) = (self.flight.take(), self.decided.take()) else {
            if self.room.flush_ok(None).is_ok() {
                return Err("flush_ok succeeded with nothing in flight".into());
            }
            return Ok(());
        };
        match decided {
            Settled::Ok(_) => {
                let redirtied = self.model.dirty.values().filter(|d| d.redirtied).count();
                self.stats.redirtied += redirtied;
                let ok = self
                    .room
                    .flush_ok(None)
                    .map_err(|e| format!("flush_ok: {}", e.message()))?;
                self.model.flush_ok();
                if ok.dirty != self.model.dirty.len() {
                    return Err(format!(
                        "flush_ok reports {} dirty, the model {}",
                        ok.dirty,
                        self.model.dirty.len()
                    ));
                }
                for (c, mid) in &batch.lmids {
                    let e = self.covered.entry(c.clone()).or_default();
                    *e = (*e).max(*mid);
                }
                self.stats.flushes_ok += 1;
            }
            Settled::Conflict(conflicts) => {
                let got = self
                    .room
                    .flush_conflict(&conflicts)
                    .map_err(|e| format!("flush_conflict: {}", e.message()))?;
                let want = self.model.flush_conflict(&conflicts);
                if got != want {
                    return Err(format!("flush_conflict cv: room {got:?}, model {want:?}"));
                }
                let head = room_tables(&self.room);
                for c in &conflicts {
                    let t = table_index(&c.table).ok_or("conflict on a system table")?;
                    let id = id_of(&c.pk[0]);
                    let current = c.current.as_ref().map(|r| r.to_vec());
                    if head[t].get(&id) != current.as_ref()
                        || current.as_ref() != self.auth.rows[t].get(&id)
                    {
                        return Err(format!(
                            "after the conflict {}[{id}] is {:?}, the authority answered \
                             {current:?} and holds {:?}",
                            c.table,
                            head[t].get(&id),
                            self.auth.rows[t].get(&id),
                        ));
                    }
                }
                self.stats.conflicts += 1;
            }
        }
        Ok(())
    }

    fn deliver(&mut self, count: usize) -> R<()> {
        for _ in 0..count {
            let Some(ops) = self.upstream.pop_front() else {
                return Ok(());
            };
            self.stats.upstream_on_dirty += ops
                .iter()
                .filter(|op| {
                    let (table, image) = match op {
                        NetOp::Add { table, row } | NetOp::Remove { table, row } => (table, row),
                        NetOp::Edit { table, old, .. } => (table, old),
                    };
                    let t = table_index(table).expect("a user table");
                    self.model.dirty.contains_key(&(t, id_of(&image[0])))
                })
                .count();
            let status = self
                .room
                .apply(&upstream_batch(self.next_seq, ops.clone()))
                .map_err(|e| format!("upstream seq {}: {}", self.next_seq, e.message()))?;
            if status != (ApplyStatus::Live { ops: ops.len() }) {
                return Err(format!("upstream seq {}: {status:?}", self.next_seq));
            }
            self.model.upstream(&ops);
            self.next_seq += 1;
        }
        Ok(())
    }

    /// Whether the batch in flight carries data key `(t, id)`.
    fn in_flight_batch(&self, t: usize, id: i64) -> bool {
        self.flight.as_ref().is_some_and(|b| {
            b.changes
                .iter()
                .any(|c| c.table == NAMES[t] && id_of(&c.key_image()[0]) == id)
        })
    }

    fn step(&mut self, step: &Step) -> R<()> {
        match *step {
            Step::Mutate {
                client,
                kind,
                a,
                b,
                c,
            } => self.mutate(CLIENTS[client as usize], &Mutation::pick(kind, a, b, c))?,
            Step::Resend { client, back } => {
                let c = CLIENTS[client as usize];
                let applied = self.model.marks(c).applied;
                let mid = applied - u64::from(back) % (applied + 1);
                let (name, args) = Mutation::pick(back, back, back, back).envelope();
                let got = run_on_room(&mut self.room, c, mid, &name, &args, None)
                    .map_err(|e| format!("resend {c}:{mid}: {}", e.message()))?;
                if got != Verdict::Dedup
                    || self.model.run(c, mid, &name, &args, None)? != Verdict::Dedup
                {
                    return Err(format!(
                        "resend of {c}:{mid} (applied {applied}) gave {got:?}"
                    ));
                }
                self.stats.dedups += 1;
            }
            Step::Gap { client, ahead } => {
                let c = CLIENTS[client as usize];
                let mid = self.model.marks(c).applied + 2 + u64::from(ahead % 3);
                let want = self.model.run(c, mid, "noop", &Json::Null, None).err();
                let got = self.room.begin_mutation(c, mid, Some("noop"), None);
                match got {
                    Err(e)
                        if e.code() == ErrorCode::MutationGap
                            && Some(e.message()) == want.as_deref() => {}
                    other => {
                        return Err(format!(
                            "gap {c}:{mid}: got {:?}, want the error {want:?}",
                            other.map_err(|e| e.message().to_string())
                        ))
                    }
                }
                self.stats.gaps += 1;
            }
            Step::Ack { count } => {
                if !self.unacked.is_empty() {
                    let k = 1 + count as usize % self.unacked.len();
                    let entries: Vec<(String, u64)> = self.unacked.drain(..k).collect();
                    let got = self
                        .room
                        .ack(&entries)
                        .map_err(|e| format!("ack {entries:?}: {}", e.message()))?;
                    let want = self.model.ack(&entries)?;
                    if got != want {
                        return Err(format!("ack {entries:?}: room cv {got:?}, model {want:?}"));
                    }
                }
            }
            Step::BadAck { client } => {
                let c = CLIENTS[client as usize];
                let entry = vec![(c.to_string(), self.model.marks(c).applied + 1)];
                if self.room.ack(&entry).is_ok() || self.model.ack(&entry).is_ok() {
                    return Err(format!(
                        "ack beyond the applied watermark accepted: {entry:?}"
                    ));
                }
            }
            Step::BeginFlush => self.begin_flush()?,
            Step::Decide => self.decide(),
            Step::Settle => self.settle()?,
            Step::Authority { table, key, val } => {
                let t = table as usize % 3;
                let id = pick(ids(t), key);
                if AVOID_SETTLEMENT_RACE && self.decided.is_some() && self.in_flight_batch(t, id) {
                    // See `settlement_race_*` below: the room cannot converge yet.
                    self.stats.races_avoided += 1;
                } else {
                    let op = self.auth.own_change(t, key, val);
                    self.upstream.push_back(vec![op]);
                }
            }
            Step::Deliver { count } => self.deliver(count as usize)?,
            Step::Subscribe { ast } => self.subscribe(ast)?,
        }
        self.drain()?;
        self.check()
    }

    /// Stop writing; ack everything; flush (with the upstream catching up in between)
    /// until nothing is left; then every quiescence property.
    fn quiesce(&mut self) -> R<()> {
        if self.flight.is_some() {
            self.settle()?;
        }
        if !self.unacked.is_empty() {
            let entries: Vec<(String, u64)> = self.unacked.drain(..).collect();
            let got = self
                .room
                .ack(&entries)
                .map_err(|e| e.message().to_string())?;
            if got != self.model.ack(&entries)? {
                return Err("final ack cv differs".into());
            }
        }
        self.drain()?;
        self.check()?;
        let mut rounds = 0;
        loop {
            rounds += 1;
            if rounds > 50 {
                return Err("no quiescence after 50 flush rounds".into());
            }
            if rounds % 2 == 0 {
                self.deliver(1)?;
            }
            self.begin_flush()?;
            let done = self.flight.is_none();
            self.settle()?;
            self.drain()?;
            self.check()?;
            if done {
                break;
            }
        }
        let pending = self.upstream.len();
        self.deliver(pending)?;
        self.drain()?;
        self.check()?;
        if self
            .room
            .begin_flush()
            .map_err(|e| e.message().to_string())?
            .is_some()
        {
            return Err("begin_flush built a batch after quiescence".into());
        }
        if self.room.dirty_len() != 0 || self.room.pending_len() != 0 {
            return Err(format!(
                "not quiescent: dirty {}, pending {}",
                self.room.dirty_len(),
                self.room.pending_len()
            ));
        }
        for (c, mid, _) in &self.processed {
            if self.covered.get(c).is_none_or(|m| m < mid) {
                return Err(format!("{c}:{mid} was never covered by a committed flush"));
            }
        }
        for c in CLIENTS {
            let applied = self.room.applied_mid(c);
            if self.room.durable_lmid(c) != applied || self.room.acked_lmid(c) != applied {
                return Err(format!(
                    "{c}: durable/acked lag applied {applied} at quiescence"
                ));
            }
            if self.auth.ledger.get(c).copied().unwrap_or(0) != applied {
                return Err(format!(
                    "{c}: the authority's ledger says {:?}, applied is {applied}",
                    self.auth.ledger.get(c)
                ));
            }
        }
        let non_applied: BTreeMap<(String, u64), &str> = self
            .processed
            .iter()
            .filter(|(_, _, o)| *o != "applied")
            .map(|(c, m, o)| ((c.clone(), *m), *o))
            .collect();
        let at_authority: BTreeMap<(String, u64), String> = self
            .auth
            .outcomes
            .iter()
            .map(|(k, r)| (k.clone(), as_text(&r[2])))
            .collect();
        let want: BTreeMap<(String, u64), String> = non_applied
            .iter()
            .map(|(k, o)| (k.clone(), o.to_string()))
            .collect();
        if at_authority != want {
            return Err(format!(
                "outcome rows at the authority {at_authority:?}, processed non-applied {want:?}"
            ));
        }
        let rows = room_tables(&self.room);
        if rows != self.auth.rows {
            return Err(format!(
                "at quiescence the room's rows differ from the authority's\n  \
                 room: {rows:?}\n  auth: {:?}",
                self.auth.rows
            ));
        }
        Ok(())
    }
}

fn run(s: &Scenario) -> R<Stats> {
    let mut w = World::open(s)?;
    for (i, step) in s.steps.iter().enumerate() {
        w.step(step)
            .map_err(|e| format!("step {i} {step:?}: {e}"))?;
    }
    w.quiesce().map_err(|e| format!("quiescence: {e}"))?;
    Ok(w.stats)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn write_plane_matches_the_model(s in scenario()) {
        run(&s).map_err(TestCaseError::fail)?;
    }
}

/// The generator reaches every path the properties are about: each verdict class (each
/// gate reason, throws, refusals, environment), dedups, gaps, committed and conflicted
/// flushes, re-dirtied flights, writes during a flight and upstream ops on dirty keys.
#[test]
fn generator_reaches_every_path() {
    let mut runner = TestRunner::deterministic();
    let strategy = scenario();
    let mut total = Stats::default();
    for _ in 0..48 {
        let s = strategy
            .new_tree(&mut runner)
            .expect("a scenario")
            .current();
        let stats = run(&s).unwrap_or_else(|e| panic!("{e}\n{s:?}"));
        for (k, v) in stats.verdicts {
            *total.verdicts.entry(k).or_default() += v;
        }
        total.dedups += stats.dedups;
        total.gaps += stats.gaps;
        total.flushes_ok += stats.flushes_ok;
        total.conflicts += stats.conflicts;
        total.redirtied += stats.redirtied;
        total.writes_in_flight += stats.writes_in_flight;
        total.upstream_on_dirty += stats.upstream_on_dirty;
        total.frames += stats.frames;
    }
    eprintln!("coverage over 48 scenarios: {total:?}");
    for class in [
        "applied",
        "rejected:refused",
        "rejected:thrown",
        "deopt:environment",
        "deopt:writeOutOfScope:add",
        "deopt:writeOutOfScope:edit",
        "deopt:writeOutOfScope:remove",
        "deopt:joinKeyChanged:",
        "deopt:absentReadUnproven:",
    ] {
        assert!(
            total.verdicts.get(class).copied().unwrap_or(0) > 0,
            "no {class} verdict in {:?}",
            total.verdicts
        );
    }
    let counts = [
        ("dedups", total.dedups),
        ("gaps", total.gaps),
        ("flushes_ok", total.flushes_ok),
        ("conflicts", total.conflicts),
        ("redirtied", total.redirtied),
        ("writes_in_flight", total.writes_in_flight),
        ("upstream_on_dirty", total.upstream_on_dirty),
        ("frames", total.frames),
    ];
    for (what, n) in counts {
        assert!(n > 0, "no {what}: {total:?}");
    }
}

// ------------------------------------------------ core bugs: settlement races

/// `item [1, "ann", 5]`; alice's mid 1 sets qty 42 and a flush carries
/// `edit [1,"ann",5] -> [1,"ann",42]`. The authority commits it; another writer then
/// changes the row to `[1, "bob", 99]`. The change feed delivers both (the echo, then
/// the other write) before the flush response reaches the room — the shell awaits
/// `journal.confirmFlush` before `flushOk`, so this interleaving is ordinary.
fn race_room() -> rindle_room_core::Room {
    let mut snap: Tables = Default::default();
    snap[ITEM].insert(1, vec![num(1.0), text("ann"), num(5.0)]);
    let mut room = open_room(&snap);
    enable(&mut room, WriteMode::V1);
    let (name, args) = Mutation::SetQty { id: 1, qty: 42.0 }.envelope();
    let v = run_on_room(&mut room, "alice", 1, &name, &args, None).expect("runs");
    assert_eq!(v, Verdict::Applied);
    room.commit_all();
    room.begin_flush().expect("builds").expect("a batch");
    room
}

fn item(owner: &str, qty: f64) -> rindle_room_core::Row {
    row(&[num(1.0), text(owner), num(qty)])
}

fn feed(
    room: &mut rindle_room_core::Room,
    seq: u64,
    old: rindle_room_core::Row,
    new: rindle_room_core::Row,
) {
    let op = NetOp::Edit {
        table: "item".into(),
        old,
        new,
    };
    room.apply(&upstream_batch(seq, vec![op]))
        .expect("a live batch");
}

/// CORE BUG. Expected: once settled, with the change feed fully delivered and nothing
/// dirty, the room holds the authority's image `[1, "bob", 99]`. Got: `flush_ok`
/// retires the key (not re-dirtied) and the head keeps the room's own
/// `[1, "ann", 42]`; the upstream edit only moved the dirty key's CAS base and is lost.
/// Nothing is dirty and no later flush carries the key, so the room never converges.
#[test]
fn settlement_race_flush_ok_swallows_a_newer_upstream_image() {
    let mut room = race_room();
    feed(&mut room, 1, item("ann", 5.0), item("ann", 42.0));
    feed(&mut room, 2, item("ann", 42.0), item("bob", 99.0));
    room.flush_ok(None).expect("settles");
    room.commit_all();
    assert_eq!(room.dirty_len(), 0);
    assert_eq!(room.rows("item"), vec![item("bob", 99.0)]);
}

/// CORE BUG, the conflict flavour. The authority holds `[1, "bob", 99]` when the batch
/// arrives and answers 409 with that image; then it changes the row to `[1, "cy", 1]`.
/// The feed delivers both edits before the 409 reaches the room. Expected: the room
/// ends at `[1, "cy", 1]`. Got: `flush_conflict` writes the 409's (older)
/// `[1, "bob", 99]` and cleans the key; the newer upstream image is lost for good.
#[test]
fn settlement_race_flush_conflict_swallows_a_newer_upstream_image() {
    let mut room = race_room();
    feed(&mut room, 1, item("ann", 5.0), item("bob", 99.0));
    feed(&mut room, 2, item("bob", 99.0), item("cy", 1.0));
    let conflict = rindle_room_core::Conflict {
        table: "item".into(),
        pk: vec![num(1.0)],
        current: Some(item("bob", 99.0)),
    };
    room.flush_conflict(&[conflict]).expect("settles");
    room.commit_all();
    assert_eq!(room.dirty_len(), 0);
    assert_eq!(room.rows("item"), vec![item("cy", 1.0)]);
}

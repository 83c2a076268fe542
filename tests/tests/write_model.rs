//! The write plane against a reference model (`docs/mutators.md`, `docs/compat.md`).
//!
//! A room over `item` / `tag` (writable) and `ctx` (context) is driven by random
//! streams: mutations by three clients through the keyed layer (inserts, updates,
//! upserts, deletes, positional writes, reads of context rows, throws, an environment
//! shortfall, an unknown mutator, writes that trip each v2 gate reason), re-sent mids,
//! mid gaps, batched acks, flushes settled by a CAS authority (ok or conflict; the
//! authority may decide a batch well before the room hears back), the authority
//! changing rows on its own at any time (also keys of a batch it decided but has not
//! reported) and streaming them (and the echo of every committed flush) upstream with a
//! lag, each upstream batch stamped with the authority's increasing commit `cv`, and
//! writes landing while a flush is in flight.
//!
//! After every step the room must match the model exactly (head rows, ledger rows,
//! watermarks, pending/dirty counts, flight, `headCv`; every verdict and every flush
//! batch), ledger rows never go backwards, `applied >= acked` and `durable <= applied`,
//! after a settlement every key it retired or conflicted whose change feed has caught up
//! holds the authority's current image, and every subscription's maintained footprint
//! equals the naive evaluator's and its client's folded frames (lmid subscriptions:
//! exactly the client's ledger row). Each case ends by flushing to quiescence:
//! `begin_flush` returns nothing, nothing is dirty or pending, every processed mid was
//! covered by a committed flush's `lmids`, and the room's rows, the authority's rows,
//! ledger and outcome rows all agree.
//!
//! The rule for an upstream image of a dirty key is the published room's: the key's CAS
//! base, or the image the flight carries (the room's own write echoing back), is no
//! news; any other image was written by someone else and wins (`Model::upstream`).
//!
//! `PROPTEST_CASES` overrides the case count; `WM_TRACE=1` (with `--nocapture`) prints the
//! head, authority, dirty keys, pending echoes and feed after every step.

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

fn config() -> ProptestConfig {
    let cases = rindle_room_tests::proptest_cases(DEFAULT_CASES);
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
    /// The room learns the decision; a commit is reported with its `cv` or without.
    /// `feed`: the change feed first delivers everything queued (the shell confirms the
    /// flush in its journal before it reports, so the echo often wins the race).
    Settle {
        with_cv: bool,
        feed: bool,
    },
    /// The authority changes a row on its own.
    Authority {
        table: u8,
        key: u8,
        val: u8,
    },
    /// The authority changes a data key the batch in flight carries (the `pick`-th; any
    /// key when nothing is in flight), as `Authority` does; with `decided` it first
    /// decides the batch (the race is then with the report, not with the CAS).
    Race {
        pick: u8,
        val: u8,
        decided: bool,
    },
    /// A client writes a data key the batch in flight carries (the `pick`-th), so the key
    /// is re-dirtied; with nothing in flight, one of the first three `item` / `tag` keys.
    Rewrite {
        client: u8,
        pick: u8,
        val: u8,
    },
    /// The change feed delivers `count` queued upstream batches (4: all of them).
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
    /// Mutations and own authority changes keep to three keys per table, so flights,
    /// re-dirtied keys and settlement races collide often.
    hot: bool,
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
        3 => Just(Step::Decide),
        2 => (any::<bool>(), 0..3u8)
            .prop_map(|(with_cv, f)| Step::Settle { with_cv, feed: f == 0 }),
        2 => (0..3u8, any::<u8>(), any::<u8>())
            .prop_map(|(table, key, val)| Step::Authority { table, key, val }),
        3 => (any::<u8>(), any::<u8>(), 0..12u8).prop_map(race),
        2 => (0..3u8, any::<u8>(), any::<u8>())
            .prop_map(|(client, pick, val)| Step::Rewrite { client, pick, val }),
        4 => (1..5u8).prop_map(|count| Step::Deliver { count }),
        1 => ast_sel().prop_map(|ast| Step::Subscribe { ast }),
    ]
}

/// A mix dwelling on the settlement races: short write–flush–settle cycles with the
/// authority changing carried keys, clients re-dirtying them and the feed catching up
/// (or not) before the settlement.
fn race_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0..3u8, any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>())
            .prop_map(|(client, kind, a, b, c)| Step::Mutate { client, kind, a, b, c }),
        1 => any::<u8>().prop_map(|count| Step::Ack { count }),
        3 => Just(Step::BeginFlush),
        1 => Just(Step::Decide),
        3 => (any::<bool>(), any::<bool>())
            .prop_map(|(with_cv, feed)| Step::Settle { with_cv, feed }),
        1 => (0..3u8, any::<u8>(), any::<u8>())
            .prop_map(|(table, key, val)| Step::Authority { table, key, val }),
        5 => (any::<u8>(), any::<u8>(), 0..12u8).prop_map(race),
        2 => (0..3u8, any::<u8>(), any::<u8>())
            .prop_map(|(client, pick, val)| Step::Rewrite { client, pick, val }),
        4 => (1..5u8).prop_map(|count| Step::Deliver { count }),
    ]
}

/// `Step::Race`: two in three decide first.
fn race((pick, val, b): (u8, u8, u8)) -> Step {
    Step::Race {
        pick,
        val,
        decided: b % 3 != 0,
    }
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
        any::<bool>(),
        prop::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 4..16),
        prop::collection::vec(ast_sel(), 1..4),
        prop_oneof![
            1 => prop::collection::vec(step(), 20..90),
            1 => prop::collection::vec(race_step(), 20..90),
        ],
    )
        .prop_map(|(mode, hot, snapshot, asts, steps)| Scenario {
            mode,
            hot,
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
    /// Own changes of a key of a batch decided but not yet reported.
    settlement_races: usize,
    settled_with_cv: usize,
    settled_without_cv: usize,
    /// Echoes of an earlier batch delivered while a later flight carries the key.
    late_echoes: usize,
    /// See `SettleReport`.
    taken_over: usize,
    past_current: usize,
    /// Upstream images that won over the room's pending change of a key.
    upstream_wins: usize,
    /// Foreign writes identical to an unechoed write of the room's.
    lookalikes: usize,
    /// Dirty keys whose CAS base was stale when a batch was built (see `check_bases`).
    stale_bases: usize,
    /// Settled keys behind the authority (see `check_settled_keys`).
    behind_after_settle: usize,
}

struct World {
    room: Room,
    model: Model,
    auth: Authority,
    /// Authority changes (own ones and flush echoes) not yet streamed to the room.
    upstream: VecDeque<Upstream>,
    /// Batches built so far (numbers the flights).
    flights: u64,
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
    /// See `Scenario::hot`.
    hot: bool,
    /// The batch in flight, as the room built it.
    flight: Option<Batch>,
    /// The authority's decision on it (and a commit's `cv`), not yet reported to the
    /// room.
    decided: Option<(Settled, u64)>,
    stats: Stats,
}

/// One authority commit waiting in the change feed.
struct Upstream {
    ops: Vec<NetOp>,
    /// For a flush echo: the flight that committed it.
    echo_of: Option<u64>,
    /// The authority's commit `cv`, which the upstream batch carries.
    commit: u64,
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
            flights: 0,
            hot: s.hot,
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
        self.check_bases()?;
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
                self.flights += 1;
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
                self.upstream.push_back(Upstream {
                    ops: echo.clone(),
                    echo_of: Some(self.flights),
                    commit: self.auth.cv,
                });
            }
        }
        self.decided = Some((settled, self.auth.cv));
    }

    /// Whether no queued upstream change touches data key `(t, id)`: the room has seen
    /// every change the authority made to it.
    fn caught_up(&self, t: usize, id: i64) -> bool {
        !self
            .upstream
            .iter()
            .flat_map(|u| &u.ops)
            .any(|op| op_key(op) == (t, id))
    }

    /// After a settlement: counts the keys of `keys` that are clean, whose feed caught
    /// up, and whose head is not the authority's image. A settlement can leave such a
    /// key behind for a while (someone else's write committed before the room's own
    /// reached it first); what must hold is that everything converges — checked at
    /// quiescence.
    fn check_settled_keys(&mut self, _what: &str, keys: &[(usize, i64)]) -> R<()> {
        let head = room_tables(&self.room);
        for &(t, id) in keys {
            if self.model.dirty.contains_key(&(t, id)) || !self.caught_up(t, id) {
                continue;
            }
            if head[t].get(&id) != self.auth.rows[t].get(&id) {
                self.stats.behind_after_settle += 1;
            }
        }
        Ok(())
    }

    /// The room learns the authority's decision (a commit with its `cv` when
    /// `with_cv`).
    fn settle(&mut self, with_cv: bool) -> R<()> {
        self.decide();
        let (Some(batch), Some((decided, commit_cv))) = (self.flight.take(), self.decided.take())
        else {
            if self.room.flush_ok().is_ok() {
                return Err("flush_ok succeeded with nothing in flight".into());
            }
            return Ok(());
        };
        let keys: Vec<(usize, i64)> = batch
            .changes
            .iter()
            .filter_map(|c| Some((table_index(&c.table)?, id_of(&c.key_image()[0]))))
            .collect();
        let report = match decided {
            Settled::Ok(_) => {
                let redirtied = self.model.dirty.values().filter(|d| d.redirtied).count();
                self.stats.redirtied += redirtied;
                let ok = self.room.flush_ok().map_err(|e| {
                    format!("flush_ok (committed at cv {commit_cv}): {}", e.message())
                })?;
                let report = self.model.flush_ok();
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
                if with_cv {
                    self.stats.settled_with_cv += 1;
                } else {
                    self.stats.settled_without_cv += 1;
                }
                self.check_settled_keys("flush_ok", &keys)?;
                report
            }
            Settled::Conflict(conflicts) => {
                let got = self
                    .room
                    .flush_conflict(&conflicts)
                    .map_err(|e| format!("flush_conflict: {}", e.message()))?;
                let (want, report) = self.model.flush_conflict(&conflicts);
                if got != want {
                    return Err(format!("flush_conflict cv: room {got:?}, model {want:?}"));
                }
                let conflicted: Vec<(usize, i64)> = conflicts
                    .iter()
                    .filter_map(|c| Some((table_index(&c.table)?, id_of(&c.pk[0]))))
                    .collect();
                self.check_settled_keys("the conflict", &conflicted)?;
                self.stats.conflicts += 1;
                report
            }
        };
        self.stats.taken_over += report.taken_over;
        self.stats.past_current += report.past_current;
        Ok(())
    }

    fn deliver(&mut self, count: usize) -> R<()> {
        for _ in 0..count {
            let Some(Upstream {
                ops,
                echo_of,
                commit,
            }) = self.upstream.pop_front()
            else {
                return Ok(());
            };
            self.stats.upstream_wins += ops
                .iter()
                .filter(|op| {
                    let new = op_image(op);
                    self.model
                        .dirty
                        .get(&op_key(op))
                        .is_some_and(|d| d.base != new && d.sent.as_ref() != Some(&new))
                })
                .count();
            self.stats.upstream_on_dirty += ops
                .iter()
                .filter(|op| self.model.dirty.contains_key(&op_key(op)))
                .count();
            let late = echo_of.is_some_and(|n| n < self.flights)
                && ops.iter().any(|op| {
                    self.model
                        .dirty
                        .get(&op_key(op))
                        .is_some_and(|d| d.sent.is_some())
                });
            self.stats.late_echoes += usize::from(late);
            let status = self
                .room
                .apply(&upstream_batch_at(
                    self.next_seq,
                    Some(commit as f64),
                    ops.clone(),
                ))
                .map_err(|e| format!("upstream seq {}: {}", self.next_seq, e.message()))?;
            if status != (ApplyStatus::Live { ops: ops.len() }) {
                return Err(format!("upstream seq {}: {status:?}", self.next_seq));
            }
            self.model.upstream(commit, &ops);
            self.next_seq += 1;
        }
        Ok(())
    }

    /// The authority changes key `(t, id)` on its own (`val` picks the image); the change
    /// joins the feed.
    fn own_change(&mut self, t: usize, id: i64, val: u8) {
        if self.decided.is_some() && self.in_flight_batch(t, id) {
            self.stats.settlement_races += 1;
        }
        let k = ids(t).iter().position(|&i| i == id).expect("a domain id") as u8;
        let op = self.auth.own_change(t, k, val);
        let image = op_image(&op);
        if self
            .model
            .echoes
            .get(&(t, id))
            .is_some_and(|q| q.iter().any(|(_, _, img)| *img == image))
        {
            // Someone else wrote exactly an image the room's own write will echo: the room
            // cannot tell the two apart (the next CAS settles it).
            self.stats.lookalikes += 1;
        }
        self.upstream.push_back(Upstream {
            ops: vec![op],
            echo_of: None,
            commit: self.auth.cv,
        });
    }

    /// Before a batch is built: counts the dirty keys whose CAS base is not the
    /// authority's image although the feed holds no undelivered change by another writer
    /// (at most the echoes of the room's own batches). The room cannot always know it —
    /// someone else's write identical to one of its own, or a write of its own that
    /// committed after upstream had taken the key over — and the batch then costs one
    /// CAS conflict, which settles the key (the quiescence checks prove that). Counted,
    /// so the generator's reach shows; never a failure.
    fn check_bases(&mut self) -> R<()> {
        for (&(t, id), d) in &self.model.dirty {
            let foreign = self
                .upstream
                .iter()
                .filter(|u| u.echo_of.is_none())
                .flat_map(|u| &u.ops)
                .any(|op| op_key(op) == (t, id));
            if foreign || d.base.as_ref() == self.auth.rows[t].get(&id) {
                continue;
            }
            self.stats.stale_bases += 1;
        }
        Ok(())
    }

    /// The data keys the batch in flight carries.
    fn flight_keys(&self) -> Vec<(usize, i64)> {
        self.flight
            .iter()
            .flat_map(|b| &b.changes)
            .filter_map(|c| Some((table_index(&c.table)?, id_of(&c.key_image()[0]))))
            .collect()
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
            } => {
                let a = if self.hot { a % 3 } else { a };
                self.mutate(CLIENTS[client as usize], &Mutation::pick(kind, a, b, c))?
            }
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
            Step::Settle { with_cv, feed } => {
                if feed {
                    self.decide();
                    self.deliver(self.upstream.len())?;
                }
                self.settle(with_cv)?
            }
            Step::Authority { table, key, val } => {
                let t = table as usize % 3;
                let key = if self.hot { key % 3 } else { key };
                self.own_change(t, pick(ids(t), key), val);
            }
            Step::Rewrite {
                client,
                pick: which,
                val,
            } => {
                let mut keys = self.flight_keys();
                if keys.is_empty() {
                    let t = which as usize % 2;
                    keys.push((t, pick(ids(t), which / 2 % 3)));
                }
                if let Some(&(t, id)) = keys.get(which as usize % keys.len()) {
                    let present = self.model.head[t].contains_key(&id);
                    let m = match (t, present) {
                        (ITEM, true) => Mutation::SetQty {
                            id,
                            qty: pick(&QTYS[..5], val),
                        },
                        (ITEM, false) => Mutation::UpsertItem {
                            id,
                            owner: pick(&OWNERS, val).into(),
                            qty: pick(&QTYS[..5], val / 3),
                        },
                        (_, true) => Mutation::Relabel {
                            id,
                            label: pick(&LABELS, val).into(),
                        },
                        (_, false) => Mutation::RawTag {
                            id,
                            item: pick(&ITEM_IDS, val),
                        },
                    };
                    self.mutate(CLIENTS[client as usize], &m)?;
                }
            }
            Step::Race {
                pick: which,
                val,
                decided,
            } => {
                if decided {
                    self.decide();
                }
                let keys = self.flight_keys();
                let (t, id) = match keys.get(which as usize % keys.len().max(1)) {
                    Some(&k) => k,
                    None => (which as usize % 3, pick(ids(which as usize % 3), which / 3)),
                };
                self.own_change(t, id, val);
            }
            Step::Deliver { count: 4 } => self.deliver(self.upstream.len())?,
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
            self.settle(true)?;
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
            self.settle(rounds % 3 != 0)?;
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
        for (t, (room, auth)) in rows.iter().zip(&self.auth.rows).enumerate() {
            let ids = room.keys().chain(auth.keys());
            for &id in ids.collect::<std::collections::BTreeSet<_>>() {
                if room.get(&id) == auth.get(&id) {
                    continue;
                }
                return Err(format!(
                    "at quiescence {}[{id}] is {:?} in the room, {:?} at the authority\n  \
                     room: {rows:?}\n  auth: {:?}",
                    NAMES[t],
                    room.get(&id),
                    auth.get(&id),
                    self.auth.rows
                ));
            }
        }
        Ok(())
    }
}

/// The image an upstream op leaves for its key (`None`: removed).
fn op_image(op: &NetOp) -> Option<Image> {
    match op {
        NetOp::Add { row, .. } | NetOp::Edit { new: row, .. } => Some(row.to_vec()),
        NetOp::Remove { .. } => None,
    }
}

/// The data key an upstream op changes.
fn op_key(op: &NetOp) -> (usize, i64) {
    let (table, image) = match op {
        NetOp::Add { table, row } | NetOp::Remove { table, row } => (table, row),
        NetOp::Edit { table, old, .. } => (table, old),
    };
    (
        table_index(table).expect("a user table"),
        id_of(&image.get(0).to_value()),
    )
}

fn run(s: &Scenario) -> R<Stats> {
    let mut w = World::open(s)?;
    for (i, step) in s.steps.iter().enumerate() {
        w.step(step)
            .map_err(|e| format!("step {i} {step:?}: {e}"))?;
        if std::env::var("WM_TRACE").is_ok() {
            eprintln!("TRACE {i} {step:?}\n   head {:?}\n   auth {:?}\n   dirty {:?}\n   echoes {:?}\n   feed {:?}", room_tables(&w.room)[1], w.auth.rows[1], w.model.dirty, w.model.echoes, w.upstream.iter().map(|u| &u.ops).collect::<Vec<_>>());
        }
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
/// flushes, re-dirtied flights, writes during a flight, upstream ops on dirty keys, and
/// the settlement races: authority changes to a decided batch's keys, late echoes of an
/// earlier batch, upstream images winning over a pending change (also of a carried
/// key), conflicts resolved past the 409's `current`.
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
        total.settlement_races += stats.settlement_races;
        total.settled_with_cv += stats.settled_with_cv;
        total.settled_without_cv += stats.settled_without_cv;
        total.late_echoes += stats.late_echoes;
        total.taken_over += stats.taken_over;
        total.past_current += stats.past_current;
        total.upstream_wins += stats.upstream_wins;
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
        ("settlement_races", total.settlement_races),
        ("settled_with_cv", total.settled_with_cv),
        ("settled_without_cv", total.settled_without_cv),
        ("late_echoes", total.late_echoes),
        ("taken_over", total.taken_over),
        ("past_current", total.past_current),
        ("upstream_wins", total.upstream_wins),
    ];
    for (what, n) in counts {
        assert!(n > 0, "no {what}: {total:?}");
    }
}

/// Found by a 20,000-case soak: flush A writes `item` 1, the key is written again and
/// flushed (B, committed), written back to A's image, and A's echo arrives late. The
/// late echo must not become the CAS base (B's image is): else the write back flushes
/// as a no-op and the room keeps an image the authority never got.
#[test]
fn a_late_echo_after_a_later_commit_leaves_room_and_authority_agreeing() {
    use Step::*;
    let s = Scenario {
        mode: WriteMode::V2 { owned: false },
        hot: true,
        snapshot: vec![(0, 1, 0), (0, 1, 0), (0, 3, 0), (0, 1, 0)],
        asts: vec![(0, 0, 0, 0, 0)],
        steps: vec![
            Authority {
                table: 0,
                key: 0,
                val: 0,
            },
            Rewrite {
                client: 0,
                pick: 100,
                val: 12,
            },
            BeginFlush,
            Mutate {
                client: 0,
                kind: 134,
                a: 29,
                b: 49,
                c: 0,
            },
            Settle {
                with_cv: false,
                feed: false,
            },
            BeginFlush,
            Rewrite {
                client: 0,
                pick: 0,
                val: 14,
            },
            Settle {
                with_cv: false,
                feed: false,
            },
            Decide,
            Mutate {
                client: 0,
                kind: 0,
                a: 0,
                b: 0,
                c: 0,
            },
            Deliver { count: 2 },
            Mutate {
                client: 0,
                kind: 0,
                a: 0,
                b: 0,
                c: 0,
            },
            Mutate {
                client: 0,
                kind: 5,
                a: 0,
                b: 0,
                c: 0,
            },
            BeginFlush,
            Authority {
                table: 0,
                key: 0,
                val: 0,
            },
            Deliver { count: 1 },
            Resend { client: 0, back: 0 },
            Mutate {
                client: 0,
                kind: 0,
                a: 0,
                b: 0,
                c: 0,
            },
            Mutate {
                client: 0,
                kind: 0,
                a: 0,
                b: 0,
                c: 0,
            },
            Mutate {
                client: 0,
                kind: 0,
                a: 0,
                b: 0,
                c: 0,
            },
        ],
    };
    run(&s).unwrap();
}

/// Found by a 100,000-case run: the authority removes and re-adds `item` -2 before
/// committing the room's flush of it (5 → 6), and that flush's echo reaches the room
/// after the foreign reports, while a later flush carrying the key is in flight and
/// then CAS-conflicts on another key. The echo of the earlier flush is the room's own
/// write, but it is also the newest image the authority holds: the key, written by
/// someone else during the flight, takes it — not the older foreign image before it.
#[test]
fn an_earlier_flushs_echo_after_foreign_reports_during_a_conflicting_flight_wins() {
    use Step::*;
    let mutate = |kind, a| Mutate {
        client: 0,
        kind,
        a,
        b: 0,
        c: 0,
    };
    let race = |pick, val, decided| Race { pick, val, decided };
    let settle = |feed| Settle {
        with_cv: false,
        feed,
    };
    let s = Scenario {
        mode: WriteMode::V1,
        hot: true,
        snapshot: vec![(0, 0, 0), (114, 27, 3), (0, 0, 3), (0, 0, 3)],
        asts: vec![(0, 0, 0, 0, 0)],
        steps: vec![
            Rewrite {
                client: 0,
                pick: 90,
                val: 32,
            },
            BeginFlush,
            race(0, 153, true),
            mutate(0, 0),
            settle(true),
            mutate(13, 96),
            BeginFlush,
            Authority {
                table: 0,
                key: 24,
                val: 0,
            },
            race(0, 91, false),
            settle(false),
            race(1, 0, false),
            Rewrite {
                client: 0,
                pick: 83,
                val: 0,
            },
            Authority {
                table: 1,
                key: 95,
                val: 0,
            },
            Authority {
                table: 0,
                key: 16,
                val: 0,
            },
            mutate(62, 54),
            BeginFlush,
            settle(true),
            mutate(0, 0),
            mutate(26, 0),
            mutate(46, 0),
        ],
    };
    run(&s).unwrap();
}

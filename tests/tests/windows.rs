//! Windows read from orderings: root queries with a `limit` hold a prefix of
//! their qualifying rows, read on from a shared table ordering, instead of every row.
//! The differential check of the oracle, aimed where such windows break: many ties in
//! the order column, NULLs in it, `start` bounds, equality guards (the ordering's
//! prefix), long runs of writes that fill a window past its trim point and empty it
//! again, and edits that move rows across the window edge in both directions. Several
//! queries share one ordering; subscribers come and go, so orderings outlive their users.

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rindle_room_core::value::Value;
use rindle_room_core::{ApplyStatus, NetOp, TableSchema};
use rindle_room_tests::harness::Harness;
use rindle_room_tests::naive::Db;
use serde_json::{json, Value as Json};

/// `t [id, g, s, v]`: `g` is the guard column, `s` the order column (few values, NULLs,
/// mixed types), `v` a payload edits change without moving the row.
fn schema() -> TableSchema {
    TableSchema::new("t", &["id", "g", "s", "v"], &[0])
}

/// A small domain: lots of ties, NULLs, and a string among the numbers.
fn s_cell(k: u8) -> Value {
    match k % 6 {
        0 => Value::Null,
        1 => Value::str("m"),
        n => Value::num(f64::from(n)),
    }
}

fn g_cell(k: u8) -> Value {
    match k % 4 {
        3 => Value::Null,
        n => Value::num(f64::from(n)),
    }
}

fn cell_json(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Num(f) => json!(f),
        Value::Str(s) => json!(&**s),
    }
}

#[derive(Clone, Debug)]
struct GenQuery {
    guard: Option<u8>,
    desc: bool,
    limit: u8,
    start: Option<(u8, u8, bool)>,
}

impl GenQuery {
    fn ast(&self) -> String {
        let mut q = json!({
            "table": "t",
            "orderBy": [["s", if self.desc { "desc" } else { "asc" }]],
            "limit": self.limit,
        });
        if let Some(g) = self.guard {
            q["where"] = json!({
                "type": "simple", "op": "=",
                "left": {"type": "column", "name": "g"},
                "right": {"type": "literal", "value": cell_json(&g_cell(g % 3))},
            });
        }
        if let Some((s, id, exclusive)) = self.start {
            q["start"] = json!({
                "row": {"s": cell_json(&s_cell(s)), "id": f64::from(id % 24)},
                "exclusive": exclusive,
            });
        }
        q.to_string()
    }
}

#[derive(Clone, Debug)]
enum GenOp {
    /// Add (or, when the id exists, edit) row `id` with `g`, `s`.
    Put { id: u8, g: u8, s: u8 },
    /// Remove row `id` if present.
    Remove { id: u8 },
    /// Change only the payload of row `id` if present.
    Touch { id: u8 },
}

#[derive(Clone, Debug)]
enum Step {
    Batch(Vec<GenOp>),
    Subscribe { sub: u8, query: u8 },
    Unsubscribe { sub: u8 },
    Drain,
    Sweep,
}

#[derive(Clone, Debug)]
struct Scenario {
    /// The room's small-group knob: 0 reads every guarded window through an ordering,
    /// 1024 through the guard index.
    small_group: usize,
    /// The room's ordering knob: how many rows a new ordering holds before a reader
    /// widens it (0: the room's default).
    first_rows: usize,
    /// The room's block-range knob: blocks of `1 << block_shift` row slots (9: the
    /// room's default, which these small tables never fill past one block).
    block_shift: u32,
    rows: Vec<(u8, u8, u8)>,
    queries: Vec<GenQuery>,
    steps: Vec<Step>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let query = (
        prop::option::weighted(0.5, 0u8..3),
        any::<bool>(),
        1u8..5,
        prop::option::weighted(0.3, (0u8..6, 0u8..24, any::<bool>())),
    )
        .prop_map(|(guard, desc, limit, start)| GenQuery {
            guard,
            desc,
            limit,
            start,
        });
    let op = prop_oneof![
        4 => (0u8..24, 0u8..4, 0u8..6).prop_map(|(id, g, s)| GenOp::Put { id, g, s }),
        2 => (0u8..24).prop_map(|id| GenOp::Remove { id }),
        1 => (0u8..24).prop_map(|id| GenOp::Touch { id }),
    ];
    let step = prop_oneof![
        6 => prop::collection::vec(op, 1..8).prop_map(Step::Batch),
        2 => (0u8..4, 0u8..8).prop_map(|(sub, query)| Step::Subscribe { sub, query }),
        1 => (0u8..4).prop_map(|sub| Step::Unsubscribe { sub }),
        2 => Just(Step::Drain),
        1 => Just(Step::Sweep),
    ];
    (
        prop_oneof![Just(0usize), Just(1024usize)],
        prop_oneof![Just(0usize), Just(1usize), Just(2usize)],
        prop_oneof![Just(9u32), 0u32..3],
        prop::collection::vec((0u8..24, 0u8..4, 0u8..6), 0..16),
        prop::collection::vec(query, 1..5),
        prop::collection::vec(step, 1..40),
    )
        .prop_map(
            |(small_group, first_rows, block_shift, rows, queries, steps)| Scenario {
                small_group,
                first_rows,
                block_shift,
                rows,
                queries,
                steps,
            },
        )
}

fn row(id: u8, g: u8, s: u8, v: u32) -> Vec<Value> {
    vec![
        Value::num(f64::from(id)),
        g_cell(g),
        s_cell(s),
        Value::num(f64::from(v)),
    ]
}

struct Run<'a> {
    sc: &'a Scenario,
    h: Harness,
    /// The rows the room holds, by id.
    rows: Vec<Option<Vec<Value>>>,
    epoch: u64,
    payload: u32,
    trace: Vec<String>,
}

impl Run<'_> {
    fn resolve(&mut self, op: &GenOp) -> Option<NetOp> {
        let table = std::sync::Arc::<str>::from("t");
        match *op {
            GenOp::Put { id, g, s } => {
                self.payload += 1;
                let new = row(id, g, s, self.payload);
                let op = match self.rows[id as usize].take() {
                    Some(old) => NetOp::Edit {
                        table,
                        old: old.into(),
                        new: new.clone().into(),
                    },
                    None => NetOp::Add {
                        table,
                        row: new.clone().into(),
                    },
                };
                self.rows[id as usize] = Some(new);
                Some(op)
            }
            GenOp::Remove { id } => self.rows[id as usize].take().map(|old| NetOp::Remove {
                table,
                row: old.into(),
            }),
            GenOp::Touch { id } => {
                let old = self.rows[id as usize].clone()?;
                self.payload += 1;
                let mut new = old.clone();
                new[3] = Value::num(f64::from(self.payload));
                self.rows[id as usize] = Some(new.clone());
                Some(NetOp::Edit {
                    table,
                    old: old.into(),
                    new: new.into(),
                })
            }
        }
    }

    fn step(&mut self, step: &Step) -> Result<(), String> {
        match step {
            Step::Batch(ops) => {
                let ops: Vec<NetOp> = ops.iter().filter_map(|o| self.resolve(o)).collect();
                self.trace.push(format!("upstream {ops:?}"));
                let status = self.h.upstream(ops)?;
                if !matches!(status, ApplyStatus::Live { .. }) {
                    return Err(format!("upstream status {status:?}"));
                }
                self.h.check_room()
            }
            Step::Subscribe { sub, query } => {
                let q = &self.sc.queries[*query as usize % self.sc.queries.len()];
                let text = q.ast();
                let name = format!("s{sub}");
                self.epoch += 1;
                self.trace.push(format!("subscribe {name} {text}"));
                let query = self
                    .h
                    .room
                    .parse_query(&text)
                    .map_err(|e| format!("parse_query: {}", e.message()))?;
                self.h.subscribe(&name, self.epoch, query)?;
                let db = Db::from_room(&self.h.room);
                self.h.check_sub(&db, &name, true)
            }
            Step::Unsubscribe { sub } => {
                let name = format!("s{sub}");
                self.trace.push(format!("unsubscribe {name}"));
                self.h.unsubscribe(&name);
                Ok(())
            }
            Step::Drain => {
                self.trace.push("drain".into());
                self.h.drain()?;
                self.h.check()
            }
            Step::Sweep => {
                self.trace.push("sweep".into());
                self.h.sweep();
                Ok(())
            }
        }
    }
}

fn run(sc: &Scenario) -> Result<(), TestCaseError> {
    let mut rows: Vec<Option<Vec<Value>>> = vec![None; 24];
    let mut snapshot = Vec::new();
    let mut trace = Vec::new();
    for &(id, g, s) in &sc.rows {
        if rows[id as usize].is_none() {
            let r = row(id, g, s, 0);
            trace.push(format!("snapshot {r:?}"));
            rows[id as usize] = Some(r.clone());
            snapshot.push(("t".to_string(), r));
        }
    }
    let mut h = Harness::open(vec![schema()], snapshot);
    h.room.set_window_small_group(sc.small_group);
    if sc.first_rows > 0 {
        h.room.set_ordering_first_rows(sc.first_rows);
    }
    h.room.set_block_shift(sc.block_shift);
    let mut r = Run {
        sc,
        h,
        rows,
        epoch: 0,
        payload: 0,
        trace,
    };
    // Every query subscribed from the start, so each ordering has users all along.
    let mut result = Ok(());
    for q in 0..sc.queries.len() {
        result = result.and_then(|()| {
            r.step(&Step::Subscribe {
                sub: 10 + q as u8,
                query: q as u8,
            })
        });
    }
    for step in &sc.steps {
        result = result.and_then(|()| r.step(step));
    }
    result = result.and_then(|()| {
        r.h.drain()?;
        r.h.check()
    });
    result.map_err(|e| {
        TestCaseError::fail(format!(
            "{e}\n--- resolved case ---\n{}",
            r.trace.join("\n")
        ))
    })
}

fn config() -> ProptestConfig {
    let cases = rindle_room_tests::proptest_cases(1024);
    ProptestConfig {
        cases,
        max_shrink_iters: 4096,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn windows_read_from_orderings_match_the_naive_evaluation(sc in scenario()) {
        run(&sc)?;
    }
}

/// A window filled past its trim point while complete, then emptied below its limit:
/// the trim must forget that it held everything, or the emptied window never reads on.
#[test]
fn a_trimmed_window_reads_on_when_it_empties() {
    let sc = Scenario {
        small_group: 0,
        first_rows: 1,
        block_shift: 9,
        rows: vec![(0, 0, 2)],
        queries: vec![GenQuery {
            guard: Some(0),
            desc: false,
            limit: 1,
            start: None,
        }],
        steps: vec![
            // Five rows at the front (ids 1..=5, s = 2), the window holds 1 of 6.
            Step::Batch((1..=5).map(|id| GenOp::Put { id, g: 0, s: 2 }).collect()),
            Step::Drain,
            // Remove the front rows one by one: each removal reads on.
            Step::Batch(vec![GenOp::Remove { id: 0 }, GenOp::Remove { id: 1 }]),
            Step::Drain,
            Step::Batch(vec![GenOp::Remove { id: 2 }, GenOp::Remove { id: 3 }]),
            Step::Drain,
            Step::Batch(vec![GenOp::Remove { id: 4 }]),
            Step::Drain,
        ],
    };
    run(&sc).unwrap();
}

/// A window read sizes its maps for the rows about to enter, for at most a few hundred
/// of them: a large window whose related levels bring next to no rows holds no memory for
/// the children that never come. 20,000 issues of 1,000 owners, one user (owner 0); a
/// window of all the issues with four related levels on the user. The query holds ~3.3
/// MB; maps sized for every row of the window would hold ~23 MB.
#[test]
fn a_large_window_reserves_nothing_for_children_that_never_come() {
    let issue = TableSchema::new("issue", &["id", "owner"], &[0]);
    let user = TableSchema::new("user", &["id"], &[0]);
    let mut rows: Vec<(String, Vec<Value>)> = (0..20_000)
        .map(|i| {
            let cells = vec![Value::num(f64::from(i)), Value::num(f64::from(i % 1000))];
            ("issue".to_string(), cells)
        })
        .collect();
    rows.push(("user".to_string(), vec![Value::num(0.0)]));
    let mut h = Harness::open(vec![issue, user], rows);
    let level = |alias: &str| {
        json!({"correlation": {"parentField": ["owner"], "childField": ["id"]},
               "subquery": {"table": "user", "alias": alias}})
    };
    let ast = json!({"table": "issue", "orderBy": [["id", "asc"]], "limit": 20_000,
        "related": [level("a"), level("b"), level("c"), level("d")]});
    let before = h.room.retained_bytes();
    let q = h.room.parse_query(&ast.to_string()).expect("valid AST");
    h.subscribe("s", 1, q).expect("subscribe");
    let added = h.room.retained_bytes() - before;
    assert!(
        added < 4_000_000,
        "the window's query holds {added} bytes: its maps were sized for children that never came"
    );
}

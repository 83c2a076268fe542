//! The differential oracle (the footprint of docs/protocol.md): random schemas, rows, wire ASTs and upstream
//! op sequences; after every upstream batch each subscriber's maintained footprint must
//! equal the naive footprint over the current head, and after every drain the client
//! model folded from its frames must equal it too.
//!
//! Three properties share that check: the broad one (2–4 tables, queries 3 levels deep,
//! subscribers coming and going between drains), a dense one (one or two tiny tables,
//! so levels of one query keep meeting the same rows — where stale-image bugs live) and
//! a predicate one (many root-only filters over one table).
//!
//! ASTs go through `Room::parse_query` as JSON text, in cosmetic variants that must
//! share one pipeline. Several subscribers attach, detach and re-attach between drains.
//! A failure message ends with the resolved case (schema, rows, AST texts, ops) of the
//! shrunk input. `PROPTEST_CASES` overrides the case count.

#[path = "support/gen.rs"]
mod gen;
#[path = "support/resolve.rs"]
mod resolve;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rindle_room_core::value::Value;
use rindle_room_core::{ApplyStatus, NetOp};
use rindle_room_tests::harness::Harness;
use rindle_room_tests::naive::Db;

use gen::{Scenario, Step};
use resolve::Schema;

/// Cases per property unless `PROPTEST_CASES` says otherwise.
const DEFAULT_CASES: u32 = 1024;

fn config() -> ProptestConfig {
    let cases = rindle_room_tests::proptest_cases(DEFAULT_CASES);
    ProptestConfig {
        cases,
        max_shrink_iters: 4096,
        // A failure prints the whole resolved case; nothing is written to the tree.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Renders a row compactly for the trace.
fn show_row(row: &[Value]) -> String {
    let cells: Vec<String> = row
        .iter()
        .map(|v| match v {
            Value::Null => "null".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Num(f) => f.to_string(),
            Value::Str(s) => format!("{s:?}"),
        })
        .collect();
    format!("[{}]", cells.join(","))
}

fn show_op(op: &NetOp) -> String {
    match op {
        NetOp::Add { table, row } => format!("add {table} {}", show_row(&row.to_vec())),
        NetOp::Remove { table, row } => format!("remove {table} {}", show_row(&row.to_vec())),
        NetOp::Edit { table, old, new } => {
            format!(
                "edit {table} {} -> {}",
                show_row(&old.to_vec()),
                show_row(&new.to_vec())
            )
        }
    }
}

/// One running case: the room, the generator's view of the rows, who is attached to
/// which query, and a readable trace of everything resolved so far.
struct Run<'a> {
    sc: &'a Scenario,
    schema: Schema,
    rows: Vec<Vec<Vec<Value>>>,
    h: Harness,
    /// `(subscriber, query index)`.
    /// Subscriber → (query, whether its AST has a `select`): a `select` projects the
    /// rows, so only ASTs that agree on it share a pipeline.
    attached: Vec<(String, (usize, bool))>,
    epoch: u64,
    trace: Vec<String>,
}

impl<'a> Run<'a> {
    fn new(sc: &'a Scenario) -> Run<'a> {
        let schema = Schema::new(&sc.tables);
        let mut trace = Vec::new();
        for t in &schema.tables {
            let s = &t.schema;
            trace.push(format!(
                "table {} columns {:?} pk {:?} kinds {:?}",
                s.name, s.columns, s.primary_key, t.kinds
            ));
        }
        let mut rows: Vec<Vec<Vec<Value>>> = vec![Vec::new(); schema.tables.len()];
        let mut snapshot = Vec::new();
        for (t, cells) in &sc.rows {
            let t = schema.table(*t);
            let row = schema.row(t, cells);
            let pk = &schema.tables[t].schema.primary_key;
            if !rows[t].iter().any(|r| pk.iter().all(|&c| r[c] == row[c])) {
                let name = schema.tables[t].schema.name.to_string();
                trace.push(format!("snapshot {name} {}", show_row(&row)));
                rows[t].push(row.clone());
                snapshot.push((name, row));
            }
        }
        let tables = schema.tables.iter().map(|t| t.schema.clone()).collect();
        let mut h = Harness::open(tables, snapshot);
        // Half the cases hold only a one-row front of each related partition, so
        // partitions go partial, read on and trim all the time.
        if sc.rows.len().is_multiple_of(2) {
            h.room.set_related_front_rows(1);
            trace.push("related fronts of 1 row".to_string());
        }
        // A third hold one-row orderings over blocks of one slot, so ordering builds
        // skip blocks and readers widen them all the time.
        if sc.rows.len() % 3 == 1 {
            h.room.set_ordering_first_rows(1);
            h.room.set_block_shift(0);
            trace.push("orderings of 1 row, blocks of 1 slot".to_string());
        }
        Run {
            sc,
            schema,
            rows,
            h,
            attached: Vec::new(),
            epoch: 0,
            trace,
        }
    }

    fn subscribe(&mut self, sub: u8, q: u8, variant: u8) -> Result<(), String> {
        let q = q as usize % self.sc.queries.len();
        let name = format!("s{sub}");
        let level = &self.sc.queries[q];
        let text = resolve::ast(&self.schema, level, variant).to_string();
        self.epoch += 1;
        self.trace
            .push(format!("subscribe {name} epoch {} {text}", self.epoch));
        let query = self
            .h
            .room
            .parse_query(&text)
            .map_err(|e| format!("parse_query: {}", e.message()))?;
        let identity = (q, resolve::selects(variant));
        let shared = self
            .attached
            .iter()
            .any(|(s, a)| *a == identity && *s != name);
        let reused = self.h.subscribe(&name, self.epoch, query)?;
        if shared && !reused {
            return Err(format!("{name}: an identical query was not deduplicated"));
        }
        self.attached.retain(|(s, _)| *s != name);
        self.attached.push((name.clone(), identity));
        let db = Db::from_room(&self.h.room);
        self.h.check_sub(&db, &name, true)
    }

    fn step(&mut self, step: &Step) -> Result<(), String> {
        match step {
            Step::Upstream(ops) => {
                let mut resolved = Vec::new();
                for g in ops {
                    if let Some(op) = resolve::op(&self.schema, &mut self.rows, g) {
                        resolved.push(op);
                    }
                }
                let shown: Vec<String> = resolved.iter().map(show_op).collect();
                self.trace.push(format!("upstream [{}]", shown.join("; ")));
                let status = self.h.upstream(resolved)?;
                if !matches!(status, ApplyStatus::Live { .. }) {
                    return Err(format!("upstream status {status:?}"));
                }
                self.h.check_room()
            }
            Step::Drain => {
                self.trace.push("drain".into());
                self.h.drain()?;
                self.h.check()
            }
            Step::Subscribe {
                sub,
                query,
                variant,
            } => self.subscribe(*sub, *query, *variant),
            Step::Unsubscribe { sub } => {
                let name = format!("s{sub}");
                self.trace.push(format!("unsubscribe {name}"));
                self.h.unsubscribe(&name);
                self.attached.retain(|(s, _)| *s != name);
                Ok(())
            }
            Step::Sweep => {
                self.trace.push("sweep".into());
                self.h.sweep();
                Ok(())
            }
        }
    }

    fn all(&mut self) -> Result<(), String> {
        for &(sub, q) in &self.sc.initial {
            self.subscribe(sub, q, 0)?;
        }
        for step in &self.sc.steps {
            self.step(step)?;
        }
        self.trace.push("drain (final)".into());
        self.h.drain()?;
        self.h.check()?;
        if self.h.drain()? != 0 {
            return Err("an idle drain emitted frames".into());
        }
        Ok(())
    }
}

fn run(sc: &Scenario) -> Result<(), TestCaseError> {
    let mut r = Run::new(sc);
    r.all().map_err(|e| {
        let at = r.trace.last().cloned().unwrap_or_default();
        TestCaseError::fail(format!(
            "{e}\nat: {at}\n--- resolved case ---\n{}",
            r.trace.join("\n")
        ))
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn maintained_footprint_equals_naive_footprint(sc in gen::scenario()) {
        run(&sc)?;
    }

    #[test]
    fn dense_small_tables_match_the_naive_footprint(sc in gen::dense_scenario()) {
        run(&sc)?;
    }

    #[test]
    fn leaf_predicates_match_the_naive_evaluation(sc in gen::predicate_scenario()) {
        run(&sc)?;
    }
}

//! Replays the 26 recorded IVM fixtures (`tests/vectors/diff/*.json`) through a real
//! [`Room`](rindle_room_core::Room) and checks, before and after the pushes:
//!
//! - the room's footprint equals the naive footprint, and the client model folded from
//!   the subscriber's frames equals it too;
//! - the rows of `expected.data` (root rows and every nested relationship, recursively)
//!   are exactly the naive footprint's non-witness rows, and all of them are in the
//!   room's footprint.
//!
//! Push fixtures run three ways: all pushes in one upstream batch, one batch per push
//! with a drain after each, and one batch per push with a single drain at the end.
//! Set `RINDLE_DIFF_VECTORS` to read the fixtures from another directory.

#[path = "support/ordered_json.rs"]
mod ordered_json;

use std::path::PathBuf;

use ordered_json::Json;
use rindle_room_core::ast::Query;
use rindle_room_core::value::Value;
use rindle_room_core::{NetOp, TableSchema};
use rindle_room_tests::harness::{diff, Harness};
use rindle_room_tests::naive::{self, Db, Member};

/// How many fixtures the vector set holds.
const FIXTURE_COUNT: usize = 26;

/// One parsed fixture.
struct Fixture {
    name: String,
    kind: String,
    tables: Vec<TableSchema>,
    rows: Vec<(String, Vec<Value>)>,
    ast: Json,
    pushes: Vec<NetOp>,
    expected: Json,
}

fn fixture_dir() -> PathBuf {
    match std::env::var_os("RINDLE_DIFF_VECTORS") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors/diff"),
    }
}

fn schema_of<'a>(tables: &'a [TableSchema], name: &str) -> &'a TableSchema {
    tables
        .iter()
        .find(|t| &*t.name == name)
        .unwrap_or_else(|| panic!("fixture: unknown table {name:?}"))
}

/// A keyed row object → a positional row (columns by name; a missing column is NULL;
/// keys that are not columns — relationships — are ignored).
fn positional(schema: &TableSchema, obj: &Json) -> Vec<Value> {
    schema
        .columns
        .iter()
        .map(|c| obj.get(c).map_or(Value::Null, Json::cell))
        .collect()
}

fn load(path: &PathBuf) -> Fixture {
    let text = std::fs::read_to_string(path).expect("fixture is readable");
    let json = Json::parse(&text);
    let input = json.at("input");
    let mut tables = Vec::new();
    for (name, source) in input.at("sources").members() {
        let columns: Vec<&str> = source
            .at("columns")
            .members()
            .iter()
            .map(|(c, _)| c.as_str())
            .collect();
        let pk: Vec<usize> = source
            .at("primaryKeys")
            .items()
            .iter()
            .map(|k| {
                let k = k.text();
                columns
                    .iter()
                    .position(|c| *c == k)
                    .expect("pk names a column")
            })
            .collect();
        tables.push(TableSchema::new(name, &columns, &pk));
    }
    let mut rows = Vec::new();
    for (name, contents) in input.at("sourceContents").members() {
        let schema = schema_of(&tables, name);
        for obj in contents.items() {
            rows.push((name.clone(), positional(schema, obj)));
        }
    }
    let mut pushes = Vec::new();
    for push in input.get("pushes").map_or(&[][..], Json::items) {
        let (name, change) = (push.items()[0].text(), &push.items()[1]);
        let schema = schema_of(&tables, name);
        let table = name.into();
        let row = positional(schema, change.at("row")).into();
        pushes.push(match change.at("type").text() {
            "add" => NetOp::Add { table, row },
            "remove" => NetOp::Remove { table, row },
            "edit" => NetOp::Edit {
                table,
                old: positional(schema, change.at("oldRow")).into(),
                new: row,
            },
            other => panic!("fixture: unknown push type {other:?}"),
        });
    }
    Fixture {
        name: path.file_name().unwrap().to_string_lossy().into_owned(),
        kind: json.at("kind").text().to_string(),
        tables,
        rows,
        ast: input.at("ast").clone(),
        pushes,
        expected: json.at("expected").clone(),
    }
}

/// Flattens a result tree (`data` at AST level `level`) into `(table, row)` members.
fn flatten(tables: &[TableSchema], level: &Json, data: &Json, out: &mut Vec<Member>) {
    let name = level.at("table").text();
    let schema = schema_of(tables, name);
    let objects: Vec<&Json> = match data {
        Json::Arr(items) => items.iter().collect(),
        Json::Null => Vec::new(),
        obj => vec![obj],
    };
    // Duplicate aliases: the last `related` entry wins.
    let mut related: Vec<(&str, &Json)> = Vec::new();
    for r in level.get("related").map_or(&[][..], Json::items) {
        let sub = r.at("subquery");
        let alias = sub.at("alias").text();
        related.retain(|(a, _)| *a != alias);
        related.push((alias, sub));
    }
    for obj in objects {
        let member = (name.to_string(), positional(schema, obj));
        if !out.contains(&member) {
            out.push(member);
        }
        for (alias, sub) in &related {
            let nested = obj
                .get(alias)
                .unwrap_or_else(|| panic!("fixture: data lacks relationship {alias:?}"));
            flatten(tables, sub, nested, out);
        }
    }
}

/// Checks `expected.data` against the naive non-witness rows and the room's footprint.
fn check_expected_data(f: &Fixture, h: &Harness, query: &Query) -> Result<(), String> {
    let db = Db::from_room(&h.room);
    let mut want = Vec::new();
    flatten(&f.tables, &f.ast, f.expected.at("data"), &mut want);
    naive::sort_members(&db, &mut want);
    let non_witness = naive::non_witness_rows(&db, query);
    if want != non_witness {
        return Err(format!(
            "expected.data rows differ from the naive non-witness rows\n{}",
            diff(&want, &non_witness)
        ));
    }
    let room_fp = h.footprint("c1")?;
    for m in &want {
        if !room_fp.contains(m) {
            return Err(format!(
                "expected.data row {m:?} missing from the room footprint"
            ));
        }
    }
    Ok(())
}

/// Opens a room on the fixture's snapshot and subscribes its AST as `c1`.
fn open(f: &Fixture) -> Result<(Harness, Query), String> {
    let mut h = Harness::open(f.tables.clone(), f.rows.clone());
    let query = h
        .room
        .parse_query(&f.ast.to_serde().to_string())
        .map_err(|e| format!("parse_query: {}", e.message()))?;
    h.subscribe("c1", 7, query.clone())?;
    h.check()?;
    Ok((h, query))
}

/// How a push fixture's pushes reach the room.
#[derive(Clone, Copy, Debug)]
enum Delivery {
    OneBatch,
    BatchPerPushDrainEach,
    BatchPerPushDrainOnce,
}

fn run_pushes(f: &Fixture, delivery: Delivery) -> Result<(), String> {
    let (mut h, query) = open(f)?;
    let mut frames = 0;
    match delivery {
        Delivery::OneBatch => {
            h.upstream(f.pushes.clone())?;
            frames += h.drain()?;
            h.check()?;
        }
        Delivery::BatchPerPushDrainEach => {
            for op in &f.pushes {
                h.upstream(vec![op.clone()])?;
                frames += h.drain()?;
                h.check()?;
            }
        }
        Delivery::BatchPerPushDrainOnce => {
            for op in &f.pushes {
                h.upstream(vec![op.clone()])?;
            }
            frames += h.drain()?;
            h.check()?;
        }
    }
    check_expected_data(f, &h, &query)?;
    // Every push fixture changes the visible result, so the subscriber must hear of it.
    if frames == 0 {
        return Err(format!("{delivery:?}: the pushes produced no frame"));
    }
    // A second drain has nothing left to say.
    if h.drain()? != 0 {
        return Err(format!("{delivery:?}: an idle drain emitted frames"));
    }
    Ok(())
}

fn run(f: &Fixture) -> Result<(), String> {
    match f.kind.as_str() {
        "fetch" => {
            let (h, query) = open(f)?;
            check_expected_data(f, &h, &query)
        }
        "push" => {
            for delivery in [
                Delivery::OneBatch,
                Delivery::BatchPerPushDrainEach,
                Delivery::BatchPerPushDrainOnce,
            ] {
                run_pushes(f, delivery).map_err(|e| format!("{delivery:?}: {e}"))?;
            }
            Ok(())
        }
        other => Err(format!("unknown fixture kind {other:?}")),
    }
}

#[test]
fn every_diff_fixture_matches_the_naive_footprint() {
    let dir = fixture_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    assert_eq!(
        paths.len(),
        FIXTURE_COUNT,
        "fixture count in {}",
        dir.display()
    );
    let mut failures = Vec::new();
    let (mut fetch, mut push) = (0, 0);
    for path in &paths {
        let f = load(path);
        match f.kind.as_str() {
            "fetch" => fetch += 1,
            _ => push += 1,
        }
        if let Err(e) = run(&f) {
            failures.push(format!("{}: {e}", f.name));
        }
    }
    assert_eq!((fetch, push), (15, 11), "fixture kinds");
    assert!(
        failures.is_empty(),
        "{} fixture(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

//! Generated CRUD mutators against a real room, and the Rust API for host mutators.

mod mutators_support;

use mutators_support::{n, rejected, row, rows, run, run_named, s, seeded, tables};
use rindle_room_core::{MutationTx, Value};
use rindle_room_smol::mutators::crud::{self, CrudMutator, CrudOp};
use rindle_room_smol::mutators::{MutatorCtx, MutatorError, Registry};
use serde_json::{json, Value as Json};

fn registry() -> Registry {
    let mut registry = Registry::new();
    for table in tables() {
        crud::register(&mut registry, &table);
    }
    registry
}

#[test]
fn register_adds_four_mutators_per_table() {
    let registry = registry();
    let names: Vec<&str> = registry.names().collect();
    assert_eq!(
        names,
        [
            "member.delete",
            "member.insert",
            "member.update",
            "member.upsert",
            "note.delete",
            "note.insert",
            "note.update",
            "note.upsert",
            "pair.delete",
            "pair.insert",
            "pair.update",
            "pair.upsert",
        ]
    );
    assert_eq!(
        crud::names("note"),
        ["note.insert", "note.update", "note.upsert", "note.delete"]
    );
    assert_eq!(crud::name("t", CrudOp::Upsert), "t.upsert");
    let m = CrudMutator::new("note", CrudOp::Delete);
    assert_eq!((m.table(), m.op()), ("note", CrudOp::Delete));
}

#[test]
fn insert() {
    let reg = registry();
    let mut room = seeded();
    let args = json!({"id": "n2", "body": "b", "owner": "bob", "tags": ["a", {"k": 1}]});
    run_named(&mut room, &reg, "note.insert", args.clone(), "bob").expect("inserts");
    assert_eq!(
        row(&room, "note", &s("n2")),
        Some(vec![s("n2"), s("b"), s("bob"), s(r#"["a",{"k":1}]"#)])
    );
    assert_eq!(
        rejected(run_named(&mut room, &reg, "note.insert", args, "bob")),
        "add of an existing primary key in `note`"
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "note.insert",
            json!({"id": "n3", "body": "b", "owner": "o"}),
            "bob"
        )),
        "insert: a full \"note\" row must name column \"tags\""
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "note.insert",
            json!({"id": "n3", "body": "b", "owner": "o", "tags": null, "extra": 1}),
            "bob"
        )),
        "insert: \"note\" has no column \"extra\""
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "note.insert",
            json!(["n3"]),
            "bob"
        )),
        "the args of `note.insert` must be an object of column values, got an array"
    );
    assert_eq!(row(&room, "note", &s("n3")), None);
}

#[test]
fn update() {
    let reg = registry();
    let mut room = seeded();
    run_named(
        &mut room,
        &reg,
        "note.update",
        json!({"id": "n1", "tags": {"x": true}}),
        "ann",
    )
    .expect("updates");
    assert_eq!(
        row(&room, "note", &s("n1")),
        Some(vec![s("n1"), s("hello"), s("ann"), s(r#"{"x":true}"#)])
    );
    let before = rows(&room, "note");
    run_named(
        &mut room,
        &reg,
        "note.update",
        json!({"id": "ghost", "body": "x"}),
        "ann",
    )
    .expect("a missing row is a no-op");
    assert_eq!(rows(&room, "note"), before);
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "note.update",
            json!({"body": "x"}),
            "ann"
        )),
        "update: \"note\" needs primary-key column \"id\""
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "note.update",
            json!(null),
            "ann"
        )),
        "the args of `note.update` must be an object of column values, got null"
    );
}

#[test]
fn upsert() {
    let reg = registry();
    let mut room = seeded();
    let replace = json!({"id": "n1", "body": "new", "owner": "bob", "tags": null});
    run_named(&mut room, &reg, "note.upsert", replace, "bob").expect("replaces");
    assert_eq!(
        row(&room, "note", &s("n1")),
        Some(vec![s("n1"), s("new"), s("bob"), Value::Null])
    );
    let add = json!({"id": "n5", "body": "5", "owner": "bob", "tags": 5});
    run_named(&mut room, &reg, "note.upsert", add, "bob").expect("adds");
    assert_eq!(
        row(&room, "note", &s("n5")),
        Some(vec![s("n5"), s("5"), s("bob"), n(5.0)])
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "note.upsert",
            json!({"id": "n6"}),
            "bob"
        )),
        "upsert: a full \"note\" row must name column \"body\""
    );
}

#[test]
fn delete() {
    let reg = registry();
    let mut room = seeded();
    run_named(
        &mut room,
        &reg,
        "pair.delete",
        json!({"a": 1, "b": 2}),
        "ann",
    )
    .expect("by pk");
    assert!(rows(&room, "pair").is_empty());
    run_named(
        &mut room,
        &reg,
        "note.delete",
        json!({"id": "n1", "body": "hello", "owner": "ann", "tags": null}),
        "ann",
    )
    .expect("a whole row names its pk");
    assert!(rows(&room, "note").is_empty());
    run_named(&mut room, &reg, "note.delete", json!({"id": "n1"}), "ann")
        .expect("a missing row is a no-op");
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "pair.delete",
            json!({"a": 1}),
            "ann"
        )),
        "delete: \"pair\" needs primary-key column \"b\""
    );
}

#[test]
fn only_owned_tables_are_writable() {
    let reg = registry();
    let mut room = seeded();
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "member.insert",
            json!({"user": "carl", "role": "admin"}),
            "carl"
        )),
        "table `member` is not owned by this room — mutators write owned tables only"
    );
    assert_eq!(rows(&room, "member").len(), 2);
}

/// A host mutator written in Rust: bumps a counter cell, reading it first.
fn bump(tx: &mut MutationTx<'_>, args: &Json, ctx: &MutatorCtx) -> Result<(), MutatorError> {
    let a = args["a"]
        .as_f64()
        .ok_or_else(|| MutatorError::Rejected(String::from("`a` must be a number")))?;
    let key = [
        (String::from("a"), Value::num(a)),
        (String::from("b"), Value::num(2.0)),
    ];
    let current = tx.row("pair", &key)?;
    let next = match current
        .as_ref()
        .and_then(|r| r.iter().find(|(c, _)| c == "v"))
    {
        Some((_, Value::Num(v))) => v + 1.0,
        _ => 1.0,
    };
    let mut row = key.to_vec();
    row.push((String::from("v"), Value::num(next)));
    tx.upsert("pair", &row)?;
    if ctx.user.is_empty() {
        return Err(MutatorError::Rejected(String::from("sign in first")));
    }
    Ok(())
}

#[test]
fn host_rust_mutators_share_the_registry() {
    let mut reg = registry();
    reg.register("bump", bump);
    reg.register(
        "query",
        |tx: &mut MutationTx<'_>, _: &Json, _: &MutatorCtx| -> Result<(), MutatorError> {
            tx.query()?;
            Ok(())
        },
    );
    let mut room = seeded();
    run_named(&mut room, &reg, "bump", json!({"a": 7}), "ann").expect("adds");
    run_named(&mut room, &reg, "bump", json!({"a": 7}), "ann").expect("bumps");
    assert_eq!(
        row(&room, "pair", &n(7.0)),
        Some(vec![n(7.0), n(2.0), n(2.0)])
    );
    assert_eq!(
        rejected(run_named(&mut room, &reg, "bump", json!({"a": 7}), "")),
        "sign in first"
    );
    assert_eq!(row(&room, "pair", &n(7.0)).unwrap()[2], n(2.0));

    let query = reg.get("query").unwrap().clone();
    let err = run(&mut room, &*query, json!({}), "ann").unwrap_err();
    assert!(
        matches!(&err, MutatorError::Environment(m) if m.contains("tx.query")),
        "{err:?}"
    );
}

//! A live room with the write plane enabled, and a helper that runs one mutator through
//! the full begin → `mutation_tx` → commit / reject cycle, as the server does.

#![allow(dead_code)]

use std::sync::Arc;

use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::{Begin, Commit, Hello, NetOp, Room, Row, TableSchema, UpstreamBatch, Value};
use rindle_room_smol::mutators::{Mutator, MutatorCtx, MutatorError, Registry};
use serde_json::Value as Json;

/// `note(id, body, owner, tags)` pk id; `member(user, role)` pk user;
/// `pair(a, b, v)` pk (a, b).
pub fn tables() -> Vec<TableSchema> {
    vec![
        TableSchema::new("note", &["id", "body", "owner", "tags"], &[0]),
        TableSchema::new("member", &["user", "role"], &[0]),
        TableSchema::new("pair", &["a", "b", "v"], &[0, 1]),
    ]
}

/// A number cell.
pub fn n(x: f64) -> Value {
    Value::num(x)
}

/// A text cell.
pub fn s(x: &str) -> Value {
    Value::str(x)
}

/// A live room over [`tables`] seeded with `rows`, writes enabled (v1) over `owned`.
pub fn room(rows: &[(&str, Vec<Value>)], owned: &[&str]) -> Room {
    room_with(tables(), rows, owned)
}

/// A live room over `tables` seeded with `rows`, writes enabled (v1) over `owned`.
pub fn room_with(
    mut tables: Vec<TableSchema>,
    rows: &[(&str, Vec<Value>)],
    owned: &[&str],
) -> Room {
    // A hello lists its tables sorted by name.
    tables.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    let fp = normalized_fp(tables.iter());
    let hello = Hello {
        epoch: 1,
        comparator_version: 2,
        tables,
        normalized_fp: fp.clone(),
    };
    let mut room = Room::open(hello, 60_000).expect("the hello is valid");
    let ops = rows
        .iter()
        .map(|(t, cells)| NetOp::Add {
            table: Arc::from(*t),
            row: Row::from(cells.clone()),
        })
        .collect();
    room.apply(&UpstreamBatch {
        epoch: 1,
        seq: 0,
        normalized_fp: fp,
        cv: Some(1.0),
        ops,
    })
    .expect("the snapshot applies");
    room.enable_writes(owned).expect("writes enable");
    room
}

/// The default seed: note n1 by ann, members ann (admin) and bob (viewer), pair (1, 2).
pub fn seeded() -> Room {
    room(
        &[
            ("note", vec![s("n1"), s("hello"), s("ann"), Value::Null]),
            ("member", vec![s("ann"), s("admin")]),
            ("member", vec![s("bob"), s("viewer")]),
            ("pair", vec![n(1.0), n(2.0), s("x")]),
        ],
        &["note", "pair"],
    )
}

/// Runs `mutator` as client `c`'s next mutation: commits on success, rejects (consuming
/// the mid with no effects) on error.
pub fn run(
    room: &mut Room,
    mutator: &dyn Mutator,
    args: Json,
    user: &str,
) -> Result<(), MutatorError> {
    let mid = room.applied_mid("c") + 1;
    let args_text = args.to_string();
    let begin = room
        .begin_mutation("c", mid, Some("m"), Some(&args_text))
        .expect("begin");
    assert_eq!(begin, Begin::Tx);
    let ctx = MutatorCtx {
        user: user.to_string(),
    };
    let result = {
        let mut tx = room.mutation_tx().expect("a transaction is open");
        mutator.run(&mut tx, &args, &ctx)
    };
    match &result {
        Ok(()) => match room.commit_mutation().expect("commit") {
            Commit::Applied { .. } => {}
            Commit::Deopt(d) => panic!("unexpected deopt {d:?}"),
        },
        Err(e) => {
            let reason = match e {
                MutatorError::Rejected(r) | MutatorError::Environment(r) => r.clone(),
            };
            room.reject_mutation(Some("rejected"), Some(&reason))
                .expect("reject");
        }
    }
    assert_eq!(room.applied_mid("c"), mid, "the mid is consumed either way");
    result
}

/// Runs the registered mutator `name`.
pub fn run_named(
    room: &mut Room,
    registry: &Registry,
    name: &str,
    args: Json,
    user: &str,
) -> Result<(), MutatorError> {
    let mutator = registry
        .get(name)
        .unwrap_or_else(|| panic!("no mutator {name:?}"))
        .clone();
    run(room, &*mutator, args, user)
}

/// The rows of `table`, sorted by the comparator over all cells.
pub fn rows(room: &Room, table: &str) -> Vec<Vec<Value>> {
    let mut out: Vec<Vec<Value>> = room.rows(table).iter().map(|r| r.to_vec()).collect();
    out.sort_by(|a, b| {
        a.iter()
            .zip(b.iter())
            .map(|(x, y)| rindle_room_core::value::compare(x, y))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    out
}

/// The one `table` row whose first cell is `id`.
pub fn row(room: &Room, table: &str, id: &Value) -> Option<Vec<Value>> {
    rows(room, table).into_iter().find(|r| &r[0] == id)
}

/// The rejection reason, or a panic.
pub fn rejected(result: Result<(), MutatorError>) -> String {
    match result {
        Err(MutatorError::Rejected(reason)) => reason,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

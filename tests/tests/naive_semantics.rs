//! Pins the naive evaluator — and through it the room — to the hand-read rules of
//! docs/design/wire.md, "The query AST": the NULL table (including `NOT IN` with a `null`
//! element), the LIKE rules, and the `start` edge cases. The oracle only proves "room ==
//! naive"; these cases prove "naive == spec".
//!
//! Every case runs twice: on the naive evaluator, and as a one-table room subscription
//! whose footprint must hold exactly the rows the case selects.

use rindle_room_core::value::Value;
use rindle_room_core::TableSchema;
use rindle_room_tests::harness::Harness;
use rindle_room_tests::naive::{self, Db};

fn num(f: f64) -> Value {
    Value::num(f)
}

/// The cells every predicate case is tried on (row `id` = position).
fn cells() -> Vec<Value> {
    vec![
        Value::Null,
        num(1.0),
        num(2.0),
        num(1.5),
        Value::str("a"),
        Value::str("A"),
        Value::str("ab"),
        Value::str("a%"),
        Value::str("_b"),
        Value::str("é"),
        Value::str("É"),
        Value::str("x\\y"),
        Value::Bool(true),
    ]
}

/// `(op, literal JSON, the positions in `cells()` that must pass)`.
const CASES: &[(&str, &str, &[usize])] = &[
    ("=", "1", &[1]),
    ("=", "1.0", &[1]),
    ("=", "null", &[]),
    ("!=", "1", &[2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
    ("!=", "null", &[]),
    ("<", "2", &[1, 3, 12]),
    (">=", "\"a\"", &[4, 6, 7, 9, 10, 11]),
    ("<", "null", &[]),
    ("IS", "null", &[0]),
    ("IS", "1", &[1]),
    ("IS NOT", "null", &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
    ("IS NOT", "1", &[0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
    ("IN", "[1, null, \"a\"]", &[1, 4]),
    ("IN", "[]", &[]),
    ("IN", "null", &[]),
    // The null element never matches, so `2 NOT IN [1, null]` holds.
    ("NOT IN", "[1, null]", &[2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
    ("NOT IN", "[]", &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
    ("LIKE", "\"a%\"", &[4, 6, 7]),
    ("LIKE", "\"A%\"", &[5]),
    ("LIKE", "\"_\"", &[4, 5]),
    ("LIKE", "\"__\"", &[6, 7, 8, 9, 10]),
    ("LIKE", "\"a\\\\%\"", &[7]),
    ("LIKE", "\"\\\\_b\"", &[8]),
    ("LIKE", "\"x\\\\y\"", &[11]),
    ("LIKE", "\"x\\\\\\\\y\"", &[11]),
    ("ILIKE", "\"A%\"", &[4, 5, 6, 7]),
    ("ILIKE", "\"é\"", &[9]),
    ("NOT LIKE", "\"a%\"", &[1, 2, 3, 5, 8, 9, 10, 11, 12]),
    ("NOT ILIKE", "\"A%\"", &[1, 2, 3, 8, 9, 10, 11, 12]),
    ("LIKE", "null", &[]),
];

fn one_table(values: &[Value]) -> Harness {
    let table = TableSchema::new("t", &["id", "c"], &[0]);
    let rows = values
        .iter()
        .enumerate()
        .map(|(i, v)| ("t".to_string(), vec![num(i as f64), v.clone()]))
        .collect();
    Harness::open(vec![table], rows)
}

fn ids(members: &[(String, Vec<Value>)]) -> Vec<usize> {
    let mut out: Vec<usize> = members
        .iter()
        .map(|(_, r)| match r[0] {
            Value::Num(f) => f as usize,
            _ => panic!("id is a number"),
        })
        .collect();
    out.sort_unstable();
    out
}

#[test]
fn leaf_predicates_follow_the_spec_tables() {
    let mut h = one_table(&cells());
    let db = Db::from_room(&h.room);
    let mut failures = Vec::new();
    for (i, (op, lit, want)) in CASES.iter().enumerate() {
        let ast = format!(
            r#"{{"table":"t","where":{{"type":"simple","op":"{op}",
                "left":{{"type":"column","name":"c"}},
                "right":{{"type":"literal","value":{lit}}}}}}}"#
        );
        let q = h.room.parse_query(&ast).expect("valid AST");
        let from_naive = ids(&naive::footprint(&db, &q));
        let sub = format!("s{i}");
        h.subscribe(&sub, 1, q).expect("subscribe");
        let from_room = ids(&h.footprint(&sub).expect("attached"));
        if from_naive != *want || from_room != *want {
            failures.push(format!(
                "c {op} {lit}: want {want:?}, naive {from_naive:?}, room {from_room:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A `start` bound that omits the pk tie-breaker compares NULL there — under an ascending
/// pk every tie survives even `exclusive`; a NULL under `desc` sorts last.
#[test]
fn start_bounds_follow_the_spec_edge_cases() {
    let table = TableSchema::new("issue", &["id", "score"], &[0]);
    let scores = [(1.0, 10.0), (2.0, 40.0), (3.0, 40.0), (4.0, 50.0)];
    let rows = scores
        .iter()
        .map(|&(id, s)| ("issue".to_string(), vec![num(id), num(s)]))
        .collect();
    let mut h = Harness::open(vec![table], rows);
    let db = Db::from_room(&h.room);
    let cases: &[(&str, &[usize])] = &[
        // Ties with the bound on `score` survive `exclusive` (bound id is NULL, first).
        (
            r#""orderBy":[["score","asc"]],"start":{"row":{"score":40},"exclusive":true}"#,
            &[2, 3, 4],
        ),
        (
            r#""orderBy":[["score","asc"]],"start":{"row":{"score":40,"id":2},"exclusive":true}"#,
            &[3, 4],
        ),
        // Descending: after 40 means lower scores.
        (
            r#""orderBy":[["score","desc"]],"start":{"row":{"score":40,"id":2},"exclusive":false}"#,
            &[1, 2, 3],
        ),
        // A bound naming only a descending column's NULL sits after every number.
        (
            r#""orderBy":[["score","desc"]],"start":{"row":{"id":1},"exclusive":false}"#,
            &[],
        ),
        // The window is cut after the bound: limit counts from the bound.
        (
            r#""orderBy":[["score","asc"]],"start":{"row":{"score":10,"id":1},"exclusive":true},"limit":2"#,
            &[2, 3],
        ),
    ];
    for (i, (body, want)) in cases.iter().enumerate() {
        let ast = format!(r#"{{"table":"issue",{body}}}"#);
        let q = h.room.parse_query(&ast).expect("valid AST");
        let from_naive = ids(&naive::footprint(&db, &q));
        let sub = format!("s{i}");
        h.subscribe(&sub, 1, q).expect("subscribe");
        let from_room = ids(&h.footprint(&sub).expect("attached"));
        assert_eq!(from_naive, *want, "naive: {body}");
        assert_eq!(from_room, *want, "room: {body}");
    }
}

/// The witness rule (docs/design/decisions.md, "Footprints") on a worked example — issues
/// gated by EXISTS(label) with two comments each — plus the cap, flip, permissions, NOT
/// EXISTS and OR variants.
#[test]
fn witnesses_follow_the_witness_rule() {
    let issue = TableSchema::new("issue", &["id", "title"], &[0]);
    let label = TableSchema::new("label", &["id", "issueID"], &[0]);
    let comment = TableSchema::new("comment", &["id", "issueID"], &[0]);
    let mut rows = vec![
        ("issue".to_string(), vec![num(1.0), Value::str("one")]),
        ("issue".to_string(), vec![num(2.0), Value::str("two")]),
    ];
    for (id, issue_id) in [(10.0, 1.0), (11.0, 1.0)] {
        rows.push(("label".to_string(), vec![num(id), num(issue_id)]));
    }
    for (id, issue_id) in [(20.0, 1.0), (21.0, 1.0), (22.0, 1.0), (23.0, 2.0)] {
        rows.push(("comment".to_string(), vec![num(id), num(issue_id)]));
    }
    let mut h = Harness::open(vec![issue, label, comment], rows);
    let exists = |extra: &str, child: &str| {
        format!(
            r#"{{"type":"correlatedSubquery","op":"EXISTS",{extra}"related":{{
                "correlation":{{"parentField":["id"],"childField":["issueID"]}},
                "subquery":{{"table":"{child}","alias":"{child}"}}}}}}"#
        )
    };
    let worked = format!(
        r#"{{"table":"issue","where":{},"orderBy":[["id","asc"]],
            "related":[{{"correlation":{{"parentField":["id"],"childField":["issueID"]}},
              "subquery":{{"table":"comment","alias":"comments","limit":2}}}}]}}"#,
        exists("", "label")
    );
    let q = h.room.parse_query(&worked).expect("valid AST");
    h.subscribe("worked", 1, q).expect("subscribe");
    let fp = |h: &Harness| -> Vec<(String, usize)> {
        let mut out: Vec<(String, usize)> = h
            .footprint("worked")
            .expect("attached")
            .into_iter()
            .map(|(t, r)| match r[0] {
                Value::Num(f) => (t, f as usize),
                _ => panic!("numeric ids"),
            })
            .collect();
        out.sort();
        out
    };
    let keys = |list: &[(&str, usize)]| -> Vec<(String, usize)> {
        let mut v: Vec<(String, usize)> = list.iter().map(|(t, i)| (t.to_string(), *i)).collect();
        v.sort();
        v
    };
    h.check().expect("snapshot");
    let snapshot = [
        ("comment", 20),
        ("comment", 21),
        ("issue", 1),
        ("label", 10),
        ("label", 11),
    ];
    assert_eq!(fp(&h), keys(&snapshot));
    // Label 12 on issue 2 brings issue 2, the label and comment 23 in.
    let add = |t: &str, id: f64, issue_id: f64| rindle_room_core::NetOp::Add {
        table: t.into(),
        row: vec![num(id), num(issue_id)].into(),
    };
    h.upstream(vec![add("label", 12.0, 2.0)]).expect("live");
    h.drain().expect("drain");
    h.check().expect("after label 12");
    let more = [("comment", 23), ("issue", 2), ("label", 12)];
    assert_eq!(fp(&h), keys(&[&snapshot[..], &more[..]].concat()));
    // Two more labels on issue 1: the witnesses are its first three by id.
    h.upstream(vec![add("label", 9.0, 1.0), add("label", 13.0, 1.0)])
        .expect("live");
    h.drain().expect("drain");
    h.check().expect("after labels 9 and 13");
    let labels: Vec<usize> = fp(&h)
        .into_iter()
        .filter(|(t, _)| t == "label")
        .map(|(_, id)| id)
        .collect();
    assert_eq!(labels, vec![9, 10, 11, 12]);

    let db = Db::from_room(&h.room);
    let count = |where_: &str, table: &str| -> usize {
        let ast = format!(r#"{{"table":"issue","where":{where_}}}"#);
        let q = h.room.parse_query(&ast).expect("valid AST");
        naive::footprint(&db, &q)
            .iter()
            .filter(|(t, _)| t == table)
            .count()
    };
    // Flipped: every matching label of issue 1 (9, 10, 11, 13) and issue 2's 12.
    assert_eq!(count(&exists(r#""flip":true,"#, "label"), "label"), 5);
    assert_eq!(count(&exists("", "label"), "label"), 4);
    // Permissions gates but ships nothing; NOT EXISTS ships nothing.
    let perm =
        exists("", "label").replace(r#""related":{"#, r#""related":{"system":"permissions","#);
    assert_eq!(count(&perm, "label"), 0);
    assert_eq!(count(&perm, "issue"), 2);
    let not = exists("", "label").replace("\"EXISTS\"", "\"NOT EXISTS\"");
    assert_eq!(count(&not, "issue"), 0);
    // An OR whose other branch also holds still ships the EXISTS's witnesses.
    let or = format!(
        r#"{{"type":"or","conditions":[{{"type":"simple","op":"=",
            "left":{{"type":"column","name":"title"}},"right":{{"type":"literal","value":"one"}}}},
            {}]}}"#,
        exists("", "comment")
    );
    assert_eq!(count(&or, "comment"), 4);
}

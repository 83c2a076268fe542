//! Minimal reproductions of core bugs the differential oracle found, kept as regression
//! tests. Each states its input, the expected footprint (by the naive evaluator) and
//! what the room returned before the fix.

use rindle_room_core::value::Value;
use rindle_room_core::{NetOp, TableSchema};
use rindle_room_tests::harness::Harness;

fn n(v: f64) -> Value {
    Value::num(v)
}

/// Bug 1 — a row that is a member through two nodes of one query keeps a stale image
/// (fixed in 7b67130: the footprint now takes the store's current image).
///
/// `issue(id, owner, rank)`, one row `[1, 7, 0]`. The query lists issues by `rank` and,
/// per issue, the issues with the same owner whose rank is not 2 (the row is its own
/// related child). Upstream edits the row to `[1, 7, 2]`: it stays a root row (new
/// image) and leaves the related level (rank 2 is filtered out).
///
/// Expected footprint: `issue [1, 7, 2]`. Got before the fix: `issue [1, 7, 0]` — the old image, and
/// the subscriber receives no `edit`. The root is refreshed first; its leave + enter of
/// the re-sorted row drops and re-adds the demand on the related partition `owner = 7`,
/// which re-enters that node's window rows with the image the related node still holds
/// (not yet refreshed: the old one), overwriting the footprint entry's image. The related
/// node's own refresh then only decrements the count.
#[test]
fn self_join_row_keeps_the_new_image_after_an_edit() {
    let issue = TableSchema::new("issue", &["id", "owner", "rank"], &[0]);
    let mut h = Harness::open(
        vec![issue],
        vec![("issue".into(), vec![n(1.0), n(7.0), n(0.0)])],
    );
    let ast = r#"{"table":"issue","orderBy":[["rank","asc"]],
        "related":[{"correlation":{"parentField":["owner"],"childField":["owner"]},
          "subquery":{"table":"issue","alias":"sameOwner",
            "where":{"type":"simple","op":"!=","left":{"type":"column","name":"rank"},
                     "right":{"type":"literal","value":2}}}}]}"#;
    let q = h.room.parse_query(ast).expect("valid AST");
    h.subscribe("s", 1, q).expect("subscribe");
    h.check().expect("snapshot");
    h.upstream(vec![NetOp::Edit {
        table: "issue".into(),
        old: vec![n(1.0), n(7.0), n(0.0)].into(),
        new: vec![n(1.0), n(7.0), n(2.0)].into(),
    }])
    .expect("live batch");
    h.drain().expect("drain");
    assert_eq!(
        h.footprint("s").expect("attached"),
        vec![("issue".to_string(), vec![n(1.0), n(7.0), n(2.0)])]
    );
    h.check().expect("oracle");
}

/// Bug 1, second shape — no self-join: the same table at two levels of a chain.
///
/// `comment(id, issue, rank)`: `[10, 1, 0]`, `[12, 1, 2]`; `issue(id)`: `[1]`. The query
/// lists comments with `rank >= 3`, each with its issue, each issue with its lowest-rank
/// comment (`limit 1`). Upstream edits comment 10 to `[10, 1, 3]`: it enters the root,
/// which brings issue 1 in, whose top comment is now 12.
///
/// Expected footprint: `comment [10, 1, 3]`, `comment [12, 1, 2]`, `issue [1]`. Got before
/// the fix `comment [10, 1, 0]` instead of `[10, 1, 3]`: issue 1's demand re-enters the window of
/// the `topComment` level before that level has seen the edit, so the footprint entry
/// takes the old image; when that level then moves comment 10 out of its window, only
/// the count drops.
#[test]
fn chained_levels_over_one_table_keep_the_new_image() {
    let comment = TableSchema::new("comment", &["id", "issue", "rank"], &[0]);
    let issue = TableSchema::new("issue", &["id"], &[0]);
    let rows = vec![
        ("comment".into(), vec![n(10.0), n(1.0), n(0.0)]),
        ("comment".into(), vec![n(12.0), n(1.0), n(2.0)]),
        ("issue".into(), vec![n(1.0)]),
    ];
    let mut h = Harness::open(vec![comment, issue], rows);
    let ast = r#"{"table":"comment",
        "where":{"type":"simple","op":">=","left":{"type":"column","name":"rank"},
                 "right":{"type":"literal","value":3}},
        "related":[{"correlation":{"parentField":["issue"],"childField":["id"]},
          "subquery":{"table":"issue","alias":"issue",
            "related":[{"correlation":{"parentField":["id"],"childField":["issue"]},
              "subquery":{"table":"comment","alias":"topComment",
                          "orderBy":[["rank","asc"]],"limit":1}}]}}]}"#;
    let q = h.room.parse_query(ast).expect("valid AST");
    h.subscribe("s", 1, q).expect("subscribe");
    h.check().expect("snapshot");
    h.upstream(vec![NetOp::Edit {
        table: "comment".into(),
        old: vec![n(10.0), n(1.0), n(0.0)].into(),
        new: vec![n(10.0), n(1.0), n(3.0)].into(),
    }])
    .expect("live batch");
    h.drain().expect("drain");
    assert_eq!(
        h.footprint("s").expect("attached"),
        vec![
            ("comment".to_string(), vec![n(10.0), n(1.0), n(3.0)]),
            ("comment".to_string(), vec![n(12.0), n(1.0), n(2.0)]),
            ("issue".to_string(), vec![n(1.0)]),
        ]
    );
    h.check().expect("oracle");
}

/// Bug 7 — a removal and a move out of a one-row related front in one batch leave its
/// window a row short.
///
/// `issue(id, k)` and `a(id, k)`; per issue, the two `a` rows whose `k` is the issue's
/// id, by `k` (related fronts of one row). Partition `k = 2` holds `a` 0, 1, 3, 5 and
/// gains 15 and 4; one batch then removes `a [1, 2]` and moves `a 3` to `k = null`.
///
/// Expected footprint of the partition: `a [0, 2]`, `a [4, 2]`. Got before the fix:
/// `a [0, 2]` alone. The partition's front was `a` 0, 1 (partial). Removing `a 1` read on;
/// every row with `k = 2` ties on its 8-byte sort prefix, so the read took all four,
/// the front grew past its maximum and `trim_part` cut it back to `a` 0, 3 and marked
/// it partial — then the read, having taken every candidate, marked it whole. Moving
/// `a 3` out left one row and, the partition being "whole", nothing was read on. A
/// read-on now leaves a front it trimmed partial (found by a 30,000-case oracle soak).
#[test]
fn a_one_row_front_refills_after_a_removal_and_a_move_out_in_one_batch() {
    let schema = |name: &str| TableSchema::new(name, &["id", "k"], &[0]);
    let rows: Vec<(String, Vec<Value>)> = [
        ("comment", 0, 0),
        ("issue", 0, 0),
        ("a", 0, 2),
        ("issue", 3, 0),
        ("a", 3, 2),
        ("a", 4, 0),
        ("issue", 15, 0),
        ("a", 12, 0),
        ("issue", 9, 0),
        ("issue", 11, 0),
        ("a", 5, 2),
        ("issue", 2, 0),
        ("a", 15, 0),
        ("issue", 6, 0),
        ("a", 6, 0),
        ("issue", 1, 0),
        ("a", 1, 2),
        ("a", 7, 0),
    ]
    .into_iter()
    .map(|(t, id, k)| (t.to_string(), vec![n(id as f64), n(k as f64)]))
    .collect();
    let mut h = Harness::open(
        vec![
            schema("issue"),
            schema("comment"),
            schema("Label"),
            schema("a"),
        ],
        rows,
    );
    h.room.set_related_front_rows(1);
    h.room.set_ordering_first_rows(1);
    h.room.set_block_shift(0);
    let ast = r#"{"related":[{"correlation":{"childField":["k"],"parentField":["id"]},
        "subquery":{"alias":"r1","limit":2,"orderBy":[["k","asc"]],"table":"a"}}],
        "table":"issue"}"#;
    let q = h.room.parse_query(ast).expect("valid AST");
    h.subscribe("s0", 1, q).expect("subscribe");
    h.check().expect("snapshot");
    let edit = |id: f64, old: Value, new: Value| NetOp::Edit {
        table: "a".into(),
        old: vec![n(id), old].into(),
        new: vec![n(id), new].into(),
    };
    let steps: Vec<Vec<NetOp>> = vec![
        vec![edit(15.0, n(0.0), n(2.0))],
        vec![edit(4.0, n(0.0), n(2.0))],
        vec![NetOp::Add {
            table: "a".into(),
            row: vec![n(8.0), n(0.0)].into(),
        }],
        vec![NetOp::Edit {
            table: "issue".into(),
            old: vec![n(0.0), n(0.0)].into(),
            new: vec![n(0.0), n(0.0)].into(),
        }],
        vec![
            NetOp::Remove {
                table: "a".into(),
                row: vec![n(1.0), n(2.0)].into(),
            },
            edit(3.0, n(2.0), Value::Null),
        ],
    ];
    for ops in steps {
        h.upstream(ops).expect("live batch");
        h.check_room().expect("oracle");
    }
}

/// `comment → r1 (comment by id) → r2 (issues with k = that id, by k, limit 1)` with
/// one-row related fronts: the issues of `k` 1 all tie on their 8-byte sort prefix, so
/// a read-on takes them together. After issue 1 (just moved into `k` 1) was removed,
/// the emptied front read 7, 9, 10 and 15 one by one; entering 10 grew it past its
/// maximum and the trim cut it back to 7 — and then 15 was still entered. The front
/// held 7 and 15 but not 9 and 10 between them, so removing 7 showed 15 where 9
/// belongs. A read-on now stops at the first row a trim cuts (found by a 100,000-case
/// oracle soak; pre-existing).
#[test]
fn a_front_read_on_stops_where_a_trim_cut_it() {
    let rows: Vec<(String, Vec<Value>)> = vec![
        ("issue", vec![15, 1, 0, 0]),
        ("comment", vec![0, 0]),
        ("comment", vec![10, 0]),
        ("issue", vec![5, 2, 0, 0]),
        ("issue", vec![1, 2, 0, 0]),
        ("issue", vec![9, 1, 0, 0]),
        ("issue", vec![2, 2, 0, 0]),
        ("issue", vec![3, 2, 0, 0]),
        ("issue", vec![7, 1, 0, 0]),
        ("issue", vec![13, 0, 0, 0]),
        ("issue", vec![10, 1, 0, 0]),
        ("issue", vec![14, 2, 0, 0]),
        ("comment", vec![1, 0]),
        ("issue", vec![0, 2, 0, 0]),
        ("comment", vec![3, 0]),
        ("comment", vec![4, 0]),
        ("issue", vec![4, 2, 0, 0]),
        ("comment", vec![11, 0]),
        ("comment", vec![12, 0]),
    ]
    .into_iter()
    .map(|(t, cells)| {
        (
            t.to_string(),
            cells.into_iter().map(|c| n(c as f64)).collect(),
        )
    })
    .collect();
    let mut h = Harness::open(
        vec![
            TableSchema::new("issue", &["id", "k", "v", "w"], &[0]),
            TableSchema::new("comment", &["id", "k"], &[0]),
        ],
        rows,
    );
    h.room.set_related_front_rows(1);
    let ast = r#"{"related":[{"correlation":{"childField":["id"],"parentField":["id"]},"subquery":{"alias":"r1","related":[{"correlation":{"childField":["k"],"parentField":["id"]},"subquery":{"alias":"r2","limit":1,"orderBy":[["k","asc"]],"table":"issue"}}],"table":"comment"}}],"table":"comment"}"#;
    let q = h.room.parse_query(ast).expect("valid AST");
    h.subscribe("s0", 1, q).expect("subscribe");
    h.check().expect("snapshot");
    let issue = |cells: [i32; 4]| -> rindle_room_core::Row {
        cells
            .iter()
            .map(|&c| n(f64::from(c)))
            .collect::<Vec<_>>()
            .into()
    };
    let steps: Vec<Vec<NetOp>> = vec![
        vec![NetOp::Edit {
            table: "issue".into(),
            old: issue([1, 2, 0, 0]),
            new: issue([1, 1, 0, 0]),
        }],
        vec![NetOp::Remove {
            table: "issue".into(),
            row: issue([1, 1, 0, 0]),
        }],
        vec![NetOp::Remove {
            table: "issue".into(),
            row: issue([7, 1, 0, 0]),
        }],
    ];
    for (i, ops) in steps.into_iter().enumerate() {
        h.upstream(ops).expect("live batch");
        h.check_room()
            .unwrap_or_else(|e| panic!("after step {i}: {e}"));
    }
}

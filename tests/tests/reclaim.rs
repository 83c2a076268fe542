//! `Room::reclaim_idle` and `Room::is_materialized`: the host's cap on materializations
//! (`downstream.max_materializations`) reclaims idle queries longest-idle first,
//! regardless of the idle TTL, and never a query somebody is subscribed to.

use rindle_room_core::value::Value;
use rindle_room_core::TableSchema;
use rindle_room_tests::harness::Harness;

fn by_owner(owner: u32) -> String {
    format!(
        r#"{{"table":"note","where":{{"type":"simple","op":"=","left":{{"type":"column","name":"owner"}},"right":{{"type":"literal","value":{owner}}}}}}}"#
    )
}

#[test]
fn reclaims_the_longest_idle_queries_first_and_never_an_attached_one() {
    let note = TableSchema::new("note", &["id", "owner"], &[0]);
    let rows = (0..6)
        .map(|i| {
            (
                "note".to_string(),
                vec![Value::num(i as f64), Value::num((i % 3) as f64)],
            )
        })
        .collect();
    let mut h = Harness::open(vec![note], rows);
    let q: Vec<_> = (0..3)
        .map(|o| h.room.parse_query(&by_owner(o)).expect("valid AST"))
        .collect();
    for (i, query) in q.iter().enumerate() {
        let sub = format!("s{i}");
        h.room.subscribe(&sub, 1, query, 0).expect("subscribe");
    }
    assert_eq!(h.room.materialization_count(), 3);
    // s2's query goes idle first (t = 5), s0's later (t = 10); s1 stays attached.
    h.room.unsubscribe("s2", 5);
    h.room.unsubscribe("s0", 10);
    assert_eq!(h.room.reclaim_idle(3), 0, "at the cap already");
    assert_eq!(h.room.reclaim_idle(2), 1);
    assert!(
        !h.room.is_materialized(&q[2]),
        "the longest idle goes first"
    );
    assert!(h.room.is_materialized(&q[0]) && h.room.is_materialized(&q[1]));
    // Down to zero: only the idle one can go.
    assert_eq!(h.room.reclaim_idle(0), 1);
    assert_eq!(h.room.materialization_count(), 1);
    assert!(h.room.is_materialized(&q[1]));
    h.check().expect("the attached subscriber is intact");
}

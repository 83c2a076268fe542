use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::*;

fn room(doc: &str, connections: usize, idle_since: u64, retained: Option<u64>) -> LiveRoomView {
    LiveRoomView {
        doc: doc.to_string(),
        connections,
        idle_since,
        retained,
    }
}

#[test]
fn only_rooms_without_connections_for_the_whole_period_hibernate() {
    let rooms = vec![
        room("served", 2, 0, None),
        room("just-left", 0, 950, None),
        room("long-gone", 0, 100, None),
        room("exactly", 0, 400, None),
    ];
    assert_eq!(
        idle_to_hibernate(&rooms, 1_000, 600),
        vec!["long-gone", "exactly"]
    );
    assert!(idle_to_hibernate(&rooms, 1_000, 10_000).is_empty());
}

#[test]
fn under_the_budget_nothing_happens() {
    let rooms = vec![room("a", 0, 0, Some(40)), room("b", 1, 0, Some(50))];
    assert_eq!(
        budget_plan(&rooms, 100),
        BudgetPlan {
            total: 90,
            hibernate: Vec::new(),
            over_after: false
        }
    );
}

#[test]
fn over_the_budget_idle_rooms_go_least_recently_used_first_until_it_fits() {
    let rooms = vec![
        room("busy", 3, 0, Some(500)),
        room("recent", 0, 900, Some(300)),
        room("old", 0, 100, Some(200)),
        room("older", 0, 50, Some(100)),
        room("silent", 0, 10, None), // did not answer: not counted, not chosen
    ];
    let plan = budget_plan(&rooms, 850);
    assert_eq!(plan.total, 1_100);
    let docs: Vec<String> = plan.hibernate.iter().map(|(d, _)| d.clone()).collect();
    assert_eq!(docs, ["older", "old"]);
    assert!(!plan.over_after);
    // Not enough idle rooms: all of them, and boots are refused.
    let plan = budget_plan(&rooms, 100);
    assert_eq!(plan.hibernate.len(), 3);
    assert!(plan.over_after);
}

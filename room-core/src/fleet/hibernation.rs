//! When a box hibernates its rooms: the idle rule and the memory budget's order, with
//! no I/O and time as an argument. The driver asks with what it sees of each live room
//! and carries the answer out (drain first, then stop — a room whose writes are not
//! confirmed stays up).

use alloc::string::String;
use alloc::vec::Vec;

/// What the rules need to know of a live room.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveRoomView {
    /// The room's doc.
    pub doc: String,
    /// Connections it serves now.
    pub connections: usize,
    /// When its last connection went (ms).
    pub idle_since: u64,
    /// The bytes it retains, when it answered the question (`None`: it did not).
    pub retained: Option<u64>,
}

impl LiveRoomView {
    fn idle(&self) -> bool {
        self.connections == 0
    }
}

/// The rooms to hibernate because nobody has used them for `idle_ms`: no connection,
/// the last one gone at least `idle_ms` ago.
pub fn idle_to_hibernate(rooms: &[LiveRoomView], now: u64, idle_ms: u64) -> Vec<String> {
    rooms
        .iter()
        .filter(|r| r.idle() && now.saturating_sub(r.idle_since) >= idle_ms)
        .map(|r| r.doc.clone())
        .collect()
}

/// What the box budget asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BudgetPlan {
    /// The live rooms' retained bytes together (of those that answered).
    pub total: u64,
    /// Idle rooms to hibernate, least recently used first, with their bytes: enough to
    /// get under the budget, or every idle room when that is not enough. The driver
    /// stops at the first point it is under (a room that cannot drain is skipped).
    pub hibernate: Vec<(String, u64)>,
    /// Whether the box stays over the budget even with all of them hibernated: new
    /// boots are then refused (1013) until the rooms shrink.
    pub over_after: bool,
}

/// The box memory budget: past `max` retained bytes, hibernate idle rooms least recently
/// used first; if that is not enough, refuse new boots.
pub fn budget_plan(rooms: &[LiveRoomView], max: u64) -> BudgetPlan {
    let total: u64 = rooms.iter().filter_map(|r| r.retained).sum();
    if total <= max {
        return BudgetPlan {
            total,
            ..BudgetPlan::default()
        };
    }
    let mut idle: Vec<&LiveRoomView> = rooms
        .iter()
        .filter(|r| r.idle() && r.retained.is_some())
        .collect();
    idle.sort_by(|a, b| {
        a.idle_since
            .cmp(&b.idle_since)
            .then_with(|| a.doc.cmp(&b.doc))
    });
    let mut left = total;
    let mut hibernate = Vec::new();
    for r in idle {
        if left <= max {
            break;
        }
        let bytes = r.retained.unwrap_or(0);
        hibernate.push((r.doc.clone(), bytes));
        left = left.saturating_sub(bytes);
    }
    BudgetPlan {
        total,
        hibernate,
        over_after: left > max,
    }
}

#[cfg(test)]
mod tests;

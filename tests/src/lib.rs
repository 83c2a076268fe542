//! Shared helpers for the cross-face tests: the naive footprint evaluator (the IVM's
//! correctness oracle), a strict downstream client model, and an in-process harness that
//! wires them to a [`Room`](rindle_room_core::Room), and the pair harness for the room host.

pub mod client;
pub mod harness;
pub mod naive;
pub mod pair;
pub mod projection;

/// Cases per property: `PROPTEST_CASES` when set to a number (a soak), else `default`.
/// Every property suite of this crate reads its count here.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

//! Shared helpers for the cross-face tests: the naive footprint evaluator (the IVM's
//! correctness oracle), a strict downstream client model, and an in-process harness that
//! wires them to a [`Room`](rindle_room_core::Room), and the pair harness for the room host.

pub mod client;
pub mod harness;
pub mod naive;
pub mod pair;
pub mod projection;

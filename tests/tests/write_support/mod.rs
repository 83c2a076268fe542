//! Shared by `write_model.rs` and `crash_replay.rs`: a three-table schema, a mutator
//! registry whose bodies run either against the room's keyed transaction or against a
//! reference model, a shell-like host (the published Node shell's `runMutation`), the
//! reference model of the write plane (docs/architecture.md) and a CAS authority.
//!
//! The model is written from docs/design/ and the published room's API, not from the
//! core: it keeps the head as plain maps keyed by the integer `id` every table uses, stages a
//! transaction's writes itself, runs the v2 commit gate itself, and builds the flush
//! batch a room must produce from its own dirty set.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::value::{Value, COMPARATOR_VERSION};
use rindle_room_core::write::{LEDGER_TABLE, OUTCOMES_TABLE};
use rindle_room_core::{
    ApplyStatus, Begin, Commit, Conflict, Error, ErrorCode, FlushChange, Hello, MutationTx, NetOp,
    Room, Row, TableSchema, UpstreamBatch,
};
use serde_json::{json, Value as Json};

mod authority;
mod model;
mod model_tx;
mod mutators;
mod room_tx;
mod schema;

pub use authority::*;
pub use model::*;
pub use model_tx::*;
pub use mutators::*;
pub use room_tx::*;
pub use schema::*;

//! # rindle-room-c
//!
//! The C ABI of the Rindle room: `librindle_room.a` and `librindle_room.so`, with the
//! header `include/rindle_room.h` (generated from this crate's doc comments by
//! `scripts/gen-header.sh`, a pinned cbindgen, and committed).
//!
//! One exported function per `WasmRoom` method (`rindle_room_open`,
//! `rindle_room_apply`, … `rindle_room_flush_conflict`), plus the token functions. JSON
//! travels as UTF-8 pointer + length in both directions; the JSON is
//! [`rindle_room_core::contract::JsonRoom`]'s, byte for byte: this crate only converts
//! and transports, it decides no rule.
//!
//! The conventions (pointers, out-parameters, `undefined`, errors, threads) are written
//! once, at the top of the header (`bindings-c/cbindgen.toml`). In short:
//!
//! - every fallible function returns a [`rindle_room_result`], `0` on success; the
//!   room's codes keep the numbers of [`rindle_room_core::ErrorCode`];
//! - every exported body runs inside `catch_unwind`: nothing unwinds into
//!   C, and a room that panicked refuses every later call;
//! - out-parameters are written only on success; returned text is a [`rindle_room_buf`]
//!   freed by [`rindle_room_buf_free`].
//!
//! A host loop, in C:
//!
//! ```c
//! rindle_room *room = NULL;
//! if (rindle_room_open(hello, hello_len, 30000, &room) != RINDLE_ROOM_RESULT_OK) { ... }
//! rindle_room_buf out;
//! memset(&out, 0, sizeof out);
//! rindle_room_apply(room, snapshot, snapshot_len, &out);   // {"applied":"snapshot",…}
//! rindle_room_buf_free(&out);
//! rindle_room_subscribe(room, "c1:1", 4, 1, ast, ast_len, now_ms, &out);  // hello + snapshot
//! rindle_room_buf_free(&out);
//! rindle_room_apply(room, batch, batch_len, &out);         // an upstream live batch
//! rindle_room_buf_free(&out);
//! rindle_room_commit_all(room, &out);                      // ship each {sub, batch}
//! rindle_room_buf_free(&out);
//! rindle_room_free(room);
//! ```
//!
//! The full example is `tests/c/embed.c`.

#![deny(missing_docs)]
#![warn(clippy::missing_safety_doc)]

mod boundary;
mod buf;
mod host;
mod http_calls;
mod mutation;
mod result;
mod room;
mod token;
mod write;

pub use buf::{
    rindle_room_buf, rindle_room_buf_free, rindle_room_json_number, rindle_room_json_string,
    rindle_room_version,
};
pub use host::{
    rindle_room_backlog_fn, rindle_room_host, rindle_room_host_callbacks,
    rindle_room_host_conn_frame, rindle_room_host_free, rindle_room_host_input,
    rindle_room_host_last_error, rindle_room_host_new, rindle_room_host_next_deadline,
    rindle_room_host_poll, rindle_room_host_start, rindle_room_host_status,
    rindle_room_host_timeout, rindle_room_host_upstream_frame, rindle_room_mutator_fn,
    rindle_room_tables_fn,
};
pub use http_calls::{
    rindle_room_authority_reply, RINDLE_ROOM_AUTHORITY_APPLY, RINDLE_ROOM_AUTHORITY_CLAIM,
    RINDLE_ROOM_AUTHORITY_LMIDS,
};
pub use mutation::{
    rindle_room_mutation_add, rindle_room_mutation_delete, rindle_room_mutation_edit,
    rindle_room_mutation_get, rindle_room_mutation_insert, rindle_room_mutation_last_error,
    rindle_room_mutation_query, rindle_room_mutation_reject, rindle_room_mutation_remove,
    rindle_room_mutation_row, rindle_room_mutation_tx, rindle_room_mutation_update,
    rindle_room_mutation_upsert, RINDLE_ROOM_MUTATOR_DONE, RINDLE_ROOM_MUTATOR_FAILED,
    RINDLE_ROOM_MUTATOR_REJECTED, RINDLE_ROOM_MUTATOR_UNKNOWN,
};
pub use result::{rindle_room_result, rindle_room_result_message, rindle_room_result_name};
pub use room::{
    rindle_room, rindle_room_apply, rindle_room_commit_all, rindle_room_cv, rindle_room_epoch,
    rindle_room_free, rindle_room_head_cv, rindle_room_is_live, rindle_room_is_poisoned,
    rindle_room_last_error, rindle_room_materialization_count, rindle_room_open,
    rindle_room_subscribe, rindle_room_subscriber_count, rindle_room_sweep,
    rindle_room_thread_last_error, rindle_room_unsubscribe,
};
pub use token::{
    rindle_room_mint_room_token, rindle_room_scope_specs_hash, rindle_room_verify_room_token,
};
pub use write::{
    rindle_room_ack, rindle_room_acked_lmid, rindle_room_applied_mid, rindle_room_begin_flush,
    rindle_room_begin_mutation, rindle_room_commit_mutation, rindle_room_dirty_len,
    rindle_room_durable_lmid, rindle_room_enable_writes, rindle_room_enable_writes_v2,
    rindle_room_flush_conflict, rindle_room_flush_in_flight, rindle_room_flush_ok,
    rindle_room_lmid_subscribe, rindle_room_pending_len, rindle_room_reject_mutation,
    rindle_room_seed_durable, rindle_room_tx_add, rindle_room_tx_edit, rindle_room_tx_get,
    rindle_room_tx_remove,
};

/// The library's major version (the `MAJOR` of `Cargo.toml`'s version).
pub const RINDLE_ROOM_VERSION_MAJOR: u32 = 0;
/// The library's minor version.
pub const RINDLE_ROOM_VERSION_MINOR: u32 = 1;
/// The library's patch version. The header also defines `RINDLE_ROOM_VERSION`, the
/// three as text (`"0.1.0"`); `rindle_room_version()` returns the linked library's.
pub const RINDLE_ROOM_VERSION_PATCH: u32 = 0;

#[cfg(test)]
mod tests;

//! The keyed `MutationTx` a JavaScript room mutator writes through (the published room's), served
//! by the core's own keyed layer: while the host runs a mutator (and only then), the
//! open transaction is this thread's *current transaction*, and the `tx*` functions
//! below act on it. `shell/shell.js` hands the mutator a small object whose methods
//! serialize their arguments and call these; every check and every message is the
//! core's (`room-core` `write/keyed.rs`), so a JS mutator and a Rust one reject alike.
//! A call outside a mutator (after an `await` in a wrongly async one) throws.

// napi-rs registers the `#[napi]` functions below only outside `cfg(test)`.
#![cfg_attr(test, allow(dead_code))]

use core::cell::Cell;
use core::ptr;

use napi::bindgen_prelude::Null;
use napi::{Either, Env};
use napi_derive::napi;
use rindle_room_core::write::keyed::MutationTx;
use rindle_room_core::{Error, ErrorCode};

use crate::boundary::{guard, Cx, Failure};

thread_local! {
    /// The transaction of the mutator running on this thread, type-erased.
    static CURRENT: Cell<*mut ()> = const { Cell::new(ptr::null_mut()) };
}

/// Makes `tx` the current transaction for the duration of `body`.
pub(crate) fn with_current<R>(tx: &mut MutationTx<'_>, body: impl FnOnce() -> R) -> R {
    struct Reset(*mut ());
    impl Drop for Reset {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let erased = ptr::from_mut(tx).cast::<()>();
    let _reset = Reset(CURRENT.with(|c| c.replace(erased)));
    body()
}

/// Runs `f` on the current transaction.
fn current<R>(f: impl FnOnce(&mut MutationTx<'_>) -> Result<R, Error>) -> Result<R, Failure> {
    let p = CURRENT.with(Cell::get);
    if p.is_null() {
        return Err(refused(
            "this transaction is over: room mutators must be synchronous",
        ));
    }
    // SAFETY: `p` was set by `with_current` from a `&mut MutationTx` that outlives the
    // body it wraps, and is reset when the body returns; calls come from that body on
    // this thread, one at a time (JavaScript is single-threaded here).
    let tx = unsafe { &mut *p.cast::<MutationTx<'_>>() };
    Ok(f(tx)?)
}

/// JSON text or `null`.
fn nullable(text: Option<String>) -> Either<String, Null> {
    match text {
        Some(t) => Either::A(t),
        None => Either::B(Null),
    }
}

/// A refusal with `code` `WRITE_REFUSED`.
fn refused(message: &str) -> Failure {
    Failure::Room(Error::new(ErrorCode::WriteRefused, message))
}

/// Runs one `tx*` call behind the boundary: core errors keep their `code`
/// (`WRITE_REFUSED`, `ENVIRONMENT`, …) and message.
fn call<T>(
    env: &Env,
    what: &'static str,
    body: impl FnOnce() -> Result<T, Failure>,
) -> napi::Result<T> {
    let cx = Cx::new(env, what);
    cx.settle(guard(body))
}

/// `tx.row(table, pk)`: the keyed row as JSON text, or `null`.
#[napi(js_name = "txRow")]
pub fn tx_row(env: &Env, table: String, pk_json: String) -> napi::Result<Either<String, Null>> {
    call(env, "tx.row", || {
        current(|tx| tx.row_json(&table, &pk_json)).map(nullable)
    })
}

/// `tx.insert(table, row)`: a full row, every column named.
#[napi(js_name = "txInsert")]
pub fn tx_insert(env: &Env, table: String, row_json: String) -> napi::Result<()> {
    call(env, "tx.insert", || {
        current(|tx| tx.insert_json(&table, &row_json))
    })
}

/// `tx.update(table, row)`: the named columns of an existing row (a missing row is a
/// no-op).
#[napi(js_name = "txUpdate")]
pub fn tx_update(env: &Env, table: String, row_json: String) -> napi::Result<()> {
    call(env, "tx.update", || {
        current(|tx| tx.update_json(&table, &row_json))
    })
}

/// `tx.upsert(table, row)`: insert, or replace the existing row.
#[napi(js_name = "txUpsert")]
pub fn tx_upsert(env: &Env, table: String, row_json: String) -> napi::Result<()> {
    call(env, "tx.upsert", || {
        current(|tx| tx.upsert_json(&table, &row_json))
    })
}

/// `tx.delete(table, pk)`: a missing row is a no-op.
#[napi(js_name = "txDelete")]
pub fn tx_delete(env: &Env, table: String, pk_json: String) -> napi::Result<()> {
    call(env, "tx.delete", || {
        current(|tx| tx.delete_json(&table, &pk_json))
    })
}

/// `tx.query()`: an environment shortfall (the mutation deopts `environment`).
#[napi(js_name = "txQuery")]
pub fn tx_query(env: &Env) -> napi::Result<()> {
    call(env, "tx.query", || current(|tx| tx.query()))
}

/// `tx.get(table, pk)`: the positional row as JSON text, or `null`.
#[napi(js_name = "txGet")]
pub fn tx_get(env: &Env, table: String, pk_json: String) -> napi::Result<Either<String, Null>> {
    call(env, "tx.get", || {
        current(|tx| tx.get_json(&table, &pk_json)).map(nullable)
    })
}

/// `tx.add(table, cells)`: a positional insert.
#[napi(js_name = "txAdd")]
pub fn tx_add(env: &Env, table: String, row_json: String) -> napi::Result<()> {
    call(env, "tx.add", || {
        current(|tx| tx.add_json(&table, &row_json))
    })
}

/// `tx.remove(table, cells)`: by a full row or its primary-key cells.
#[napi(js_name = "txRemove")]
pub fn tx_remove(env: &Env, table: String, row_json: String) -> napi::Result<()> {
    call(env, "tx.remove", || {
        current(|tx| tx.remove_json(&table, &row_json))
    })
}

/// `tx.edit(table, old, new)`: cells of `new` given as the marker object
/// `{"$keep":true}` keep the current value (JavaScript's `undefined`).
#[napi(js_name = "txEdit")]
pub fn tx_edit(env: &Env, table: String, old_json: String, new_json: String) -> napi::Result<()> {
    call(env, "tx.edit", || {
        current(|tx| tx.edit_json(&table, &old_json, &new_json))
    })
}

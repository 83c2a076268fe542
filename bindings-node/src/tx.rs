//! The keyed `MutationTx` a JavaScript room mutator writes through (seed 000), served
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
use rindle_room_core::{Error, ErrorCode, Value};
use serde_json::Value as Json;

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

/// A JSON value as a cell: objects and arrays travel as their JSON text.
fn cell(v: &Json) -> Result<Value, Failure> {
    Ok(match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::num(n.as_f64().unwrap_or(f64::NAN)),
        Json::String(s) => Value::str(s),
        other => Value::string(other.to_string()),
    })
}

fn keyed(json: &str, what: &str, table: &str) -> Result<Vec<(String, Value)>, Failure> {
    let v: Json = serde_json::from_str(json)
        .map_err(|e| refused(&format!("{what}: the {table:?} row is not JSON: {e}")))?;
    let Json::Object(map) = v else {
        return Err(refused(&format!(
            "{what}: the {table:?} row must be an object of column values"
        )));
    };
    map.iter().map(|(k, v)| Ok((k.clone(), cell(v)?))).collect()
}

fn cells(json: &str, what: &str) -> Result<Vec<Value>, Failure> {
    let v: Json = serde_json::from_str(json)
        .map_err(|e| refused(&format!("{what}: the cells are not JSON: {e}")))?;
    let Json::Array(items) = v else {
        return Err(refused(&format!("{what}: the cells must be an array")));
    };
    items.iter().map(cell).collect()
}

fn row_json(row: &[(String, Value)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in row.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        rindle_room_core::json::write::write_str(&mut s, k);
        s.push(':');
        s.push_str(&rindle_room_core::contract::render_cell(v));
    }
    s.push('}');
    s
}

/// `tx.row(table, pk)`: the keyed row as JSON text, or `null`.
#[napi(js_name = "txRow")]
pub fn tx_row(env: &Env, table: String, pk_json: String) -> napi::Result<Either<String, Null>> {
    call(env, "tx.row", || {
        let pk = keyed(&pk_json, "row", &table)?;
        current(|tx| {
            let row = tx.row(&table, &pk)?;
            Ok(match row {
                Some(r) => Either::A(row_json(&r)),
                None => Either::B(Null),
            })
        })
    })
}

/// `tx.insert(table, row)`: a full row, every column named.
#[napi(js_name = "txInsert")]
pub fn tx_insert(env: &Env, table: String, row_json: String) -> napi::Result<()> {
    call(env, "tx.insert", || {
        let row = keyed(&row_json, "insert", &table)?;
        current(|tx| tx.insert(&table, &row))
    })
}

/// `tx.update(table, row)`: the named columns of an existing row (a missing row is a
/// no-op).
#[napi(js_name = "txUpdate")]
pub fn tx_update(env: &Env, table: String, row_json: String) -> napi::Result<()> {
    call(env, "tx.update", || {
        let row = keyed(&row_json, "update", &table)?;
        current(|tx| tx.update(&table, &row))
    })
}

/// `tx.upsert(table, row)`: insert, or replace the existing row.
#[napi(js_name = "txUpsert")]
pub fn tx_upsert(env: &Env, table: String, row_json: String) -> napi::Result<()> {
    call(env, "tx.upsert", || {
        let row = keyed(&row_json, "upsert", &table)?;
        current(|tx| tx.upsert(&table, &row))
    })
}

/// `tx.delete(table, pk)`: a missing row is a no-op.
#[napi(js_name = "txDelete")]
pub fn tx_delete(env: &Env, table: String, pk_json: String) -> napi::Result<()> {
    call(env, "tx.delete", || {
        let pk = keyed(&pk_json, "delete", &table)?;
        current(|tx| tx.delete(&table, &pk))
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
        let pk = cells(&pk_json, "get")?;
        current(|tx| {
            let row = tx.get(&table, &pk)?;
            Ok(match row {
                Some(r) => {
                    let mut s = String::new();
                    rindle_room_core::json::write::write_row(&mut s, &r);
                    Either::A(s)
                }
                None => Either::B(Null),
            })
        })
    })
}

/// `tx.add(table, cells)`: a positional insert.
#[napi(js_name = "txAdd")]
pub fn tx_add(env: &Env, table: String, row_json: String) -> napi::Result<()> {
    call(env, "tx.add", || {
        let row = cells(&row_json, "add")?;
        current(|tx| tx.add(&table, row.into()))
    })
}

/// `tx.remove(table, cells)`: by a full row or its primary-key cells.
#[napi(js_name = "txRemove")]
pub fn tx_remove(env: &Env, table: String, row_json: String) -> napi::Result<()> {
    call(env, "tx.remove", || {
        let row = cells(&row_json, "remove")?;
        current(|tx| tx.remove(&table, &row))
    })
}

/// `tx.edit(table, old, new)`: `new` cells that are `null` in `keep_json` positions keep
/// the current value (JavaScript's `undefined`).
#[napi(js_name = "txEdit")]
pub fn tx_edit(env: &Env, table: String, old_json: String, new_json: String) -> napi::Result<()> {
    call(env, "tx.edit", || {
        let old = cells(&old_json, "edit")?;
        let new_v: Json = serde_json::from_str(&new_json)
            .map_err(|e| refused(&format!("edit: the cells are not JSON: {e}")))?;
        let Json::Array(items) = new_v else {
            return Err(refused("edit: the cells must be an array"));
        };
        // `undefined` cells arrive as the marker object {"$keep":true}.
        let new: Vec<Option<Value>> = items
            .iter()
            .map(|v| {
                if v.get("$keep").is_some() {
                    Ok(None)
                } else {
                    cell(v).map(Some)
                }
            })
            .collect::<Result<_, Failure>>()?;
        current(|tx| tx.edit(&table, &old, &new))
    })
}

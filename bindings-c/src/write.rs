//! The write plane of the contract: enabling writes, mutations (`beginMutation` …
//! `rejectMutation`), acks and watermarks, and the flush (`beginFlush` … `flushInFlight`).

use core::ffi::c_char;

use rindle_room_core::contract::JsonRoom;
use rindle_room_core::Error;

use crate::boundary::{opt_str_arg, str_arg, Out};
use crate::buf::rindle_room_buf;
use crate::result::rindle_room_result;
use crate::room::{getter, rindle_room};
use crate::room::{with_room, with_room_ref};

/// Implements a method that takes one text and returns JSON text.
///
/// # Safety
///
/// As the exported function: `room` NULL or live, `text` NULL or readable for `len`
/// bytes, `out_json` NULL or writable.
unsafe fn text_to_json(
    function: &'static str,
    room: *mut rindle_room,
    (arg, text, len): (&'static str, *const c_char, usize),
    out_json: *mut rindle_room_buf,
    call: impl FnOnce(&mut JsonRoom, &str) -> Result<String, Error>,
) -> rindle_room_result {
    // SAFETY: forwarded from the exported function's contract.
    unsafe {
        with_room(function, room, |r| {
            let (text, out) = (str_arg(arg, text, len)?, Out::new("out_json", out_json)?);
            out.set(rindle_room_buf::from_string(call(r, text)?));
            Ok(())
        })
    }
}

/// Implements a `tx*` staging method: a table name and one JSON text, no result.
///
/// # Safety
///
/// As the exported function: `room` NULL or live, each text NULL or readable for its
/// length.
unsafe fn stage(
    function: &'static str,
    room: *mut rindle_room,
    (table, table_len): (*const c_char, usize),
    (arg, json, json_len): (&'static str, *const c_char, usize),
    call: impl FnOnce(&mut JsonRoom, &str, &str) -> Result<(), Error>,
) -> rindle_room_result {
    // SAFETY: forwarded from the exported function's contract.
    unsafe {
        with_room(function, room, |r| {
            let (table, json) = (
                str_arg("table", table, table_len)?,
                str_arg(arg, json, json_len)?,
            );
            Ok(call(r, table, json)?)
        })
    }
}

/// Implements a read-only per-client watermark (`double` out-parameter).
///
/// # Safety
///
/// As the exported function: `room` NULL or live, `client` NULL or readable for
/// `client_len` bytes, `out` NULL or writable.
unsafe fn watermark(
    function: &'static str,
    room: *const rindle_room,
    (client, client_len): (*const c_char, usize),
    out: *mut f64,
    get: impl FnOnce(&JsonRoom, &str) -> u64,
) -> rindle_room_result {
    // SAFETY: forwarded from the exported function's contract.
    unsafe {
        with_room_ref(function, room, |r| {
            let (client, out) = (
                str_arg("client", client, client_len)?,
                Out::new("out", out)?,
            );
            out.set(get(r, client) as f64);
            Ok(())
        })
    }
}

/// `WasmRoom.enableWrites(ownedJson)`: turns the write plane on (v1) for the tables
/// named in the JSON array `owned_json`. Needs the snapshot.
///
/// # Safety
///
/// `room` is NULL or a live handle; `owned_json` is NULL or readable for `owned_len`
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_enable_writes(
    room: *mut rindle_room,
    owned_json: *const c_char,
    owned_len: usize,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_enable_writes", room, |r| {
            let owned = str_arg("owned_json", owned_json, owned_len)?;
            Ok(r.enable_writes(owned)?)
        })
    }
}

/// `WasmRoom.enableWritesV2(specsJson, ownedJson?)`: turns the write plane on with
/// scope specs. `owned_json` may be NULL (with `owned_len` 0): `undefined`, no bound on
/// the writable tables.
///
/// # Safety
///
/// `room` is NULL or a live handle; each text is NULL or readable for its length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_enable_writes_v2(
    room: *mut rindle_room,
    specs_json: *const c_char,
    specs_len: usize,
    owned_json: *const c_char,
    owned_len: usize,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_enable_writes_v2", room, |r| {
            let (specs, owned) = (
                str_arg("specs_json", specs_json, specs_len)?,
                opt_str_arg("owned_json", owned_json, owned_len)?,
            );
            Ok(r.enable_writes_v2(specs, owned)?)
        })
    }
}

/// `WasmRoom.beginMutation(client, mid, name?, argsJson?)`: opens the transaction of
/// mutation `mid` of `client`. `name` and `args_json` may be NULL (length 0):
/// `undefined`. `*out_json` is `{"begin":"tx"}` (stage with `rindle_room_tx_*()`, then
/// commit or reject) or `{"begin":"dedup"}` (already applied: nothing to do).
///
/// # Safety
///
/// `room` is NULL or a live handle; each text is NULL or readable for its length;
/// `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_begin_mutation(
    room: *mut rindle_room,
    client: *const c_char,
    client_len: usize,
    mid: f64,
    name: *const c_char,
    name_len: usize,
    args_json: *const c_char,
    args_len: usize,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_begin_mutation", room, |r| {
            let (client, name, args, out) = (
                str_arg("client", client, client_len)?,
                opt_str_arg("name", name, name_len)?,
                opt_str_arg("args_json", args_json, args_len)?,
                Out::new("out_json", out_json)?,
            );
            let begun = r.begin_mutation(client, mid, name, args)?;
            out.set(rindle_room_buf::from_string(begun));
            Ok(())
        })
    }
}

/// `WasmRoom.txGet(table, pkJson)`: reads a row as the open transaction sees it. If
/// there is none (`undefined`), `*out_defined` is false and `*out_json` is
/// empty (`data` NULL); otherwise `*out_json` is the row as a JSON array.
///
/// # Safety
///
/// `room` is NULL or a live handle; each text is NULL or readable for its length;
/// `out_json` and `out_defined` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_tx_get(
    room: *mut rindle_room,
    table: *const c_char,
    table_len: usize,
    pk_json: *const c_char,
    pk_len: usize,
    out_json: *mut rindle_room_buf,
    out_defined: *mut bool,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_tx_get", room, |r| {
            let (table, pk, out, defined) = (
                str_arg("table", table, table_len)?,
                str_arg("pk_json", pk_json, pk_len)?,
                Out::new("out_json", out_json)?,
                Out::new("out_defined", out_defined)?,
            );
            let row = r.tx_get(table, pk)?;
            defined.set(row.is_some());
            out.set(rindle_room_buf::from_option(row));
            Ok(())
        })
    }
}

/// `WasmRoom.txAdd(table, rowJson)`: stages an insert of a full row (JSON array).
///
/// # Safety
///
/// `room` is NULL or a live handle; each text is NULL or readable for its length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_tx_add(
    room: *mut rindle_room,
    table: *const c_char,
    table_len: usize,
    row_json: *const c_char,
    row_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        stage(
            "rindle_room_tx_add",
            room,
            (table, table_len),
            ("row_json", row_json, row_len),
            JsonRoom::tx_add,
        )
    }
}

/// `WasmRoom.txEdit(table, rowJson)`: stages a replacement of the row with the same
/// primary key (a full row, JSON array).
///
/// # Safety
///
/// `room` is NULL or a live handle; each text is NULL or readable for its length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_tx_edit(
    room: *mut rindle_room,
    table: *const c_char,
    table_len: usize,
    row_json: *const c_char,
    row_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        stage(
            "rindle_room_tx_edit",
            room,
            (table, table_len),
            ("row_json", row_json, row_len),
            JsonRoom::tx_edit,
        )
    }
}

/// `WasmRoom.txRemove(table, pkJson)`: stages a delete by primary key (JSON array of
/// the key cells).
///
/// # Safety
///
/// `room` is NULL or a live handle; each text is NULL or readable for its length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_tx_remove(
    room: *mut rindle_room,
    table: *const c_char,
    table_len: usize,
    pk_json: *const c_char,
    pk_len: usize,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        stage(
            "rindle_room_tx_remove",
            room,
            (table, table_len),
            ("pk_json", pk_json, pk_len),
            JsonRoom::tx_remove,
        )
    }
}

/// `WasmRoom.commitMutation()`: commits the open transaction. `*out_json` is
/// `{"headCv":N}` (applied: drain with `rindle_room_commit_all()` next) or
/// `{"deopt":{"reason":…,"table":…,"pk":…,…}}` (refused by the commit gate: nothing
/// changed; the host answers with a deopt).
///
/// # Safety
///
/// `room` is NULL or a live handle; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_commit_mutation(
    room: *mut rindle_room,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_commit_mutation", room, |r| {
            let out = Out::new("out_json", out_json)?;
            out.set(rindle_room_buf::from_string(r.commit_mutation()?));
            Ok(())
        })
    }
}

/// `WasmRoom.rejectMutation(kind?, reason?)`: drops the open transaction and records
/// a rejected outcome. `kind` and `reason` may be NULL (length 0): `undefined`.
///
/// # Safety
///
/// `room` is NULL or a live handle; each text is NULL or readable for its length.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_reject_mutation(
    room: *mut rindle_room,
    kind: *const c_char,
    kind_len: usize,
    reason: *const c_char,
    reason_len: usize,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_reject_mutation", room, |r| {
            let (kind, reason) = (
                opt_str_arg("kind", kind, kind_len)?,
                opt_str_arg("reason", reason, reason_len)?,
            );
            Ok(r.reject_mutation(kind, reason)?)
        })
    }
}

/// `WasmRoom.ack(entriesJson)`: `[{"clientID":…,"mid":…}]`, the mutations the authority
/// made durable. `*out_json` is `{"headCv":N}` (drain next) or `{"headCv":null}`.
///
/// # Safety
///
/// `room` is NULL or a live handle; `entries_json` is NULL or readable for
/// `entries_len` bytes; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_ack(
    room: *mut rindle_room,
    entries_json: *const c_char,
    entries_len: usize,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        text_to_json(
            "rindle_room_ack",
            room,
            ("entries_json", entries_json, entries_len),
            out_json,
            JsonRoom::ack,
        )
    }
}

/// `WasmRoom.ackedLmid(client)`: the client's acked mutation id.
///
/// # Safety
///
/// `room` is NULL or a live handle; `client` is NULL or readable for `client_len`
/// bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_acked_lmid(
    room: *const rindle_room,
    client: *const c_char,
    client_len: usize,
    out: *mut f64,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        watermark(
            "rindle_room_acked_lmid",
            room,
            (client, client_len),
            out,
            JsonRoom::acked_lmid,
        )
    }
}

/// `WasmRoom.appliedMid(client)`: the client's last applied mutation id.
///
/// # Safety
///
/// `room` is NULL or a live handle; `client` is NULL or readable for `client_len`
/// bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_applied_mid(
    room: *const rindle_room,
    client: *const c_char,
    client_len: usize,
    out: *mut f64,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        watermark(
            "rindle_room_applied_mid",
            room,
            (client, client_len),
            out,
            JsonRoom::applied_mid,
        )
    }
}

/// `WasmRoom.durableLmid(client)`: the client's durable mutation id.
///
/// # Safety
///
/// `room` is NULL or a live handle; `client` is NULL or readable for `client_len`
/// bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_durable_lmid(
    room: *const rindle_room,
    client: *const c_char,
    client_len: usize,
    out: *mut f64,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        watermark(
            "rindle_room_durable_lmid",
            room,
            (client, client_len),
            out,
            JsonRoom::durable_lmid,
        )
    }
}

/// `WasmRoom.lmidSubscribe(sub, epoch, client, nowMs)`: subscribes `sub` to the
/// client's mutation-ledger row. `*out_json` has the shape of
/// `rindle_room_subscribe()`'s.
///
/// # Safety
///
/// `room` is NULL or a live handle; each text is NULL or readable for its length;
/// `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_lmid_subscribe(
    room: *mut rindle_room,
    sub: *const c_char,
    sub_len: usize,
    epoch: f64,
    client: *const c_char,
    client_len: usize,
    now_ms: f64,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_lmid_subscribe", room, |r| {
            let (sub, client, out) = (
                str_arg("sub", sub, sub_len)?,
                str_arg("client", client, client_len)?,
                Out::new("out_json", out_json)?,
            );
            let subscribed = r.lmid_subscribe(sub, epoch, client, now_ms)?;
            out.set(rindle_room_buf::from_string(subscribed));
            Ok(())
        })
    }
}

/// `WasmRoom.seedDurable(seedsJson)`: `[{"clientID":…,"lmid":…}]`, the durable
/// watermarks read back from the authority at boot. `*out_json` is `{"headCv":N}`
/// (drain next) or `{"headCv":null}`.
///
/// # Safety
///
/// `room` is NULL or a live handle; `seeds_json` is NULL or readable for `seeds_len`
/// bytes; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_seed_durable(
    room: *mut rindle_room,
    seeds_json: *const c_char,
    seeds_len: usize,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        text_to_json(
            "rindle_room_seed_durable",
            room,
            ("seeds_json", seeds_json, seeds_len),
            out_json,
            JsonRoom::seed_durable,
        )
    }
}

/// `WasmRoom.pendingLen()`: how many committed mutations wait for their ack.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_pending_len(
    room: *const rindle_room,
    out: *mut f64,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        getter("rindle_room_pending_len", room, out, |r| {
            r.pending_len() as f64
        })
    }
}

/// `WasmRoom.dirtyLen()`: how many keys hold writes not yet flushed.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_dirty_len(
    room: *const rindle_room,
    out: *mut f64,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe { getter("rindle_room_dirty_len", room, out, |r| r.dirty_len() as f64) }
}

/// `WasmRoom.beginFlush()`: takes the dirty keys into one flight
/// `{"changes":…,"batchHash":…,"lmids":…}` for the authority. With nothing to flush the
/// result is `undefined`: `*out_defined` is false and `*out_json` is empty (`data` NULL).
/// Settle a flight with `rindle_room_flush_ok()` or `rindle_room_flush_conflict()`.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out_json` and `out_defined` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_begin_flush(
    room: *mut rindle_room,
    out_json: *mut rindle_room_buf,
    out_defined: *mut bool,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_begin_flush", room, |r| {
            let (out, defined) = (
                Out::new("out_json", out_json)?,
                Out::new("out_defined", out_defined)?,
            );
            let flight = r.begin_flush()?;
            defined.set(flight.is_some());
            out.set(rindle_room_buf::from_option(flight));
            Ok(())
        })
    }
}

/// `WasmRoom.flushOk()`: the authority applied the flight. `*out_json` is
/// `{"retired":N,"dirty":N}`: the pending mutations the flight made durable, and the
/// keys still dirty (written during the flight: flush again).
///
/// # Safety
///
/// `room` is NULL or a live handle; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_flush_ok(
    room: *mut rindle_room,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_flush_ok", room, |r| {
            let out = Out::new("out_json", out_json)?;
            out.set(rindle_room_buf::from_string(r.flush_ok()?));
            Ok(())
        })
    }
}

/// `WasmRoom.flushConflict(conflictsJson)`: the authority refused the flight;
/// `[{"table":…,"pk":…,"current":…}]` are its current rows. `*out_json` is
/// `{"headCv":N}` (corrective frames: drain next) or `{"headCv":null}`.
///
/// # Safety
///
/// `room` is NULL or a live handle; `conflicts_json` is NULL or readable for
/// `conflicts_len` bytes; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_flush_conflict(
    room: *mut rindle_room,
    conflicts_json: *const c_char,
    conflicts_len: usize,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        text_to_json(
            "rindle_room_flush_conflict",
            room,
            ("conflicts_json", conflicts_json, conflicts_len),
            out_json,
            JsonRoom::flush_conflict,
        )
    }
}

/// `WasmRoom.flushInFlight()`: whether a flight awaits its settlement.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_flush_in_flight(
    room: *const rindle_room,
    out: *mut bool,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        getter(
            "rindle_room_flush_in_flight",
            room,
            out,
            JsonRoom::flush_in_flight,
        )
    }
}

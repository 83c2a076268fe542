//! The write plane of the `WasmRoom` class: enabling it, the mutation
//! transaction, acks and watermarks, and the write-behind flush. Same shape as
//! `room.rs`: convert the arguments, run the [`JsonRoom`] method, return its result.
//!
//! [`JsonRoom`]: rindle_room_core::contract::JsonRoom

use napi::sys;

use crate::call::{method, Call, Method};

/// The write-plane methods, in the published `WasmRoom`'s order.
pub(crate) static METHODS: &[Method] = &[
    method!("enableWrites", enable_writes),
    method!("enableWritesV2", enable_writes_v2),
    method!("beginMutation", begin_mutation),
    method!("txGet", tx_get),
    method!("txAdd", tx_add),
    method!("txEdit", tx_edit),
    method!("txRemove", tx_remove),
    method!("commitMutation", commit_mutation),
    method!("rejectMutation", reject_mutation),
    method!("ack", ack),
    method!("ackedLmid", acked_lmid),
    method!("appliedMid", applied_mid),
    method!("durableLmid", durable_lmid),
    method!("lmidSubscribe", lmid_subscribe),
    method!("seedDurable", seed_durable),
    method!("pendingLen", pending_len),
    method!("dirtyLen", dirty_len),
    method!("beginFlush", begin_flush),
    method!("flushOk", flush_ok),
    method!("flushConflict", flush_conflict),
    method!("flushInFlight", flush_in_flight),
];

type Out = napi::Result<sys::napi_value>;

/// `enableWrites(owned_json)`: a JSON array of the tables mutators may write. Once only.
fn enable_writes(c: &mut Call<'_>) -> Out {
    let owned = c.text(0, "owned_json")?;
    c.run(|r| r.enable_writes(&owned))
}

/// `enableWritesV2(specs_json, owned_json?)`: scope specs (the commit gate); the
/// optional owned set (this face's extension) bounds the writable tables.
fn enable_writes_v2(c: &mut Call<'_>) -> Out {
    let specs = c.text(0, "specs_json")?;
    let owned = c.opt_text(1, "owned_json")?;
    c.run(|r| r.enable_writes_v2(&specs, owned.as_deref()))
}

/// `beginMutation(client_id, mid, name?, args_json?)`: `{"begin":"tx"|"dedup"}`;
/// throws `mutation gap for …` on a gap.
fn begin_mutation(c: &mut Call<'_>) -> Out {
    let client = c.text(0, "client_id")?;
    let mid = c.number(1, "mid")?;
    let name = c.opt_text(2, "name")?;
    let args = c.opt_text(3, "args_json")?;
    c.run(|r| r.begin_mutation(&client, mid, name.as_deref(), args.as_deref()))
}

/// `txGet(table, pk_json)`: the effective row (JSON-array text), or `undefined`.
fn tx_get(c: &mut Call<'_>) -> Out {
    let table = c.text(0, "table")?;
    let pk = c.text(1, "pk_json")?;
    c.run(|r| r.tx_get(&table, &pk))
}

/// `txAdd(table, row_json)`: stages an add of a full-width row.
fn tx_add(c: &mut Call<'_>) -> Out {
    let table = c.text(0, "table")?;
    let row = c.text(1, "row_json")?;
    c.run(|r| r.tx_add(&table, &row))
}

/// `txEdit(table, row_json)`: stages an edit of a full-width row keyed by its pk.
fn tx_edit(c: &mut Call<'_>) -> Out {
    let table = c.text(0, "table")?;
    let row = c.text(1, "row_json")?;
    c.run(|r| r.tx_edit(&table, &row))
}

/// `txRemove(table, pk_json)`: stages a remove of the row keyed `pk_json`.
fn tx_remove(c: &mut Call<'_>) -> Out {
    let table = c.text(0, "table")?;
    let pk = c.text(1, "pk_json")?;
    c.run(|r| r.tx_remove(&table, &pk))
}

/// `commitMutation()`: `{"headCv":n}`, or `{"deopt":{…}}` under the commit gate.
fn commit_mutation(c: &mut Call<'_>) -> Out {
    c.run(|r| r.commit_mutation())
}

/// `rejectMutation(kind?, reason?)`: drops the transaction, consumes its mid.
fn reject_mutation(c: &mut Call<'_>) -> Out {
    let kind = c.opt_text(0, "kind")?;
    let reason = c.opt_text(1, "reason")?;
    c.run(|r| r.reject_mutation(kind.as_deref(), reason.as_deref()))
}

/// `ack(entries_json)`: `[{clientID, mid}]` → `{"headCv":n|null}`.
fn ack(c: &mut Call<'_>) -> Out {
    let entries = c.text(0, "entries_json")?;
    c.run(|r| r.ack(&entries))
}

/// `ackedLmid(client_id)`.
fn acked_lmid(c: &mut Call<'_>) -> Out {
    let client = c.text(0, "client_id")?;
    c.run(|r| Ok(r.acked_lmid(&client) as f64))
}

/// `appliedMid(client_id)`.
fn applied_mid(c: &mut Call<'_>) -> Out {
    let client = c.text(0, "client_id")?;
    c.run(|r| Ok(r.applied_mid(&client) as f64))
}

/// `durableLmid(client_id)`.
fn durable_lmid(c: &mut Call<'_>) -> Out {
    let client = c.text(0, "client_id")?;
    c.run(|r| Ok(r.durable_lmid(&client) as f64))
}

/// `lmidSubscribe(sub, epoch, client_id, now_ms)`: same result as `subscribe`.
fn lmid_subscribe(c: &mut Call<'_>) -> Out {
    let sub = c.text(0, "sub")?;
    let epoch = c.number(1, "epoch")?;
    let client = c.text(2, "client_id")?;
    let now = c.number(3, "now_ms")?;
    c.run(|r| r.lmid_subscribe(&sub, epoch, &client, now))
}

/// `seedDurable(seeds_json)`: `[{clientID, lmid}]` → `{"headCv":n|null}`.
fn seed_durable(c: &mut Call<'_>) -> Out {
    let seeds = c.text(0, "seeds_json")?;
    c.run(|r| r.seed_durable(&seeds))
}

/// `pendingLen()`.
fn pending_len(c: &mut Call<'_>) -> Out {
    c.run(|r| Ok(r.pending_len() as f64))
}

/// `dirtyLen()`.
fn dirty_len(c: &mut Call<'_>) -> Out {
    c.run(|r| Ok(r.dirty_len() as f64))
}

/// `beginFlush()`: `{changes, batchHash, lmids}` (JSON text), or `undefined`.
fn begin_flush(c: &mut Call<'_>) -> Out {
    c.run(|r| r.begin_flush())
}

/// `flushOk()`: `{"retired":n,"dirty":n}`.
fn flush_ok(c: &mut Call<'_>) -> Out {
    c.run(|r| r.flush_ok())
}

/// `flushConflict(conflicts_json)`: `[{table, pk, current}]` → `{"headCv":n|null}`.
fn flush_conflict(c: &mut Call<'_>) -> Out {
    let conflicts = c.text(0, "conflicts_json")?;
    c.run(|r| r.flush_conflict(&conflicts))
}

/// `flushInFlight()`.
fn flush_in_flight(c: &mut Call<'_>) -> Out {
    c.run(|r| Ok(r.flush_in_flight()))
}

//! The `WasmRoom` JSON contract of `@rindle/room` 0.9: every method takes and returns
//! JSON text exactly as the wasm class does. The C ABI, the Node binding and the server
//! wrap this type, so their JSON is byte-identical by construction.
//!
//! Numbers that JavaScript passes as `number` (epochs, times) arrive as `f64` and are
//! checked here; JSON output formats numbers as `JSON.stringify` does
//! (docs/design/decisions.md, "Values and JSON numbers").

use alloc::borrow::Cow;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use serde::Deserialize;

use crate::error::{Error, ErrorCode};
use crate::json::read::WireRow;
use crate::json::write::{write_f64, write_key, write_row, write_str};
use crate::room::{ApplyStatus, Room, UpstreamBatch};
use crate::schema::{safe_uint, Hello};
use crate::serve::{Batch, Frame, NetOp, Subscribed};
use crate::value::COMPARATOR_VERSION;

mod batch;
mod frame;
mod write;
pub use frame::{parse_upstream_frame, UpstreamFrame};
pub use write::{mint_room_token, render_cell, scope_specs_hash, verify_room_token};

/// A room behind the JSON contract.
#[derive(Debug)]
pub struct JsonRoom {
    room: Room,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireBatch<'a> {
    epoch: serde_json::Number,
    seq: serde_json::Number,
    #[serde(borrow)]
    normalized_fp: Cow<'a, str>,
    #[serde(default)]
    cv: Option<serde_json::Number>,
    #[serde(borrow)]
    ops: Vec<WireOp<'a>>,
}

#[derive(Deserialize)]
struct WireOp<'a> {
    #[serde(borrow)]
    table: Cow<'a, str>,
    #[serde(borrow)]
    op: Cow<'a, str>,
    #[serde(default)]
    row: Option<WireRow>,
    #[serde(default)]
    old: Option<WireRow>,
    #[serde(default)]
    new: Option<WireRow>,
}

/// Checks a JavaScript number used as a counter (a count, an epoch, a mid): finite,
/// integral and non-negative (`crate::upstream::wire_counter`). The refusal reads
/// `<what>: not a wire-safe counter: <v>`, as the published room's does.
pub fn js_uint(v: f64, what: &str) -> Result<u64, Error> {
    crate::upstream::wire_counter(v).ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidArgument,
            format!("{what}: not a wire-safe counter: {v}"),
        )
    })
}

/// Checks a JavaScript time in whole ms since the Unix epoch (a fraction, as from
/// `performance.now()`, is refused as the published room refuses it, in its words).
pub fn js_time(v: f64, what: &str) -> Result<u64, Error> {
    crate::upstream::wire_counter(v).ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidArgument,
            format!("{what}: not a wire-safe counter: {v}"),
        )
    })
}

/// Parses an upstream `nbatch.batch` object from JSON text.
pub fn parse_upstream_batch(text: &str) -> Result<UpstreamBatch, Error> {
    parse_upstream_batch_interned(text, &|name| alloc::sync::Arc::from(name))
}

/// Parses a batch, getting each op's table name from `intern` (a room shares its own
/// names instead of allocating one per op).
pub fn parse_upstream_batch_interned(
    text: &str,
    intern: &dyn Fn(&str) -> alloc::sync::Arc<str>,
) -> Result<UpstreamBatch, Error> {
    batch_from_wire(parse_wire_batch(text)?, intern, true)
}

/// Parses the wire form of a batch, naming the offending field on error.
pub(crate) fn parse_wire_batch(text: &str) -> Result<WireBatch<'_>, Error> {
    serde_json::from_str(text).map_err(|e| {
        Error::malformed(format!(
            "malformed upstream batch: {}",
            diagnose_batch(text, &e)
        ))
    })
}

/// Builds the typed batch from its parsed wire form. `copy_fp: false` leaves
/// `normalized_fp` empty: the caller already matched it (see `JsonRoom::apply`).
pub(crate) fn batch_from_wire(
    wire: WireBatch<'_>,
    intern: &dyn Fn(&str) -> alloc::sync::Arc<str>,
    copy_fp: bool,
) -> Result<UpstreamBatch, Error> {
    let epoch = safe_uint(&wire.epoch).ok_or_else(|| {
        Error::malformed("malformed upstream batch: epoch must be a non-negative integer")
    })?;
    let seq = safe_uint(&wire.seq).ok_or_else(|| {
        Error::malformed("malformed upstream batch: seq must be a non-negative integer")
    })?;
    let cv = match &wire.cv {
        None => None,
        Some(n) => Some(
            n.as_f64()
                .ok_or_else(|| Error::malformed("malformed upstream batch: cv must be a number"))?,
        ),
    };
    let mut ops = Vec::with_capacity(wire.ops.len());
    for (i, op) in wire.ops.into_iter().enumerate() {
        let table = intern(&op.table);
        let missing = |field: &str| {
            Error::malformed(format!(
                "malformed upstream batch: op {i} ({}) needs `{field}`",
                op.op
            ))
        };
        ops.push(match &*op.op {
            "add" => NetOp::Add {
                table,
                row: op.row.ok_or_else(|| missing("row"))?.0,
            },
            "remove" => NetOp::Remove {
                table,
                row: op.row.ok_or_else(|| missing("row"))?.0,
            },
            "edit" => NetOp::Edit {
                table,
                old: op.old.ok_or_else(|| missing("old"))?.0,
                new: op.new.ok_or_else(|| missing("new"))?.0,
            },
            other => {
                return Err(Error::malformed(format!(
                    "malformed upstream batch: op {i} has unknown kind {other:?}"
                )))
            }
        });
    }
    Ok(UpstreamBatch {
        epoch,
        seq,
        normalized_fp: if copy_fp {
            String::from(&*wire.normalized_fp)
        } else {
            String::new()
        },
        cv,
        ops,
    })
}

/// Names the field a malformed batch got wrong (the slow path, only after serde refused).
pub(crate) fn diagnose_batch(text: &str, err: &serde_json::Error) -> String {
    use serde_json::Value as Json;
    let Ok(v) = serde_json::from_str::<Json>(text) else {
        return format!("{err}");
    };
    let Some(o) = v.as_object() else {
        return String::from("the batch must be a JSON object");
    };
    for key in ["epoch", "seq"] {
        match o.get(key) {
            Some(Json::Number(_)) => {}
            Some(other) => return format!("`{key}` must be a number, got {other}"),
            None => return format!("`{key}` is missing"),
        }
    }
    match o.get("normalizedFp") {
        Some(Json::String(_)) => {}
        Some(other) => return format!("`normalizedFp` must be a string, got {other}"),
        None => return String::from("`normalizedFp` is missing"),
    }
    if let Some(cv) = o.get("cv") {
        if !matches!(cv, Json::Number(_) | Json::Null) {
            return format!("`cv` must be a number, got {cv}");
        }
    }
    let ops = match o.get("ops") {
        Some(Json::Array(ops)) => ops,
        Some(other) => return format!("`ops` must be an array, got {other}"),
        None => return String::from("`ops` is missing"),
    };
    for (i, op) in ops.iter().enumerate() {
        let Some(op) = op.as_object() else {
            return format!("ops[{i}] must be an object");
        };
        for key in ["table", "op"] {
            if !matches!(op.get(key), Some(Json::String(_))) {
                return format!("ops[{i}].{key} must be a string");
            }
        }
        for key in ["row", "old", "new"] {
            match op.get(key) {
                None | Some(Json::Null) => {}
                Some(Json::Array(cells)) => {
                    if let Some(c) = cells
                        .iter()
                        .find(|c| matches!(c, Json::Array(_) | Json::Object(_)))
                    {
                        return format!("ops[{i}].{key}: a cell must be null, boolean, number or string, got {c}");
                    }
                }
                Some(other) => {
                    return format!("ops[{i}].{key} must be an array of cells, got {other}")
                }
            }
        }
    }
    format!("{err}")
}

impl JsonRoom {
    /// `WasmRoom.open(hello_json, idle_ttl_ms)`: opens a room from the upstream hello.
    pub fn open(hello_json: &str, idle_ttl_ms: f64) -> Result<JsonRoom, Error> {
        let ttl = js_time(idle_ttl_ms, "idleTtlMs")?;
        let hello = Hello::from_json(hello_json)?;
        Ok(JsonRoom {
            room: Room::open(hello, ttl)?,
        })
    }

    /// Wraps a typed room.
    pub fn from_room(room: Room) -> JsonRoom {
        JsonRoom { room }
    }

    /// The typed room underneath.
    pub fn room(&self) -> &Room {
        &self.room
    }

    /// The typed room underneath, mutably.
    pub fn room_mut(&mut self) -> &mut Room {
        &mut self.room
    }

    /// `apply(batch_json)`: `{"applied":"snapshot","rows":N}` | `{"applied":"live","ops":N}`
    /// | `{"applied":"duplicate"}` | `{"applied":"staleEpoch","expected":E,"got":G}`.
    pub fn apply(&mut self, batch_json: &str) -> Result<String, Error> {
        // A seq-0 snapshot is applied as it is parsed (bounded memory), when it can be.
        if let Some(status) = batch::stream_snapshot(batch_json, &mut self.room) {
            return Ok(status_json(status));
        }
        // The common shape in one pass (its fingerprint matched); anything else is parsed
        // again the general way, which names what is wrong.
        let status = match batch::parse_batch_for(batch_json, &self.room) {
            Some(batch) => self.room.apply_checked(&batch, true)?,
            None => {
                let room = &self.room;
                let intern = |name: &str| match room.table_name(name) {
                    Some(shared) => shared,
                    None => alloc::sync::Arc::from(name),
                };
                let wire = parse_wire_batch(batch_json)?;
                // Match the fingerprint on the borrowed text: no copy when it matches.
                let fp_ok = room.upstream_fp_is(&wire.normalized_fp);
                let batch = batch_from_wire(wire, &intern, !fp_ok)?;
                self.room.apply_checked(&batch, fp_ok)?
            }
        };
        Ok(status_json(status))
    }

    /// `subscribe(sub, epoch, ast_json, now_ms)`: `{queryKey, reused, hello, snapshot}`.
    pub fn subscribe(
        &mut self,
        sub: &str,
        epoch: f64,
        ast_json: &str,
        now_ms: f64,
    ) -> Result<String, Error> {
        let epoch = js_uint(epoch, "epoch")?;
        let now = js_time(now_ms, "nowMs")?;
        let query = self.room.parse_subscription(ast_json)?;
        let res = self.room.subscribe(sub, epoch, &query, now)?;
        Ok(render_subscribed(&res))
    }

    /// `unsubscribe(sub, now_ms)`: whether `sub` was attached.
    pub fn unsubscribe(&mut self, sub: &str, now_ms: f64) -> Result<bool, Error> {
        let now = js_time(now_ms, "nowMs")?;
        Ok(self.room.unsubscribe(sub, now))
    }

    /// `sweep(now_ms)`: how many idle queries were reclaimed.
    pub fn sweep(&mut self, now_ms: f64) -> Result<u64, Error> {
        let now = js_time(now_ms, "nowMs")?;
        Ok(self.room.sweep(now) as u64)
    }

    /// `commitAll()`: `[{"sub":…,"batch":…},…]`.
    pub fn commit_all(&mut self) -> String {
        render_frames(&self.room.commit_all())
    }

    /// `cv()`: the last upstream cv, `None` before the snapshot.
    pub fn cv(&self) -> Option<f64> {
        self.room.cv()
    }

    /// `headCv()`.
    pub fn head_cv(&self) -> u64 {
        self.room.head_cv()
    }

    /// `epoch()`.
    pub fn epoch(&self) -> u64 {
        self.room.epoch()
    }

    /// `isLive()`.
    pub fn is_live(&self) -> bool {
        self.room.is_live()
    }

    /// `isPoisoned()`.
    pub fn is_poisoned(&self) -> bool {
        self.room.is_poisoned()
    }

    /// `materializationCount()`.
    pub fn materialization_count(&self) -> u64 {
        self.room.materialization_count() as u64
    }

    /// `subscriberCount()`.
    pub fn subscriber_count(&self) -> u64 {
        self.room.subscriber_count() as u64
    }
}

/// Appends one op as `{"table":…,"op":…,…}`.
pub fn write_op(out: &mut String, op: &NetOp) {
    out.push_str("{\"table\":");
    write_str(out, op.table());
    match op {
        NetOp::Add { row, .. } => {
            out.push_str(",\"op\":\"add\",\"row\":");
            write_row(out, row);
        }
        NetOp::Remove { row, .. } => {
            out.push_str(",\"op\":\"remove\",\"row\":");
            write_row(out, row);
        }
        NetOp::Edit { old, new, .. } => {
            out.push_str(",\"op\":\"edit\",\"old\":");
            write_row(out, old);
            out.push_str(",\"new\":");
            write_row(out, new);
        }
    }
    out.push('}');
}

/// Appends an op list as a JSON array.
pub fn write_ops(out: &mut String, ops: &[NetOp]) {
    out.push('[');
    for (i, op) in ops.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_op(out, op);
    }
    out.push(']');
}

/// Appends a downstream batch `{"epoch","seq","normalizedFp","ops","cv"}`.
pub fn write_batch(out: &mut String, b: &Batch) {
    out.reserve(128 + ops_text_estimate(&b.ops));
    out.push_str("{\"epoch\":");
    crate::json::write::write_u64(out, b.epoch);
    out.push_str(",\"seq\":");
    crate::json::write::write_u64(out, b.seq);
    out.push_str(",\"normalizedFp\":");
    write_str(out, &b.normalized_fp);
    out.push_str(",\"ops\":");
    write_ops(out, &b.ops);
    out.push_str(",\"cv\":");
    crate::json::write::write_u64(out, b.cv);
    out.push('}');
}

/// Renders a drain as the `commitAll` JSON array. Subscribers sharing a pipeline share
/// one op list: it is rendered once and its text copied for the others.
pub fn render_frames(frames: &[Frame]) -> String {
    let mut out = String::with_capacity(frames_text_estimate(frames));
    out.push('[');
    // (op-list pointer, byte range of its rendering inside `out`)
    let mut rendered: Vec<(usize, core::ops::Range<usize>)> = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"sub\":");
        write_str(&mut out, &f.sub);
        let b = &f.batch;
        out.push_str(",\"batch\":{\"epoch\":");
        crate::json::write::write_u64(&mut out, b.epoch);
        out.push_str(",\"seq\":");
        crate::json::write::write_u64(&mut out, b.seq);
        out.push_str(",\"normalizedFp\":");
        write_str(&mut out, &b.normalized_fp);
        out.push_str(",\"ops\":");
        let id = b.ops.as_ptr() as usize;
        match rendered.iter().find(|(k, _)| *k == id) {
            Some((_, range)) => {
                let range = range.clone();
                out.extend_from_within(range);
            }
            None => {
                let start = out.len();
                write_ops(&mut out, &b.ops);
                rendered.push((id, start..out.len()));
            }
        }
        out.push_str(",\"cv\":");
        crate::json::write::write_u64(&mut out, b.cv);
        out.push_str("}}");
    }
    out.push(']');
    out
}

/// About how long [`write_ops`] makes the text of `ops`, so that a frame's text is
/// allocated once: each op's envelope and twice its rows' packed bytes (a row's JSON is
/// longer than its image: quotes, commas, digits).
fn ops_text_estimate(ops: &[NetOp]) -> usize {
    ops.iter()
        .map(|op| {
            let rows = op.before().map_or(0, crate::value::Row::heap_bytes)
                + op.after().map_or(0, crate::value::Row::heap_bytes);
            48 + op.table().len() + 2 * rows
        })
        .sum()
}

/// About how long [`render_frames`] makes its text: each frame's envelope and its ops.
fn frames_text_estimate(frames: &[Frame]) -> usize {
    64 + frames
        .iter()
        .map(|f| 128 + f.sub.len() + f.batch.normalized_fp.len() + ops_text_estimate(&f.batch.ops))
        .sum::<usize>()
}

/// Renders a subscribe result.
pub fn render_subscribed(res: &Subscribed) -> String {
    let mut out = String::with_capacity(256);
    out.push('{');
    write_key(&mut out, "queryKey");
    write_str(&mut out, &res.query_key);
    let _ = write!(out, ",\"reused\":{},\"hello\":", res.reused);
    let _ = write!(
        out,
        "{{\"epoch\":{},\"comparatorVersion\":{},\"tables\":[",
        res.hello.epoch, COMPARATOR_VERSION
    );
    for (i, t) in res.hello.tables.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        t.write_json(&mut out);
    }
    out.push_str("],\"normalizedFp\":");
    write_str(&mut out, &res.hello.normalized_fp);
    out.push_str("},\"snapshot\":");
    write_batch(&mut out, &res.snapshot);
    out.push('}');
    out
}

/// Renders an optional number as JSON (`null` for none).
pub fn render_opt_f64(v: Option<f64>) -> String {
    let mut s = String::new();
    match v {
        Some(f) => write_f64(&mut s, f),
        None => s.push_str("null"),
    }
    s
}

/// The `apply` status text.
fn status_json(status: ApplyStatus) -> String {
    match status {
        ApplyStatus::Snapshot { rows } => {
            let mut s = String::with_capacity(40);
            s.push_str("{\"applied\":\"snapshot\",\"rows\":");
            crate::json::write::write_i64(&mut s, rows as i64);
            s.push('}');
            s
        }
        ApplyStatus::Live { ops } => {
            let mut s = String::with_capacity(32);
            s.push_str("{\"applied\":\"live\",\"ops\":");
            crate::json::write::write_i64(&mut s, ops as i64);
            s.push('}');
            s
        }
        ApplyStatus::Duplicate => String::from("{\"applied\":\"duplicate\"}"),
        ApplyStatus::StaleEpoch { expected, got } => {
            format!("{{\"applied\":\"staleEpoch\",\"expected\":{expected},\"got\":{got}}}")
        }
    }
}

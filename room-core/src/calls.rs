//! Call-by-name over the JSON contract: `{"call": "<method>", "args": [...]}`.
//!
//! The replay tool, the conformance runner and the fuzz target all drive a room through
//! this one table, so a scenario means the same thing everywhere. Arguments that the
//! `WasmRoom` method takes as JSON text are given as JSON values and serialized here
//! exactly as JavaScript's `JSON.stringify` would (key order kept); `open` creates the
//! room the later calls act on. A missing trailing argument is `undefined`. An argument
//! written `{"$text": "…"}` passes that raw text instead (the only way to send text that
//! is not JSON at all).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::contract::{mint_room_token, scope_specs_hash, verify_room_token, JsonRoom};
use crate::error::{Error, ErrorCode};
use crate::json::tree::JsValue;
use crate::json::write::{write_f64, write_str};

/// What a contract method returned.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// JSON text (a method that returns a JSON string).
    Json(String),
    /// A plain string (a token, a hash).
    Text(String),
    /// A number.
    Number(f64),
    /// A boolean.
    Bool(bool),
    /// `undefined` / `void`.
    Undefined,
}

impl Output {
    /// The output as JSON text: JSON results verbatim, strings quoted, numbers and
    /// booleans as `JSON.stringify` prints them, `undefined` as `null`.
    pub fn to_json_text(&self) -> String {
        let mut s = String::new();
        match self {
            Output::Json(t) => s.push_str(t),
            Output::Text(t) => write_str(&mut s, t),
            Output::Number(f) => write_f64(&mut s, *f),
            Output::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
            Output::Undefined => s.push_str("null"),
        }
        s
    }
}

/// Every method name [`call`] understands, in the published `WasmRoom`'s spelling.
pub const METHODS: &[&str] = &[
    "open",
    "apply",
    "subscribe",
    "unsubscribe",
    "sweep",
    "commitAll",
    "cv",
    "headCv",
    "epoch",
    "isLive",
    "isPoisoned",
    "materializationCount",
    "subscriberCount",
    "enableWrites",
    "enableWritesV2",
    "beginMutation",
    "txGet",
    "txAdd",
    "txEdit",
    "txRemove",
    "commitMutation",
    "rejectMutation",
    "ack",
    "ackedLmid",
    "appliedMid",
    "durableLmid",
    "lmidSubscribe",
    "seedDurable",
    "pendingLen",
    "dirtyLen",
    "beginFlush",
    "flushOk",
    "flushConflict",
    "flushInFlight",
    "mintRoomToken",
    "verifyRoomToken",
    "scopeSpecsHash",
];

struct Args<'a> {
    method: &'a str,
    args: &'a [JsValue],
}

impl Args<'_> {
    fn bad(&self, i: usize, what: &str) -> Error {
        Error::new(
            ErrorCode::InvalidArgument,
            format!("{}: argument {} must be {what}", self.method, i + 1),
        )
    }

    fn text(&self, i: usize) -> Result<&str, Error> {
        match self.args.get(i) {
            Some(JsValue::Str(s)) => Ok(s),
            _ => Err(self.bad(i, "a string")),
        }
    }

    /// An optional string: missing or `null` is `None`.
    fn opt_text(&self, i: usize) -> Result<Option<&str>, Error> {
        match self.args.get(i) {
            None | Some(JsValue::Null) => Ok(None),
            Some(JsValue::Str(s)) => Ok(Some(s)),
            _ => Err(self.bad(i, "a string or null")),
        }
    }

    fn json_text(&self, i: usize) -> Result<String, Error> {
        match self.args.get(i) {
            Some(v) => Ok(as_text(v)),
            None => Err(self.bad(i, "a JSON value")),
        }
    }

    /// An optional JSON-text argument: missing is `None` (JSON `null` is the text
    /// `"null"`).
    fn opt_json_text(&self, i: usize) -> Option<String> {
        self.args.get(i).map(as_text)
    }

    fn number(&self, i: usize) -> Result<f64, Error> {
        match self.args.get(i) {
            Some(JsValue::Num(f)) => Ok(*f),
            _ => Err(self.bad(i, "a number")),
        }
    }
}

/// The text a JSON-text argument stands for: `{"$text": "…"}` passes raw (possibly
/// malformed) text verbatim; any other value is serialized as `JSON.stringify` would.
pub fn as_text(v: &JsValue) -> String {
    if let JsValue::Obj(members) = v {
        if let [(k, JsValue::Str(raw))] = members.as_slice() {
            if k == "$text" {
                return raw.clone();
            }
        }
    }
    v.to_js_string()
}

fn opt_json(v: Option<String>) -> Output {
    v.map_or(Output::Undefined, Output::Json)
}

/// Runs one call with `serde_json` arguments (object key order is not preserved: prefer
/// [`call_js`] when JSON-text arguments must keep their bytes).
pub fn call(
    room: &mut Option<JsonRoom>,
    method: &str,
    args: &[serde_json::Value],
) -> Result<Output, Error> {
    let args: Vec<JsValue> = args.iter().map(JsValue::from_serde).collect();
    call_js(room, method, &args)
}

/// Runs one call. `room` is the room `open` created (or `None` before it).
pub fn call_js(
    room: &mut Option<JsonRoom>,
    method: &str,
    args: &[JsValue],
) -> Result<Output, Error> {
    let a = Args { method, args };
    match method {
        "open" => {
            let r = JsonRoom::open(&a.json_text(0)?, a.number(1)?)?;
            *room = Some(r);
            return Ok(Output::Undefined);
        }
        "mintRoomToken" => return Ok(Output::Text(mint_room_token(&a.json_text(0)?)?)),
        "verifyRoomToken" => {
            return Ok(Output::Json(verify_room_token(
                a.text(0)?,
                &a.json_text(1)?,
            )?))
        }
        "scopeSpecsHash" => return Ok(Output::Text(scope_specs_hash(&a.json_text(0)?)?)),
        _ => {}
    }
    let Some(r) = room.as_mut() else {
        return Err(Error::new(
            ErrorCode::WrongState,
            format!("{method}: no room is open (call open first)"),
        ));
    };
    Ok(match method {
        "apply" => Output::Json(r.apply(&a.json_text(0)?)?),
        "subscribe" => {
            Output::Json(r.subscribe(a.text(0)?, a.number(1)?, &a.json_text(2)?, a.number(3)?)?)
        }
        "unsubscribe" => Output::Bool(r.unsubscribe(a.text(0)?, a.number(1)?)?),
        "sweep" => Output::Number(r.sweep(a.number(0)?)? as f64),
        "commitAll" => Output::Json(r.commit_all()),
        "cv" => r.cv().map_or(Output::Undefined, Output::Number),
        "headCv" => Output::Number(r.head_cv() as f64),
        "epoch" => Output::Number(r.epoch() as f64),
        "isLive" => Output::Bool(r.is_live()),
        "isPoisoned" => Output::Bool(r.is_poisoned()),
        "materializationCount" => Output::Number(r.materialization_count() as f64),
        "subscriberCount" => Output::Number(r.subscriber_count() as f64),
        "enableWrites" => {
            r.enable_writes(&a.json_text(0)?)?;
            Output::Undefined
        }
        "enableWritesV2" => {
            r.enable_writes_v2(&a.json_text(0)?, a.opt_json_text(1).as_deref())?;
            Output::Undefined
        }
        "beginMutation" => Output::Json(r.begin_mutation(
            a.text(0)?,
            a.number(1)?,
            a.opt_text(2)?,
            a.opt_json_text(3).as_deref(),
        )?),
        "txGet" => opt_json(r.tx_get(a.text(0)?, &a.json_text(1)?)?),
        "txAdd" => {
            r.tx_add(a.text(0)?, &a.json_text(1)?)?;
            Output::Undefined
        }
        "txEdit" => {
            r.tx_edit(a.text(0)?, &a.json_text(1)?)?;
            Output::Undefined
        }
        "txRemove" => {
            r.tx_remove(a.text(0)?, &a.json_text(1)?)?;
            Output::Undefined
        }
        "commitMutation" => Output::Json(r.commit_mutation()?),
        "rejectMutation" => {
            r.reject_mutation(a.opt_text(0)?, a.opt_text(1)?)?;
            Output::Undefined
        }
        "ack" => Output::Json(r.ack(&a.json_text(0)?)?),
        "ackedLmid" => Output::Number(r.acked_lmid(a.text(0)?) as f64),
        "appliedMid" => Output::Number(r.applied_mid(a.text(0)?) as f64),
        "durableLmid" => Output::Number(r.durable_lmid(a.text(0)?) as f64),
        "lmidSubscribe" => {
            Output::Json(r.lmid_subscribe(a.text(0)?, a.number(1)?, a.text(2)?, a.number(3)?)?)
        }
        "seedDurable" => Output::Json(r.seed_durable(&a.json_text(0)?)?),
        "pendingLen" => Output::Number(r.pending_len() as f64),
        "dirtyLen" => Output::Number(r.dirty_len() as f64),
        "beginFlush" => opt_json(r.begin_flush()?),
        "flushOk" => Output::Json(r.flush_ok()?),
        "flushConflict" => Output::Json(r.flush_conflict(&a.json_text(0)?)?),
        "flushInFlight" => Output::Bool(r.flush_in_flight()),
        other => {
            return Err(Error::new(
                ErrorCode::InvalidArgument,
                format!("unknown method {other:?}"),
            ))
        }
    })
}

/// Runs one replay line `{"call": …, "args": […]}` and renders the reply line
/// `{"ok": …}` / `{"err": "…"}` (without a newline).
pub fn replay_line(room: &mut Option<JsonRoom>, line: &str) -> String {
    let result = (|| -> Result<Output, Error> {
        let v = JsValue::parse(line)
            .map_err(|e| Error::malformed(format!("replay line is not JSON: {e}")))?;
        let method = v
            .get("call")
            .and_then(JsValue::as_str)
            .ok_or_else(|| Error::malformed("replay line needs a string `call`"))?;
        let empty = Vec::new();
        let args = match v.get("args") {
            None | Some(JsValue::Null) => &empty,
            Some(JsValue::Arr(a)) => a,
            Some(_) => return Err(Error::malformed("replay line `args` must be an array")),
        };
        call_js(room, method, args)
    })();
    let mut out = String::new();
    match result {
        Ok(o) => {
            out.push_str("{\"ok\":");
            out.push_str(&o.to_json_text());
            out.push('}');
        }
        Err(e) => {
            out.push_str("{\"err\":");
            write_str(&mut out, e.message());
            out.push('}');
        }
    }
    out
}

//! Call-by-name over the JSON contract: `{"call": "<method>", "args": [...]}`.
//!
//! The replay tool, the conformance runner and the fuzz target all drive a room through
//! this one table, so a scenario means the same thing everywhere. Arguments that the
//! `WasmRoom` method takes as JSON text are given as JSON values and serialized here;
//! `open` creates the room the later calls act on.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value as Json;

use crate::contract::{render_opt_f64, JsonRoom};
use crate::error::{Error, ErrorCode};
use crate::json::write::{write_f64, write_str};

/// What a contract method returned.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// JSON text (a method that returns a JSON string).
    Json(String),
    /// A number.
    Number(f64),
    /// A boolean.
    Bool(bool),
    /// `undefined` / `void`.
    Undefined,
}

impl Output {
    /// The output as JSON text: JSON results verbatim, numbers and booleans as
    /// `JSON.stringify` prints them, `undefined` as `null`.
    pub fn to_json_text(&self) -> String {
        match self {
            Output::Json(s) => s.clone(),
            Output::Number(f) => {
                let mut s = String::new();
                write_f64(&mut s, *f);
                s
            }
            Output::Bool(b) => String::from(if *b { "true" } else { "false" }),
            Output::Undefined => String::from("null"),
        }
    }
}

/// Every method name [`call`] understands, in seed-000 spelling.
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
];

struct Args<'a> {
    method: &'a str,
    args: &'a [Json],
}

impl Args<'_> {
    fn bad(&self, i: usize, what: &str) -> Error {
        Error::new(
            ErrorCode::InvalidArgument,
            format!("{}: argument {} must be {what}", self.method, i + 1),
        )
    }

    fn text(&self, i: usize) -> Result<String, Error> {
        match self.args.get(i) {
            Some(Json::String(s)) => Ok(s.clone()),
            _ => Err(self.bad(i, "a string")),
        }
    }

    fn json_text(&self, i: usize) -> Result<String, Error> {
        match self.args.get(i) {
            Some(v) => serde_json::to_string(v)
                .map_err(|e| Error::malformed(format!("{}: argument {}: {e}", self.method, i + 1))),
            None => Err(self.bad(i, "a JSON value")),
        }
    }

    fn number(&self, i: usize) -> Result<f64, Error> {
        match self.args.get(i).and_then(Json::as_f64) {
            Some(f) => Ok(f),
            None => Err(self.bad(i, "a number")),
        }
    }
}

/// Runs one call. `room` is the room `open` created (or `None` before it).
pub fn call(room: &mut Option<JsonRoom>, method: &str, args: &[Json]) -> Result<Output, Error> {
    let a = Args { method, args };
    if method == "open" {
        let r = JsonRoom::open(&a.json_text(0)?, a.number(1)?)?;
        *room = Some(r);
        return Ok(Output::Undefined);
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
            Output::Json(r.subscribe(&a.text(0)?, a.number(1)?, &a.json_text(2)?, a.number(3)?)?)
        }
        "unsubscribe" => Output::Bool(r.unsubscribe(&a.text(0)?, a.number(1)?)?),
        "sweep" => Output::Number(r.sweep(a.number(0)?)? as f64),
        "commitAll" => Output::Json(r.commit_all()),
        "cv" => match r.cv() {
            Some(v) => Output::Number(v),
            None => Output::Undefined,
        },
        "headCv" => Output::Number(r.head_cv() as f64),
        "epoch" => Output::Number(r.epoch() as f64),
        "isLive" => Output::Bool(r.is_live()),
        "isPoisoned" => Output::Bool(r.is_poisoned()),
        "materializationCount" => Output::Number(r.materialization_count() as f64),
        "subscriberCount" => Output::Number(r.subscriber_count() as f64),
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
        let v: Json = serde_json::from_str(line)
            .map_err(|e| Error::malformed(format!("replay line is not JSON: {e}")))?;
        let method = v
            .get("call")
            .and_then(Json::as_str)
            .ok_or_else(|| Error::malformed("replay line needs a string `call`"))?;
        let empty = Vec::new();
        let args = match v.get("args") {
            None | Some(Json::Null) => &empty,
            Some(Json::Array(a)) => a,
            Some(_) => return Err(Error::malformed("replay line `args` must be an array")),
        };
        call(room, method, args)
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

/// `cv()` rendered like the other scalar outputs (kept for hosts that print it).
pub fn render_cv(room: &JsonRoom) -> String {
    render_opt_f64(room.cv())
}

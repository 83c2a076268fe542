//! Flattens the conformance scenarios (`tests/conformance/*.json`) into a form a C
//! program reads without a JSON parser: the input of `tests/c/conformance.c`.
//!
//! ```text
//! cargo run -p rindle-room-c --example flatten_conformance -- tests/conformance out.flat
//! ```
//!
//! Every argument is rendered here exactly as the Rust runner
//! (`rindle_room_core::calls`) passes it: a JSON-text argument through
//! [`calls::as_text`] (compact `JSON.stringify`, or the raw `$text`), a string as its
//! bytes, a number as the bits of its double. The C program only transports bytes, so
//! it compares the room's output with the scenario's byte for byte.
//!
//! The format is a sequence of records `<tag> <length>:<bytes>\n`:
//!
//! ```text
//! flat 1:1                      format version
//! scenario <n>:<name>           a scenario starts: no room
//! step <n>:<method>             a step starts; its arguments follow, one per parameter
//! s <n>:<bytes>                 a string argument
//! j <n>:<bytes>                 a JSON-text argument
//! n 16:<hex>                    a number argument: the 64 bits of the double, in hex
//! u 0:                          an absent argument (JavaScript `undefined`)
//! ok <n>:<bytes>                the step must succeed with exactly this output text
//! err <n>:<bytes>               the step must fail with a message containing this (repeats)
//! end 0:                        the step ends
//! ```
//!
//! A step the C ABI cannot express (an argument of the wrong JavaScript type for its
//! parameter) is an error here, so the C replay never silently skips a step.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rindle_room_core::calls::{self, METHODS};
use rindle_room_core::json::tree::JsValue;

/// The kind of one parameter of a contract method, as the C ABI takes it.
#[derive(Clone, Copy, PartialEq)]
enum Param {
    /// `const char *` + length: a string.
    Str,
    /// `double`.
    Num,
    /// `const char *` + length: JSON text.
    Json,
    /// A string or NULL (`undefined`; JSON `null` too, as the call table reads it).
    OptStr,
    /// JSON text or NULL (`undefined`; JSON `null` is the text `null`).
    OptJson,
    /// `const double *` or NULL.
    OptNum,
}

/// The parameters of each method, in the order of the C function (and of `WasmRoom`).
fn params(method: &str) -> Option<&'static [Param]> {
    use Param::*;
    Some(match method {
        "open" => &[Json, Num],
        "apply" | "enableWrites" | "ack" | "seedDurable" | "flushConflict" => &[Json],
        "mintRoomToken" | "scopeSpecsHash" => &[Json],
        "subscribe" => &[Str, Num, Json, Num],
        "unsubscribe" => &[Str, Num],
        "sweep" => &[Num],
        "commitAll"
        | "cv"
        | "headCv"
        | "epoch"
        | "isLive"
        | "isPoisoned"
        | "materializationCount"
        | "subscriberCount"
        | "commitMutation"
        | "pendingLen"
        | "dirtyLen"
        | "beginFlush"
        | "flushInFlight" => &[],
        "enableWritesV2" => &[Json, OptJson],
        "beginMutation" => &[Str, Num, OptStr, OptJson],
        "txGet" | "txAdd" | "txEdit" | "txRemove" => &[Str, Json],
        "rejectMutation" => &[OptStr, OptStr],
        "ackedLmid" | "appliedMid" | "durableLmid" => &[Str],
        "lmidSubscribe" => &[Str, Num, Str, Num],
        "flushOk" => &[OptNum],
        "verifyRoomToken" => &[Str, Json],
        _ => return None,
    })
}

fn record(out: &mut String, tag: &str, bytes: &str) {
    let _ = write!(out, "{tag} {}:", bytes.len());
    out.push_str(bytes);
    out.push('\n');
}

fn number(out: &mut String, f: f64) {
    record(out, "n", &format!("{:016x}", f.to_bits()));
}

/// Renders one argument for its parameter, or says why C cannot express it.
fn argument(out: &mut String, param: Param, arg: Option<&JsValue>) -> Result<(), String> {
    match (param, arg) {
        (Param::Str | Param::OptStr, Some(JsValue::Str(s))) => record(out, "s", s),
        (Param::OptStr | Param::OptNum, None | Some(JsValue::Null)) => record(out, "u", ""),
        (Param::OptJson, None) => record(out, "u", ""),
        (Param::Num | Param::OptNum, Some(JsValue::Num(f))) => number(out, *f),
        (Param::Json | Param::OptJson, Some(v)) => record(out, "j", &calls::as_text(v)),
        (_, other) => {
            return Err(format!(
                "an argument the C ABI cannot pass for this parameter: {}",
                other.map_or_else(|| String::from("(missing)"), JsValue::to_js_string)
            ))
        }
    }
    Ok(())
}

fn step(out: &mut String, step: &JsValue) -> Result<(), String> {
    let method = step
        .get("call")
        .and_then(JsValue::as_str)
        .ok_or("a step needs a string `call`")?;
    if !METHODS.contains(&method) {
        return Err(format!("unknown method {method:?}"));
    }
    let params = params(method).ok_or_else(|| format!("no C parameters for {method:?}"))?;
    let args = match step.get("args") {
        Some(JsValue::Arr(a)) => a.as_slice(),
        _ => return Err(String::from("a step needs an array `args`")),
    };
    if args.len() > params.len() {
        return Err(format!("{method} takes {} arguments", params.len()));
    }
    record(out, "step", method);
    for (i, param) in params.iter().enumerate() {
        argument(out, *param, args.get(i)).map_err(|e| format!("{method} argument {i}: {e}"))?;
    }
    match (step.get("expect"), step.get("error")) {
        (Some(JsValue::Str(text)), None) => record(out, "ok", text),
        (None, Some(JsValue::Str(sub))) => record(out, "err", sub),
        (None, Some(JsValue::Arr(subs))) if !subs.is_empty() => {
            for sub in subs {
                record(out, "err", sub.as_str().ok_or("`error` items are strings")?);
            }
        }
        _ => {
            return Err(String::from(
                "a step needs exactly one of `expect` and `error`",
            ))
        }
    }
    record(out, "end", "");
    Ok(())
}

fn scenario(out: &mut String, path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    let v = JsValue::parse(&text).map_err(|e| format!("not JSON: {e}"))?;
    let name = v
        .get("name")
        .and_then(JsValue::as_str)
        .ok_or("a scenario needs a string `name`")?;
    let steps = match v.get("steps") {
        Some(JsValue::Arr(s)) => s,
        _ => return Err(String::from("a scenario needs an array `steps`")),
    };
    record(out, "scenario", name);
    for (i, s) in steps.iter().enumerate() {
        step(out, s).map_err(|e| format!("step {i}: {e}"))?;
    }
    Ok(())
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let (Some(dir), Some(target)) = (argv.next(), argv.next()) else {
        eprintln!("usage: flatten_conformance <scenario dir> <output file>");
        std::process::exit(2);
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {dir}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = String::new();
    record(&mut out, "flat", "1");
    for path in &files {
        if let Err(e) = scenario(&mut out, path) {
            eprintln!("{}: {e}", path.display());
            std::process::exit(1);
        }
    }
    std::fs::write(&target, out).unwrap_or_else(|e| panic!("cannot write {target}: {e}"));
    println!("{} scenarios flattened into {target}", files.len());
}

//! The boundary every exported function goes through: argument checks that throw
//! `TypeError`s, the panic guard, return values, and the mapping of the core's errors to
//! JS `Error`s.
//!
//! Arguments arrive as [`Arg`], unconverted, so that a value of the wrong type is
//! refused with a `TypeError` that names the method and the parameter. Every error this
//! face throws is built by [`Cx::throw`]:
//!
//! | thrown | `code` | message |
//! |---|---|---|
//! | a core [`Error`] | [`ErrorCode::name`] (`"MUTATION_GAP"`, …) | the core's, verbatim |
//! | a refused token | `"TOKEN_REFUSED"`, plus `reason` | `lease token refused: <reason>` |
//! | `TypeError` (wrong argument type) | `"ERR_INVALID_ARG_TYPE"` | `<method>: \`<param>\` must be …` |
//! | `TypeError` (`new WasmRoom()`) | `"ERR_ILLEGAL_CONSTRUCTOR"` | `WasmRoom has no public constructor …` |
//! | a call on a freed room | `"ROOM_FREED"` | `<method>: the room was freed …` |
//! | a panic (a bug) | `"PANIC"` | `<method>: the room panicked …` |
//! | a failed Node-API call | `"NODE_API"` | `<method>: a Node-API call failed …` |
//!
//! The error is thrown into JavaScript right away; the Rust side then carries
//! `Status::PendingException`, which both napi-rs and `class.rs` pass through without
//! throwing again.
//!
//! [`ErrorCode::name`]: rindle_room_core::ErrorCode::name

use core::panic::AssertUnwindSafe;
use core::ptr;
use std::panic::catch_unwind;

use napi::bindgen_prelude::FromNapiValue;
use napi::{sys, Env, Status};
use rindle_room_core::{Error, ErrorCode};

/// The `code` of a `TypeError` for an argument of the wrong type (Node's own code).
pub(crate) const CODE_ARG_TYPE: &str = "ERR_INVALID_ARG_TYPE";
/// The `code` of `new WasmRoom()` (rooms come from `WasmRoom.open`).
pub(crate) const CODE_CONSTRUCTOR: &str = "ERR_ILLEGAL_CONSTRUCTOR";
/// The `code` of a call on a room after `free()`.
pub(crate) const CODE_FREED: &str = "ROOM_FREED";
/// The `code` of a panic, and of every later call on a room that panicked.
pub(crate) const CODE_PANIC: &str = "PANIC";
/// The `code` of a Node-API call that failed (the environment is shutting down).
pub(crate) const CODE_NODE_API: &str = "NODE_API";
/// The prefix of every token refusal message (docs/protocol.md, lease tokens); `reason` is the rest.
const REFUSED_PREFIX: &str = "lease token refused: ";

/// One JavaScript argument, not converted yet. A missing argument is `undefined`.
#[derive(Clone, Copy, Debug)]
pub struct Arg {
    env: sys::napi_env,
    value: sys::napi_value,
}

impl Arg {
    /// The argument `value` of a call in `env`.
    pub(crate) fn new(env: sys::napi_env, value: sys::napi_value) -> Arg {
        Arg { env, value }
    }
}

impl FromNapiValue for Arg {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> napi::Result<Arg> {
        Ok(Arg { env, value })
    }
}

/// What went wrong in one call, before it becomes a JS exception.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The core refused: its code and message go to JavaScript unchanged.
    Room(Error),
    /// An argument (or `this`) has the wrong JavaScript type: a `TypeError`.
    ArgType(String),
    /// `new WasmRoom()`: a `TypeError`.
    Constructor,
    /// The room was freed.
    Freed,
    /// The call panicked (the message says where and why).
    Panic(String),
    /// An earlier call on this room panicked.
    Retired,
    /// A Node-API call failed.
    NodeApi(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Room(e)
    }
}

impl Failure {
    /// The `code` property of the thrown error.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Failure::Room(e) => e.code().name(),
            Failure::ArgType(_) => CODE_ARG_TYPE,
            Failure::Constructor => CODE_CONSTRUCTOR,
            Failure::Freed => CODE_FREED,
            Failure::Panic(_) | Failure::Retired => CODE_PANIC,
            Failure::NodeApi(_) => CODE_NODE_API,
        }
    }

    /// Whether JavaScript gets a `TypeError` (else an `Error`).
    fn is_type_error(&self) -> bool {
        matches!(self, Failure::ArgType(_) | Failure::Constructor)
    }

    /// The message of the thrown error. The core's messages are kept verbatim: hosts
    /// match on them (`mutation gap for …`, `lease token refused: …`).
    pub(crate) fn message(&self, what: &str) -> String {
        match self {
            Failure::Room(e) => String::from(e.message()),
            Failure::ArgType(m) | Failure::Panic(m) | Failure::NodeApi(m) => format!("{what}: {m}"),
            Failure::Constructor => String::from(
                "WasmRoom has no public constructor: use WasmRoom.open(hello_json, idle_ttl_ms)",
            ),
            Failure::Freed => {
                format!("{what}: the room was freed (free() or [Symbol.dispose]); open a new room")
            }
            Failure::Retired => format!(
                "{what}: an earlier call on this room panicked; free it and open a new room"
            ),
        }
    }

    /// The `reason` property: set on token refusals only.
    pub(crate) fn reason(&self) -> Option<&str> {
        match self {
            Failure::Room(e) if e.code() == ErrorCode::TokenRefused => {
                e.message().strip_prefix(REFUSED_PREFIX)
            }
            _ => None,
        }
    }
}

/// The failure of a caught panic.
pub(crate) fn panic_failure(payload: Box<dyn core::any::Any + Send>) -> Failure {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-text panic payload");
    let failure = Failure::Panic(format!("the room panicked (a bug in the room): {what}"));
    // Dropping the payload runs foreign code; a second panic must not unwind into
    // JavaScript.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
    failure
}

/// Runs `body`, turning a panic into [`Failure::Panic`].
pub(crate) fn guard<T>(body: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => Err(panic_failure(payload)),
    }
}

/// One call in progress: the environment and the name used in messages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cx {
    env: sys::napi_env,
    what: &'static str,
}

impl Cx {
    /// A call of `what` (`"mintRoomToken"`) through napi-rs.
    pub(crate) fn new(env: &Env, what: &'static str) -> Cx {
        Cx::raw(env.raw(), what)
    }

    /// A call of `what` (`"WasmRoom.apply"`) in `env`.
    pub(crate) fn raw(env: sys::napi_env, what: &'static str) -> Cx {
        Cx { env, what }
    }

    /// The environment of the call.
    pub(crate) fn env(&self) -> sys::napi_env {
        self.env
    }

    /// Throws `failure` into JavaScript; returns the error napi-rs passes through.
    pub(crate) fn throw(&self, failure: &Failure) -> napi::Error {
        let message = failure.message(self.what);
        let thrown = throw_error(
            self.env,
            failure.is_type_error(),
            failure.code(),
            &message,
            failure.reason(),
        );
        match thrown {
            Ok(()) => napi::Error::new(Status::PendingException, message),
            // The environment could not build the error (it is tearing down): hand
            // napi-rs the message so it can try.
            Err(_) => napi::Error::new(Status::GenericFailure, message),
        }
    }

    /// Throws a napi-rs error that has not reached JavaScript yet (a pending one is left
    /// as it is).
    pub(crate) fn throw_napi(&self, e: &napi::Error) {
        if e.status != Status::PendingException {
            self.throw(&Failure::NodeApi(format!(
                "a Node-API call failed ({}): {}",
                e.status, e.reason
            )));
        }
    }

    /// Settles a guarded result: `Ok` passes, a failure is thrown.
    pub(crate) fn settle<T>(&self, result: Result<T, Failure>) -> napi::Result<T> {
        result.map_err(|f| self.throw(&f))
    }

    fn arg_type(&self, param: &str, expected: &str, arg: Arg) -> napi::Error {
        let got = type_name(arg);
        self.throw(&Failure::ArgType(format!(
            "`{param}` must be {expected}, got {got}"
        )))
    }

    /// A required string.
    pub(crate) fn text(&self, arg: Arg, param: &str) -> napi::Result<Text> {
        match read_string(arg)? {
            Some(s) => Ok(s),
            None => Err(self.arg_type(param, "a string", arg)),
        }
    }

    /// A string, or `undefined` / `null` (`None`).
    pub(crate) fn opt_text(&self, arg: Arg, param: &str) -> napi::Result<Option<Text>> {
        if is_nullish(arg)? {
            return Ok(None);
        }
        match read_string(arg)? {
            Some(s) => Ok(Some(s)),
            None => Err(self.arg_type(param, "a string, null or undefined", arg)),
        }
    }

    /// A required number (any JS number: the core checks its range).
    pub(crate) fn number(&self, arg: Arg, param: &str) -> napi::Result<f64> {
        match read_number(arg)? {
            Some(n) => Ok(n),
            None => Err(self.arg_type(param, "a number", arg)),
        }
    }
}

/// A Rust result as a JavaScript value: text as a string, numbers, booleans, `()` and
/// `None` as `undefined`.
pub(crate) trait IntoJs {
    /// Creates the value in `env`.
    fn into_js(self, env: sys::napi_env) -> napi::Result<sys::napi_value>;
}

impl IntoJs for String {
    fn into_js(self, env: sys::napi_env) -> napi::Result<sys::napi_value> {
        js_string(env, &self)
    }
}

impl IntoJs for f64 {
    fn into_js(self, env: sys::napi_env) -> napi::Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: `env` is the live env of the current call; `out` is a valid out-pointer.
        check(unsafe { sys::napi_create_double(env, self, &mut out) })?;
        Ok(out)
    }
}

impl IntoJs for bool {
    fn into_js(self, env: sys::napi_env) -> napi::Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: as for `f64`.
        check(unsafe { sys::napi_get_boolean(env, self, &mut out) })?;
        Ok(out)
    }
}

impl IntoJs for () {
    fn into_js(self, env: sys::napi_env) -> napi::Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: as for `f64`.
        check(unsafe { sys::napi_get_undefined(env, &mut out) })?;
        Ok(out)
    }
}

impl<T: IntoJs> IntoJs for Option<T> {
    fn into_js(self, env: sys::napi_env) -> napi::Result<sys::napi_value> {
        match self {
            Some(v) => v.into_js(env),
            None => ().into_js(env),
        }
    }
}

pub(crate) fn check(status: sys::napi_status) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(
            Status::from(status),
            String::from("a Node-API call failed"),
        ))
    }
}

fn type_of(arg: Arg) -> napi::Result<sys::napi_valuetype> {
    let mut t = 0;
    // SAFETY: `arg` holds the env and value of the current call; `t` is a valid
    // out-pointer.
    check(unsafe { sys::napi_typeof(arg.env, arg.value, &mut t) })?;
    Ok(t)
}

fn is_nullish(arg: Arg) -> napi::Result<bool> {
    let t = type_of(arg)?;
    Ok(t == sys::ValueType::napi_undefined || t == sys::ValueType::napi_null)
}

/// `typeof`, as a word for messages (`null` and arrays named as such).
fn type_name(arg: Arg) -> &'static str {
    let Ok(t) = type_of(arg) else {
        return "an unreadable value";
    };
    match t {
        sys::ValueType::napi_undefined => "undefined",
        sys::ValueType::napi_null => "null",
        sys::ValueType::napi_boolean => "boolean",
        sys::ValueType::napi_number => "number",
        sys::ValueType::napi_string => "string",
        sys::ValueType::napi_symbol => "symbol",
        sys::ValueType::napi_function => "function",
        sys::ValueType::napi_object => {
            let mut is_array = false;
            // SAFETY: as in `type_of`; `is_array` is a valid out-pointer.
            let status = unsafe { sys::napi_is_array(arg.env, arg.value, &mut is_array) };
            if status == sys::Status::napi_ok && is_array {
                "array"
            } else {
                "object"
            }
        }
        _ => "bigint",
    }
}

/// Texts up to this many UTF-8 bytes (most frames) are read in one Node-API call.
const SHORT_TEXT: usize = 1024;
/// A buffer that grew past this is not kept for the next call.
const POOLED_MAX: usize = 64 * 1024;

std::thread_local! {
    /// Spare argument buffers of this thread (each env runs on one thread).
    static POOL: core::cell::RefCell<Vec<Vec<u8>>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// A string argument's UTF-8 text, in a buffer reused from call to call: reading an
/// argument neither allocates nor zeroes memory once the thread has served a call.
pub(crate) struct Text {
    buf: Vec<u8>,
}

impl Text {
    fn take() -> Text {
        let buf = POOL
            .try_with(|p| p.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_else(|| Vec::with_capacity(SHORT_TEXT));
        Text { buf }
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        // SAFETY: `read_string`, the only maker of a `Text` with content, checked the
        // bytes as UTF-8 (or replaced them with a lossy copy); they are not changed after.
        unsafe { core::str::from_utf8_unchecked(&self.buf) }
    }
}

impl core::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl Drop for Text {
    fn drop(&mut self) {
        if self.buf.capacity() <= POOLED_MAX {
            let mut buf = core::mem::take(&mut self.buf);
            buf.clear();
            let _ = POOL.try_with(|p| p.borrow_mut().push(buf));
        }
    }
}

/// The string's UTF-8 text, or `None` when the value is not a string.
fn read_string(arg: Arg) -> napi::Result<Option<Text>> {
    let mut text = Text::take();
    let buf = &mut text.buf;
    // One call into the spare capacity first. Node writes whole characters only, so a
    // text that ends at least 4 bytes before the end of the buffer was not cut short.
    buf.clear();
    buf.reserve(SHORT_TEXT);
    let cap = buf.capacity();
    let mut written = 0usize;
    // SAFETY: `buf` has `cap` writable bytes; Node writes at most that many (text plus
    // NUL) and reports how many text bytes it wrote.
    let status = unsafe {
        sys::napi_get_value_string_utf8(
            arg.env,
            arg.value,
            buf.as_mut_ptr().cast(),
            cap,
            &mut written,
        )
    };
    if status == sys::Status::napi_string_expected {
        return Ok(None);
    }
    check(status)?;
    if written + 4 < cap {
        // SAFETY: Node initialized the first `written < cap` bytes.
        unsafe { buf.set_len(written) };
    } else {
        read_long_string(arg, buf)?;
    }
    // Node writes lone surrogates as U+FFFD, so this is UTF-8; stay safe regardless.
    if core::str::from_utf8(buf).is_err() {
        *buf = String::from_utf8_lossy(buf).into_owned().into_bytes();
    }
    Ok(Some(text))
}

/// A string too long for the first read: its length first, then its bytes.
fn read_long_string(arg: Arg, buf: &mut Vec<u8>) -> napi::Result<()> {
    let mut len = 0usize;
    // SAFETY: a NULL buffer asks for the length only; `len` is a valid out-pointer.
    check(unsafe {
        sys::napi_get_value_string_utf8(arg.env, arg.value, ptr::null_mut(), 0, &mut len)
    })?;
    buf.clear();
    buf.reserve(len + 1);
    let mut written = 0usize;
    // SAFETY: `buf` has room for `len + 1` bytes (the text and Node's NUL); Node writes
    // at most that many and reports how many text bytes it wrote.
    check(unsafe {
        sys::napi_get_value_string_utf8(
            arg.env,
            arg.value,
            buf.as_mut_ptr().cast(),
            len + 1,
            &mut written,
        )
    })?;
    // SAFETY: Node initialized `written <= len` bytes of `buf` (its contract).
    unsafe { buf.set_len(written.min(len)) };
    Ok(())
}

/// The number, or `None` when the value is not a number.
fn read_number(arg: Arg) -> napi::Result<Option<f64>> {
    let mut n = 0.0f64;
    // SAFETY: `arg` holds the env and value of the current call; `n` is a valid
    // out-pointer.
    let status = unsafe { sys::napi_get_value_double(arg.env, arg.value, &mut n) };
    if status == sys::Status::napi_number_expected {
        return Ok(None);
    }
    check(status)?;
    Ok(Some(n))
}

/// A JavaScript string with `text`. ASCII (all of the room's JSON unless a value holds
/// non-ASCII text) goes through the Latin-1 entry, which copies without decoding.
pub(crate) fn js_string(env: sys::napi_env, text: &str) -> napi::Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    let len = text.len() as isize;
    // SAFETY: `text` is valid for `len` bytes; ASCII is valid Latin-1 with the same
    // bytes, and anything else goes through the UTF-8 entry. `out` is a valid
    // out-pointer.
    check(unsafe {
        if text.is_ascii() {
            sys::napi_create_string_latin1(env, text.as_ptr().cast(), len, &mut out)
        } else {
            sys::napi_create_string_utf8(env, text.as_ptr().cast(), len, &mut out)
        }
    })?;
    Ok(out)
}

/// Builds an `Error` (or `TypeError`) with `code` (and `reason`) and throws it.
fn throw_error(
    env: sys::napi_env,
    type_error: bool,
    code: &str,
    message: &str,
    reason: Option<&str>,
) -> napi::Result<()> {
    let code = js_string(env, code)?;
    let msg = js_string(env, message)?;
    let mut error = ptr::null_mut();
    // SAFETY: `code` and `msg` are strings of this env; `error` is a valid out-pointer.
    // Node sets the `code` property from the second argument.
    check(unsafe {
        if type_error {
            sys::napi_create_type_error(env, code, msg, &mut error)
        } else {
            sys::napi_create_error(env, code, msg, &mut error)
        }
    })?;
    if let Some(reason) = reason {
        let reason = js_string(env, reason)?;
        // SAFETY: `error` is an object of this env; the name is NUL-terminated.
        check(unsafe { sys::napi_set_named_property(env, error, c"reason".as_ptr(), reason) })?;
    }
    // SAFETY: `error` is a value of this env.
    check(unsafe { sys::napi_throw(env, error) })
}

#[cfg(test)]
mod tests;

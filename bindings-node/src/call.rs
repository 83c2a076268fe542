//! One method of the `WasmRoom` class ([`Method`], made with [`method!`]) and one call of
//! it ([`Call`]: the context, the arguments and the room). The method tables are in
//! `room.rs` and `write.rs`; `class.rs` installs them.

use core::ffi::CStr;

use napi::sys;
use rindle_room_core::contract::JsonRoom;

use crate::boundary::{Arg, Cx, IntoJs, Text};
use crate::node_room::NodeRoom;

/// The most arguments any method takes (`subscribe`, `beginMutation`, …).
pub(crate) const MAX_ARGS: usize = 4;

/// One instance method of the class.
#[derive(Debug)]
pub(crate) struct Method {
    /// The JavaScript name (`c"commitAll"`).
    pub(crate) name: &'static CStr,
    /// The name in messages (`"WasmRoom.commitAll"`).
    pub(crate) what: &'static str,
    /// Converts the arguments, runs the room, returns the JavaScript result.
    pub(crate) body: fn(&mut Call<'_>) -> napi::Result<sys::napi_value>,
}

/// A [`Method`] named `$name` (a string literal) with body `$body`.
macro_rules! method {
    ($name:literal, $body:path) => {
        $crate::call::Method {
            name: match core::ffi::CStr::from_bytes_with_nul(concat!($name, "\0").as_bytes()) {
                Ok(name) => name,
                Err(_) => panic!("method names contain no NUL"),
            },
            what: concat!("WasmRoom.", $name),
            body: $body,
        }
    };
}
pub(crate) use method;

/// One method call: its context, arguments and room.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    pub(crate) cx: Cx,
    pub(crate) args: [sys::napi_value; MAX_ARGS],
    pub(crate) room: &'a mut NodeRoom,
}

impl Call<'_> {
    fn arg(&self, i: usize) -> Arg {
        Arg::new(self.cx.env(), self.args[i])
    }

    /// Argument `i`, a required string.
    pub(crate) fn text(&self, i: usize, param: &str) -> napi::Result<Text> {
        self.cx.text(self.arg(i), param)
    }

    /// Argument `i`, a string or `undefined` / `null`.
    pub(crate) fn opt_text(&self, i: usize, param: &str) -> napi::Result<Option<Text>> {
        self.cx.opt_text(self.arg(i), param)
    }

    /// Argument `i`, a required number.
    pub(crate) fn number(&self, i: usize, param: &str) -> napi::Result<f64> {
        self.cx.number(self.arg(i), param)
    }

    /// Runs `body` on the room (see [`NodeRoom::run`]) and returns its result to
    /// JavaScript.
    pub(crate) fn run<T: IntoJs>(
        &mut self,
        body: impl FnOnce(&mut JsonRoom) -> Result<T, rindle_room_core::Error>,
    ) -> napi::Result<sys::napi_value> {
        self.room.run(&self.cx, body)?.into_js(self.cx.env())
    }

    /// The room itself (for `free`).
    pub(crate) fn room(&mut self) -> &mut NodeRoom {
        self.room
    }

    /// `undefined`.
    pub(crate) fn undefined(&self) -> napi::Result<sys::napi_value> {
        ().into_js(self.cx.env())
    }
}

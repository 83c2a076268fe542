//! # rindle-room-node
//!
//! The Node face of the Rindle room: a Node-API addon (`rindle_room.node`) whose
//! `WasmRoom` class is a drop-in for the wasm `WasmRoom` of `@rindle/room` 0.9,
//! method for method, name for name, JSON for JSON. Every method converts its
//! arguments and calls the [`JsonRoom`] method of the same name, so the JSON is the
//! core's, byte for byte: this crate decides no rule.
//!
//! The npm package in this directory (`@rindle/room-native`) wraps the addon:
//! `index.js` (CommonJS) and `index.mjs` (ESM) export `WasmRoom` (also as
//! `NativeRoom`), `initRoomWasm` (an async no-op), the Promise-returning token helpers
//! `mintRoomToken` / `verifyRoomToken`, `scopeSpecsHash` and `RoomTokenError`, with
//! the typings in `index.d.ts`. The addon itself exports:
//!
//! - the `WasmRoom` class: defined with Node-API directly in `class.rs` (napi-rs's
//!   `#[napi]` classes pay a process-wide borrow table on every call, a quarter of a W1
//!   change seen from JavaScript); each object holds a [`NodeRoom`];
//! - `mintRoomTokenJson(opts_json)`, `verifyRoomTokenJson(token, opts_json)` and
//!   `scopeSpecsHashJson(specs_json)`: the core's token functions, JSON text in and
//!   out, which `index.js` wraps with the published signatures.
//!
//! Errors: see `boundary.rs`. In short, every core error becomes a JS `Error` whose
//! `code` is [`ErrorCode::name`] and whose message is the core's; arguments of the
//! wrong type throw `TypeError`; a panic is caught and retires the room.
//!
//! ```js
//! const { WasmRoom } = require("@rindle/room-native");
//! const room = WasmRoom.open(JSON.stringify(hello), 30_000);
//! room.apply(JSON.stringify(snapshot));
//! room.subscribe("c1:1", 1, JSON.stringify(ast), Date.now());
//! room.apply(JSON.stringify(live));
//! const frames = JSON.parse(room.commitAll());
//! ```
//!
//! [`JsonRoom`]: rindle_room_core::contract::JsonRoom
//! [`ErrorCode::name`]: rindle_room_core::ErrorCode::name

#![deny(missing_docs)]

mod boundary;
mod call;
mod class;
#[cfg(debug_assertions)]
mod debug_hooks;
mod host;
mod http_calls;
mod journal;
mod node_room;
mod room;
mod sockets;
mod tx;
mod write;

use napi::bindgen_prelude::Object;
use napi::{Env, JsValue};
use napi_derive::napi;
use rindle_room_core::contract;

pub use boundary::Arg;
pub use node_room::NodeRoom;

use boundary::{guard, Cx};

/// The addon's allocations (rows, indexes, views) come from mimalloc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Module initialization: defines the `WasmRoom` class on the exports (the functions
/// below are registered by napi-rs itself).
#[napi(module_exports)]
pub fn init(exports: Object<'_>, env: Env) -> napi::Result<()> {
    class::define(env.raw(), exports.raw())
}

/// The methods of debug builds only (`debug_hooks.rs`).
fn debug_methods() -> &'static [call::Method] {
    #[cfg(debug_assertions)]
    return debug_hooks::METHODS;
    #[cfg(not(debug_assertions))]
    return &[];
}

/// `mintRoomToken` with its options as JSON text (`{doc, ast, sub, kid, key, ttlMs,
/// now, scopesHash?}`; `now` required): returns the `rt1.…` token.
#[napi(js_name = "mintRoomTokenJson")]
pub fn mint_room_token_json(env: &Env, opts_json: Arg) -> napi::Result<String> {
    let cx = Cx::new(env, "mintRoomToken");
    let opts = cx.text(opts_json, "opts_json")?;
    cx.settle(guard(|| Ok(contract::mint_room_token(&opts)?)))
}

/// `verifyRoomToken` with its options as JSON text (`{doc, keys, now}`): returns the
/// payload as JSON text. A refusal throws `code` `"TOKEN_REFUSED"` with `reason`.
#[napi(js_name = "verifyRoomTokenJson")]
pub fn verify_room_token_json(env: &Env, token: Arg, opts_json: Arg) -> napi::Result<String> {
    let cx = Cx::new(env, "verifyRoomToken");
    let token = cx.text(token, "token")?;
    let opts = cx.text(opts_json, "opts_json")?;
    cx.settle(guard(|| Ok(contract::verify_room_token(&token, &opts)?)))
}

/// `scopeSpecsHash` over the specs' JSON text: 8 lowercase hex characters.
#[napi(js_name = "scopeSpecsHashJson")]
pub fn scope_specs_hash_json(env: &Env, specs_json: Arg) -> napi::Result<String> {
    let cx = Cx::new(env, "scopeSpecsHash");
    let specs = cx.text(specs_json, "specs_json")?;
    cx.settle(guard(|| Ok(contract::scope_specs_hash(&specs)?)))
}

/// The fleet's rendezvous score of `box` for `doc` (docs/fleet.md, "Placement across
/// boxes"), as a decimal string (a u64 does not fit a JS number): what the reference
/// `locateRoom` ranks boxes by.
#[napi(js_name = "rendezvousScore")]
pub fn rendezvous_score(env: &Env, doc: Arg, box_id: Arg) -> napi::Result<String> {
    let cx = Cx::new(env, "rendezvousScore");
    let doc = cx.text(doc, "doc")?;
    let box_id = cx.text(box_id, "box")?;
    cx.settle(guard(|| {
        Ok(rindle_room_core::fleet::rendezvous_score(&doc, &box_id).to_string())
    }))
}

/// The websocket path of `doc`'s room on a fleet box (`/rooms/<doc, percent-encoded>`).
#[napi(js_name = "fleetRoomPath")]
pub fn fleet_room_path(env: &Env, doc: Arg) -> napi::Result<String> {
    let cx = Cx::new(env, "fleetRoomPath");
    let doc = cx.text(doc, "doc")?;
    cx.settle(guard(|| Ok(rindle_room_core::fleet::room_path(&doc))))
}

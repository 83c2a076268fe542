//! The room a `WasmRoom` object holds: open, freed or retired after a panic, and the
//! guard every method runs the room behind.

use rindle_room_core::contract::JsonRoom;

use crate::boundary::{guard, Cx, Failure};

/// Where a room is in its life.
#[derive(Debug)]
pub(crate) enum State {
    Open(Box<JsonRoom>),
    /// `free()` ran.
    Freed,
    /// A call panicked: the room may be half-updated, so it serves nothing more.
    Retired,
}

/// One room behind a `WasmRoom` object: the upstream-fed base store, its downstream
/// serving state and, once `enableWrites` runs, the write plane.
///
/// ```js
/// const { WasmRoom } = require("@rindle/room-native");
/// const room = WasmRoom.open(JSON.stringify(hello), 30_000);
/// room.apply(JSON.stringify(snapshotBatch));            // {"applied":"snapshot",…}
/// const sub = JSON.parse(room.subscribe("c1:1", 1, JSON.stringify(ast), Date.now()));
/// room.apply(JSON.stringify(liveBatch));
/// for (const { sub, batch } of JSON.parse(room.commitAll())) { /* ship */ }
/// room.free();
/// ```
#[derive(Debug)]
pub struct NodeRoom {
    state: State,
}

impl NodeRoom {
    /// A handle on an open room.
    pub(crate) fn new(room: JsonRoom) -> NodeRoom {
        NodeRoom {
            state: State::Open(Box::new(room)),
        }
    }

    /// Runs `body` on the open room behind the panic guard; throws what fails. A panic
    /// retires the room: every later call throws `PANIC`.
    pub(crate) fn run<T>(
        &mut self,
        cx: &Cx,
        body: impl FnOnce(&mut JsonRoom) -> Result<T, rindle_room_core::Error>,
    ) -> napi::Result<T> {
        let room = match &mut self.state {
            State::Open(room) => room,
            State::Freed => return Err(cx.throw(&Failure::Freed)),
            State::Retired => return Err(cx.throw(&Failure::Retired)),
        };
        let result = guard(|| body(room).map_err(Failure::Room));
        if matches!(result, Err(Failure::Panic(_))) {
            self.drop_room(State::Retired);
        }
        cx.settle(result)
    }

    /// Drops the room (a panic in its `Drop` is swallowed) and moves to `next`.
    pub(crate) fn drop_room(&mut self, next: State) {
        let old = core::mem::replace(&mut self.state, next);
        let _ = guard(move || {
            drop(old);
            Ok(())
        });
    }
}

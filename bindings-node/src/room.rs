//! The room a `WasmRoom` object holds, and the class's lifecycle, upstream and serving
//! methods. The write plane is in `write.rs`; the class itself in `class.rs`.
//!
//! Each method body converts its arguments ([`Call::text`], [`Call::number`], …), then
//! runs the [`JsonRoom`] method of the same name through [`Call::run`] (the freed /
//! panicked checks and the panic guard). JSON text goes in and comes out unchanged.

use napi::sys;
use rindle_room_core::contract::JsonRoom;

use crate::boundary::{guard, Cx, Failure};
use crate::class::{method, Call, Method};

/// Where a room is in its life.
#[derive(Debug)]
enum State {
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
    fn drop_room(&mut self, next: State) {
        let old = core::mem::replace(&mut self.state, next);
        let _ = guard(move || {
            drop(old);
            Ok(())
        });
    }
}

/// The lifecycle, upstream and serving methods, in the published `WasmRoom`'s order.
pub(crate) static METHODS: &[Method] = &[
    method!("free", free),
    method!("apply", apply),
    method!("subscribe", subscribe),
    method!("unsubscribe", unsubscribe),
    method!("sweep", sweep),
    method!("commitAll", commit_all),
    method!("cv", cv),
    method!("headCv", head_cv),
    method!("epoch", epoch),
    method!("isLive", is_live),
    method!("isPoisoned", is_poisoned),
    method!("materializationCount", materialization_count),
    method!("subscriberCount", subscriber_count),
];

type Out = napi::Result<sys::napi_value>;

/// Releases the room now instead of at garbage collection. Later calls throw
/// `ROOM_FREED`; freeing twice is a no-op. Also installed as `[Symbol.dispose]`.
fn free(c: &mut Call<'_>) -> Out {
    c.room().drop_room(State::Freed);
    c.undefined()
}

/// `apply(batch_json)`: the apply status (JSON text). Drain with `commitAll` next.
fn apply(c: &mut Call<'_>) -> Out {
    let batch = c.text(0, "batch_json")?;
    let large = batch.len() >= LARGE_BATCH;
    let out = c.run(|r| r.apply(&batch));
    drop(batch);
    if large {
        return_apply_temporaries();
    }
    out
}

/// A batch text at least this long (a snapshot, typically) leaves temporaries its size.
const LARGE_BATCH: usize = 1 << 20;

/// Hands the pages of a large apply's temporaries (the batch text and its parsed ops,
/// freed by now) back to the OS. glibc raises its mmap threshold after freeing a large
/// mapped block, so the next snapshot's temporaries come from the heap and would stay
/// resident, about the snapshot text's size per room loaded. No-op elsewhere.
fn return_apply_temporaries() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only walks the allocator's own free lists; any pad is valid.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `subscribe(sub, epoch, ast_json, now_ms)`: `{queryKey, reused, hello, snapshot}`.
fn subscribe(c: &mut Call<'_>) -> Out {
    let sub = c.text(0, "sub")?;
    let epoch = c.number(1, "epoch")?;
    let ast = c.text(2, "ast_json")?;
    let now = c.number(3, "now_ms")?;
    c.run(|r| r.subscribe(&sub, epoch, &ast, now))
}

/// `unsubscribe(sub, now_ms)`: whether `sub` was attached.
fn unsubscribe(c: &mut Call<'_>) -> Out {
    let sub = c.text(0, "sub")?;
    let now = c.number(1, "now_ms")?;
    c.run(|r| r.unsubscribe(&sub, now))
}

/// `sweep(now_ms)`: how many idle queries were reclaimed.
fn sweep(c: &mut Call<'_>) -> Out {
    let now = c.number(0, "now_ms")?;
    c.run(|r| Ok(r.sweep(now)? as f64))
}

/// `commitAll()`: `[{sub, batch}, …]` as JSON text.
fn commit_all(c: &mut Call<'_>) -> Out {
    c.run(|r| Ok(r.commit_all()))
}

/// `cv()`: the last upstream commit version, `undefined` before the snapshot.
fn cv(c: &mut Call<'_>) -> Out {
    c.run(|r| Ok(r.cv()))
}

/// `headCv()`: the room's own commit order.
fn head_cv(c: &mut Call<'_>) -> Out {
    c.run(|r| Ok(r.head_cv() as f64))
}

/// `epoch()`: the upstream subscription epoch.
fn epoch(c: &mut Call<'_>) -> Out {
    c.run(|r| Ok(r.epoch() as f64))
}

/// `isLive()`.
fn is_live(c: &mut Call<'_>) -> Out {
    c.run(|r| Ok(r.is_live()))
}

/// `isPoisoned()`.
fn is_poisoned(c: &mut Call<'_>) -> Out {
    c.run(|r| Ok(r.is_poisoned()))
}

/// `materializationCount()`.
fn materialization_count(c: &mut Call<'_>) -> Out {
    c.run(|r| Ok(r.materialization_count() as f64))
}

/// `subscriberCount()`.
fn subscriber_count(c: &mut Call<'_>) -> Out {
    c.run(|r| Ok(r.subscriber_count() as f64))
}

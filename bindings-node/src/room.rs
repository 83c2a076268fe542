//! The `WasmRoom` class's lifecycle, upstream and serving methods. The room they run on
//! is in `node_room.rs`, the write plane in `write.rs`, the class itself in `class.rs`.
//!
//! Each method body converts its arguments ([`Call::text`], [`Call::number`], …), then
//! runs the [`JsonRoom`] method of the same name through [`Call::run`] (the freed /
//! panicked checks and the panic guard). JSON text goes in and comes out unchanged.

use napi::sys;

use crate::call::{method, Call, Method};
use crate::node_room::State;

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

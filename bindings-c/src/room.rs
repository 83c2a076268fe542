//! The room handle, its lifecycle, its last error, and the read path of the contract
//! (`open` … `subscriberCount`).

use core::cell::{Cell, RefCell};
use core::ffi::c_char;

use rindle_room_core::contract::JsonRoom;

use core::panic::AssertUnwindSafe;
use std::panic::catch_unwind;

use crate::boundary::{
    fail_thread, message_of, no_room, refuse_if_panicked, settle, str_arg, thread_message,
    with_thread, Guarded, Out, Outcome,
};
use crate::buf::rindle_room_buf;
use crate::result::rindle_room_result;

/// A room: one document's base rows, its live queries and its write plane, behind the
/// `WasmRoom` JSON contract. Opaque: made by `rindle_room_open()`, freed by
/// `rindle_room_free()`.
///
/// A handle is used from one thread at a time (it may move between threads); distinct
/// handles are independent and may be used from different threads at once.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct rindle_room {
    pub(crate) room: JsonRoom,
    /// The last failed call's message, NUL-terminated (empty before the first failure).
    pub(crate) last_error: RefCell<Vec<u8>>,
    /// Set when a call panicked: the room may be half-updated, so it is not used again.
    pub(crate) panicked: Cell<bool>,
}

impl Guarded for rindle_room {
    const REMEDY: &'static str =
        "an earlier call on this room panicked; free it and open a new room";
    fn last_error(&self) -> &RefCell<Vec<u8>> {
        &self.last_error
    }
    fn panicked(&self) -> &Cell<bool> {
        &self.panicked
    }
}

/// Runs a body on a room, catching panics; failures go to the handle's last error. A
/// panic marks the handle as panicked: every later call on it returns `Panic`.
///
/// # Safety
///
/// `room` is NULL or a handle from `rindle_room_open` not yet freed, used by no other
/// thread during the call.
pub(crate) unsafe fn with_room(
    function: &'static str,
    room: *mut rindle_room,
    body: impl FnOnce(&mut JsonRoom) -> Outcome,
) -> rindle_room_result {
    // SAFETY: the caller guarantees `room` is NULL or a live handle that no one else
    // uses during this call, so a unique reference is sound.
    let Some(handle) = (unsafe { room.as_mut() }) else {
        return fail_thread(function, &no_room());
    };
    if let Some(refused) = refuse_if_panicked(handle, function) {
        return refused;
    }
    let result = catch_unwind(AssertUnwindSafe(|| body(&mut handle.room)));
    settle(handle, function, result)
}

/// Like [`with_room`] for the read-only methods (`const rindle_room *`).
///
/// # Safety
///
/// As [`with_room`].
pub(crate) unsafe fn with_room_ref(
    function: &'static str,
    room: *const rindle_room,
    body: impl FnOnce(&JsonRoom) -> Outcome,
) -> rindle_room_result {
    // SAFETY: the caller guarantees `room` is NULL or a live handle that no one else
    // uses during this call.
    let Some(handle) = (unsafe { room.as_ref() }) else {
        return fail_thread(function, &no_room());
    };
    if let Some(refused) = refuse_if_panicked(handle, function) {
        return refused;
    }
    let result = catch_unwind(AssertUnwindSafe(|| body(&handle.room)));
    settle(handle, function, result)
}

/// `WasmRoom.open(helloJson, idleTtlMs)`: opens a room from the upstream
/// `nhello.hello` (JSON text). Queries idle for `idle_ttl_ms` are reclaimed by
/// `rindle_room_sweep()`.
///
/// On success `*out_room` is a new handle; free it with `rindle_room_free()`. On
/// failure `*out_room` is untouched and the message is in
/// `rindle_room_thread_last_error()` (`RINDLE_ROOM_RESULT_INVALID_HELLO`,
/// `RINDLE_ROOM_RESULT_FINGERPRINT_MISMATCH`, `RINDLE_ROOM_RESULT_MALFORMED_INPUT`,
/// `RINDLE_ROOM_RESULT_INVALID_ARGUMENT`, …).
///
/// # Safety
///
/// `hello_json` is NULL or readable for `hello_len` bytes; `out_room` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_open(
    hello_json: *const c_char,
    hello_len: usize,
    idle_ttl_ms: f64,
    out_room: *mut *mut rindle_room,
) -> rindle_room_result {
    with_thread("rindle_room_open", || {
        // SAFETY: the pointers follow the function's contract.
        let (hello, out) = unsafe {
            (
                str_arg("hello_json", hello_json, hello_len)?,
                Out::new("out_room", out_room)?,
            )
        };
        let room = JsonRoom::open(hello, idle_ttl_ms)?;
        out.set(Box::into_raw(Box::new(rindle_room {
            room,
            last_error: RefCell::new(Vec::new()),
            panicked: Cell::new(false),
        })));
        Ok(())
    })
}

/// Frees a room and everything it holds. NULL is a no-op. The handle (and any message
/// pointer borrowed from it) must not be used afterwards.
///
/// # Safety
///
/// `room` is NULL or a handle from `rindle_room_open()` not yet freed, and no other
/// thread is using it.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_free(room: *mut rindle_room) {
    if room.is_null() {
        return;
    }
    // A panic while dropping leaks what is left instead of unwinding into C.
    let _ = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| {
        // SAFETY: a live handle made by `Box::into_raw` in `rindle_room_open`, freed
        // once (the caller's contract).
        drop(unsafe { Box::from_raw(room) });
    }));
}

/// The message of the last call on `room` that did not return
/// `RINDLE_ROOM_RESULT_OK` (the room's own messages are exactly the contract's error
/// messages). An empty string before the first failure; successful calls leave it as it
/// is.
///
/// `*out_message` points to `*out_len` bytes of UTF-8 followed by a NUL, owned by the
/// room: valid until the next call on `room` or `rindle_room_free()`. Do not free it.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out_message` and `out_len` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_last_error(
    room: *const rindle_room,
    out_message: *mut *const c_char,
    out_len: *mut usize,
) -> rindle_room_result {
    with_thread("rindle_room_last_error", || {
        // SAFETY: the pointers follow the function's contract.
        let (handle, message, len) = unsafe {
            (
                room.as_ref(),
                Out::new("out_message", out_message)?,
                Out::new("out_len", out_len)?,
            )
        };
        let Some(handle) = handle else {
            return Err(crate::boundary::Failure::Boundary(
                rindle_room_result::NullArgument,
                String::from("no room (`room` is NULL)"),
            ));
        };
        let (ptr, n) = message_of(&handle.last_error);
        message.set(ptr);
        len.set(n);
        Ok(())
    })
}

/// The message of the last failed call on this thread that had no room to keep it:
/// `rindle_room_open()`, the token functions, the JSON helpers, and any method called
/// with a NULL `room` (whose message says `no room`). Empty before the first such
/// failure.
///
/// `*out_message` points to `*out_len` bytes of UTF-8 followed by a NUL, owned by the
/// thread: valid until the next failed call of that kind on this thread. Do not free it.
///
/// # Safety
///
/// `out_message` and `out_len` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_thread_last_error(
    out_message: *mut *const c_char,
    out_len: *mut usize,
) -> rindle_room_result {
    // Read the slot before `with_thread` could overwrite it with this call's own failure.
    let (ptr, n) = thread_message();
    with_thread("rindle_room_thread_last_error", || {
        // SAFETY: the pointers follow the function's contract.
        let (message, len) = unsafe {
            (
                Out::new("out_message", out_message)?,
                Out::new("out_len", out_len)?,
            )
        };
        message.set(ptr);
        len.set(n);
        Ok(())
    })
}

/// `WasmRoom.apply(batchJson)`: applies one upstream `nbatch.batch` (JSON text).
///
/// `*out_json` is `{"applied":"snapshot","rows":N}`, `{"applied":"live","ops":N}`,
/// `{"applied":"duplicate"}` or `{"applied":"staleEpoch","expected":E,"got":G}`. The
/// seq-0 snapshot makes the room live; a live batch changes the head: drain with
/// `rindle_room_commit_all()` next. A batch that contradicts the store returns
/// `RINDLE_ROOM_RESULT_POISONED`: open a new room from a new hello.
///
/// # Safety
///
/// `room` is NULL or a live handle; `batch_json` is NULL or readable for `batch_len`
/// bytes; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_apply(
    room: *mut rindle_room,
    batch_json: *const c_char,
    batch_len: usize,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_apply", room, |r| {
            let (batch, out) = (
                str_arg("batch_json", batch_json, batch_len)?,
                Out::new("out_json", out_json)?,
            );
            out.set(rindle_room_buf::from_string(r.apply(batch)?));
            Ok(())
        })
    }
}

/// `WasmRoom.subscribe(sub, epoch, astJson, nowMs)`: attaches subscriber `sub` (a
/// downstream key) to the query `ast_json`, replacing its previous subscription.
///
/// `*out_json` is `{"queryKey":…,"reused":…,"hello":…,"snapshot":…}`: send the hello,
/// then the seq-0 snapshot, to that subscriber at once.
///
/// # Safety
///
/// `room` is NULL or a live handle; each text is NULL or readable for its length;
/// `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_subscribe(
    room: *mut rindle_room,
    sub: *const c_char,
    sub_len: usize,
    epoch: f64,
    ast_json: *const c_char,
    ast_len: usize,
    now_ms: f64,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_subscribe", room, |r| {
            let (sub, ast, out) = (
                str_arg("sub", sub, sub_len)?,
                str_arg("ast_json", ast_json, ast_len)?,
                Out::new("out_json", out_json)?,
            );
            let subscribed = r.subscribe(sub, epoch, ast, now_ms)?;
            out.set(rindle_room_buf::from_string(subscribed));
            Ok(())
        })
    }
}

/// `WasmRoom.unsubscribe(sub, nowMs)`: detaches `sub`. `*out_attached` says whether it
/// was attached.
///
/// # Safety
///
/// `room` is NULL or a live handle; `sub` is NULL or readable for `sub_len` bytes;
/// `out_attached` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_unsubscribe(
    room: *mut rindle_room,
    sub: *const c_char,
    sub_len: usize,
    now_ms: f64,
    out_attached: *mut bool,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_unsubscribe", room, |r| {
            let (sub, out) = (
                str_arg("sub", sub, sub_len)?,
                Out::new("out_attached", out_attached)?,
            );
            out.set(r.unsubscribe(sub, now_ms)?);
            Ok(())
        })
    }
}

/// `WasmRoom.sweep(nowMs)`: reclaims the queries idle past the TTL at `now_ms`.
/// `*out_reclaimed` is how many.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out_reclaimed` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_sweep(
    room: *mut rindle_room,
    now_ms: f64,
    out_reclaimed: *mut f64,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_sweep", room, |r| {
            let out = Out::new("out_reclaimed", out_reclaimed)?;
            out.set(r.sweep(now_ms)? as f64);
            Ok(())
        })
    }
}

/// `WasmRoom.commitAll()`: the drain. `*out_json` is `[{"sub":…,"batch":…},…]`, at most
/// one net batch per subscriber, in byte order of the subscriber key (`[]` when nothing
/// changed). Call it after every input that changed the head.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_commit_all(
    room: *mut rindle_room,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room("rindle_room_commit_all", room, |r| {
            let out = Out::new("out_json", out_json)?;
            out.set(rindle_room_buf::from_string(r.commit_all()));
            Ok(())
        })
    }
}

/// `WasmRoom.cv()`: the last upstream cv. Before the snapshot it is `undefined`:
/// `*out_defined` is false and `*out_cv` is 0.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out_cv` and `out_defined` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_cv(
    room: *const rindle_room,
    out_cv: *mut f64,
    out_defined: *mut bool,
) -> rindle_room_result {
    // SAFETY: `room` and the other pointers follow the function's contract.
    unsafe {
        with_room_ref("rindle_room_cv", room, |r| {
            let (cv, defined) = (
                Out::new("out_cv", out_cv)?,
                Out::new("out_defined", out_defined)?,
            );
            let value = r.cv();
            cv.set(value.unwrap_or(0.0));
            defined.set(value.is_some());
            Ok(())
        })
    }
}

/// Implements a read-only method with one `double` or `bool` out-parameter.
///
/// # Safety
///
/// As the exported function: `room` NULL or live, `out` NULL or writable.
pub(crate) unsafe fn getter<T>(
    function: &'static str,
    room: *const rindle_room,
    out: *mut T,
    get: impl FnOnce(&JsonRoom) -> T,
) -> rindle_room_result {
    // SAFETY: forwarded from the exported function's contract.
    unsafe {
        with_room_ref(function, room, |r| {
            let out = Out::new("out", out)?;
            out.set(get(r));
            Ok(())
        })
    }
}

/// `WasmRoom.headCv()`: the head's commit version (one more per applied batch and per
/// committed mutation).
///
/// # Safety
///
/// `room` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_head_cv(
    room: *const rindle_room,
    out: *mut f64,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe { getter("rindle_room_head_cv", room, out, |r| r.head_cv() as f64) }
}

/// `WasmRoom.epoch()`: the upstream epoch of the store.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_epoch(
    room: *const rindle_room,
    out: *mut f64,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe { getter("rindle_room_epoch", room, out, |r| r.epoch() as f64) }
}

/// `WasmRoom.isLive()`: whether the room has its snapshot and is not poisoned.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_is_live(
    room: *const rindle_room,
    out: *mut bool,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe { getter("rindle_room_is_live", room, out, JsonRoom::is_live) }
}

/// `WasmRoom.isPoisoned()`: whether an upstream batch contradicted the store.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_is_poisoned(
    room: *const rindle_room,
    out: *mut bool,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe { getter("rindle_room_is_poisoned", room, out, JsonRoom::is_poisoned) }
}

/// `WasmRoom.materializationCount()`: how many distinct queries are maintained.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_materialization_count(
    room: *const rindle_room,
    out: *mut f64,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        getter("rindle_room_materialization_count", room, out, |r| {
            r.materialization_count() as f64
        })
    }
}

/// `WasmRoom.subscriberCount()`: how many subscribers are attached.
///
/// # Safety
///
/// `room` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_subscriber_count(
    room: *const rindle_room,
    out: *mut f64,
) -> rindle_room_result {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        getter("rindle_room_subscriber_count", room, out, |r| {
            r.subscriber_count() as f64
        })
    }
}

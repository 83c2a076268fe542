//! The boundary every exported function goes through: the panic guard, the checks that
//! turn C pointers and lengths into Rust values, and where a failed call's message goes.
//!
//! Each exported body runs inside [`with_thread`], or a handle's guard built on
//! [`Guarded`] (`with_room` in `room.rs`, `with_host` in `host.rs`); all catch panics. Inside, the body first converts every argument ([`str_arg`],
//! [`opt_str_arg`], [`Out::new`], …), so a bad pointer is refused before the room is
//! touched, then calls the core, then writes its out-parameters ([`Out::set`]): they
//! are written only on success.

use core::cell::{Cell, RefCell};
use core::ffi::c_char;
use core::panic::AssertUnwindSafe;
use core::ptr::NonNull;
use std::panic::catch_unwind;

use rindle_room_core::Error;

use crate::result::rindle_room_result;

/// Why a call failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The room refused: its message is kept verbatim (it is the contract's message).
    Room(Error),
    /// The boundary refused an argument; the message gets the function's name in front.
    Boundary(rindle_room_result, String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Room(e)
    }
}

impl Failure {
    pub(crate) fn code(&self) -> rindle_room_result {
        match self {
            Failure::Room(e) => rindle_room_result::from_core(e.code()),
            Failure::Boundary(code, _) => *code,
        }
    }

    /// Stores the message, NUL-terminated, in `slot`.
    pub(crate) fn record(&self, function: &str, slot: &RefCell<Vec<u8>>) {
        let mut slot = slot.borrow_mut();
        slot.clear();
        match self {
            Failure::Room(e) => slot.extend_from_slice(e.message().as_bytes()),
            Failure::Boundary(_, message) => {
                slot.extend_from_slice(function.as_bytes());
                slot.extend_from_slice(b": ");
                slot.extend_from_slice(message.as_bytes());
            }
        }
        slot.push(0);
    }
}

/// What a body returns: `Ok` after it wrote its out-parameters.
pub(crate) type Outcome = Result<(), Failure>;

pub(crate) fn panic_message(function: &str, payload: &(dyn core::any::Any + Send)) -> Failure {
    let what = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a non-text panic payload");
    Failure::Boundary(
        rindle_room_result::Panic,
        format!("the room panicked (a bug in {function}): {what}"),
    )
}

thread_local! {
    /// The message of the last failed call on this thread that had no room handle to
    /// keep it: the free functions, and any method called with a NULL room.
    static THREAD_ERROR: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Records `failure` in the calling thread's slot and returns its code.
pub(crate) fn fail_thread(function: &str, failure: &Failure) -> rindle_room_result {
    // `try_with` fails only while the thread is being torn down: the code still says it.
    let _ = THREAD_ERROR.try_with(|slot| failure.record(function, slot));
    failure.code()
}

/// A NULL room handle.
pub(crate) fn no_room() -> Failure {
    Failure::Boundary(
        rindle_room_result::NullArgument,
        String::from("no room (`room` is NULL)"),
    )
}

/// Runs a body that needs no room, catching panics; failures go to the thread's slot.
pub(crate) fn with_thread(
    function: &'static str,
    body: impl FnOnce() -> Outcome,
) -> rindle_room_result {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => rindle_room_result::Ok,
        Ok(Err(failure)) => fail_thread(function, &failure),
        Err(payload) => fail_thread(function, &panic_message(function, &*payload)),
    }
}

/// A handle that keeps its last error and refuses every call after a panic: a room, a
/// host.
pub(crate) trait Guarded {
    /// What to do with a handle that panicked, for the message.
    const REMEDY: &'static str;
    /// The last failed call's message, NUL-terminated.
    fn last_error(&self) -> &RefCell<Vec<u8>>;
    /// Set when a call panicked.
    fn panicked(&self) -> &Cell<bool>;
}

/// `Some(Panic)` (recorded) if an earlier call on `handle` panicked.
pub(crate) fn refuse_if_panicked<H: Guarded>(
    handle: &H,
    function: &str,
) -> Option<rindle_room_result> {
    if !handle.panicked().get() {
        return None;
    }
    let failure = Failure::Boundary(rindle_room_result::Panic, String::from(H::REMEDY));
    failure.record(function, handle.last_error());
    Some(failure.code())
}

/// Turns a guarded body's result into a code, recording failures on `handle`.
pub(crate) fn settle<H: Guarded>(
    handle: &H,
    function: &str,
    result: std::thread::Result<Outcome>,
) -> rindle_room_result {
    let failure = match result {
        Ok(Ok(())) => return rindle_room_result::Ok,
        Ok(Err(failure)) => failure,
        Err(payload) => {
            handle.panicked().set(true);
            panic_message(function, &*payload)
        }
    };
    // Recording allocates; if even that panics, the code alone must reach the host.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        failure.record(function, handle.last_error())
    }));
    failure.code()
}

/// The message in `slot` as `(pointer, length)`: an empty static string if none.
pub(crate) fn message_of(slot: &RefCell<Vec<u8>>) -> (*const c_char, usize) {
    let slot = slot.borrow();
    match slot.split_last() {
        // The slot holds the message and its NUL; the pointer stays valid until the
        // slot is written again (by the next failed call).
        Some((_, message)) => (slot.as_ptr().cast(), message.len()),
        None => (c"".as_ptr(), 0),
    }
}

/// The calling thread's last free-function message as `(pointer, length)`.
pub(crate) fn thread_message() -> (*const c_char, usize) {
    THREAD_ERROR
        .try_with(message_of)
        .unwrap_or((c"".as_ptr(), 0))
}

// ---------------------------------------------------------------------------------------
// Arguments.
// ---------------------------------------------------------------------------------------

fn null(arg: &str) -> Failure {
    Failure::Boundary(rindle_room_result::NullArgument, format!("`{arg}` is NULL"))
}

/// Checks a length before it becomes a slice (`slice::from_raw_parts` needs
/// `len <= isize::MAX`).
fn check_len(arg: &str, len: usize) -> Result<(), Failure> {
    if len > isize::MAX as usize {
        return Err(Failure::Boundary(
            rindle_room_result::InvalidLength,
            format!("`{arg}` has an impossible length {len}"),
        ));
    }
    Ok(())
}

/// A required text argument: `len` bytes of UTF-8 at `ptr` (no NUL needed).
///
/// # Safety
///
/// If `ptr` is not NULL and `len <= PTRDIFF_MAX`, `ptr` is readable for `len` bytes
/// that stay unchanged during the call.
pub(crate) unsafe fn str_arg<'a>(
    arg: &str,
    ptr: *const c_char,
    len: usize,
) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(null(arg));
    }
    check_len(arg, len)?;
    // SAFETY: `ptr` is non-NULL and readable for `len <= isize::MAX` bytes (caller).
    let bytes = unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    core::str::from_utf8(bytes).map_err(|e| {
        Failure::Boundary(
            rindle_room_result::InvalidUtf8,
            format!(
                "`{arg}` is not valid UTF-8 (bad byte at offset {})",
                e.valid_up_to()
            ),
        )
    })
}

/// An optional text argument: NULL (with length 0) is JavaScript's `undefined`.
///
/// # Safety
///
/// As [`str_arg`].
pub(crate) unsafe fn opt_str_arg<'a>(
    arg: &str,
    ptr: *const c_char,
    len: usize,
) -> Result<Option<&'a str>, Failure> {
    if ptr.is_null() {
        if len != 0 {
            return Err(Failure::Boundary(
                rindle_room_result::InvalidLength,
                format!("`{arg}` is NULL but its length is {len} (NULL means undefined)"),
            ));
        }
        return Ok(None);
    }
    // SAFETY: forwarded from the caller.
    unsafe { str_arg(arg, ptr, len) }.map(Some)
}

/// A checked, not yet written out-parameter.
#[derive(Debug)]
pub(crate) struct Out<T>(NonNull<T>);

impl<T> Out<T> {
    /// Refuses a NULL out-parameter.
    ///
    /// # Safety
    ///
    /// `ptr` is NULL or writable for one `T` until the call returns.
    pub(crate) unsafe fn new(arg: &str, ptr: *mut T) -> Result<Out<T>, Failure> {
        NonNull::new(ptr).map(Out).ok_or_else(|| null(arg))
    }

    /// Writes the value, without reading or dropping what was there.
    pub(crate) fn set(self, value: T) {
        // SAFETY: non-NULL and writable (the contract of `Out::new`); `write` does not
        // drop the old, possibly uninitialized, contents.
        unsafe { self.0.as_ptr().write(value) }
    }
}

//! Result codes: `0` is success, the room's own error codes keep the numbers of
//! [`ErrorCode::as_u32`], and a few codes belong to the boundary itself.

use core::ffi::c_char;
use std::ffi::CString;
use std::sync::OnceLock;

use rindle_room_core::ErrorCode;

/// What a call did. Every fallible function returns one of these.
///
/// `RINDLE_ROOM_RESULT_OK` (0) is success. Codes 1–99 come from the C boundary (a NULL
/// pointer, bytes that are not UTF-8, a bad length, a panic). Codes 100–199 are the
/// room's own error codes, with the same numbers and names as the Rust core's
/// `ErrorCode`. The numbers are stable: a code is never renumbered, new codes get new
/// numbers. `rindle_room_result_name()` and `rindle_room_result_message()` describe a
/// code; the last-error functions give the message of one failed call.
#[allow(non_camel_case_types)]
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum rindle_room_result {
    /// Success.
    Ok = 0,
    /// A required pointer argument or out-parameter is NULL. For a method of a room,
    /// a NULL `room` means "no room": there is no handle to act on.
    NullArgument = 1,
    /// A text argument is not valid UTF-8.
    InvalidUtf8 = 2,
    /// A length is impossible: larger than `PTRDIFF_MAX`, or non-zero next to a NULL
    /// optional pointer.
    InvalidLength = 3,
    /// The call panicked: a bug in the room. A room handle that panicked is unusable
    /// from then on; every later call on it returns this code. Free it and open a new
    /// room.
    Panic = 4,
    /// Input text is not JSON, or a JSON value has the wrong shape or type.
    MalformedInput = 100,
    /// An argument is out of its documented range (a negative time, a NaN epoch, …).
    InvalidArgument = 101,
    /// The upstream hello breaks a rule of `open` (comparator version, table shape, …).
    InvalidHello = 110,
    /// A `normalizedFp` does not match the tables it describes.
    FingerprintMismatch = 111,
    /// An upstream batch carries an epoch newer than the store's.
    EpochAhead = 112,
    /// An upstream batch skips sequence numbers (or the first batch is not seq 0).
    SequenceGap = 113,
    /// An upstream batch does not fit the store: the store is now poisoned. Open a new
    /// room from a new upstream hello.
    Poisoned = 114,
    /// The store has no snapshot yet, or was poisoned earlier: it cannot serve.
    NotLive = 115,
    /// A query the room refuses: a malformed AST (`ast: not a wire Ast: …`) or one it
    /// cannot build (`subscribe: Query(…)`).
    UnsupportedQuery = 120,
    /// A write-plane call arrived in the wrong state (no write plane, a second
    /// transaction, no open transaction, a flush already in flight, …).
    WrongState = 130,
    /// A mutation id skipped ahead of the client's applied watermark.
    MutationGap = 131,
    /// A staged write was refused; the head is untouched.
    WriteRefused = 132,
    /// A write-plane specification (owned tables, scope specs) is invalid.
    InvalidScope = 133,
    /// A mutator used a capability rooms lack: hosts answer with an `environment` deopt.
    Environment = 134,
    /// A lease token was refused; the message is the `lease token refused: …` reason.
    TokenRefused = 140,
    /// An internal invariant failed: a bug in the room, reported instead of panicking.
    Internal = 199,
}

impl rindle_room_result {
    /// Every code, in numeric order (not `pub`: cbindgen would export it as a macro; Rust
    /// callers use [`rindle_room_result::all`]).
    const ALL: [rindle_room_result; 21] = [
        Self::Ok,
        Self::NullArgument,
        Self::InvalidUtf8,
        Self::InvalidLength,
        Self::Panic,
        Self::MalformedInput,
        Self::InvalidArgument,
        Self::InvalidHello,
        Self::FingerprintMismatch,
        Self::EpochAhead,
        Self::SequenceGap,
        Self::Poisoned,
        Self::NotLive,
        Self::UnsupportedQuery,
        Self::WrongState,
        Self::MutationGap,
        Self::WriteRefused,
        Self::InvalidScope,
        Self::Environment,
        Self::TokenRefused,
        Self::Internal,
    ];

    /// Every code, in numeric order.
    pub fn all() -> &'static [rindle_room_result] {
        &Self::ALL
    }

    /// The code with this number, if there is one.
    pub fn from_u32(code: u32) -> Option<rindle_room_result> {
        Self::ALL.iter().copied().find(|r| *r as u32 == code)
    }

    /// The code of a core error: the same number. A core code this binding does not
    /// know yet (the core's enum is non-exhaustive) reports as `Internal`.
    pub fn from_core(code: ErrorCode) -> rindle_room_result {
        Self::from_u32(code.as_u32()).unwrap_or(Self::Internal)
    }

    /// The stable name of the code: the core's [`ErrorCode::name`] for the room's codes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ok => "OK",
            Self::NullArgument => "NULL_ARGUMENT",
            Self::InvalidUtf8 => "INVALID_UTF8",
            Self::InvalidLength => "INVALID_LENGTH",
            Self::Panic => "PANIC",
            room => ErrorCode::ALL
                .iter()
                .find(|c| c.as_u32() == room as u32)
                .map_or("INTERNAL", |c| c.name()),
        }
    }

    /// One sentence that says what the code means (the detail of one failure is in the
    /// last-error message).
    pub fn message(self) -> &'static str {
        match self {
            Self::Ok => "success",
            Self::NullArgument => "a required pointer argument is NULL (a NULL room: no room)",
            Self::InvalidUtf8 => "a text argument is not valid UTF-8",
            Self::InvalidLength => "a length is impossible for its pointer",
            Self::Panic => "the room panicked (a bug); the handle is no longer usable",
            Self::MalformedInput => "input text is not JSON, or has the wrong shape",
            Self::InvalidArgument => "an argument is out of its documented range",
            Self::InvalidHello => "the upstream hello breaks a rule",
            Self::FingerprintMismatch => "a normalizedFp does not match its tables",
            Self::EpochAhead => "an upstream batch carries a newer epoch than the store",
            Self::SequenceGap => "an upstream batch skips sequence numbers",
            Self::Poisoned => "an upstream batch contradicts the store; the store is poisoned",
            Self::NotLive => "the store has no snapshot yet, or is poisoned",
            Self::UnsupportedQuery => "the query uses something the room does not serve",
            Self::WrongState => "a write-plane call arrived in the wrong state",
            Self::MutationGap => "a mutation id skipped ahead of the client's watermark",
            Self::WriteRefused => "a staged write was refused; the head is untouched",
            Self::InvalidScope => "a write-plane specification is invalid",
            Self::Environment => "a mutator used a capability rooms lack",
            Self::TokenRefused => "a lease token was refused",
            Self::Internal => "an internal invariant of the room failed",
        }
    }
}

/// `(code, name, message)` for every code, NUL-terminated for C, built once.
fn table() -> &'static [(u32, CString, CString)] {
    static TABLE: OnceLock<Vec<(u32, CString, CString)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        rindle_room_result::ALL
            .iter()
            .map(|r| (*r as u32, c_text(r.name()), c_text(r.message())))
            .collect()
    })
}

/// A static text as a C string (the texts above hold no NUL byte).
fn c_text(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

/// The name of a result code (`"OK"`, `"MALFORMED_INPUT"`, …), or `"UNKNOWN"` for a
/// number that is no code. The string is static: never free it.
///
/// Takes a plain `uint32_t` so that any number is safe to pass.
#[no_mangle]
pub extern "C" fn rindle_room_result_name(code: u32) -> *const c_char {
    match std::panic::catch_unwind(|| entry(code).map(|e| e.1.as_ptr())) {
        Ok(Some(name)) => name,
        _ => c"UNKNOWN".as_ptr(),
    }
}

/// One sentence that says what a result code means, or `"unknown result code"`. The
/// string is static: never free it. The message of one failed call (which names the
/// argument or the rule) comes from `rindle_room_last_error()` or
/// `rindle_room_thread_last_error()`.
#[no_mangle]
pub extern "C" fn rindle_room_result_message(code: u32) -> *const c_char {
    match std::panic::catch_unwind(|| entry(code).map(|e| e.2.as_ptr())) {
        Ok(Some(message)) => message,
        _ => c"unknown result code".as_ptr(),
    }
}

fn entry(code: u32) -> Option<&'static (u32, CString, CString)> {
    table().iter().find(|entry| entry.0 == code)
}

//! Text the library hands to the host: [`rindle_room_buf`], freed by
//! [`rindle_room_buf_free`], and the two JSON spelling helpers.

use core::ffi::c_char;
use core::mem::ManuallyDrop;
use core::ptr;
use std::panic::catch_unwind;

use rindle_room_core::json::write::{write_f64, write_str};

use crate::boundary::{str_arg, with_thread, Out};
use crate::result::rindle_room_result;

/// UTF-8 text owned by the library: a JSON result, a token, a hash.
///
/// `data` points to `len` bytes followed by one NUL byte that `len` does not count, so
/// `data` is also a C string (JSON text, tokens and hashes never contain a NUL byte).
/// Free it with `rindle_room_buf_free()`, once; do not change any field before. A buf
/// with `data == NULL` holds nothing: an absent (`undefined`) result, or a buf already
/// freed. Zero a buf you declare (`memset(&out, 0, sizeof out);`, which C and C++
/// accept without warnings), so that freeing it is safe whether or not a call filled it.
///
/// ```c
/// rindle_room_buf out;
/// memset(&out, 0, sizeof out);
/// if (rindle_room_commit_all(room, &out) == RINDLE_ROOM_RESULT_OK) {
///   fwrite(out.data, 1, out.len, stdout);
///   rindle_room_buf_free(&out);
/// }
/// ```
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug)]
pub struct rindle_room_buf {
    /// The bytes, NUL-terminated; NULL when the buf holds nothing.
    pub data: *const c_char,
    /// The number of bytes, without the NUL.
    pub len: usize,
    /// The size of the allocation behind `data`, for `rindle_room_buf_free()` (the text
    /// is handed over as the room wrote it, without a copy). Not for the host's use.
    pub capacity: usize,
}

impl rindle_room_buf {
    /// A buf that holds nothing (`undefined`).
    pub const ABSENT: rindle_room_buf = rindle_room_buf {
        data: ptr::null(),
        len: 0,
        capacity: 0,
    };

    /// Hands `text` to the host as it is: its allocation, with a NUL appended.
    pub fn from_string(text: String) -> rindle_room_buf {
        let mut bytes = ManuallyDrop::new(text.into_bytes());
        bytes.push(0);
        rindle_room_buf {
            data: bytes.as_mut_ptr().cast::<c_char>().cast_const(),
            len: bytes.len() - 1,
            capacity: bytes.capacity(),
        }
    }

    /// An optional result: `None` is the absent buf.
    pub fn from_option(text: Option<String>) -> rindle_room_buf {
        text.map_or(rindle_room_buf::ABSENT, rindle_room_buf::from_string)
    }

    /// The text (for Rust callers and tests); `None` if the buf holds nothing.
    pub fn as_str(&self) -> Option<&str> {
        if self.data.is_null() {
            return None;
        }
        // SAFETY: a non-NULL buf was made by `from_string` from a `String`: `len` valid
        // UTF-8 bytes that live until the buf is freed.
        let bytes = unsafe { core::slice::from_raw_parts(self.data.cast::<u8>(), self.len) };
        core::str::from_utf8(bytes).ok()
    }
}

/// Frees the text of a buf and empties it (`data` NULL, `len` and `capacity` 0). A NULL `buf`, or a buf whose
/// `data` is NULL (absent, or already freed through this same struct), is a no-op.
///
/// # Safety
///
/// `buf` is NULL or points to a buf filled by this library and not changed since (a
/// copy of a buf that was freed through another copy must not be passed).
#[no_mangle]
pub unsafe extern "C" fn rindle_room_buf_free(buf: *mut rindle_room_buf) {
    let _ = catch_unwind(|| {
        // SAFETY: `buf` is NULL or a valid, unchanged buf (the caller's contract).
        let Some(buf) = (unsafe { buf.as_mut() }) else {
            return;
        };
        if buf.data.is_null() {
            return;
        }
        let data = buf.data.cast::<u8>().cast_mut();
        // SAFETY: `data`, `len + 1` and `capacity` are exactly the parts of the `Vec`
        // that `from_string` leaked, and it is freed once: the struct is cleared next.
        drop(unsafe { Vec::from_raw_parts(data, buf.len + 1, buf.capacity) });
        *buf = rindle_room_buf::ABSENT;
    });
}

/// Spells a number exactly as JavaScript's `JSON.stringify` does (`3`, `0.5`, `1e+21`;
/// `null` for NaN and infinities): the room's own formatter, for hosts that put the
/// numbers this API returns (`cv`, `headCv`, …) into JSON they write.
///
/// Fails only with `RINDLE_ROOM_RESULT_NULL_ARGUMENT` (the message goes to
/// `rindle_room_thread_last_error()`).
///
/// # Safety
///
/// `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_json_number(
    value: f64,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    with_thread("rindle_room_json_number", || {
        // SAFETY: `out_json` is NULL or writable (the function's contract).
        let out = unsafe { Out::new("out_json", out_json) }?;
        let mut s = String::new();
        write_f64(&mut s, value);
        out.set(rindle_room_buf::from_string(s));
        Ok(())
    })
}

/// Spells a string as a JSON string literal exactly as `JSON.stringify` does (quotes,
/// `\"`, `\\`, control characters escaped; everything else verbatim).
///
/// # Safety
///
/// `text` is NULL or readable for `text_len` bytes; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_json_string(
    text: *const c_char,
    text_len: usize,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    with_thread("rindle_room_json_string", || {
        // SAFETY: the pointers follow the function's contract.
        let (s, out) = unsafe {
            (
                str_arg("text", text, text_len)?,
                Out::new("out_json", out_json)?,
            )
        };
        let mut json = String::with_capacity(s.len() + 2);
        write_str(&mut json, s);
        out.set(rindle_room_buf::from_string(json));
        Ok(())
    })
}

/// The library's version, `"MAJOR.MINOR.PATCH"`: compare it with the header's
/// `RINDLE_ROOM_VERSION` to catch a header and a library from different builds. The
/// string is static: never free it.
#[no_mangle]
pub extern "C" fn rindle_room_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

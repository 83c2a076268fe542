//! Unit tests of the boundary: result codes against the core's, the version constants
//! against `Cargo.toml`, and the panic guard (which no input can reach from outside).

use core::ffi::{c_char, CStr};
use core::ptr;

use rindle_room_core::ErrorCode;

use crate::boundary::with_thread;
use crate::room::{with_room, with_room_ref};
use crate::*;

const HELLO: &str = r#"{"epoch":1,"comparatorVersion":2,"tables":[{"name":"note","columns":["id","body"],"primaryKey":[0]}],"normalizedFp":"d0ffe1b66912a02b"}"#;

fn open() -> *mut rindle_room {
    let mut room = ptr::null_mut();
    // SAFETY: a valid text and out-parameter.
    let rc = unsafe { rindle_room_open(HELLO.as_ptr().cast(), HELLO.len(), 0.0, &mut room) };
    assert_eq!(rc, rindle_room_result::Ok);
    room
}

fn last_error(room: *const rindle_room) -> String {
    let (mut msg, mut len): (*const c_char, usize) = (ptr::null(), 0);
    // SAFETY: a live room and valid out-parameters.
    let rc = unsafe { rindle_room_last_error(room, &mut msg, &mut len) };
    assert_eq!(rc, rindle_room_result::Ok);
    // SAFETY: the message is `len` bytes of UTF-8 owned by the room.
    let bytes = unsafe { core::slice::from_raw_parts(msg.cast::<u8>(), len) };
    String::from_utf8(bytes.to_vec()).expect("messages are UTF-8")
}

fn thread_error() -> String {
    let (mut msg, mut len): (*const c_char, usize) = (ptr::null(), 0);
    // SAFETY: valid out-parameters.
    let rc = unsafe { rindle_room_thread_last_error(&mut msg, &mut len) };
    assert_eq!(rc, rindle_room_result::Ok);
    // SAFETY: the message is `len` bytes of UTF-8 owned by the thread.
    let bytes = unsafe { core::slice::from_raw_parts(msg.cast::<u8>(), len) };
    String::from_utf8(bytes.to_vec()).expect("messages are UTF-8")
}

fn c_str(p: *const c_char) -> &'static str {
    // SAFETY: the name and message functions return static NUL-terminated text.
    unsafe { CStr::from_ptr(p) }.to_str().expect("static ASCII")
}

#[test]
fn room_codes_are_the_cores_numbers_and_names() {
    for code in ErrorCode::ALL {
        let r = rindle_room_result::from_core(code);
        assert_eq!(r as u32, code.as_u32(), "{code:?}");
        assert_eq!(r.name(), code.name(), "{code:?}");
        assert_eq!(c_str(rindle_room_result_name(code.as_u32())), code.name());
    }
    let all = rindle_room_result::all();
    for (i, r) in all.iter().enumerate() {
        let n = *r as u32;
        assert_eq!(rindle_room_result::from_u32(n), Some(*r));
        if n >= 100 {
            assert!(
                ErrorCode::ALL.iter().any(|c| c.as_u32() == n),
                "{r:?} is no core code"
            );
        } else {
            assert!(n < 100, "boundary codes stay below 100");
        }
        assert!(i == 0 || (all[i - 1] as u32) < n, "ALL is in numeric order");
        assert!(!r.message().is_empty());
        assert_eq!(c_str(rindle_room_result_message(n)), r.message());
    }
    assert_eq!(all.len(), 5 + ErrorCode::ALL.len());
    assert_eq!(c_str(rindle_room_result_name(99)), "UNKNOWN");
    assert_eq!(
        c_str(rindle_room_result_message(u32::MAX)),
        "unknown result code"
    );
}

#[test]
fn version_constants_match_cargo_toml() {
    let parts = [
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_PATCH"),
    ];
    let consts = [
        RINDLE_ROOM_VERSION_MAJOR,
        RINDLE_ROOM_VERSION_MINOR,
        RINDLE_ROOM_VERSION_PATCH,
    ];
    for (part, value) in parts.iter().zip(consts) {
        assert_eq!(part.parse::<u32>().ok(), Some(value));
    }
    assert_eq!(c_str(rindle_room_version()), env!("CARGO_PKG_VERSION"));
}

#[test]
fn a_panic_becomes_a_code_and_retires_the_room() {
    let room = open();
    // SAFETY: a live room, used by this thread only.
    let rc = unsafe { with_room("test_fn", room, |_| panic!("a bug")) };
    assert_eq!(rc, rindle_room_result::Panic);
    let msg = last_error(room);
    assert!(msg.starts_with("test_fn: the room panicked"), "{msg}");
    assert!(msg.ends_with("a bug"), "{msg}");
    // Every later call refuses, read-only ones included, without touching the room.
    let mut head = -1.0;
    // SAFETY: a live room and a valid out-parameter.
    let rc = unsafe { rindle_room_head_cv(room, &mut head) };
    assert_eq!(rc, rindle_room_result::Panic);
    assert_eq!(head, -1.0);
    assert!(last_error(room).contains("an earlier call on this room panicked"));
    // SAFETY: as above.
    let rc = unsafe { with_room_ref("other_fn", room, |_| Ok(())) };
    assert_eq!(rc, rindle_room_result::Panic);
    // SAFETY: a live room, freed once.
    unsafe { rindle_room_free(room) };
}

#[test]
fn a_panic_in_a_read_only_call_retires_the_room_too() {
    let room = open();
    // SAFETY: a live room, used by this thread only.
    let rc = unsafe { with_room_ref("peek", room, |_| panic!("{}", String::from("owned"))) };
    assert_eq!(rc, rindle_room_result::Panic);
    assert!(last_error(room).ends_with("owned"));
    let mut out = rindle_room_buf::ABSENT;
    // SAFETY: a live room and a valid out-parameter.
    let rc = unsafe { rindle_room_commit_all(room, &mut out) };
    assert_eq!(rc, rindle_room_result::Panic);
    assert!(out.data.is_null());
    // SAFETY: a live room, freed once.
    unsafe { rindle_room_free(room) };
}

#[test]
fn a_panic_without_a_room_goes_to_the_thread() {
    let rc = with_thread("static_fn", || panic!("no room here"));
    assert_eq!(rc, rindle_room_result::Panic);
    let msg = thread_error();
    assert!(msg.starts_with("static_fn: the room panicked"), "{msg}");
}

#[test]
fn bufs_round_trip_and_free_once() {
    let mut b = rindle_room_buf::from_string(String::from("[1,\"é\"]"));
    assert_eq!(b.as_str(), Some("[1,\"é\"]"));
    assert_eq!(b.len, "[1,\"é\"]".len());
    // SAFETY: the buf holds `len` bytes and a NUL.
    assert_eq!(unsafe { *b.data.add(b.len) }, 0);
    // SAFETY: a buf filled by this library.
    unsafe { rindle_room_buf_free(&mut b) };
    assert!(b.data.is_null() && b.len == 0);
    // SAFETY: a cleared buf, then NULL: both no-ops.
    unsafe {
        rindle_room_buf_free(&mut b);
        rindle_room_buf_free(ptr::null_mut());
    }
    assert_eq!(rindle_room_buf::from_option(None).as_str(), None);
}

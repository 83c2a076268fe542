//! Every exported function, called with a NULL room, NULL text, bytes that are not
//! UTF-8, an impossible length and NULL out-parameters, returns the matching code,
//! writes no out-parameter, and leaves the room usable.

use core::ffi::c_char;
use core::ptr;

use ::rindle_room::*;

const HELLO: &str = r#"{"epoch":1,"comparatorVersion":2,"tables":[{"name":"note","columns":["id","body"],"primaryKey":[0]}],"normalizedFp":"d0ffe1b66912a02b"}"#;
const SNAPSHOT: &str = r#"{"epoch":1,"seq":0,"normalizedFp":"d0ffe1b66912a02b","cv":1,"ops":[{"table":"note","op":"add","row":[1,"a"]}]}"#;

/// The arguments one call gets: the room, the text used for every text parameter, and
/// whether its out-parameters are NULL.
#[derive(Clone, Copy)]
struct Args {
    room: *mut rindle_room,
    text: *const c_char,
    len: usize,
    null_outs: bool,
}

/// The out-parameters of one call, preset to sentinels.
struct Outs {
    buf: rindle_room_buf,
    num: f64,
    flag: bool,
    room: *mut rindle_room,
    msg: *const c_char,
    len: usize,
}

const SENTINEL: &str = "sentinel";

impl Outs {
    fn new() -> Outs {
        Outs {
            buf: rindle_room_buf {
                data: SENTINEL.as_ptr().cast(),
                len: 77,
                capacity: 78,
            },
            num: -1.5,
            flag: true,
            room: ptr::null_mut(),
            msg: ptr::null(),
            len: 77,
        }
    }

    fn untouched(&self) -> bool {
        self.buf.data == SENTINEL.as_ptr().cast()
            && self.buf.len == 77
            && self.buf.capacity == 78
            && self.num == -1.5
            && self.flag
            && self.room.is_null()
            && self.msg.is_null()
            && self.len == 77
    }
}

fn or_null<T>(a: Args, p: &mut T) -> *mut T {
    if a.null_outs {
        ptr::null_mut()
    } else {
        p
    }
}

/// Which parameters a function has.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// Takes a room, at least one required text, out-parameters.
    RoomText,
    /// Takes a room and out-parameters, no required text.
    RoomOnly,
    /// Takes a room and only optional texts, no out-parameter.
    RoomOptText,
    /// Takes a room and required text, no out-parameter.
    RoomTextNoOut,
    /// No room; required text and out-parameters.
    Static,
}

type Call = fn(Args, &mut Outs) -> rindle_room_result;

macro_rules! calls {
    ($($name:ident $shape:ident |$a:ident, $o:ident| $body:expr;)*) => {
        &[$((stringify!($name), Shape::$shape, {
            fn call($a: Args, $o: &mut Outs) -> rindle_room_result {
                // SAFETY: every pointer is NULL, points to a live value of the right
                // type, or is `text` readable for `len` bytes (or `len` is impossible,
                // which the function refuses before reading).
                unsafe { $body }
            }
            call as Call
        })),*]
    };
}

#[rustfmt::skip]
const CALLS: &[(&str, Shape, Call)] = calls! {
    rindle_room_open Static |a, o| rindle_room_open(a.text, a.len, 1.0, or_null(a, &mut o.room));
    rindle_room_mint_room_token Static |a, o| rindle_room_mint_room_token(a.text, a.len, or_null(a, &mut o.buf));
    rindle_room_verify_room_token Static |a, o| rindle_room_verify_room_token(a.text, a.len, a.text, a.len, or_null(a, &mut o.buf));
    rindle_room_scope_specs_hash Static |a, o| rindle_room_scope_specs_hash(a.text, a.len, or_null(a, &mut o.buf));
    rindle_room_json_string Static |a, o| rindle_room_json_string(a.text, a.len, or_null(a, &mut o.buf));
    rindle_room_apply RoomText |a, o| rindle_room_apply(a.room, a.text, a.len, or_null(a, &mut o.buf));
    rindle_room_subscribe RoomText |a, o| rindle_room_subscribe(a.room, a.text, a.len, 1.0, a.text, a.len, 0.0, or_null(a, &mut o.buf));
    rindle_room_unsubscribe RoomText |a, o| rindle_room_unsubscribe(a.room, a.text, a.len, 0.0, or_null(a, &mut o.flag));
    rindle_room_sweep RoomOnly |a, o| rindle_room_sweep(a.room, 0.0, or_null(a, &mut o.num));
    rindle_room_commit_all RoomOnly |a, o| rindle_room_commit_all(a.room, or_null(a, &mut o.buf));
    rindle_room_cv RoomOnly |a, o| rindle_room_cv(a.room, or_null(a, &mut o.num), or_null(a, &mut o.flag));
    rindle_room_head_cv RoomOnly |a, o| rindle_room_head_cv(a.room, or_null(a, &mut o.num));
    rindle_room_epoch RoomOnly |a, o| rindle_room_epoch(a.room, or_null(a, &mut o.num));
    rindle_room_is_live RoomOnly |a, o| rindle_room_is_live(a.room, or_null(a, &mut o.flag));
    rindle_room_is_poisoned RoomOnly |a, o| rindle_room_is_poisoned(a.room, or_null(a, &mut o.flag));
    rindle_room_materialization_count RoomOnly |a, o| rindle_room_materialization_count(a.room, or_null(a, &mut o.num));
    rindle_room_subscriber_count RoomOnly |a, o| rindle_room_subscriber_count(a.room, or_null(a, &mut o.num));
    rindle_room_last_error RoomOnly |a, o| rindle_room_last_error(a.room, or_null(a, &mut o.msg), or_null(a, &mut o.len));
    rindle_room_enable_writes RoomTextNoOut |a, _o| rindle_room_enable_writes(a.room, a.text, a.len);
    rindle_room_enable_writes_v2 RoomTextNoOut |a, _o| rindle_room_enable_writes_v2(a.room, a.text, a.len, a.text, a.len);
    rindle_room_begin_mutation RoomText |a, o| rindle_room_begin_mutation(a.room, a.text, a.len, 1.0, a.text, a.len, a.text, a.len, or_null(a, &mut o.buf));
    rindle_room_tx_get RoomText |a, o| rindle_room_tx_get(a.room, a.text, a.len, a.text, a.len, or_null(a, &mut o.buf), or_null(a, &mut o.flag));
    rindle_room_tx_add RoomTextNoOut |a, _o| rindle_room_tx_add(a.room, a.text, a.len, a.text, a.len);
    rindle_room_tx_edit RoomTextNoOut |a, _o| rindle_room_tx_edit(a.room, a.text, a.len, a.text, a.len);
    rindle_room_tx_remove RoomTextNoOut |a, _o| rindle_room_tx_remove(a.room, a.text, a.len, a.text, a.len);
    rindle_room_commit_mutation RoomOnly |a, o| rindle_room_commit_mutation(a.room, or_null(a, &mut o.buf));
    rindle_room_reject_mutation RoomOptText |a, _o| rindle_room_reject_mutation(a.room, a.text, a.len, a.text, a.len);
    rindle_room_ack RoomText |a, o| rindle_room_ack(a.room, a.text, a.len, or_null(a, &mut o.buf));
    rindle_room_acked_lmid RoomText |a, o| rindle_room_acked_lmid(a.room, a.text, a.len, or_null(a, &mut o.num));
    rindle_room_applied_mid RoomText |a, o| rindle_room_applied_mid(a.room, a.text, a.len, or_null(a, &mut o.num));
    rindle_room_durable_lmid RoomText |a, o| rindle_room_durable_lmid(a.room, a.text, a.len, or_null(a, &mut o.num));
    rindle_room_lmid_subscribe RoomText |a, o| rindle_room_lmid_subscribe(a.room, a.text, a.len, 1.0, a.text, a.len, 0.0, or_null(a, &mut o.buf));
    rindle_room_seed_durable RoomText |a, o| rindle_room_seed_durable(a.room, a.text, a.len, or_null(a, &mut o.buf));
    rindle_room_pending_len RoomOnly |a, o| rindle_room_pending_len(a.room, or_null(a, &mut o.num));
    rindle_room_dirty_len RoomOnly |a, o| rindle_room_dirty_len(a.room, or_null(a, &mut o.num));
    rindle_room_begin_flush RoomOnly |a, o| rindle_room_begin_flush(a.room, or_null(a, &mut o.buf), or_null(a, &mut o.flag));
    rindle_room_flush_ok RoomOnly |a, o| rindle_room_flush_ok(a.room, or_null(a, &mut o.buf));
    rindle_room_flush_conflict RoomText |a, o| rindle_room_flush_conflict(a.room, a.text, a.len, or_null(a, &mut o.buf));
    rindle_room_flush_in_flight RoomOnly |a, o| rindle_room_flush_in_flight(a.room, or_null(a, &mut o.flag));
};

/// Opens a live room.
fn live_room() -> *mut rindle_room {
    let mut room = ptr::null_mut();
    let mut out = rindle_room_buf::ABSENT;
    // SAFETY: valid texts and out-parameters.
    unsafe {
        assert_eq!(
            rindle_room_open(HELLO.as_ptr().cast(), HELLO.len(), 1.0, &mut room),
            rindle_room_result::Ok
        );
        assert_eq!(
            rindle_room_apply(room, SNAPSHOT.as_ptr().cast(), SNAPSHOT.len(), &mut out),
            rindle_room_result::Ok
        );
        rindle_room_buf_free(&mut out);
    }
    room
}

/// Runs every call of the given shapes with `args`; each must return `want` and leave
/// its out-parameters alone.
fn expect_all(shapes: &[Shape], args: Args, want: rindle_room_result) -> usize {
    let mut n = 0;
    for (name, shape, call) in CALLS {
        if !shapes.contains(shape) {
            continue;
        }
        let mut outs = Outs::new();
        let got = call(args, &mut outs);
        assert_eq!(got, want, "{name}");
        assert!(
            outs.untouched(),
            "{name} wrote an out-parameter although it failed"
        );
        n += 1;
    }
    n
}

fn still_usable(room: *mut rindle_room) {
    let mut out = rindle_room_buf::ABSENT;
    let mut head = 0.0;
    // SAFETY: a live room and valid out-parameters.
    unsafe {
        assert_eq!(
            rindle_room_commit_all(room, &mut out),
            rindle_room_result::Ok
        );
        assert_eq!(out.as_str(), Some("[]"));
        rindle_room_buf_free(&mut out);
        assert_eq!(rindle_room_head_cv(room, &mut head), rindle_room_result::Ok);
    }
    assert_eq!(head, 1.0, "nothing changed the head");
}

const TEXTUAL: &[Shape] = &[Shape::RoomText, Shape::RoomTextNoOut, Shape::Static];

#[test]
fn the_table_lists_every_exported_function() {
    let src = [
        include_str!("../src/room.rs"),
        include_str!("../src/write.rs"),
        include_str!("../src/token.rs"),
        include_str!("../src/buf.rs"),
        include_str!("../src/result.rs"),
    ]
    .concat();
    let exported: Vec<&str> = src
        .split("extern \"C\" fn ")
        .skip(1)
        .filter_map(|rest| rest.split('(').next())
        .collect();
    for name in &exported {
        let covered = CALLS.iter().any(|(n, _, _)| n == name)
            || matches!(
                *name,
                "rindle_room_free"
                    | "rindle_room_buf_free"
                    | "rindle_room_json_number"
                    | "rindle_room_version"
                    | "rindle_room_thread_last_error"
                    | "rindle_room_result_name"
                    | "rindle_room_result_message"
            );
        assert!(covered, "{name} is not exercised here");
    }
    assert!(
        exported.len() >= 40,
        "found only {} functions",
        exported.len()
    );
}

#[test]
fn a_null_room_is_no_room() {
    let args = Args {
        room: ptr::null_mut(),
        text: SNAPSHOT.as_ptr().cast(),
        len: SNAPSHOT.len(),
        null_outs: false,
    };
    let shapes = [
        Shape::RoomText,
        Shape::RoomOnly,
        Shape::RoomOptText,
        Shape::RoomTextNoOut,
    ];
    let n = expect_all(&shapes, args, rindle_room_result::NullArgument);
    assert!(n > 30);
}

#[test]
fn null_text_is_a_null_argument() {
    let room = live_room();
    let args = Args {
        room,
        text: ptr::null(),
        len: 0,
        null_outs: false,
    };
    expect_all(TEXTUAL, args, rindle_room_result::NullArgument);
    // Optional text: NULL with a length is impossible.
    let args = Args { len: 4, ..args };
    expect_all(
        &[Shape::RoomOptText],
        args,
        rindle_room_result::InvalidLength,
    );
    still_usable(room);
    // SAFETY: a live room, freed once.
    unsafe { rindle_room_free(room) };
}

#[test]
fn null_out_parameters_are_null_arguments() {
    let room = live_room();
    let text = "[\"x\"]";
    let args = Args {
        room,
        text: text.as_ptr().cast(),
        len: text.len(),
        null_outs: true,
    };
    expect_all(
        &[Shape::RoomOnly, Shape::RoomText, Shape::Static],
        args,
        rindle_room_result::NullArgument,
    );
    let mut out = rindle_room_buf::ABSENT;
    // SAFETY: a NULL out-parameter: refused.
    let rc = unsafe { rindle_room_json_number(1.0, ptr::null_mut()) };
    assert_eq!(rc, rindle_room_result::NullArgument);
    // SAFETY: valid out-parameter.
    let rc = unsafe { rindle_room_json_number(1e21, &mut out) };
    assert_eq!((rc, out.as_str()), (rindle_room_result::Ok, Some("1e+21")));
    // SAFETY: filled above.
    unsafe { rindle_room_buf_free(&mut out) };
    still_usable(room);
    // SAFETY: a live room, freed once.
    unsafe { rindle_room_free(room) };
}

#[test]
fn bytes_that_are_not_utf8_are_refused() {
    let room = live_room();
    for bad in [
        &b"\xff"[..],
        b"[\"\xc3\"]",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"ok\xc0\xaf",
    ] {
        let args = Args {
            room,
            text: bad.as_ptr().cast(),
            len: bad.len(),
            null_outs: false,
        };
        expect_all(TEXTUAL, args, rindle_room_result::InvalidUtf8);
        expect_all(&[Shape::RoomOptText], args, rindle_room_result::InvalidUtf8);
    }
    still_usable(room);
    // SAFETY: a live room, freed once.
    unsafe { rindle_room_free(room) };
}

#[test]
fn impossible_lengths_are_refused_before_reading() {
    let room = live_room();
    for len in [usize::MAX, isize::MAX as usize + 1] {
        let args = Args {
            room,
            text: SNAPSHOT.as_ptr().cast(),
            len,
            null_outs: false,
        };
        expect_all(TEXTUAL, args, rindle_room_result::InvalidLength);
        expect_all(
            &[Shape::RoomOptText],
            args,
            rindle_room_result::InvalidLength,
        );
    }
    still_usable(room);
    // SAFETY: a live room, freed once.
    unsafe { rindle_room_free(room) };
}

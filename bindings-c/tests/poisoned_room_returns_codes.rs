//! A room whose store an upstream batch contradicted: the poisoning call returns
//! `Poisoned`, later inputs return codes (never crash), the drain still answers, and the
//! messages are the contract's.

use core::ffi::c_char;
use core::ptr;

use ::rindle_room::*;

const HELLO: &str = r#"{"epoch":1,"comparatorVersion":2,"tables":[{"name":"note","columns":["id","body"],"primaryKey":[0]}],"normalizedFp":"d0ffe1b66912a02b"}"#;
const SNAPSHOT: &str = r#"{"epoch":1,"seq":0,"normalizedFp":"d0ffe1b66912a02b","cv":1,"ops":[{"table":"note","op":"add","row":[1,"a"]}]}"#;
const MISSING_REMOVE: &str = r#"{"epoch":1,"seq":1,"normalizedFp":"d0ffe1b66912a02b","cv":2,"ops":[{"table":"note","op":"remove","row":[9,"z"]}]}"#;
const NEXT: &str = r#"{"epoch":1,"seq":2,"normalizedFp":"d0ffe1b66912a02b","cv":3,"ops":[]}"#;
const AST: &str = r#"{"table":"note"}"#;

fn t(s: &str) -> (*const c_char, usize) {
    (s.as_ptr().cast(), s.len())
}

fn last_error(room: *const rindle_room) -> String {
    let (mut msg, mut len): (*const c_char, usize) = (ptr::null(), 0);
    // SAFETY: a live room and valid out-parameters.
    let rc = unsafe { rindle_room_last_error(room, &mut msg, &mut len) };
    assert_eq!(rc, rindle_room_result::Ok);
    // SAFETY: `len` bytes owned by the room.
    let bytes = unsafe { core::slice::from_raw_parts(msg.cast::<u8>(), len) };
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_poisoned_room_refuses_with_codes() {
    let mut room = ptr::null_mut();
    let mut out = rindle_room_buf::ABSENT;
    let (mut flag, mut num) = (false, 0.0);
    // SAFETY: valid texts, a live room, valid out-parameters throughout.
    unsafe {
        let (h, hl) = t(HELLO);
        assert_eq!(
            rindle_room_open(h, hl, 1.0, &mut room),
            rindle_room_result::Ok
        );
        let (s, sl) = t(SNAPSHOT);
        assert_eq!(
            rindle_room_apply(room, s, sl, &mut out),
            rindle_room_result::Ok
        );
        rindle_room_buf_free(&mut out);

        let (b, bl) = t(MISSING_REMOVE);
        assert_eq!(
            rindle_room_apply(room, b, bl, &mut out),
            rindle_room_result::Poisoned
        );
        assert!(out.data.is_null());
        assert!(last_error(room).contains("poison"), "{}", last_error(room));
        assert_eq!(
            rindle_room_is_poisoned(room, &mut flag),
            rindle_room_result::Ok
        );
        assert!(flag);
        assert_eq!(rindle_room_is_live(room, &mut flag), rindle_room_result::Ok);
        assert!(!flag);

        let (n, nl) = t(NEXT);
        let rc = rindle_room_apply(room, n, nl, &mut out);
        assert!(
            matches!(
                rc,
                rindle_room_result::Poisoned | rindle_room_result::NotLive
            ),
            "{rc:?}"
        );
        let (sub, subl) = t("c1");
        let (a, al) = t(AST);
        let rc = rindle_room_subscribe(room, sub, subl, 1.0, a, al, 0.0, &mut out);
        assert_eq!(rc, rindle_room_result::NotLive);
        assert!(out.data.is_null());
        let (w, wl) = t(r#"["note"]"#);
        assert_ne!(
            rindle_room_enable_writes(room, w, wl),
            rindle_room_result::Ok
        );

        assert_eq!(
            rindle_room_commit_all(room, &mut out),
            rindle_room_result::Ok
        );
        assert_eq!(out.as_str(), Some("[]"));
        rindle_room_buf_free(&mut out);
        assert_eq!(rindle_room_head_cv(room, &mut num), rindle_room_result::Ok);
        rindle_room_free(room);
    }
}

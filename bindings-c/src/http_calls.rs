//! The host's HTTP reply mapping for a C driver that speaks HTTP itself: the reply to an
//! authority call (status + body text) classified the way the server and the Node shell
//! classify it, as the `result` of an `authority` input. The request bodies travel in
//! the `authorityClaim` / `authorityLmids` / `authorityApply` outputs.

use core::ffi::c_char;

use rindle_room_core::host::{authority_reply, json::authority_result_json, AuthorityCall};

use crate::boundary::{str_arg, with_thread, Failure, Out};
use crate::buf::rindle_room_buf;
use crate::result::rindle_room_result;

/// A `claim-room-epoch` reply (the `authorityClaim` output).
pub const RINDLE_ROOM_AUTHORITY_CLAIM: u32 = 0;
/// A `room-lmids` reply (the `authorityLmids` output).
pub const RINDLE_ROOM_AUTHORITY_LMIDS: u32 = 1;
/// An `apply-row-change-txn` reply (the `authorityApply` output).
pub const RINDLE_ROOM_AUTHORITY_APPLY: u32 = 2;

/// Classifies the HTTP reply to an authority call: `call` is one of
/// `RINDLE_ROOM_AUTHORITY_*`, `url` names the endpoint in messages, `status` and `body`
/// are the reply's. `*out_json` is the result to hand back as
/// `{"t":"authority","io":…,"result":<it>}`: `{"claimed"}`, `{"lmids"}`,
/// `{"applied":{"kind",…}}`, `{"retryable"}` or `{"fatal"}`. A network failure or
/// timeout has no reply: send `{"retryable":"<what failed>"}` yourself.
///
/// # Safety
///
/// `url` is NULL or readable for `url_len` bytes, `body` for `body_len`; `out_json` is
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_authority_reply(
    call: u32,
    url: *const c_char,
    url_len: usize,
    status: u16,
    body: *const c_char,
    body_len: usize,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    with_thread("rindle_room_authority_reply", || {
        // SAFETY: the pointers follow the function's contract.
        let (url, body, out) = unsafe {
            (
                str_arg("url", url, url_len)?,
                str_arg("body", body, body_len)?,
                Out::new("out_json", out_json)?,
            )
        };
        let call = match call {
            RINDLE_ROOM_AUTHORITY_CLAIM => AuthorityCall::Claim,
            RINDLE_ROOM_AUTHORITY_LMIDS => AuthorityCall::Lmids,
            RINDLE_ROOM_AUTHORITY_APPLY => AuthorityCall::Apply,
            other => {
                return Err(Failure::Boundary(
                    rindle_room_result::InvalidArgument,
                    format!("`call` is {other}: expected one of RINDLE_ROOM_AUTHORITY_CLAIM, _LMIDS, _APPLY"),
                ))
            }
        };
        let result = authority_reply(call, url, status, body);
        out.set(rindle_room_buf::from_string(authority_result_json(&result)));
        Ok(())
    })
}

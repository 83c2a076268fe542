//! The static functions of `WasmRoom` that need no room: lease tokens and the scope
//! specs hash. Their failures go to `rindle_room_thread_last_error()`.

use core::ffi::c_char;

use rindle_room_core::contract::{mint_room_token, scope_specs_hash, verify_room_token};

use crate::boundary::{str_arg, with_thread, Out};
use crate::buf::rindle_room_buf;
use crate::result::rindle_room_result;

/// `mintRoomToken(opts)`: mints an `rt1` lease token. `opts_json` is
/// `{"doc","ast","sub","kid","key","ttlMs","now","scopesHash"?}` (`now` is required:
/// the room reads no clock). `*out_token` is the token text (not JSON-quoted).
///
/// # Safety
///
/// `opts_json` is NULL or readable for `opts_len` bytes; `out_token` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_mint_room_token(
    opts_json: *const c_char,
    opts_len: usize,
    out_token: *mut rindle_room_buf,
) -> rindle_room_result {
    with_thread("rindle_room_mint_room_token", || {
        // SAFETY: the pointers follow the function's contract.
        let (opts, out) = unsafe {
            (
                str_arg("opts_json", opts_json, opts_len)?,
                Out::new("out_token", out_token)?,
            )
        };
        out.set(rindle_room_buf::from_string(mint_room_token(opts)?));
        Ok(())
    })
}

/// `verifyRoomToken(token, opts)`: checks a lease token. `opts_json` is
/// `{"doc","keys":{kid: secret},"now"}`. `*out_json` is the token's payload as JSON
/// text. A refusal returns `RINDLE_ROOM_RESULT_TOKEN_REFUSED` with the
/// `lease token refused: <reason>` message.
///
/// # Safety
///
/// Each text is NULL or readable for its length; `out_json` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_verify_room_token(
    token: *const c_char,
    token_len: usize,
    opts_json: *const c_char,
    opts_len: usize,
    out_json: *mut rindle_room_buf,
) -> rindle_room_result {
    with_thread("rindle_room_verify_room_token", || {
        // SAFETY: the pointers follow the function's contract.
        let (token, opts, out) = unsafe {
            (
                str_arg("token", token, token_len)?,
                str_arg("opts_json", opts_json, opts_len)?,
                Out::new("out_json", out_json)?,
            )
        };
        out.set(rindle_room_buf::from_string(verify_room_token(
            token, opts,
        )?));
        Ok(())
    })
}

/// `scopeSpecsHash(specs)`: the 8-hex FNV-1a-32 hash of the scope specs (JSON text),
/// as tokens carry it in `scopesHash`. `*out_hash` is the hash text (not JSON-quoted).
///
/// # Safety
///
/// `specs_json` is NULL or readable for `specs_len` bytes; `out_hash` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn rindle_room_scope_specs_hash(
    specs_json: *const c_char,
    specs_len: usize,
    out_hash: *mut rindle_room_buf,
) -> rindle_room_result {
    with_thread("rindle_room_scope_specs_hash", || {
        // SAFETY: the pointers follow the function's contract.
        let (specs, out) = unsafe {
            (
                str_arg("specs_json", specs_json, specs_len)?,
                Out::new("out_hash", out_hash)?,
            )
        };
        out.set(rindle_room_buf::from_string(scope_specs_hash(specs)?));
        Ok(())
    })
}

//! The host's HTTP wire forms for the shell's `fetch` calls (`shell/authority.js`'s
//! `httpAuthority`, `shell/shell.js`'s lease mint): the request bodies, and each reply
//! classified by the core ([`rindle_room_core::host::authority_reply`],
//! [`rindle_room_core::host::lease_reply`]) so that both faces map an HTTP answer the
//! same way, with the same messages.

// napi-rs registers the `#[napi]` functions below only outside `cfg(test)`.
#![cfg_attr(test, allow(dead_code))]

use napi_derive::napi;
use rindle_room_core::host::{self, json, AuthorityCall};
use rindle_room_core::json::tree::JsValue;

fn call_named(call: &str) -> napi::Result<AuthorityCall> {
    match call {
        "claim" => Ok(AuthorityCall::Claim),
        "lmids" => Ok(AuthorityCall::Lmids),
        "apply" => Ok(AuthorityCall::Apply),
        other => Err(napi::Error::new(
            napi::Status::InvalidArg,
            format!("unknown authority call {other:?} (expected claim, lmids or apply)"),
        )),
    }
}

/// The body of a `claim` (`{"doc"}`) or `lmids` (`{"doc","clients"}`) call.
#[napi(js_name = "authorityBody")]
pub fn authority_body(
    call: String,
    doc: String,
    clients: Option<Vec<String>>,
) -> napi::Result<String> {
    Ok(match call_named(&call)? {
        AuthorityCall::Lmids => host::lmids_body(&doc, &clients.unwrap_or_default()),
        _ => host::claim_body(&doc),
    })
}

/// Classifies an authority call's reply: the result as JSON — `{claimed}`, `{lmids}`,
/// `{applied: {kind, …}}`, `{retryable: message}` or `{fatal: message}`.
#[napi(js_name = "authorityReply")]
pub fn authority_reply(
    call: String,
    url: String,
    status: u32,
    text: String,
) -> napi::Result<String> {
    let call = call_named(&call)?;
    let status = u16::try_from(status).unwrap_or(u16::MAX);
    Ok(json::authority_result_json(&host::authority_reply(
        call, &url, status, &text,
    )))
}

/// rindled's `/materialize` body for a footprint AST given as JSON text.
#[napi(js_name = "materializeBody")]
pub fn materialize_body(ast_json: String, lease_ttl_ms: Option<f64>) -> napi::Result<String> {
    let ast = JsValue::parse(&ast_json)
        .map_err(|e| napi::Error::new(napi::Status::InvalidArg, format!("footprint AST: {e}")))?;
    let ttl = match lease_ttl_ms {
        None => None,
        Some(t) if t >= 0.0 && t.fract() == 0.0 && t <= 9_007_199_254_740_991.0 => Some(t as u64),
        Some(t) => {
            return Err(napi::Error::new(
                napi::Status::InvalidArg,
                format!("leaseTtlMs must be a non-negative integer, got {t}"),
            ))
        }
    };
    Ok(host::materialize_body(&ast, ttl))
}

/// Classifies rindled's `/materialize` reply: `[token, null]` or `[null, error]`.
#[napi(js_name = "leaseReply")]
pub fn lease_reply(status: u32, text: String) -> (Option<String>, Option<String>) {
    let status = u16::try_from(status).unwrap_or(u16::MAX);
    match host::lease_reply(status, &text) {
        Ok(token) => (Some(token), None),
        Err(e) => (None, Some(e.to_string())),
    }
}

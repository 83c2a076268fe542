//! The wire forms of the host's HTTP calls, for drivers that speak HTTP themselves: the
//! request bodies of the authority trio (`docs/design/authority.md`, "The apply call") and
//! of rindled's lease mint,
//! and how each reply (status + body text) maps to the input the host takes.
//!
//! A driver sends the body, reads the status and the body text, and hands both to the
//! classifier here; a network failure or timeout is [`AuthorityError::Retryable`]
//! (the driver says so itself: no reply to classify).
//!
//! # Authority reply mapping
//!
//! `apply-row-change-txn`:
//!
//! | HTTP | body | result |
//! |---|---|---|
//! | 2xx | `{applied?, cv?}` | [`ApplyResult::Ok`] (`applied` absent ⇒ `true`; `cv` absent/null ⇒ `None`) |
//! | 409 | `{"error":"conflict","conflicts":[…]}` | [`ApplyResult::Conflict`] (the array, compact JSON) |
//! | 409 | `{"error":"fenced","currentEpoch"?}` | [`ApplyResult::Fenced`] |
//! | 409 | anything else | [`AuthorityError::Fatal`] (a malformed refusal) |
//! | 500 | text mentioning `batch identity mismatch` (any case) | [`AuthorityError::Fatal`] |
//! | any other non-2xx | — | [`AuthorityError::Retryable`] |
//!
//! `claim-room-epoch` / `room-lmids`: 2xx with the documented shape ⇒ the value; any
//! non-2xx ⇒ `Retryable`.
//!
//! For all three, a 2xx whose body is not JSON at all (an intermediary's page, a
//! truncated reply) is `Retryable` — a same-body retry is always safe, and dedup absorbs
//! a batch that did land; a 2xx whose body is JSON of the wrong shape is `Fatal` — the
//! authority is speaking another contract and retrying cannot help.
//!
//! A 403 from a mis-keyed flush credential is "any other non-2xx" and so retries at the
//! backoff cap; every retry's log line carries the status and the authority's message.

use crate::texts::snippet;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;

use serde_json::Value as Json;

use super::MintError;
use super::{ApplyResult, AuthorityError, AuthorityReply};
use crate::json::tree::JsValue;
use crate::json::write::{write_f64, write_str, write_str_array};

/// Which authority endpoint a reply came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthorityCall {
    /// `claim-room-epoch` → [`AuthorityReply::Claimed`].
    Claim,
    /// `room-lmids` → [`AuthorityReply::Lmids`].
    Lmids,
    /// `apply-row-change-txn` → [`AuthorityReply::Applied`].
    Apply,
}

/// The `claim-room-epoch` body: `{"doc":…}`.
pub fn claim_body(doc: &str) -> String {
    let mut s = String::from("{\"doc\":");
    write_str(&mut s, doc);
    s.push('}');
    s
}

/// The `room-lmids` body: `{"doc":…,"clients":[…]}`.
pub fn lmids_body(doc: &str, clients: &[String]) -> String {
    let mut s = String::from("{\"doc\":");
    write_str(&mut s, doc);
    s.push_str(",\"clients\":");
    write_str_array(&mut s, clients);
    s.push('}');
    s
}

/// Classifies the reply to an authority call. `url` names the endpoint in messages;
/// the body text is quoted up to [`REPLY_SNIPPET_BYTES`](crate::texts::REPLY_SNIPPET_BYTES).
pub fn authority_reply(
    call: AuthorityCall,
    url: &str,
    status: u16,
    text: &str,
) -> Result<AuthorityReply, AuthorityError> {
    match call {
        AuthorityCall::Claim => claim_reply(url, status, text).map(AuthorityReply::Claimed),
        AuthorityCall::Lmids => lmids_reply(url, status, text).map(AuthorityReply::Lmids),
        AuthorityCall::Apply => apply_reply(url, status, text).map(AuthorityReply::Applied),
    }
}

/// The `claim-room-epoch` reply: `{epoch}`.
pub fn claim_reply(url: &str, status: u16, text: &str) -> Result<u64, AuthorityError> {
    let value = success_json(url, status, text)?;
    value
        .get("epoch")
        .and_then(json_u64)
        .ok_or_else(|| wrong_shape(url, status, text, "has no non-negative integer `epoch`"))
}

/// The `room-lmids` reply: `{lmids: {clientID: n}}`, unwrapped.
pub fn lmids_reply(
    url: &str,
    status: u16,
    text: &str,
) -> Result<BTreeMap<String, u64>, AuthorityError> {
    let value = success_json(url, status, text)?;
    let map = value
        .get("lmids")
        .and_then(Json::as_object)
        .ok_or_else(|| wrong_shape(url, status, text, "has no `lmids` object"))?;
    let mut out = BTreeMap::new();
    for (client, lmid) in map {
        let n = json_u64(lmid)
            .ok_or_else(|| wrong_shape(url, status, text, "has a non-integer lmid"))?;
        out.insert(client.clone(), n);
    }
    Ok(out)
}

/// The `apply-row-change-txn` reply (the table in the module docs).
pub fn apply_reply(url: &str, status: u16, text: &str) -> Result<ApplyResult, AuthorityError> {
    if status == 409 {
        return refusal(text).ok_or_else(|| {
            AuthorityError::Fatal(format!(
                "POST {url}: malformed 409 refusal (neither conflict nor fenced): {}",
                snippet(text)
            ))
        });
    }
    if status == 500
        && text
            .to_ascii_lowercase()
            .contains("batch identity mismatch")
    {
        return Err(AuthorityError::Fatal(format!(
            "POST {url}: 500 {}",
            snippet(text)
        )));
    }
    let value = success_json(url, status, text)?;
    applied(&value)
        .ok_or_else(|| wrong_shape(url, status, text, "is not {applied?: bool, cv?: number}"))
}

/// A 2xx reply's JSON; a non-2xx status or a body that is not JSON is retryable.
fn success_json(url: &str, status: u16, text: &str) -> Result<Json, AuthorityError> {
    if !(200..300).contains(&status) {
        return Err(AuthorityError::Retryable(format!(
            "POST {url}: {status} {}",
            snippet(text)
        )));
    }
    serde_json::from_str(text).map_err(|e| {
        AuthorityError::Retryable(format!(
            "POST {url}: {status} body is not JSON ({e}): {}",
            snippet(text)
        ))
    })
}

fn wrong_shape(url: &str, status: u16, text: &str, what: &str) -> AuthorityError {
    AuthorityError::Fatal(format!(
        "POST {url}: {status} body {what}: {}",
        snippet(text)
    ))
}

/// `{applied?: bool, cv?: number|null}` → `Ok`; `None` on any other shape.
fn applied(value: &Json) -> Option<ApplyResult> {
    let obj = value.as_object()?;
    let applied = match obj.get("applied") {
        None => true,
        Some(v) => v.as_bool()?,
    };
    let cv = match obj.get("cv") {
        None | Some(Json::Null) => None,
        Some(v) => Some(v.as_f64()?),
    };
    Some(ApplyResult::Ok { applied, cv })
}

/// A 409 body → `Conflict` / `Fenced`; `None` when it is neither.
fn refusal(text: &str) -> Option<ApplyResult> {
    let value: Json = serde_json::from_str(text).ok()?;
    let obj = value.as_object()?;
    match obj.get("error")?.as_str()? {
        "conflict" => {
            let conflicts = obj.get("conflicts")?.as_array()?;
            let conflicts_json = serde_json::to_string(conflicts).ok()?;
            Some(ApplyResult::Conflict { conflicts_json })
        }
        // `currentEpoch` is informational: a fence is honoured even if it is garbled.
        "fenced" => Some(ApplyResult::Fenced {
            current_epoch: obj.get("currentEpoch").and_then(json_u64),
        }),
        _ => None,
    }
}

/// A non-negative integer (an integral float such as `4.0` included).
fn json_u64(v: &Json) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return Some(n);
    }
    let f = v.as_f64()?;
    // `as` saturates: in range and integral exactly when the round trip is exact.
    let n = f as u64;
    ((0.0..18_446_744_073_709_551_616.0).contains(&f) && n as f64 == f).then_some(n)
}

/// rindled's `/materialize` body: `{"ast":…,"leaseTtlMs"?:…}` (in the member order of
/// the published room's Node shell).
pub fn materialize_body(footprint_ast: &JsValue, lease_ttl_ms: Option<u64>) -> String {
    let mut body = String::from("{\"ast\":");
    footprint_ast.write_js(&mut body);
    if let Some(ttl) = lease_ttl_ms {
        body.push_str(",\"leaseTtlMs\":");
        write_f64(&mut body, ttl as f64);
    }
    body.push('}');
    body
}

/// Classifies rindled's `/materialize` reply: the lease token, or the error the host
/// logs before it retries the mint (the texts of the published room's Node shell).
pub fn lease_reply(status: u16, text: &str) -> Result<String, MintError> {
    if !(200..300).contains(&status) {
        return Err(MintError::Status {
            status,
            body: String::from(text),
        });
    }
    let out = JsValue::parse(text).map_err(|e| MintError::InvalidJson(format!("{e}")))?;
    match out.get("leaseToken") {
        Some(JsValue::Str(t)) => Ok(t.clone()),
        _ => Err(MintError::NoLeaseToken),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec;

    const URL: &str = "http://a/apply";

    fn apply(status: u16, text: &str) -> Result<AuthorityReply, AuthorityError> {
        authority_reply(AuthorityCall::Apply, URL, status, text)
    }

    #[test]
    fn apply_replies_map_to_results() {
        assert_eq!(
            apply(200, r#"{"applied":true,"cv":7}"#),
            Ok(AuthorityReply::Applied(ApplyResult::Ok {
                applied: true,
                cv: Some(7.0)
            }))
        );
        assert_eq!(
            apply(200, "{}"),
            Ok(AuthorityReply::Applied(ApplyResult::Ok {
                applied: true,
                cv: None
            }))
        );
        assert_eq!(
            apply(409, r#"{"error":"fenced","currentEpoch":4.0}"#),
            Ok(AuthorityReply::Applied(ApplyResult::Fenced {
                current_epoch: Some(4)
            }))
        );
        assert_eq!(
            apply(409, r#"{"error":"conflict","conflicts":[{"table":"t"}]}"#),
            Ok(AuthorityReply::Applied(ApplyResult::Conflict {
                conflicts_json: String::from(r#"[{"table":"t"}]"#)
            }))
        );
    }

    #[test]
    fn apply_failures_are_fatal_or_retryable_by_cause() {
        assert!(matches!(
            apply(409, r#"{"error":"huh"}"#),
            Err(AuthorityError::Fatal(_))
        ));
        assert!(matches!(
            apply(500, "Batch Identity Mismatch: same id"),
            Err(AuthorityError::Fatal(_))
        ));
        assert!(matches!(
            apply(200, r#"{"applied":"yes"}"#),
            Err(AuthorityError::Fatal(_))
        ));
        assert_eq!(
            apply(503, " down "),
            Err(AuthorityError::Retryable(String::from(
                "POST http://a/apply: 503 down"
            )))
        );
        assert!(matches!(
            apply(200, "<html>"),
            Err(AuthorityError::Retryable(_))
        ));
        // 409 and 500 mean nothing special to the other endpoints.
        let claim409 = authority_reply(AuthorityCall::Claim, URL, 409, r#"{"error":"fenced"}"#);
        assert!(matches!(claim409, Err(AuthorityError::Retryable(_))));
    }

    #[test]
    fn claim_and_lmids_replies_need_their_shape() {
        let claim = |t| authority_reply(AuthorityCall::Claim, URL, 200, t);
        assert_eq!(claim(r#"{"epoch":3}"#), Ok(AuthorityReply::Claimed(3)));
        assert!(matches!(
            claim(r#"{"epoch":-1}"#),
            Err(AuthorityError::Fatal(_))
        ));
        let lmids = |t| authority_reply(AuthorityCall::Lmids, URL, 200, t);
        let mut want = BTreeMap::new();
        want.insert(String::from("c1"), 2);
        assert_eq!(
            lmids(r#"{"lmids":{"c1":2}}"#),
            Ok(AuthorityReply::Lmids(want))
        );
        assert!(matches!(
            lmids(r#"{"lmids":{"c1":"x"}}"#),
            Err(AuthorityError::Fatal(_))
        ));
        assert!(matches!(lmids("[]"), Err(AuthorityError::Fatal(_))));
    }

    #[test]
    fn bodies_keep_the_published_member_order() {
        assert_eq!(claim_body("doc/1"), r#"{"doc":"doc/1"}"#);
        let clients = vec![String::from("c1"), String::from("c2")];
        assert_eq!(
            lmids_body("doc/1", &clients),
            r#"{"doc":"doc/1","clients":["c1","c2"]}"#
        );
        let ast = JsValue::parse(r#"{"table":"issue"}"#).unwrap();
        assert_eq!(
            materialize_body(&ast, Some(60_000)),
            r#"{"ast":{"table":"issue"},"leaseTtlMs":60000}"#
        );
        assert_eq!(materialize_body(&ast, None), r#"{"ast":{"table":"issue"}}"#);
    }

    #[test]
    fn long_bodies_are_quoted_in_part() {
        let long = "é".repeat(400);
        let s = snippet(&long);
        assert!(s.ends_with("… (800 bytes)"), "{s}");
        assert!(s.len() < 530);
    }

    #[test]
    fn classified_results_cross_a_language_boundary_unchanged() {
        use crate::host::json::{authority_result_from_json, authority_result_json};
        let cases = [
            apply(200, r#"{"applied":false,"cv":7.5}"#),
            apply(200, "{}"),
            apply(409, r#"{"error":"fenced"}"#),
            apply(409, r#"{"error":"fenced","currentEpoch":9}"#),
            apply(
                409,
                r#"{"error":"conflict","conflicts":[{"pk":[1],"current":null}]}"#,
            ),
            apply(503, "down \"now\""),
            apply(409, "{}"),
            authority_reply(AuthorityCall::Claim, URL, 200, r#"{"epoch":12}"#),
            authority_reply(
                AuthorityCall::Lmids,
                URL,
                200,
                r#"{"lmids":{"a\"b":1,"c":0}}"#,
            ),
        ];
        for case in cases {
            let json = authority_result_json(&case);
            assert_eq!(authority_result_from_json(&json), case, "{json}");
        }
    }

    #[test]
    fn lease_replies() {
        assert_eq!(
            lease_reply(200, r#"{"leaseToken":"t"}"#),
            Ok(String::from("t"))
        );
        assert_eq!(
            lease_reply(500, "boom").map_err(|e| e.to_string()),
            Err(String::from("upstream /materialize failed: 500 boom"))
        );
        assert_eq!(
            lease_reply(200, "{}").map_err(|e| e.to_string()),
            Err(String::from("upstream /materialize returned no leaseToken"))
        );
        assert!(lease_reply(200, "nope")
            .unwrap_err()
            .to_string()
            .contains("invalid JSON"));
    }
}

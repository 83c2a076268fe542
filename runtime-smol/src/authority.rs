//! The HTTP write authority (seed 000 `httpAuthority`, authority.md §4).
//!
//! Interface pinned by the lead:
//! - `pub struct HttpAuthority` with `pub fn new(cfg: &AuthorityConfig) -> Result<HttpAuthority, String>`
//! - `pub enum ApplyResult { Ok { applied: bool, cv: Option<f64> }, Conflict { conflicts_json: String }, Fenced { current_epoch: Option<u64> } }`
//! - `pub enum AuthorityError { Retryable(String), Fatal(String) }`
//! - `pub async fn claim_epoch(&self, doc: &str) -> Result<u64, AuthorityError>`
//! - `pub async fn lmids(&self, doc: &str, clients: &[String]) -> Result<BTreeMap<String, u64>, AuthorityError>`
//! - `pub async fn apply_row_change_txn(&self, body: &str) -> Result<ApplyResult, AuthorityError>`
//!
//! # Response mapping (authority.md §4.4)
//!
//! `apply_row_change_txn`:
//!
//! | HTTP | body | result |
//! |---|---|---|
//! | 2xx | `{applied?, cv?}` | [`ApplyResult::Ok`] (`applied` absent ⇒ `true`; `cv` absent/null ⇒ `None`) |
//! | 409 | `{"error":"conflict","conflicts":[…]}` | [`ApplyResult::Conflict`] (the array, compact JSON) |
//! | 409 | `{"error":"fenced","currentEpoch"?}` | [`ApplyResult::Fenced`] |
//! | 409 | anything else | [`AuthorityError::Fatal`] (a malformed refusal) |
//! | 500 | text mentioning `batch identity mismatch` (any case) | [`AuthorityError::Fatal`] |
//! | other non-2xx, network error, timeout | — | [`AuthorityError::Retryable`] |
//!
//! `claim_epoch` / `lmids`: 2xx with the documented shape ⇒ the value; any non-2xx,
//! network error or timeout ⇒ `Retryable`.
//!
//! For all three, a 2xx whose body is not JSON at all (an intermediary's page, a
//! truncated reply) is `Retryable` — a same-body retry is always safe, and dedup absorbs
//! a batch that did land; a 2xx whose body is JSON of the wrong shape is `Fatal` — the
//! authority is speaking another contract and retrying cannot help.
//!
//! Note (authority.md §4.4, operational note): a 403 from a mis-keyed flush credential
//! is "any other non-2xx" and therefore retries forever at the 2 s cap under
//! [`with_net_retry`]; the log line each retry carries the status and the authority's
//! message so the cause is visible.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::time::Duration;

use serde_json::Value;
use smol::Timer;

use crate::config::AuthorityConfig;
use crate::http;

/// The default per-request timeout (connect + send + receive).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// [`with_net_retry`]'s first backoff.
pub const RETRY_MIN: Duration = Duration::from_millis(100);

/// [`with_net_retry`]'s backoff cap.
pub const RETRY_MAX: Duration = Duration::from_secs(2);

/// How much of an error body is quoted in an error message.
const BODY_SNIPPET: usize = 512;

/// The result and error types are the host's (room-core): a driver hands them to the
/// host as they are.
pub use rindle_room_core::host::{ApplyResult, AuthorityError};

/// The HTTP authority client: the API server's `apply-row-change-txn`,
/// `claim-room-epoch` and `room-lmids` endpoints.
///
/// Every request is a `POST` with `content-type: application/json` plus the configured
/// extra headers (the flush credential), on a fresh connection, bounded by
/// [`HttpAuthority::timeout`]. Calls are independent; the type is cheap to share by
/// reference across tasks.
#[derive(Clone)]
pub struct HttpAuthority {
    apply_url: String,
    claim_url: String,
    lmids_url: String,
    headers: Vec<(String, String)>,
    timeout: Duration,
}

impl fmt::Debug for HttpAuthority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values are credentials: names only.
        let names: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("HttpAuthority")
            .field("apply_url", &self.apply_url)
            .field("claim_url", &self.claim_url)
            .field("lmids_url", &self.lmids_url)
            .field("header_names", &names)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl HttpAuthority {
    /// Build from config, validating the three URLs (`http://host:port/path` only — see
    /// [`http::parse_url`]) and the extra headers (token names; no CR/LF/NUL in values;
    /// `content-type`, `content-length`, `transfer-encoding` and `connection` are refused
    /// because the client sets them itself). The timeout is [`DEFAULT_TIMEOUT`].
    pub fn new(cfg: &AuthorityConfig) -> Result<HttpAuthority, String> {
        for (field, url) in [
            ("apply_url", &cfg.apply_url),
            ("claim_url", &cfg.claim_url),
            ("lmids_url", &cfg.lmids_url),
        ] {
            http::parse_url(url).map_err(|e| format!("authority.{field}: {e}"))?;
        }
        let mut headers = Vec::with_capacity(cfg.headers.len() + 1);
        for (name, value) in &cfg.headers {
            let valid_name = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
            if !valid_name {
                return Err(format!("authority.headers: invalid header name {name:?}"));
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(format!(
                    "authority.headers: header {name} has CR/LF/NUL in its value"
                ));
            }
            let reserved = [
                "content-type",
                "content-length",
                "transfer-encoding",
                "connection",
            ];
            if reserved.iter().any(|r| name.eq_ignore_ascii_case(r)) {
                return Err(format!(
                    "authority.headers: {name} is set by the authority client and cannot be configured"
                ));
            }
            headers.push((name.clone(), value.clone()));
        }
        headers.push((
            String::from("content-type"),
            String::from("application/json"),
        ));
        Ok(HttpAuthority {
            apply_url: cfg.apply_url.clone(),
            claim_url: cfg.claim_url.clone(),
            lmids_url: cfg.lmids_url.clone(),
            headers,
            timeout: DEFAULT_TIMEOUT,
        })
    }

    /// Replace the per-request timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> HttpAuthority {
        self.timeout = timeout;
        self
    }

    /// The per-request timeout (connect + send + receive).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Claim (bump) the placement epoch for `doc`: `POST {doc}` → `{epoch}`.
    ///
    /// The reference shell calls this once per process with no retry wrapper; wrapping
    /// it in [`with_net_retry`] is the caller's choice.
    pub async fn claim_epoch(&self, doc: &str) -> Result<u64, AuthorityError> {
        let body = serde_json::json!({ "doc": doc }).to_string();
        let value = self.post_for_json(&self.claim_url, &body).await?;
        value.get("epoch").and_then(json_u64).ok_or_else(|| {
            AuthorityError::Fatal(format!(
                "POST {}: 200 body has no non-negative integer `epoch`: {}",
                self.claim_url,
                snippet(&value.to_string())
            ))
        })
    }

    /// The authority's durable lmid per client: `POST {doc, clients}` →
    /// `{lmids: {clientID: n}}`, unwrapped. Clients the authority omits are absent from
    /// the map (treat as 0 = none).
    pub async fn lmids(
        &self,
        doc: &str,
        clients: &[String],
    ) -> Result<BTreeMap<String, u64>, AuthorityError> {
        let body = serde_json::json!({ "doc": doc, "clients": clients }).to_string();
        let value = self.post_for_json(&self.lmids_url, &body).await?;
        let bad = |why: &str| {
            AuthorityError::Fatal(format!(
                "POST {}: 200 body {why}: {}",
                self.lmids_url,
                snippet(&value.to_string())
            ))
        };
        let map = value
            .get("lmids")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("has no `lmids` object"))?;
        let mut out = BTreeMap::new();
        for (client, lmid) in map {
            let n = json_u64(lmid).ok_or_else(|| bad("has a non-integer lmid"))?;
            out.insert(client.clone(), n);
        }
        Ok(out)
    }

    /// Apply one flush batch. `body` is the exact journaled `/apply-row-change-txn` body
    /// string and is sent verbatim (never re-serialized). See the module docs for the
    /// response mapping.
    pub async fn apply_row_change_txn(&self, body: &str) -> Result<ApplyResult, AuthorityError> {
        let url = &self.apply_url;
        let resp = self.post(url, body).await?;
        let status = resp.status;
        let text = resp.body_text();
        if resp.is_success() {
            let value = parse_success_json(url, status, &text)?;
            return ok_result(&value).ok_or_else(|| {
                AuthorityError::Fatal(format!(
                    "POST {url}: {status} body is not {{applied?: bool, cv?: number}}: {}",
                    snippet(&text)
                ))
            });
        }
        if status == 409 {
            return refusal(&text).ok_or_else(|| {
                AuthorityError::Fatal(format!(
                    "POST {url}: malformed 409 refusal (neither conflict nor fenced): {}",
                    snippet(&text)
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
                snippet(&text)
            )));
        }
        Err(AuthorityError::Retryable(format!(
            "POST {url}: {status} {}",
            snippet(&text)
        )))
    }

    async fn post(&self, url: &str, body: &str) -> Result<http::Response, AuthorityError> {
        http::request("POST", url, &self.headers, body.as_bytes(), self.timeout)
            .await
            .map_err(|e| AuthorityError::Retryable(e.to_string()))
    }

    /// POST and demand a 2xx with a JSON body (non-2xx / non-JSON ⇒ Retryable).
    async fn post_for_json(&self, url: &str, body: &str) -> Result<Value, AuthorityError> {
        let resp = self.post(url, body).await?;
        let text = resp.body_text();
        if !resp.is_success() {
            return Err(AuthorityError::Retryable(format!(
                "POST {url}: {} {}",
                resp.status,
                snippet(&text)
            )));
        }
        parse_success_json(url, resp.status, &text)
    }
}

fn parse_success_json(url: &str, status: u16, text: &str) -> Result<Value, AuthorityError> {
    serde_json::from_str(text).map_err(|e| {
        AuthorityError::Retryable(format!(
            "POST {url}: {status} body is not JSON ({e}): {}",
            snippet(text)
        ))
    })
}

/// `{applied?: bool, cv?: number|null}` → `Ok`; `None` on any other shape.
fn ok_result(value: &Value) -> Option<ApplyResult> {
    let obj = value.as_object()?;
    let applied = match obj.get("applied") {
        None => true,
        Some(v) => v.as_bool()?,
    };
    let cv = match obj.get("cv") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_f64()?),
    };
    Some(ApplyResult::Ok { applied, cv })
}

/// A 409 body → `Conflict` / `Fenced`; `None` when it is neither.
fn refusal(text: &str) -> Option<ApplyResult> {
    let value: Value = serde_json::from_str(text).ok()?;
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
fn json_u64(v: &Value) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return Some(n);
    }
    let f = v.as_f64()?;
    (f >= 0.0 && f.fract() == 0.0 && f < 18_446_744_073_709_551_616.0).then_some(f as u64)
}

fn snippet(text: &str) -> String {
    let text = text.trim();
    if text.len() <= BODY_SNIPPET {
        return text.to_owned();
    }
    let mut end = BODY_SNIPPET;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// Seed 002's `withNetRetry`: run `op` until it settles.
///
/// - `Ok` ⇒ returned.
/// - [`AuthorityError::Fatal`] ⇒ returned at once, never retried.
/// - [`AuthorityError::Retryable`] ⇒ if `stop()` says quit, that error is returned;
///   otherwise `log` is told (`authority call failed (retrying in Nms): …`), and after a
///   backoff of [`RETRY_MIN`] doubling to [`RETRY_MAX`] — during which `stop()` is polled
///   every ≤ 100 ms, returning the error if it turns true — `op` runs again (for a flush:
///   the same journaled bytes, so dedup absorbs a retry that had landed).
pub async fn with_net_retry<T, F, Fut>(
    mut op: F,
    stop: impl Fn() -> bool,
    log: impl Fn(&str),
) -> Result<T, AuthorityError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, AuthorityError>>,
{
    let mut delay = RETRY_MIN;
    loop {
        let err = match op().await {
            Ok(v) => return Ok(v),
            Err(e @ AuthorityError::Fatal(_)) => return Err(e),
            Err(e) => e,
        };
        if stop() {
            return Err(err);
        }
        log(&format!(
            "authority call failed (retrying in {}ms): {err}",
            delay.as_millis()
        ));
        let mut left = delay;
        while !left.is_zero() {
            let slice = left.min(Duration::from_millis(100));
            Timer::after(slice).await;
            left -= slice;
            if stop() {
                return Err(err);
            }
        }
        delay = (delay * 2).min(RETRY_MAX);
    }
}

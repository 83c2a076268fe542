//! The room-boot wire (`docs/design/authority.md`, "Scope specs and the commit gate";
//! `docs/fleet.md`, "Booting a room"): the request a box sends for a
//! doc it does not serve, what the answer grants, and what each failure means for the
//! sockets waiting on the boot.
//!
//! | reply | result | waiting sockets |
//! |---|---|---|
//! | 2xx with a grant's shape | [`BootGrant`] | served by the booted room |
//! | 2xx, not JSON | [`BootFailure::Retryable`] | wait (backoff) |
//! | 2xx, JSON of another shape | [`BootFailure::Invalid`] | close 1013 `room boot failed` |
//! | 404 | [`BootFailure::NoRoom`] | close 4404 `no room for doc` |
//! | 403 | [`BootFailure::Refused`] (a configuration fault: logged as an error) | close 1013 `room boot failed` |
//! | 5xx, 429, 408, no reply | [`BootFailure::Retryable`] | wait: [`boot_backoff_ms`] until the boot timeout, then 1013 `room boot timed out` |
//! | any other status | [`BootFailure::Invalid`] | close 1013 `room boot failed` |

use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use serde_json::Value as Json;

use crate::json::write::write_str;
use crate::texts::snippet;

/// The default route path of room-boot on the API server.
pub const DEFAULT_BOOT_PATH: &str = "/api/rindle/room-boot";

/// First retry delay of a boot, ms; it doubles per attempt up to [`BOOT_BACKOFF_MAX_MS`].
pub const BOOT_BACKOFF_START_MS: u64 = 100;

/// Largest retry delay of a boot, ms.
pub const BOOT_BACKOFF_MAX_MS: u64 = 2_000;

/// Close code for a doc the API server has no room for.
pub const CLOSE_NO_ROOM: (u16, &str) = (4404, "no room for doc");
/// Close code for a boot that failed for good.
pub const CLOSE_BOOT_FAILED: (u16, &str) = (1013, "room boot failed");
/// Close code for a boot that did not finish within the boot timeout.
pub const CLOSE_BOOT_TIMED_OUT: (u16, &str) = (1013, "room boot timed out");
/// Close code for a boot refused because the box is over its memory budget.
pub const CLOSE_BOX_BUDGET: (u16, &str) = (1013, "box memory budget exceeded");

/// The subprotocol a room offers upstream with room-boot's affinity ticket.
pub const UPSTREAM_SUBPROTOCOL: &str = "rindle.v1";

/// The `Sec-WebSocket-Protocol` value that offers an affinity `ticket` upstream: an
/// edge selects [`UPSTREAM_SUBPROTOCOL`] and routes by the ticket.
pub fn affinity_offer(ticket: &str) -> String {
    format!("{UPSTREAM_SUBPROTOCOL}, {ticket}")
}

/// Whether a refused upstream handshake means "connect again at once without the
/// ticket, and never offer it again": the ticket was offered and the upstream selected
/// no subprotocol (rindled itself takes no tickets; only an edge does).
pub fn drop_ticket_after(offered: bool, no_subprotocol_selected: bool) -> bool {
    offered && no_subprotocol_selected
}

/// The delay before retry `attempt` (1 = the first retry) of a failed boot call.
pub fn boot_backoff_ms(attempt: u32) -> u64 {
    let shift = attempt.saturating_sub(1).min(16);
    (BOOT_BACKOFF_START_MS << shift).min(BOOT_BACKOFF_MAX_MS)
}

/// The room-boot request body: `{"doc":…,"instance":…}`.
pub fn boot_body(doc: &str, instance: &str) -> String {
    let mut s = String::from("{\"doc\":");
    write_str(&mut s, doc);
    s.push_str(",\"instance\":");
    write_str(&mut s, instance);
    s.push('}');
    s
}

/// The `Authorization` header value of a boot call.
pub fn boot_authorization(shell_secret: &str) -> String {
    format!("Bearer {shell_secret}")
}

/// Where a booted room flushes: absolute URLs and the headers every call carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlushEndpoints {
    /// `apply-row-change-txn`.
    pub apply: String,
    /// `claim-room-epoch`.
    pub claim: String,
    /// `room-lmids`.
    pub lmids: String,
    /// Sent verbatim on every flush call (the `rfc1` credential by default).
    pub headers: Vec<(String, String)>,
}

/// What a successful room-boot grants one placement of a room.
#[derive(Clone, Debug, PartialEq)]
pub struct BootGrant {
    /// The placement epoch the boot claimed (the room does not claim again).
    pub epoch: u64,
    /// The daemon lease for the doc's footprint (instead of `POST /materialize`).
    pub upstream_lease_token: String,
    /// rindled's websocket endpoint for this room (`None`: the box's default).
    pub upstream_ws_endpoint: Option<String>,
    /// A follower placement ticket to offer as a websocket subprotocol upstream.
    pub upstream_affinity: Option<String>,
    /// Scope specs: the gated (v2) write plane; `None`: the v1 plane.
    pub scopes: Option<Json>,
    /// The flush endpoints, resolved against the boot URL's origin.
    pub flush: FlushEndpoints,
}

/// Why a boot call did not grant a room.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BootFailure {
    /// 404: the API server has no room profile for the doc.
    NoRoom(String),
    /// 403: the shell secret was refused (a configuration fault; not retried).
    Refused(String),
    /// Worth retrying with backoff: no reply, 5xx, 408, 429, or a 2xx that is not JSON.
    Retryable(String),
    /// The API server answered in a way no retry fixes.
    Invalid(String),
}

impl BootFailure {
    /// Whether the boot should be tried again (after [`boot_backoff_ms`]).
    pub fn is_retryable(&self) -> bool {
        matches!(self, BootFailure::Retryable(_))
    }

    /// The close for sockets waiting on a boot that failed this way for good.
    pub fn close(&self) -> (u16, &'static str) {
        match self {
            BootFailure::NoRoom(_) => CLOSE_NO_ROOM,
            BootFailure::Retryable(_) => CLOSE_BOOT_TIMED_OUT,
            BootFailure::Refused(_) | BootFailure::Invalid(_) => CLOSE_BOOT_FAILED,
        }
    }

    /// The message, for the log.
    pub fn message(&self) -> &str {
        match self {
            BootFailure::NoRoom(m)
            | BootFailure::Refused(m)
            | BootFailure::Retryable(m)
            | BootFailure::Invalid(m) => m,
        }
    }
}

impl fmt::Display for BootFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// The origin (`scheme://authority`) of an absolute URL.
fn origin(url: &str) -> Option<&str> {
    let scheme_end = url.find("://")?;
    let rest = &url[scheme_end + 3..];
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    (end > 0).then(|| &url[..scheme_end + 3 + end])
}

/// Resolves a flush route against the boot URL: a root-relative path joins the boot
/// URL's origin; an absolute `http(s)://` URL is taken as is.
fn resolve(boot_url: &str, route: &str) -> Result<String, GrantError> {
    if route.starts_with("http://") || route.starts_with("https://") {
        return Ok(route.to_owned());
    }
    if !route.starts_with('/') {
        return Err(GrantError::RelativeRoute(route.to_owned()));
    }
    let origin = origin(boot_url).ok_or_else(|| GrantError::NoOrigin(boot_url.to_owned()))?;
    Ok(format!("{origin}{route}"))
}

/// The largest placement epoch a grant may carry (JavaScript's largest safe integer).
pub const MAX_SAFE_EPOCH: u64 = (1 << 53) - 1;

/// Why a 2xx body is not a room-boot grant.
#[derive(Debug)]
enum GrantError {
    /// A member is missing or of the wrong kind.
    Shape(String),
    /// A flush route is neither root-relative nor an absolute URL.
    RelativeRoute(String),
    /// The boot URL has no origin to join a root-relative route to.
    NoOrigin(String),
}

impl From<&str> for GrantError {
    fn from(message: &str) -> GrantError {
        GrantError::Shape(message.to_owned())
    }
}

impl From<String> for GrantError {
    fn from(message: String) -> GrantError {
        GrantError::Shape(message)
    }
}

impl core::fmt::Display for GrantError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            GrantError::Shape(m) => f.write_str(m),
            GrantError::RelativeRoute(route) => {
                write!(
                    f,
                    "flush url `{route}` is neither root-relative nor absolute"
                )
            }
            GrantError::NoOrigin(url) => write!(f, "boot url `{url}` has no origin"),
        }
    }
}

/// Reads a 2xx body's shape.
fn grant(boot_url: &str, body: &Json) -> Result<BootGrant, GrantError> {
    let obj = body.as_object().ok_or("the body is not a JSON object")?;
    // A placement epoch is a claim the API server counts up from 1: zero, a fraction
    // or anything past 2^53 − 1 (which JavaScript cannot count past) is no grant.
    let epoch = obj
        .get("epoch")
        .and_then(|e| {
            e.as_u64().or_else(|| {
                e.as_f64()
                    .filter(|f| crate::value::is_integral(*f) && *f >= 0.0)
                    .map(|f| f as u64)
            })
        })
        .filter(|&e| (1..=MAX_SAFE_EPOCH).contains(&e))
        .ok_or("`epoch` is not a positive safe integer (1 to 2^53 − 1)")?;
    let lease = obj
        .get("upstreamLeaseToken")
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("`upstreamLeaseToken` is not a non-empty string")?;
    let opt_str = |name: &str| -> Result<Option<String>, GrantError> {
        match obj.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("`{name}` is not a string").into()),
        }
    };
    let scopes = match obj.get("scopes") {
        None | Some(Json::Null) => None,
        Some(s @ Json::Array(_)) => Some(s.clone()),
        Some(_) => return Err("`scopes` is not an array".into()),
    };
    let flush = obj
        .get("flush")
        .and_then(Json::as_object)
        .ok_or("`flush` is not an object")?;
    let urls = flush
        .get("urls")
        .and_then(Json::as_object)
        .ok_or("`flush.urls` is not an object")?;
    let url = |name: &str| -> Result<String, GrantError> {
        let route = urls
            .get(name)
            .and_then(Json::as_str)
            .ok_or_else(|| format!("`flush.urls.{name}` is not a string"))?;
        resolve(boot_url, route)
    };
    let mut headers = Vec::new();
    match flush.get("headers") {
        None | Some(Json::Null) => {}
        Some(Json::Object(h)) => {
            for (k, v) in h {
                let v = v
                    .as_str()
                    .ok_or_else(|| format!("`flush.headers.{k}` is not a string"))?;
                headers.push((k.clone(), v.to_owned()));
            }
        }
        Some(_) => return Err("`flush.headers` is not an object".into()),
    }
    Ok(BootGrant {
        epoch,
        upstream_lease_token: lease.to_owned(),
        upstream_ws_endpoint: opt_str("upstreamWsEndpoint")?,
        upstream_affinity: opt_str("upstreamAffinity")?,
        scopes,
        flush: FlushEndpoints {
            apply: url("apply")?,
            claim: url("claim")?,
            lmids: url("lmids")?,
            headers,
        },
    })
}

/// Classifies the reply to `POST <boot_url>` (see the module table). `doc` names the
/// room in messages; the body is quoted up to [`REPLY_SNIPPET_BYTES`](crate::texts::REPLY_SNIPPET_BYTES).
pub fn boot_reply(
    boot_url: &str,
    doc: &str,
    status: u16,
    body: &str,
) -> Result<BootGrant, BootFailure> {
    let quote = || snippet(body);
    match status {
        200..=299 => {
            let json: Json = serde_json::from_str(body).map_err(|_| {
                BootFailure::Retryable(format!(
                    "POST {boot_url} for {doc}: HTTP {status} with a body that is not JSON: {}",
                    quote()
                ))
            })?;
            grant(boot_url, &json).map_err(|e| {
                BootFailure::Invalid(format!(
                    "POST {boot_url} for {doc}: the API server's answer is not a room-boot \
                     grant: {e}: {}",
                    quote()
                ))
            })
        }
        404 => Err(BootFailure::NoRoom(format!(
            "POST {boot_url}: no room for doc {doc}: {}",
            quote()
        ))),
        403 => Err(BootFailure::Refused(format!(
            "POST {boot_url} for {doc}: HTTP 403 — the API server refused the shell secret \
             (check `fleet.shell_secret` / RINDLE_ROOM_SHELL_SECRET against the API server's \
             realtime.shellSecret): {}",
            quote()
        ))),
        408 | 429 | 500..=599 => Err(BootFailure::Retryable(format!(
            "POST {boot_url} for {doc}: HTTP {status}: {}",
            quote()
        ))),
        _ => Err(BootFailure::Invalid(format!(
            "POST {boot_url} for {doc}: HTTP {status}: {}",
            quote()
        ))),
    }
}

#[cfg(test)]
mod tests;

//! Who gets a room booted, and when: the box's admission rules, with no I/O and time as
//! an argument.
//!
//! - **The lease gate** ([`gate`]): a connection to a document the box does not serve
//!   yet costs nothing until it has shown a lease token whose signature verifies for
//!   that document with the box's key ring. Frames before it (`init`, the lmid
//!   subscribe) are held, at most [`GATE_MAX_FRAMES`] of them and [`GATE_MAX_BYTES`]
//!   bytes, then replayed to the room. A stranger without a token never causes a
//!   room-boot call, a room, or a journal directory.
//! - **Boots in flight** ([`BootAdmission`]): at most `max_in_flight` room-boot calls at
//!   once; more wait in a queue (at most `max_queued`) for `queue_wait_ms`, then are
//!   refused with 1013 and a retry hint.
//! - **Refused documents**: a document the API server answered 404 (no room) or 403
//!   for is refused from a cache for `refused_ttl_ms` (at most `max_refused` entries,
//!   the oldest dropped first) instead of being asked again.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::json::tree::JsValue;
use crate::token;

use super::boot_wire::BootFailure;

/// The most frames a connection may send before its first verified lease token.
pub const GATE_MAX_FRAMES: usize = 8;
/// The most bytes those frames may hold together.
pub const GATE_MAX_BYTES: usize = 64 * 1024;

/// What a connection to a document not served yet may do next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Route it: a lease token for the document verified (boot the room if needed).
    Route,
    /// Read another frame (none verified yet, within the limits).
    NeedMore,
    /// Close it with this code and reason; nothing was booted.
    Refuse(u16, String),
}

/// Judges the frames a connection has sent so far to `doc`'s box, which does not serve
/// `doc` yet. The first `subscribe` carrying a `leaseToken` decides: verified for `doc`
/// with `keys` at `now_ms`, the connection is routed; refused, it is closed (1008, the
/// token's refusal). Frames that carry no token wait, within [`GATE_MAX_FRAMES`] and
/// [`GATE_MAX_BYTES`].
pub fn gate(doc: &str, shown: &[String], keys: &[(String, String)], now_ms: u64) -> Gate {
    let mut bytes = 0usize;
    for frame in shown {
        bytes = bytes.saturating_add(frame.len());
        if bytes > GATE_MAX_BYTES {
            break;
        }
        let Some(lease) = lease_token(frame) else {
            continue;
        };
        return match token::verify(&lease, doc, keys, now_ms as f64) {
            Ok(_) => Gate::Route,
            Err(e) => Gate::Refuse(1008, format!("{e}")),
        };
    }
    if shown.len() >= GATE_MAX_FRAMES || bytes > GATE_MAX_BYTES {
        return Gate::Refuse(
            1008,
            format!(
                "no lease token in the first {GATE_MAX_FRAMES} frames ({GATE_MAX_BYTES} bytes): \
                 a room boots for a verified lease subscribe only"
            ),
        );
    }
    Gate::NeedMore
}

/// The `leaseToken` of a `subscribe` frame, if it is one.
fn lease_token(frame: &str) -> Option<String> {
    let v = JsValue::parse(frame).ok()?;
    if v.get("t").and_then(JsValue::as_str) != Some("subscribe") {
        return None;
    }
    v.get("leaseToken")
        .and_then(JsValue::as_str)
        .map(String::from)
}

/// The limits of [`BootAdmission`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootLimits {
    /// Room-boot calls at once.
    pub max_in_flight: usize,
    /// Boots waiting for a slot.
    pub max_queued: usize,
    /// How long a boot waits for a slot (ms).
    pub queue_wait_ms: u64,
    /// How long a refused document stays refused without asking again (ms).
    pub refused_ttl_ms: u64,
    /// Refused documents remembered.
    pub max_refused: usize,
}

impl Default for BootLimits {
    fn default() -> BootLimits {
        BootLimits {
            max_in_flight: 16,
            max_queued: 1024,
            queue_wait_ms: 10_000,
            refused_ttl_ms: 60_000,
            max_refused: 10_000,
        }
    }
}

/// What [`BootAdmission::request`] decides for a document's boot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BootAdmit {
    /// Call room-boot now (a slot is taken: report the end with
    /// [`BootAdmission::finished`]).
    Start,
    /// Wait: [`BootAdmission::finished`] or [`BootAdmission::expire`] names it later.
    Queued,
    /// Refuse its connections with this close.
    Refuse(u16, String),
}

/// How a room-boot ended, as admission needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BootEnd {
    /// The room started (or failed for a reason that says nothing about the document).
    Done,
    /// The API server has no room for the document (404).
    NoRoom,
    /// The API server refused the boot (403).
    Refused,
}

impl BootEnd {
    /// The admission view of a boot failure.
    pub fn of(failure: &BootFailure) -> BootEnd {
        match failure {
            BootFailure::NoRoom(_) => BootEnd::NoRoom,
            BootFailure::Refused(_) => BootEnd::Refused,
            _ => BootEnd::Done,
        }
    }
}

#[derive(Clone, Debug)]
struct Refusal {
    until: u64,
    code: u16,
    reason: String,
}

/// The box's boot admission: slots, the queue and the refused-document cache.
#[derive(Debug)]
pub struct BootAdmission {
    limits: BootLimits,
    in_flight: usize,
    queue: VecDeque<(String, u64)>,
    refused: BTreeMap<String, Refusal>,
}

impl BootAdmission {
    /// An admission with no boot in flight.
    pub fn new(limits: BootLimits) -> BootAdmission {
        BootAdmission {
            limits,
            in_flight: 0,
            queue: VecDeque::new(),
            refused: BTreeMap::new(),
        }
    }

    /// Room-boot calls in flight.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Boots waiting for a slot.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Asks to boot `doc` (no boot of it is in flight or queued).
    pub fn request(&mut self, now: u64, doc: &str) -> BootAdmit {
        if let Some(r) = self.refused.get(doc) {
            if now < r.until {
                return BootAdmit::Refuse(r.code, r.reason.clone());
            }
            self.refused.remove(doc);
        }
        if self.in_flight < self.limits.max_in_flight {
            self.in_flight += 1;
            return BootAdmit::Start;
        }
        if self.queue.len() >= self.limits.max_queued {
            return BootAdmit::Refuse(1013, self.busy());
        }
        self.queue.push_back((
            String::from(doc),
            now.saturating_add(self.limits.queue_wait_ms),
        ));
        BootAdmit::Queued
    }

    /// A boot that [`BootAdmission::request`] started ended: frees its slot, remembers
    /// a refused document, and returns the queued document to start in the slot (its
    /// slot is taken), if any.
    pub fn finished(&mut self, now: u64, doc: &str, end: BootEnd) -> Option<String> {
        self.in_flight = self.in_flight.saturating_sub(1);
        let refusal = match end {
            BootEnd::Done => None,
            BootEnd::NoRoom => Some(super::CLOSE_NO_ROOM),
            BootEnd::Refused => Some(super::CLOSE_BOOT_FAILED),
        };
        if let Some((code, reason)) = refusal {
            if self.refused.len() >= self.limits.max_refused {
                let oldest = self
                    .refused
                    .iter()
                    .min_by_key(|(_, r)| r.until)
                    .map(|(d, _)| d.clone());
                if let Some(d) = oldest {
                    self.refused.remove(&d);
                }
            }
            self.refused.insert(
                String::from(doc),
                Refusal {
                    until: now.saturating_add(self.limits.refused_ttl_ms),
                    code,
                    reason: String::from(reason),
                },
            );
        }
        let next = self.queue.pop_front().map(|(d, _)| d)?;
        self.in_flight += 1;
        Some(next)
    }

    /// Takes back a queued boot nobody waits for any more.
    pub fn withdraw(&mut self, doc: &str) {
        self.queue.retain(|(d, _)| d != doc);
    }

    /// The queued documents whose wait ran out by `now`, with the close for their
    /// connections; and forgets expired refusals.
    pub fn expire(&mut self, now: u64) -> Vec<(String, u16, String)> {
        self.refused.retain(|_, r| now < r.until);
        let mut out = Vec::new();
        while let Some((_, deadline)) = self.queue.front() {
            if *deadline > now {
                break;
            }
            if let Some((doc, _)) = self.queue.pop_front() {
                out.push((doc, 1013, self.busy()));
            }
        }
        out
    }

    /// When [`BootAdmission::expire`] next has something to do.
    pub fn next_deadline(&self) -> Option<u64> {
        let queue = self.queue.front().map(|(_, d)| *d);
        let refused = self.refused.values().map(|r| r.until).min();
        match (queue, refused) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn busy(&self) -> String {
        format!(
            "the box is busy booting rooms ({} at once, fleet.max_boots_in_flight); retry in {} s",
            self.limits.max_in_flight,
            self.limits.queue_wait_ms.div_ceil(1000).max(1)
        )
    }
}

/// Descriptors a box keeps for itself (listeners, logs, HTTP calls, the journal being
/// compacted).
pub const RESERVED_DESCRIPTORS: u64 = 128;
/// Descriptors a live room holds: its upstream socket and its journal file.
pub const DESCRIPTORS_PER_ROOM: u64 = 2;

/// How a box spends its open-file limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DescriptorBudget {
    /// Client sockets at once.
    pub connections: usize,
    /// Rooms booting, live or stopping at once.
    pub rooms: usize,
    /// Whether the open-file limit, not `fleet.max_rooms`, set `rooms`.
    pub rooms_limited_by_descriptors: bool,
}

/// Splits the open-file limit `nofile` (1,024 when unknown) between client sockets and
/// rooms, so neither can take the descriptors the other needs: `max_connections` when
/// configured, else half of what the box does not reserve; rooms get what is left at
/// [`DESCRIPTORS_PER_ROOM`] each, at most `max_rooms`, at least one.
pub fn descriptor_budget(
    nofile: Option<u64>,
    max_connections: Option<usize>,
    max_rooms: usize,
) -> DescriptorBudget {
    let available = nofile.unwrap_or(1024).saturating_sub(RESERVED_DESCRIPTORS);
    let connections = match max_connections {
        Some(c) => c as u64,
        None => (available / 2).max(16),
    };
    let by_descriptors = (available.saturating_sub(connections) / DESCRIPTORS_PER_ROOM).max(1);
    let rooms = by_descriptors.min(max_rooms as u64);
    DescriptorBudget {
        connections: usize::try_from(connections).unwrap_or(usize::MAX),
        rooms: usize::try_from(rooms).unwrap_or(usize::MAX),
        rooms_limited_by_descriptors: by_descriptors < max_rooms as u64,
    }
}

#[cfg(test)]
mod tests;

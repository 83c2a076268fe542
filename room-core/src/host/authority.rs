//! Authority calls: each one is an output the driver carries out, and a network-class
//! failure is retried here — the same request, after a backoff of 100 ms doubling to
//! 2 s — until it settles, fails fatally, or the work it belongs to is gone (the host
//! stopped, or the incarnation that started a boot call died).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use hashbrown::HashMap;

use super::{AuthorityError, AuthorityReply, Driver, Host, IoId, Level, Output};

/// The first retry delay.
pub(crate) const RETRY_MIN_MS: u64 = 100;
/// The retry delay cap.
pub(crate) const RETRY_MAX_MS: u64 = 2_000;

/// What a call is for: where its result goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Purpose {
    /// Start-up's epoch claim (never retried: a failure stops the start).
    Claim,
    /// Boot: resubmitting an unconfirmed flush record.
    Settle,
    /// Boot: the durable-lmid probe.
    Probe,
    /// The write-behind flush.
    Flush,
    /// A clientID the incarnation has not seen: its durable lmid (newcomer.rs).
    Newcomer,
}

/// The request itself (resent verbatim on a retry).
#[derive(Clone, Debug)]
pub(super) enum Request {
    Claim,
    Lmids(Vec<String>),
    Apply(String),
}

/// One call in flight (or waiting to be retried).
#[derive(Clone, Debug)]
pub(super) struct Call {
    pub purpose: Purpose,
    pub request: Request,
    /// The incarnation that started it.
    pub incarnation: u64,
    /// The next retry delay.
    pub delay_ms: u64,
}

/// Authority calls under way.
#[derive(Debug, Default)]
pub(super) struct Calls {
    /// Calls in flight, by io.
    pub(super) in_flight: HashMap<IoId, Call>,
    /// Calls waiting for their backoff: `(due, call)`.
    pub(super) retries: Vec<(u64, Call)>,
}

impl Calls {
    /// Newcomer lmid fetches in flight or waiting for their backoff.
    pub(super) fn newcomer_fetches(&self) -> usize {
        self.in_flight
            .values()
            .chain(self.retries.iter().map(|(_, c)| c))
            .filter(|c| c.purpose == Purpose::Newcomer)
            .count()
    }
}

impl Host {
    /// Starts an authority call.
    pub(super) fn call(&mut self, purpose: Purpose, request: Request) {
        let call = Call {
            purpose,
            request,
            incarnation: self.inc.number,
            delay_ms: RETRY_MIN_MS,
        };
        self.issue(call);
    }

    fn issue(&mut self, call: Call) {
        let io = self.io();
        let doc = self.cfg.doc_id.clone();
        let out = match &call.request {
            Request::Claim => Output::AuthorityClaim { io, doc },
            Request::Lmids(clients) => Output::AuthorityLmids {
                io,
                doc,
                clients: clients.clone(),
            },
            Request::Apply(body) => Output::AuthorityApply {
                io,
                body: body.clone(),
            },
        };
        self.calls.in_flight.insert(io, call);
        self.push(out);
    }

    /// Whether the work a call belongs to is gone.
    fn call_stopped(&self, call: &Call) -> bool {
        self.closed()
            || (matches!(call.purpose, Purpose::Settle | Purpose::Probe)
                && (call.incarnation != self.inc.number || self.boot.io.is_none()))
            || (call.purpose == Purpose::Newcomer && call.incarnation != self.inc.number)
    }

    pub(super) fn on_authority(
        &mut self,
        io: IoId,
        result: Result<AuthorityReply, AuthorityError>,
        driver: &mut dyn Driver,
    ) {
        let Some(mut call) = self.calls.in_flight.remove(&io) else {
            return;
        };
        if let Err(e @ AuthorityError::Retryable(_)) = &result {
            if call.purpose != Purpose::Claim && !self.call_stopped(&call) {
                let delay = call.delay_ms;
                self.counters.authority_retries += 1;
                self.log(
                    Level::Warn,
                    format!("authority call failed (retrying in {delay}ms): {e}"),
                );
                call.delay_ms = (delay * 2).min(RETRY_MAX_MS);
                self.calls.retries.push((self.now + delay, call));
                self.arm_retry_timer();
                return;
            }
        }
        self.settle_call(call, result, driver);
    }

    fn settle_call(
        &mut self,
        call: Call,
        result: Result<AuthorityReply, AuthorityError>,
        driver: &mut dyn Driver,
    ) {
        match call.purpose {
            Purpose::Claim => self.on_claimed(result),
            Purpose::Settle | Purpose::Probe => self.on_boot_call(call, result, driver),
            Purpose::Flush => self.on_flush_applied(call, result, driver),
            Purpose::Newcomer => self.on_newcomer_lmid(call, result, driver),
        }
    }

    fn arm_retry_timer(&mut self) {
        self.timers.retry = self.calls.retries.iter().map(|(at, _)| *at).min();
    }

    /// Re-issues every call whose backoff passed (or gives up on it when its work is
    /// gone, as a stopped retry loop would).
    pub(super) fn fire_retries(&mut self, driver: &mut dyn Driver) {
        let now = self.now;
        let (due, rest): (Vec<_>, Vec<_>) = core::mem::take(&mut self.calls.retries)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.calls.retries = rest;
        self.arm_retry_timer();
        for (_, call) in due {
            if self.call_stopped(&call) {
                let stopped = Err(AuthorityError::Retryable(String::from("stopped")));
                self.settle_call(call, stopped, driver);
            } else {
                self.issue(call);
            }
        }
    }
}

//! Start-up waits for its dependencies: the first lease mint (`rindled`) and the
//! placement epoch claim (the authority) are tried again after a transient failure —
//! 100 ms, doubling to 5 s, each retry a warning — until
//! [`HostConfig::startup_timeout_ms`](super::HostConfig::startup_timeout_ms) has passed
//! since [`Host::start`]. A refusal, or a failure whose next try would begin past the
//! timeout, fails the start ([`Output::StartFailed`]) with the last error and how long
//! start-up tried. The waits are the host's own timer, so every driver retries alike.

use alloc::format;
use alloc::string::String;

use super::authority::{Purpose, Request};
use super::{Host, Level, Output, Phase};

/// The first wait between two tries, ms.
pub(super) const FIRST_DELAY_MS: u64 = 100;
/// The longest wait between two tries, ms.
pub(super) const MAX_DELAY_MS: u64 = 5_000;

/// A dependency start-up waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dependency {
    /// The first upstream lease.
    Lease,
    /// The placement epoch claim.
    Claim,
}

impl Dependency {
    fn what(self) -> &'static str {
        match self {
            Dependency::Lease => "the upstream lease (rindled)",
            Dependency::Claim => "the placement epoch claim (authority)",
        }
    }

    /// How a start that failed on `error` reports it.
    fn start_failure(self, error: &str) -> String {
        match self {
            Dependency::Lease => String::from(error),
            Dependency::Claim => format!("claiming the placement epoch failed: {error}"),
        }
    }
}

/// Start-up's retry state.
#[derive(Debug, Default)]
pub(super) struct StartupRetry {
    /// When [`Host::start`] was called.
    pub(super) since: u64,
    /// Failed tries of the dependency being tried.
    tries: u32,
    /// The wait before its next try, ms (0: none yet).
    delay_ms: u64,
    /// The dependency to try again when [`Timers::startup`](super::timers::Timers)
    /// passes.
    due: Option<Dependency>,
}

impl Host {
    /// `dep` failed with `error`: when `transient`, try it again after the backoff
    /// unless that try would begin past the start-up timeout; otherwise fail the start.
    pub(super) fn startup_attempt_failed(
        &mut self,
        dep: Dependency,
        error: String,
        transient: bool,
    ) {
        let timeout = self.cfg.startup_timeout_ms;
        if !transient || timeout == 0 {
            return self.start_failed(dep.start_failure(&error));
        }
        let retry = &mut self.boot.retry;
        retry.tries += 1;
        let delay = match retry.delay_ms {
            0 => FIRST_DELAY_MS,
            d => d,
        };
        let deadline = retry.since.saturating_add(timeout);
        if self.now.saturating_add(delay) > deadline {
            let (tries, waited) = (retry.tries, self.now.saturating_sub(retry.since));
            let error = dep.start_failure(&error);
            return self.start_failed(format!(
                "{error} (gave up after {tries} tries in {waited} ms; the start-up timeout \
                 is {timeout} ms: raise server.startup_timeout_ms in room.toml, or \
                 downstream.startupTimeoutMs in the Node shell, to wait longer)"
            ));
        }
        retry.delay_ms = (delay * 2).min(MAX_DELAY_MS);
        retry.due = Some(dep);
        let left = deadline.saturating_sub(self.now) / 1_000;
        self.timers.startup = Some(self.now + delay);
        self.log(
            Level::Warn,
            format!(
                "start-up: {} failed: {error}; retrying in {delay} ms (giving up in {left} s)",
                dep.what()
            ),
        );
    }

    /// `dep` succeeded: say so when it took retries, and start the next dependency's
    /// backoff afresh.
    pub(super) fn startup_attempt_succeeded(&mut self, dep: Dependency) {
        let retry = &mut self.boot.retry;
        let tries = core::mem::take(&mut retry.tries) + 1;
        retry.delay_ms = 0;
        if tries > 1 {
            self.log(
                Level::Info,
                format!("start-up: {} succeeded after {tries} tries", dep.what()),
            );
        }
    }

    /// The backoff passed: try the dependency again (unless start-up ended meanwhile).
    pub(super) fn fire_startup_retry(&mut self) {
        let Some(dep) = self.boot.retry.due.take() else {
            return;
        };
        if self.phase != Phase::Starting {
            return;
        }
        match dep {
            Dependency::Lease => self.push(Output::MintLease),
            Dependency::Claim => self.call(Purpose::Claim, Request::Claim),
        }
    }
}

//! Start-up retries: while the room starts, the first lease mint (`rindled`) and the
//! epoch claim (the authority) are tried again on a transient failure — 100 ms doubling
//! to 5 s, each retry logged — until `server.startup_timeout_ms` has passed. The host
//! sees one answer per call: the success, a refusal, or the last failure once the time
//! is up.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rindle_room_core::host::{AuthorityError, AuthorityReply};

use super::{Actor, Event};
use crate::server::clock::BoxFuture;
use crate::server::log::Logger;
use crate::server::upstream::MintError;

/// The first retry delay.
const FIRST_DELAY: Duration = Duration::from_millis(100);
/// The longest delay between two tries.
const MAX_DELAY: Duration = Duration::from_secs(5);

/// How long start-up keeps retrying.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StartupRetry {
    /// When the start-up began.
    pub since: Instant,
    /// `server.startup_timeout_ms`.
    pub timeout: Duration,
}

/// Tries `attempt` until it succeeds, fails for good (not `transient`), or the next try
/// would start past the deadline (then the last error, with `annotate`'s note on how
/// long it tried); logs every retry as a warning.
async fn retry<T, E: std::fmt::Display>(
    what: &str,
    log: &Logger,
    window: StartupRetry,
    transient: impl Fn(&E) -> bool,
    annotate: impl Fn(E, &str) -> E,
    mut attempt: impl FnMut() -> BoxFuture<'static, Result<T, E>>,
) -> Result<T, E> {
    let deadline = window.since + window.timeout;
    let mut delay = FIRST_DELAY;
    let mut tries = 0u32;
    loop {
        tries += 1;
        let error = match attempt().await {
            Ok(v) => {
                if tries > 1 {
                    log.info(&format!("start-up: {what} succeeded after {tries} tries"));
                }
                return Ok(v);
            }
            Err(e) => e,
        };
        if !transient(&error) {
            return Err(error);
        }
        let now = Instant::now();
        if now + delay > deadline {
            let waited = now.saturating_duration_since(window.since).as_millis();
            let note = format!(
                " (gave up after {tries} tries in {waited} ms: server.startup_timeout_ms = {})",
                window.timeout.as_millis()
            );
            return Err(annotate(error, &note));
        }
        let left = deadline.saturating_duration_since(now).as_secs();
        log.warn(&format!(
            "start-up: {what} failed: {error}; retrying in {} ms (giving up in {left} s)",
            delay.as_millis()
        ));
        smol::Timer::after(delay).await;
        delay = (delay * 2).min(MAX_DELAY);
    }
}

impl Actor {
    /// Whether start-up is still running with retries allowed.
    pub(super) fn startup_window(&self) -> Option<StartupRetry> {
        self.started.as_ref().and(self.startup_retry)
    }

    /// The first lease, minted with retries.
    pub(super) fn mint_first_lease(&mut self, window: StartupRetry) {
        let connector = self.connector.clone();
        let events = self.events.clone();
        let log = self.log.clone();
        self.env.spawn(async move {
            let result = retry(
                "the upstream lease (rindled)",
                &log,
                window,
                |e: &MintError| e.transient,
                |mut e, note| {
                    e.message.push_str(note);
                    e
                },
                || connector.mint_first_lease(),
            )
            .await;
            let _ = events.send(Event::LeaseMinted { result }).await;
        });
    }

    /// The epoch claim, with retries on the authority's retryable failures.
    pub(super) fn claim_with_retry(&mut self, io: u64, doc: String, window: StartupRetry) {
        let events = self.events.clone();
        let log = self.log.clone();
        let Some(authority) = self.authority.clone() else {
            let result = Err(AuthorityError::Fatal(String::from(
                "no authority configured",
            )));
            let _ = events.try_send(Event::Authority { io, result });
            return;
        };
        self.env.spawn(async move {
            let doc = Arc::<str>::from(doc);
            let result = retry(
                "the placement epoch claim (authority)",
                &log,
                window,
                |e: &AuthorityError| matches!(e, AuthorityError::Retryable(_)),
                |e, note| match e {
                    AuthorityError::Retryable(m) => AuthorityError::Retryable(m + note),
                    AuthorityError::Fatal(m) => AuthorityError::Fatal(m + note),
                },
                || {
                    let (authority, doc) = (authority.clone(), doc.clone());
                    Box::pin(async move { authority.claim_epoch(&doc).await })
                },
            )
            .await
            .map(AuthorityReply::Claimed);
            let _ = events.send(Event::Authority { io, result }).await;
        });
    }
}

//! The host's named deadlines. The driver sees only the earliest
//! ([`Host::next_deadline`](super::Host::next_deadline)); the host fires each that is due.

/// The host's named deadlines (ms on the driver's clock).
#[derive(Debug, Default)]
pub(super) struct Timers {
    /// The periodic sweep (expired leases, silent connections).
    pub(super) sweep: Option<u64>,
    /// The group commit's window closes: append what it gathered.
    pub(super) group_commit: Option<u64>,
    /// The flush debounce.
    pub(super) flush: Option<u64>,
    /// Re-send the upstream subscribe (after a violation).
    pub(super) resubscribe: Option<u64>,
    /// Re-open the upstream link.
    pub(super) reconnect: Option<u64>,
    /// Re-handle an upstream `queryError` whose lease re-mint failed.
    pub(super) remint: Option<u64>,
    /// A draining shutdown runs out of time.
    pub(super) shutdown: Option<u64>,
    /// Start-up tries a failed dependency again.
    pub(super) startup: Option<u64>,
    /// Authority retries due.
    pub(super) retry: Option<u64>,
    /// The earliest newcomer whose frames stop waiting for its lmid fetch.
    pub(super) newcomer: Option<u64>,
    /// The drains stop waiting for echoes.
    pub(super) drain_echo: Option<u64>,
    /// The upstream link has been silent long enough to ping it, or to take it as dead.
    pub(super) up_silence: Option<u64>,
}

impl Timers {
    /// The earliest deadline set.
    pub(super) fn next(&self) -> Option<u64> {
        [
            self.sweep,
            self.group_commit,
            self.flush,
            self.resubscribe,
            self.reconnect,
            self.remint,
            self.shutdown,
            self.startup,
            self.retry,
            self.newcomer,
            self.drain_echo,
            self.up_silence,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Whether `slot` is due at `now`; a due slot is cleared.
    pub(super) fn take_due(slot: &mut Option<u64>, now: u64) -> bool {
        if slot.is_some_and(|d| d <= now) {
            *slot = None;
            true
        } else {
            false
        }
    }
}

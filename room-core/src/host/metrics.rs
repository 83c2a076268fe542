//! The host's counters: plain numbers a driver reads after each call and renders
//! (Prometheus text on the smol server's `/metrics`).

/// Every counter the host keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Downstream frames output.
    pub frames_out: u64,
    /// Bytes of downstream frames output.
    pub bytes_out: u64,
    /// Mutations applied.
    pub mutations_applied: u64,
    /// Mutations rejected.
    pub mutations_rejected: u64,
    /// Mutations deopted.
    pub mutations_deopt: u64,
    /// Re-delivered mids absorbed as dedup.
    pub mutations_dedup: u64,
    /// Flushes the authority committed (or deduped).
    pub flushes_ok: u64,
    /// Flushes refused on CAS.
    pub flushes_conflict: u64,
    /// Flushes fenced.
    pub flushes_fenced: u64,
    /// Flushes that failed fatally.
    pub flushes_fatal: u64,
    /// Authority calls retried after a network-class failure.
    pub authority_retries: u64,
    /// Incarnations opened (upstream hellos accepted).
    pub incarnations: u64,
    /// Incarnation deaths.
    pub incarnation_deaths: u64,
    /// Sockets cut for leaving too much unread (send budget, snapshot backlog).
    pub budget_terminations: u64,
    /// Subscriptions dropped by the lease-expiry sweep.
    pub expired_leases: u64,
    /// Revocations.
    pub revocations: u64,
    /// Sockets closed with 1008 for passing a per-connection limit.
    pub limit_closes: u64,
    /// Subscribes taken back for passing the room's memory budget.
    pub budget_refusals: u64,
}

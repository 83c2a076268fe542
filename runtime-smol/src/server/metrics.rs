//! Counters and the journal fsync histogram, rendered as the Prometheus text exposition
//! format (`GET /metrics` on the control plane).
//!
//! The host's counters are copied in after every host call ([`Metrics::sync`]) and
//! rendered from that copy; the connection tasks and the journal writer update theirs
//! directly; gauges (connections, subscriptions, …) are read from the room task when the page is
//! rendered ([`Gauges`]).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds (seconds) of the journal append latency buckets.
const FSYNC_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// A cumulative histogram of durations.
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; FSYNC_BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    /// Records one observation.
    pub fn observe(&self, d: std::time::Duration) {
        let secs = d.as_secs_f64();
        for (i, bound) in FSYNC_BUCKETS.iter().enumerate() {
            if secs <= *bound {
                self.buckets[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// How many observations.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} histogram");
        for (i, bound) in FSYNC_BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{bound}\"}} {}",
                self.buckets[i].load(Ordering::Relaxed)
            );
        }
        let count = self.count();
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}");
        let _ = writeln!(out, "{name}_count {count}");
    }
}

/// Every counter the server keeps.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Downstream frames queued for sending.
    pub frames_out: AtomicU64,
    /// Bytes of downstream frames queued for sending.
    pub bytes_out: AtomicU64,
    /// Mutations applied.
    pub mutations_applied: AtomicU64,
    /// Mutations rejected.
    pub mutations_rejected: AtomicU64,
    /// Mutations deopted.
    pub mutations_deopt: AtomicU64,
    /// Re-delivered mids absorbed as dedup.
    pub mutations_dedup: AtomicU64,
    /// Journal append latency (the fsync gate of every ack).
    pub journal_append: Histogram,
    /// Flushes the authority committed (or deduped).
    pub flushes_ok: AtomicU64,
    /// Flushes refused on CAS.
    pub flushes_conflict: AtomicU64,
    /// Flushes fenced.
    pub flushes_fenced: AtomicU64,
    /// Flushes that failed fatally.
    pub flushes_fatal: AtomicU64,
    /// Authority calls retried after a network-class failure.
    pub authority_retries: AtomicU64,
    /// Incarnations opened (upstream hellos accepted).
    pub incarnations: AtomicU64,
    /// Incarnation deaths.
    pub incarnation_deaths: AtomicU64,
    /// Sockets terminated for exceeding the send budget.
    pub budget_terminations: AtomicU64,
    /// Subscriptions dropped by the lease-expiry sweep.
    pub expired_leases: AtomicU64,
    /// Revocations.
    pub revocations: AtomicU64,
    /// The connection tasks' counters: upgrades refused at `server.max_connections`,
    /// handshake timeouts, websocket-level violations (1002, 1007, 1009).
    pub conn: std::sync::Arc<rindle_room_downstream::ConnMetrics>,
    /// Sockets closed with 1008 for passing a per-connection limit (subscriptions, the
    /// `init` identity, held frames, the first-frame timeout).
    pub limit_closes: AtomicU64,
    /// Every host counter as of the last [`Metrics::sync`]: what `/metrics` renders, so
    /// a counter the host adds is exported without a field here (the atomics above are
    /// for readers in this process).
    host: std::sync::Mutex<rindle_room_core::host::Counters>,
    /// A fleet box's sum of its rooms' host counters, which [`Metrics::sync`] adds this
    /// room's growth to (the box's `/metrics`).
    box_totals: Option<BoxTotals>,
}

/// A fleet box's sum of every room's host counters, rooms that stopped included.
pub type BoxTotals = std::sync::Arc<std::sync::Mutex<rindle_room_core::host::Counters>>;

/// Point-in-time values the room task reads when `/metrics` is rendered: the host's.
pub use rindle_room_core::host::Gauges;

impl Metrics {
    /// Copies the host's counters (the room task calls it after every host call).
    pub fn sync(&self, c: &rindle_room_core::host::Counters) {
        let set = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
        set(&self.frames_out, c.frames_out);
        set(&self.bytes_out, c.bytes_out);
        set(&self.mutations_applied, c.mutations_applied);
        set(&self.mutations_rejected, c.mutations_rejected);
        set(&self.mutations_deopt, c.mutations_deopt);
        set(&self.mutations_dedup, c.mutations_dedup);
        set(&self.flushes_ok, c.flushes_ok);
        set(&self.flushes_conflict, c.flushes_conflict);
        set(&self.flushes_fenced, c.flushes_fenced);
        set(&self.flushes_fatal, c.flushes_fatal);
        set(&self.authority_retries, c.authority_retries);
        set(&self.incarnations, c.incarnations);
        set(&self.incarnation_deaths, c.incarnation_deaths);
        set(&self.budget_terminations, c.budget_terminations);
        set(&self.expired_leases, c.expired_leases);
        set(&self.revocations, c.revocations);
        set(&self.limit_closes, c.limit_closes);
        let mut host = self.host.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(totals) = &self.box_totals {
            let mut totals = totals.lock().unwrap_or_else(|e| e.into_inner());
            totals.add_growth(c, &host);
        }
        *host = *c;
    }

    /// A room's metrics that also add to its fleet box's `totals`.
    pub fn adding_to(totals: BoxTotals) -> Metrics {
        Metrics {
            box_totals: Some(totals),
            ..Metrics::default()
        }
    }

    /// Renders the exposition text: the room's (the core's renderer, the same as the
    /// Node shell's), then the journal-append latency histogram.
    pub fn render(&self, g: &Gauges) -> String {
        let mut out = String::with_capacity(4096);
        let v = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let c = *self.host.lock().unwrap_or_else(|e| e.into_inner());
        let sockets = rindle_room_core::host::SocketCounts {
            connections_refused: v(&self.conn.connections_refused),
            handshake_timeouts: v(&self.conn.handshake_timeouts),
            protocol_closes: v(&self.conn.protocol_closes),
        };
        rindle_room_core::host::render_prometheus(&mut out, &c, g, &sockets);
        self.journal_append.render(
            &mut out,
            "rindle_room_journal_append_seconds",
            "Journal append latency (durable, fsynced) per group commit.",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_gauges_and_the_histogram() {
        let m = Metrics::default();
        m.sync(&rindle_room_core::host::Counters {
            mutations_applied: 1,
            bytes_out: 10,
            confirmed_unechoed: 2,
            upstream_silences: 3,
            ..Default::default()
        });
        m.journal_append
            .observe(std::time::Duration::from_micros(700));
        let text = m.render(&Gauges {
            live: true,
            connections: 2,
            ..Gauges::default()
        });
        assert!(text.contains("rindle_room_live 1\n"));
        assert!(text.contains("rindle_room_connections 2\n"));
        assert!(text.contains("rindle_room_mutations_total{outcome=\"applied\"} 1\n"));
        assert!(text.contains("rindle_room_bytes_out_total 10\n"));
        // Every host counter is rendered, not only those with a field of their own.
        assert!(text.contains("rindle_room_flushes_confirmed_unechoed_total 2\n"));
        assert!(text.contains("rindle_room_upstream_silences_total 3\n"));
        assert!(text.contains("rindle_room_journal_append_seconds_bucket{le=\"0.0005\"} 0\n"));
        assert!(text.contains("rindle_room_journal_append_seconds_bucket{le=\"0.001\"} 1\n"));
        assert!(text.contains("rindle_room_journal_append_seconds_count 1\n"));
    }
}

//! The host's counters: plain numbers a driver reads after each call, and their
//! Prometheus text ([`render_prometheus`]), which every driver's `/metrics` serves.

use alloc::string::String;
use core::fmt::Write as _;

use super::control::Gauges;

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
    /// Committed flushes whose journal record was confirmed without its echo (the
    /// echo wait ran out, or too many records waited).
    pub confirmed_unechoed: u64,
    /// Upstream links taken as dead after `upstream_silence_timeout_ms` of silence.
    pub upstream_silences: u64,
    /// Downstream sockets closed after `silence_timeout_ms` of silence.
    pub silent_sockets: u64,
}

/// How many counters [`Counters`] holds.
const COUNTERS: usize = 21;

impl Counters {
    /// Every counter, in declaration order (the destructuring is exhaustive: a counter
    /// added to the struct must be added here, or this does not compile).
    fn values(&self) -> [u64; COUNTERS] {
        let Counters {
            frames_out,
            bytes_out,
            mutations_applied,
            mutations_rejected,
            mutations_deopt,
            mutations_dedup,
            flushes_ok,
            flushes_conflict,
            flushes_fenced,
            flushes_fatal,
            authority_retries,
            incarnations,
            incarnation_deaths,
            budget_terminations,
            expired_leases,
            revocations,
            limit_closes,
            budget_refusals,
            confirmed_unechoed,
            upstream_silences,
            silent_sockets,
        } = *self;
        [
            frames_out,
            bytes_out,
            mutations_applied,
            mutations_rejected,
            mutations_deopt,
            mutations_dedup,
            flushes_ok,
            flushes_conflict,
            flushes_fenced,
            flushes_fatal,
            authority_retries,
            incarnations,
            incarnation_deaths,
            budget_terminations,
            expired_leases,
            revocations,
            limit_closes,
            budget_refusals,
            confirmed_unechoed,
            upstream_silences,
            silent_sockets,
        ]
    }

    /// The counters from [`Counters::values`]' order.
    fn from_values(v: [u64; COUNTERS]) -> Counters {
        let [frames_out, bytes_out, mutations_applied, mutations_rejected, mutations_deopt, mutations_dedup, flushes_ok, flushes_conflict, flushes_fenced, flushes_fatal, authority_retries, incarnations, incarnation_deaths, budget_terminations, expired_leases, revocations, limit_closes, budget_refusals, confirmed_unechoed, upstream_silences, silent_sockets] =
            v;
        Counters {
            frames_out,
            bytes_out,
            mutations_applied,
            mutations_rejected,
            mutations_deopt,
            mutations_dedup,
            flushes_ok,
            flushes_conflict,
            flushes_fenced,
            flushes_fatal,
            authority_retries,
            incarnations,
            incarnation_deaths,
            budget_terminations,
            expired_leases,
            revocations,
            limit_closes,
            budget_refusals,
            confirmed_unechoed,
            upstream_silences,
            silent_sockets,
        }
    }

    /// Adds what each counter of `now` grew by since `before` (a box summing its rooms:
    /// a room's counters only grow).
    pub fn add_growth(&mut self, now: &Counters, before: &Counters) {
        let (mut sum, now, before) = (self.values(), now.values(), before.values());
        for i in 0..COUNTERS {
            sum[i] = sum[i].saturating_add(now[i].saturating_sub(before[i]));
        }
        *self = Counters::from_values(sum);
    }
}

/// What a driver's socket layer counts (not the host): connections refused at the cap,
/// handshakes that timed out, sockets closed for a websocket-level violation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocketCounts {
    /// Upgrades refused at the connection cap.
    pub connections_refused: u64,
    /// TCP connections dropped for not completing the upgrade in time.
    pub handshake_timeouts: u64,
    /// Sockets closed for a websocket-level violation (1002, 1007, 1009).
    pub protocol_closes: u64,
}

/// Appends the room's Prometheus exposition text (gauges, then counters) to `out`: the
/// same names and help in every driver. A driver appends what only it measures (the
/// smol server: its journal-append latency histogram).
pub fn render_prometheus(out: &mut String, c: &Counters, g: &Gauges, s: &SocketCounts) {
    let gauges: [(&str, &str, u64); 9] = [
        (
            "rindle_room_live",
            "1 when the current incarnation is live.",
            u64::from(g.live),
        ),
        (
            "rindle_room_connections",
            "Open downstream connections.",
            g.connections as u64,
        ),
        (
            "rindle_room_subscriptions",
            "Tracked downstream subscriptions.",
            g.subscriptions as u64,
        ),
        (
            "rindle_room_materializations",
            "Materialized queries.",
            g.materializations as u64,
        ),
        (
            "rindle_room_pending_mutations",
            "Processed mutations not yet durable at the authority.",
            g.pending_mutations as u64,
        ),
        (
            "rindle_room_dirty_keys",
            "Keys whose net effect the authority does not hold yet.",
            g.dirty_keys as u64,
        ),
        (
            "rindle_room_flushes_awaiting_echo",
            "Committed flushes whose journal record waits for the daemon's echo.",
            g.flushes_awaiting_echo as u64,
        ),
        (
            "rindle_room_head_cv",
            "The room's commit counter.",
            g.head_cv,
        ),
        (
            "rindle_room_placement_epoch",
            "The claimed placement epoch (0 without an authority).",
            g.placement_epoch,
        ),
    ];
    for (name, help, v) in gauges {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} gauge");
        let _ = writeln!(out, "{name} {v}");
    }
    render_counters(out, c, s);
}

/// Appends the counters' part of [`render_prometheus`] to `out`: what a fleet box serves
/// for the sum of its rooms, which have no gauges in common.
pub fn render_counters(out: &mut String, c: &Counters, s: &SocketCounts) {
    let counter = |out: &mut String, name: &str, help: &str, rows: &[(&str, u64)]| {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} counter");
        for (labels, v) in rows {
            let _ = writeln!(out, "{name}{labels} {v}");
        }
    };
    counter(
        out,
        "rindle_room_frames_out_total",
        "Downstream frames queued.",
        &[("", c.frames_out)],
    );
    counter(
        out,
        "rindle_room_bytes_out_total",
        "Downstream bytes queued.",
        &[("", c.bytes_out)],
    );
    counter(
        out,
        "rindle_room_mutations_total",
        "Mutations processed, by outcome.",
        &[
            ("{outcome=\"applied\"}", c.mutations_applied),
            ("{outcome=\"rejected\"}", c.mutations_rejected),
            ("{outcome=\"deopt\"}", c.mutations_deopt),
            ("{outcome=\"dedup\"}", c.mutations_dedup),
        ],
    );
    counter(
        out,
        "rindle_room_flushes_total",
        "Write-behind flushes settled, by outcome.",
        &[
            ("{outcome=\"ok\"}", c.flushes_ok),
            ("{outcome=\"conflict\"}", c.flushes_conflict),
            ("{outcome=\"fenced\"}", c.flushes_fenced),
            ("{outcome=\"fatal\"}", c.flushes_fatal),
        ],
    );
    counter(
        out,
        "rindle_room_flushes_confirmed_unechoed_total",
        "Committed flushes whose journal record was confirmed without the daemon's echo.",
        &[("", c.confirmed_unechoed)],
    );
    counter(
        out,
        "rindle_room_authority_retries_total",
        "Authority calls retried after a network-class failure.",
        &[("", c.authority_retries)],
    );
    counter(
        out,
        "rindle_room_incarnations_total",
        "Incarnations opened from an upstream hello.",
        &[("", c.incarnations)],
    );
    counter(
        out,
        "rindle_room_incarnation_deaths_total",
        "Incarnations killed by an upstream violation.",
        &[("", c.incarnation_deaths)],
    );
    counter(
        out,
        "rindle_room_budget_terminations_total",
        "Sockets terminated for exceeding the send budget.",
        &[("", c.budget_terminations)],
    );
    counter(
        out,
        "rindle_room_expired_leases_total",
        "Subscriptions dropped by the lease-expiry sweep.",
        &[("", c.expired_leases)],
    );
    counter(
        out,
        "rindle_room_revocations_total",
        "Users revoked through the control plane.",
        &[("", c.revocations)],
    );
    counter(
        out,
        "rindle_room_refused_total",
        "Downstream sockets refused or closed by a limit, by reason.",
        &[
            ("{reason=\"max_connections\"}", s.connections_refused),
            ("{reason=\"handshake_timeout\"}", s.handshake_timeouts),
            ("{reason=\"protocol\"}", s.protocol_closes),
            ("{reason=\"limit\"}", c.limit_closes),
            ("{reason=\"silent\"}", c.silent_sockets),
        ],
    );
    counter(
        out,
        "rindle_room_upstream_silences_total",
        "Upstream links taken as dead after upstream.silence_timeout_ms without a frame or pong.",
        &[("", c.upstream_silences)],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_adds_each_rooms_growth_to_every_counter() {
        let mut v = [0u64; COUNTERS];
        for (i, x) in v.iter_mut().enumerate() {
            *x = 10 * (i as u64 + 1);
        }
        let before = Counters::from_values(v);
        assert_eq!(before.values(), v, "the two orders agree");
        let mut now = before;
        now.upstream_silences += 2;
        now.frames_out += 5;
        let mut total = Counters {
            frames_out: 1,
            ..Counters::default()
        };
        total.add_growth(&now, &before);
        assert_eq!(
            total,
            Counters {
                frames_out: 6,
                upstream_silences: 2,
                ..Counters::default()
            }
        );
        // A second room starting from zero adds all it counted.
        total.add_growth(&now, &Counters::default());
        assert_eq!(total.upstream_silences, 2 + now.upstream_silences);
        let mut text = String::new();
        render_counters(&mut text, &total, &SocketCounts::default());
        assert!(text.contains(&alloc::format!(
            "\nrindle_room_upstream_silences_total {}\n",
            total.upstream_silences
        )));
        assert!(!text.contains("rindle_room_live"), "no gauges");
    }
}

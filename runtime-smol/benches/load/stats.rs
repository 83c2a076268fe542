//! Percentiles and formatting.

/// Latency percentiles of one series, in ms.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lat {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

/// Nearest-rank percentiles of `ns` (nanoseconds).
pub fn lat(mut ns: Vec<u64>) -> Lat {
    if ns.is_empty() {
        return Lat::default();
    }
    ns.sort_unstable();
    let n = ns.len();
    let at = |p: f64| {
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        ns[rank.clamp(1, n) - 1] as f64 / 1e6
    };
    Lat {
        p50: at(50.0),
        p90: at(90.0),
        p99: at(99.0),
        p999: at(99.9),
        max: ns[n - 1] as f64 / 1e6,
        mean: ns.iter().map(|&v| v as f64).sum::<f64>() / n as f64 / 1e6,
    }
}

impl Lat {
    /// `p50 / p90 / p99 / p99.9 / max` in ms.
    pub fn row(&self) -> String {
        format!(
            "{:.2} / {:.2} / {:.2} / {:.2} / {:.2}",
            self.p50, self.p90, self.p99, self.p999, self.max
        )
    }
}

/// KiB as MiB with one decimal.
pub fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

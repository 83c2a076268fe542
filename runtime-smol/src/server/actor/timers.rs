//! The room task's named deadlines.

/// Named deadlines, in ms on the room clock.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    pub sweep: Option<u64>,
    pub group_commit: Option<u64>,
    pub flush: Option<u64>,
    pub resubscribe: Option<u64>,
    pub reconnect: Option<u64>,
    pub remint: Option<u64>,
    /// The shutdown drain's deadline.
    pub shutdown: Option<u64>,
}

impl Timers {
    /// The earliest armed deadline.
    pub(crate) fn next(&self) -> Option<u64> {
        [
            self.sweep,
            self.group_commit,
            self.flush,
            self.resubscribe,
            self.reconnect,
            self.remint,
            self.shutdown,
        ]
        .into_iter()
        .flatten()
        .min()
    }
}

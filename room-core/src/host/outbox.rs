//! What the host has output and the driver not polled yet: the output queue, the bytes
//! of frames still in it per connection (they count against the socket's caps), and the
//! log level below which lines are not produced at all.

use alloc::collections::VecDeque;
use alloc::string::String;

use hashbrown::HashMap;

use super::{ConnId, Level, Output, SendClass};

/// The host's outputs not polled yet.
#[derive(Debug)]
pub(super) struct Outbox {
    /// The outputs, in order.
    pub(super) queue: VecDeque<Output>,
    /// Bytes of `Send` outputs not polled yet, per connection: `(live, snapshot)`.
    pub(super) unpolled: HashMap<ConnId, (usize, usize)>,
    /// Log lines below this level are not produced.
    pub(super) log_level: Level,
}

impl Default for Outbox {
    fn default() -> Outbox {
        Outbox {
            queue: VecDeque::new(),
            unpolled: HashMap::new(),
            log_level: Level::Debug,
        }
    }
}

impl Outbox {
    /// Queues an output.
    pub(super) fn push(&mut self, o: Output) {
        self.queue.push_back(o);
    }

    /// Queues a frame for `conn`, counting its bytes against the socket until polled.
    pub(super) fn push_send(&mut self, conn: ConnId, text: String, class: SendClass) {
        let u = self.unpolled.entry(conn).or_insert((0, 0));
        match class {
            SendClass::Live | SendClass::Plain => u.0 += text.len(),
            SendClass::Snapshot => u.1 += text.len(),
        }
        self.push(Output::Send { conn, text, class });
    }

    /// Drops every frame queued for `conn`.
    pub(super) fn discard_sends(&mut self, conn: ConnId) {
        self.queue
            .retain(|o| !matches!(o, Output::Send { conn: c2, .. } if *c2 == conn));
        self.unpolled.remove(&conn);
    }

    /// A log line, unless its level is below the log level.
    pub(super) fn log(&mut self, level: Level, text: String) {
        if level >= self.log_level {
            self.push(Output::Log { level, text });
        }
    }

    /// A [`Level::Debug`] line, formatted only when debug lines are produced.
    pub(super) fn debug(&mut self, text: impl FnOnce() -> String) {
        if self.log_level <= Level::Debug {
            self.push(Output::Log {
                level: Level::Debug,
                text: text(),
            });
        }
    }

    /// The next output, in order.
    pub(super) fn poll(&mut self) -> Option<Output> {
        let o = self.queue.pop_front()?;
        if let Output::Send { conn, text, class } = &o {
            if let Some(u) = self.unpolled.get_mut(conn) {
                match class {
                    SendClass::Live | SendClass::Plain => u.0 = u.0.saturating_sub(text.len()),
                    SendClass::Snapshot => u.1 = u.1.saturating_sub(text.len()),
                }
                if *u == (0, 0) {
                    self.unpolled.remove(conn);
                }
            }
        }
        Some(o)
    }
}

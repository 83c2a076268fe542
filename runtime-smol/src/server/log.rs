//! Structured logs on stderr: one line per event, `text` or `json` (`[server] log_format`).
//!
//! Text: `2026-01-02T03:04:05.678Z INFO  room doc/1: upstream hello: epoch 3`.
//! JSON: `{"ts":"2026-01-02T03:04:05.678Z","level":"info","doc":"doc/1","msg":"…"}`.
//!
//! Embedders and tests can replace the sink ([`Logger::with_sink`]) to capture lines.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rindle_room_core::json::write::write_str;

use crate::config::LogFormat;

/// How serious a log line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Routine detail (per-flush settlements, reconnect delays).
    Debug,
    /// Lifecycle events (hello, snapshot, live, replay, revocation).
    Info,
    /// Something degraded that recovers by itself (incarnation death, retries).
    Warn,
    /// Something an operator must look at (journal failures, fenced room).
    Error,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

/// Where formatted lines go.
pub type LogSink = Arc<dyn Fn(Level, &str) + Send + Sync>;

/// The server's logger: a document id, a format and a sink.
#[derive(Clone)]
pub struct Logger {
    doc: Arc<str>,
    format: LogFormat,
    min: Level,
    sink: Option<LogSink>,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logger")
            .field("doc", &self.doc)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

impl Logger {
    /// A logger writing `format` lines to stderr (level `info` and up; `RINDLE_LOG=debug`
    /// for more).
    pub fn stderr(doc: &str, format: LogFormat) -> Logger {
        let min = match std::env::var("RINDLE_LOG").as_deref() {
            Ok("debug") => Level::Debug,
            Ok("warn") => Level::Warn,
            Ok("error") => Level::Error,
            _ => Level::Info,
        };
        Logger {
            doc: Arc::from(doc),
            format,
            min,
            sink: None,
        }
    }

    /// A logger handing every formatted line (all levels) to `sink` instead of stderr.
    pub fn with_sink(doc: &str, format: LogFormat, sink: LogSink) -> Logger {
        Logger {
            doc: Arc::from(doc),
            format,
            min: Level::Debug,
            sink: Some(sink),
        }
    }

    /// Logs one line.
    pub fn log(&self, level: Level, msg: &str) {
        if level < self.min {
            return;
        }
        let line = self.format_line(level, msg);
        match &self.sink {
            Some(sink) => sink(level, &line),
            None => {
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{line}");
            }
        }
    }

    /// Logs at `debug`.
    pub fn debug(&self, msg: &str) {
        self.log(Level::Debug, msg);
    }

    /// Logs at `info`.
    pub fn info(&self, msg: &str) {
        self.log(Level::Info, msg);
    }

    /// Logs at `warn`.
    pub fn warn(&self, msg: &str) {
        self.log(Level::Warn, msg);
    }

    /// Logs at `error`.
    pub fn error(&self, msg: &str) {
        self.log(Level::Error, msg);
    }

    fn format_line(&self, level: Level, msg: &str) -> String {
        let ts = rfc3339_now();
        match self.format {
            LogFormat::Text => {
                let mut s = String::with_capacity(48 + msg.len());
                let _ = write!(
                    s,
                    "{ts} {:<5} room {}: {msg}",
                    level.name().to_uppercase(),
                    self.doc
                );
                s
            }
            LogFormat::Json => {
                let mut s = String::from("{\"ts\":");
                write_str(&mut s, &ts);
                s.push_str(",\"level\":");
                write_str(&mut s, level.name());
                s.push_str(",\"doc\":");
                write_str(&mut s, &self.doc);
                s.push_str(",\"msg\":");
                write_str(&mut s, msg);
                s.push('}');
                s
            }
        }
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_now() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    rfc3339(ms)
}

/// Formats ms since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC).
pub fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil-from-days (proleptic Gregorian), Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn formats_utc_timestamps() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn json_lines_escape_the_message() {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l2 = lines.clone();
        let log = Logger::with_sink(
            "d\"1",
            LogFormat::Json,
            Arc::new(move |_, line: &str| l2.lock().unwrap().push(line.to_string())),
        );
        log.warn("a \"quoted\" thing");
        let line = lines.lock().unwrap()[0].clone();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["level"], "warn");
        assert_eq!(v["doc"], "d\"1");
        assert_eq!(v["msg"], "a \"quoted\" thing");
    }
}

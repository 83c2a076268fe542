//! Logs on stderr, one line per record, through the [`log`] facade: the server's own
//! lines and those of its dependencies (tungstenite, async-io, …) alike, filtered by
//! `RINDLE_LOG` ([`Filter`]) and written as `text` or `json` (`[server] log_format`).
//!
//! Text: `2026-01-02T03:04:05.678Z INFO  room doc/1: upstream hello: epoch 3` for a
//! room's lines, `2026-01-02T03:04:05.678Z DEBUG tungstenite::protocol: …` for others.
//! JSON: `{"ts":"2026-01-02T03:04:05.678Z","level":"info","target":"…","doc":"doc/1",
//! "msg":"…"}` (`doc` only on a room's lines).
//!
//! A [`Logger`] names its room's document and logs under [`TARGET`] (the host's lines:
//! [`ROOM_TARGET`]); [`Logger::stderr`] installs the process's stderr logger unless the
//! embedding program installed its own `log` logger first, which then receives the
//! records (the document as the key-value `doc`). Embedders and tests can hand every
//! line to a sink instead ([`Logger::with_sink`]).

mod filter;

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use rindle_room_core::json::write::write_str;

pub use filter::Filter;

use crate::config::LogFormat;

/// The target of the server's own lines (start-up, listeners, fleet, journal).
pub const TARGET: &str = "rindle_room_smol::server";
/// The target of a room host's lines: incarnations, connections, subscriptions,
/// mutations, flushes.
pub const ROOM_TARGET: &str = "rindle_room_smol::server::room";
/// The target of the upstream transport's lines (snapshot progress).
pub const UPSTREAM_TARGET: &str = "rindle_room_smol::server::upstream";
/// The environment variable that holds the [`Filter`].
pub const ENV: &str = "RINDLE_LOG";

/// How serious a log line is: the host's levels, one enum for the core and the server.
pub use rindle_room_core::host::Level;

/// The `log` facade's level of `level`.
fn to_log(level: Level) -> log::Level {
    match level {
        Level::Debug => log::Level::Debug,
        Level::Info => log::Level::Info,
        Level::Warn => log::Level::Warn,
        Level::Error => log::Level::Error,
    }
}

/// Where formatted lines go.
pub type LogSink = Arc<dyn Fn(Level, &str) + Send + Sync>;

/// A room's logger: a document id, a format and a destination (the `log` facade, or a
/// sink).
#[derive(Clone)]
pub struct Logger {
    doc: Arc<str>,
    format: LogFormat,
    target: &'static str,
    sink: Option<LogSink>,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Logger")
            .field("doc", &self.doc)
            .field("format", &self.format)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Logger {
    /// A logger for `doc` through the `log` facade, installing the stderr logger in
    /// `format` first ([`install`]).
    pub fn stderr(doc: &str, format: LogFormat) -> Logger {
        install(format);
        Logger {
            doc: Arc::from(doc),
            format,
            target: TARGET,
            sink: None,
        }
    }

    /// A logger handing every formatted line (all levels) to `sink` instead.
    pub fn with_sink(doc: &str, format: LogFormat, sink: LogSink) -> Logger {
        Logger {
            doc: Arc::from(doc),
            format,
            target: TARGET,
            sink: Some(sink),
        }
    }

    /// Whether a line of `level` under `target` would be written.
    pub fn enabled_for(&self, target: &str, level: Level) -> bool {
        if self.sink.is_some() {
            return true;
        }
        let level = to_log(level);
        level <= log::max_level()
            && log::logger().enabled(&log::Metadata::builder().level(level).target(target).build())
    }

    /// The lowest level written under `target` ([`Level::Error`] when none is).
    pub fn min_level_for(&self, target: &str) -> Level {
        [Level::Debug, Level::Info, Level::Warn]
            .into_iter()
            .find(|l| self.enabled_for(target, *l))
            .unwrap_or(Level::Error)
    }

    /// Logs one line under this logger's target.
    pub fn log(&self, level: Level, msg: &str) {
        self.log_to(self.target, level, msg);
    }

    /// Logs one line under `target`.
    pub fn log_to(&self, target: &str, level: Level, msg: &str) {
        if let Some(sink) = &self.sink {
            let line = format_line(
                self.format,
                to_log(level),
                target,
                Some(&self.doc),
                format_args!("{msg}"),
            );
            sink(level, &line);
            return;
        }
        if !self.enabled_for(target, level) {
            return;
        }
        let doc: &str = &self.doc;
        let kvs = [("doc", doc)];
        log::logger().log(
            &log::Record::builder()
                .level(to_log(level))
                .target(target)
                .args(format_args!("{msg}"))
                .key_values(&kvs)
                .build(),
        );
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
}

/// Writes text with control characters (C0, DEL, C1, and the Unicode line and paragraph
/// separators) escaped as `\n`, `\r`, `\t` or `\u{..}`.
struct Escaped<'a>(&'a mut String);

impl std::fmt::Write for Escaped<'_> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        for c in text.chars() {
            match c {
                '\n' => self.0.push_str("\\n"),
                '\r' => self.0.push_str("\\r"),
                '\t' => self.0.push_str("\\t"),
                c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                    let _ = write!(self.0, "\\u{{{:x}}}", c as u32);
                }
                c => self.0.push(c),
            }
        }
        Ok(())
    }
}

/// One line in `format`; `doc` names a room's document.
fn format_line(
    format: LogFormat,
    level: log::Level,
    target: &str,
    doc: Option<&str>,
    msg: std::fmt::Arguments<'_>,
) -> String {
    let ts = rfc3339_now();
    let mut s = String::with_capacity(64);
    match format {
        LogFormat::Text => {
            let _ = write!(s, "{ts} {:<5} ", level.as_str());
            // One record is one line: a control character a client put in a doc name,
            // a clientID or a reason is written escaped, so it cannot forge a line.
            let mut line = Escaped(&mut s);
            match doc {
                Some(doc) => {
                    let _ = write!(line, "room {doc}: {msg}");
                }
                None => {
                    let _ = write!(line, "{target}: {msg}");
                }
            }
        }
        LogFormat::Json => {
            s.push_str("{\"ts\":");
            write_str(&mut s, &ts);
            s.push_str(",\"level\":");
            write_str(&mut s, &level.as_str().to_ascii_lowercase());
            s.push_str(",\"target\":");
            write_str(&mut s, target);
            if let Some(doc) = doc {
                s.push_str(",\"doc\":");
                write_str(&mut s, doc);
            }
            s.push_str(",\"msg\":");
            match msg.as_str() {
                Some(text) => write_str(&mut s, text),
                None => write_str(&mut s, &msg.to_string()),
            }
            s.push('}');
        }
    }
    s
}

/// The process's stderr logger.
struct StderrLog {
    filter: Filter,
    json: AtomicBool,
}

impl log::Log for StderrLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        self.filter.enabled(metadata.target(), metadata.level())
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let value = record.key_values().get(log::kv::Key::from_str("doc"));
        let doc = value.as_ref().and_then(|v| v.to_borrowed_str());
        let format = if self.json.load(Ordering::Relaxed) {
            LogFormat::Json
        } else {
            LogFormat::Text
        };
        let line = format_line(format, record.level(), record.target(), doc, *record.args());
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    }

    fn flush(&self) {
        let _ = std::io::stderr().flush();
    }
}

static STDERR_LOG: OnceLock<StderrLog> = OnceLock::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Installs the stderr logger as the process's `log` logger, with the [`Filter`] from
/// `RINDLE_LOG`, writing `format` lines (a later call changes the format). Returns
/// `false` when the program installed another logger, which then keeps every record.
/// Directives of `RINDLE_LOG` that do not parse are reported as warnings.
pub fn install(format: LogFormat) -> bool {
    let mut problems = Vec::new();
    let logger = STDERR_LOG.get_or_init(|| {
        let spec = std::env::var(ENV).unwrap_or_default();
        let (filter, bad) = Filter::parse(&spec);
        problems = bad;
        StderrLog {
            filter,
            json: AtomicBool::new(false),
        }
    });
    logger
        .json
        .store(format == LogFormat::Json, Ordering::Relaxed);
    if log::set_logger(logger).is_ok() {
        log::set_max_level(logger.filter.max_level());
        INSTALLED.store(true, Ordering::SeqCst);
    }
    for p in problems {
        log::warn!(target: TARGET, "{ENV}: ignored directive {p}");
    }
    INSTALLED.load(Ordering::SeqCst)
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

/// The least severe level `log` keeps for the room's lines: the host does not even
/// format lines the logger would drop.
pub(crate) fn host_log_level(log: &Logger) -> Level {
    log.min_level_for(ROOM_TARGET)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn text_lines_cannot_be_forged() {
        let line = format_line(
            LogFormat::Text,
            log::Level::Info,
            ROOM_TARGET,
            Some("demo/x\nERROR room demo/issues-a: journal corrupt, wiping"),
            format_args!("reason: a\r\tb\u{1b}[31m\u{2028}c\u{85}"),
        );
        assert!(!line.contains('\n') && !line.contains('\r'), "{line}");
        assert!(
            line.ends_with(
                " INFO  room demo/x\\nERROR room demo/issues-a: journal corrupt, wiping: \
                 reason: a\\r\\tb\\u{1b}[31m\\u{2028}c\\u{85}"
            ),
            "{line}"
        );
    }

    #[test]
    fn formats_utc_timestamps() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    fn captured(format: LogFormat) -> (Logger, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l2 = lines.clone();
        let log = Logger::with_sink(
            "d\"1",
            format,
            Arc::new(move |_, line: &str| l2.lock().unwrap().push(line.to_string())),
        );
        (log, lines)
    }

    #[test]
    fn json_lines_escape_the_message() {
        let (log, lines) = captured(LogFormat::Json);
        log.warn("a \"quoted\" thing");
        let line = lines.lock().unwrap()[0].clone();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["level"], "warn");
        assert_eq!(v["target"], TARGET);
        assert_eq!(v["doc"], "d\"1");
        assert_eq!(v["msg"], "a \"quoted\" thing");
    }

    #[test]
    fn text_lines_name_the_room_or_the_target() {
        let (log, lines) = captured(LogFormat::Text);
        log.log_to(ROOM_TARGET, Level::Debug, "conn 1: open");
        let line = lines.lock().unwrap()[0].clone();
        assert!(line.ends_with(" DEBUG room d\"1: conn 1: open"), "{line}");
        let other = format_line(
            LogFormat::Text,
            log::Level::Trace,
            "tungstenite::protocol",
            None,
            format_args!("frame {}", 7),
        );
        assert!(
            other.ends_with(" TRACE tungstenite::protocol: frame 7"),
            "{other}"
        );
        let json = format_line(
            LogFormat::Json,
            log::Level::Info,
            "async_io::driver",
            None,
            format_args!("x"),
        );
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["level"], "info");
        assert_eq!(v["target"], "async_io::driver");
        assert!(v.get("doc").is_none());
    }

    #[test]
    fn a_sink_takes_every_level() {
        let (log, _) = captured(LogFormat::Text);
        assert_eq!(log.min_level_for(ROOM_TARGET), Level::Debug);
    }
}

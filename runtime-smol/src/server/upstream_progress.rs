//! Progress while a large upstream frame arrives (a seq-0 snapshot of many rows can take
//! seconds to come over the socket): the upstream socket's reads are counted, and a frame
//! still arriving after [`QUIET`] gets an info line every [`EVERY_ROWS`] rows or
//! [`EVERY`], whichever comes first, then one when it is complete — rows, bytes and the
//! time so far, under the target `rindle_room_smol::server::upstream`.
//!
//! Rows are the frame's `"op":"add"` members as they stream by: a snapshot is one add
//! per row, written compactly by the daemon, and the text can hold that sequence nowhere
//! else (inside a JSON string its quotes would be escaped).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_lite::io::{AsyncRead, AsyncWrite};

use super::log::UPSTREAM_TARGET;

/// A frame arriving for less than this is not reported.
pub const QUIET: Duration = Duration::from_secs(1);
/// The longest gap between two progress lines of one frame.
pub const EVERY: Duration = Duration::from_secs(2);
/// A progress line at least every this many rows.
pub const EVERY_ROWS: u64 = 50_000;

const ROW: &[u8] = b"\"op\":\"add\"";

/// The progress of the frame arriving on one upstream socket.
#[derive(Debug)]
pub(crate) struct FrameMeter {
    /// The socket, for the log lines.
    url: String,
    state: Mutex<Meter>,
}

#[derive(Debug, Default)]
struct Meter {
    started: Option<Instant>,
    bytes: u64,
    rows: u64,
    /// The last `ROW.len() - 1` bytes read, for a row marker split across two reads.
    tail: Vec<u8>,
    last_line: Option<(Instant, u64)>,
}

/// One progress line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    pub rows: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

impl Meter {
    /// Counts `data`, read at `now`; a line when one is due.
    fn read(&mut self, data: &[u8], now: Instant) -> Option<Line> {
        if data.is_empty() {
            return None;
        }
        let started = *self.started.get_or_insert(now);
        self.bytes += data.len() as u64;
        self.rows += count_rows(&self.tail, data);
        let keep = ROW.len() - 1;
        if data.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&data[data.len() - keep..]);
        } else {
            self.tail.extend_from_slice(data);
            let excess = self.tail.len().saturating_sub(keep);
            self.tail.drain(..excess);
        }
        let elapsed = now.saturating_duration_since(started);
        if elapsed < QUIET {
            return None;
        }
        let due = match self.last_line {
            None => true,
            Some((at, rows)) => {
                now.saturating_duration_since(at) >= EVERY || self.rows >= rows + EVERY_ROWS
            }
        };
        if !due {
            return None;
        }
        self.last_line = Some((now, self.rows));
        Some(Line {
            rows: self.rows,
            bytes: self.bytes,
            elapsed,
        })
    }

    /// A frame was delivered: its summary if it was reported, and a fresh count.
    fn frame_done(&mut self, len: usize, now: Instant) -> Option<Line> {
        let reported = self.last_line.is_some();
        let line = Line {
            rows: self.rows,
            bytes: len as u64,
            elapsed: self
                .started
                .map_or(Duration::ZERO, |s| now.saturating_duration_since(s)),
        };
        *self = Meter::default();
        reported.then_some(line)
    }
}

/// Row markers in `data`, including one that starts in `tail` (the previous read's end).
fn count_rows(tail: &[u8], data: &[u8]) -> u64 {
    let mut n = 0;
    if !tail.is_empty() {
        let mut seam = tail.to_vec();
        seam.extend_from_slice(&data[..data.len().min(ROW.len() - 1)]);
        n += (0..tail.len())
            .filter(|&i| seam[i..].starts_with(ROW))
            .count() as u64;
    }
    n + data.windows(ROW.len()).filter(|w| *w == ROW).count() as u64
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

impl FrameMeter {
    /// A meter for the socket to `url`.
    pub(crate) fn new(url: &str) -> Arc<FrameMeter> {
        Arc::new(FrameMeter {
            url: url.to_string(),
            state: Mutex::new(Meter::default()),
        })
    }

    fn meter(&self) -> std::sync::MutexGuard<'_, Meter> {
        // A panic while counting leaves nothing half-updated that matters.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts bytes read from the socket.
    fn read(&self, data: &[u8]) {
        let line = self.meter().read(data, Instant::now());
        if let Some(l) = line {
            log::info!(
                target: UPSTREAM_TARGET,
                "upstream {}: a large frame is arriving: {} rows, {} in {:.1} s so far",
                self.url,
                l.rows,
                megabytes(l.bytes),
                l.elapsed.as_secs_f64()
            );
        }
    }

    /// A whole frame of `len` bytes was delivered.
    pub(crate) fn frame_done(&self, len: usize) {
        let line = self.meter().frame_done(len, Instant::now());
        if let Some(l) = line {
            log::info!(
                target: UPSTREAM_TARGET,
                "upstream {}: received a frame of {} rows, {} in {:.1} s; the room applies it",
                self.url,
                l.rows,
                megabytes(l.bytes),
                l.elapsed.as_secs_f64()
            );
        }
    }
}

/// A socket whose reads feed a [`FrameMeter`].
pub(crate) struct Metered<S> {
    inner: S,
    meter: Arc<FrameMeter>,
}

impl<S> Metered<S> {
    pub(crate) fn new(inner: S, meter: Arc<FrameMeter>) -> Metered<S> {
        Metered { inner, meter }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Metered<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.meter.read(&buf[..n]);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Metered<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_close(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_markers_are_counted_across_reads() {
        let text =
            br#"{"ops":[{"table":"t","op":"add","row":[1]},{"table":"t","op":"add","row":[2]}]}"#;
        for split in 0..text.len() {
            let mut m = Meter::default();
            let t0 = Instant::now();
            m.read(&text[..split], t0);
            m.read(&text[split..], t0);
            assert_eq!(m.rows, 2, "split at {split}");
            assert_eq!(m.bytes, text.len() as u64);
        }
        // One byte at a time.
        let mut m = Meter::default();
        let t0 = Instant::now();
        for b in text.iter() {
            m.read(std::slice::from_ref(b), t0);
        }
        assert_eq!(m.rows, 2);
        // Escaped inside a string, it is not a row.
        assert_eq!(count_rows(&[], br#"["\"op\":\"add\""]"#), 0);
    }

    #[test]
    fn lines_come_after_a_quiet_second_then_every_50000_rows_or_2_s() {
        let row = br#"{"table":"t","op":"add","row":[1]},"#;
        let rows = |n: usize| row.repeat(n);
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut m = Meter::default();
        assert_eq!(m.read(&rows(10), at(0)), None);
        assert_eq!(m.read(&rows(60_000), at(900)), None, "quiet for a second");
        let first = m.read(&rows(10), at(1_000)).expect("a line after a second");
        assert_eq!(
            (first.rows, first.elapsed),
            (60_020, Duration::from_secs(1))
        );
        assert_eq!(m.read(&rows(49_000), at(1_500)), None);
        let by_rows = m.read(&rows(1_000), at(1_600)).expect("50,000 more rows");
        assert_eq!(by_rows.rows, 110_020);
        assert_eq!(m.read(&rows(1), at(3_500)), None);
        assert!(
            m.read(&rows(1), at(3_600)).is_some(),
            "2 s since the last line"
        );
        let done = m.frame_done(123, at(4_000)).expect("a summary after lines");
        assert_eq!((done.rows, done.bytes), (110_022, 123));
        // A fresh frame that arrives quickly is not reported at all.
        assert_eq!(m.read(&rows(5), at(5_000)), None);
        assert_eq!(m.frame_done(10, at(5_100)), None);
    }
}

//! Progress while a large upstream frame arrives (a seq-0 snapshot of many rows can take
//! seconds to come over the socket): the upstream socket's reads are counted, and a frame
//! still arriving after [`QUIET`] gets an info line every [`EVERY_ROWS`] rows or
//! [`EVERY`], whichever comes first, then one when it is complete — rows, bytes and the
//! time so far, under the target `rindle_room_smol::server::upstream`.
//!
//! The meter follows the websocket framing of the bytes it reads (after the handshake
//! reply's blank line): only a data frame (text, binary, or the continuation of one)
//! starts or extends a count, and only its payload is counted. A control frame (ping,
//! pong, close) is skipped: a keep-alive ping from the upstream never reads as a large
//! frame that is arriving.
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
use super::upstream::{FromUpstream, HEARD_EVERY};

/// A frame arriving for less than this is not reported.
pub const QUIET: Duration = Duration::from_secs(1);
/// The longest gap between two progress lines of one frame.
pub const EVERY: Duration = Duration::from_secs(2);
/// A progress line at least every this many rows.
pub const EVERY_ROWS: u64 = 50_000;

const ROW: &[u8] = b"\"op\":\"add\"";
/// The blank line that ends the handshake reply; frames follow it.
const END_OF_HEADERS: &[u8] = b"\r\n\r\n";
/// The longest websocket frame header: 2 bytes, an 8-byte length, a 4-byte mask.
const MAX_HEADER: usize = 14;

/// The progress of the frame arriving on one upstream socket.
#[derive(Debug)]
pub(crate) struct FrameMeter {
    /// The socket, for the log lines.
    url: String,
    state: Mutex<Meter>,
    /// Where bytes read are reported as [`FromUpstream::Heard`], and when that was last
    /// done (at most once per [`HEARD_EVERY`]).
    heard: Option<(async_channel::Sender<FromUpstream>, Mutex<Option<Instant>>)>,
}

/// Where the byte stream is in the websocket framing.
#[derive(Debug)]
enum Framing {
    /// In the handshake reply: how many bytes of its closing blank line were just seen.
    Handshake { matched: usize },
    /// In a frame header: its bytes so far.
    Header { buf: [u8; MAX_HEADER], len: usize },
    /// In a frame's payload: bytes left, whether the frame carries data (text, binary,
    /// continuation) and whether it is the last frame of its message.
    Payload { left: u64, data: bool, fin: bool },
}

impl Default for Framing {
    fn default() -> Framing {
        Framing::Handshake { matched: 0 }
    }
}

/// The data message being counted.
#[derive(Debug, Default)]
struct Message {
    started: Option<Instant>,
    bytes: u64,
    rows: u64,
    /// The last `ROW.len() - 1` payload bytes, for a row marker split across two reads.
    tail: Vec<u8>,
    last_line: Option<(Instant, u64)>,
}

#[derive(Debug, Default)]
struct Meter {
    framing: Framing,
    message: Message,
}

/// One progress line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    pub rows: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

/// What a read of the socket has to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Report {
    /// A data message is still arriving.
    Arriving(Line),
    /// A data message that was reported while arriving is complete.
    Received(Line),
}

/// A frame header's length once its first two bytes are known.
fn header_len(b1: u8) -> usize {
    let ext = match b1 & 0x7f {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mask = if b1 & 0x80 != 0 { 4 } else { 0 };
    2 + ext + mask
}

/// A complete header's payload length.
fn payload_len(buf: &[u8]) -> u64 {
    match buf[1] & 0x7f {
        126 => u64::from(u16::from_be_bytes([buf[2], buf[3]])),
        127 => {
            let mut be = [0u8; 8];
            be.copy_from_slice(&buf[2..10]);
            u64::from_be_bytes(be)
        }
        n => u64::from(n),
    }
}

impl Message {
    /// Counts `data`, payload bytes of a data frame.
    fn count(&mut self, data: &[u8]) {
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
    }

    /// A progress line, when one is due at `now`.
    fn due(&mut self, now: Instant) -> Option<Line> {
        let started = self.started?;
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

    /// The message is complete: its summary if it was reported, and a fresh count.
    fn done(&mut self, now: Instant) -> Option<Line> {
        let reported = self.last_line.is_some();
        let line = Line {
            rows: self.rows,
            bytes: self.bytes,
            elapsed: self
                .started
                .map_or(Duration::ZERO, |s| now.saturating_duration_since(s)),
        };
        *self = Message::default();
        reported.then_some(line)
    }
}

impl Meter {
    /// Follows `data`, read at `now`, through the framing; what it has to report.
    fn read(&mut self, mut data: &[u8], now: Instant) -> Vec<Report> {
        let mut reports = Vec::new();
        // Whether this read carried payload of the message being counted: only such a
        // read may report progress (a control frame neither starts nor extends a count).
        let mut counted = false;
        while !data.is_empty() {
            match &mut self.framing {
                Framing::Handshake { matched } => {
                    let b = data[0];
                    data = &data[1..];
                    *matched = if b == END_OF_HEADERS[*matched] {
                        *matched + 1
                    } else {
                        usize::from(b == END_OF_HEADERS[0])
                    };
                    if *matched == END_OF_HEADERS.len() {
                        self.framing = Framing::Header {
                            buf: [0; MAX_HEADER],
                            len: 0,
                        };
                    }
                }
                Framing::Header { buf, len } => {
                    let need = if *len < 2 { 2 } else { header_len(buf[1]) };
                    let take = (need - *len).min(data.len());
                    buf[*len..*len + take].copy_from_slice(&data[..take]);
                    *len += take;
                    data = &data[take..];
                    if *len < 2 || *len < header_len(buf[1]) {
                        continue;
                    }
                    let fin = buf[0] & 0x80 != 0;
                    // Continuation (0), text (1) and binary (2) carry data; 8 and up are
                    // control frames.
                    let is_data = buf[0] & 0x0f <= 2;
                    let left = payload_len(&buf[..*len]);
                    if is_data {
                        self.message.started.get_or_insert(now);
                    }
                    self.framing = Framing::Payload {
                        left,
                        data: is_data,
                        fin,
                    };
                }
                Framing::Payload {
                    left,
                    data: is_data,
                    ..
                } => {
                    let take = usize::try_from(*left).map_or(data.len(), |l| l.min(data.len()));
                    if *is_data {
                        self.message.count(&data[..take]);
                        counted = true;
                    }
                    data = &data[take..];
                    *left -= take as u64;
                }
            }
            if let Framing::Payload {
                left: 0,
                data: is_data,
                fin,
            } = self.framing
            {
                if is_data && counted {
                    if let Some(line) = self.message.due(now) {
                        reports.push(Report::Arriving(line));
                    }
                    counted = false;
                }
                if is_data && fin {
                    if let Some(line) = self.message.done(now) {
                        reports.push(Report::Received(line));
                    }
                }
                self.framing = Framing::Header {
                    buf: [0; MAX_HEADER],
                    len: 0,
                };
            }
        }
        if counted {
            if let Some(line) = self.message.due(now) {
                reports.push(Report::Arriving(line));
            }
        }
        reports
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
    /// A meter for the socket to `url`; its first bytes are the handshake reply.
    pub(crate) fn new(
        url: &str,
        heard: Option<async_channel::Sender<FromUpstream>>,
    ) -> Arc<FrameMeter> {
        Arc::new(FrameMeter {
            url: url.to_string(),
            state: Mutex::new(Meter::default()),
            heard: heard.map(|tx| (tx, Mutex::new(None))),
        })
    }

    /// Reports bytes read as a sign of life, at most once per [`HEARD_EVERY`].
    fn heard(&self, now: Instant) {
        let Some((tx, last)) = &self.heard else {
            return;
        };
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_none_or(|at| now.duration_since(at) >= HEARD_EVERY) {
            *last = Some(now);
            // Anything already queued counts as a sign of life when it is handled.
            if tx.is_empty() {
                let _ = tx.try_send(FromUpstream::Heard);
            }
        }
    }

    fn meter(&self) -> std::sync::MutexGuard<'_, Meter> {
        // A panic while counting leaves nothing half-updated that matters.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts bytes read from the socket.
    fn read(&self, data: &[u8]) {
        let now = Instant::now();
        if !data.is_empty() {
            self.heard(now);
        }
        let reports = self.meter().read(data, now);
        for report in reports {
            match report {
                Report::Arriving(l) => log::info!(
                    target: UPSTREAM_TARGET,
                    "upstream {}: a large frame is arriving: {} rows, {} in {:.1} s so far",
                    self.url,
                    l.rows,
                    megabytes(l.bytes),
                    l.elapsed.as_secs_f64()
                ),
                Report::Received(l) => log::info!(
                    target: UPSTREAM_TARGET,
                    "upstream {}: received a frame of {} rows, {} in {:.1} s; the room \
                     applies it",
                    self.url,
                    l.rows,
                    megabytes(l.bytes),
                    l.elapsed.as_secs_f64()
                ),
            }
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

    const HANDSHAKE: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
        Connection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n";

    /// A frame as a server writes it (unmasked), or masked with `mask`.
    fn frame_with(opcode: u8, fin: bool, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
        let mut f = vec![opcode | if fin { 0x80 } else { 0 }];
        let m = if mask.is_some() { 0x80 } else { 0 };
        match payload.len() {
            n if n < 126 => f.push(m | n as u8),
            n if n <= 0xffff => {
                f.push(m | 126);
                f.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                f.push(m | 127);
                f.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        match mask {
            Some(key) => {
                f.extend_from_slice(&key);
                f.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
            }
            None => f.extend_from_slice(payload),
        }
        f
    }

    fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
        frame_with(opcode, true, payload, None)
    }

    const TEXT: u8 = 1;
    const PING: u8 = 9;
    const PONG: u8 = 10;
    const CLOSE: u8 = 8;

    /// A meter past the handshake reply.
    fn open_meter(t0: Instant) -> Meter {
        let mut m = Meter::default();
        assert_eq!(m.read(HANDSHAKE, t0), vec![]);
        m
    }

    fn rows(n: usize) -> Vec<u8> {
        br#"{"table":"t","op":"add","row":[1]},"#.repeat(n)
    }

    #[test]
    fn row_markers_are_counted_across_reads() {
        let text =
            br#"{"ops":[{"table":"t","op":"add","row":[1]},{"table":"t","op":"add","row":[2]}]}"#;
        let bytes = frame_with(TEXT, false, text, None);
        for split in 0..bytes.len() {
            let t0 = Instant::now();
            let mut m = open_meter(t0);
            m.read(&bytes[..split], t0);
            m.read(&bytes[split..], t0);
            assert_eq!(m.message.rows, 2, "split at {split}");
            assert_eq!(m.message.bytes, text.len() as u64);
        }
        // One byte at a time, the handshake reply too.
        let mut m = Meter::default();
        let t0 = Instant::now();
        for b in HANDSHAKE.iter().chain(&bytes) {
            m.read(std::slice::from_ref(b), t0);
        }
        assert_eq!(m.message.rows, 2);
        // Escaped inside a string, it is not a row.
        assert_eq!(count_rows(&[], br#"["\"op\":\"add\""]"#), 0);
    }

    #[test]
    fn lines_come_after_a_quiet_second_then_every_50000_rows_or_2_s() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut m = open_meter(t0);
        let body = [rows(60_020), rows(50_000), rows(2)].concat();
        let whole = frame(TEXT, &body);
        let header = whole.len() - body.len();
        let mut pieces = vec![];
        let mut from = 0;
        for (to, ms) in [
            (header + rows(10).len(), 0),
            (header + rows(60_010).len(), 900),
            (header + rows(60_020).len(), 1_000),
            (header + rows(109_020).len(), 1_500),
            (header + rows(110_020).len(), 1_600),
            (header + rows(110_021).len(), 3_500),
            (whole.len() - 1, 3_600),
            (whole.len(), 4_000),
        ] {
            pieces.push((&whole[from..to], at(ms)));
            from = to;
        }
        let mut out = pieces.into_iter().map(|(bytes, now)| m.read(bytes, now));
        assert_eq!(out.next().unwrap(), vec![]);
        assert_eq!(out.next().unwrap(), vec![], "quiet for a second");
        let first = Line {
            rows: 60_020,
            bytes: rows(60_020).len() as u64,
            elapsed: Duration::from_secs(1),
        };
        assert_eq!(out.next().unwrap(), vec![Report::Arriving(first)]);
        assert_eq!(out.next().unwrap(), vec![]);
        let by_rows = out.next().unwrap();
        assert!(
            matches!(&by_rows[..], [Report::Arriving(l)] if l.rows == 110_020),
            "50,000 more rows: {by_rows:?}"
        );
        assert_eq!(out.next().unwrap(), vec![]);
        let by_time = out.next().unwrap();
        assert!(
            matches!(&by_time[..], [Report::Arriving(_)]),
            "2 s since the last line: {by_time:?}"
        );
        let done = Line {
            rows: 110_022,
            bytes: body.len() as u64,
            elapsed: Duration::from_secs(4),
        };
        assert_eq!(out.next().unwrap(), vec![Report::Received(done)]);
        // A fresh frame that arrives quickly is not reported at all.
        let quick = frame(TEXT, &rows(5));
        assert_eq!(m.read(&quick[..9], at(5_000)), vec![]);
        assert_eq!(m.read(&quick[9..], at(5_100)), vec![]);
    }

    #[test]
    fn control_frames_neither_start_nor_extend_a_count() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut m = open_meter(t0);
        // The dev edge's keep-alive: a ping every 15 s, nothing else.
        for s in [0, 15, 30, 45] {
            assert_eq!(
                m.read(&frame(PING, b"keep-alive"), at(s)),
                vec![],
                "ping at {s} s"
            );
            assert_eq!(m.read(&frame(PONG, b""), at(s)), vec![], "pong at {s} s");
            assert!(
                m.message.started.is_none(),
                "a ping started the meter at {s} s"
            );
        }
        // A ping whose header and payload arrive apart is still not a frame arriving.
        let ping = frame(PING, b"split");
        assert_eq!(m.read(&ping[..1], at(50)), vec![]);
        assert_eq!(m.read(&ping[1..3], at(60)), vec![]);
        assert_eq!(m.read(&ping[3..], at(70)), vec![]);
        assert!(m.message.started.is_none());
        // Then a message in two fragments with pings between them: counted from its own
        // first frame, and the pings' reads say nothing even once it is past quiet.
        let first = frame_with(TEXT, false, &rows(3), None);
        assert_eq!(m.read(&first, at(100)), vec![]);
        assert_eq!(m.message.started, Some(at(100)));
        assert_eq!(
            m.read(&frame(PING, b""), at(102)),
            vec![],
            "a ping extends nothing"
        );
        assert_eq!(m.read(&frame(PING, b"x"), at(105)), vec![]);
        let last = frame_with(0, true, &rows(2), None);
        let reports = m.read(&last, at(106));
        let Some(Report::Received(l)) = reports.last() else {
            panic!("the message ends with a summary: {reports:?}");
        };
        assert_eq!((l.rows, l.elapsed), (5, Duration::from_secs(6)));
        assert!(m.message.started.is_none());
        // A close frame does not start one either.
        assert_eq!(m.read(&frame(CLOSE, &[3, 232]), at(200)), vec![]);
        assert!(m.message.started.is_none());
    }

    #[test]
    fn long_and_masked_headers_are_followed() {
        let t0 = Instant::now();
        let mut m = open_meter(t0);
        let long = rows(3_000); // past 64 KiB: an 8-byte length
        assert!(long.len() > 0xffff);
        let mid = rows(100); // a 2-byte length
        let bytes = [
            frame(TEXT, &mid),
            frame_with(PING, true, b"ping", Some([1, 2, 3, 4])),
            frame(2, &long),
            frame(TEXT, b""),
        ]
        .concat();
        for chunk in bytes.chunks(7) {
            assert_eq!(m.read(chunk, t0), vec![]);
        }
        assert!(
            matches!(m.framing, Framing::Header { len: 0, .. }),
            "{:?}",
            m.framing
        );
        assert!(m.message.started.is_none(), "every message was complete");
        // A data frame has started once its header is read, before any payload.
        let next = frame(TEXT, &mid);
        assert_eq!(m.read(&next[..3], t0), vec![]);
        assert!(m.message.started.is_none(), "half a header starts nothing");
        assert_eq!(m.read(&next[3..4], t0), vec![]);
        assert_eq!(m.message.started, Some(t0));
    }
}

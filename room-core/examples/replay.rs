//! Replays JSON-contract calls from stdin, one per line:
//!
//! ```text
//! {"call": "open", "args": [{"epoch":1,"comparatorVersion":2,"tables":[...],"normalizedFp":"..."}, 30000]}
//! {"call": "apply", "args": [{"epoch":1,"seq":0,"normalizedFp":"...","ops":[...]}]}
//! {"call": "subscribe", "args": ["c1:1", 1, {"table":"note"}, 0]}
//! {"call": "commitAll", "args": []}
//! ```
//!
//! and writes one reply line per call: `{"ok": <result>}` or `{"err": "<message>"}`.
//! JSON-text arguments are given as JSON values; `open` creates the room.
//!
//! A line that takes more than a second to read (a large snapshot on a slow pipe) gets
//! progress lines on stderr every 50,000 rows or 2 s — rows (`"op":"add"` members),
//! bytes and seconds so far — and a call that took more than a second to read and answer
//! gets a summary there too. Stdout holds only the replies.
//!
//! Run: `cargo run -p rindle-room-core --example replay < calls.jsonl`

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use rindle_room_core::calls::replay_line;

const ROW: &[u8] = b"\"op\":\"add\"";

/// How one line is coming along.
struct Progress {
    started: Instant,
    last: Option<(Instant, u64)>,
    rows: u64,
    bytes: u64,
    /// The previous chunk's last bytes, for a row marker split across two chunks.
    seam: Vec<u8>,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            started: Instant::now(),
            last: None,
            rows: 0,
            bytes: 0,
            seam: Vec::new(),
        }
    }

    fn feed(&mut self, chunk: &[u8], line: usize) {
        let mut joined = std::mem::take(&mut self.seam);
        let seam_len = joined.len();
        joined.extend_from_slice(&chunk[..chunk.len().min(ROW.len() - 1)]);
        self.rows += (0..seam_len)
            .filter(|&i| joined[i..].starts_with(ROW))
            .count() as u64;
        self.rows += chunk.windows(ROW.len()).filter(|w| *w == ROW).count() as u64;
        self.bytes += chunk.len() as u64;
        let mut seam = joined;
        seam.clear();
        seam.extend_from_slice(&chunk[chunk.len().saturating_sub(ROW.len() - 1)..]);
        self.seam = seam;
        let now = Instant::now();
        let elapsed = now - self.started;
        let due = match self.last {
            None => elapsed >= Duration::from_secs(1),
            Some((at, rows)) => now - at >= Duration::from_secs(2) || self.rows >= rows + 50_000,
        };
        if due {
            self.last = Some((now, self.rows));
            eprintln!(
                "replay: line {line}: reading: {} rows, {:.1} MB in {:.1} s so far",
                self.rows,
                self.bytes as f64 / 1e6,
                elapsed.as_secs_f64()
            );
        }
    }
}

/// Reads one line (without its newline) into `line`, reporting progress; `false` at the
/// end of the input.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>, n: usize) -> std::io::Result<Progress> {
    line.clear();
    let mut progress = Progress::new();
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok(progress);
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        progress.feed(&buf[..take], n);
        line.extend_from_slice(&buf[..take]);
        input.consume(take);
        if done {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(progress);
        }
    }
}

fn main() {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut room = None;
    let mut bytes = Vec::new();
    for n in 1.. {
        let progress = match read_line(&mut input, &mut bytes, n) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("replay: cannot read stdin: {e}");
                std::process::exit(1);
            }
        };
        if progress.bytes == 0 {
            break;
        }
        let Ok(line) = std::str::from_utf8(&bytes) else {
            eprintln!("replay: line {n} is not UTF-8");
            std::process::exit(1);
        };
        if line.trim().is_empty() {
            continue;
        }
        let read = progress.started.elapsed();
        let reply = replay_line(&mut room, line);
        let total = progress.started.elapsed();
        if total >= Duration::from_secs(1) {
            eprintln!(
                "replay: line {n}: {} rows, {:.1} MB read in {:.1} s, answered in {:.1} s",
                progress.rows,
                progress.bytes as f64 / 1e6,
                read.as_secs_f64(),
                (total - read).as_secs_f64()
            );
        }
        if writeln!(out, "{reply}").is_err() {
            std::process::exit(1);
        }
    }
    let _ = out.flush();
}

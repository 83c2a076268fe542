//! The buffered reader both sides use: heads, `Content-Length` bodies, `chunked`
//! bodies and close-delimited bodies, each under a cap.

use std::io;

use futures_lite::io::{AsyncRead, AsyncReadExt};

use super::error::{http_error, malformed, HttpError};
use super::framing::{Head, HeadParser, MAX_HEAD_BYTES};

/// The longest chunk-size line (size + extensions) accepted in a chunked body.
const MAX_CHUNK_LINE: usize = 4096;

/// Heads shorter than this are re-parsed on every read (early refusal of junk).
const EAGER_PARSE_BYTES: usize = 512;

/// Socket read granularity.
const READ_CHUNK: usize = 16 * 1024;

/// A buffered reader over a borrowed stream; only ever over-reads while parsing a head
/// or a chunk line, never past a body's declared end.
pub(super) struct Reader<'a, S> {
    pub(super) stream: &'a mut S,
    buf: Vec<u8>,
    pos: usize,
}

impl<'a, S: AsyncRead + Unpin> Reader<'a, S> {
    pub(super) fn new(stream: &'a mut S) -> Self {
        Reader {
            stream,
            buf: Vec::new(),
            pos: 0,
        }
    }

    pub(super) fn available(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Read more bytes into the buffer; 0 on EOF.
    async fn fill(&mut self) -> io::Result<usize> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let old = self.buf.len();
        self.buf.resize(old + READ_CHUNK, 0);
        let res = self.stream.read(&mut self.buf[old..]).await;
        let n = *res.as_ref().unwrap_or(&0);
        self.buf.truncate(old + n);
        res
    }

    /// Read a head with `parse`. `Ok(None)` only when `clean_eof_ok` and the stream ended
    /// before any byte arrived.
    pub(super) async fn read_head(
        &mut self,
        parse: HeadParser,
        clean_eof_ok: bool,
    ) -> io::Result<Option<Head>> {
        // Offset (into `available()`) up to which no head terminator was found. Re-parsing
        // only when a terminator may have arrived keeps a byte-at-a-time peer linear; short
        // prefixes are still parsed eagerly so junk is refused without waiting for more.
        let mut scanned = 0;
        loop {
            let avail = self.available();
            let probe = &avail[..avail.len().min(MAX_HEAD_BYTES)];
            let from = scanned.min(probe.len()).saturating_sub(3);
            let terminated = probe[from..].windows(2).any(|w| w == b"\n\n")
                || probe[from..].windows(3).any(|w| w == b"\n\r\n");
            if terminated || probe.len() <= EAGER_PARSE_BYTES {
                if let Some((n, head)) = parse(probe)? {
                    self.pos += n;
                    return Ok(Some(head));
                }
            }
            scanned = probe.len();
            if avail.len() >= MAX_HEAD_BYTES {
                return Err(HttpError::HeadTooLarge.into());
            }
            if self.fill().await? == 0 {
                if clean_eof_ok && self.available().is_empty() {
                    return Ok(None);
                }
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "EOF inside the head",
                ));
            }
        }
    }

    /// Exactly `n` body bytes (the caller has bounded `n`).
    pub(super) async fn read_exact_vec(&mut self, n: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_exact_into(&mut out, n).await?;
        Ok(out)
    }

    async fn read_exact_into(&mut self, out: &mut Vec<u8>, n: usize) -> io::Result<()> {
        let take = n.min(self.available().len());
        out.extend_from_slice(&self.buf[self.pos..self.pos + take]);
        self.pos += take;
        let mut filled = out.len();
        let end = filled + (n - take);
        // Grow as data arrives rather than trusting the declared length up front.
        while filled < end {
            let step = (end - filled).min(READ_CHUNK.max(filled / 2));
            out.resize(filled + step, 0);
            let got = self.stream.read(&mut out[filled..filled + step]).await;
            let got = match got {
                Ok(0) => {
                    out.truncate(filled);
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("body truncated: {} of {} bytes", filled, end),
                    ));
                }
                Ok(k) => k,
                Err(e) => {
                    out.truncate(filled);
                    return Err(e);
                }
            };
            filled += got;
            out.truncate(filled);
        }
        Ok(())
    }

    /// One line (without its CRLF or bare LF), at most `max` bytes.
    async fn read_line(&mut self, max: usize) -> io::Result<Vec<u8>> {
        loop {
            let avail = self.available();
            if let Some(i) = avail.iter().position(|&b| b == b'\n') {
                let mut line = avail[..i].to_vec();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.len() > max {
                    return Err(malformed("line too long"));
                }
                self.pos += i + 1;
                return Ok(line);
            }
            if avail.len() > max.saturating_add(1) {
                return Err(malformed("line too long"));
            }
            if self.fill().await? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "EOF inside a chunked body",
                ));
            }
        }
    }

    /// A `chunked` body, at most `limit` bytes once decoded; trailers are read and dropped.
    pub(super) async fn read_chunked(
        &mut self,
        limit: usize,
        too_big: impl Fn() -> io::Error,
    ) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let line = self.read_line(MAX_CHUNK_LINE).await?;
            let size = parse_chunk_size(&line)?;
            if size == 0 {
                break;
            }
            if size > (limit - out.len()) as u64 {
                return Err(too_big());
            }
            self.read_exact_into(&mut out, size as usize).await?;
            // The CRLF after the data (max 0: anything else is "line too long").
            self.read_line(0).await.map_err(|e| match http_error(&e) {
                Some(HttpError::Malformed(_)) => malformed("chunk data not followed by CRLF"),
                _ => e,
            })?;
        }
        let mut trailer_bytes = 0usize;
        loop {
            let line = self.read_line(MAX_HEAD_BYTES).await?;
            if line.is_empty() {
                return Ok(out);
            }
            trailer_bytes += line.len() + 2;
            if trailer_bytes > MAX_HEAD_BYTES {
                return Err(HttpError::HeadTooLarge.into());
            }
        }
    }

    /// Everything until EOF, at most `limit` bytes.
    pub(super) async fn read_to_end(
        &mut self,
        limit: usize,
        too_big: impl Fn() -> io::Error,
    ) -> io::Result<Vec<u8>> {
        let mut out = self.available().to_vec();
        self.pos = self.buf.len();
        if out.len() > limit {
            return Err(too_big());
        }
        loop {
            let filled = out.len();
            // Read one byte past the limit so that "exactly limit" is accepted.
            let step = READ_CHUNK.min(limit.saturating_add(1) - filled);
            out.resize(filled + step, 0);
            let got = self.stream.read(&mut out[filled..]).await;
            match got {
                Ok(0) => {
                    out.truncate(filled);
                    return Ok(out);
                }
                Ok(k) => {
                    out.truncate(filled + k);
                    if out.len() > limit {
                        return Err(too_big());
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

fn parse_chunk_size(line: &[u8]) -> io::Result<u64> {
    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
    let digits = trim_ascii_ws(digits);
    if digits.is_empty() || digits.len() > 15 || !digits.iter().all(u8::is_ascii_hexdigit) {
        return Err(malformed(format!(
            "invalid chunk size {:?}",
            String::from_utf8_lossy(line)
        )));
    }
    let text = std::str::from_utf8(digits).map_err(|_| malformed("invalid chunk size"))?;
    u64::from_str_radix(text, 16).map_err(|_| malformed("invalid chunk size"))
}

fn trim_ascii_ws(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

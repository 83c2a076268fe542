//! A raw websocket client for the hostile-client tests: it does the upgrade by hand and
//! writes frames byte by byte, so it can send what a well-behaved library never would
//! (bad reserved bits, unmasked frames, invalid UTF-8, endless fragments).

use futures_lite::{AsyncReadExt, AsyncWriteExt, FutureExt};
use smol::net::TcpStream;

use super::WAIT;

/// Opcodes.
pub const CONT: u8 = 0x0;
pub const TEXT: u8 = 0x1;
pub const CLOSE: u8 = 0x8;
pub const PING: u8 = 0x9;

/// The upgrade request for `/`.
pub fn upgrade_request(port: u16) -> String {
    format!(
        "GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n\
         Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// One frame's bytes: `fin`, `rsv` (the three reserved bits, 0–7), `opcode`, masked
/// with a fixed key when `masked`.
pub fn frame(fin: bool, rsv: u8, opcode: u8, payload: &[u8], masked: bool) -> Vec<u8> {
    let mut out = vec![(u8::from(fin) << 7) | ((rsv & 7) << 4) | (opcode & 0xF)];
    let mask_bit = if masked { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(mask_bit | n as u8),
        n if n <= 0xFFFF => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    if masked {
        let key = [0x12, 0x34, 0x56, 0x78];
        out.extend_from_slice(&key);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    } else {
        out.extend_from_slice(payload);
    }
    out
}

/// A masked text frame (what a client sends).
pub fn text(payload: &str) -> Vec<u8> {
    frame(true, 0, TEXT, payload.as_bytes(), true)
}

/// How the server answered.
#[derive(Debug, PartialEq)]
pub enum Ending {
    /// A close frame: code and reason.
    Closed(u16, String),
    /// A close frame without a status.
    ClosedNoStatus,
    /// EOF or a reset without a close frame.
    Dropped,
}

/// A raw client connection.
pub struct RawWs {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl RawWs {
    /// Connects and upgrades; panics unless the server answers 101.
    pub async fn connect(port: u16) -> RawWs {
        let (status, ws) = RawWs::try_upgrade(port).await;
        assert_eq!(status, 101, "the upgrade succeeds");
        ws
    }

    /// Connects and sends the upgrade; returns the response's status code.
    pub async fn try_upgrade(port: u16) -> (u16, RawWs) {
        let mut stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("the room accepts connections");
        stream
            .write_all(upgrade_request(port).as_bytes())
            .await
            .unwrap();
        let mut ws = RawWs {
            stream,
            buf: Vec::new(),
        };
        let head = ws.read_head().await;
        let status = head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {head:?}"));
        (status, ws)
    }

    /// Reads up to the end of the HTTP response head.
    async fn read_head(&mut self) -> String {
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                self.buf.drain(..end + 4);
                return head;
            }
            if self.fill().await == 0 {
                return String::from_utf8_lossy(&self.buf).into_owned();
            }
        }
    }

    async fn fill(&mut self) -> usize {
        let mut chunk = [0u8; 8192];
        let read = async { self.stream.read(&mut chunk).await.unwrap_or(0) }
            .or(async {
                smol::Timer::after(WAIT).await;
                panic!("the server sent nothing for {WAIT:?}")
            })
            .await;
        self.buf.extend_from_slice(&chunk[..read]);
        read
    }

    /// Writes raw bytes (ignoring a reset: the server may already have closed).
    pub async fn send(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes).await;
    }

    /// The next server frame `(opcode, payload)`; `None` at EOF.
    pub async fn next_frame(&mut self) -> Option<(u8, Vec<u8>)> {
        loop {
            if let Some((op, payload, used)) = parse(&self.buf) {
                self.buf.drain(..used);
                return Some((op, payload));
            }
            if self.fill().await == 0 {
                return None;
            }
        }
    }

    /// Reads until the server's close (skipping data frames, which go to `texts`).
    pub async fn ending(&mut self, texts: &mut Vec<String>) -> Ending {
        while let Some((op, payload)) = self.next_frame().await {
            match op {
                CLOSE if payload.len() >= 2 => {
                    let code = u16::from_be_bytes([payload[0], payload[1]]);
                    let reason = String::from_utf8_lossy(&payload[2..]).into_owned();
                    return Ending::Closed(code, reason);
                }
                CLOSE => return Ending::ClosedNoStatus,
                TEXT => texts.push(String::from_utf8_lossy(&payload).into_owned()),
                _ => {}
            }
        }
        Ending::Dropped
    }

    /// Whether the server ends the TCP connection (EOF) within [`WAIT`], reading past
    /// anything it sends.
    pub async fn eof(&mut self) -> bool {
        loop {
            if self.fill().await == 0 {
                return true;
            }
        }
    }
}

/// Parses one unmasked server frame from `buf`: `(opcode, payload, bytes used)`.
fn parse(buf: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    if buf.len() < 2 {
        return None;
    }
    let op = buf[0] & 0xF;
    let (len, at) = match buf[1] & 0x7F {
        126 => (u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?]) as usize, 4),
        127 => {
            let b: [u8; 8] = buf.get(2..10)?.try_into().ok()?;
            (u64::from_be_bytes(b) as usize, 10)
        }
        n => (n as usize, 2),
    };
    let payload = buf.get(at..at + len)?.to_vec();
    Some((op, payload, at + len))
}

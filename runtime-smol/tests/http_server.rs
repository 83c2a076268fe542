//! `http::read_request` / `write_response` / `read_response` over in-memory streams:
//! framing, caps, error classes, and "never panics" on hostile bytes.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_lite::io::{AsyncRead, AsyncWrite, Cursor};
use rindle_room_smol::http::{
    error_status, read_request, read_request_continue, read_response, write_response,
    write_response_with, HttpError, Request, MAX_HEADERS, MAX_HEAD_BYTES,
};

/// Hands out at most `step` bytes per read (exercises every partial-parse path).
struct Drip {
    data: Vec<u8>,
    pos: usize,
    step: usize,
}

impl Drip {
    fn new(data: impl Into<Vec<u8>>, step: usize) -> Drip {
        Drip {
            data: data.into(),
            pos: 0,
            step: step.max(1),
        }
    }
}

impl AsyncRead for Drip {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let n = self.step.min(buf.len()).min(self.data.len() - self.pos);
        let start = self.pos;
        buf[..n].copy_from_slice(&self.data[start..start + n]);
        self.pos += n;
        Poll::Ready(Ok(n))
    }
}

/// Reads from `input`, records writes in `output`.
struct Duplex {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl AsyncRead for Duplex {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.input).poll_read(cx, buf)
    }
}

impl AsyncWrite for Duplex {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.output.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_close(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

fn parse(bytes: &[u8], max_body: usize) -> io::Result<Option<Request>> {
    smol::block_on(read_request(&mut Cursor::new(bytes.to_vec()), max_body))
}

fn parse_drip(bytes: &[u8], step: usize, max_body: usize) -> io::Result<Option<Request>> {
    smol::block_on(read_request(&mut Drip::new(bytes, step), max_body))
}

fn status_of(bytes: &[u8], max_body: usize) -> Option<u16> {
    let err = parse(bytes, max_body).expect_err("expected an error");
    error_status(&err)
}

#[test]
fn clean_eof_before_a_request_is_none() {
    assert!(parse(b"", 1024).unwrap().is_none());
}

#[test]
fn eof_inside_the_head_is_a_transport_error() {
    let err = parse(b"POST /x HTTP/1.1\r\nHost: a\r\n", 1024).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    assert_eq!(error_status(&err), None);
}

#[test]
fn eof_inside_the_body_is_a_transport_error() {
    let err = parse(b"POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", 1024).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    assert_eq!(error_status(&err), None);
}

#[test]
fn content_length_body_drip_fed() {
    let raw = b"POST /api/x?y=1 HTTP/1.1\r\nHost: h\r\nX-Cred: Secret Value\r\nContent-Length: 11\r\n\r\nhello world";
    for step in [1, 2, 3, 7, 64, 4096] {
        let req = parse_drip(raw, step, 1024).unwrap().unwrap();
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, "/api/x?y=1");
        assert_eq!(req.path_only(), "/api/x");
        assert_eq!(req.body, b"hello world");
        // Names lowercased, values verbatim, lookups case-insensitive.
        assert!(req
            .headers
            .contains(&("x-cred".to_owned(), "Secret Value".to_owned())));
        assert_eq!(req.header("X-CRED"), Some("Secret Value"));
        assert_eq!(req.header("host"), Some("h"));
        assert_eq!(req.header("absent"), None);
    }
}

#[test]
fn request_without_body_headers_has_empty_body() {
    let req = parse(b"GET /stats HTTP/1.1\r\nHost: h\r\n\r\n", 0)
        .unwrap()
        .unwrap();
    assert_eq!(req.method, "GET");
    assert!(req.body.is_empty());
}

#[test]
fn http_1_0_requests_are_accepted() {
    let req = parse(b"GET / HTTP/1.0\r\n\r\n", 0).unwrap().unwrap();
    assert_eq!(req.path, "/");
}

#[test]
fn chunked_request_body_decoded() {
    let raw = b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\
                5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n";
    for step in [1, 5, 1000] {
        let req = parse_drip(raw, step, 1024).unwrap().unwrap();
        assert_eq!(req.body, b"hello 0123456789");
    }
}

#[test]
fn body_limit_is_inclusive() {
    let raw = b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd";
    assert_eq!(parse(raw, 4).unwrap().unwrap().body, b"abcd");
    let chunked =
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n";
    assert_eq!(parse(chunked, 4).unwrap().unwrap().body, b"abcd");
}

#[test]
fn oversized_content_length_is_413_without_reading_the_body() {
    // The declared length alone decides: no body bytes need to arrive.
    let err = parse(b"POST / HTTP/1.1\r\nContent-Length: 5000\r\n\r\n", 4096).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert_eq!(error_status(&err), Some(413));
    let inner = err.get_ref().unwrap().downcast_ref::<HttpError>().unwrap();
    assert_eq!(inner, &HttpError::BodyTooLarge { limit: 4096 });
    // A huge declared length is no different.
    let raw = b"POST / HTTP/1.1\r\nContent-Length: 9999999999999999999\r\n\r\n";
    assert_eq!(status_of(raw, 4096), Some(413));
}

#[test]
fn oversized_chunked_body_is_413() {
    let raw =
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
    assert_eq!(status_of(raw, 5), Some(413));
    // A single chunk declaring more than the limit is refused before its data arrives.
    let raw = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFF\r\n";
    assert_eq!(status_of(raw, 1024), Some(413));
}

#[test]
fn oversized_head_is_431() {
    let mut raw = b"GET / HTTP/1.1\r\nX-Big: ".to_vec();
    raw.extend(std::iter::repeat_n(b'a', MAX_HEAD_BYTES + 10));
    raw.extend_from_slice(b"\r\n\r\n");
    assert_eq!(status_of(&raw, 1024), Some(431));
    // Even when the peer never finishes the head (no terminating blank line).
    let mut endless = b"GET / HTTP/1.1\r\n".to_vec();
    while endless.len() < MAX_HEAD_BYTES * 2 {
        endless.extend_from_slice(b"X-A: b\r\n");
    }
    assert_eq!(status_of(&endless, 1024), Some(431));
}

#[test]
fn too_many_headers_is_431() {
    let mut raw = b"GET / HTTP/1.1\r\n".to_vec();
    for i in 0..=MAX_HEADERS {
        raw.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
    }
    raw.extend_from_slice(b"\r\n");
    assert_eq!(status_of(&raw, 1024), Some(431));
}

#[test]
fn malformed_requests_are_400() {
    let cases: &[&[u8]] = &[
        b"NOT HTTP AT ALL\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"G(T / HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Header Name: x\r\n\r\n",
        b"GET / HTTP/1.1\r\n: empty-name\r\n\r\n",
        b"\x00\x01\x02\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: \r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 1, 2\r\n\r\nab",
        b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
    ];
    for raw in cases {
        let got = parse(raw, 1 << 20);
        let err = got.expect_err(&String::from_utf8_lossy(raw));
        assert_eq!(
            error_status(&err),
            Some(400),
            "{:?}: {err}",
            String::from_utf8_lossy(raw)
        );
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}

#[test]
fn repeated_identical_content_lengths_are_accepted() {
    let raw = b"POST / HTTP/1.1\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nab";
    assert_eq!(parse(raw, 16).unwrap().unwrap().body, b"ab");
}

#[test]
fn pipelined_bytes_after_the_request_are_not_part_of_it() {
    let raw = b"POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\nabGET / HTTP/1.1\r\n\r\n";
    assert_eq!(parse(raw, 16).unwrap().unwrap().body, b"ab");
}

#[test]
fn expect_continue_is_answered_by_read_request_continue() {
    let raw = b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n".to_vec();
    // Body not yet buffered → the interim response is written.
    let mut io = Duplex {
        input: Cursor::new(raw.clone()),
        output: Vec::new(),
    };
    let err = smol::block_on(read_request_continue(&mut io, 16)).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof); // (the body never came)
    assert_eq!(io.output, b"HTTP/1.1 100 Continue\r\n\r\n");

    // Oversized: refused before inviting the body.
    let big = b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 99\r\n\r\n".to_vec();
    let mut io = Duplex {
        input: Cursor::new(big),
        output: Vec::new(),
    };
    let err = smol::block_on(read_request_continue(&mut io, 16)).unwrap_err();
    assert_eq!(error_status(&err), Some(413));
    assert!(io.output.is_empty());

    // Body already sent with the head → no interim response needed.
    let mut whole = raw;
    whole.extend_from_slice(b"abc");
    let mut io = Duplex {
        input: Cursor::new(whole),
        output: Vec::new(),
    };
    let req = smol::block_on(read_request_continue(&mut io, 16))
        .unwrap()
        .unwrap();
    assert_eq!(req.body, b"abc");
    assert!(io.output.is_empty());
}

fn written(status: u16, ct: &str, body: &[u8]) -> io::Result<String> {
    let mut out = Vec::new();
    smol::block_on(write_response(&mut out, status, ct, body))?;
    Ok(String::from_utf8(out).unwrap())
}

#[test]
fn write_response_exact_bytes() {
    assert_eq!(
        written(200, "application/json", b"{\"ok\":true}").unwrap(),
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\
         Connection: close\r\n\r\n{\"ok\":true}"
    );
    assert_eq!(
        written(413, "text/plain", b"too big").unwrap(),
        "HTTP/1.1 413 Content Too Large\r\nContent-Type: text/plain\r\nContent-Length: 7\r\n\
         Connection: close\r\n\r\ntoo big"
    );
    // Empty content type: no Content-Type header.
    assert_eq!(
        written(404, "", b"").unwrap(),
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    // 204: neither body nor Content-Length.
    assert_eq!(
        written(204, "", b"").unwrap(),
        "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
    );
    // Unregistered code: empty reason phrase, still valid.
    assert!(written(599, "", b"")
        .unwrap()
        .starts_with("HTTP/1.1 599 \r\n"));
}

#[test]
fn write_response_refuses_bad_input() {
    assert_eq!(
        written(42, "", b"").unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        written(1000, "", b"").unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        written(204, "", b"x").unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    let injected = written(200, "text/plain\r\nSet-Cookie: a=b", b"");
    assert_eq!(injected.unwrap_err().kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn write_response_with_extra_headers() {
    let mut out = Vec::new();
    let extra = vec![
        ("WWW-Authenticate".to_owned(), "Bearer".to_owned()),
        ("Content-Length".to_owned(), "999".to_owned()), // ignored: we own framing
    ];
    smol::block_on(write_response_with(
        &mut out,
        401,
        &extra,
        "text/plain",
        b"no",
    ))
    .unwrap();
    let text = String::from_utf8(out.clone()).unwrap();
    assert!(text.starts_with("HTTP/1.1 401 Unauthorized\r\n"));
    assert!(text.contains("WWW-Authenticate: Bearer\r\n"));
    assert!(!text.contains("999"));
    // And it reads back.
    let resp = smol::block_on(read_response(&mut Cursor::new(out), false)).unwrap();
    assert_eq!(resp.status, 401);
    assert_eq!(resp.header("www-authenticate"), Some("Bearer"));
    assert_eq!(resp.body, b"no");
}

#[test]
fn read_response_framings_in_memory() {
    let read = |raw: &[u8], head: bool| smol::block_on(read_response(&mut Drip::new(raw, 3), head));
    let r = read(
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcEXTRA",
        false,
    )
    .unwrap();
    assert_eq!(r.body, b"abc");
    let r = read(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        false,
    )
    .unwrap();
    assert_eq!(
        r.body, b"abc",
        "transfer-encoding wins over content-length in responses"
    );
    let r = read(b"HTTP/1.0 200 OK\r\n\r\nuntil close", false).unwrap();
    assert_eq!(r.body, b"until close");
    let r = read(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx",
        false,
    )
    .unwrap();
    assert_eq!((r.status, r.body.as_slice()), (201, &b"x"[..]));
    let r = read(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", true).unwrap();
    assert!(r.body.is_empty(), "HEAD: no body whatever the headers say");
    let r = read(
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
        false,
    )
    .unwrap();
    assert!(r.body.is_empty());
    assert!(read(b"", false).is_err());
    let mut interims = Vec::new();
    for _ in 0..100 {
        interims.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    assert!(
        read(&interims, false).is_err(),
        "endless 1xx responses are refused"
    );
}

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..=rng.below(6) {
        match rng.below(5) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v.truncate(i);
            }
            2 => {
                let i = rng.below(v.len() + 1);
                let pieces: [&[u8]; 8] = [
                    b"\r\n",
                    b"\n",
                    b":",
                    b" ",
                    b"0",
                    b"FFFFFFFFFFFF",
                    b";",
                    b"\r\n\r\n",
                ];
                let p = pieces[rng.below(pieces.len())];
                v.splice(i..i, p.iter().copied());
            }
            3 if !v.is_empty() => {
                let i = rng.below(v.len());
                v.remove(i);
            }
            _ => {
                let n = rng.below(32);
                v.extend((0..n).map(|_| rng.next() as u8));
            }
        }
    }
    v
}

#[test]
fn hostile_bytes_never_panic() {
    let requests: &[&[u8]] = &[
        b"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello",
        b"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: v\r\n\r\n",
        b"GET /stats?x=1 HTTP/1.0\r\nExpect: 100-continue\r\n\r\n",
    ];
    let responses: &[&[u8]] = &[
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
        b"HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 500 Oops\r\n\r\nclose-delimited",
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for i in 0..4000 {
        let step = 1 + rng.below(40);
        let req = mutate(&mut rng, requests[i % requests.len()]);
        let out = smol::block_on(read_request(&mut Drip::new(req, step), 64));
        if let Err(e) = &out {
            // Every error is classified one way or the other, never a panic.
            let _ = error_status(e);
        }
        let resp = mutate(&mut rng, responses[i % responses.len()]);
        let _ = smol::block_on(read_response(&mut Drip::new(resp, step), i % 7 == 0));
        let junk: Vec<u8> = (0..rng.below(300)).map(|_| rng.next() as u8).collect();
        let _ = smol::block_on(read_request(&mut Cursor::new(junk.clone()), 64));
        let _ = smol::block_on(read_response(&mut Cursor::new(junk), false));
    }
}

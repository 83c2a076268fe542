//! `http::request` against loopback servers: round trips with `read_request` /
//! `write_response`, scripted raw responses (chunked, close-delimited, malformed,
//! oversized), timeouts, refused connections and URL validation.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use rindle_room_smol::http::{
    error_status, parse_url, read_request, request, write_response, HttpUrl, Request,
    MAX_RESPONSE_BODY,
};
use smol::net::{TcpListener, TcpStream};
use smol::Timer;

const T: Duration = Duration::from_secs(10);

fn hdr(name: &str, value: &str) -> (String, String) {
    (name.to_owned(), value.to_owned())
}

/// Close politely: stop writing, then drain what the peer still sends (bounded), so an
/// unread request body does not turn our close into a reset that eats the response.
async fn linger_close(mut s: TcpStream) {
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut sink = [0u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        let read = futures_lite::future::or(async { s.read(&mut sink).await.ok() }, async {
            Timer::after(Duration::from_millis(200)).await;
            None
        });
        match read.await {
            Some(n) if n > 0 => continue,
            _ => break,
        }
    }
}

/// A server answering every request with `handler`; returns `http://127.0.0.1:port`.
async fn serve(
    max_body: usize,
    handler: impl Fn(&Request) -> (u16, &'static str, Vec<u8>) + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Request>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = Arc::new(handler);
    let log = seen.clone();
    smol::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let handler = handler.clone();
            let log = log.clone();
            smol::spawn(async move {
                match read_request(&mut s, max_body).await {
                    Ok(Some(req)) => {
                        let (status, ct, body) = handler(&req);
                        log.lock().unwrap().push(req);
                        let _ = write_response(&mut s, status, ct, &body).await;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        if let Some(status) = error_status(&e) {
                            let _ = write_response(
                                &mut s,
                                status,
                                "text/plain",
                                e.to_string().as_bytes(),
                            )
                            .await;
                        }
                    }
                }
                linger_close(s).await;
            })
            .detach();
        }
    })
    .detach();
    (base, seen)
}

/// A server that reads one request and then writes `script` verbatim, in `pieces`
/// separate writes 10 ms apart, then closes.
async fn scripted(script: Vec<u8>, pieces: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    smol::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                return;
            };
            let script = script.clone();
            smol::spawn(async move {
                let _ = read_request(&mut s, 1 << 20).await;
                let size = script.len().div_ceil(pieces.max(1)).max(1);
                for piece in script.chunks(size) {
                    if s.write_all(piece).await.is_err() {
                        return;
                    }
                    let _ = s.flush().await;
                    Timer::after(Duration::from_millis(10)).await;
                }
                linger_close(s).await;
            })
            .detach();
        }
    })
    .detach();
    base
}

#[test]
fn post_round_trip() {
    smol::block_on(async {
        let (base, seen) = serve(1 << 20, |req| {
            let echo = format!(
                "{} {} cred={} body={}",
                req.method,
                req.path,
                req.header("x-rindle-room-credential").unwrap_or("-"),
                req.body_text()
            );
            (200, "text/plain; charset=utf-8", echo.into_bytes())
        })
        .await;
        let headers = [
            hdr("x-rindle-room-credential", "rfc1.abc"),
            hdr("content-type", "application/json"),
        ];
        let url = format!("{base}/api/rindle/apply-row-change-txn?x=1#frag");
        let resp = request("POST", &url, &headers, b"{\"a\":1}", T)
            .await
            .unwrap();
        assert_eq!(resp.status, 200);
        assert!(resp.is_success());
        assert_eq!(
            resp.header("Content-Type"),
            Some("text/plain; charset=utf-8")
        );
        assert_eq!(resp.header("connection"), Some("close"));
        assert_eq!(
            resp.body_text(),
            "POST /api/rindle/apply-row-change-txn?x=1 cred=rfc1.abc body={\"a\":1}"
        );
        let seen = seen.lock().unwrap();
        let req = &seen[0];
        assert_eq!(req.header("host"), Some(base.trim_start_matches("http://")));
        assert_eq!(req.header("content-length"), Some("7"));
        assert_eq!(req.header("connection"), Some("close"));
        assert_eq!(req.header("content-type"), Some("application/json"));
    });
}

#[test]
fn get_sends_an_empty_body_and_framing_headers_are_ours() {
    smol::block_on(async {
        let (base, seen) = serve(16, |_| (404, "", Vec::new())).await;
        // Caller-supplied framing headers are ignored, not duplicated.
        let headers = [
            hdr("Content-Length", "999"),
            hdr("Connection", "keep-alive"),
        ];
        let resp = request("GET", &format!("{base}/missing"), &headers, b"", T)
            .await
            .unwrap();
        assert_eq!(resp.status, 404);
        assert!(resp.body.is_empty());
        let seen = seen.lock().unwrap();
        let lens: Vec<_> = seen[0]
            .headers
            .iter()
            .filter(|(k, _)| k == "content-length")
            .collect();
        assert_eq!(lens, [&hdr("content-length", "0")]);
        assert_eq!(seen[0].header("connection"), Some("close"));
    });
}

#[test]
fn large_bodies_both_ways() {
    smol::block_on(async {
        let (base, _) = serve(8 << 20, |req| {
            (200, "application/octet-stream", req.body.clone())
        })
        .await;
        let body: Vec<u8> = (0..5_000_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let resp = request("PUT", &format!("{base}/blob"), &[], &body, T)
            .await
            .unwrap();
        assert_eq!(resp.status, 200);
        assert!(resp.body == body, "5 MB echo differs");
    });
}

#[test]
fn oversized_request_body_gets_413() {
    smol::block_on(async {
        let (base, seen) = serve(1024, |_| (200, "", Vec::new())).await;
        let resp = request("POST", &format!("{base}/x"), &[], &[b'a'; 4096], T)
            .await
            .unwrap();
        assert_eq!(resp.status, 413);
        assert!(resp.body_text().contains("1024"), "{}", resp.body_text());
        assert!(seen.lock().unwrap().is_empty());
    });
}

#[test]
fn chunked_response_across_many_writes() {
    smol::block_on(async {
        let script = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\n\r\n\
                       5;name=val\r\nhello\r\n1\r\n \r\n00b\r\nchunked wor\r\n2\r\nld\r\n\
                       0\r\nX-Trailer: t\r\n\r\n"
            .to_vec();
        let base = scripted(script, 13).await;
        let resp = request("GET", &base, &[], b"", T).await.unwrap();
        assert_eq!(resp.body_text(), "hello chunked world");
        assert_eq!(resp.header("x-a"), Some("1"));
    });
}

#[test]
fn close_delimited_and_interim_responses() {
    smol::block_on(async {
        let base = scripted(
            b"HTTP/1.0 200 OK\r\nX: y\r\n\r\nread until close".to_vec(),
            3,
        )
        .await;
        let resp = request("GET", &base, &[], b"", T).await.unwrap();
        assert_eq!(resp.body_text(), "read until close");

        let script =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\n{}"
                .to_vec();
        let base = scripted(script, 2).await;
        let resp = request("POST", &base, &[], b"x", T).await.unwrap();
        assert_eq!((resp.status, resp.body_text().as_str()), (409, "{}"));

        let base = scripted(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n".to_vec(), 1).await;
        let resp = request("HEAD", &base, &[], b"", T).await.unwrap();
        assert!(resp.body.is_empty());
    });
}

#[test]
fn malformed_responses_are_errors_naming_the_url() {
    let mut huge_head = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
    huge_head.extend(std::iter::repeat_n(b'a', 70 * 1024));
    huge_head.extend_from_slice(b"\r\n\r\n");
    let scripts: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        b"garbage\r\n\r\n".to_vec(),
        b"HTTP/1.1 abc OK\r\n\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort".to_vec(),
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab".to_vec(),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz".to_vec(),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n0\r\n\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n".to_vec(),
        huge_head,
    ];
    smol::block_on(async {
        for script in scripts {
            let shown = String::from_utf8_lossy(&script[..script.len().min(60)]).into_owned();
            let base = scripted(script, 2).await;
            let url = format!("{base}/p");
            let started = Instant::now();
            let err = request("GET", &url, &[], b"", T).await.expect_err(&shown);
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{shown}: slow failure"
            );
            assert_ne!(err.kind(), io::ErrorKind::TimedOut, "{shown}");
            assert!(err.to_string().contains(&url), "{shown}: {err}");
        }
    });
}

#[test]
fn oversized_responses_are_refused() {
    smol::block_on(async {
        // Declared too big: refused from the head alone.
        let declared = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
            MAX_RESPONSE_BODY + 1
        );
        let base = scripted(declared.into_bytes(), 1).await;
        let err = request("GET", &base, &[], b"", T).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("exceeds"), "{err}");

        // Chunked and close-delimited streams cut off past the cap.
        let mut chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        let piece = vec![b'z'; 1 << 20];
        for _ in 0..17 {
            chunked.extend_from_slice(b"100000\r\n");
            chunked.extend_from_slice(&piece);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\n\r\n");
        let base = scripted(chunked, 1).await;
        let err = request("GET", &base, &[], b"", T).await.unwrap_err();
        assert!(err.to_string().contains("exceeds"), "{err}");

        let mut close = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        close.resize(close.len() + MAX_RESPONSE_BODY + 1, b'q');
        let base = scripted(close, 1).await;
        let err = request("GET", &base, &[], b"", T).await.unwrap_err();
        assert!(err.to_string().contains("exceeds"), "{err}");

        // Exactly the cap is fine.
        let mut exact =
            format!("HTTP/1.1 200 OK\r\nContent-Length: {MAX_RESPONSE_BODY}\r\n\r\n").into_bytes();
        exact.resize(exact.len() + MAX_RESPONSE_BODY, b'e');
        let base = scripted(exact, 1).await;
        let resp = request("GET", &base, &[], b"", T).await.unwrap();
        assert_eq!(resp.body.len(), MAX_RESPONSE_BODY);
    });
}

#[test]
fn timeout_covers_a_silent_server() {
    smol::block_on(async {
        // Accepts and never answers.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let held = Arc::new(Mutex::new(Vec::new()));
        let keep = held.clone();
        smol::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                keep.lock().unwrap().push(s);
            }
        })
        .detach();
        let url = format!("{base}/slow");
        let started = Instant::now();
        let err = request("POST", &url, &[], b"{}", Duration::from_millis(300))
            .await
            .unwrap_err();
        let took = started.elapsed();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(
            took >= Duration::from_millis(290) && took < Duration::from_secs(3),
            "{took:?}"
        );
        assert!(
            err.to_string().contains(&url) && err.to_string().contains("timed out"),
            "{err}"
        );

        // A server that dribbles its body forever is cut off too (the timeout spans receive).
        let base = scripted(
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789".to_vec(),
            10,
        )
        .await;
        let err = request("GET", &base, &[], b"", Duration::from_millis(50))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    });
}

#[test]
fn timeout_covers_a_listener_that_never_accepts() {
    smol::block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        let err = request("GET", &base, &[], b"", Duration::from_millis(200))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(listener);
    });
}

#[test]
fn refused_connection_names_the_url() {
    smol::block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/api/rindle/room-lmids",
            listener.local_addr().unwrap()
        );
        drop(listener);
        let err = request("POST", &url, &[], b"{}", T).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
        assert!(
            err.to_string().starts_with(&format!("POST {url}: ")),
            "{err}"
        );
    });
}

#[test]
fn bad_headers_are_refused_before_connecting() {
    smol::block_on(async {
        let url = "http://127.0.0.1:9/x";
        for headers in [
            vec![hdr("x-cred", "a\r\nInjected: 1")],
            vec![hdr("bad name", "v")],
            vec![hdr("", "v")],
        ] {
            let err = request("POST", url, &headers, b"", T).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        }
        let err = request("PO ST", url, &[], b"", T).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    });
}

#[test]
fn url_parsing() {
    let u = parse_url("http://127.0.0.1:7600/api/rindle/claim-room-epoch?a=b#f").unwrap();
    assert_eq!(
        u,
        HttpUrl {
            host: "127.0.0.1".into(),
            port: 7600,
            authority: "127.0.0.1:7600".into(),
            target: "/api/rindle/claim-room-epoch?a=b".into(),
        }
    );
    let u = parse_url("HTTP://authority.internal").unwrap();
    assert_eq!(
        (u.host.as_str(), u.port, u.target.as_str()),
        ("authority.internal", 80, "/")
    );
    let u = parse_url("http://[::1]:8080?q").unwrap();
    assert_eq!(
        (u.host.as_str(), u.port, u.authority.as_str()),
        ("::1", 8080, "[::1]:8080")
    );
    assert_eq!(u.target, "/?q");
}

#[test]
fn https_and_malformed_urls_are_refused_clearly() {
    let err = parse_url("https://api.example.com/api/rindle/apply-row-change-txn").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    let msg = err.to_string();
    assert!(msg.contains("https") && msg.contains("TLS"), "{msg}");
    assert!(
        msg.contains("api.example.com"),
        "the message names the URL: {msg}"
    );

    for bad in [
        "",
        "127.0.0.1:80/x",
        "ftp://host/x",
        "ws://host/x",
        "http://",
        "http:///path",
        "http://:80/x",
        "http://host:/x",
        "http://host:0/x",
        "http://host:65536/x",
        "http://host:8o/x",
        "http://host:1:2/x",
        "http://ho st/x",
        "http://[::1/x",
        "http://[zz]/x",
        "http://[::1]x/",
        "http://host/a b",
        "http://host/caf\u{e9}",
        "http://host/\x01",
    ] {
        let err = parse_url(bad).expect_err(bad);
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad}");
        assert!(err.to_string().contains("invalid URL"), "{bad}: {err}");
    }

    // User-info is refused and never echoed.
    let err = parse_url("http://user:hunter2@host/x").unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
    let err = smol::block_on(request("GET", "https://h/x", &[], b"", T)).unwrap_err();
    assert!(err.to_string().contains("TLS"), "{err}");
}

#[test]
fn early_response_wins_over_a_failed_body_write() {
    smol::block_on(async {
        // Answers 413 from the head alone and closes at once, leaving most of the body
        // unread (the close then resets the connection under the client's writes).
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        smol::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let err = read_request(&mut s, 1024).await.unwrap_err();
                let status = error_status(&err).unwrap();
                write_response(&mut s, status, "text/plain", b"too big")
                    .await
                    .unwrap();
                drop(s);
            }
        })
        .detach();
        let body = vec![b'x'; 8 << 20];
        let mut got = Vec::new();
        for _ in 0..5 {
            got.push(
                match request("POST", &format!("{base}/big"), &[], &body, T).await {
                    Ok(resp) => resp.status.to_string(),
                    Err(e) => format!("{:?}", e.kind()),
                },
            );
        }
        assert!(got.iter().all(|g| g == "413"), "{got:?}");
    });
}

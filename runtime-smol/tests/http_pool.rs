//! `http::Pool`: kept-alive connections against a loopback server that keeps them
//! alive (as Node's does), closes them between calls, or refuses to keep them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use rindle_room_smol::http::{Pool, MAX_IDLE_PER_ORIGIN};
use smol::net::{TcpListener, TcpStream};

const T: Duration = Duration::from_secs(10);

/// How the server answers the `n`th request (from 0) on a connection.
#[derive(Clone, Copy)]
enum Answer {
    /// A length-delimited 200, connection kept.
    Keep,
    /// The same, then the server closes the connection (no `Connection: close` said).
    KeepThenClose,
    /// `Connection: close` said.
    SayClose,
    /// A body delimited by the close.
    UntilClose,
    /// The head, part of the body, then the close.
    Truncated,
}

struct Server {
    url: String,
    accepts: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
}

/// Reads one request (head and `Content-Length` body); false at the end of the stream.
async fn read_one(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            while buf.len() < end + 4 + len {
                let mut chunk = [0u8; 4096];
                match s.read(&mut chunk).await {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            buf.drain(..end + 4 + len);
            return true;
        }
        let mut chunk = [0u8; 4096];
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

/// A server answering each connection's requests by `answer(connection, n)`, after
/// `delay`.
async fn serve(
    answer: impl Fn(usize, usize) -> Answer + Send + Sync + 'static,
    delay: Duration,
) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/call", listener.local_addr().unwrap());
    let (accepts, requests) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let answer = Arc::new(answer);
    let (a, r) = (accepts.clone(), requests.clone());
    smol::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let conn = a.fetch_add(1, Ordering::SeqCst);
            let (answer, r) = (answer.clone(), r.clone());
            smol::spawn(async move {
                let mut buf = Vec::new();
                for n in 0.. {
                    if !read_one(&mut s, &mut buf).await {
                        return;
                    }
                    r.fetch_add(1, Ordering::SeqCst);
                    smol::Timer::after(delay).await;
                    let (wire, close): (&[u8], bool) = match answer(conn, n) {
                        Answer::Keep => (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false),
                        Answer::KeepThenClose => {
                            (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true)
                        }
                        Answer::SayClose => (
                            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                            false,
                        ),
                        Answer::UntilClose => (b"HTTP/1.1 200 OK\r\n\r\nok", true),
                        Answer::Truncated => {
                            (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nok", true)
                        }
                    };
                    if s.write_all(wire).await.is_err() || close {
                        return;
                    }
                }
            })
            .detach();
        }
    })
    .detach();
    Server {
        url,
        accepts,
        requests,
    }
}

async fn call(pool: &Pool, url: &str) -> std::io::Result<String> {
    let r = pool.request("POST", url, &[], b"{}", T).await?;
    Ok(r.body_text())
}

#[test]
fn calls_one_after_another_share_one_kept_alive_connection() {
    smol::block_on(async {
        let server = serve(|_, _| Answer::Keep, Duration::ZERO).await;
        let pool = Pool::new();
        for _ in 0..5 {
            assert_eq!(call(&pool, &server.url).await.unwrap(), "ok");
        }
        assert_eq!(server.accepts.load(Ordering::SeqCst), 1);
        assert_eq!(server.requests.load(Ordering::SeqCst), 5);
        assert_eq!(pool.idle(), 1);
    });
}

#[test]
fn a_connection_the_server_closed_meanwhile_is_replaced_by_a_fresh_one() {
    smol::block_on(async {
        let server = serve(|_, _| Answer::KeepThenClose, Duration::ZERO).await;
        let pool = Pool::new();
        for _ in 0..3 {
            assert_eq!(call(&pool, &server.url).await.unwrap(), "ok");
            // Let the close arrive before the next call picks the connection up.
            smol::Timer::after(Duration::from_millis(20)).await;
        }
        assert_eq!(
            server.requests.load(Ordering::SeqCst),
            3,
            "each call made once"
        );
        assert_eq!(server.accepts.load(Ordering::SeqCst), 3);
    });
}

#[test]
fn a_response_that_says_close_or_ends_with_the_close_leaves_nothing_idle() {
    smol::block_on(async {
        for answer in [Answer::SayClose, Answer::UntilClose] {
            let server = serve(move |_, _| answer, Duration::ZERO).await;
            let pool = Pool::new();
            for _ in 0..2 {
                assert_eq!(call(&pool, &server.url).await.unwrap(), "ok");
            }
            assert_eq!(pool.idle(), 0);
            assert_eq!(server.accepts.load(Ordering::SeqCst), 2);
        }
    });
}

#[test]
fn a_call_that_fails_after_its_response_head_is_not_made_again() {
    smol::block_on(async {
        // The second call on the kept connection gets a truncated body.
        let server = serve(
            |_, n| {
                if n == 0 {
                    Answer::Keep
                } else {
                    Answer::Truncated
                }
            },
            Duration::ZERO,
        )
        .await;
        let pool = Pool::new();
        assert_eq!(call(&pool, &server.url).await.unwrap(), "ok");
        let err = call(&pool, &server.url).await.unwrap_err();
        assert!(err.to_string().contains("/call"), "names the URL: {err}");
        assert_eq!(server.requests.load(Ordering::SeqCst), 2, "not repeated");
        assert_eq!(server.accepts.load(Ordering::SeqCst), 1);
        assert_eq!(pool.idle(), 0);
    });
}

#[test]
fn idle_connections_are_capped_per_origin() {
    smol::block_on(async {
        // Slow answers: every call in flight holds a connection of its own.
        let server = serve(|_, _| Answer::Keep, Duration::from_millis(200)).await;
        let pool = Arc::new(Pool::new());
        let calls: Vec<_> = (0..MAX_IDLE_PER_ORIGIN + 20)
            .map(|_| {
                let (pool, url) = (pool.clone(), server.url.clone());
                smol::spawn(async move { call(&pool, &url).await })
            })
            .collect();
        for c in calls {
            assert_eq!(c.await.unwrap(), "ok");
        }
        assert_eq!(
            server.accepts.load(Ordering::SeqCst),
            MAX_IDLE_PER_ORIGIN + 20
        );
        assert_eq!(pool.idle(), MAX_IDLE_PER_ORIGIN);
    });
}

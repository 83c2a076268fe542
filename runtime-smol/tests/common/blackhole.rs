//! A TCP relay that can black-hole its connections, as a network partition does: the
//! sockets on both sides stay open, and nothing more crosses — no data, no FIN, no RST.
//! Connections opened after [`Blackhole::go_dark`] take a route that works.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures_lite::{AsyncReadExt, AsyncWriteExt, FutureExt};
use smol::net::{TcpListener, TcpStream};

/// The relay.
#[derive(Clone)]
pub struct Blackhole {
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    /// Connections accepted so far.
    accepted: Arc<AtomicU64>,
    /// Connections numbered up to this one are dark.
    dark_upto: Arc<AtomicU64>,
}

impl Blackhole {
    /// Relays every connection to `target` (`host:port`).
    pub async fn start(target: &str) -> Blackhole {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let me = Blackhole {
            port: listener.local_addr().unwrap().port(),
            accepted: Arc::default(),
            dark_upto: Arc::default(),
        };
        let (relay, target) = (me.clone(), target.to_string());
        smol::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let n = relay.accepted.fetch_add(1, Ordering::SeqCst) + 1;
                let Ok(outbound) = TcpStream::connect(target.as_str()).await else {
                    continue;
                };
                let dark = relay.dark_upto.clone();
                let up = pipe(inbound.clone(), outbound.clone(), n, dark.clone());
                let down = pipe(outbound, inbound, n, dark);
                smol::spawn(up.or(down)).detach();
            }
        })
        .detach();
        me
    }

    /// Every connection open now goes dark.
    pub fn go_dark(&self) {
        let n = self.accepted.load(Ordering::SeqCst);
        self.dark_upto.store(n, Ordering::SeqCst);
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// Copies `from` to `to` until either ends, or forever holds both once connection `n`
/// is dark.
async fn pipe(mut from: TcpStream, mut to: TcpStream, n: u64, dark: Arc<AtomicU64>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let read = from.read(&mut buf).await.unwrap_or(0);
        if dark.load(Ordering::SeqCst) >= n {
            std::future::pending::<()>().await;
        }
        if read == 0 || to.write_all(&buf[..read]).await.is_err() {
            return;
        }
    }
}

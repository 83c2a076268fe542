//! A fake API server for fleet mode: `POST /api/rindle/room-boot` (bearer shell
//! secret, a placement epoch claimed per boot, a lease, flush routes), with knobs for
//! failures and delays.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rindle_room_smol::http;
use serde_json::{json, Value};
use smol::net::{TcpListener, TcpStream};

/// The shell secret the fake checks.
pub const SHELL_SECRET: &str = "shell-secret";

/// The fake API server's state.
#[derive(Default)]
pub struct ApiState {
    /// The current placement epoch per doc.
    pub epochs: BTreeMap<String, u64>,
    /// Every boot granted: `(doc, instance)`.
    pub boots: Vec<(String, String)>,
    /// Every boot request seen (granted or not).
    pub requests: usize,
    /// Answer this many boots with 503 first.
    pub fail_next: usize,
    /// Wait this long before granting.
    pub delay_ms: u64,
    /// Boot requests being answered now, and the most at once so far.
    pub in_flight: usize,
    pub max_in_flight: usize,
    /// rindled's websocket endpoint, returned as `upstreamWsEndpoint`.
    pub upstream_ws: Option<String>,
    /// The write authority the grants point at (absolute flush URLs); room-boot claims
    /// the placement epoch there.
    pub authority: Option<super::FakeAuthority>,
    /// Right after granting a boot, another placement claims the doc (the granted
    /// epoch is fenced at once).
    pub steal_after_boot: bool,
    /// One write authority per doc, started on the doc's first boot (wins over
    /// `authority`).
    pub per_doc_authority: bool,
    /// The per-doc authorities.
    pub authorities: BTreeMap<String, super::FakeAuthority>,
    /// A follower placement ticket, returned as `upstreamAffinity`.
    pub affinity: Option<String>,
}

/// The fake API server.
#[derive(Clone)]
pub struct FakeApi {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    pub state: Arc<Mutex<ApiState>>,
}

impl FakeApi {
    /// Starts serving; boots name `upstream_ws` as the rindled endpoint.
    pub async fn start(upstream_ws: &str) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api = FakeApi {
            url: format!("http://{}", listener.local_addr().unwrap()),
            state: Arc::new(Mutex::new(ApiState {
                upstream_ws: Some(upstream_ws.to_string()),
                ..ApiState::default()
            })),
        };
        let me = api.clone();
        smol::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                smol::spawn(me.clone().serve(stream)).detach();
            }
        })
        .detach();
        api
    }

    /// How many boots were granted for `doc`.
    pub fn boots_of(&self, doc: &str) -> usize {
        let s = self.state.lock().unwrap();
        s.boots.iter().filter(|(d, _)| d == doc).count()
    }

    /// `doc`'s own authority, when there is one per doc.
    async fn doc_authority(&self, doc: &str) -> Option<super::FakeAuthority> {
        {
            let s = self.state.lock().unwrap();
            if !s.per_doc_authority {
                return None;
            }
            if let Some(a) = s.authorities.get(doc) {
                return Some(a.clone());
            }
        }
        let started = super::FakeAuthority::start().await;
        let mut s = self.state.lock().unwrap();
        Some(
            s.authorities
                .entry(doc.to_string())
                .or_insert(started)
                .clone(),
        )
    }

    async fn serve(self, mut stream: TcpStream) {
        let Ok(Some(req)) = http::read_request(&mut stream, 1 << 20).await else {
            return;
        };
        let (status, body) = self.answer(&req).await;
        let _ =
            http::write_response(&mut stream, status, "application/json", body.as_bytes()).await;
    }

    async fn answer(&self, req: &http::Request) -> (u16, String) {
        if req.method != "POST" || req.path != "/api/rindle/room-boot" {
            return (404, json!({"error": "unknown route"}).to_string());
        }
        self.state.lock().unwrap().requests += 1;
        let bearer = format!("Bearer {SHELL_SECRET}");
        if req.header("authorization") != Some(bearer.as_str()) {
            return (
                403,
                json!({"error": "room-boot: shell secret refused"}).to_string(),
            );
        }
        let body: Value = serde_json::from_str(&req.body_text()).unwrap_or(Value::Null);
        let Some(doc) = body["doc"].as_str().map(str::to_string) else {
            return (400, json!({"error": "doc must be a string"}).to_string());
        };
        let instance = body["instance"].as_str().unwrap_or("").to_string();
        let delay = {
            let mut s = self.state.lock().unwrap();
            if doc.starts_with("missing") {
                let msg = format!("no room profile matches doc {doc}");
                return (404, json!({ "error": msg }).to_string());
            }
            if s.fail_next > 0 {
                s.fail_next -= 1;
                return (503, json!({"error": "busy"}).to_string());
            }
            s.delay_ms
        };
        if delay > 0 {
            {
                let mut s = self.state.lock().unwrap();
                s.in_flight += 1;
                s.max_in_flight = s.max_in_flight.max(s.in_flight);
            }
            smol::Timer::after(Duration::from_millis(delay)).await;
            self.state.lock().unwrap().in_flight -= 1;
        }
        let per_doc = self.doc_authority(&doc).await;
        let mut s = self.state.lock().unwrap();
        let authority = per_doc.or_else(|| s.authority.clone());
        let epoch = match &authority {
            Some(a) => {
                let mut st = a.state.lock().unwrap();
                st.epoch += 1;
                st.epoch
            }
            None => {
                let e = s.epochs.entry(doc.clone()).or_insert(0);
                *e += 1;
                *e
            }
        };
        s.epochs.insert(doc.clone(), epoch);
        s.boots.push((doc.clone(), instance));
        let urls = match &authority {
            Some(a) => json!({
                "apply": format!("{}/apply-row-change-txn", a.base),
                "claim": format!("{}/claim-room-epoch", a.base),
                "lmids": format!("{}/room-lmids", a.base)
            }),
            None => json!({
                "apply": "/api/rindle/apply-row-change-txn",
                "claim": "/api/rindle/claim-room-epoch",
                "lmids": "/api/rindle/room-lmids"
            }),
        };
        if s.steal_after_boot {
            if let Some(a) = &authority {
                a.fence();
            }
        }
        let mut grant = json!({
            "epoch": epoch,
            "upstreamLeaseToken": format!("boot-lease-{doc}-{epoch}"),
            "upstreamWsEndpoint": s.upstream_ws,
            "flush": {
                "urls": urls,
                "headers": {"x-rindle-room-credential": format!("rfc1.{doc}")}
            }
        });
        if let Some(ticket) = &s.affinity {
            grant["upstreamAffinity"] = json!(ticket);
        }
        (200, grant.to_string())
    }
}

//! `HttpAuthority` (the host's reply mapping over real HTTP) against an in-process fake authority on loopback
//! (a tiny server built on `http::read_request` / `write_response`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rindle_room_smol::authority::{ApplyResult, AuthorityError, HttpAuthority, DEFAULT_TIMEOUT};
use rindle_room_smol::config::AuthorityConfig;
use rindle_room_smol::http::{read_request, write_response, Request};
use serde_json::{json, Value};
use smol::net::TcpListener;

type Handler = dyn Fn(&Request, usize) -> (u16, String) + Send + Sync;

/// The fake authority: records every request; `handler(request, index)` answers.
struct Fake {
    base: String,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Fake {
    async fn start(
        handler: impl Fn(&Request, usize) -> (u16, String) + Send + Sync + 'static,
    ) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let log = seen.clone();
        smol::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else {
                    return;
                };
                let handler = handler.clone();
                let log = log.clone();
                smol::spawn(async move {
                    let Ok(Some(req)) = read_request(&mut s, 1 << 20).await else {
                        return;
                    };
                    let index = {
                        let mut log = log.lock().unwrap();
                        log.push(req.clone());
                        log.len() - 1
                    };
                    let (status, body) = handler(&req, index);
                    let _ =
                        write_response(&mut s, status, "application/json", body.as_bytes()).await;
                })
                .detach();
            }
        })
        .detach();
        Fake { base, seen }
    }

    /// Always `status` + `body`.
    async fn fixed(status: u16, body: &str) -> Fake {
        let body = body.to_owned();
        Fake::start(move |_, _| (status, body.clone())).await
    }

    fn config(&self) -> AuthorityConfig {
        let mut headers = BTreeMap::new();
        headers.insert(
            "x-rindle-room-credential".to_owned(),
            "rfc1.payload.sig".to_owned(),
        );
        headers.insert("X-Trace".to_owned(), "room-7".to_owned());
        AuthorityConfig {
            apply_url: format!("{}/api/rindle/apply-row-change-txn", self.base),
            claim_url: format!("{}/api/rindle/claim-room-epoch", self.base),
            lmids_url: format!("{}/api/rindle/room-lmids", self.base),
            headers,
        }
    }

    fn authority(&self) -> HttpAuthority {
        HttpAuthority::new(&self.config()).unwrap()
    }

    fn requests(&self) -> Vec<Request> {
        self.seen.lock().unwrap().clone()
    }
}

const BODY: &str = r#"{"source":"room:document/doc:d1:3","offset":"00000000000000000007","doc":"document/doc:d1","epoch":3,"batchHash":"1111111111111111","cas":true,"changes":[{"table":"slide","op":"edit","old":["s1","doc:d1",1],"row":["s1","doc:d1",2]}]}"#;

fn apply(fake: &Fake, body: &str) -> Result<ApplyResult, AuthorityError> {
    smol::block_on(fake.authority().apply_row_change_txn(body))
}

fn assert_common_headers(req: &Request) {
    assert_eq!(req.method, "POST");
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(
        req.header("x-rindle-room-credential"),
        Some("rfc1.payload.sig")
    );
    assert_eq!(req.header("x-trace"), Some("room-7"));
}

#[test]
fn claim_epoch_posts_doc_and_returns_epoch() {
    smol::block_on(async {
        let fake = Fake::fixed(200, r#"{"epoch":7}"#).await;
        let epoch = fake
            .authority()
            .claim_epoch("document/doc:d1")
            .await
            .unwrap();
        assert_eq!(epoch, 7);
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].path, "/api/rindle/claim-room-epoch");
        assert_common_headers(&reqs[0]);
        let body: Value = serde_json::from_slice(&reqs[0].body).unwrap();
        assert_eq!(body, json!({"doc": "document/doc:d1"}));
    });
}

#[test]
fn claim_epoch_failures() {
    smol::block_on(async {
        for (status, body, fatal) in [
            (500, r#"{"error":"db down"}"#, false),
            (
                403,
                r#"{"error":"flush credential refused: expired"}"#,
                false,
            ),
            (200, "<html>proxy</html>", false),
            (200, r#"{"epoch":-1}"#, true),
            (200, r#"{"epoch":"7"}"#, true),
            (200, r#"{}"#, true),
        ] {
            let fake = Fake::fixed(status, body).await;
            let err = fake.authority().claim_epoch("d").await.unwrap_err();
            assert_eq!(err.is_fatal(), fatal, "{status} {body}: {err}");
            assert!(err.message().contains("claim-room-epoch"), "{err}");
        }
    });
}

#[test]
fn lmids_posts_doc_and_clients_and_unwraps_the_map() {
    smol::block_on(async {
        let fake = Fake::fixed(200, r#"{"lmids":{"c1":12,"c2":0,"c3":4.0}}"#).await;
        let clients = vec![
            "c1".to_owned(),
            "c2".to_owned(),
            "c3".to_owned(),
            "c4".to_owned(),
        ];
        let map = fake
            .authority()
            .lmids("document/doc:d1", &clients)
            .await
            .unwrap();
        let want: BTreeMap<String, u64> = [
            ("c1".to_owned(), 12),
            ("c2".to_owned(), 0),
            ("c3".to_owned(), 4),
        ]
        .into();
        assert_eq!(map, want);
        let reqs = fake.requests();
        assert_eq!(reqs[0].path, "/api/rindle/room-lmids");
        assert_common_headers(&reqs[0]);
        let body: Value = serde_json::from_slice(&reqs[0].body).unwrap();
        assert_eq!(
            body,
            json!({"doc": "document/doc:d1", "clients": ["c1", "c2", "c3", "c4"]})
        );
    });
}

#[test]
fn lmids_failures() {
    smol::block_on(async {
        for (status, body, fatal) in [
            (502, "bad gateway", false),
            (200, "not json", false),
            (200, r#"{"c1":1}"#, true),
            (200, r#"{"lmids":{"c1":-3}}"#, true),
            (200, r#"{"lmids":[1,2]}"#, true),
        ] {
            let fake = Fake::fixed(status, body).await;
            let err = fake
                .authority()
                .lmids("d", &["c1".to_owned()])
                .await
                .unwrap_err();
            assert_eq!(err.is_fatal(), fatal, "{status} {body}: {err}");
        }
    });
}

#[test]
fn apply_ok_variants() {
    smol::block_on(async {
        for (body, want) in [
            (
                r#"{"applied":true,"cv":42}"#,
                ApplyResult::Ok {
                    applied: true,
                    cv: Some(42.0),
                },
            ),
            (
                r#"{"applied":false}"#,
                ApplyResult::Ok {
                    applied: false,
                    cv: None,
                },
            ),
            (
                r#"{"applied":true,"cv":null}"#,
                ApplyResult::Ok {
                    applied: true,
                    cv: None,
                },
            ),
            (
                r#"{"cv":1.5}"#,
                ApplyResult::Ok {
                    applied: true,
                    cv: Some(1.5),
                },
            ),
            (
                r#"{}"#,
                ApplyResult::Ok {
                    applied: true,
                    cv: None,
                },
            ),
        ] {
            let fake = Fake::fixed(200, body).await;
            assert_eq!(apply(&fake, BODY).unwrap(), want, "{body}");
            let reqs = fake.requests();
            assert_eq!(reqs[0].path, "/api/rindle/apply-row-change-txn");
            assert_common_headers(&reqs[0]);
        }
    });
}

#[test]
fn apply_sends_the_body_verbatim() {
    smol::block_on(async {
        let fake = Fake::fixed(200, r#"{"applied":true}"#).await;
        // Odd spacing, key order, escapes and non-ASCII must survive byte for byte.
        let odd = "{ \"source\" :\"room:d:1\",\"offset\":\"00000000000000000001\",  \"cas\":true,\
                   \"changes\":[{\"table\":\"t\",\"op\":\"add\",\"row\":[\"\\u00e9\u{e9}\",1.0e0,null]}]\n}";
        let auth = fake.authority();
        auth.apply_row_change_txn(odd).await.unwrap();
        auth.apply_row_change_txn(BODY).await.unwrap();
        let reqs = fake.requests();
        assert_eq!(reqs[0].body, odd.as_bytes());
        assert_eq!(reqs[1].body, BODY.as_bytes());
        assert_eq!(
            reqs[1].header("content-length"),
            Some(BODY.len().to_string().as_str())
        );
    });
}

#[test]
fn apply_conflict_is_reserialized_compactly() {
    smol::block_on(async {
        let refusal = r#"{
            "error": "conflict",
            "conflicts": [
                { "table": "slide", "pk": ["s1", "doc:d1"], "current": ["s1", "doc:d1", 5] },
                { "table": "slide", "pk": ["s9", "doc:d1"], "current": null }
            ]
        }"#;
        let fake = Fake::fixed(409, refusal).await;
        let ApplyResult::Conflict { conflicts_json } = apply(&fake, BODY).unwrap() else {
            panic!("expected a conflict")
        };
        assert!(
            !conflicts_json.contains([' ', '\n']),
            "compact: {conflicts_json}"
        );
        let parsed: Value = serde_json::from_str(&conflicts_json).unwrap();
        assert_eq!(
            parsed,
            json!([
                {"table": "slide", "pk": ["s1", "doc:d1"], "current": ["s1", "doc:d1", 5]},
                {"table": "slide", "pk": ["s9", "doc:d1"], "current": null}
            ])
        );
        // An empty conflicts array is still a well-formed conflict.
        let fake = Fake::fixed(409, r#"{"error":"conflict","conflicts":[]}"#).await;
        let got = apply(&fake, BODY).unwrap();
        assert_eq!(
            got,
            ApplyResult::Conflict {
                conflicts_json: "[]".to_owned()
            }
        );
    });
}

#[test]
fn apply_fenced() {
    smol::block_on(async {
        for (body, want) in [
            (r#"{"error":"fenced","currentEpoch":4}"#, Some(4)),
            (r#"{"error":"fenced"}"#, None),
            (r#"{"error":"fenced","currentEpoch":null}"#, None),
            // A garbled epoch does not hide the fence.
            (r#"{"error":"fenced","currentEpoch":"four"}"#, None),
        ] {
            let fake = Fake::fixed(409, body).await;
            assert_eq!(
                apply(&fake, BODY).unwrap(),
                ApplyResult::Fenced {
                    current_epoch: want
                }
            );
        }
    });
}

#[test]
fn apply_malformed_refusals_are_fatal() {
    smol::block_on(async {
        for body in [
            r#"{"error":"nope"}"#,
            r#"{"error":"conflict"}"#,
            r#"{"error":"conflict","conflicts":{"a":1}}"#,
            r#"{"conflicts":[]}"#,
            r#"["fenced"]"#,
            "Conflict",
            "",
        ] {
            let fake = Fake::fixed(409, body).await;
            let err = apply(&fake, BODY).unwrap_err();
            assert!(err.is_fatal(), "{body:?}: {err}");
            assert!(err.message().contains("409"), "{err}");
        }
    });
}

#[test]
fn apply_batch_identity_mismatch_is_fatal() {
    smol::block_on(async {
        let fake = Fake::fixed(
            500,
            r#"{"error":"batch identity mismatch: same flush id, different body"}"#,
        )
        .await;
        let err = apply(&fake, BODY).unwrap_err();
        assert!(err.is_fatal(), "{err}");
        assert!(err.message().contains("batch identity mismatch"), "{err}");
        // Plain text and other casing count too ("mentioning").
        let fake = Fake::fixed(500, "Batch Identity Mismatch for room:d:1/0007").await;
        assert!(apply(&fake, BODY).unwrap_err().is_fatal());
    });
}

#[test]
fn apply_other_failures_are_retryable() {
    smol::block_on(async {
        for (status, body) in [
            (500, r#"{"error":"internal"}"#),
            (503, "unavailable"),
            (502, "batch identity mismatch"), // only a 500 carries the identity verdict
            (
                403,
                r#"{"error":"flush credential refused: bad signature"}"#,
            ),
            (404, ""),
            (400, r#"{"error":"invalid row-change txn"}"#),
            (301, ""),
            (200, "not json"),
            (200, ""),
        ] {
            let fake = Fake::fixed(status, body).await;
            let err = apply(&fake, BODY).unwrap_err();
            assert!(!err.is_fatal(), "{status} {body}: {err}");
            assert!(err.message().contains(&status.to_string()), "{err}");
        }
        // A 2xx of the wrong JSON shape: another contract, retrying cannot help.
        for body in [r#"{"applied":"yes"}"#, r#"{"cv":"x"}"#, "[]", "3"] {
            let fake = Fake::fixed(200, body).await;
            assert!(apply(&fake, BODY).unwrap_err().is_fatal(), "{body}");
        }
    });
}

#[test]
fn network_failures_are_retryable() {
    smol::block_on(async {
        // Refused.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let cfg = AuthorityConfig {
            apply_url: format!("{base}/apply"),
            claim_url: format!("{base}/claim"),
            lmids_url: format!("{base}/lmids"),
            headers: BTreeMap::new(),
        };
        let auth = HttpAuthority::new(&cfg).unwrap();
        let err = auth.apply_row_change_txn(BODY).await.unwrap_err();
        assert!(
            matches!(&err, AuthorityError::Retryable(m) if m.contains(&cfg.apply_url)),
            "{err}"
        );
        assert!(!auth.claim_epoch("d").await.unwrap_err().is_fatal());
        assert!(!auth.lmids("d", &[]).await.unwrap_err().is_fatal());

        // Silent server: the per-request timeout fires.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let cfg = AuthorityConfig {
            apply_url: format!("{base}/apply"),
            claim_url: format!("{base}/claim"),
            lmids_url: format!("{base}/lmids"),
            headers: BTreeMap::new(),
        };
        let auth = HttpAuthority::new(&cfg)
            .unwrap()
            .with_timeout(Duration::from_millis(200));
        assert_eq!(auth.timeout(), Duration::from_millis(200));
        let started = Instant::now();
        let err = auth.apply_row_change_txn(BODY).await.unwrap_err();
        assert!(
            !err.is_fatal() && err.message().contains("timed out"),
            "{err}"
        );
        assert!(started.elapsed() < Duration::from_secs(3));
        drop(listener);
    });
}

#[test]
fn new_validates_urls_and_headers() {
    let good = AuthorityConfig {
        apply_url: "http://127.0.0.1:8080/api/rindle/apply-row-change-txn".into(),
        claim_url: "http://127.0.0.1:8080/api/rindle/claim-room-epoch".into(),
        lmids_url: "http://127.0.0.1:8080/api/rindle/room-lmids".into(),
        headers: BTreeMap::new(),
    };
    let auth = HttpAuthority::new(&good).unwrap();
    assert_eq!(auth.timeout(), DEFAULT_TIMEOUT);

    let mut c = good.clone();
    c.apply_url = "https://api.example.com/api/rindle/apply-row-change-txn".into();
    let err = HttpAuthority::new(&c).unwrap_err();
    assert_eq!(err.option(), "authority.apply_url");
    let err = err.to_string();
    assert!(err.contains("apply_url") && err.contains("TLS"), "{err}");

    let mut c = good.clone();
    c.lmids_url = "not a url".into();
    assert!(HttpAuthority::new(&c)
        .unwrap_err()
        .to_string()
        .contains("lmids_url"));

    let mut c = good.clone();
    c.claim_url = "http://host:99999/x".into();
    assert!(HttpAuthority::new(&c)
        .unwrap_err()
        .to_string()
        .contains("claim_url"));

    for (name, value) in [
        ("x-cred", "a\r\nb"),
        ("bad name", "v"),
        ("", "v"),
        ("Content-Type", "text/plain"),
        ("content-length", "3"),
        ("connection", "keep-alive"),
    ] {
        let mut c = good.clone();
        c.headers.insert(name.into(), value.into());
        assert!(HttpAuthority::new(&c).is_err(), "{name}: {value}");
    }

    // Credentials never show in Debug.
    let mut c = good;
    c.headers
        .insert("x-rindle-room-credential".into(), "rfc1.secret".into());
    let shown = format!("{:?}", HttpAuthority::new(&c).unwrap());
    assert!(
        shown.contains("x-rindle-room-credential") && !shown.contains("rfc1.secret"),
        "{shown}"
    );
}

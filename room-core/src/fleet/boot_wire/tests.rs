use super::*;

/// A complete room-boot grant (`docs/design/authority.md`, "Scope specs and the commit
/// gate", shows the same shape).
const EXAMPLE: &str = r#"{"epoch":3,"upstreamLeaseToken":"lease-abc","scopes":[{"table":"deck","writable":{"kind":"predicate","where":{"type":"simple","op":"=","left":{"type":"column","name":"id"},"right":{"type":"literal","value":"doc:d1"}},"joinKeyCols":["id"]},"footprintWhere":{"type":"simple","op":"=","left":{"type":"column","name":"id"},"right":{"type":"literal","value":"doc:d1"}}},{"table":"member","writable":{"kind":"none"}},{"table":"slide","writable":{"kind":"predicate","joinKeyCols":["deckId"]}}],"flush":{"urls":{"apply":"/api/rindle/apply-row-change-txn","claim":"/api/rindle/claim-room-epoch","lmids":"/api/rindle/room-lmids"},"headers":{"x-rindle-room-credential":"rfc1.xxx.yyy"}}}"#;

const URL: &str = "https://api.example:8443/api/rindle/room-boot";

#[test]
fn the_documented_grant_reads_with_urls_resolved_against_the_boot_origin() {
    let g = boot_reply(URL, "d1", 200, EXAMPLE).unwrap();
    assert_eq!(g.epoch, 3);
    assert_eq!(g.upstream_lease_token, "lease-abc");
    assert_eq!(g.upstream_ws_endpoint, None);
    assert_eq!(g.upstream_affinity, None);
    assert_eq!(
        g.scopes.as_ref().and_then(Json::as_array).map(Vec::len),
        Some(3)
    );
    assert_eq!(
        g.flush.apply,
        "https://api.example:8443/api/rindle/apply-row-change-txn"
    );
    assert_eq!(
        g.flush.claim,
        "https://api.example:8443/api/rindle/claim-room-epoch"
    );
    assert_eq!(
        g.flush.lmids,
        "https://api.example:8443/api/rindle/room-lmids"
    );
    assert_eq!(
        g.flush.headers,
        [(
            String::from("x-rindle-room-credential"),
            String::from("rfc1.xxx.yyy")
        )]
    );
}

#[test]
fn optional_fields_and_an_old_server_without_scopes() {
    let body = r#"{"epoch":1,"upstreamLeaseToken":"l","upstreamWsEndpoint":"ws://r:4848/",
        "upstreamAffinity":"t-9","flush":{"urls":{"apply":"http://x/a","claim":"/c","lmids":"/l"}}}"#;
    let g = boot_reply("http://api/boot", "d", 201, body).unwrap();
    assert_eq!(g.upstream_ws_endpoint.as_deref(), Some("ws://r:4848/"));
    assert_eq!(g.upstream_affinity.as_deref(), Some("t-9"));
    assert_eq!(g.scopes, None);
    assert_eq!(g.flush.apply, "http://x/a");
    assert_eq!(g.flush.claim, "http://api/c");
    assert!(g.flush.headers.is_empty());
}

#[test]
fn failures_map_to_retries_and_closes() {
    let no_room = boot_reply(URL, "d9", 404, "no room profile matches doc d9").unwrap_err();
    assert_eq!(no_room.close(), (4404, "no room for doc"));
    assert!(no_room.message().contains("no room profile matches doc d9"));
    let refused = boot_reply(URL, "d", 403, "room-boot: shell secret refused").unwrap_err();
    assert!(matches!(refused, BootFailure::Refused(_)));
    assert!(refused.message().contains("shell secret"), "{refused}");
    assert_eq!(refused.close(), (1013, "room boot failed"));
    for status in [500, 502, 503, 429, 408] {
        assert!(boot_reply(URL, "d", status, "").unwrap_err().is_retryable());
    }
    let html = boot_reply(URL, "d", 200, "<html>proxy</html>").unwrap_err();
    assert!(html.is_retryable());
    assert_eq!(html.close(), (1013, "room boot timed out"));
    for bad in [
        r#"[]"#,
        r#"{"epoch":-1,"upstreamLeaseToken":"l","flush":{"urls":{"apply":"/a","claim":"/c","lmids":"/l"}}}"#,
        r#"{"epoch":1.5,"upstreamLeaseToken":"l","flush":{"urls":{"apply":"/a","claim":"/c","lmids":"/l"}}}"#,
        r#"{"epoch":0,"upstreamLeaseToken":"l","flush":{"urls":{"apply":"/a","claim":"/c","lmids":"/l"}}}"#,
        r#"{"epoch":1e300,"upstreamLeaseToken":"l","flush":{"urls":{"apply":"/a","claim":"/c","lmids":"/l"}}}"#,
        r#"{"epoch":9007199254740992,"upstreamLeaseToken":"l","flush":{"urls":{"apply":"/a","claim":"/c","lmids":"/l"}}}"#,
        r#"{"epoch":"3","upstreamLeaseToken":"l","flush":{"urls":{"apply":"/a","claim":"/c","lmids":"/l"}}}"#,
        r#"{"epoch":1,"upstreamLeaseToken":"","flush":{"urls":{"apply":"/a","claim":"/c","lmids":"/l"}}}"#,
        r#"{"epoch":1,"upstreamLeaseToken":"l"}"#,
        r#"{"epoch":1,"upstreamLeaseToken":"l","flush":{"urls":{"apply":"a","claim":"/c","lmids":"/l"}}}"#,
        r#"{"epoch":1,"upstreamLeaseToken":"l","scopes":{},"flush":{"urls":{"apply":"/a","claim":"/c","lmids":"/l"}}}"#,
        r#"{"epoch":1,"upstreamLeaseToken":"l","flush":{"urls":{"apply":"/a","claim":"/c","lmids":"/l"},"headers":{"h":1}}}"#,
    ] {
        let e = boot_reply(URL, "d", 200, bad).unwrap_err();
        assert!(matches!(e, BootFailure::Invalid(_)), "{bad}: {e:?}");
    }
    // The largest safe epoch is a grant.
    let top = r#"{"epoch":9007199254740991,"upstreamLeaseToken":"l","flush":{"urls":{"apply":"/a","claim":"/c","lmids":"/l"}}}"#;
    assert_eq!(boot_reply(URL, "d", 200, top).unwrap().epoch, (1 << 53) - 1);
    assert!(matches!(
        boot_reply(URL, "d", 400, "doc must be a string").unwrap_err(),
        BootFailure::Invalid(_)
    ));
}

#[test]
fn the_body_and_backoff() {
    assert_eq!(
        boot_body("a\"b", "box-1"),
        r#"{"doc":"a\"b","instance":"box-1"}"#
    );
    assert_eq!(boot_authorization("s3"), "Bearer s3");
    let delays: Vec<u64> = (1..=7).map(boot_backoff_ms).collect();
    assert_eq!(delays, [100, 200, 400, 800, 1600, 2000, 2000]);
    assert_eq!(boot_backoff_ms(u32::MAX), 2000);
}

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::token::{mint, MintOptions};

const KEYS: &[(&str, &str)] = &[("k1", "secret-one")];
const NOW: u64 = 1_767_225_600_000;

fn keys() -> Vec<(String, String)> {
    KEYS.iter()
        .map(|(k, s)| (k.to_string(), s.to_string()))
        .collect()
}

fn lease(doc: &str, key: &str) -> String {
    mint(&MintOptions {
        doc,
        ast: None,
        sub: "u1",
        kid: "k1",
        key,
        ttl_ms: 60_000.0,
        now_ms: NOW as f64,
        scopes_hash: None,
    })
    .unwrap()
}

fn subscribe(token: &str) -> String {
    alloc::format!(r#"{{"t":"subscribe","queryId":1,"leaseToken":"{token}"}}"#)
}

#[test]
fn a_verified_lease_subscribe_opens_the_gate_after_what_came_before() {
    let init = String::from(r#"{"t":"init","clientID":"c1"}"#);
    let lmid =
        String::from(r#"{"t":"subscribe","queryId":0,"name":"_rindle/clientLmid","args":{}}"#);
    assert_eq!(gate("d1", &[], &keys(), NOW), Gate::NeedMore);
    assert_eq!(
        gate("d1", &[init.clone(), lmid.clone()], &keys(), NOW),
        Gate::NeedMore
    );
    let shown = vec![init, lmid, subscribe(&lease("d1", "secret-one"))];
    assert_eq!(gate("d1", &shown, &keys(), NOW), Gate::Route);
}

#[test]
fn a_token_for_another_doc_a_forged_one_or_an_expired_one_is_refused() {
    for (doc, key, now) in [
        ("d2", "secret-one", NOW),
        ("d1", "not-the-secret", NOW),
        ("d1", "secret-one", NOW + 3_600_000),
    ] {
        let g = gate(doc, &[subscribe(&lease("d1", key))], &keys(), now);
        match g {
            Gate::Refuse(1008, reason) => {
                assert!(reason.starts_with("lease token refused: "), "{reason}")
            }
            other => panic!("{doc} {key}: {other:?}"),
        }
    }
    // Garbage where the token goes is refused too, not waited on.
    assert!(matches!(
        gate("d1", &[subscribe("rt1.x.y")], &keys(), NOW),
        Gate::Refuse(1008, _)
    ));
}

#[test]
fn a_stranger_without_a_token_is_refused_at_the_frame_or_byte_limit() {
    let noise = String::from(r#"{"t":"ping"}"#);
    let frames: Vec<String> = (0..GATE_MAX_FRAMES - 1).map(|_| noise.clone()).collect();
    assert_eq!(gate("d1", &frames, &keys(), NOW), Gate::NeedMore);
    let frames: Vec<String> = (0..GATE_MAX_FRAMES).map(|_| noise.clone()).collect();
    assert!(matches!(
        gate("d1", &frames, &keys(), NOW),
        Gate::Refuse(1008, _)
    ));
    let big = "x".repeat(GATE_MAX_BYTES + 1);
    assert!(matches!(
        gate("d1", &[big], &keys(), NOW),
        Gate::Refuse(1008, _)
    ));
    // A token past the byte limit does not count.
    let padded = vec![
        "y".repeat(GATE_MAX_BYTES),
        subscribe(&lease("d1", "secret-one")),
    ];
    assert!(matches!(
        gate("d1", &padded, &keys(), NOW),
        Gate::Refuse(1008, _)
    ));
}

fn limits() -> BootLimits {
    BootLimits {
        max_in_flight: 2,
        max_queued: 2,
        queue_wait_ms: 5_000,
        refused_ttl_ms: 60_000,
        max_refused: 2,
    }
}

#[test]
fn boots_past_the_slots_wait_in_order_and_start_as_slots_free() {
    let mut a = BootAdmission::new(limits());
    assert_eq!(a.request(0, "a"), BootAdmit::Start);
    assert_eq!(a.request(0, "b"), BootAdmit::Start);
    assert_eq!(a.request(1, "c"), BootAdmit::Queued);
    assert_eq!(a.request(2, "d"), BootAdmit::Queued);
    assert!(matches!(a.request(3, "e"), BootAdmit::Refuse(1013, _)));
    assert_eq!((a.in_flight(), a.queued()), (2, 2));
    assert_eq!(a.next_deadline(), Some(5_001));
    assert_eq!(a.finished(10, "a", BootEnd::Done).as_deref(), Some("c"));
    assert_eq!(a.finished(11, "b", BootEnd::Done).as_deref(), Some("d"));
    assert_eq!(a.finished(12, "c", BootEnd::Done), None);
    assert_eq!(a.finished(13, "d", BootEnd::Done), None);
    assert_eq!((a.in_flight(), a.queued()), (0, 0));
}

#[test]
fn a_queued_boot_whose_wait_ran_out_is_refused_with_a_retry_hint() {
    let mut a = BootAdmission::new(limits());
    a.request(0, "a");
    a.request(0, "b");
    assert_eq!(a.request(100, "c"), BootAdmit::Queued);
    assert_eq!(a.request(200, "d"), BootAdmit::Queued);
    assert!(a.expire(5_099).is_empty());
    let gone = a.expire(5_100);
    assert_eq!(gone.len(), 1);
    assert_eq!((gone[0].0.as_str(), gone[0].1), ("c", 1013));
    assert!(gone[0].2.contains("retry in 5 s"), "{}", gone[0].2);
    a.withdraw("d");
    assert_eq!(a.queued(), 0);
    assert_eq!(a.finished(6_000, "a", BootEnd::Done), None);
}

#[test]
fn a_document_the_api_server_refused_is_refused_from_the_cache_until_the_ttl() {
    let mut a = BootAdmission::new(limits());
    assert_eq!(a.request(0, "ghost"), BootAdmit::Start);
    a.finished(10, "ghost", BootEnd::NoRoom);
    let cached = a.request(20, "ghost");
    assert_eq!(
        cached,
        BootAdmit::Refuse(
            CLOSE_NO_ROOM_CODE,
            String::from(super::super::CLOSE_NO_ROOM.1)
        )
    );
    assert_eq!(a.in_flight(), 0, "a cached refusal takes no slot");
    assert_eq!(
        a.request(60_010, "ghost"),
        BootAdmit::Start,
        "asked again after the TTL"
    );
    // The cache is bounded: the oldest refusal goes first.
    let mut a = BootAdmission::new(limits());
    for (t, doc) in [(0, "x"), (1, "y"), (2, "z")] {
        a.request(t, doc);
        a.finished(t, doc, BootEnd::Refused);
    }
    assert_eq!(a.request(3, "x"), BootAdmit::Start);
    assert!(matches!(a.request(3, "z"), BootAdmit::Refuse(..)));
    // A boot that failed for another reason is not cached.
    let mut a = BootAdmission::new(limits());
    a.request(0, "flaky");
    a.finished(1, "flaky", BootEnd::Done);
    assert_eq!(a.request(2, "flaky"), BootAdmit::Start);
}

const CLOSE_NO_ROOM_CODE: u16 = super::super::CLOSE_NO_ROOM.0;

#[derive(Clone, Debug)]
enum Step {
    Request(u8),
    Finish(u8, u8),
    Withdraw(u8),
    Tick(u16),
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        (0u8..12).prop_map(Step::Request),
        (0u8..12, 0u8..3).prop_map(|(d, e)| Step::Finish(d, e)),
        (0u8..12).prop_map(Step::Withdraw),
        (0u16..4_000).prop_map(Step::Tick),
    ]
}

proptest::proptest! {
    /// Over any sequence of requests, ends, withdrawals and time: the slots are never
    /// over-used, the queue stays bounded, a document is never booted twice at once,
    /// and a refusal from the cache never takes a slot.
    #[test]
    fn boot_admission_keeps_its_bounds(steps in proptest::collection::vec(step(), 1..200)) {
        let l = limits();
        let mut a = BootAdmission::new(l.clone());
        let mut now = 0u64;
        let mut booting: Vec<String> = Vec::new();
        let mut queued: Vec<String> = Vec::new();
        for s in steps {
            match s {
                Step::Request(d) => {
                    let doc = alloc::format!("d{d}");
                    if booting.contains(&doc) || queued.contains(&doc) {
                        continue; // the driver asks once per document
                    }
                    let before = a.in_flight();
                    match a.request(now, &doc) {
                        BootAdmit::Start => booting.push(doc),
                        BootAdmit::Queued => queued.push(doc),
                        BootAdmit::Refuse(code, _) => {
                            proptest::prop_assert!(code == 1013 || code == CLOSE_NO_ROOM_CODE || code == super::super::CLOSE_BOOT_FAILED.0);
                            proptest::prop_assert_eq!(a.in_flight(), before);
                        }
                    }
                }
                Step::Finish(d, e) => {
                    let doc = alloc::format!("d{d}");
                    let Some(i) = booting.iter().position(|b| *b == doc) else { continue };
                    booting.remove(i);
                    let end = [BootEnd::Done, BootEnd::NoRoom, BootEnd::Refused][e as usize];
                    if let Some(next) = a.finished(now, &doc, end) {
                        let j = queued.iter().position(|q| *q == next);
                        proptest::prop_assert!(j.is_some(), "{next} was not queued");
                        queued.remove(j.unwrap_or(0));
                        booting.push(next);
                    }
                }
                Step::Withdraw(d) => {
                    let doc = alloc::format!("d{d}");
                    a.withdraw(&doc);
                    queued.retain(|q| *q != doc);
                }
                Step::Tick(dt) => {
                    now += u64::from(dt);
                    for (doc, code, _) in a.expire(now) {
                        proptest::prop_assert_eq!(code, 1013);
                        queued.retain(|q| *q != doc);
                    }
                }
            }
            proptest::prop_assert!(a.in_flight() <= l.max_in_flight);
            proptest::prop_assert_eq!(a.in_flight(), booting.len());
            proptest::prop_assert!(a.queued() <= l.max_queued);
            proptest::prop_assert_eq!(a.queued(), queued.len());
        }
    }
}

#[test]
fn the_open_file_limit_is_split_between_sockets_and_rooms() {
    // A common default of 1,024: 448 sockets, 224 rooms (not 10,000).
    let b = descriptor_budget(Some(1024), None, 10_000);
    assert_eq!(
        (b.connections, b.rooms, b.rooms_limited_by_descriptors),
        (448, 224, true)
    );
    // A raised limit: fleet.max_rooms rules.
    let b = descriptor_budget(Some(1 << 20), None, 10_000);
    assert_eq!((b.rooms, b.rooms_limited_by_descriptors), (10_000, false));
    // Sockets configured: rooms get the rest; never fewer than one.
    let b = descriptor_budget(Some(1024), Some(800), 10_000);
    assert_eq!(b.rooms, 48);
    assert_eq!(descriptor_budget(Some(200), Some(5_000), 10).rooms, 1);
    // Every descriptor is spoken for at most once.
    for nofile in [256u64, 1024, 4096, 65_536] {
        let b = descriptor_budget(Some(nofile), None, usize::MAX);
        let used =
            b.connections as u64 + b.rooms as u64 * DESCRIPTORS_PER_ROOM + RESERVED_DESCRIPTORS;
        assert!(used <= nofile, "{nofile}: {b:?}");
    }
}

//! Unit tests of the write plane through the typed API.

use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use crate::room::{Room, UpstreamBatch};
use crate::schema::{Hello, TableSchema};
use crate::serve::NetOp;
use crate::value::Value;
use crate::write::{Begin, Commit, Conflict};
use crate::Row;

fn row(cells: &[Value]) -> Row {
    Row::from(cells)
}

fn n(x: f64) -> Value {
    Value::num(x)
}

fn s(x: &str) -> Value {
    Value::str(x)
}

/// deck(id, title) pk id; slide(id, deckId, pos) pk id; member(id, name) context.
pub(super) fn room() -> Room {
    let tables = vec![
        TableSchema::new("deck", &["id", "title"], &[0]),
        TableSchema::new("member", &["id", "name"], &[0]),
        TableSchema::new("slide", &["id", "deckId", "pos"], &[0]),
    ];
    let fp = crate::fingerprint::normalized_fp(tables.iter());
    let hello = Hello {
        epoch: 1,
        comparator_version: 2,
        tables,
        normalized_fp: fp.clone(),
    };
    let mut r = Room::open(hello, 1000).unwrap();
    let t = |name: &str| Arc::<str>::from(name);
    let ops = vec![
        NetOp::Add {
            table: t("deck"),
            row: row(&[s("d1"), s("Deck")]),
        },
        NetOp::Add {
            table: t("slide"),
            row: row(&[s("s1"), s("d1"), n(1.0)]),
        },
        NetOp::Add {
            table: t("slide"),
            row: row(&[s("s2"), s("d1"), n(2.0)]),
        },
        NetOp::Add {
            table: t("member"),
            row: row(&[s("m1"), s("ann")]),
        },
    ];
    r.apply(&UpstreamBatch {
        epoch: 1,
        seq: 0,
        normalized_fp: fp,
        cv: Some(1.0),
        ops,
    })
    .unwrap();
    r
}

fn fp(r: &Room) -> String {
    let t: Vec<TableSchema> = r.tables().take(3).cloned().collect();
    crate::fingerprint::normalized_fp(t.iter())
}

fn upstream(r: &mut Room, seq: u64, ops: Vec<NetOp>) {
    let fp = fp(r);
    r.apply(&UpstreamBatch {
        epoch: 1,
        seq,
        normalized_fp: fp,
        cv: Some(1.0 + seq as f64),
        ops,
    })
    .unwrap();
}

const SPECS: &str = r#"[
  {"table":"deck","writable":{"kind":"predicate","where":{"type":"simple","op":"=","left":{"type":"column","name":"id"},"right":{"type":"literal","value":"d1"}},"joinKeyCols":["id"]},
   "footprintWhere":{"type":"simple","op":"=","left":{"type":"column","name":"id"},"right":{"type":"literal","value":"d1"}}},
  {"table":"member","writable":{"kind":"none"}},
  {"table":"slide","writable":{"kind":"predicate","joinKeyCols":["deckId"]}}
]"#;

fn v2(r: &mut Room) {
    let specs: serde_json::Value = serde_json::from_str(SPECS).unwrap();
    r.enable_writes_v2(&specs, Some(&["deck", "slide"]))
        .unwrap();
}

fn deopt_of(r: &mut Room) -> crate::write::Deopt {
    match r.commit_mutation().unwrap() {
        Commit::Deopt(d) => d,
        other => panic!("expected a deopt, got {other:?}"),
    }
}

#[test]
fn gap_dedup_and_one_open_transaction() {
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    assert_eq!(r.begin_mutation("c", 1, None, None).unwrap(), Begin::Tx);
    assert!(r
        .begin_mutation("c", 2, None, None)
        .unwrap_err()
        .message()
        .contains("already open"));
    r.reject_mutation(None, Some("nope")).unwrap();
    assert_eq!(r.begin_mutation("c", 1, None, None).unwrap(), Begin::Dedup);
    let e = r.begin_mutation("c", 5, None, None).unwrap_err();
    assert_eq!(e.message(), "mutation gap for c: expected mid 2, got 5");
    assert_eq!(e.code(), crate::ErrorCode::MutationGap);
    assert_eq!(r.applied_mid("c"), 1);
    assert_eq!(r.pending_len(), 1);
    assert!(
        r.enable_writes(&["slide"]).is_err(),
        "enabling twice is refused"
    );
}

#[test]
fn staging_refusals_leave_the_head_untouched() {
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    r.begin_mutation("c", 1, None, None).unwrap();
    let dup = r
        .tx_add("slide", row(&[s("s1"), s("d1"), n(9.0)]))
        .unwrap_err();
    assert!(
        dup.message().contains("an existing primary key"),
        "{}",
        dup.message()
    );
    assert!(r
        .tx_add("slide", row(&[s("s9")]))
        .unwrap_err()
        .message()
        .contains("row width does not match"));
    assert!(r
        .tx_add("deck", row(&[s("d2"), s("x")]))
        .unwrap_err()
        .message()
        .contains("not owned by this room"));
    assert!(r
        .tx_edit("slide", row(&[s("s9"), s("d1"), n(1.0)]))
        .is_err());
    assert!(r.tx_remove("slide", &[s("s9")]).is_err());
    assert!(r.tx_remove("slide", &[s("s1"), s("x")]).is_err());
    // Read-your-writes.
    r.tx_add("slide", row(&[s("s3"), s("d1"), n(3.0)])).unwrap();
    assert_eq!(
        r.tx_get("slide", &[s("s3")]).unwrap().unwrap().get(2),
        n(3.0)
    );
    r.tx_remove("slide", &[s("s3")]).unwrap();
    assert!(r.tx_get("slide", &[s("s3")]).unwrap().is_none());
    // Net nothing: the rows do not change, but every applied mutation is a commit.
    let cv = r.head_cv();
    assert_eq!(
        r.commit_mutation().unwrap(),
        Commit::Applied { head_cv: cv + 1 }
    );
    assert_eq!(r.rows("slide").len(), 2);
    // The key the transaction wrote is dirty (its flush carries no change for it).
    assert_eq!(r.dirty_len(), 1);
}

#[test]
fn each_gate_reason() {
    let mut r = room();
    v2(&mut r);
    // writeOutOfScope: a deck outside id = 'd1'.
    r.begin_mutation("c", 1, Some("addDeck"), Some("{\"id\":\"d2\"}"))
        .unwrap();
    r.tx_add("deck", row(&[s("d2"), s("x")])).unwrap();
    let d = deopt_of(&mut r);
    assert_eq!(
        (d.reason, d.op, d.table.as_str()),
        ("writeOutOfScope", Some("add"), "deck")
    );
    assert_eq!(d.pk, vec![s("d2")]);
    assert!(r.rows("deck").len() == 1, "nothing applied");
    // joinKeyChanged: moving a slide to another deck.
    r.begin_mutation("c", 2, None, None).unwrap();
    r.tx_edit("slide", row(&[s("s1"), s("d9"), n(1.0)]))
        .unwrap();
    let d = deopt_of(&mut r);
    assert_eq!(
        (d.reason, d.column.as_deref()),
        ("joinKeyChanged", Some("deckId"))
    );
    // absentReadUnproven: slide has no footprintWhere.
    r.begin_mutation("c", 3, None, None).unwrap();
    assert!(r.tx_get("slide", &[s("nope")]).unwrap().is_none());
    assert_eq!(deopt_of(&mut r).reason, "absentReadUnproven");
    // A proven absent read: deck d1's key satisfies footprintWhere.
    r.begin_mutation("c", 4, None, None).unwrap();
    r.tx_remove("deck", &[s("d1")]).unwrap();
    assert!(r.tx_get("deck", &[s("d1")]).unwrap().is_none());
    assert!(matches!(
        r.commit_mutation().unwrap(),
        Commit::Applied { .. }
    ));
    // Unproven: a deck key the predicate rejects.
    r.begin_mutation("c", 5, None, None).unwrap();
    assert!(r.tx_get("deck", &[s("d7")]).unwrap().is_none());
    assert_eq!(deopt_of(&mut r).reason, "absentReadUnproven");
    // Context tables are readable, never writable.
    r.begin_mutation("c", 6, None, None).unwrap();
    assert!(r.tx_get("member", &[s("m1")]).unwrap().is_some());
    assert!(r.tx_add("member", row(&[s("m2"), s("bob")])).is_err());
    r.reject_mutation(Some("rejected"), Some("not allowed"))
        .unwrap();
    assert_eq!(r.applied_mid("c"), 6);
    assert_eq!(r.pending_len(), 6);
}

#[test]
fn scope_specs_compile_loudly() {
    let mut r = room();
    let bad = [
        r#"[{"table":"deck","writable":{"kind":"predicate","where":{"type":"correlatedSubquery","op":"EXISTS","related":{"correlation":{"parentField":["id"],"childField":["deckId"]},"subquery":{"table":"slide","alias":"s"}}},"joinKeyCols":[]}}]"#,
        r#"[{"table":"nope","writable":{"kind":"none"}}]"#,
        r#"[{"table":"deck","writable":{"kind":"sometimes"}}]"#,
        r#"[{"table":"deck","writable":{"kind":"predicate","joinKeyCols":["zz"]}}]"#,
        r#"[{"table":"deck","writable":{"kind":"none"}},{"table":"deck","writable":{"kind":"none"}}]"#,
        r#"{"table":"deck"}"#,
    ];
    for text in bad {
        let specs: serde_json::Value = serde_json::from_str(text).unwrap();
        assert!(r.enable_writes_v2(&specs, None).is_err(), "{text}");
        assert!(!r.writes_enabled(), "nothing is enabled after a refusal");
    }
    // Wider than the owned set.
    let specs: serde_json::Value = serde_json::from_str(SPECS).unwrap();
    let e = r.enable_writes_v2(&specs, Some(&["deck"])).unwrap_err();
    assert!(e.message().contains("owned"), "{}", e.message());
    assert!(!r.writes_enabled());
}

#[test]
fn ack_and_seed_write_ledger_rows() {
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    r.begin_mutation("c", 1, None, None).unwrap();
    r.tx_edit("slide", row(&[s("s1"), s("d1"), n(5.0)]))
        .unwrap();
    r.commit_mutation().unwrap();
    let cv = r.head_cv();
    assert!(
        r.ack(&[("c".to_string(), 2)]).is_err(),
        "cannot ack past the applied watermark"
    );
    assert_eq!(r.ack(&[("c".to_string(), 1)]).unwrap(), Some(cv + 1));
    assert_eq!(r.ack(&[("c".to_string(), 1)]).unwrap(), None);
    assert_eq!(r.acked_lmid("c"), 1);
    assert_eq!(
        r.rows("_rindle_client_mutations"),
        vec![row(&[s("c"), n(1.0)])]
    );
    // seedDurable raises applied (dedup) and durable, and writes the row.
    assert!(r.seed_durable(&[("z".to_string(), 4)]).unwrap().is_some());
    assert_eq!(
        (r.applied_mid("z"), r.durable_lmid("z"), r.acked_lmid("z")),
        (4, 4, 4)
    );
    assert_eq!(r.begin_mutation("z", 4, None, None).unwrap(), Begin::Dedup);
    // A lease may read the ledger (which rows is the lease issuer's decision).
    assert!(r
        .parse_query(r#"{"table":"_rindle_client_mutations"}"#)
        .is_ok());
}

#[test]
fn flush_redirtied_mid_flight_rebases() {
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    r.begin_mutation("c", 1, None, None).unwrap();
    r.tx_edit("slide", row(&[s("s1"), s("d1"), n(5.0)]))
        .unwrap();
    r.commit_mutation().unwrap();
    let b = r.begin_flush().unwrap().unwrap();
    assert_eq!(b.changes.len(), 2, "one data edit + the ledger co-edit");
    assert!(r.flush_in_flight());
    assert!(r.begin_flush().is_err());
    // Written again during the flight.
    r.begin_mutation("c", 2, None, None).unwrap();
    r.tx_edit("slide", row(&[s("s1"), s("d1"), n(6.0)]))
        .unwrap();
    r.commit_mutation().unwrap();
    let ok = r.flush_ok().unwrap();
    // Mid 1 retires; the key stays dirty.
    assert_eq!((ok.retired, ok.dirty), (1, 1));
    assert_eq!(r.durable_lmid("c"), 1);
    let b2 = r.begin_flush().unwrap().unwrap();
    // Re-based: old is what the first flush wrote (pos 5), row is pos 6.
    assert_eq!(
        b2.changes[0],
        crate::write::FlushChange::Edit {
            table: Arc::from("slide"),
            old: row(&[s("s1"), s("d1"), n(5.0)]),
            row: row(&[s("s1"), s("d1"), n(6.0)]),
        }
    );
    assert_eq!(r.flush_ok().unwrap().dirty, 0);
    assert_eq!((r.pending_len(), r.dirty_len()), (0, 0));
    assert!(r.begin_flush().unwrap().is_none());
}

#[test]
fn conflict_converges_to_the_authority() {
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    let sub_q = r.parse_query(r#"{"table":"slide"}"#).unwrap();
    r.subscribe("q", 1, &sub_q, 0).unwrap();
    r.begin_mutation("c", 1, None, None).unwrap();
    r.tx_edit("slide", row(&[s("s1"), s("d1"), n(5.0)]))
        .unwrap();
    r.tx_add("slide", row(&[s("s3"), s("d1"), n(3.0)])).unwrap();
    r.commit_mutation().unwrap();
    r.commit_all();
    r.begin_flush().unwrap().unwrap();
    let cv = r
        .flush_conflict(&[Conflict {
            table: "slide".to_string(),
            pk: vec![s("s1")],
            current: Some(row(&[s("s1"), s("d1"), n(42.0)])),
        }])
        .unwrap();
    assert!(cv.is_some());
    let frames = r.commit_all();
    assert_eq!(frames.len(), 1);
    assert_eq!(
        frames[0].batch.ops[..],
        [NetOp::Edit {
            table: Arc::from("slide"),
            old: row(&[s("s1"), s("d1"), n(5.0)]),
            new: row(&[s("s1"), s("d1"), n(42.0)]),
        }]
    );
    // s3 stays dirty and flushes next; s1 is clean now.
    assert_eq!(r.dirty_len(), 1);
    let b = r.begin_flush().unwrap().unwrap();
    assert!(
        matches!(&b.changes[0], crate::write::FlushChange::Add { row, .. } if row.get(0) == s("s3"))
    );
}

#[test]
fn an_upstream_image_of_a_dirty_key_wins() {
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    r.begin_mutation("c", 1, None, None).unwrap();
    r.tx_edit("slide", row(&[s("s1"), s("d1"), n(5.0)]))
        .unwrap();
    r.commit_mutation().unwrap();
    let t = Arc::<str>::from("slide");
    upstream(
        &mut r,
        1,
        vec![NetOp::Edit {
            table: t.clone(),
            old: row(&[s("s1"), s("d1"), n(1.0)]),
            new: row(&[s("s1"), s("d1"), n(7.0)]),
        }],
    );
    // Someone else's write wins: the head takes it, the room's change is dropped.
    assert!(r.rows("slide").contains(&row(&[s("s1"), s("d1"), n(7.0)])));
    assert_eq!(r.dirty_len(), 0);
    let b = r.begin_flush().unwrap().unwrap();
    assert!(b.changes.iter().all(|c| !matches!(c,
        crate::write::FlushChange::Edit { table, .. } if **table == *"slide")));
    r.flush_ok().unwrap();
    // The room's own write echoing back changes nothing.
    r.begin_mutation("c", 2, None, None).unwrap();
    r.tx_edit("slide", row(&[s("s1"), s("d1"), n(8.0)]))
        .unwrap();
    r.commit_mutation().unwrap();
    r.begin_flush().unwrap().unwrap();
    r.flush_ok().unwrap();
    r.begin_mutation("c", 3, None, None).unwrap();
    r.tx_edit("slide", row(&[s("s1"), s("d1"), n(9.0)]))
        .unwrap();
    r.commit_mutation().unwrap();
    upstream(
        &mut r,
        2,
        vec![NetOp::Edit {
            table: t,
            old: row(&[s("s1"), s("d1"), n(7.0)]),
            new: row(&[s("s1"), s("d1"), n(8.0)]),
        }],
    );
    assert!(r.rows("slide").contains(&row(&[s("s1"), s("d1"), n(9.0)])));
    assert_eq!(r.dirty_len(), 1);
    assert!(r.is_live());
}

#[test]
fn keyed_layer() {
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    r.begin_mutation("c", 1, None, None).unwrap();
    let k = |pairs: &[(&str, Value)]| -> Vec<(String, Value)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.clone()))
            .collect()
    };
    {
        let mut tx = r.mutation_tx().unwrap();
        assert!(tx
            .insert("slide", &k(&[("id", s("s5")), ("deckId", s("d1"))]))
            .is_err());
        assert!(tx
            .insert(
                "slide",
                &k(&[
                    ("id", s("s5")),
                    ("deckId", s("d1")),
                    ("pos", n(5.0)),
                    ("x", n(1.0))
                ])
            )
            .is_err());
        tx.insert(
            "slide",
            &k(&[("id", s("s5")), ("deckId", s("d1")), ("pos", n(5.0))]),
        )
        .unwrap();
        tx.update("slide", &k(&[("id", s("s5")), ("pos", n(6.0))]))
            .unwrap();
        tx.update("slide", &k(&[("id", s("missing")), ("pos", n(6.0))]))
            .unwrap();
        tx.delete("slide", &k(&[("id", s("missing"))])).unwrap();
        tx.delete("slide", &k(&[("id", s("s2"))])).unwrap();
        tx.upsert(
            "slide",
            &k(&[("id", s("s1")), ("deckId", s("d1")), ("pos", n(9.0))]),
        )
        .unwrap();
        let got = tx.row("slide", &k(&[("id", s("s5"))])).unwrap().unwrap();
        assert_eq!(got[2], ("pos".to_string(), n(6.0)));
        assert!(tx
            .edit(
                "slide",
                &[s("s1"), s("d1"), n(9.0)],
                &[Some(s("zz")), None, None]
            )
            .is_err());
        tx.edit(
            "slide",
            &[s("s1"), s("d1"), n(9.0)],
            &[None, None, Some(n(10.0))],
        )
        .unwrap();
        assert_eq!(
            tx.query().unwrap_err().code(),
            crate::ErrorCode::Environment
        );
    }
    r.commit_mutation().unwrap();
    let mut rows = r.rows("slide");
    rows.sort_by(|a, b| crate::value::compare_refs(a.get(0), b.get(0)));
    assert_eq!(
        rows,
        vec![
            row(&[s("s1"), s("d1"), n(10.0)]),
            row(&[s("s5"), s("d1"), n(6.0)])
        ]
    );
}

#[test]
fn an_upstream_add_of_a_held_key_replaces_it_on_a_writable_table_and_poisons_elsewhere() {
    // The write plane is quiet (nothing dirty, in flight or echoing): a new key is
    // inserted with one search, a held one still takes the general path.
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    let t = |name: &str| Arc::<str>::from(name);
    upstream(
        &mut r,
        1,
        vec![
            NetOp::Add {
                table: t("slide"),
                row: row(&[s("s3"), s("d1"), n(3.0)]),
            },
            NetOp::Add {
                table: t("slide"),
                row: row(&[s("s1"), s("d1"), n(9.0)]),
            },
        ],
    );
    let slides = r.rows("slide");
    assert!(slides.contains(&row(&[s("s3"), s("d1"), n(3.0)])));
    assert!(
        slides.contains(&row(&[s("s1"), s("d1"), n(9.0)])),
        "the held key took the image"
    );
    assert_eq!(slides.len(), 3);
    let fp = fp(&r);
    let err = r
        .apply(&UpstreamBatch {
            epoch: 1,
            seq: 2,
            normalized_fp: fp,
            cv: Some(3.0),
            ops: vec![NetOp::Add {
                table: t("deck"),
                row: row(&[s("d1"), s("Again")]),
            }],
        })
        .unwrap_err();
    assert!(err.to_string().contains("add of an existing key"), "{err}");
}

#[test]
fn a_begin_on_a_poisoned_store_says_a_transaction_is_open_before_the_store_is_not_live() {
    // The published room's order: an open transaction is reported before the store's
    // state (found by the differential soak against it).
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    assert_eq!(r.begin_mutation("c", 1, None, None).unwrap(), Begin::Tx);
    let poisoned = r.apply(&UpstreamBatch {
        epoch: 1,
        seq: 1,
        normalized_fp: "0000000000000001".to_string(),
        cv: Some(2.0),
        ops: vec![],
    });
    assert!(poisoned.is_err());
    let e = r.begin_mutation("c", 3, None, None).unwrap_err();
    assert_eq!(e.message(), "a mutation transaction is already open");
    let mut fresh = room();
    fresh.enable_writes(&["slide"]).unwrap();
    assert!(fresh
        .apply(&UpstreamBatch {
            epoch: 1,
            seq: 1,
            normalized_fp: "0000000000000001".to_string(),
            cv: Some(2.0),
            ops: vec![],
        })
        .is_err());
    let e = fresh.begin_mutation("c", 1, None, None).unwrap_err();
    assert_eq!(e.message(), "store is not live");
}

/// A late echo of an earlier flush of a key, arriving after a later flush of it has
/// committed and the key was written again, is no news: the next flush's CAS base stays
/// what the later flush wrote. (It used to take the stale image as the base, so a write
/// back to that image flushed as a no-op and the room kept an image the authority never
/// got.)
#[test]
fn a_late_echo_of_an_earlier_flush_does_not_rewind_the_cas_base() {
    let mut r = room();
    r.enable_writes(&["slide"]).unwrap();
    let pos = |p: f64| row(&[s("s1"), s("d1"), n(p)]);
    let edit = |r: &mut Room, mid: u64, p: f64| {
        r.begin_mutation("c", mid, None, None).unwrap();
        r.tx_edit("slide", pos(p)).unwrap();
        r.commit_mutation().unwrap();
    };
    // Flight 1 writes pos 5; written again (pos 6) while it flies.
    edit(&mut r, 1, 5.0);
    r.begin_flush().unwrap().unwrap();
    edit(&mut r, 2, 6.0);
    r.flush_ok().unwrap();
    // Flight 2 writes pos 6 on base 5; written back to pos 5 while it flies.
    r.begin_flush().unwrap().unwrap();
    edit(&mut r, 3, 5.0);
    r.flush_ok().unwrap();
    // The authority holds pos 6. Flight 1's echo (pos 5) comes in late.
    let t = Arc::<str>::from("slide");
    upstream(
        &mut r,
        1,
        vec![NetOp::Edit {
            table: t.clone(),
            old: row(&[s("s1"), s("d1"), n(1.0)]),
            new: pos(5.0),
        }],
    );
    let b = r.begin_flush().unwrap().unwrap();
    assert_eq!(
        b.changes[0],
        crate::write::FlushChange::Edit {
            table: t,
            old: pos(6.0),
            row: pos(5.0),
        },
        "the write back to pos 5 is flushed on the base flight 2 committed"
    );
}

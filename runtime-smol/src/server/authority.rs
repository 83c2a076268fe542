//! The write authority as the room task sees it: an object-safe trait (seed 000
//! `RoomAuthority`), implemented by the HTTP client ([`HttpAuthority`]) and by anything an
//! embedder plugs in.

use std::collections::BTreeMap;

use super::clock::BoxFuture;
use crate::authority::{ApplyResult, AuthorityError, HttpAuthority};

/// The room's counterpart for durability (seed 000 `RoomAuthority`).
pub trait Authority: Send + Sync + 'static {
    /// Claims the placement epoch for `doc` (once per process, at start).
    fn claim_epoch<'a>(&'a self, doc: &'a str) -> BoxFuture<'a, Result<u64, AuthorityError>>;
    /// The authority's ledger lmid per client (0 = none): the boot probe.
    fn lmids<'a>(
        &'a self,
        doc: &'a str,
        clients: &'a [String],
    ) -> BoxFuture<'a, Result<BTreeMap<String, u64>, AuthorityError>>;
    /// Applies one batch: `body` is the exact journaled body, sent verbatim.
    fn apply_row_change_txn<'a>(
        &'a self,
        body: &'a str,
    ) -> BoxFuture<'a, Result<ApplyResult, AuthorityError>>;
}

impl Authority for HttpAuthority {
    fn claim_epoch<'a>(&'a self, doc: &'a str) -> BoxFuture<'a, Result<u64, AuthorityError>> {
        Box::pin(HttpAuthority::claim_epoch(self, doc))
    }

    fn lmids<'a>(
        &'a self,
        doc: &'a str,
        clients: &'a [String],
    ) -> BoxFuture<'a, Result<BTreeMap<String, u64>, AuthorityError>> {
        Box::pin(HttpAuthority::lmids(self, doc, clients))
    }

    fn apply_row_change_txn<'a>(
        &'a self,
        body: &'a str,
    ) -> BoxFuture<'a, Result<ApplyResult, AuthorityError>> {
        Box::pin(HttpAuthority::apply_row_change_txn(self, body))
    }
}

/// The flush body, composed once (key order exactly as seed 002 `fireFlush`):
/// `{"source":"room:<doc>:<epoch>","offset":"<seq, 20 digits>","doc","epoch","batchHash",
/// "cas":true,"changes":[…]}`.
pub(crate) fn flush_body(
    doc: &str,
    epoch: u64,
    seq: u64,
    batch_hash: &str,
    changes: &str,
) -> String {
    use rindle_room_core::json::write::{write_i64, write_str};
    let mut s = String::with_capacity(160 + changes.len());
    s.push_str("{\"source\":");
    write_str(&mut s, &format!("room:{doc}:{epoch}"));
    s.push_str(",\"offset\":");
    write_str(&mut s, &pad_offset(seq));
    s.push_str(",\"doc\":");
    write_str(&mut s, doc);
    s.push_str(",\"epoch\":");
    write_i64(&mut s, epoch as i64);
    s.push_str(",\"batchHash\":");
    write_str(&mut s, batch_hash);
    s.push_str(",\"cas\":true,\"changes\":");
    s.push_str(changes);
    s.push('}');
    s
}

/// A flush seq as its wire offset: zero-padded to 20 digits so lexicographic order is
/// numeric order.
pub(crate) fn pad_offset(seq: u64) -> String {
    format!("{seq:020}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_keeps_the_seed_key_order() {
        let body = flush_body("doc/1", 3, 7, "abcd", "[]");
        assert_eq!(
            body,
            r#"{"source":"room:doc/1:3","offset":"00000000000000000007","doc":"doc/1","epoch":3,"batchHash":"abcd","cas":true,"changes":[]}"#
        );
    }
}

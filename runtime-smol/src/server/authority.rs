//! The write authority as the room task sees it: an object-safe trait (the published room's
//! `RoomAuthority`), implemented by the HTTP client ([`HttpAuthority`]) and by anything an
//! embedder plugs in.

use std::collections::BTreeMap;

use super::clock::BoxFuture;
use crate::authority::{ApplyResult, AuthorityError, HttpAuthority};

/// The room's counterpart for durability (the published room's `RoomAuthority`).
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

//! The front of an order without sorting all of it.
//!
//! A windowed reader wants the first few rows of an order over many. Each row gets the
//! first 8 bytes of its sort key as an integer (its *prefix*, [`sort_prefix`]); a
//! linear-time selection keeps the rows with the smallest prefixes, and only those get
//! full keys and a sort.
//!
//! Why that is exact: keys compare as bytes, so a smaller prefix (the first 8 bytes,
//! zero-padded) means a smaller key. Every row left out has a prefix above every kept
//! one, so it sorts after every kept row: the kept rows are exactly the rows whose key
//! is at most the last kept key.
//!
//! [`sort_prefix`]: super::sort_prefix

use alloc::vec::Vec;

use super::{sort_key_into, Key};
use crate::value::Cells;

/// Keeps about the `keep` entries of `all` with the smallest prefixes: exactly those
/// whose prefix is at most the `keep`-th smallest (rows tied with it stay, so the cut
/// falls between prefixes), in no particular order. Nothing is dropped when there are
/// at most twice `keep`. Returns whether every entry was kept.
pub(crate) fn keep_front<I>(all: &mut Vec<(u64, I)>, keep: usize) -> bool {
    let keep = keep.max(1);
    let total = all.len();
    if total <= keep.saturating_mul(2) {
        return true;
    }
    let (_, nth, rest) = all.select_nth_unstable_by_key(keep - 1, |e| e.0);
    let cut = nth.0;
    let mut tied = 0;
    for i in 0..rest.len() {
        if rest[i].0 == cut {
            rest.swap(tied, i);
            tied += 1;
        }
    }
    all.truncate(keep + tied);
    all.len() == total
}

/// Full keys under `order` for rows given as `(sort_prefix, id)`, in key order: the
/// pairs are sorted by their integer prefix (cheap), and only rows that share a prefix
/// compare their full keys. `row_of` finds a row by id; an id it does not find is left
/// out. Ids must be distinct. `all` is left sorted by prefix (the caller may reuse it).
pub(crate) fn keyed_by_prefix<'r, I: Copy, R: Cells + ?Sized + 'r>(
    all: &mut [(u64, I)],
    row_of: impl Fn(I) -> Option<&'r R>,
    order: &[(usize, bool)],
    scratch: &mut Vec<u8>,
) -> Vec<(Key, I)> {
    all.sort_unstable_by_key(|e| e.0);
    let mut entries: Vec<(Key, I)> = Vec::with_capacity(all.len());
    // Start of the current run of equal prefixes in `entries`.
    let mut from = 0;
    let mut run: Option<u64> = None;
    for &(p, id) in &*all {
        let Some(row) = row_of(id) else {
            continue;
        };
        if run != Some(p) {
            entries[from..].sort_unstable_by(|a, b| a.0.cmp(&b.0));
            from = entries.len();
            run = Some(p);
        }
        sort_key_into(scratch, row, order);
        entries.push((Key::from(scratch.as_slice()), id));
    }
    entries[from..].sort_unstable_by(|a, b| a.0.cmp(&b.0));
    entries
}

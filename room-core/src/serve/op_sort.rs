//! The order of a batch's ops: table name (bytes), then primary key (comparator order),
//! two ops on one key folded into one.
//!
//! A snapshot of a hundred rows is sorted by some seven hundred comparisons, and each
//! comparison of two rows by key reads a cell of each image and compares them by kind.
//! A larger batch whose tables' first key cells are all numbers, or all texts, is sorted
//! on a sort key computed once per op instead — the table's rank among the batch's
//! tables and an 8-byte prefix of the first key cell, in the comparator's order — and
//! two ops with equal sort keys only then by the full order; the fold, too, compares
//! neighbours by their full keys only when their sort keys are equal. The sort key
//! never orders two ops against the full order (a smaller key means a smaller op), so
//! the result is the same op for op, and the sort is stable either way.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::net_op::NetOp;
use crate::store::Store;
use crate::value::CellRef;

/// Primary-key columns per table name, looked up once per sort (the first few tables
/// without allocating: a drain rarely spans more).
struct PkCols<'s> {
    first: [(Option<Arc<str>>, &'s [usize]); 4],
    more: Vec<(Arc<str>, &'s [usize])>,
}

impl<'s> PkCols<'s> {
    fn new(store: &'s Store, ops: &[NetOp]) -> PkCols<'s> {
        PkCols::of(ops, |t| match store.table_id_shared(t) {
            Some(i) => &store.table(i).schema.primary_key,
            None => &[],
        })
    }

    /// The key columns of each table of `ops`, as `pk` gives them.
    fn of(ops: &[NetOp], pk: impl Fn(&Arc<str>) -> &'s [usize]) -> PkCols<'s> {
        let mut pks = PkCols {
            first: Default::default(),
            more: Vec::new(),
        };
        let mut last: Option<&Arc<str>> = None;
        for op in ops {
            let t = op.table();
            // Ops come in runs of one table.
            if last.is_some_and(|l| Arc::ptr_eq(l, t)) || pks.find(t).is_some() {
                last = Some(t);
                continue;
            }
            last = Some(t);
            let cols = pk(t);
            match pks.first.iter_mut().find(|(n, _)| n.is_none()) {
                Some(slot) => *slot = (Some(t.clone()), cols),
                None => pks.more.push((t.clone(), cols)),
            }
        }
        pks
    }

    fn find(&self, table: &Arc<str>) -> Option<&'s [usize]> {
        // Ops of one table nearly always share one `Arc`: look for it before comparing
        // names.
        let names = || {
            self.first
                .iter()
                .filter_map(|(n, pk)| n.as_ref().map(|n| (n, *pk)))
                .chain(self.more.iter().map(|(n, pk)| (n, *pk)))
        };
        names()
            .find(|(n, _)| Arc::ptr_eq(n, table))
            .or_else(|| names().find(|(n, _)| *n == table))
            .map(|(_, pk)| pk)
    }

    #[inline]
    fn get(&self, table: &Arc<str>) -> &'s [usize] {
        // Most sorts see one table: its name is the first one's, the same `Arc`.
        match &self.first[0] {
            (Some(n), pk) if Arc::ptr_eq(n, table) => pk,
            _ => self.find(table).unwrap_or(&[]),
        }
    }

    /// The batch's tables, each once, sorted by name.
    fn tables_by_name(&self) -> Vec<(&Arc<str>, &'s [usize])> {
        let mut tables: Vec<(&Arc<str>, &'s [usize])> = self
            .first
            .iter()
            .filter_map(|(n, pk)| n.as_ref().map(|n| (n, *pk)))
            .chain(self.more.iter().map(|(n, pk)| (n, *pk)))
            .collect();
        tables.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        tables
    }
}

/// The op order: table name (bytes), then primary key (comparator order).
fn op_order(pks: &PkCols<'_>, a: &NetOp, b: &NetOp) -> Ordering {
    // Ops of one table share its name (the room's own `Arc<str>`).
    if !Arc::ptr_eq(a.table(), b.table()) {
        let o = a.table().as_bytes().cmp(b.table().as_bytes());
        if o != Ordering::Equal {
            return o;
        }
    }
    let (ra, rb) = (a.image(), b.image());
    for &c in pks.get(a.table()) {
        let o = ra.compare_at(rb, c);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Batches shorter than this are sorted by the full order alone (a drain's batch of
/// one or two ops gains nothing from sort keys).
const SORT_KEY_MIN_OPS: usize = 64;

/// Orders ops and folds two ops on one key into one: a key removed and re-added
/// within a drain gets a fresh row id, so it arrives as a remove of the old id and an
/// add of the new one.
pub(crate) fn sort_ops(store: &Store, ops: Vec<NetOp>) -> Vec<NetOp> {
    if ops.len() < 2 {
        return ops;
    }
    let pks = PkCols::new(store, &ops);
    let keys = if ops.len() >= SORT_KEY_MIN_OPS {
        sort_keys(&pks, &ops)
    } else {
        None
    };
    sort_and_fold(&pks, ops, keys)
}

/// `ops` in the op order (a stable sort), on their sort `keys` when given, then folded.
fn sort_and_fold(
    pks: &PkCols<'_>,
    mut ops: Vec<NetOp>,
    keys: Option<Vec<(u32, u64)>>,
) -> Vec<NetOp> {
    let keys = match keys {
        // Already in order (a snapshot read in key order often is): nothing to move.
        Some(keys) if in_order(pks, &ops, &keys) => Some(keys),
        Some(keys) => {
            let mut keyed: Vec<((u32, u64), NetOp)> = keys.into_iter().zip(ops).collect();
            keyed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| op_order(pks, &a.1, &b.1)));
            let (keys, sorted) = keyed.into_iter().unzip();
            ops = sorted;
            Some(keys)
        }
        None => {
            ops.sort_by(|a, b| op_order(pks, a, b));
            None
        }
    };
    fold(pks, ops, keys)
}

/// Whether `ops`, with sort `keys`, are in the op order already.
fn in_order(pks: &PkCols<'_>, ops: &[NetOp], keys: &[(u32, u64)]) -> bool {
    (1..ops.len()).all(|i| match keys[i - 1].cmp(&keys[i]) {
        Ordering::Less => true,
        Ordering::Equal => op_order(pks, &ops[i - 1], &ops[i]) != Ordering::Greater,
        Ordering::Greater => false,
    })
}

/// Folds neighbours on one key (`ops` in the op order; `keys`, when given, their sort
/// keys: neighbours whose sort keys differ are on different keys).
fn fold(pks: &PkCols<'_>, mut ops: Vec<NetOp>, mut keys: Option<Vec<(u32, u64)>>) -> Vec<NetOp> {
    // Folded in place: `ops[..kept]` are the ops so far, the last one possibly merged.
    let mut kept = 0;
    for i in 0..ops.len() {
        let may_share = kept > 0 && keys.as_ref().is_none_or(|k| k[kept - 1] == k[i]);
        if may_share && op_order(pks, &ops[kept - 1], &ops[i]) == Ordering::Equal {
            let (last, op) = (&ops[kept - 1], &ops[i]);
            let before = last.before().cloned().or(op.before().cloned());
            let after = op.after().cloned().or(last.after().cloned());
            match NetOp::between(op.table(), before, after) {
                Some(merged) => ops[kept - 1] = merged,
                None => kept -= 1,
            }
            continue;
        }
        ops.swap(kept, i);
        if let Some(k) = keys.as_mut() {
            k.swap(kept, i);
        }
        kept += 1;
    }
    ops.truncate(kept);
    ops
}

/// What a table's first key cells are, across a batch.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Unseen,
    Num,
    Text,
}

/// Each op's sort key — its table's rank by name and the prefix of its first key cell
/// ([`num_prefix`], [`text_prefix`]) — or `None` when a table's first key cells are not
/// all numbers or all texts (or it has no key), for which no prefix keeps the order.
fn sort_keys(pks: &PkCols<'_>, ops: &[NetOp]) -> Option<Vec<(u32, u64)>> {
    let tables = pks.tables_by_name();
    let mut kinds = [Kind::Unseen; 8];
    if tables.len() > kinds.len() {
        return None;
    }
    let mut keys = Vec::with_capacity(ops.len());
    for op in ops {
        let t = op.table();
        let rank = tables
            .iter()
            .position(|(n, _)| Arc::ptr_eq(n, t) || *n == t)?;
        let &col = tables[rank].1.first()?;
        let (kind, prefix) = match op.image().get(col) {
            CellRef::Num(x) => (Kind::Num, num_prefix(x)),
            CellRef::Str(s) => (Kind::Text, text_prefix(s)),
            CellRef::Null | CellRef::Bool(_) => return None,
        };
        match kinds[rank] {
            Kind::Unseen => kinds[rank] = kind,
            k if k != kind => return None,
            _ => {}
        }
        keys.push((rank as u32, prefix));
    }
    Some(keys)
}

/// A number as an unsigned integer in `f64::total_cmp`'s order (the comparator's for
/// two numbers): the sign bit flipped for positives, every bit for negatives.
#[inline]
fn num_prefix(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// A text's first 8 bytes, big-endian, padded with zero bytes: a smaller prefix means
/// a smaller text in byte order (a shorter text that pads to a zero byte is a prefix of
/// the other, so smaller too); equal prefixes decide nothing.
#[inline]
fn text_prefix(s: &str) -> u64 {
    let mut b = [0u8; 8];
    let n = s.len().min(8);
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
    u64::from_be_bytes(b)
}

#[cfg(test)]
mod tests;

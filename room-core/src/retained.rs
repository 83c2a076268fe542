//! Retained bytes: what a room holds on the heap, by walking its structures with their
//! capacities — the input of the fleet's memory budgets (docs/fleet.md, "Memory budgets").
//!
//! Every structure reports the heap bytes it owns (`retained()` next to its fields);
//! these helpers size the containers. Hash tables report their exact allocation
//! (hashbrown's `allocation_size`); a `BTreeMap` has no such call, so its nodes are
//! counted from its length at the fill a map grown by inserts has (see
//! [`btree_map`]). Row images are counted once, by the store that owns them: queries,
//! footprints and emitted ops share them (`Arc`) and add only their own slots. The sum is
//! checked against a counting allocator in `room-core/tests/retained_bytes.rs`.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::mem::size_of;

use crate::keys::Key;
use crate::value::Row;
use crate::value::Value;

/// The heap bytes a `Vec`'s buffer holds (its capacity, not its length).
#[inline]
pub(crate) fn vec<T>(v: &Vec<T>) -> usize {
    v.capacity() * size_of::<T>()
}

/// The heap bytes of a boxed slice.
#[inline]
pub(crate) fn slice<T>(s: &[T]) -> usize {
    core::mem::size_of_val(s)
}

/// An `Arc<str>`'s allocation (two counters and the bytes).
#[inline]
pub(crate) fn arc_str(s: &Arc<str>) -> usize {
    2 * size_of::<usize>() + s.len()
}

/// What a cell owns beyond itself.
#[inline]
pub(crate) fn value(v: &Value) -> usize {
    match v {
        Value::Str(t) => t.heap_bytes(),
        _ => 0,
    }
}

/// A row image's allocation: the `Arc` counters and the packed cells.
pub(crate) fn row(r: &Row) -> usize {
    r.heap_bytes()
}

/// What a key owns beyond itself (a long key's bytes).
#[inline]
pub(crate) fn key(k: &Key) -> usize {
    match k {
        Key::Heap(b) => b.len(),
        Key::Inline { .. } => 0,
    }
}

/// Entries a `BTreeMap` node holds on average when the map grew by inserts (std's nodes
/// take 11; a split leaves 5 and 6, inserts fill them back up).
const BTREE_FILL: usize = 8;

/// The nodes of a `BTreeMap<K, V>` of `len` entries (not its keys' and values' own heap
/// bytes): leaves of 11 slots plus, above them, internal nodes with 12 edges.
pub(crate) fn btree_map<K, V>(map: &BTreeMap<K, V>) -> usize {
    let len = map.len();
    if len == 0 {
        return 0;
    }
    // parent pointer, parent index, length, 11 keys and 11 values (std's LeafNode).
    let leaf = round8(size_of::<usize>() + 4 + 11 * (size_of::<K>() + size_of::<V>()));
    let internal = leaf + 12 * size_of::<usize>();
    let leaves = len.div_ceil(BTREE_FILL);
    let mut internals = 0;
    let mut level = leaves;
    while level > 1 {
        level = level.div_ceil(BTREE_FILL + 1);
        internals += level;
    }
    leaves * leaf + internals * internal
}

fn round8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

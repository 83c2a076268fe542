//! Borrowed cells, and rows as anything that yields them: a slice of [`Value`]s (what
//! ops and queries hold) or a [`Packed`](crate::store::Packed) row (what the store
//! holds). Keys, guards and ordering maintenance read either through [`Cells`].

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cmp::Ordering;
use core::hash::{Hash, Hasher};

use crate::value::Value;

/// One cell, borrowed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum CellRef<'a> {
    Null,
    Bool(bool),
    Num(f64),
    Str(&'a str),
}

impl<'a> CellRef<'a> {
    /// The cell of a value.
    #[inline]
    pub fn of(v: &'a Value) -> CellRef<'a> {
        match v {
            Value::Null => CellRef::Null,
            Value::Bool(b) => CellRef::Bool(*b),
            Value::Num(f) => CellRef::Num(*f),
            Value::Str(s) => CellRef::Str(s),
        }
    }

    /// An owned value.
    pub fn to_value(self) -> Value {
        match self {
            CellRef::Null => Value::Null,
            CellRef::Bool(b) => Value::Bool(b),
            CellRef::Num(f) => Value::Num(f),
            CellRef::Str(s) => Value::str(s),
        }
    }

    fn rank(self) -> u8 {
        match self {
            CellRef::Null => 1,
            CellRef::Bool(_) => 2,
            CellRef::Num(_) => 3,
            CellRef::Str(_) => 4,
        }
    }

    /// The sort comparator of [`crate::value::compare`].
    pub fn compare(self, other: CellRef<'_>) -> Ordering {
        match (self, other) {
            (CellRef::Null, CellRef::Null) => Ordering::Equal,
            (CellRef::Bool(x), CellRef::Bool(y)) => x.cmp(&y),
            (CellRef::Num(x), CellRef::Num(y)) => x.total_cmp(&y),
            (CellRef::Str(x), CellRef::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }
}

/// Storage identity, as [`Value`]'s.
impl PartialEq for CellRef<'_> {
    fn eq(&self, other: &CellRef<'_>) -> bool {
        self.compare(*other) == Ordering::Equal
    }
}

/// Hashes exactly as the equal [`Value`] does, so a `CellRef` finds a `Value` key.
impl Hash for CellRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match *self {
            CellRef::Null => state.write_u8(1),
            CellRef::Bool(b) => {
                state.write_u8(2);
                state.write_u8(b as u8);
            }
            CellRef::Num(f) => {
                state.write_u8(3);
                state.write_u64(f.to_bits());
            }
            CellRef::Str(s) => {
                state.write_u8(4);
                s.hash(state);
            }
        }
    }
}

impl hashbrown::Equivalent<Value> for CellRef<'_> {
    fn equivalent(&self, key: &Value) -> bool {
        *self == CellRef::of(key)
    }
}

/// A row: cells by column.
pub(crate) trait Cells {
    /// The cell at column `i` (`i` < the row's width).
    fn cell(&self, i: usize) -> CellRef<'_>;
}

impl Cells for [Value] {
    #[inline]
    fn cell(&self, i: usize) -> CellRef<'_> {
        CellRef::of(&self[i])
    }
}

impl<const N: usize> Cells for [Value; N] {
    #[inline]
    fn cell(&self, i: usize) -> CellRef<'_> {
        CellRef::of(&self[i])
    }
}

impl Cells for Vec<Value> {
    #[inline]
    fn cell(&self, i: usize) -> CellRef<'_> {
        CellRef::of(&self[i])
    }
}

impl Cells for Arc<[Value]> {
    #[inline]
    fn cell(&self, i: usize) -> CellRef<'_> {
        CellRef::of(&self[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::hash::BuildHasher;

    #[test]
    fn cell_refs_compare_and_hash_as_values() {
        let values = [
            Value::Null,
            Value::Bool(false),
            Value::Bool(true),
            Value::num(-1.0),
            Value::num(0.0),
            Value::Num(-0.0),
            Value::num(f64::NAN),
            Value::str(""),
            Value::str("a"),
        ];
        let s = hashbrown::DefaultHashBuilder::default();
        for a in &values {
            for b in &values {
                let (ra, rb) = (CellRef::of(a), CellRef::of(b));
                assert_eq!(ra.compare(rb), crate::value::compare(a, b));
                assert_eq!(ra == rb, a == b);
            }
            assert_eq!(s.hash_one(CellRef::of(a)), s.hash_one(a));
            assert!(CellRef::of(a).to_value() == *a);
        }
    }
}

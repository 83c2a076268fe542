//! Borrowed cells: a [`Value`] without owning its text, read straight out of a packed
//! [`Row`](crate::Row) or out of a `Value`. Everything that only looks at cells —
//! predicates, key encoding, comparisons, JSON rendering — takes these, so rows never
//! need unpacking to be read.

use core::cmp::Ordering;
use core::hash::{Hash, Hasher};

use super::Value;

/// One cell, borrowed.
#[derive(Clone, Copy, Debug)]
pub enum CellRef<'a> {
    /// SQL NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// A double.
    Num(f64),
    /// UTF-8 text.
    Str(&'a str),
}

impl CellRef<'_> {
    /// Whether this is NULL.
    #[inline]
    pub fn is_null(self) -> bool {
        matches!(self, CellRef::Null)
    }

    /// An owned copy (allocates only for text longer than [`super::text::INLINE`]).
    pub fn to_value(self) -> Value {
        match self {
            CellRef::Null => Value::Null,
            CellRef::Bool(b) => Value::Bool(b),
            CellRef::Num(f) => Value::Num(f),
            CellRef::Str(s) => Value::str(s),
        }
    }

    /// [`Value::type_rank`] of the cell.
    #[inline]
    pub fn type_rank(self) -> u8 {
        match self {
            CellRef::Null => 1,
            CellRef::Bool(_) => 2,
            CellRef::Num(_) => 3,
            CellRef::Str(_) => 4,
        }
    }
}

impl Value {
    /// The cell, borrowed.
    #[inline]
    pub fn cell(&self) -> CellRef<'_> {
        match self {
            Value::Null => CellRef::Null,
            Value::Bool(b) => CellRef::Bool(*b),
            Value::Num(f) => CellRef::Num(*f),
            Value::Str(s) => CellRef::Str(s.as_str()),
        }
    }
}

/// [`super::compare`] over borrowed cells.
#[inline]
pub fn compare_refs(a: CellRef<'_>, b: CellRef<'_>) -> Ordering {
    match (a, b) {
        (CellRef::Null, CellRef::Null) => Ordering::Equal,
        (CellRef::Bool(x), CellRef::Bool(y)) => x.cmp(&y),
        (CellRef::Num(x), CellRef::Num(y)) => x.total_cmp(&y),
        (CellRef::Str(x), CellRef::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => a.type_rank().cmp(&b.type_rank()),
    }
}

/// Storage identity, as for [`Value`].
impl PartialEq for CellRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        compare_refs(*self, *other) == Ordering::Equal
    }
}

impl Eq for CellRef<'_> {}

impl PartialEq<Value> for CellRef<'_> {
    fn eq(&self, other: &Value) -> bool {
        *self == other.cell()
    }
}

/// Hashes exactly as the equal [`Value`] does, so a `CellRef` looks up a map keyed by
/// `Value` (see the [`hashbrown::Equivalent`] impl).
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
        *self == key.cell()
    }
}

/// A row of cells, read by column: a packed [`Row`](crate::Row) or a `[Value]` slice.
pub trait Cells {
    /// The cell at `col` (which must be below [`Cells::width`]).
    fn cell(&self, col: usize) -> CellRef<'_>;
    /// How many cells.
    fn width(&self) -> usize;
}

impl Cells for [Value] {
    #[inline]
    fn cell(&self, col: usize) -> CellRef<'_> {
        self[col].cell()
    }

    #[inline]
    fn width(&self) -> usize {
        self.len()
    }
}

impl<const N: usize> Cells for [Value; N] {
    #[inline]
    fn cell(&self, col: usize) -> CellRef<'_> {
        self[col].cell()
    }

    #[inline]
    fn width(&self) -> usize {
        N
    }
}

impl Cells for alloc::vec::Vec<Value> {
    #[inline]
    fn cell(&self, col: usize) -> CellRef<'_> {
        self[col].cell()
    }

    #[inline]
    fn width(&self) -> usize {
        self.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use core::hash::BuildHasher;

    #[test]
    fn refs_hash_and_compare_like_values() {
        let values = [
            Value::Null,
            Value::Bool(false),
            Value::Bool(true),
            Value::num(-1.5),
            Value::Num(-0.0),
            Value::num(0.0),
            Value::str("short"),
            Value::str("a text longer than fourteen bytes"),
        ];
        let s = hashbrown::DefaultHashBuilder::default();
        for a in &values {
            assert_eq!(s.hash_one(a), s.hash_one(a.cell()));
            for b in &values {
                assert_eq!(
                    super::super::compare(a, b),
                    compare_refs(a.cell(), b.cell())
                );
            }
            assert_eq!(&a.cell().to_value(), a);
        }
    }
}

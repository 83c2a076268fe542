//! Wire cells and the COMPARATOR_VERSION 2 sort order (docs/protocol.md, cells and their order).
//!
//! A cell is `null | boolean | number | string`. Numbers are IEEE-754 doubles, exactly as
//! JavaScript sees them. A `Value` owns its cell; rows are stored packed
//! ([`Row`]: one shared allocation per row version) and read as borrowed
//! [`CellRef`]s through the [`Cells`] trait, which `[Value]` implements too.

use alloc::string::String;
use core::cmp::Ordering;
use core::hash::{Hash, Hasher};

pub mod cell;
#[allow(unsafe_code)]
pub mod row;
#[allow(unsafe_code)]
mod row_image;
#[allow(unsafe_code)]
pub mod text;
pub use cell::{compare_refs, CellRef, Cells};
pub use row::Row;
pub use text::Text;

/// The comparator version every hello carries; clients refuse any other.
pub const COMPARATOR_VERSION: u32 = 2;

/// One wire cell: two words. Text of up to [`text::INLINE`] bytes sits in the cell
/// itself; longer text owns one exact-size allocation (see [`Text`]).
#[derive(Clone, Debug)]
pub enum Value {
    /// SQL NULL; sorts before everything.
    Null,
    /// A boolean; `false < true`.
    Bool(bool),
    /// A double; ordered by IEEE-754 totalOrder.
    Num(f64),
    /// UTF-8 text (also JSON columns, which travel as their text); ordered byte-wise.
    Str(Text),
}

const _: () = assert!(core::mem::size_of::<Value>() == 16);

impl Value {
    /// A number cell. `-0` becomes `+0`: JSON can carry `-0` but JavaScript prints it as
    /// `0` and compares it equal to `0`, so one representation keeps identity, hashing
    /// and output consistent.
    #[inline]
    pub fn num(f: f64) -> Value {
        Value::Num(if f == 0.0 { 0.0 } else { f })
    }

    /// A text cell.
    pub fn str(s: &str) -> Value {
        Value::Str(Text::new(s))
    }

    /// A text cell from an owned string.
    pub fn string(s: String) -> Value {
        Value::Str(Text::new(&s))
    }

    /// Whether this is NULL.
    #[inline]
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The fixed rank used when two cells of different types meet:
    /// Null < Bool < Number < Str.
    #[inline]
    pub fn type_rank(&self) -> u8 {
        match self {
            Value::Null => 1,
            Value::Bool(_) => 2,
            Value::Num(_) => 3,
            Value::Str(_) => 4,
        }
    }
}

/// The sort comparator: NULL first, `false < true`, numbers by totalOrder (so `-0 < +0`
/// and NaN at the ends), strings by UTF-8 bytes. Total; cells of different types order by
/// [`Value::type_rank`] instead of failing.
pub fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Num(x), Value::Num(y)) => x.total_cmp(y),
        (Value::Str(x), Value::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        _ => a.type_rank().cmp(&b.type_rank()),
    }
}

/// Compares two rows over resolved `(column, descending)` pairs: the first unequal column
/// decides, a descending column negates its result (so NULL sorts last under `desc`).
pub fn compare_rows<A: Cells + ?Sized, B: Cells + ?Sized>(
    a: &A,
    b: &B,
    order: &[(usize, bool)],
) -> Ordering {
    for &(col, desc) in order {
        let o = compare_refs(a.cell(col), b.cell(col));
        if o != Ordering::Equal {
            return if desc { o.reverse() } else { o };
        }
    }
    Ordering::Equal
}

/// Compares cells column by column in the given column list (ascending).
pub fn compare_cells_at<A: Cells + ?Sized, B: Cells + ?Sized>(
    a: &A,
    b: &B,
    cols: &[usize],
) -> Ordering {
    for &col in cols {
        let o = compare_refs(a.cell(col), b.cell(col));
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Storage identity: equal under [`compare`]. (NULL equals NULL here; joins use a
/// different rule, see [`join_equal`].)
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        compare(self, other) == Ordering::Equal
    }
}

impl Eq for Value {}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Value::Null => state.write_u8(1),
            Value::Bool(b) => {
                state.write_u8(2);
                state.write_u8(*b as u8);
            }
            Value::Num(f) => {
                state.write_u8(3);
                state.write_u64(f.to_bits());
            }
            Value::Str(s) => {
                state.write_u8(4);
                s.hash(state);
            }
        }
    }
}

/// `f.trunc()` without std: rounds toward zero.
#[inline]
pub(crate) fn trunc(f: f64) -> f64 {
    // Every double of magnitude >= 2^52 (and every non-finite) is already integral.
    if !f.is_finite() || f.abs() >= 4_503_599_627_370_496.0 {
        return f;
    }
    let t = f as i64 as f64;
    // Keep the sign of a negative value that truncates to zero.
    if t == 0.0 && f.is_sign_negative() {
        -0.0
    } else {
        t
    }
}

/// Whether a finite double has no fractional part.
#[inline]
pub(crate) fn is_integral(f: f64) -> bool {
    f.is_finite() && trunc(f) == f
}

/// Join equality: NULL never equals anything, not even NULL.
#[inline]
pub fn join_equal(a: &Value, b: &Value) -> bool {
    !a.is_null() && !b.is_null() && a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_first_and_type_rank() {
        assert_eq!(compare(&Value::Null, &Value::num(5.0)), Ordering::Less);
        assert_eq!(compare(&Value::str("x"), &Value::Null), Ordering::Greater);
        assert_eq!(
            compare(&Value::Bool(true), &Value::num(0.0)),
            Ordering::Less
        );
        assert_eq!(compare(&Value::num(1e300), &Value::str("")), Ordering::Less);
    }

    #[test]
    fn strings_are_utf8_bytewise() {
        // U+1F600 sorts after U+FB00 in UTF-8 although UTF-16 says otherwise.
        assert_eq!(
            compare(&Value::str("😀"), &Value::str("ﬀ")),
            Ordering::Greater
        );
        assert_eq!(compare(&Value::str("Z"), &Value::str("a")), Ordering::Less);
        assert_eq!(
            compare(&Value::str("cafe"), &Value::str("café")),
            Ordering::Less
        );
    }

    #[test]
    fn negative_zero_is_normalized() {
        let v = Value::num(-0.0);
        match v {
            Value::Num(f) => assert!(f.is_sign_positive()),
            _ => unreachable!(),
        }
        // The raw comparator still orders -0 before +0 (vector case).
        assert_eq!(compare(&Value::Num(-0.0), &Value::Num(0.0)), Ordering::Less);
    }

    #[test]
    fn descending_negates() {
        let a = [Value::Null, Value::num(1.0)];
        let b = [Value::num(3.0), Value::num(1.0)];
        assert_eq!(compare_rows(&a, &b, &[(0, false)]), Ordering::Less);
        assert_eq!(compare_rows(&a, &b, &[(0, true)]), Ordering::Greater);
        assert_eq!(compare_rows(&a, &b, &[(1, false)]), Ordering::Equal);
    }

    #[test]
    fn join_equality_refuses_null() {
        assert!(!join_equal(&Value::Null, &Value::Null));
        assert!(join_equal(&Value::num(2.0), &Value::num(2.0)));
    }
}

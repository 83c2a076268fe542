//! The 14 simple operators with their NULL semantics and LIKE/ILIKE matching
//! (docs/design/wire.md, "The query AST").
//!
//! A predicate compares one cell against one literal. NULL never satisfies a comparison
//! except through `IS`/`IS NOT`; a `null` literal makes every operator but `IS`/`IS NOT`
//! constant false. Cells of a different type than the literal are simply "not identical"
//! and order by type rank.

use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::value::{compare, CellRef, Text, Value};

pub use in_set::InSet;
pub use like::LikeMatcher;

mod in_set;
mod like;

/// A literal from a query: numbers keep the exact integer plane of the wire AST.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integral number token within the i64 range (compared exactly).
    Int(i64),
    /// Any other number.
    Float(f64),
    /// A string.
    Str(Text),
    /// The right-hand side of `IN` / `NOT IN`.
    List(Vec<Lit>),
}

impl Lit {
    /// Builds a number literal from a JSON number: integral values in `[-2^63, 2^63)`
    /// become [`Lit::Int`], everything else [`Lit::Float`].
    pub fn from_json_number(n: &serde_json::Number) -> Option<Lit> {
        if let Some(i) = n.as_i64() {
            return Some(Lit::Int(i));
        }
        let f = n.as_f64()?;
        if !f.is_finite() {
            return Some(Lit::Null);
        }
        const TWO63: f64 = 9_223_372_036_854_775_808.0;
        if crate::value::is_integral(f) && (-TWO63..TWO63).contains(&f) {
            Some(Lit::Int(f as i64))
        } else {
            Some(Lit::Float(f))
        }
    }

    /// The cell this literal equals, when one exists (used for equality dispatch).
    pub fn as_cell(&self) -> Option<Value> {
        match self {
            Lit::Null | Lit::List(_) => None,
            Lit::Bool(b) => Some(Value::Bool(*b)),
            Lit::Int(i) => {
                let f = *i as f64;
                // Only when the integer is exactly representable can a cell equal it.
                (f as i64 == *i && f < 9_223_372_036_854_775_808.0).then(|| Value::num(f))
            }
            Lit::Float(f) => Some(Value::num(*f)),
            Lit::Str(s) => Some(Value::Str(s.clone())),
        }
    }

    fn type_rank(&self) -> u8 {
        match self {
            Lit::Null => 1,
            Lit::Bool(_) => 2,
            Lit::Int(_) | Lit::Float(_) => 3,
            Lit::Str(_) => 4,
            Lit::List(_) => 5,
        }
    }
}

/// Exact comparison of a double with a 64-bit integer.
pub fn compare_f64_i64(f: f64, i: i64) -> Ordering {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() {
        return if f.is_sign_negative() {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    if f >= TWO63 {
        return Ordering::Greater;
    }
    if f < -TWO63 {
        return Ordering::Less;
    }
    let t = crate::value::trunc(f);
    let ti = t as i64;
    match ti.cmp(&i) {
        Ordering::Equal => {
            let frac = f - t;
            if frac > 0.0 {
                Ordering::Greater
            } else if frac < 0.0 {
                Ordering::Less
            } else {
                Ordering::Equal
            }
        }
        o => o,
    }
}

/// Predicate ordering of a cell against a scalar literal: same as the sort comparator for
/// same-type pairs (numbers exactly across the int/float planes), type rank otherwise.
pub fn compare_cell_lit(cell: CellRef<'_>, lit: &Lit) -> Ordering {
    match (cell, lit) {
        (CellRef::Num(f), Lit::Int(i)) => compare_f64_i64(f, *i),
        (CellRef::Num(f), Lit::Float(g)) => f.total_cmp(g),
        (CellRef::Null, Lit::Null) => Ordering::Equal,
        (CellRef::Bool(a), Lit::Bool(b)) => a.cmp(b),
        (CellRef::Str(a), Lit::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
        _ => cell.type_rank().cmp(&lit.type_rank()),
    }
}

/// Predicate identity (null ≡ null, numbers exact, other cross-type pairs differ).
pub fn identical(cell: CellRef<'_>, lit: &Lit) -> bool {
    match (cell, lit) {
        (CellRef::Num(f), Lit::Float(g)) => f == *g,
        (_, Lit::List(_)) => false,
        _ => compare_cell_lit(cell, lit) == Ordering::Equal,
    }
}

/// A simple operator's spelling on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimpleOp {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `IS`
    Is,
    /// `IS NOT`
    IsNot,
    /// `LIKE`
    Like,
    /// `NOT LIKE`
    NotLike,
    /// `ILIKE`
    ILike,
    /// `NOT ILIKE`
    NotILike,
    /// `IN`
    In,
    /// `NOT IN`
    NotIn,
}

impl SimpleOp {
    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<SimpleOp> {
        Some(match s {
            "=" => SimpleOp::Eq,
            "!=" => SimpleOp::Ne,
            "<" => SimpleOp::Lt,
            "<=" => SimpleOp::Le,
            ">" => SimpleOp::Gt,
            ">=" => SimpleOp::Ge,
            "IS" => SimpleOp::Is,
            "IS NOT" => SimpleOp::IsNot,
            "LIKE" => SimpleOp::Like,
            "NOT LIKE" => SimpleOp::NotLike,
            "ILIKE" => SimpleOp::ILike,
            "NOT ILIKE" => SimpleOp::NotILike,
            "IN" => SimpleOp::In,
            "NOT IN" => SimpleOp::NotIn,
            _ => return None,
        })
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SimpleOp::Eq => "=",
            SimpleOp::Ne => "!=",
            SimpleOp::Lt => "<",
            SimpleOp::Le => "<=",
            SimpleOp::Gt => ">",
            SimpleOp::Ge => ">=",
            SimpleOp::Is => "IS",
            SimpleOp::IsNot => "IS NOT",
            SimpleOp::Like => "LIKE",
            SimpleOp::NotLike => "NOT LIKE",
            SimpleOp::ILike => "ILIKE",
            SimpleOp::NotILike => "NOT ILIKE",
            SimpleOp::In => "IN",
            SimpleOp::NotIn => "NOT IN",
        }
    }
}

/// A compiled `cell <op> literal` test.
#[derive(Clone, Debug)]
pub enum Pred {
    /// Always this value (a `null` literal, an empty list, a folded constant).
    Const(bool),
    /// `=` / `!=` / ordering against a scalar literal.
    Cmp(SimpleOp, Lit),
    /// `IS` / `IS NOT` (negated) against a scalar literal, NULL included.
    Is(Lit, bool),
    /// `IN` / `NOT IN` (negated) against the list's non-null elements.
    In(InSet, bool),
    /// `LIKE` family: the matcher and whether the result is negated.
    Like(LikeMatcher, bool),
}

impl Pred {
    /// Heap bytes, as `Room::retained_bytes` counts them: an `IN` list's set and a LIKE matcher can
    /// hold as much as the query text that wrote them.
    pub fn retained(&self) -> usize {
        match self {
            Pred::Const(_) => 0,
            Pred::Cmp(_, lit) | Pred::Is(lit, _) => match lit {
                Lit::Str(t) => t.heap_bytes(),
                _ => 0,
            },
            Pred::In(set, _) => set.retained(),
            Pred::Like(m, _) => m.retained(),
        }
    }

    /// Evaluates the predicate on one cell.
    pub fn eval(&self, cell: &Value) -> bool {
        self.eval_cell(cell.cell())
    }

    /// Evaluates the predicate on one borrowed cell.
    #[inline]
    pub fn eval_cell(&self, cell: CellRef<'_>) -> bool {
        match self {
            Pred::Const(b) => *b,
            Pred::Is(lit, negated) => identical(cell, lit) != *negated,
            _ if cell.is_null() => false,
            Pred::Cmp(op, lit) => {
                let o = compare_cell_lit(cell, lit);
                match op {
                    SimpleOp::Eq => identical(cell, lit),
                    SimpleOp::Ne => !identical(cell, lit),
                    SimpleOp::Lt => o == Ordering::Less,
                    SimpleOp::Le => o != Ordering::Greater,
                    SimpleOp::Gt => o == Ordering::Greater,
                    SimpleOp::Ge => o != Ordering::Less,
                    _ => false,
                }
            }
            Pred::In(set, negated) => set.contains(cell) != *negated,
            Pred::Like(m, negated) => match cell {
                CellRef::Str(s) => m.matches(s.as_bytes()) != *negated,
                _ => *negated,
            },
        }
    }

    /// Builds the predicate for `op` against `lit`, refusing shapes the room cannot
    /// compile (the texts are the published room's `Invalid` reasons).
    pub fn compile(op: SimpleOp, lit: Lit) -> Result<Pred, &'static str> {
        let is_list = matches!(lit, Lit::List(_));
        match op {
            SimpleOp::In | SimpleOp::NotIn => match lit {
                Lit::Null => Ok(Pred::Const(false)),
                Lit::List(items) => {
                    if items.iter().any(|i| matches!(i, Lit::List(_))) {
                        return Err(NOT_SCALAR);
                    }
                    Ok(Pred::In(InSet::new(&items), op == SimpleOp::NotIn))
                }
                _ => Err("IN / NOT IN requires an array literal"),
            },
            _ if is_list => Err(NOT_SCALAR),
            SimpleOp::Is => Ok(Pred::Is(lit, false)),
            SimpleOp::IsNot => Ok(Pred::Is(lit, true)),
            _ if lit == Lit::Null => Ok(Pred::Const(false)),
            SimpleOp::Like | SimpleOp::NotLike | SimpleOp::ILike | SimpleOp::NotILike => {
                let Lit::Str(pattern) = lit else {
                    return Err("LIKE pattern must be a string literal");
                };
                let fold = matches!(op, SimpleOp::ILike | SimpleOp::NotILike);
                let negated = matches!(op, SimpleOp::NotLike | SimpleOp::NotILike);
                let matcher = LikeMatcher::new(pattern.as_bytes(), fold).ok_or(LONG_PATTERN)?;
                Ok(Pred::Like(matcher, negated))
            }
            _ => Ok(Pred::Cmp(op, lit)),
        }
    }
}

/// An array literal where one value belongs.
pub const NOT_SCALAR: &str = "expected a scalar literal, found an array";

/// A LIKE pattern longer than a matcher takes (64 MiB).
pub const LONG_PATTERN: &str = "LIKE pattern longer than 67108864 bytes";
const _: () = assert!(like::MAX_PATTERN_BYTES == 67_108_864);

/// Folds a `literal <op> literal` comparison to a constant (a literal on the left is
/// allowed and evaluated at build time).
pub fn fold_literals(left: &Lit, op: SimpleOp, right: Lit) -> Result<bool, &'static str> {
    let is_ordering = matches!(
        op,
        SimpleOp::Lt | SimpleOp::Le | SimpleOp::Gt | SimpleOp::Ge
    );
    if is_ordering
        && *left != Lit::Null
        && right != Lit::Null
        && left.type_rank() != right.type_rank()
    {
        return Err("ordering comparison between mismatched literal types");
    }
    let cell = match left {
        Lit::Null => Value::Null,
        Lit::Bool(b) => Value::Bool(*b),
        Lit::Int(i) => Value::num(*i as f64),
        Lit::Float(f) => Value::num(*f),
        Lit::Str(s) => Value::Str(s.clone()),
        Lit::List(_) => return Err(NOT_SCALAR),
    };
    let pred = Pred::compile(op, right)?;
    Ok(pred.eval(&cell))
}

/// Equality on cells used where two cells meet (re-exported for the naive evaluator).
pub fn cells_identical(a: &Value, b: &Value) -> bool {
    compare(a, b) == Ordering::Equal
}

#[cfg(test)]
mod tests;

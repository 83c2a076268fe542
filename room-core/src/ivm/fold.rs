//! Leaves of one AND or OR that test one column against values, merged into one set.
//!
//! An application that asks for a list of rows by key often writes it as a disjunction
//! (`id = 1 OR id = 2 OR …`) rather than an `IN`. Evaluated leaf by leaf, a list of
//! ten thousand ids costs ten thousand comparisons for every row a query reads (a
//! subscribe over 10k rows held the room for seconds). Under an OR, the leaves
//! `col = v` and `col IN (…)` of one column become one `col IN (…)` leaf, searched in
//! logarithmic time ([`InSet`]); under an AND, `col != v` and `col NOT IN (…)` become
//! one `NOT IN`. The result is the same row for row: a NULL cell fails every one of
//! these leaves, and fails the merged one. Only the compiled filter changes; the
//! query's canonical text, its key and what it shares are those of the query as
//! written.

use alloc::vec::Vec;

use crate::predicate::{InSet, Pred, SimpleOp};

use super::node::Filter;

/// The set a leaf tests its column against, when it can merge under an OR (`or`) or an
/// AND.
fn set_of(f: &Filter, or: bool) -> Option<(usize, InSet)> {
    let Filter::Leaf(col, pred) = f else {
        return None;
    };
    let set = match (pred, or) {
        (Pred::Cmp(SimpleOp::Eq, lit), true) | (Pred::Cmp(SimpleOp::Ne, lit), false) => {
            InSet::new(core::slice::from_ref(lit))
        }
        (Pred::In(set, negated), _) if *negated != or => set.clone(),
        _ => return None,
    };
    Some((*col, set))
}

/// Merges the set leaves of `items` (the members of one OR when `or`, else of one AND)
/// per column, where a column has two or more: the merged leaf takes the place of the
/// column's first, the others go.
pub(super) fn merge_set_leaves(items: &mut Vec<Filter>, or: bool) {
    let sets: Vec<Option<(usize, InSet)>> = items.iter().map(|f| set_of(f, or)).collect();
    let mut cols: Vec<usize> = sets.iter().flatten().map(|(c, _)| *c).collect();
    cols.sort_unstable();
    let repeated: Vec<usize> = cols
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    if repeated.is_empty() {
        return;
    }
    let mut merged: Vec<(usize, Vec<InSet>, usize)> = Vec::new(); // (col, sets, first index)
    let mut keep = Vec::with_capacity(items.len());
    for (i, s) in sets.into_iter().enumerate() {
        match s {
            Some((col, set)) if repeated.binary_search(&col).is_ok() => {
                match merged.iter_mut().find(|m| m.0 == col) {
                    Some(m) => m.1.push(set),
                    None => merged.push((col, alloc::vec![set], i)),
                }
                keep.push(false);
            }
            _ => keep.push(true),
        }
    }
    let old = core::mem::take(items);
    let mut firsts = merged.into_iter().peekable();
    for (i, (f, kept)) in old.into_iter().zip(keep).enumerate() {
        if kept {
            items.push(f);
        } else if firsts.peek().is_some_and(|m| m.2 == i) {
            let (col, sets, _) = firsts.next().expect("peeked");
            items.push(Filter::Leaf(col, Pred::In(InSet::union(sets), !or)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::Lit;

    fn eq(col: usize, v: i64) -> Filter {
        Filter::Leaf(col, Pred::compile(SimpleOp::Eq, Lit::Int(v)).unwrap())
    }

    fn ne(col: usize, v: i64) -> Filter {
        Filter::Leaf(col, Pred::compile(SimpleOp::Ne, Lit::Int(v)).unwrap())
    }

    fn lt(col: usize, v: i64) -> Filter {
        Filter::Leaf(col, Pred::compile(SimpleOp::Lt, Lit::Int(v)).unwrap())
    }

    fn shape(items: &[Filter]) -> Vec<(usize, &'static str)> {
        items
            .iter()
            .map(|f| match f {
                Filter::Leaf(c, Pred::In(_, false)) => (*c, "in"),
                Filter::Leaf(c, Pred::In(_, true)) => (*c, "not in"),
                Filter::Leaf(c, Pred::Cmp(SimpleOp::Eq, _)) => (*c, "="),
                Filter::Leaf(c, Pred::Cmp(SimpleOp::Ne, _)) => (*c, "!="),
                Filter::Leaf(c, _) => (*c, "other"),
                _ => (usize::MAX, "node"),
            })
            .collect()
    }

    #[test]
    fn equalities_of_one_column_under_an_or_become_one_in_at_the_first() {
        let mut items = alloc::vec![lt(0, 5), eq(1, 1), eq(2, 7), eq(1, 2), eq(1, 3)];
        merge_set_leaves(&mut items, true);
        assert_eq!(shape(&items), [(0, "other"), (1, "in"), (2, "=")]);
        let Filter::Leaf(_, pred) = &items[1] else {
            panic!()
        };
        for (v, inside) in [(1.0, true), (2.0, true), (3.0, true), (4.0, false)] {
            assert_eq!(pred.eval(&crate::value::Value::num(v)), inside);
        }
        assert!(!pred.eval(&crate::value::Value::Null));
    }

    #[test]
    fn inequalities_under_an_and_become_one_not_in_and_nothing_else_moves() {
        let mut items = alloc::vec![ne(3, 1), eq(3, 9), ne(3, 2)];
        merge_set_leaves(&mut items, false);
        assert_eq!(shape(&items), [(3, "not in"), (3, "=")]);
        let Filter::Leaf(_, pred) = &items[0] else {
            panic!()
        };
        assert!(!pred.eval(&crate::value::Value::num(1.0)));
        assert!(!pred.eval(&crate::value::Value::num(2.0)));
        assert!(pred.eval(&crate::value::Value::num(3.0)));
        assert!(!pred.eval(&crate::value::Value::Null));
        // Under an OR, `!=` leaves stay as they are.
        let mut items = alloc::vec![ne(3, 1), ne(3, 2)];
        merge_set_leaves(&mut items, true);
        assert_eq!(shape(&items), [(3, "!="), (3, "!=")]);
    }
}

use alloc::string::String;
use alloc::vec;

use proptest::prelude::*;

use super::*;
use crate::value::{Row, Value};

/// The tables of the generated batches: names, and their key columns (`c` has none).
const TABLES: [(&str, &[usize]); 4] = [("a", &[0]), ("b", &[0, 1]), ("issue", &[0]), ("c", &[])];

fn first_cell(kind: u8) -> BoxedStrategy<Value> {
    match kind {
        // Numbers: duplicates, both zeros, negatives, fractions, large.
        0 => prop_oneof![
            (-4i32..4).prop_map(|i| Value::num(f64::from(i))),
            Just(Value::num(-0.0)),
            (-1e12..1e12f64).prop_map(Value::num),
            any::<i64>().prop_map(|i| Value::num(i as f64)),
        ]
        .boxed(),
        // Texts: short, empty, sharing 8-byte prefixes, holding NUL bytes.
        1 => prop_oneof![
            "[ab\\x00]{0,3}".prop_map(|s: String| Value::string(s)),
            "abcdefgh[ab\\x00]{0,3}".prop_map(|s: String| Value::string(s)),
            "[a-z]{0,12}".prop_map(|s: String| Value::string(s)),
        ]
        .boxed(),
        // Anything: the sort keys give up on it.
        _ => prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i32..3).prop_map(|i| Value::num(f64::from(i))),
            "[ab]{0,2}".prop_map(|s: String| Value::string(s)),
        ]
        .boxed(),
    }
}

/// A batch: each table's first key cells are numbers or texts (a few batches slip in
/// cells of any kind, or use the keyless table, and are sorted by the full order); each
/// row's last cell is its index in the batch, so that ops on equal keys stay told apart.
fn batch() -> impl Strategy<Value = Vec<NetOp>> {
    let shape = (
        prop::collection::vec(0u8..2, 4),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.2),
        any::<bool>(),
    );
    shape
        .prop_flat_map(|(kinds, wild, keyless, second_arc)| {
            let tables: usize = if keyless { 4 } else { 3 };
            let op = (
                0..tables,
                0u8..3,
                0u8..3,
                prop::bool::weighted(if wild { 0.1 } else { 0.0 }),
            )
                .prop_flat_map(move |(t, k, second, odd)| {
                    let kind = if odd { 2 } else { kinds[t] };
                    (Just(t), Just(k), first_cell(kind), Just(second))
                });
            (prop::collection::vec(op, 0..200), Just(second_arc))
        })
        .prop_map(|(raw, second_arc)| {
            let names: Vec<Arc<str>> = TABLES.iter().map(|(n, _)| Arc::from(*n)).collect();
            raw.into_iter()
                .enumerate()
                .map(|(i, (t, k, cell, second))| {
                    // A table name may come as another `Arc` of the same text.
                    let table = if second_arc && i % 5 == 0 {
                        Arc::from(TABLES[t].0)
                    } else {
                        names[t].clone()
                    };
                    let row = Row::from(vec![
                        cell,
                        Value::num(f64::from(second)),
                        Value::num(i as f64),
                    ]);
                    match k {
                        0 => NetOp::Add { table, row },
                        1 => NetOp::Remove { table, row },
                        _ => NetOp::Edit {
                            table,
                            old: row.clone(),
                            new: row,
                        },
                    }
                })
                .collect()
        })
}

fn pks_of(ops: &[NetOp]) -> PkCols<'static> {
    PkCols::of(ops, |t| {
        TABLES
            .iter()
            .find(|(n, _)| **n == **t)
            .map_or(&[][..], |(_, pk)| *pk)
    })
}

proptest! {
    /// Sorting and folding on the sort keys gives what the full order gives, op for
    /// op (and the full order alone gives its stable sort, folded).
    #[test]
    fn the_sort_keys_keep_the_full_order(ops in batch()) {
        let pks = pks_of(&ops);
        let mut sorted = ops.clone();
        sorted.sort_by(|a, b| op_order(&pks, a, b));
        let expected = fold(&pks, sorted.clone(), None);
        prop_assert_eq!(&sort_and_fold(&pks, ops.clone(), None), &expected);
        if let Some(keys) = sort_keys(&pks, &ops) {
            prop_assert_eq!(&sort_and_fold(&pks, ops, Some(keys)), &expected);
            // A batch already in order is folded as it stands.
            let keys = sort_keys(&pks, &sorted).expect("the same cells");
            prop_assert!(in_order(&pks, &sorted, &keys));
            prop_assert_eq!(&sort_and_fold(&pks, sorted, Some(keys)), &expected);
        }
    }
}

#[test]
fn numbers_and_texts_get_sort_keys_and_other_cells_do_not() {
    let t: Arc<str> = Arc::from("a");
    let add = |cell: Value| NetOp::Add {
        table: t.clone(),
        row: Row::from(vec![cell]),
    };
    let nums: Vec<NetOp> = (0..70).map(|i| add(Value::num(f64::from(i)))).collect();
    assert!(sort_keys(&pks_of(&nums), &nums).is_some());
    let texts: Vec<NetOp> = (0..70)
        .map(|i| add(Value::string(alloc::format!("k{i}"))))
        .collect();
    assert!(sort_keys(&pks_of(&texts), &texts).is_some());
    let mut mixed = nums.clone();
    mixed.push(add(Value::string("x".into())));
    assert!(sort_keys(&pks_of(&mixed), &mixed).is_none());
    let mut nulls = nums;
    nulls.push(add(Value::Null));
    assert!(sort_keys(&pks_of(&nulls), &nulls).is_none());
}

#[test]
fn prefixes_follow_the_comparator() {
    let nums = [
        f64::NEG_INFINITY,
        -1e300,
        -2.5,
        -1.0,
        -0.0,
        0.0,
        1e-300,
        1.0,
        3.5,
        1e300,
        f64::INFINITY,
    ];
    for w in nums.windows(2) {
        assert!(num_prefix(w[0]) < num_prefix(w[1]), "{} < {}", w[0], w[1]);
    }
    let texts = [
        "", "\0", "a", "a\0", "a\0b", "ab", "abcdefgh", "abcdefgi", "b",
    ];
    for w in texts.windows(2) {
        assert!(
            text_prefix(w[0]) <= text_prefix(w[1]),
            "{:?} <= {:?}",
            w[0],
            w[1]
        );
    }
}

use super::*;
use alloc::vec;

fn p(op: &str, lit: Lit) -> Pred {
    Pred::compile(SimpleOp::parse(op).unwrap(), lit).unwrap()
}

fn s(x: &str) -> Value {
    Value::str(x)
}

#[test]
fn null_literal_is_false_except_is() {
    for op in [
        "=",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "LIKE",
        "NOT LIKE",
        "ILIKE",
        "NOT ILIKE",
        "IN",
    ] {
        let pred = p(op, Lit::Null);
        assert!(!pred.eval(&Value::num(1.0)), "{op}");
        assert!(!pred.eval(&Value::Null), "{op}");
    }
    assert!(!p("NOT IN", Lit::Null).eval(&Value::num(1.0)));
    assert!(p("IS", Lit::Null).eval(&Value::Null));
    assert!(!p("IS", Lit::Null).eval(&Value::num(0.0)));
    assert!(p("IS NOT", Lit::Null).eval(&Value::num(0.0)));
    assert!(!p("IS NOT", Lit::Null).eval(&Value::Null));
}

#[test]
fn null_cell_fails_every_comparison() {
    for op in [
        "=",
        "!=",
        "<",
        "<=",
        ">",
        ">=",
        "LIKE",
        "NOT LIKE",
        "ILIKE",
        "NOT ILIKE",
    ] {
        let lit = if op.contains("LIKE") {
            Lit::Str("%".into())
        } else {
            Lit::Int(1)
        };
        assert!(!p(op, lit).eval(&Value::Null), "{op}");
    }
    assert!(!p("IN", Lit::List(vec![Lit::Int(1)])).eval(&Value::Null));
    assert!(!p("NOT IN", Lit::List(vec![Lit::Int(1)])).eval(&Value::Null));
    assert!(!p("NOT IN", Lit::List(vec![])).eval(&Value::Null));
    assert!(!p("IS", Lit::Int(5)).eval(&Value::Null));
    assert!(p("IS NOT", Lit::Int(5)).eval(&Value::Null));
}

#[test]
fn numbers_compare_exactly_across_planes() {
    assert!(p("=", Lit::Int(5)).eval(&Value::num(5.0)));
    assert!(p("=", Lit::Float(5.0)).eval(&Value::num(5.0)));
    // 2^53 + 1 is not representable: no double equals it.
    let big = Lit::Int(9_007_199_254_740_993);
    assert!(!p("=", big.clone()).eval(&Value::num(9_007_199_254_740_992.0)));
    assert!(p("<", big).eval(&Value::num(9_007_199_254_740_992.0)));
    assert!(p(">", Lit::Int(2)).eval(&Value::num(2.5)));
    assert!(p("<=", Lit::Int(-2)).eval(&Value::num(-2.5)));
    assert_eq!(compare_f64_i64(-0.5, 0), Ordering::Less);
    assert_eq!(compare_f64_i64(1e300, i64::MAX), Ordering::Greater);
}

#[test]
fn cross_type_identity_and_rank() {
    assert!(!p("=", Lit::Int(5)).eval(&s("5")));
    assert!(p("!=", Lit::Int(5)).eval(&s("5")));
    // Str ranks above Number.
    assert!(p(">", Lit::Int(5)).eval(&s("a")));
    assert!(!p("<", Lit::Int(5)).eval(&s("a")));
    assert!(p("<", Lit::Str("a".into())).eval(&Value::Bool(true)));
}

#[test]
fn in_lists_ignore_null_elements() {
    let list = Lit::List(vec![Lit::Int(1), Lit::Null]);
    assert!(p("IN", list.clone()).eval(&Value::num(1.0)));
    assert!(!p("IN", list.clone()).eval(&Value::num(2.0)));
    // The null element of an IN list never matches, so NOT IN is TRUE.
    assert!(p("NOT IN", list.clone()).eval(&Value::num(2.0)));
    assert!(!p("NOT IN", list).eval(&Value::num(1.0)));
    assert!(!p("IN", Lit::List(vec![])).eval(&Value::num(1.0)));
    assert!(p("NOT IN", Lit::List(vec![])).eval(&Value::num(1.0)));
    assert!(Pred::compile(SimpleOp::In, Lit::Int(1)).is_err());
    assert!(Pred::compile(SimpleOp::Eq, Lit::List(vec![])).is_err());
}

#[test]
fn like_semantics() {
    let like = |pat: &str, text: &str| {
        LikeMatcher::new(pat.as_bytes(), false)
            .unwrap()
            .matches(text.as_bytes())
    };
    let ilike = |pat: &str, text: &str| {
        LikeMatcher::new(pat.as_bytes(), true)
            .unwrap()
            .matches(text.as_bytes())
    };
    assert!(like("%", ""));
    assert!(like("a%", "abc"));
    assert!(like("%c", "abc"));
    assert!(like("%b%", "abc"));
    assert!(!like("%d%", "abc"));
    assert!(like("a_c", "abc"));
    assert!(!like("a_c", "ac"));
    assert!(like("a%%c", "ac"));
    assert!(like("%a%b%c%", "xxaxxbxxcxx"));
    assert!(!like("abc", "ABC"));
    assert!(ilike("abc", "ABC"));
    assert!(ilike("%É%", "É")); // non-ASCII compared exactly
    assert!(!ilike("é", "É"));
    // `_` is one byte, not one character.
    assert!(like("__", "é"));
    assert!(!like("_", "é"));
    // Escapes.
    assert!(like("100\\%", "100%"));
    assert!(!like("100\\%", "1000"));
    assert!(like("a\\_b", "a_b"));
    assert!(!like("a\\_b", "axb"));
    assert!(like("a\\\\b", "a\\b"));
    assert!(like("a\\xb", "a\\xb"));
    assert!(like("ab\\", "ab\\"));
    assert!(!like("ab\\", "ab"));
}

#[test]
fn like_on_non_text_cells() {
    let pat = Lit::Str("%".into());
    assert!(!p("LIKE", pat.clone()).eval(&Value::num(1.0)));
    assert!(p("NOT LIKE", pat.clone()).eval(&Value::num(1.0)));
    assert!(p("NOT ILIKE", pat.clone()).eval(&Value::Bool(true)));
    assert!(!p("NOT LIKE", pat).eval(&s("x")));
    assert!(Pred::compile(SimpleOp::Like, Lit::Int(1)).is_err());
}

#[test]
fn literal_folding() {
    assert_eq!(
        fold_literals(&Lit::Int(1), SimpleOp::Eq, Lit::Float(1.0)),
        Ok(true)
    );
    assert_eq!(fold_literals(&Lit::Null, SimpleOp::Is, Lit::Null), Ok(true));
    assert!(fold_literals(&Lit::Int(1), SimpleOp::Lt, Lit::Str("a".into())).is_err());
    assert_eq!(
        fold_literals(&Lit::Str("b".into()), SimpleOp::Gt, Lit::Str("a".into())),
        Ok(true)
    );
}

/// A deliberately simple recursive LIKE, for cross-checking the linear matcher.
fn reference_like(pat: &[u8], text: &[u8], fold: bool) -> bool {
    let n = |b: u8| if fold { b.to_ascii_lowercase() } else { b };
    match pat.first() {
        None => text.is_empty(),
        Some(b'%') => (0..=text.len()).any(|k| reference_like(&pat[1..], &text[k..], fold)),
        Some(b'_') => !text.is_empty() && reference_like(&pat[1..], &text[1..], fold),
        Some(b'\\') => {
            let (lit, rest): (u8, &[u8]) = match pat.get(1) {
                Some(&c @ (b'%' | b'_' | b'\\')) => (c, &pat[2..]),
                _ => (b'\\', &pat[1..]),
            };
            !text.is_empty() && n(text[0]) == n(lit) && reference_like(rest, &text[1..], fold)
        }
        Some(&c) => {
            !text.is_empty() && n(text[0]) == n(c) && reference_like(&pat[1..], &text[1..], fold)
        }
    }
}

#[test]
fn linear_like_agrees_with_the_reference() {
    let alphabet = b"aAb%_\\";
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..20_000 {
        let plen = (next() % 8) as usize;
        let tlen = (next() % 9) as usize;
        let pat: alloc::vec::Vec<u8> = (0..plen)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let text: alloc::vec::Vec<u8> = (0..tlen)
            .map(|_| b"aAb_%\\"[(next() % 6) as usize])
            .collect();
        for fold in [false, true] {
            // Dense tables (every segment of a short pattern) and per-byte masks (the
            // segments past a matcher's dense budget) must agree with the reference.
            for dense in [usize::MAX, 0] {
                assert_eq!(
                    LikeMatcher::build(&pat, fold, dense)
                        .unwrap()
                        .matches(&text),
                    reference_like(&pat, &text, fold),
                    "pattern {:?} text {:?} fold {fold} dense budget {dense}",
                    core::str::from_utf8(&pat),
                    core::str::from_utf8(&text)
                );
            }
        }
    }
    // Long segments cross the 64-bit word boundary.
    let long: alloc::vec::Vec<u8> = core::iter::repeat_n(b'a', 130).chain([b'b']).collect();
    let mut pat = alloc::vec![b'%'];
    pat.extend_from_slice(&long);
    pat.push(b'%');
    let mut text = alloc::vec![b'a'; 300];
    for dense in [usize::MAX, 0] {
        assert!(!LikeMatcher::build(&pat, false, dense)
            .unwrap()
            .matches(&text));
    }
    text.push(b'b');
    for dense in [usize::MAX, 0] {
        assert!(LikeMatcher::build(&pat, false, dense)
            .unwrap()
            .matches(&text));
    }
}

#[test]
fn long_segments_through_per_byte_masks_agree_with_the_reference() {
    // Segments of 60–140 positions (one to three words), with wildcards and a few
    // distinct bytes, searched without dense tables.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..300 {
        let seg = |next: &mut dyn FnMut() -> u64| -> alloc::vec::Vec<u8> {
            let len = 60 + (next() % 80) as usize;
            (0..len).map(|_| b"abA_"[(next() % 4) as usize]).collect()
        };
        let mut pat = alloc::vec![b'%'];
        pat.extend(seg(&mut next));
        pat.push(b'%');
        pat.extend(seg(&mut next));
        pat.push(b'%');
        // A text that holds both segments (wildcards made `b`) with noise around them,
        // or, one time in three, a random text.
        let mut text: alloc::vec::Vec<u8> = alloc::vec::Vec::new();
        if next() % 3 == 0 {
            text.extend((0..300).map(|_| b"abAB"[(next() % 4) as usize]));
        } else {
            for part in pat.split(|&b| b == b'%').filter(|p| !p.is_empty()) {
                text.extend((0..next() % 20).map(|_| b"abA"[(next() % 3) as usize]));
                text.extend(part.iter().map(|&b| if b == b'_' { b'b' } else { b }));
            }
        }
        for fold in [false, true] {
            assert_eq!(
                LikeMatcher::build(&pat, fold, 0).unwrap().matches(&text),
                reference_like(&pat, &text, fold),
                "fold {fold}"
            );
        }
    }
}

#[test]
fn a_pattern_of_many_segments_holds_memory_in_proportion_to_its_length() {
    // `%a%a…%a%`: 250,000 middle segments. With a 2 KiB table for each, this one
    // pattern held a gigabyte; now it holds a few bytes per pattern byte.
    let n = 250_000;
    let pat: alloc::vec::Vec<u8> = b"%a".repeat(n).into_iter().chain([b'%']).collect();
    let m = LikeMatcher::new(&pat, false).unwrap();
    let held = m.retained();
    assert!(
        held <= 40 * pat.len(),
        "{held} bytes for a pattern of {}",
        pat.len()
    );
    assert!(m.matches(&b"a".repeat(n)));
    assert!(m.matches(&b"xa".repeat(n + 1)));
    assert!(!m.matches(&b"a".repeat(n - 1)));
    // The widest segments: 256 distinct bytes, many words.
    let wide: alloc::vec::Vec<u8> = (0..=255u8)
        .filter(|&b| b != b'%' && b != b'_' && b != b'\\')
        .collect();
    let mut pat = alloc::vec![b'%'];
    for _ in 0..200 {
        pat.extend(wide.iter().cycle().take(1_000));
        pat.push(b'%');
    }
    let m = LikeMatcher::new(&pat, false).unwrap();
    assert!(
        m.retained() <= 40 * pat.len() + 64 * 1024,
        "{} bytes",
        m.retained()
    );
}

#[test]
fn a_pattern_past_the_longest_is_refused() {
    let pat = alloc::vec![b'a'; 64 * 1024 * 1024 + 1];
    assert!(LikeMatcher::new(&pat, false).is_none());
    assert_eq!(
        Pred::compile(
            SimpleOp::Like,
            Lit::Str(Text::from(core::str::from_utf8(&pat).unwrap()))
        )
        .err(),
        Some(LONG_PATTERN)
    );
}

/// Literals and cells near the edges of identity: integers past 2^53 and past i64,
/// fractions, both zeros, strings that share prefixes, booleans, nulls.
fn edge_lit() -> impl proptest::strategy::Strategy<Value = Lit> {
    use proptest::prelude::*;
    prop_oneof![
        Just(Lit::Null),
        any::<bool>().prop_map(Lit::Bool),
        (-5i64..5).prop_map(Lit::Int),
        prop_oneof![
            Just(i64::MIN),
            Just(i64::MAX),
            Just((1i64 << 53) + 1),
            Just(1i64 << 53)
        ]
        .prop_map(Lit::Int),
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(0.5),
            Just(-2.0),
            Just(9_007_199_254_740_992.0),
            Just(1e300)
        ]
        .prop_map(Lit::Float),
        "[ab]{0,3}".prop_map(|s: alloc::string::String| Lit::Str(Text::from(s.as_str()))),
    ]
}

fn edge_cell() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![
            (-5i32..5).prop_map(f64::from),
            Just(0.5),
            Just(-2.0),
            Just(9_007_199_254_740_992.0),
            Just(9_007_199_254_740_994.0),
            Just(9_223_372_036_854_775_808.0),
            Just(-9_223_372_036_854_775_808.0),
            Just(1e300),
        ]
        .prop_map(Value::num),
        "[ab]{0,3}".prop_map(|s: alloc::string::String| Value::str(&s)),
    ]
}

proptest::proptest! {
    /// The sorted set answers what a scan of the list with `identical` answers.
    #[test]
    fn an_in_set_agrees_with_a_scan_of_its_list(
        items in proptest::collection::vec(edge_lit(), 0..12),
        cells in proptest::collection::vec(edge_cell(), 1..12),
    ) {
        let set = InSet::new(&items);
        for cell in &cells {
            let scan = items.iter().any(|l| *l != Lit::Null && identical(cell.cell(), l));
            proptest::prop_assert_eq!(set.contains(cell.cell()), scan, "cell {:?} items {:?}", cell, items);
        }
    }
}

#[test]
fn an_in_list_of_many_ids_is_a_search_per_row() {
    // 200,000 ids: a scan per row would be 200,000 comparisons.
    let items: alloc::vec::Vec<Lit> = (0..200_000).map(|i| Lit::Int(i * 3)).collect();
    let pred = Pred::compile(SimpleOp::In, Lit::List(items)).unwrap();
    for i in 0..600_000i32 {
        assert_eq!(pred.eval(&Value::num(f64::from(i))), i % 3 == 0);
    }
}

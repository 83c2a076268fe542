//! proptest strategies for the differential oracle.
//!
//! Everything is generated as small raw indices and bytes, independent of the schema;
//! [`super::resolve`] interprets them against the generated schema (an index `i` names
//! table `i % table_count`, a byte becomes a cell of the column's kind). That keeps the
//! strategies flat and lets proptest shrink every part on its own.

use proptest::collection::vec;
use proptest::prelude::*;

/// A generated table: its column count, whether the pk is two columns, column kinds.
#[derive(Clone, Debug)]
pub struct GenTable {
    /// Which name from the name pool.
    pub name: u8,
    /// 2..=4 columns.
    pub columns: usize,
    /// Primary key: 0 `[0]`, 1 `[0, 1]`, 2 `[1, 0]`.
    pub pk: u8,
    /// One kind selector per column (interpreted by `resolve::Kind::pick`).
    pub kinds: Vec<u8>,
}

/// A literal cell: `same_kind` draws from the column's own domain, else from a mixed one.
#[derive(Clone, Debug)]
pub struct GenLit {
    /// Draw from the column's domain.
    pub same_kind: bool,
    /// The value selector.
    pub byte: u8,
    /// Render integral numbers as float tokens (`2.0`).
    pub float_token: bool,
}

/// A filter node.
#[derive(Clone, Debug)]
pub enum GenCond {
    /// `column <op> literal` (or a literal on the left for `=`/`!=`/`IS`/`IS NOT`).
    Simple {
        /// Column selector.
        col: u8,
        /// Operator selector (0..14).
        op: u8,
        /// The literal (IN lists use all of `list`).
        lit: GenLit,
        /// IN / NOT IN elements.
        list: Vec<GenLit>,
        /// LIKE pattern selector.
        pattern: u8,
        /// Put a literal on the left-hand side when the operator allows it.
        lit_left: bool,
    },
    /// All of.
    And(Vec<GenCond>),
    /// Any of.
    Or(Vec<GenCond>),
    /// A correlated (NOT) EXISTS.
    Exists {
        /// `NOT EXISTS`.
        negated: bool,
        /// 0 absent, 1 `true` (ignored when negated), 2 explicit `false`.
        flip: u8,
        /// 0 absent, 1 `"permissions"`, 2 `"client"`.
        system: u8,
        /// Correlation pairs `(parent column, child column)` selectors.
        pairs: Vec<(u8, u8)>,
        /// The child level (its start/related are not emitted).
        level: Box<GenLevel>,
    },
}

/// A `start` bound: which columns it names and their values.
#[derive(Clone, Debug)]
pub struct GenStart {
    /// 0: every completed-sort column, 1: the first one, 2: all but the last,
    /// 3: one arbitrary column.
    pub mode: u8,
    /// Value selectors, one per named column (cycled).
    pub bytes: Vec<u8>,
    /// `exclusive`.
    pub exclusive: bool,
}

/// A `related` entry.
#[derive(Clone, Debug)]
pub struct GenRelated {
    /// Correlation pairs `(parent column, child column)` selectors.
    pub pairs: Vec<(u8, u8)>,
    /// The child level.
    pub level: GenLevel,
}

/// One query level.
#[derive(Clone, Debug)]
pub struct GenLevel {
    /// Table selector.
    pub table: u8,
    /// The `where`.
    pub filter: Option<GenCond>,
    /// `orderBy` entries: column selector, descending.
    pub order: Vec<(u8, bool)>,
    /// The `start` bound.
    pub start: Option<GenStart>,
    /// The `limit`.
    pub limit: Option<u8>,
    /// `related` children.
    pub related: Vec<GenRelated>,
}

/// One upstream row change, resolved against the current rows when it is applied.
#[derive(Clone, Debug)]
pub enum GenOp {
    /// Add a row (an existing key turns it into an edit of that row).
    Add {
        /// Table selector.
        table: u8,
        /// Cell selectors.
        cells: Vec<u8>,
    },
    /// Remove the `pick`-th row (nothing when the table is empty).
    Remove {
        /// Table selector.
        table: u8,
        /// Row selector.
        pick: u8,
    },
    /// Edit the non-key cells of the `pick`-th row selected by `mask` (bits 0–3); when
    /// bits 5–7 are all set, also move the row to a new key if that key is free.
    Edit {
        /// Table selector.
        table: u8,
        /// Row selector.
        pick: u8,
        /// New cell selectors.
        cells: Vec<u8>,
        /// Which columns change (bit per column).
        mask: u8,
    },
}

/// One step of a scenario.
#[derive(Clone, Debug)]
pub enum Step {
    /// One live upstream batch (not drained).
    Upstream(Vec<GenOp>),
    /// `commit_all`, then the full check.
    Drain,
    /// (Re-)subscribe `sub` to query `query` of the pool, in cosmetic variant `variant`.
    Subscribe {
        /// Subscriber selector.
        sub: u8,
        /// Query selector.
        query: u8,
        /// Cosmetic variant of the AST text (must not change the query).
        variant: u8,
    },
    /// Unsubscribe `sub` (if attached).
    Unsubscribe {
        /// Subscriber selector.
        sub: u8,
    },
    /// Reclaim every idle pipeline.
    Sweep,
}

/// A whole oracle case.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The tables.
    pub tables: Vec<GenTable>,
    /// The snapshot rows: table selector, cell selectors.
    pub rows: Vec<(u8, Vec<u8>)>,
    /// The query pool.
    pub queries: Vec<GenLevel>,
    /// Initial subscriptions: `(sub, query)` selectors.
    pub initial: Vec<(u8, u8)>,
    /// The steps.
    pub steps: Vec<Step>,
}

fn table() -> impl Strategy<Value = GenTable> {
    (any::<u8>(), 2usize..=4, 0u8..3, vec(any::<u8>(), 4)).prop_map(|(name, columns, pk, kinds)| {
        GenTable {
            name,
            columns,
            pk,
            kinds,
        }
    })
}

fn lit() -> impl Strategy<Value = GenLit> {
    (
        prop::bool::weighted(0.7),
        any::<u8>(),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(same_kind, byte, float_token)| GenLit {
            same_kind,
            byte,
            float_token,
        })
}

fn pairs() -> impl Strategy<Value = Vec<(u8, u8)>> {
    prop_oneof![
        4 => vec((Just(0u8), Just(1u8)), 1),
        2 => vec((Just(1u8), Just(0u8)), 1),
        2 => vec((Just(0u8), Just(2u8)), 1),
        // Same column on both sides: over one table, a row correlates with itself.
        2 => vec((Just(0u8), Just(0u8)), 1),
        1 => vec((Just(1u8), Just(1u8)), 1),
        3 => vec((any::<u8>(), any::<u8>()), 1),
        1 => vec((any::<u8>(), any::<u8>()), 2),
    ]
}

fn simple() -> impl Strategy<Value = GenCond> {
    // Comparisons and IS, the LIKE family, IN / NOT IN.
    let op = prop_oneof![8 => 0u8..8, 5 => 8u8..12, 3 => 12u8..14];
    (
        any::<u8>(),
        op,
        lit(),
        vec(lit(), 0..4),
        any::<u8>(),
        prop::bool::weighted(0.05),
    )
        .prop_map(|(col, op, lit, list, pattern, lit_left)| GenCond::Simple {
            col,
            op,
            lit,
            list,
            pattern,
            lit_left,
        })
}

/// A filter tree of at most `depth` nested EXISTS / AND / OR levels.
pub fn cond(depth: u32) -> BoxedStrategy<GenCond> {
    if depth == 0 {
        return simple().boxed();
    }
    let exists = (
        prop::bool::weighted(0.3),
        0u8..3,
        prop_oneof![6 => Just(0u8), 2 => Just(1u8), 1 => Just(2u8)],
        pairs(),
        level(depth - 1, true),
    )
        .prop_map(|(negated, flip, system, pairs, level)| GenCond::Exists {
            negated,
            flip,
            system,
            pairs,
            level: Box::new(level),
        });
    prop_oneof![
        4 => simple(),
        2 => vec(cond(depth - 1), 0..=3).prop_map(GenCond::And),
        2 => vec(cond(depth - 1), 0..=3).prop_map(GenCond::Or),
        4 => exists,
    ]
    .boxed()
}

fn start() -> impl Strategy<Value = GenStart> {
    (0u8..4, vec(any::<u8>(), 1..4), any::<bool>()).prop_map(|(mode, bytes, exclusive)| GenStart {
        mode,
        bytes,
        exclusive,
    })
}

/// A query level with at most `depth` levels below it (`exists`: an EXISTS child, which
/// gets no start/related but may carry a limit the room must ignore).
pub fn level(depth: u32, exists: bool) -> BoxedStrategy<GenLevel> {
    let related = if depth == 0 || exists {
        Just(Vec::new()).boxed()
    } else {
        let one = (pairs(), level(depth - 1, false))
            .prop_map(|(pairs, level)| GenRelated { pairs, level });
        vec(one, 0..=2).boxed()
    };
    let filter = prop::option::weighted(if exists { 0.7 } else { 0.5 }, cond(depth.min(2)));
    let limit = prop::option::weighted(0.4, prop_oneof![1 => Just(0u8), 6 => 1u8..5]);
    let start = if exists {
        Just(None).boxed()
    } else {
        prop::option::weighted(0.25, start()).boxed()
    };
    (
        any::<u8>(),
        filter,
        vec((any::<u8>(), any::<bool>()), 0..3),
        start,
        limit,
        related,
    )
        .prop_map(|(table, filter, order, start, limit, related)| GenLevel {
            table,
            filter,
            order,
            start,
            limit,
            related,
        })
        .boxed()
}

fn op() -> impl Strategy<Value = GenOp> {
    prop_oneof![
        3 => (any::<u8>(), vec(any::<u8>(), 4)).prop_map(|(table, cells)| GenOp::Add { table, cells }),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(table, pick)| GenOp::Remove { table, pick }),
        4 => (any::<u8>(), any::<u8>(), vec(any::<u8>(), 4), any::<u8>())
            .prop_map(|(table, pick, cells, mask)| GenOp::Edit { table, pick, cells, mask }),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => vec(op(), 1..5).prop_map(Step::Upstream),
        4 => Just(Step::Drain),
        2 => (0u8..5, any::<u8>(), 0u8..4)
            .prop_map(|(sub, query, variant)| Step::Subscribe { sub, query, variant }),
        1 => (0u8..5).prop_map(|sub| Step::Unsubscribe { sub }),
        1 => Just(Step::Sweep),
    ]
}

/// A whole scenario.
pub fn scenario() -> impl Strategy<Value = Scenario> {
    (
        vec(table(), 2..=4),
        vec((any::<u8>(), vec(any::<u8>(), 4)), 8..64),
        vec(level(3, false), 1..=3),
        vec((0u8..5, any::<u8>()), 1..=3),
        vec(step(), 1..30),
    )
        .prop_map(|(tables, rows, queries, initial, steps)| Scenario {
            tables,
            rows,
            queries,
            initial,
            steps,
        })
}

/// A predicate-focused scenario: one or two tables, many rows, and a pool of root-only
/// queries whose `where` is a shallow AND/OR tree of simple conditions, each subscribed
/// from the start; then a few upstream batches, each drained.
pub fn predicate_scenario() -> impl Strategy<Value = Scenario> {
    let filter_level = prop_oneof![3 => simple(), 1 => cond(1)].prop_map(|c| GenLevel {
        table: 0,
        filter: Some(c),
        order: Vec::new(),
        start: None,
        limit: None,
        related: Vec::new(),
    });
    (
        vec(table(), 1..=2),
        vec((Just(0u8), vec(any::<u8>(), 4)), 4..24),
        vec(filter_level, 1..=8),
        vec(vec(op(), 1..4), 0..3),
    )
        .prop_map(|(tables, rows, queries, batches)| {
            let initial = (0..queries.len() as u8).map(|i| (i, i)).collect();
            let mut steps = Vec::new();
            for ops in batches {
                steps.push(Step::Upstream(ops));
                steps.push(Step::Drain);
            }
            Scenario {
                tables,
                rows,
                queries,
                initial,
                steps,
            }
        })
}

/// A dense scenario: one or two small tables (so levels of one query often read the
/// same table and every edit touches footprint rows), queries two levels deep, and
/// many small drained batches.
pub fn dense_scenario() -> impl Strategy<Value = Scenario> {
    (
        vec(table(), 1..=2),
        vec((any::<u8>(), vec(any::<u8>(), 4)), 2..12),
        vec(level(2, false), 1..=2),
        vec(vec(op(), 1..3), 2..16),
    )
        .prop_map(|(tables, rows, queries, batches)| {
            let initial = (0..queries.len() as u8).map(|i| (i, i)).collect();
            let mut steps = Vec::new();
            for ops in batches {
                steps.push(Step::Upstream(ops));
                steps.push(Step::Drain);
            }
            Scenario {
                tables,
                rows,
                queries,
                initial,
                steps,
            }
        })
}

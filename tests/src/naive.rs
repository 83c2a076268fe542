//! A deliberately naive footprint evaluator, the correctness oracle of the IVM engine.
//!
//! It recomputes a query's footprint from scratch over plain copies of every table: no
//! indexes, no incremental state, no cleverness — loops over `Vec`s that can be checked by
//! reading them next to docs/design/decisions.md, "Footprints", and docs/design/wire.md,
//! "The query AST". Leaf predicates are evaluated here too,
//! from the operator and the literal as written (not through the core's compiled
//! [`Pred`](rindle_room_core::predicate::Pred)), so the oracle also checks predicate
//! compilation. Only the comparator ([`compare`], [`compare_rows`]) is shared with the
//! core; it has its own conformance vectors.

use core::cmp::Ordering;

use rindle_room_core::ast::{Cond, Exists, Link, Query};
use rindle_room_core::predicate::{Lit, SimpleOp};
use rindle_room_core::value::{compare, compare_rows, Value};
use rindle_room_core::{Room, TableSchema};

/// A footprint member: the table's name and the full row image.
pub type Member = (String, Vec<Value>);

/// How many witnesses a non-flipped EXISTS ships per parent.
pub const WITNESS_CAP: usize = 3;

/// One table's schema and rows.
#[derive(Clone, Debug)]
pub struct NaiveTable {
    /// The table's schema.
    pub schema: TableSchema,
    /// Every row, in no particular order.
    pub rows: Vec<Vec<Value>>,
}

/// Plain copies of every table, indexed like the room's tables (the index a [`Query`]
/// names).
#[derive(Clone, Debug)]
pub struct Db {
    /// The tables, in the room's table order.
    pub tables: Vec<NaiveTable>,
}

impl Db {
    /// Copies the room's current head.
    pub fn from_room(room: &Room) -> Db {
        let mut tables = Vec::new();
        for schema in room.tables() {
            let rows = room.rows(&schema.name).iter().map(|r| r.to_vec()).collect();
            tables.push(NaiveTable {
                schema: schema.clone(),
                rows,
            });
        }
        Db { tables }
    }
}

/// Why a row is in the result tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// A root row inside the `start`/`limit` window.
    Root,
    /// A `related` child inside its parent's window.
    Related,
    /// An EXISTS witness.
    Witness,
}

/// One visit of a row while walking the result tree: why, which table, which image.
pub type Visit = (Via, usize, Vec<Value>);

/// Every row of `q`'s result tree, once per path that reaches it (duplicates kept).
pub fn visits(db: &Db, q: &Query) -> Vec<Visit> {
    let mut out = Vec::new();
    let all_rows = db.tables[q.table].rows.clone();
    visit_level(db, q, all_rows, Via::Root, &mut out);
    out
}

/// The footprint of `q`: the distinct `(table, row)` members of its result tree, sorted
/// by table name (bytes), then primary key (comparator order) — the op order.
pub fn footprint(db: &Db, q: &Query) -> Vec<Member> {
    distinct_sorted(db, visits(db, q))
}

/// The distinct rows reached as root or related rows (witness-only rows excluded), in
/// footprint order.
pub fn non_witness_rows(db: &Db, q: &Query) -> Vec<Member> {
    let mut kept = Vec::new();
    for v in visits(db, q) {
        if v.0 != Via::Witness {
            kept.push(v);
        }
    }
    distinct_sorted(db, kept)
}

/// The tables whose rows can appear in `q`'s footprint (`hello.tables`): every level's
/// table, and the children of witness-shipping EXISTS and NOT EXISTS (not behind a
/// permissions gate), as table indices in first-seen order.
pub fn footprint_tables(q: &Query) -> Vec<usize> {
    let mut out = Vec::new();
    level_tables(q, &mut out);
    out
}

fn level_tables(q: &Query, out: &mut Vec<usize>) {
    if !out.contains(&q.table) {
        out.push(q.table);
    }
    if let Some(f) = &q.filter {
        cond_tables(f, out);
    }
    for r in &q.related {
        level_tables(&r.query, out);
    }
}

fn cond_tables(c: &Cond, out: &mut Vec<usize>) {
    match c {
        Cond::And(items) | Cond::Or(items) => {
            for item in items {
                cond_tables(item, out);
            }
        }
        Cond::Exists(e) if !e.permissions => level_tables(&e.query, out),
        _ => {}
    }
}

/// Sorts members in op order: table name bytes, then primary-key cells.
pub fn sort_members(db: &Db, members: &mut [Member]) {
    members.sort_by(|a, b| {
        let by_name = a.0.as_bytes().cmp(b.0.as_bytes());
        if by_name != Ordering::Equal {
            return by_name;
        }
        let pk = primary_key_of(db, &a.0);
        for &c in pk {
            let o = compare(&a.1[c], &b.1[c]);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    });
}

fn primary_key_of<'a>(db: &'a Db, name: &str) -> &'a [usize] {
    for t in &db.tables {
        if &*t.schema.name == name {
            return &t.schema.primary_key;
        }
    }
    panic!("naive: unknown table {name:?}");
}

fn distinct_sorted(db: &Db, visits: Vec<Visit>) -> Vec<Member> {
    let mut members: Vec<Member> = Vec::new();
    for (_, table, row) in visits {
        let member = (db.tables[table].schema.name.to_string(), row);
        if !members.contains(&member) {
            members.push(member);
        }
    }
    sort_members(db, &mut members);
    members
}

/// Windows `candidates` for level `q` and visits every row that stays.
fn visit_level(db: &Db, q: &Query, candidates: Vec<Vec<Value>>, via: Via, out: &mut Vec<Visit>) {
    let mut rows = Vec::new();
    for row in candidates {
        if passes_start(q, &row) && passes_filter(db, q, &row) {
            rows.push(row);
        }
    }
    rows.sort_by(|a, b| compare_rows(a, b, &q.order));
    if let Some(limit) = q.limit {
        rows.truncate(limit as usize);
    }
    for row in rows {
        visit_row(db, q, &row, via, out);
    }
}

/// Visits one row of level `q`: the row, its witnesses, its related children.
fn visit_row(db: &Db, q: &Query, row: &[Value], via: Via, out: &mut Vec<Visit>) {
    out.push((via, q.table, row.to_vec()));
    if let Some(filter) = &q.filter {
        visit_witnesses(db, filter, row, out);
    }
    for r in &q.related {
        let children = correlated(db, &r.link, r.query.table, row);
        visit_level(db, &r.query, children, Via::Related, out);
    }
}

/// Every EXISTS and NOT EXISTS in `cond` (whatever AND/OR surrounds it) ships the first
/// `WITNESS_CAP` matching children of `row` (all of them when flipped): for an EXISTS
/// they are why it holds, for a NOT EXISTS why it does not. A permissions gate ships
/// nothing.
fn visit_witnesses(db: &Db, cond: &Cond, row: &[Value], out: &mut Vec<Visit>) {
    match cond {
        Cond::And(items) | Cond::Or(items) => {
            for c in items {
                visit_witnesses(db, c, row, out);
            }
        }
        Cond::Exists(e) => {
            if e.permissions {
                return;
            }
            let matches = matching_children(db, e, row);
            let mut take = matches.len();
            if !e.flipped && take > WITNESS_CAP {
                take = WITNESS_CAP;
            }
            for child in &matches[..take] {
                visit_row(db, &e.query, child, Via::Witness, out);
            }
        }
        Cond::Const(_) | Cond::Simple { .. } => {}
    }
}

/// The correlated child rows of `e` that pass the child's own filter, in the child's
/// completed sort order. (An EXISTS child has no `start`; its `limit` was dropped.)
fn matching_children(db: &Db, e: &Exists, parent: &[Value]) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for child in correlated(db, &e.link, e.query.table, parent) {
        if passes_filter(db, &e.query, &child) {
            out.push(child);
        }
    }
    out.sort_by(|a, b| compare_rows(a, b, &e.query.order));
    out
}

/// The rows of `child_table` whose `link.child` cells join-equal the parent's
/// `link.parent` cells.
fn correlated(db: &Db, link: &Link, child_table: usize, parent: &[Value]) -> Vec<Vec<Value>> {
    let mut out = Vec::new();
    for child in &db.tables[child_table].rows {
        let mut all_equal = true;
        for i in 0..link.parent.len() {
            if !join_eq(&parent[link.parent[i]], &child[link.child[i]]) {
                all_equal = false;
            }
        }
        if all_equal {
            out.push(child.clone());
        }
    }
    out
}

/// Join equality: NULL never equals anything, not even NULL.
fn join_eq(a: &Value, b: &Value) -> bool {
    if a.is_null() || b.is_null() {
        return false;
    }
    compare(a, b) == Ordering::Equal
}

/// Whether `row` is at or after (exclusive: strictly after) the level's `start` bound.
fn passes_start(q: &Query, row: &[Value]) -> bool {
    let Some(bound) = &q.start else {
        return true;
    };
    match compare_rows(&bound.row, row, &q.order) {
        Ordering::Less => true,
        Ordering::Equal => !bound.exclusive,
        Ordering::Greater => false,
    }
}

fn passes_filter(db: &Db, q: &Query, row: &[Value]) -> bool {
    match &q.filter {
        None => true,
        Some(c) => eval(db, c, row),
    }
}

/// Evaluates a filter tree on one row; EXISTS scans the child table.
pub fn eval(db: &Db, cond: &Cond, row: &[Value]) -> bool {
    match cond {
        Cond::Const(b) => *b,
        Cond::Simple { col, op, lit, .. } => leaf(*op, lit, &row[*col]),
        Cond::And(items) => {
            for c in items {
                if !eval(db, c, row) {
                    return false;
                }
            }
            true
        }
        Cond::Or(items) => {
            for c in items {
                if eval(db, c, row) {
                    return true;
                }
            }
            false
        }
        Cond::Exists(e) => {
            let found = !matching_children(db, e, row).is_empty();
            found != e.negated
        }
    }
}

/// One `cell <op> literal` test with the NULL semantics of docs/design/wire.md, "The query
/// AST".
pub fn leaf(op: SimpleOp, lit: &Lit, cell: &Value) -> bool {
    match op {
        SimpleOp::Is => identical(cell, lit),
        SimpleOp::IsNot => !identical(cell, lit),
        _ if *lit == Lit::Null || cell.is_null() => false,
        SimpleOp::Eq => identical(cell, lit),
        SimpleOp::Ne => !identical(cell, lit),
        SimpleOp::Lt => order_vs_literal(cell, lit) == Ordering::Less,
        SimpleOp::Le => order_vs_literal(cell, lit) != Ordering::Greater,
        SimpleOp::Gt => order_vs_literal(cell, lit) == Ordering::Greater,
        SimpleOp::Ge => order_vs_literal(cell, lit) != Ordering::Less,
        SimpleOp::In => in_list(cell, lit),
        SimpleOp::NotIn => !in_list(cell, lit),
        SimpleOp::Like => like(cell, lit, false),
        SimpleOp::ILike => like(cell, lit, true),
        // A non-text cell never matches, so the negation holds for it.
        SimpleOp::NotLike => !like(cell, lit, false),
        SimpleOp::NotILike => !like(cell, lit, true),
    }
}

/// Whether a list literal holds an element identical to `cell` (`null` elements never
/// match anything).
fn in_list(cell: &Value, lit: &Lit) -> bool {
    let Lit::List(items) = lit else {
        panic!("naive: IN needs a list literal, got {lit:?}");
    };
    for item in items {
        if *item != Lit::Null && identical(cell, item) {
            return true;
        }
    }
    false
}

/// The type rank shared by cells and literals: Null < Bool < Number < Str (< List).
fn literal_rank(lit: &Lit) -> u8 {
    match lit {
        Lit::Null => 1,
        Lit::Bool(_) => 2,
        Lit::Int(_) | Lit::Float(_) => 3,
        Lit::Str(_) => 4,
        Lit::List(_) => 5,
    }
}

/// Predicate ordering of a cell against a literal: by value within a type, by type rank
/// across types.
fn order_vs_literal(cell: &Value, lit: &Lit) -> Ordering {
    match (cell, lit) {
        (Value::Null, Lit::Null) => Ordering::Equal,
        (Value::Bool(a), Lit::Bool(b)) => a.cmp(b),
        (Value::Num(f), Lit::Int(i)) => {
            assert!(
                i.unsigned_abs() <= 1 << 53,
                "naive: integer literal too large"
            );
            f.total_cmp(&(*i as f64))
        }
        (Value::Num(f), Lit::Float(g)) => f.total_cmp(g),
        (Value::Str(a), Lit::Str(b)) => a.as_bytes().cmp(b.as_bytes()),
        _ => cell.type_rank().cmp(&literal_rank(lit)),
    }
}

/// Predicate identity: NULL is identical to NULL, numbers compare by value, other
/// cross-type pairs are never identical.
fn identical(cell: &Value, lit: &Lit) -> bool {
    match (cell, lit) {
        (_, Lit::List(_)) => false,
        (Value::Num(f), Lit::Float(g)) => f == g,
        _ => order_vs_literal(cell, lit) == Ordering::Equal,
    }
}

/// One element of a LIKE pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LikeToken {
    Byte(u8),
    AnyOne,
    AnyRun,
}

/// `LIKE` / `ILIKE` on a cell: only text cells can match; ILIKE folds ASCII letters.
fn like(cell: &Value, lit: &Lit, fold_case: bool) -> bool {
    let Lit::Str(pattern) = lit else {
        panic!("naive: LIKE needs a string literal, got {lit:?}");
    };
    let Value::Str(text) = cell else {
        return false;
    };
    let mut tokens = like_tokens(pattern.as_bytes());
    let mut bytes = text.as_bytes().to_vec();
    if fold_case {
        for t in &mut tokens {
            if let LikeToken::Byte(b) = t {
                *b = b.to_ascii_lowercase();
            }
        }
        bytes.make_ascii_lowercase();
    }
    like_match(&tokens, &bytes)
}

/// Tokenizes a pattern: `%` any run, `_` one byte, `\%` `\_` `\\` literal; any other
/// backslash is itself literal.
fn like_tokens(pattern: &[u8]) -> Vec<LikeToken> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < pattern.len() {
        let b = pattern[i];
        if b == b'\\' && i + 1 < pattern.len() && matches!(pattern[i + 1], b'%' | b'_' | b'\\') {
            out.push(LikeToken::Byte(pattern[i + 1]));
            i += 2;
            continue;
        }
        out.push(match b {
            b'%' => LikeToken::AnyRun,
            b'_' => LikeToken::AnyOne,
            other => LikeToken::Byte(other),
        });
        i += 1;
    }
    out
}

/// Plain recursive matching (exponential in the worst case; the oracle's strings are tiny).
fn like_match(tokens: &[LikeToken], text: &[u8]) -> bool {
    match tokens.first() {
        None => text.is_empty(),
        Some(LikeToken::AnyRun) => {
            for skip in 0..=text.len() {
                if like_match(&tokens[1..], &text[skip..]) {
                    return true;
                }
            }
            false
        }
        Some(LikeToken::AnyOne) => !text.is_empty() && like_match(&tokens[1..], &text[1..]),
        Some(LikeToken::Byte(b)) => text.first() == Some(b) && like_match(&tokens[1..], &text[1..]),
    }
}

//! The columns a subscriber's rows carry, worked out the plain way for the harness:
//! every level that ships rows asks for columns of its table — all of them without a
//! `select`; with one, the key, the selected columns and every column the level itself
//! reads (filter, correlations on both sides — a permissions gate's aside —, sort,
//! start bound). A table gets the union
//! of what its levels ask for, in schema order.

use std::collections::{BTreeMap, BTreeSet};

use rindle_room_core::ast::{Cond, Query};
use rindle_room_core::TableSchema;

use crate::naive::Member;

/// Table index → the kept columns, ascending, for every table the query ships.
pub type Columns = BTreeMap<usize, Vec<usize>>;

/// The kept columns of each table `q` ships, over `schemas` (indexed like the room's).
pub fn columns(q: &Query, schemas: &[&TableSchema]) -> Columns {
    let mut asked: BTreeMap<usize, Option<BTreeSet<usize>>> = BTreeMap::new();
    visit(q, &[], schemas, &mut asked);
    asked
        .into_iter()
        .map(|(t, cols)| {
            let cols = match cols {
                Some(set) => set.into_iter().collect(),
                None => (0..schemas[t].columns.len()).collect(),
            };
            (t, cols)
        })
        .collect()
}

fn visit(
    q: &Query,
    incoming: &[usize],
    schemas: &[&TableSchema],
    asked: &mut BTreeMap<usize, Option<BTreeSet<usize>>>,
) {
    let mine: Option<BTreeSet<usize>> = q.select.as_ref().map(|select| {
        let mut set: BTreeSet<usize> = select.iter().copied().collect();
        set.extend(schemas[q.table].primary_key.iter().copied());
        set.extend(incoming.iter().copied());
        set.extend(q.order.iter().map(|(c, _)| *c));
        if let Some(b) = &q.start {
            set.extend(b.named.iter().copied());
        }
        if let Some(f) = &q.filter {
            read_by(f, &mut set);
        }
        for r in &q.related {
            set.extend(r.link.parent.iter().copied());
        }
        set
    });
    let slot = asked
        .entry(q.table)
        .or_insert_with(|| Some(BTreeSet::new()));
    match (slot.as_mut(), mine) {
        (Some(have), Some(more)) => have.extend(more),
        _ => *slot = None,
    }
    if let Some(f) = &q.filter {
        children(f, schemas, asked);
    }
    for r in &q.related {
        visit(&r.query, &r.link.child, schemas, asked);
    }
}

fn read_by(c: &Cond, set: &mut BTreeSet<usize>) {
    match c {
        Cond::Simple { col, .. } => {
            set.insert(*col);
        }
        Cond::And(items) | Cond::Or(items) => items.iter().for_each(|c| read_by(c, set)),
        Cond::Exists(e) if !e.permissions => set.extend(e.link.parent.iter().copied()),
        Cond::Exists(_) => {}
        Cond::Const(_) => {}
    }
}

fn children(
    c: &Cond,
    schemas: &[&TableSchema],
    asked: &mut BTreeMap<usize, Option<BTreeSet<usize>>>,
) {
    match c {
        Cond::And(items) | Cond::Or(items) => {
            items.iter().for_each(|c| children(c, schemas, asked))
        }
        Cond::Exists(e) if !e.permissions => visit(&e.query, &e.link.child, schemas, asked),
        _ => {}
    }
}

/// `schema` cut down to `cols`.
pub fn schema(schema: &TableSchema, cols: &[usize]) -> TableSchema {
    let names: Vec<&str> = cols.iter().map(|&c| &*schema.columns[c]).collect();
    let pk: Vec<usize> = schema
        .primary_key
        .iter()
        .map(|k| {
            cols.iter()
                .position(|c| c == k)
                .expect("the key is always kept")
        })
        .collect();
    TableSchema::new(&schema.name, &names, &pk)
}

/// Members cut down to their tables' kept columns.
pub fn members(members: Vec<Member>, kept: &Columns, schemas: &[&TableSchema]) -> Vec<Member> {
    members
        .into_iter()
        .map(|(table, row)| {
            let t = schemas.iter().position(|s| *s.name == *table);
            match t.and_then(|t| kept.get(&t)) {
                Some(cols) => (table, cols.iter().map(|&c| row[c].clone()).collect()),
                None => (table, row),
            }
        })
        .collect()
}

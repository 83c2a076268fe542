//! The columns a subscription's rows carry (`select`).
//!
//! A level without `select` ships its table full width. A level with one ships the
//! primary key, the selected columns and every column the query itself reads at that
//! level — its filter's columns, the parent side of its EXISTS and `related`
//! correlations, the child side of the correlation that reached it, its sort and its
//! `start` bound — so a client can re-run the query over what it holds. A table reached
//! by several levels ships the union (full width if any of them has no `select`).
//! Columns keep the table's order; the hello lists the projected tables and the
//! fingerprint is taken over them. The published room projects the same way.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::ast::{Cond, Query};
use crate::net_op::NetOp;
use crate::retained as r;
use crate::schema::TableSchema;
use crate::store::Store;
use crate::value::{CellRef, Cells, Row};

/// The projected tables of one query; empty when every table ships full width.
#[derive(Debug, Default)]
pub(crate) struct Projection {
    /// Table name → the columns kept, ascending; only tables narrower than their schema.
    tables: Vec<(Arc<str>, Box<[usize]>)>,
}

/// A table's wanted columns while walking: `None` once some level wants all of them.
type Wanted = Vec<(usize, Option<Vec<usize>>)>;

impl Projection {
    /// The projection of `q` over the tables of `store`.
    pub(crate) fn of(q: &Query, store: &Store) -> Projection {
        let mut wanted: Wanted = Vec::new();
        level(q, &[], store, &mut wanted);
        let mut tables = Vec::new();
        for (t, cols) in wanted {
            let schema = &store.table(t).schema;
            if let Some(mut cols) = cols {
                cols.sort_unstable();
                cols.dedup();
                if cols.len() < schema.columns.len() {
                    tables.push((schema.name.clone(), cols.into_boxed_slice()));
                }
            }
        }
        Projection { tables }
    }

    /// Whether every table ships full width.
    pub(crate) fn is_identity(&self) -> bool {
        self.tables.is_empty()
    }

    fn columns(&self, table: &str) -> Option<&[usize]> {
        self.tables
            .iter()
            .find(|(name, _)| &**name == table)
            .map(|(_, cols)| &**cols)
    }

    /// `schema` as subscribers of this query see it.
    pub(crate) fn schema(&self, schema: &TableSchema) -> TableSchema {
        let Some(cols) = self.columns(&schema.name) else {
            return schema.clone();
        };
        let primary_key = schema
            .primary_key
            .iter()
            .filter_map(|pk| cols.iter().position(|c| c == pk))
            .collect();
        TableSchema {
            name: schema.name.clone(),
            columns: cols.iter().map(|&c| schema.columns[c].clone()).collect(),
            primary_key,
        }
    }

    /// `ops` with every row cut down to its table's columns (`None`: nothing to cut).
    pub(crate) fn ops(&self, ops: &[NetOp]) -> Option<Arc<[NetOp]>> {
        if self.is_identity() {
            return None;
        }
        let pick = |table: &str, row: &Row| match self.columns(table) {
            Some(cols) => Row::new(&Picked { row, cols }),
            None => row.clone(),
        };
        Some(
            ops.iter()
                .map(|op| match op {
                    NetOp::Add { table, row } => NetOp::Add {
                        row: pick(table, row),
                        table: table.clone(),
                    },
                    NetOp::Remove { table, row } => NetOp::Remove {
                        row: pick(table, row),
                        table: table.clone(),
                    },
                    NetOp::Edit { table, old, new } => NetOp::Edit {
                        old: pick(table, old),
                        new: pick(table, new),
                        table: table.clone(),
                    },
                })
                .collect(),
        )
    }

    /// Heap bytes held.
    pub(crate) fn allocation_size(&self) -> usize {
        r::vec(&self.tables)
            + self
                .tables
                .iter()
                .map(|(name, cols)| r::arc_str(name) + cols.len() * core::mem::size_of::<usize>())
                .sum::<usize>()
    }
}

/// Some columns of a row, read in place.
struct Picked<'a> {
    row: &'a Row,
    cols: &'a [usize],
}

impl Cells for Picked<'_> {
    fn cell(&self, col: usize) -> CellRef<'_> {
        self.row.get(self.cols[col])
    }

    fn width(&self) -> usize {
        self.cols.len()
    }
}

/// Records what one level wants of its table; `incoming` is the child side of the
/// correlation that reached it.
fn level(q: &Query, incoming: &[usize], store: &Store, wanted: &mut Wanted) {
    let here = q.select.as_ref().map(|select| {
        let mut cols = select.clone();
        cols.extend_from_slice(&store.table(q.table).schema.primary_key);
        cols.extend_from_slice(incoming);
        cols.extend(q.order.iter().map(|&(c, _)| c));
        if let Some(b) = &q.start {
            cols.extend_from_slice(&b.named);
        }
        if let Some(f) = &q.filter {
            filter_columns(f, &mut cols);
        }
        for r in &q.related {
            cols.extend_from_slice(&r.link.parent);
        }
        cols
    });
    match wanted.iter_mut().find(|(t, _)| *t == q.table) {
        Some((_, slot)) => match (slot.as_mut(), here) {
            (Some(have), Some(more)) => have.extend(more),
            _ => *slot = None,
        },
        None => wanted.push((q.table, here)),
    }
    if let Some(f) = &q.filter {
        exists_levels(f, store, wanted);
    }
    for r in &q.related {
        level(&r.query, &r.link.child, store, wanted);
    }
}

/// The columns a filter reads on its own level.
fn filter_columns(c: &Cond, out: &mut Vec<usize>) {
    match c {
        Cond::Simple { col, .. } => out.push(*col),
        Cond::And(cs) | Cond::Or(cs) => cs.iter().for_each(|c| filter_columns(c, out)),
        // A permissions gate ships nothing, and needs nothing shipped.
        Cond::Exists(e) if !e.permissions => out.extend_from_slice(&e.link.parent),
        Cond::Exists(_) => {}
        Cond::Const(_) => {}
    }
}

/// The EXISTS children whose rows ship (every gate but a permissions one).
fn exists_levels(c: &Cond, store: &Store, wanted: &mut Wanted) {
    match c {
        Cond::And(cs) | Cond::Or(cs) => cs.iter().for_each(|c| exists_levels(c, store, wanted)),
        Cond::Exists(e) if !e.permissions => level(&e.query, &e.link.child, store, wanted),
        _ => {}
    }
}

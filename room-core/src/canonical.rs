//! The canonical text of a validated query: two ASTs that mean the same query (same
//! tables, filters, completed sorts, bounds, limits, relationships, projections)
//! produce the same text, whatever their key order, unknown keys, `one`, aliases or the
//! order and repeats of `select`. Identical texts share one pipeline (QueryKey dedup).

use alloc::string::String;
use core::fmt::Write;

use crate::ast::{Catalog, Cond, Link, Query};
use crate::json::write::{write_f64, write_key, write_str, write_value};
use crate::predicate::Lit;

/// Renders `q` canonically.
pub fn canonical_text(q: &Query, catalog: &dyn Catalog) -> String {
    let mut out = String::with_capacity(128);
    query(&mut out, q, catalog);
    out
}

fn names(out: &mut String, cols: &[usize], table: usize, catalog: &dyn Catalog) {
    out.push('[');
    for (i, c) in cols.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match catalog.schema(table) {
            Some(s) => write_str(out, &s.columns[*c]),
            None => out.push_str("null"),
        }
    }
    out.push(']');
}

fn query(out: &mut String, q: &Query, catalog: &dyn Catalog) {
    let schema = catalog.schema(q.table);
    out.push('{');
    write_key(out, "table");
    write_str(out, schema.map_or("", |s| &s.name));
    if let Some(f) = &q.filter {
        out.push(',');
        write_key(out, "where");
        cond(out, f, q.table, catalog);
    }
    out.push(',');
    write_key(out, "orderBy");
    out.push('[');
    for (i, (col, desc)) in q.order.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        if let Some(s) = schema {
            write_str(out, &s.columns[*col]);
        }
        out.push_str(if *desc { ",\"desc\"]" } else { ",\"asc\"]" });
    }
    out.push(']');
    if let Some(b) = &q.start {
        out.push(',');
        write_key(out, "start");
        out.push('{');
        write_key(out, "row");
        out.push('{');
        for (i, col) in b.named.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            if let Some(s) = schema {
                write_key(out, &s.columns[*col]);
            }
            write_value(out, &b.row[*col]);
        }
        out.push_str("},");
        write_key(out, "exclusive");
        out.push_str(if b.exclusive { "true}" } else { "false}" });
    }
    if let Some(l) = q.limit {
        let _ = write!(out, ",\"limit\":{l}");
    }
    if let Some(cols) = &q.select {
        // A projection changes what subscribers receive: queries that differ in it
        // do not share a pipeline.
        out.push(',');
        write_key(out, "select");
        names(out, cols, q.table, catalog);
    }
    if !q.related.is_empty() {
        out.push(',');
        write_key(out, "related");
        out.push('[');
        for (i, r) in q.related.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('{');
            link(out, &r.link, q.table, r.query.table, catalog);
            out.push(',');
            write_key(out, "query");
            query(out, &r.query, catalog);
            out.push('}');
        }
        out.push(']');
    }
    out.push('}');
}

fn link(out: &mut String, l: &Link, parent: usize, child: usize, catalog: &dyn Catalog) {
    write_key(out, "parentField");
    names(out, &l.parent, parent, catalog);
    out.push(',');
    write_key(out, "childField");
    names(out, &l.child, child, catalog);
}

fn cond(out: &mut String, c: &Cond, table: usize, catalog: &dyn Catalog) {
    match c {
        Cond::Const(b) => {
            out.push_str(if *b {
                "{\"const\":true}"
            } else {
                "{\"const\":false}"
            });
        }
        Cond::Simple { col, op, lit, .. } => {
            out.push_str("{\"col\":");
            names(out, core::slice::from_ref(col), table, catalog);
            out.push_str(",\"op\":");
            write_str(out, op.as_str());
            out.push_str(",\"lit\":");
            literal(out, lit);
            out.push('}');
        }
        Cond::And(items) | Cond::Or(items) => {
            out.push_str(if matches!(c, Cond::And(_)) {
                "{\"and\":["
            } else {
                "{\"or\":["
            });
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                cond(out, item, table, catalog);
            }
            out.push_str("]}");
        }
        Cond::Exists(e) => {
            out.push_str(if e.negated {
                "{\"notExists\":{"
            } else {
                "{\"exists\":{"
            });
            link(out, &e.link, table, e.query.table, catalog);
            let _ = write!(
                out,
                ",\"flip\":{},\"permissions\":{},",
                e.flipped, e.permissions
            );
            write_key(out, "query");
            query(out, &e.query, catalog);
            out.push_str("}}");
        }
    }
}

fn literal(out: &mut String, lit: &Lit) {
    match lit {
        Lit::Null => out.push_str("null"),
        Lit::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Lit::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Lit::Float(f) => {
            // Keep the plane visible: an integral float never reaches here (it lowers to
            // Int), so a fractional rendering cannot collide with an Int.
            write_f64(out, *f);
        }
        Lit::Str(s) => write_str(out, s),
        Lit::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                literal(out, item);
            }
            out.push(']');
        }
    }
}

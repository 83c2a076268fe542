//! Which tables mutators may touch: the v1 owned set, or v2 per-table scope specs
//! (docs/design/authority.md, "Scope specs and the commit gate") compiled loudly — a
//! malformed or non-row-local predicate is an error and nothing is enabled.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value as Json;

use crate::ast::{Catalog, Cond};
use crate::error::{Error, ErrorCode};
use crate::store::UserCatalog;

/// One table's compiled scope spec.
#[derive(Clone, Debug)]
pub(crate) struct TableScope {
    pub table: usize,
    /// The exact footprint predicate, for the absent-read proof.
    pub footprint_where: Option<Cond>,
    pub writable: Writable,
}

/// Whether and where a table may be written.
#[derive(Clone, Debug)]
pub(crate) enum Writable {
    /// A context table: readable, never writable.
    None,
    /// Writable within `where_` (absent = anywhere); `join_key_cols` may not change.
    Predicate {
        where_: Option<Cond>,
        join_key_cols: Vec<usize>,
    },
}

/// The write plane's flavour.
#[derive(Clone, Debug)]
pub(crate) enum Mode {
    /// Table-granular: the owned set; the gate proves nothing and never deopts.
    V1 { owned: Vec<usize> },
    /// Scope specs: the commit gate.
    V2 { scopes: Vec<TableScope> },
}

fn bad(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidScope, msg)
}

/// Resolves the v1 owned set: every name must be an upstream table.
pub(crate) fn owned_tables(names: &[&str], catalog: &UserCatalog<'_>) -> Result<Vec<usize>, Error> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let (t, _) = catalog
            .table(name)
            .ok_or_else(|| bad(format!("owned table {name:?} is not in the upstream hello")))?;
        if !out.contains(&t) {
            out.push(t);
        }
    }
    Ok(out)
}

/// Compiles v2 scope specs; `owned`, when given, bounds the writable tables.
pub(crate) fn compile_scopes(
    specs: &Json,
    owned: Option<&[usize]>,
    catalog: &UserCatalog<'_>,
) -> Result<Vec<TableScope>, Error> {
    let items = specs
        .as_array()
        .ok_or_else(|| bad("scope specs must be a JSON array"))?;
    let mut out: Vec<TableScope> = Vec::with_capacity(items.len());
    for (i, spec) in items.iter().enumerate() {
        let o = spec
            .as_object()
            .ok_or_else(|| bad(format!("scope spec {i} must be an object")))?;
        let name = o
            .get("table")
            .and_then(Json::as_str)
            .ok_or_else(|| bad(format!("scope spec {i} needs a string `table`")))?;
        let (table, schema) = catalog.table(name).ok_or_else(|| {
            bad(format!(
                "scope spec table {name:?} is not in the upstream hello"
            ))
        })?;
        if out.iter().any(|s| s.table == table) {
            return Err(bad(format!("scope specs name table {name:?} twice")));
        }
        let compile = |json: &Json, what: &str| {
            Cond::parse_row_local(json, table, catalog)
                .map_err(|e| bad(format!("scope spec {name:?} `{what}`: {}", e.message())))
        };
        let footprint_where = match o.get("footprintWhere") {
            None | Some(Json::Null) => None,
            Some(w) => Some(compile(w, "footprintWhere")?),
        };
        let w = o
            .get("writable")
            .and_then(Json::as_object)
            .ok_or_else(|| bad(format!("scope spec {name:?} needs a `writable` object")))?;
        let writable = match w.get("kind").and_then(Json::as_str) {
            Some("none") => Writable::None,
            Some("predicate") => {
                let where_ = match w.get("where") {
                    None | Some(Json::Null) => None,
                    Some(c) => Some(compile(c, "writable.where")?),
                };
                let cols = w
                    .get("joinKeyCols")
                    .and_then(Json::as_array)
                    .ok_or_else(|| {
                        bad(format!(
                            "scope spec {name:?} needs `writable.joinKeyCols` (an array)"
                        ))
                    })?;
                let mut join_key_cols = Vec::with_capacity(cols.len());
                for c in cols {
                    let col = c.as_str().and_then(|c| schema.column(c)).ok_or_else(|| {
                        bad(format!(
                            "scope spec {name:?} joinKeyCols names an unknown column {c}"
                        ))
                    })?;
                    join_key_cols.push(col);
                }
                if let Some(owned) = owned {
                    if !owned.contains(&table) {
                        return Err(bad(format!(
                            "scope spec marks {name:?} writable but it is not an owned table \
                             (scopes may narrow the owned set, never widen it)"
                        )));
                    }
                }
                Writable::Predicate {
                    where_,
                    join_key_cols,
                }
            }
            _ => {
                return Err(bad(format!(
                    "scope spec {name:?} `writable.kind` must be \"none\" or \"predicate\""
                )))
            }
        };
        out.push(TableScope {
            table,
            footprint_where,
            writable,
        });
    }
    Ok(out)
}

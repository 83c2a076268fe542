//! The wire query AST, parsed and validated against the room's tables (docs/design/wire.md,
//! "The query AST"; what a room serves: docs/design/decisions.md, "Query surface").
//!
//! Parsing resolves every name to an index, completes each level's `orderBy` with the
//! primary key, compiles leaves to [`Pred`]s and folds literal-only comparisons. What
//! the room does not serve is refused in the published room's words
//! (`Query(Build(Unsupported(…)))`, or `ast: not a wire Ast: …` for a malformed AST).
//! Unknown object keys are ignored.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use tree::{Object, Tree as Json};

use crate::error::Error;
use crate::predicate::{fold_literals, Lit, Pred, SimpleOp};
use crate::schema::TableSchema;
use crate::value::{Cells, Value};

/// Subqueries may nest at most this deep (related and EXISTS levels together).
pub const MAX_DEPTH: usize = 64;

/// A query holds at most this many subqueries, at every depth (related and EXISTS
/// levels together). Each is a node the room maintains, and a filter's EXISTS gates are
/// evaluated for every row it reads: a one-megabyte OR of 3,000 EXISTS held the room for
/// five seconds per subscribe. The widest query an application writes holds a few dozen.
pub const MAX_SUBQUERIES: usize = 128;

/// One validated query level.
#[derive(Clone, Debug)]
pub struct Query {
    /// The table, as an index into the room's tables.
    pub table: usize,
    /// The filter; `None` keeps every row.
    pub filter: Option<Cond>,
    /// The completed sort: user columns then the missing primary-key columns ascending.
    pub order: Vec<(usize, bool)>,
    /// The paging lower bound.
    pub start: Option<Bound>,
    /// The row cap (per parent on a related level).
    pub limit: Option<u32>,
    /// Materialized child relationships, duplicates by alias resolved (last wins).
    pub related: Vec<Related>,
    /// The columns the wire `select` names, ascending and without repeats; `None` (no
    /// `select`) ships every column. A subscriber's rows of this level's table carry
    /// these plus the columns the query itself reads (see `projection`).
    pub select: Option<Vec<usize>>,
}

/// A `start` bound lowered to a full-width row (unnamed columns NULL).
#[derive(Clone, Debug)]
pub struct Bound {
    /// The bound row.
    pub row: Vec<Value>,
    /// Which columns the wire bound named (for the canonical form).
    pub named: Vec<usize>,
    /// `true` starts after the bound, `false` at it.
    pub exclusive: bool,
}

/// A parent→child correlation: `parent[i]` pairs with `child[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// Columns of the parent table.
    pub parent: Vec<usize>,
    /// Columns of the child table.
    pub child: Vec<usize>,
}

/// A `related` child relationship.
#[derive(Clone, Debug)]
pub struct Related {
    /// The relationship name.
    pub alias: String,
    /// The correlation.
    pub link: Link,
    /// The child level.
    pub query: Query,
}

/// A filter tree.
#[derive(Clone, Debug)]
pub enum Cond {
    /// A folded constant.
    Const(bool),
    /// `column <op> literal`.
    Simple {
        /// The column index.
        col: usize,
        /// The operator as written.
        op: SimpleOp,
        /// The literal as written (canonical form).
        lit: Lit,
        /// The compiled test.
        pred: Pred,
    },
    /// All must hold (empty = true).
    And(Vec<Cond>),
    /// Any must hold (empty = false).
    Or(Vec<Cond>),
    /// A correlated (NOT) EXISTS gate.
    Exists(Box<Exists>),
}

/// A `correlatedSubquery` condition.
#[derive(Clone, Debug)]
pub struct Exists {
    /// The correlation.
    pub link: Link,
    /// The child level (no `start`, no `related`; its `limit` is ignored: the witness cap
    /// replaces it).
    pub query: Query,
    /// `NOT EXISTS`.
    pub negated: bool,
    /// `flip: true` — result-identical, but every matching child is a witness.
    pub flipped: bool,
    /// `system: "permissions"` — gates, never ships witnesses.
    pub permissions: bool,
}

/// Looks up tables by name while parsing.
pub trait Catalog {
    /// The index and schema of a table a query may read.
    fn table(&self, name: &str) -> Option<(usize, &TableSchema)>;
    /// The schema at an index returned by [`Catalog::table`].
    fn schema(&self, index: usize) -> Option<&TableSchema>;
}

impl Query {
    /// Parses a wire AST from JSON text.
    pub fn parse(text: &str, catalog: &dyn Catalog) -> Result<Query, Error> {
        let json: Json<'_> = serde_json::from_str(text).map_err(Error::ast_shape)?;
        Query::from_tree(&json, catalog)
    }

    /// Parses a wire AST from a JSON value.
    pub fn from_json(json: &serde_json::Value, catalog: &dyn Catalog) -> Result<Query, Error> {
        Query::from_tree(&Json::of_value(json), catalog)
    }

    fn from_tree(json: &Json<'_>, catalog: &dyn Catalog) -> Result<Query, Error> {
        let parsed = Parser {
            catalog,
            depth: 0,
            levels: 0,
            drop_empty_groups: true,
        }
        .level(json, Level::Root);
        match parsed {
            // The published room resolves every table before it builds anything: an
            // unknown table anywhere is the refusal, whatever else is wrong.
            Err(e) if e.is_query_build() => Err(subquery_tables(json, catalog).err().unwrap_or(e)),
            other => other,
        }
    }

    /// Heap bytes the compiled conditions of every level hold: `IN` sets, LIKE
    /// matchers, text literals (what a query costs beyond its text; see
    /// [`crate::Room::materialization_cost`]).
    pub fn conditions_bytes(&self) -> usize {
        self.filter.as_ref().map_or(0, Cond::conditions_bytes)
            + self
                .related
                .iter()
                .map(|r| r.query.conditions_bytes())
                .sum::<usize>()
    }

    /// Whether any level of this query (or its EXISTS children) reads `table`.
    pub fn reads_table(&self, table: usize) -> bool {
        if self.table == table {
            return true;
        }
        let in_filter = self.filter.as_ref().is_some_and(|c| c.reads_table(table));
        in_filter || self.related.iter().any(|r| r.query.reads_table(table))
    }
}

impl Cond {
    /// Heap bytes its compiled predicates hold, EXISTS levels included.
    fn conditions_bytes(&self) -> usize {
        match self {
            Cond::Const(_) => 0,
            Cond::Simple { pred, .. } => pred.retained(),
            Cond::And(items) | Cond::Or(items) => items.iter().map(Cond::conditions_bytes).sum(),
            Cond::Exists(e) => e.query.conditions_bytes(),
        }
    }

    /// Parses a row-local wire `Condition` over `table` (simple / and / or only): the
    /// shape of scope-spec predicates. A `correlatedSubquery` is refused.
    pub fn parse_row_local(
        json: &serde_json::Value,
        table: usize,
        catalog: &dyn Catalog,
    ) -> Result<Cond, Error> {
        let schema = catalog.schema(table).ok_or_else(|| {
            Error::new(
                crate::error::ErrorCode::Internal,
                "internal: table index out of range",
            )
        })?;
        let cond = Parser {
            catalog,
            depth: 0,
            levels: 0,
            drop_empty_groups: false,
        }
        .cond(&Json::of_value(json), schema)?;
        if cond.has_exists() {
            return Err(Error::ast_shape(
                "a correlatedSubquery is not row-local; scope predicates may only use simple, and, or",
            ));
        }
        Ok(cond)
    }

    fn has_exists(&self) -> bool {
        match self {
            Cond::Exists(_) => true,
            Cond::And(cs) | Cond::Or(cs) => cs.iter().any(Cond::has_exists),
            _ => false,
        }
    }

    /// Evaluates a row-local condition on a full-width row (`None` if it holds an
    /// EXISTS, which needs other tables). An empty row evaluates only the structure.
    pub fn eval_row_local<R: Cells + ?Sized>(&self, row: &R) -> Option<bool> {
        Some(match self {
            Cond::Const(b) => *b,
            Cond::Simple { col, pred, .. } => match *col < row.width() {
                true => pred.eval_cell(row.cell(*col)),
                false => false,
            },
            Cond::And(cs) => {
                let mut all = true;
                for c in cs {
                    all &= c.eval_row_local(row)?;
                }
                all
            }
            Cond::Or(cs) => {
                let mut any = false;
                for c in cs {
                    any |= c.eval_row_local(row)?;
                }
                any
            }
            Cond::Exists(_) => return None,
        })
    }

    /// Every column a row-local condition reads.
    pub fn columns(&self, out: &mut Vec<usize>) {
        match self {
            Cond::Simple { col, .. } if !out.contains(col) => out.push(*col),
            Cond::And(cs) | Cond::Or(cs) => cs.iter().for_each(|c| c.columns(out)),
            _ => {}
        }
    }

    fn reads_table(&self, table: usize) -> bool {
        match self {
            Cond::And(cs) | Cond::Or(cs) => cs.iter().any(|c| c.reads_table(table)),
            Cond::Exists(e) => e.query.reads_table(table),
            _ => false,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Related,
    Exists,
}

struct Parser<'a> {
    catalog: &'a dyn Catalog,
    depth: usize,
    /// Levels read so far, the root included ([`MAX_SUBQUERIES`]).
    levels: usize,
    /// A query AST drops an empty `and` / `or` wherever it stands (the published room's
    /// reading); a row-local scope predicate keeps them (`and: []` holds, `or: []` not).
    drop_empty_groups: bool,
}

fn obj<'j, 'a>(json: &'j Json<'a>, what: &str) -> Result<&'j Object<'a>, Error> {
    json.as_object()
        .ok_or_else(|| Error::ast_shape(format_args!("{what} must be an object")))
}

fn is_set(v: Option<&Json<'_>>) -> bool {
    !matches!(v, None | Some(Json::Null) | Some(Json::Bool(false)))
}

impl Parser<'_> {
    fn level(&mut self, json: &Json<'_>, level: Level) -> Result<Query, Error> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::ast_shape(format_args!(
                "subqueries nest deeper than {MAX_DEPTH} levels"
            )));
        }
        self.levels += 1;
        if self.levels > MAX_SUBQUERIES + 1 {
            return Err(Error::ast_shape(format_args!(
                "a query holds more than {MAX_SUBQUERIES} subqueries (related and EXISTS levels together)"
            )));
        }
        let o = obj(json, "an AST")?;
        for key in ["aggregate", "groupBy", "having", "aggregatePrecomputed"] {
            if is_set(o.get(key)) {
                return Err(Error::query_unsupported(&alloc::format!(
                    "`{key}` is not served by rooms"
                )));
            }
        }
        let name = o
            .get("table")
            .and_then(Json::as_str)
            .ok_or_else(|| Error::ast_shape("an AST needs a string `table`"))?;
        let (table, schema) = self
            .catalog
            .table(name)
            .ok_or_else(|| Error::unknown_table(name))?;
        let filter = match o.get("where") {
            None | Some(Json::Null) => None,
            Some(w) => Some(self.cond(w, schema)?),
        };
        let mut order = Vec::new();
        match o.get("orderBy") {
            None | Some(Json::Null) => {}
            Some(Json::Array(items)) => {
                for item in items {
                    let pair = item.as_array().filter(|a| a.len() == 2);
                    let (field, dir) = match pair {
                        Some(a) => (a[0].as_str(), a[1].as_str()),
                        None => (None, None),
                    };
                    let (Some(field), Some(dir)) = (field, dir) else {
                        return Err(Error::ast_shape(
                            "`orderBy` entries must be [column, \"asc\" | \"desc\"]",
                        ));
                    };
                    let col = column(schema, field)?;
                    let desc = match dir {
                        "asc" => false,
                        "desc" => true,
                        _ => {
                            return Err(Error::ast_shape(format_args!(
                                "unknown sort direction {dir:?}"
                            )))
                        }
                    };
                    if !order.iter().any(|&(c, _)| c == col) {
                        order.push((col, desc));
                    }
                }
            }
            Some(_) => return Err(Error::ast_shape("`orderBy` must be an array")),
        }
        for &pk in schema.primary_key.iter() {
            if !order.iter().any(|&(c, _)| c == pk) {
                order.push((pk, false));
            }
        }
        let start = match o.get("start") {
            None | Some(Json::Null) => None,
            Some(b) => {
                if level == Level::Exists {
                    return Err(Error::query_unsupported(
                        "EXISTS subquery must not have `start`",
                    ));
                }
                Some(bound(b, schema)?)
            }
        };
        let limit = match o.get("limit") {
            None | Some(Json::Null) => None,
            Some(Json::Number(n)) => match n.as_u64() {
                Some(l) if l <= u32::MAX as u64 => Some(l as u32),
                _ => {
                    return Err(Error::ast_shape(
                        "`limit` must be a non-negative integer below 2^32",
                    ))
                }
            },
            Some(_) => return Err(Error::ast_shape("`limit` must be a number")),
        };
        let select = match o.get("select") {
            None | Some(Json::Null) => None,
            Some(Json::Array(items)) => {
                let mut cols = Vec::with_capacity(items.len());
                for item in items {
                    let name = item.as_str().ok_or_else(|| {
                        Error::ast_shape("`select` must be an array of column names")
                    })?;
                    cols.push(column(schema, name)?);
                }
                cols.sort_unstable();
                cols.dedup();
                Some(cols)
            }
            Some(_) => {
                return Err(Error::ast_shape(
                    "`select` must be an array of column names",
                ))
            }
        };
        let mut related: Vec<Related> = Vec::new();
        match o.get("related") {
            None | Some(Json::Null) => {}
            Some(Json::Array(items)) => {
                if level == Level::Exists && !items.is_empty() {
                    return Err(Error::query_unsupported(
                        "EXISTS subquery must not have nested `related`",
                    ));
                }
                let alias_of = |item: &Json<'_>| -> Option<String> {
                    Some(String::from(item.get("subquery")?.get("alias")?.as_str()?))
                };
                for (i, item) in items.iter().enumerate() {
                    // Duplicate aliases: the last one wins. A shadowed entry must be
                    // well formed, but it is never built (the published room's reading):
                    // a table, column or literal it gets wrong is no refusal.
                    let alias = alias_of(item);
                    let shadowed = alias.is_some()
                        && items[i + 1..].iter().any(|later| alias_of(later) == alias);
                    let depth = self.depth;
                    let r = match self.related(item, schema) {
                        Ok(r) => r,
                        Err(e) if shadowed && e.is_query_build() => {
                            // A refused level returns without unwinding its depth.
                            self.depth = depth;
                            self.check_shadowed(item, schema)?;
                            continue;
                        }
                        Err(e) => return Err(e),
                    };
                    related.retain(|x| x.alias != r.alias);
                    related.push(r);
                }
            }
            Some(_) => return Err(Error::ast_shape("`related` must be an array")),
        }
        self.depth -= 1;
        // The EXISTS witness cap replaces any user limit.
        let limit = if level == Level::Exists { None } else { limit };
        Ok(Query {
            table,
            filter,
            order,
            start,
            limit,
            related,
            select,
        })
    }

    /// What the published room still checks of a `related` entry a later one with the
    /// same alias replaces: every table it names, anywhere below, and the parent side
    /// of its correlation. The rest of it is never built.
    fn check_shadowed(&self, json: &Json<'_>, parent: &TableSchema) -> Result<(), Error> {
        subquery_tables(json, self.catalog)?;
        let fields = json
            .get("correlation")
            .and_then(|c| c.get("parentField"))
            .and_then(Json::as_array);
        for name in fields.into_iter().flatten().filter_map(Json::as_str) {
            column(parent, name)?;
        }
        Ok(())
    }

    fn related(&mut self, json: &Json<'_>, parent: &TableSchema) -> Result<Related, Error> {
        let o = obj(json, "a `related` entry")?;
        let sub = o
            .get("subquery")
            .ok_or_else(|| Error::ast_shape("a `related` entry needs a `subquery`"))?;
        let alias = match obj(sub, "a subquery")?.get("alias") {
            Some(Json::String(alias)) => &**alias,
            None | Some(Json::Null) => {
                return Err(Error::query_invalid(
                    "a related subquery must have an alias",
                ))
            }
            Some(_) => {
                return Err(Error::ast_shape(
                    "a `related` subquery's `alias` must be a string",
                ))
            }
        };
        let alias = String::from(alias);
        let query = self.level(sub, Level::Related)?;
        let link = self.link(o.get("correlation"), parent, query.table)?;
        Ok(Related { alias, link, query })
    }

    fn link(
        &self,
        json: Option<&Json<'_>>,
        parent: &TableSchema,
        child_table: usize,
    ) -> Result<Link, Error> {
        let o = obj(
            json.ok_or_else(|| Error::ast_shape("a subquery needs a `correlation`"))?,
            "`correlation`",
        )?;
        let fields = |key: &str, schema: &TableSchema| -> Result<Vec<usize>, Error> {
            let arr = o.get(key).and_then(Json::as_array).ok_or_else(|| {
                Error::ast_shape(format_args!(
                    "`correlation.{key}` must be an array of columns"
                ))
            })?;
            arr.iter()
                .map(|f| {
                    let name = f.as_str().ok_or_else(|| {
                        Error::ast_shape(format_args!("`correlation.{key}` must hold strings"))
                    })?;
                    column(schema, name)
                })
                .collect()
        };
        let child_schema = self.schema_of(child_table)?;
        let parent_cols = fields("parentField", parent)?;
        let child_cols = fields("childField", child_schema)?;
        if parent_cols.is_empty() || parent_cols.len() != child_cols.len() {
            return Err(Error::query_invalid(
                "relationship correlation parent/child fields must be non-empty and equal-length",
            ));
        }
        Ok(Link {
            parent: parent_cols,
            child: child_cols,
        })
    }

    fn schema_of(&self, table: usize) -> Result<&TableSchema, Error> {
        self.catalog.schema(table).ok_or_else(|| {
            Error::new(
                crate::error::ErrorCode::Internal,
                "internal: table index out of range",
            )
        })
    }

    fn cond(&mut self, json: &Json<'_>, schema: &TableSchema) -> Result<Cond, Error> {
        let o = obj(json, "a condition")?;
        let kind = o
            .get("type")
            .and_then(Json::as_str)
            .ok_or_else(|| Error::ast_shape("a condition needs a string `type`"))?;
        match kind {
            "simple" => simple(o, schema),
            "and" | "or" => {
                let items = o
                    .get("conditions")
                    .and_then(Json::as_array)
                    .ok_or_else(|| {
                        Error::ast_shape(format_args!("an `{kind}` condition needs `conditions`"))
                    })?;
                let mut out = Vec::with_capacity(items.len());
                for c in items {
                    let c = self.cond(c, schema)?;
                    // Splice same-op nesting; drop an empty group, as the published
                    // room does (`or(x, and[])` is `x`).
                    match (kind, c) {
                        (_, Cond::And(inner) | Cond::Or(inner))
                            if inner.is_empty() && self.drop_empty_groups => {}
                        ("and", Cond::And(inner)) | ("or", Cond::Or(inner)) => out.extend(inner),
                        (_, c) => out.push(c),
                    }
                }
                if out.is_empty() && self.drop_empty_groups {
                    // An empty group is no condition at all (`and: []` and `or: []` alike):
                    // an empty `and`, which holds, and which an enclosing group drops.
                    return Ok(Cond::And(Vec::new()));
                }
                if out.len() == 1 {
                    return Ok(out.pop().unwrap_or(Cond::Const(kind == "and")));
                }
                Ok(if kind == "and" {
                    Cond::And(out)
                } else {
                    Cond::Or(out)
                })
            }
            "correlatedSubquery" => {
                let negated = match o.get("op").and_then(Json::as_str) {
                    Some("EXISTS") => false,
                    Some("NOT EXISTS") => true,
                    Some(other) => {
                        return Err(Error::ast_shape(format_args!(
                            "unknown subquery operator {other:?}"
                        )))
                    }
                    None => {
                        return Err(Error::ast_shape(
                            "a correlatedSubquery needs `op` EXISTS or NOT EXISTS",
                        ))
                    }
                };
                if is_set(o.get("scalar")) {
                    return Err(Error::query_unsupported(
                        "`scalar: true` subqueries are not served by rooms",
                    ));
                }
                let flipped = is_set(o.get("flip"));
                if flipped && negated {
                    return Err(Error::query_unsupported(
                        "flipped NOT EXISTS is not lowered",
                    ));
                }
                let rel = obj(
                    o.get("related")
                        .ok_or_else(|| Error::ast_shape("a correlatedSubquery needs `related`"))?,
                    "`related`",
                )?;
                let permissions = match rel.get("system") {
                    None | Some(Json::Null) => false,
                    Some(Json::String(s)) => s == "permissions",
                    Some(_) => return Err(Error::ast_shape("`system` must be a string")),
                };
                let sub = rel
                    .get("subquery")
                    .ok_or_else(|| Error::ast_shape("a correlatedSubquery needs a `subquery`"))?;
                // A subquery limited to no rows joins nothing, as the published room
                // reads it: EXISTS never holds, NOT EXISTS always does (and its table
                // is no part of the footprint). The published room builds nothing of
                // it either, so only its shape and its table are checked here, not what
                // it means (an unknown column, a literal comparison of mismatched types).
                let none = sub
                    .get("limit")
                    .and_then(Json::as_f64)
                    .is_some_and(|l| l == 0.0);
                if none {
                    let unbuilt = self
                        .level(sub, Level::Exists)
                        .and_then(|q| self.link(rel.get("correlation"), schema, q.table));
                    return match unbuilt {
                        Err(e) if !e.is_build_refusal() => Err(e),
                        // `flip` is a planner hint: a flipped EXISTS means the same.
                        _ => Ok(Cond::Const(negated)),
                    };
                }
                let query = self.level(sub, Level::Exists)?;
                let link = self.link(rel.get("correlation"), schema, query.table)?;
                Ok(Cond::Exists(Box::new(Exists {
                    link,
                    query,
                    negated,
                    flipped,
                    permissions,
                })))
            }
            other => Err(Error::ast_shape(format_args!(
                "unknown condition type {other:?}"
            ))),
        }
    }
}

/// Refuses the first table a subquery below `json` names that `catalog` lacks.
fn subquery_tables(json: &Json<'_>, catalog: &dyn Catalog) -> Result<(), Error> {
    match json {
        Json::Object(o) => {
            if let Some(sub) = o.get("subquery") {
                if let Some(name) = sub.get("table").and_then(Json::as_str) {
                    if catalog.table(name).is_none() {
                        return Err(Error::unknown_table(name));
                    }
                }
            }
            o.values().try_for_each(|v| subquery_tables(v, catalog))
        }
        Json::Array(items) => items.iter().try_for_each(|v| subquery_tables(v, catalog)),
        _ => Ok(()),
    }
}

fn column(schema: &TableSchema, name: &str) -> Result<usize, Error> {
    schema
        .column(name)
        .ok_or_else(|| Error::unknown_column(name))
}

fn literal(json: &Json<'_>) -> Result<Lit, Error> {
    Ok(match json {
        Json::Null => Lit::Null,
        Json::Bool(b) => Lit::Bool(*b),
        Json::Number(n) => Lit::from_json_number(n)
            .ok_or_else(|| Error::ast_shape("a number literal is out of range"))?,
        Json::String(s) => Lit::Str((&**s).into()),
        Json::Array(items) => Lit::List(items.iter().map(literal).collect::<Result<_, _>>()?),
        Json::Object(_) => return Err(Error::ast_shape("an object literal")),
    })
}

enum Operand {
    Column(usize),
    Literal(Lit),
}

fn operand(json: Option<&Json<'_>>, schema: &TableSchema, side: &str) -> Result<Operand, Error> {
    let o = obj(
        json.ok_or_else(|| Error::ast_shape(format_args!("a simple condition needs `{side}`")))?,
        "an operand",
    )?;
    match o.get("type").and_then(Json::as_str) {
        Some("column") => {
            let name = o
                .get("name")
                .and_then(Json::as_str)
                .ok_or_else(|| Error::ast_shape("a column operand needs a string `name`"))?;
            Ok(Operand::Column(column(schema, name)?))
        }
        Some("literal") => Ok(Operand::Literal(literal(
            o.get("value").unwrap_or(&Json::Null),
        )?)),
        Some("static") => Err(Error::ast_shape(
            "`static` operands are not served by rooms",
        )),
        Some(other) => Err(Error::ast_shape(format_args!(
            "unknown operand type {other:?}"
        ))),
        None => Err(Error::ast_shape("an operand needs a string `type`")),
    }
}

fn simple(o: &Object<'_>, schema: &TableSchema) -> Result<Cond, Error> {
    let op_text = o
        .get("op")
        .and_then(Json::as_str)
        .ok_or_else(|| Error::ast_shape("a simple condition needs a string `op`"))?;
    let op = SimpleOp::parse(op_text)
        .ok_or_else(|| Error::ast_shape(format_args!("unknown operator {op_text:?}")))?;
    let left = operand(o.get("left"), schema, "left")?;
    let right = operand(o.get("right"), schema, "right")?;
    let Operand::Literal(lit) = right else {
        return Err(Error::query_invalid(
            "right-hand side of a condition must be a literal",
        ));
    };
    match left {
        Operand::Column(col) => {
            let pred = Pred::compile(op, lit.clone()).map_err(Error::query_invalid)?;
            Ok(Cond::Simple { col, op, lit, pred })
        }
        Operand::Literal(l) => Ok(Cond::Const(
            fold_literals(&l, op, lit).map_err(Error::query_invalid)?,
        )),
    }
}

fn bound(json: &Json<'_>, schema: &TableSchema) -> Result<Bound, Error> {
    let o = obj(json, "`start`")?;
    let exclusive = o
        .get("exclusive")
        .and_then(Json::as_bool)
        .ok_or_else(|| Error::ast_shape("`start` needs a boolean `exclusive`"))?;
    let cells = o
        .get("row")
        .and_then(Json::as_object)
        .ok_or_else(|| Error::ast_shape("`start` needs an object `row`"))?;
    let mut row = alloc::vec![Value::Null; schema.columns.len()];
    let mut named = Vec::with_capacity(cells.len());
    for (name, v) in cells.iter() {
        let col = column(schema, name)?;
        row[col] = cell_of(v).ok_or_else(|| match v {
            Json::Array(_) => Error::query_invalid(crate::predicate::NOT_SCALAR),
            _ => Error::ast_shape(format_args!("`start.row.{name}` must be a scalar")),
        })?;
        named.push(col);
    }
    named.sort_unstable();
    Ok(Bound {
        row,
        named,
        exclusive,
    })
}

/// A `start.row` cell: a scalar (objects and arrays refused).
fn cell_of(v: &Json<'_>) -> Option<Value> {
    Some(match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::num(n.as_f64()?),
        Json::String(s) => Value::str(s),
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
mod tree;

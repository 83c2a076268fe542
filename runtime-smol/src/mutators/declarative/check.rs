//! Checking a spec: [`compile`] resolves the references (every `$alias` names a row
//! read by an earlier step); [`validate`] checks table and column names against the
//! room's schema once it is known.

use rindle_room_core::TableSchema;

use super::error::{SchemaMismatch, SpecError};
use super::spec::{Cells, Check, Expr, MutatorSpec, Step, StepKind, WriteOp};

/// A compiled declarative mutator, ready to register.
#[derive(Clone, Debug)]
pub struct DeclarativeMutator {
    pub(super) name: String,
    pub(super) steps: Vec<Step>,
}

impl DeclarativeMutator {
    /// The mutator's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Calls `f` on every expression of a step.
fn step_exprs<'s>(step: &'s Step, f: &mut dyn FnMut(&'s Expr)) {
    fn cells<'s>(c: &'s Cells, f: &mut dyn FnMut(&'s Expr)) {
        match c {
            Cells::Columns(cols) => cols.iter().for_each(|(_, e)| f(e)),
            Cells::Whole(e) => f(e),
        }
    }
    match &step.kind {
        StepKind::Require { .. } => {}
        StepKind::Read { key, .. } => cells(key, f),
        StepKind::Check { check, .. } => match check {
            Check::Compare { left, right, .. } => {
                f(left);
                f(right);
            }
            Check::Null { value, .. } | Check::Row { value, .. } => f(value),
            Check::In { value, list } => {
                f(value);
                f(list);
            }
        },
        StepKind::Write { cells: c, .. } => cells(c, f),
    }
}

/// Calls `f` on every row reference in an expression.
fn row_refs<'e>(e: &'e Expr, f: &mut dyn FnMut(&'e str, Option<&'e str>)) {
    match e {
        Expr::Row { alias, column, .. } => f(alias, column.as_deref()),
        Expr::Array(items) => items.iter().for_each(|i| row_refs(i, f)),
        Expr::Object(members) => members.iter().for_each(|(_, v)| row_refs(v, f)),
        Expr::Lit(_) | Expr::Args { .. } | Expr::User => {}
    }
}

/// Compiles a spec into a [`Mutator`]. Checks what needs no schema: every `$alias` names
/// a row read by an earlier step. Errors name the step (`steps[3]: …`).
///
/// [`Mutator`]: crate::mutators::Mutator
pub fn compile(name: &str, spec: &MutatorSpec) -> Result<DeclarativeMutator, SpecError> {
    if name.is_empty() {
        return Err(SpecError::EmptyName);
    }
    let mut bound: Vec<&str> = Vec::new();
    for (step_index, step) in spec.steps.iter().enumerate() {
        let mut unbound = None;
        step_exprs(step, &mut |e| {
            row_refs(e, &mut |alias, _| {
                if unbound.is_none() && !bound.contains(&alias) {
                    unbound = Some(alias);
                }
            })
        });
        if let Some(alias) = unbound {
            return Err(SpecError::UnboundAlias {
                step: step_index,
                alias: alias.to_string(),
            });
        }
        if let StepKind::Read { alias, .. } = &step.kind {
            bound.push(alias);
        }
    }
    Ok(DeclarativeMutator {
        name: name.to_string(),
        steps: spec.steps.clone(),
    })
}

fn find_table<'t>(
    tables: &'t [TableSchema],
    name: &str,
) -> Result<&'t TableSchema, SchemaMismatch> {
    tables
        .iter()
        .find(|t| &*t.name == name)
        .ok_or_else(|| SchemaMismatch::UnknownTable {
            table: name.to_string(),
            tables: tables.iter().map(|t| t.name.to_string()).collect(),
        })
}

fn column_names(t: &TableSchema) -> Vec<String> {
    t.columns.iter().map(|c| c.to_string()).collect()
}

fn pk_names(t: &TableSchema) -> Vec<&str> {
    t.primary_key.iter().map(|&i| &*t.columns[i]).collect()
}

/// Checks a spec against the room's tables (the upstream hello's): every table exists,
/// every column named in a `key`, a `row` or a `$alias.column` exists, keys name exactly
/// the primary key, `insert` / `upsert` rows name every column, `update` rows name the
/// primary key. Rows given as a whole (`row = "$args"`) are checked when they run.
pub fn validate(spec: &MutatorSpec, tables: &[TableSchema]) -> Result<(), SpecError> {
    compile("validate", spec)?;
    let mut aliases: Vec<(&str, &TableSchema)> = Vec::new();
    for (i, step) in spec.steps.iter().enumerate() {
        let at = |mismatch| SpecError::Schema {
            step: i,
            step_kind: step.kind(),
            mismatch,
        };
        let mut err = None;
        step_exprs(step, &mut |e| {
            row_refs(e, &mut |alias, column| {
                let Some(column) = column else { return };
                let Some((_, t)) = aliases.iter().rev().find(|(a, _)| *a == alias) else {
                    return;
                };
                if err.is_none() && t.column(column).is_none() {
                    err = Some(SchemaMismatch::UnknownColumn {
                        place: format!("${alias}.{column}"),
                        table: t.name.to_string(),
                        column: column.to_string(),
                        columns: column_names(t),
                    });
                }
            })
        });
        if let Some(e) = err {
            return Err(at(e));
        }
        match &step.kind {
            StepKind::Read { table, key, alias } => {
                let t = find_table(tables, table).map_err(at)?;
                check_cells(t, key, "key", Coverage::ExactlyPk).map_err(at)?;
                aliases.push((alias, t));
            }
            StepKind::Write { op, table, cells } => {
                let t = find_table(tables, table).map_err(at)?;
                let coverage = match op {
                    WriteOp::Insert | WriteOp::Upsert => Coverage::Every,
                    WriteOp::Update => Coverage::Pk,
                    WriteOp::Delete => Coverage::ExactlyPk,
                };
                check_cells(t, cells, op.cells_key(), coverage).map_err(at)?;
            }
            StepKind::Require { .. } | StepKind::Check { .. } => {}
        }
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Coverage {
    /// Every column (insert, upsert).
    Every,
    /// At least the primary key (update).
    Pk,
    /// The primary key and nothing else (read, delete).
    ExactlyPk,
}

fn check_cells(
    t: &TableSchema,
    cells: &Cells,
    what: &'static str,
    cov: Coverage,
) -> Result<(), SchemaMismatch> {
    let Cells::Columns(cols) = cells else {
        return Ok(());
    };
    let pk = pk_names(t);
    for (c, _) in cols {
        if t.column(c).is_none() {
            return Err(SchemaMismatch::UnknownColumn {
                place: format!("{what}.{c}"),
                table: t.name.to_string(),
                column: c.clone(),
                columns: column_names(t),
            });
        }
        if cov == Coverage::ExactlyPk && !pk.contains(&c.as_str()) {
            return Err(SchemaMismatch::NotInPrimaryKey {
                place: format!("{what}.{c}"),
                table: t.name.to_string(),
                primary_key: pk.iter().map(|c| c.to_string()).collect(),
            });
        }
    }
    let needed: Vec<&str> = match cov {
        Coverage::Every => t.columns.iter().map(|c| &**c).collect(),
        Coverage::Pk | Coverage::ExactlyPk => pk,
    };
    let missing: Vec<&str> = needed
        .into_iter()
        .filter(|n| !cols.iter().any(|(c, _)| c == n))
        .collect();
    if !missing.is_empty() {
        return Err(SchemaMismatch::MissingColumns {
            place: what,
            table: t.name.to_string(),
            missing: missing.iter().map(|m| m.to_string()).collect(),
            full_row: cov == Coverage::Every,
        });
    }
    Ok(())
}

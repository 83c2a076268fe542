//! Running a compiled mutator: evaluating value expressions against the args, the
//! user and the rows read so far, testing checks, and issuing the keyed writes.

use std::cmp::Ordering;

use rindle_room_core::value::compare;
use rindle_room_core::{KeyedRow, MutationTx, Value as Cell};
use serde_json::{Map, Number, Value as Json};

use super::super::{Mutator, MutatorCtx, MutatorError};
use super::a;
use super::check::DeclarativeMutator;
use super::spec::{ArgPath, Cells, Check, CompareOp, Expr, Seg, StepKind, WriteOp};
use super::MAX_SAFE_INTEGER;

/// A JSON value as a wire cell: objects and arrays become their JSON text, as a json
/// column holds them (docs/design/wire.md, "Mutation envelope").
fn json_to_cell(v: &Json) -> Cell {
    match v {
        Json::Null => Cell::Null,
        Json::Bool(b) => Cell::Bool(*b),
        Json::Number(n) => Cell::num(n.as_f64().unwrap_or(f64::NAN)),
        Json::String(s) => Cell::str(s),
        Json::Array(_) | Json::Object(_) => Cell::string(v.to_string()),
    }
}

/// A wire cell as JSON (integral numbers as JSON integers).
fn cell_to_json(c: &Cell) -> Json {
    match c {
        Cell::Null => Json::Null,
        Cell::Bool(b) => Json::Bool(*b),
        Cell::Num(f) => {
            if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 {
                Json::from(*f as i64)
            } else {
                Number::from_f64(*f).map_or(Json::Null, Json::Number)
            }
        }
        Cell::Str(s) => Json::String(s.to_string()),
    }
}

/// A keyed row from a JSON object (`what` names it in errors).
pub(crate) fn object_to_row(
    v: &Json,
    what: impl FnOnce() -> String,
) -> Result<KeyedRow, MutatorError> {
    match v {
        Json::Object(map) => Ok(map
            .iter()
            .map(|(k, v)| (k.clone(), json_to_cell(v)))
            .collect()),
        other => Err(MutatorError::Rejected(format!(
            "{} must be an object of column values, got {}",
            what(),
            describe_json(other)
        ))),
    }
}

/// `a number`, `a string`, … for messages.
pub(crate) fn describe_json(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "an array",
        Json::Object(_) => "an object",
    }
}

fn rejected(msg: String) -> MutatorError {
    MutatorError::Rejected(msg)
}

/// Looks a path up in the args.
fn lookup<'a>(args: &'a Json, path: &ArgPath) -> Option<&'a Json> {
    let mut cur = args;
    for seg in &path.segs {
        cur = match (seg, cur) {
            (Seg::Name(n), Json::Object(map)) => map.get(n)?,
            (Seg::Name(n), Json::Array(items)) => items.get(n.parse::<usize>().ok()?)?,
            (Seg::Index(i), Json::Array(items)) => items.get(*i)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// A row bound by a `read` step.
struct Bound {
    alias: String,
    table: String,
    row: Option<KeyedRow>,
}

/// The evaluation scope of one run.
struct Scope<'a> {
    args: &'a Json,
    user: &'a str,
    rows: Vec<Bound>,
}

impl Scope<'_> {
    fn eval(&self, e: &Expr) -> Result<Json, MutatorError> {
        match e {
            Expr::Lit(v) => Ok(v.clone()),
            Expr::User => Ok(Json::String(self.user.to_string())),
            Expr::Args { path, optional } => match lookup(self.args, path) {
                Some(v) => Ok(v.clone()),
                None if *optional => Ok(Json::Null),
                None => Err(rejected(format!("missing argument `{path}`"))),
            },
            Expr::Row {
                alias,
                column,
                optional,
            } => {
                let bound = self.bound(alias)?;
                let Some(row) = &bound.row else {
                    if *optional {
                        return Ok(Json::Null);
                    }
                    return Err(rejected(format!(
                        "`{e}`: no {:?} row was found for `{alias}`",
                        bound.table
                    )));
                };
                match column {
                    None => Ok(Json::Object(
                        row.iter()
                            .map(|(k, v)| (k.clone(), cell_to_json(v)))
                            .collect(),
                    )),
                    Some(c) => row
                        .iter()
                        .find(|(k, _)| k == c)
                        .map(|(_, v)| cell_to_json(v))
                        .ok_or_else(|| {
                            rejected(format!(
                                "`{e}`: table {:?} has no column {c:?}",
                                bound.table
                            ))
                        }),
                }
            }
            Expr::Array(items) => Ok(Json::Array(
                items
                    .iter()
                    .map(|i| self.eval(i))
                    .collect::<Result<_, _>>()?,
            )),
            Expr::Object(members) => {
                let mut map = Map::new();
                for (k, v) in members {
                    map.insert(k.clone(), self.eval(v)?);
                }
                Ok(Json::Object(map))
            }
        }
    }

    fn bound(&self, alias: &str) -> Result<&Bound, MutatorError> {
        self.rows
            .iter()
            .rev()
            .find(|b| b.alias == alias)
            .ok_or_else(|| rejected(format!("`${alias}` is not a row read by an earlier step")))
    }

    fn cells(&self, cells: &Cells, what: &str) -> Result<KeyedRow, MutatorError> {
        match cells {
            Cells::Columns(cols) => cols
                .iter()
                .map(|(c, e)| Ok((c.clone(), json_to_cell(&self.eval(e)?))))
                .collect(),
            Cells::Whole(e) => object_to_row(&self.eval(e)?, || format!("`{what}` ({e})")),
        }
    }

    /// Whether a check holds.
    fn check(&self, check: &Check) -> Result<bool, MutatorError> {
        Ok(match check {
            Check::Compare { op, left, right } => {
                let l = json_to_cell(&self.eval(left)?);
                let r = json_to_cell(&self.eval(right)?);
                let ord = compare(&l, &r);
                let comparable = matches!(
                    (&l, &r),
                    (Cell::Num(_), Cell::Num(_)) | (Cell::Str(_), Cell::Str(_))
                );
                match op {
                    CompareOp::Eq => ord == Ordering::Equal,
                    CompareOp::Ne => ord != Ordering::Equal,
                    CompareOp::Lt => comparable && ord == Ordering::Less,
                    CompareOp::Le => comparable && ord != Ordering::Greater,
                    CompareOp::Gt => comparable && ord == Ordering::Greater,
                    CompareOp::Ge => comparable && ord != Ordering::Less,
                }
            }
            Check::Null { want_null, value } => self.eval(value)?.is_null() == *want_null,
            Check::Row {
                want_present,
                value,
            } => {
                let Expr::Row { alias, .. } = value else {
                    return Ok(false);
                };
                self.bound(alias)?.row.is_some() == *want_present
            }
            Check::In { value, list } => {
                let v = json_to_cell(&self.eval(value)?);
                match self.eval(list)? {
                    Json::Array(items) => items.iter().any(|i| json_to_cell(i) == v),
                    other => {
                        return Err(rejected(format!(
                            "an `in` check needs a list, but `{list}` is {}",
                            describe_json(&other)
                        )))
                    }
                }
            }
        })
    }
}

impl Mutator for DeclarativeMutator {
    fn run(
        &self,
        tx: &mut MutationTx<'_>,
        args: &Json,
        ctx: &MutatorCtx,
    ) -> Result<(), MutatorError> {
        let mut scope = Scope {
            args,
            user: &ctx.user,
            rows: Vec::new(),
        };
        for step in &self.steps {
            match &step.kind {
                StepKind::Require {
                    path,
                    types,
                    reason,
                } => {
                    let fail = |msg: String| rejected(reason.clone().unwrap_or(msg));
                    let v = lookup(args, path)
                        .ok_or_else(|| fail(format!("missing argument `{path}`")))?;
                    if !types.is_empty() && !types.iter().any(|t| t.accepts(v)) {
                        let want = types
                            .iter()
                            .map(|t| t.name())
                            .collect::<Vec<_>>()
                            .join(" or ");
                        return Err(fail(format!(
                            "argument `{path}` must be {} {want}, got {}",
                            a(&want),
                            describe_json(v)
                        )));
                    }
                }
                StepKind::Read { table, key, alias } => {
                    let key = scope.cells(key, "key")?;
                    let row = tx.row(table, &key)?;
                    scope.rows.push(Bound {
                        alias: alias.clone(),
                        table: table.clone(),
                        row,
                    });
                }
                StepKind::Check { check, reason } => {
                    if !scope.check(check)? {
                        return Err(rejected(reason.clone()));
                    }
                }
                StepKind::Write { op, table, cells } => {
                    let row = scope.cells(cells, op.cells_key())?;
                    match op {
                        WriteOp::Insert => tx.insert(table, &row)?,
                        WriteOp::Update => tx.update(table, &row)?,
                        WriteOp::Upsert => tx.upsert(table, &row)?,
                        WriteOp::Delete => tx.delete(table, &row)?,
                    }
                }
            }
        }
        Ok(())
    }
}

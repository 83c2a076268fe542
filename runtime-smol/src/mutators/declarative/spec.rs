//! The parsed form of a declarative mutator: [`MutatorSpec`], its [`Step`]s and the
//! value expressions they hold. Parsing lives in `parse.rs` and `values.rs`, the
//! checks in `check.rs`, running in `evaluate.rs`.

use std::fmt;

use serde::Deserialize;
use serde_json::Value as Json;

use super::error::Malformed;

/// The TOML shape of a spec before its steps are parsed (`parse.rs` turns it into a
/// [`MutatorSpec`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpec {
    pub(super) steps: Vec<toml::Table>,
}

/// One declarative mutator: the `steps` of a `[mutators.<name>]` table, run in order.
///
/// Parses from TOML (unknown keys are refused, in the table and in every step); see the
/// [module docs](super) and `docs/mutators.md` for the format.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawSpec")]
pub struct MutatorSpec {
    /// The steps, in order. The first that fails rejects the mutation.
    pub steps: Vec<Step>,
}

impl MutatorSpec {
    /// The tables the steps write (insert, update, upsert, delete), in step order,
    /// without repeats.
    pub fn written_tables(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for step in &self.steps {
            if let StepKind::Write { table, .. } = &step.kind {
                if !out.contains(&table.as_str()) {
                    out.push(table);
                }
            }
        }
        out
    }

    /// The tables the steps read, in step order, without repeats.
    pub fn read_tables(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for step in &self.steps {
            if let StepKind::Read { table, .. } = &step.kind {
                if !out.contains(&table.as_str()) {
                    out.push(table);
                }
            }
        }
        out
    }
}

/// One step of a [`MutatorSpec`] (an inline table of its `steps` array).
#[derive(Clone, Debug)]
pub struct Step {
    pub(super) kind: StepKind,
}

impl Step {
    /// The key that selects this step's kind: `require`, `read`, `check`, `insert`,
    /// `update`, `upsert` or `delete`.
    pub fn kind(&self) -> &'static str {
        match &self.kind {
            StepKind::Require { .. } => "require",
            StepKind::Read { .. } => "read",
            StepKind::Check { .. } => "check",
            StepKind::Write { op, .. } => op.name(),
        }
    }
}

#[derive(Clone, Debug)]
pub(super) enum StepKind {
    /// `{ require = "args.path", type = "number" | [...], reason = "..." }`
    Require {
        path: ArgPath,
        types: Vec<ArgType>,
        reason: Option<String>,
    },
    /// `{ read = "table", key = {...} | "$expr", as = "alias" }`
    Read {
        table: String,
        key: Cells,
        alias: String,
    },
    /// `{ check = "op", left/right | value [list], reason = "..." }`
    Check { check: Check, reason: String },
    /// `{ insert|update|upsert = "table", row = ... }` / `{ delete = "table", key = ... }`
    Write {
        op: WriteOp,
        table: String,
        cells: Cells,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WriteOp {
    Insert,
    Update,
    Upsert,
    Delete,
}

impl WriteOp {
    pub(super) fn name(self) -> &'static str {
        match self {
            WriteOp::Insert => "insert",
            WriteOp::Update => "update",
            WriteOp::Upsert => "upsert",
            WriteOp::Delete => "delete",
        }
    }

    /// The key naming the cells: `key` for delete, `row` for the others.
    pub(super) fn cells_key(self) -> &'static str {
        if self == WriteOp::Delete {
            "key"
        } else {
            "row"
        }
    }
}

/// The type names a `require` step accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ArgType {
    Number,
    Integer,
    String,
    Boolean,
    Null,
    Object,
    Array,
}

impl ArgType {
    pub(super) const NAMES: &'static str = "number, integer, string, boolean, null, object, array";

    pub(super) fn parse(s: &str) -> Result<ArgType, Malformed> {
        Ok(match s {
            "number" => ArgType::Number,
            "integer" => ArgType::Integer,
            "string" => ArgType::String,
            "boolean" => ArgType::Boolean,
            "null" => ArgType::Null,
            "object" => ArgType::Object,
            "array" => ArgType::Array,
            other => {
                return Err(Malformed(format!(
                    "`type` {other:?} is not a type; use one of {}",
                    ArgType::NAMES
                )))
            }
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            ArgType::Number => "number",
            ArgType::Integer => "integer",
            ArgType::String => "string",
            ArgType::Boolean => "boolean",
            ArgType::Null => "null",
            ArgType::Object => "object",
            ArgType::Array => "array",
        }
    }

    pub(super) fn accepts(self, v: &Json) -> bool {
        match self {
            ArgType::Number => v.is_number(),
            ArgType::Integer => v
                .as_f64()
                .is_some_and(|f| f.is_finite() && f.fract() == 0.0),
            ArgType::String => v.is_string(),
            ArgType::Boolean => v.is_boolean(),
            ArgType::Null => v.is_null(),
            ArgType::Object => v.is_object(),
            ArgType::Array => v.is_array(),
        }
    }
}

/// A check and its operands.
#[derive(Clone, Debug)]
pub(super) enum Check {
    /// `eq`, `ne`, `lt`, `le`, `gt`, `ge`: `left` and `right`.
    Compare {
        op: CompareOp,
        left: Expr,
        right: Expr,
    },
    /// `is_null` / `not_null`: `value`.
    Null { want_null: bool, value: Expr },
    /// `present` / `absent`: `value` is a bare `$alias`.
    Row { want_present: bool, value: Expr },
    /// `in`: `value` and `list`.
    In { value: Expr, list: Expr },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Column cells of a read key or a written row: an inline table of column → value, or
/// one value that must evaluate to an object.
#[derive(Clone, Debug)]
pub(super) enum Cells {
    Columns(Vec<(String, Expr)>),
    Whole(Expr),
}

/// A value expression.
#[derive(Clone, Debug)]
pub(super) enum Expr {
    /// A literal (never contains a reference).
    Lit(Json),
    /// `$args…`.
    Args { path: ArgPath, optional: bool },
    /// `$user`.
    User,
    /// `$alias` or `$alias.column`.
    Row {
        alias: String,
        column: Option<String>,
        optional: bool,
    },
    /// An array whose items are values.
    Array(Vec<Expr>),
    /// An object whose members are values.
    Object(Vec<(String, Expr)>),
}

/// A path into the args: `args`, `args.a.b`, `args.list[0]`, `args.list.0`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct ArgPath {
    pub(super) segs: Vec<Seg>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Seg {
    /// `.name`: an object member, or an array index when all digits.
    Name(String),
    /// `[n]`: an array index.
    Index(usize),
}

impl fmt::Display for ArgPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("args")?;
        for seg in &self.segs {
            match seg {
                Seg::Name(n) => write!(f, ".{n}")?,
                Seg::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Lit(v) => write!(f, "{v}"),
            Expr::Args { path, optional } => {
                write!(f, "${path}{}", if *optional { "?" } else { "" })
            }
            Expr::User => f.write_str("$user"),
            Expr::Row {
                alias,
                column,
                optional,
            } => {
                write!(f, "${alias}")?;
                if let Some(c) = column {
                    write!(f, ".{c}")?;
                }
                f.write_str(if *optional { "?" } else { "" })
            }
            Expr::Array(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            Expr::Object(members) => {
                f.write_str("{")?;
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k} = {v}")?;
                }
                f.write_str("}")
            }
        }
    }
}

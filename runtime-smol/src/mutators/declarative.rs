//! Declarative mutators from the config file: `[mutators.<name>]` tables whose `steps`
//! read rows, check conditions against the args and the authenticated user, and write
//! rows with values taken from the args, the user, rows read earlier and literals.
//!
//! ```toml
//! [mutators.addNote]
//! steps = [
//!   { require = "args.id", type = "integer" },
//!   { read = "note", key = { id = "$args.id" }, as = "existing" },
//!   { check = "absent", value = "$existing", reason = "note already exists" },
//!   { check = "eq", left = "$args.owner", right = "$user", reason = "you can only add your own notes" },
//!   { insert = "note", row = { id = "$args.id", body = "$args.body", owner = "$user" } },
//! ]
//! ```
//!
//! The format is documented in full in `docs/mutators.md`. In short:
//!
//! - **Values.** A string starting with `$` is a reference: `$args` / `$args.a.b` /
//!   `$args.list[0]` (paths into the JSON args), `$user` (the authenticated subject),
//!   `$<alias>` / `$<alias>.<column>` (a row read earlier), `$null`. A trailing `?`
//!   (`$args.note?`) makes a missing value `null` instead of a rejection. `$$` starts a
//!   literal string beginning with `$`. Anything else is a literal; arrays and inline
//!   tables are JSON arrays and objects whose members are values too.
//! - **Steps.** `require` (an argument exists, optionally with a `type`), `read` (one row
//!   by primary key, bound to an alias), `check` (`eq`, `ne`, `lt`, `le`, `gt`, `ge`,
//!   `in`, `is_null`, `not_null`, `present`, `absent`), and the writes `insert`, `update`,
//!   `upsert`, `delete` (the keyed [`MutationTx`] methods).
//! - **Failures.** A failed check rejects with its `reason`; a missing or mistyped
//!   argument rejects with a message naming it; a write the room refuses rejects with the
//!   room's message. Nothing is applied on a rejection.
//!
//! A spec is checked in three stages: its shape when the TOML is parsed
//! ([`MutatorSpec`]'s `Deserialize`), its references when it is compiled ([`compile`]:
//! every `$alias` names a row read by an earlier step), and its table and column names
//! against the room's schema with [`validate`]. The schema arrives with the upstream
//! hello, after the config is loaded, so the server calls [`validate`] once the hello is
//! known (before it enables writes); a spec that was never validated still fails safely,
//! because the room refuses unknown tables and columns at run time.
//!
//! Declarative mutators are deterministic: they read nothing but the transaction, the
//! args and the user — no clock, no randomness — so journal replay re-runs them exactly.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use rindle_room_core::value::compare;
use rindle_room_core::{KeyedRow, MutationTx, TableSchema, Value as Cell};
use serde::Deserialize;
use serde_json::{Map, Number, Value as Json};

use super::{Mutator, MutatorCtx, MutatorError};

/// The largest integer a wire number (an IEEE-754 double) holds exactly: 2^53 − 1.
const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// The step kinds, by the key that selects them.
const STEP_KINDS: [&str; 7] = [
    "require", "read", "check", "insert", "update", "upsert", "delete",
];

/// One declarative mutator: the `steps` of a `[mutators.<name>]` table, run in order.
///
/// Parses from TOML (unknown keys are refused, in the table and in every step); see the
/// [module docs](self) and `docs/mutators.md` for the format.
#[derive(Clone, Debug, Deserialize)]
#[serde(try_from = "RawSpec")]
pub struct MutatorSpec {
    /// The steps, in order. The first that fails rejects the mutation.
    pub steps: Vec<Step>,
}

/// The TOML shape of a spec before its steps are parsed.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    steps: Vec<toml::Table>,
}

impl TryFrom<RawSpec> for MutatorSpec {
    type Error = String;

    fn try_from(raw: RawSpec) -> Result<MutatorSpec, String> {
        let steps = raw
            .steps
            .iter()
            .enumerate()
            .map(|(i, t)| Step::parse(t).map_err(|e| format!("steps[{i}]: {e}")))
            .collect::<Result<Vec<Step>, String>>()?;
        Ok(MutatorSpec { steps })
    }
}

impl MutatorSpec {
    /// Parses one spec from TOML text holding its table's body (`steps = [...]`).
    pub fn from_toml_str(text: &str) -> Result<MutatorSpec, String> {
        toml::from_str(text).map_err(|e| e.message().to_string())
    }

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
    kind: StepKind,
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
enum StepKind {
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
enum WriteOp {
    Insert,
    Update,
    Upsert,
    Delete,
}

impl WriteOp {
    fn name(self) -> &'static str {
        match self {
            WriteOp::Insert => "insert",
            WriteOp::Update => "update",
            WriteOp::Upsert => "upsert",
            WriteOp::Delete => "delete",
        }
    }

    /// The key naming the cells: `key` for delete, `row` for the others.
    fn cells_key(self) -> &'static str {
        if self == WriteOp::Delete {
            "key"
        } else {
            "row"
        }
    }
}

/// The type names a `require` step accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ArgType {
    Number,
    Integer,
    String,
    Boolean,
    Null,
    Object,
    Array,
}

impl ArgType {
    const NAMES: &'static str = "number, integer, string, boolean, null, object, array";

    fn parse(s: &str) -> Result<ArgType, String> {
        Ok(match s {
            "number" => ArgType::Number,
            "integer" => ArgType::Integer,
            "string" => ArgType::String,
            "boolean" => ArgType::Boolean,
            "null" => ArgType::Null,
            "object" => ArgType::Object,
            "array" => ArgType::Array,
            other => {
                return Err(format!(
                    "`type` {other:?} is not a type; use one of {}",
                    ArgType::NAMES
                ))
            }
        })
    }

    fn name(self) -> &'static str {
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

    fn accepts(self, v: &Json) -> bool {
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
enum Check {
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
enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

const CHECK_NAMES: &str = "eq, ne, lt, le, gt, ge, in, is_null, not_null, present, absent";

/// Column cells of a read key or a written row: an inline table of column → value, or
/// one value that must evaluate to an object.
#[derive(Clone, Debug)]
enum Cells {
    Columns(Vec<(String, Expr)>),
    Whole(Expr),
}

/// A value expression.
#[derive(Clone, Debug)]
enum Expr {
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
struct ArgPath {
    segs: Vec<Seg>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Seg {
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

// ---------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------

fn describe_toml(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a datetime",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

/// The indefinite article for `word`.
fn a(word: &str) -> &'static str {
    if word.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses an args path written `args…` (the `$` already stripped).
fn parse_arg_path(text: &str) -> Result<ArgPath, String> {
    let Some(mut rest) = text.strip_prefix("args") else {
        return Err(format!(
            "{text:?} is not an args path (write `args.<name>`)"
        ));
    };
    let mut segs = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = &r[..end];
            if name.is_empty() {
                return Err(format!("`${text}` has an empty path segment"));
            }
            segs.push(Seg::Name(name.to_string()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return Err(format!("`${text}` has an unclosed `[`"));
            };
            let index = r[..end].parse::<usize>().map_err(|_| {
                format!(
                    "`${text}`: `[{}]` is not an array index (write `[0]`, `[1]`, …)",
                    &r[..end]
                )
            })?;
            segs.push(Seg::Index(index));
            rest = &r[end + 1..];
        } else {
            return Err(format!(
                "`${text}` is not a reference: after `$args` write `.name` or `[index]`"
            ));
        }
    }
    Ok(ArgPath { segs })
}

/// Parses a string value: a reference when it starts with `$`, else a literal.
fn parse_str_expr(s: &str) -> Result<Expr, String> {
    let Some(body) = s.strip_prefix('$') else {
        return Ok(Expr::Lit(Json::String(s.to_string())));
    };
    if body.starts_with('$') {
        return Ok(Expr::Lit(Json::String(body.to_string())));
    }
    let (body, optional) = match body.strip_suffix('?') {
        Some(b) => (b, true),
        None => (body, false),
    };
    let hint = "references are `$args.<path>`, `$user`, `$null` or `$<alias>.<column>` \
                (write `$$` for a literal string starting with `$`)";
    match body {
        "null" => return Ok(Expr::Lit(Json::Null)),
        "user" => return Ok(Expr::User),
        _ => {}
    }
    if body == "args" || body.starts_with("args.") || body.starts_with("args[") {
        return Ok(Expr::Args {
            path: parse_arg_path(body)?,
            optional,
        });
    }
    let (alias, column) = match body.split_once('.') {
        Some((a, c)) => (a, Some(c)),
        None => (body, None),
    };
    if !is_ident(alias) {
        return Err(format!("{s:?} is not a valid reference; {hint}"));
    }
    if column == Some("") {
        return Err(format!("{s:?} has an empty column name; {hint}"));
    }
    Ok(Expr::Row {
        alias: alias.to_string(),
        column: column.map(str::to_string),
        optional,
    })
}

/// Parses a value: strings may be references; arrays and tables hold values.
fn parse_expr(v: &toml::Value) -> Result<Expr, String> {
    match v {
        toml::Value::String(s) => parse_str_expr(s),
        toml::Value::Integer(i) => {
            if i.unsigned_abs() > MAX_SAFE_INTEGER as u64 {
                Err(format!(
                    "the integer {i} does not fit a wire number exactly (at most ±2^53 − 1); \
                     write it as a string"
                ))
            } else {
                Ok(Expr::Lit(Json::from(*i)))
            }
        }
        toml::Value::Float(f) => Number::from_f64(*f)
            .map(|n| Expr::Lit(Json::Number(n)))
            .ok_or_else(|| format!("{f} is not a wire number (no NaN or infinity)")),
        toml::Value::Boolean(b) => Ok(Expr::Lit(Json::Bool(*b))),
        toml::Value::Datetime(d) => Err(format!(
            "the TOML datetime {d} is not a wire value; quote it to store it as a string"
        )),
        toml::Value::Array(items) => {
            let items = items
                .iter()
                .map(parse_expr)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(simplify(Expr::Array(items)))
        }
        toml::Value::Table(t) => {
            let members = t
                .iter()
                .map(|(k, v)| parse_expr(v).map(|e| (k.clone(), e)))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(simplify(Expr::Object(members)))
        }
    }
}

/// Folds an array or object of literals into one literal.
fn simplify(e: Expr) -> Expr {
    fn lit(e: &Expr) -> Option<Json> {
        match e {
            Expr::Lit(v) => Some(v.clone()),
            _ => None,
        }
    }
    match e {
        Expr::Array(items) => match items.iter().map(lit).collect::<Option<Vec<Json>>>() {
            Some(values) => Expr::Lit(Json::Array(values)),
            None => Expr::Array(items),
        },
        Expr::Object(members) => match members
            .iter()
            .map(|(k, v)| lit(v).map(|v| (k.clone(), v)))
            .collect::<Option<Map<String, Json>>>()
        {
            Some(map) => Expr::Lit(Json::Object(map)),
            None => Expr::Object(members),
        },
        other => other,
    }
}

/// Parses the `row` / `key` of a read or write.
fn parse_cells(v: &toml::Value, what: &str) -> Result<Cells, String> {
    match v {
        toml::Value::Table(t) => {
            if t.is_empty() {
                return Err(format!("`{what}` names no columns"));
            }
            let cols = t
                .iter()
                .map(|(k, v)| {
                    parse_expr(v)
                        .map(|e| (k.clone(), e))
                        .map_err(|e| format!("`{what}.{k}`: {e}"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Cells::Columns(cols))
        }
        toml::Value::String(s) => match parse_str_expr(s)? {
            e @ (Expr::Args { .. } | Expr::Row { .. }) => Ok(Cells::Whole(e)),
            _ => Err(format!(
                "`{what}` must be an inline table of column = value, or a reference to an \
                 object such as \"$args\"; got the string {s:?}"
            )),
        },
        other => Err(format!(
            "`{what}` must be an inline table of column = value, or a reference to an object \
             such as \"$args\"; got {}",
            describe_toml(other)
        )),
    }
}

fn get_str<'t>(t: &'t toml::Table, key: &str) -> Result<Option<&'t str>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!(
            "`{key}` must be a string, got {}",
            describe_toml(other)
        )),
    }
}

fn require_str<'t>(t: &'t toml::Table, key: &str, what: &str) -> Result<&'t str, String> {
    match get_str(t, key)? {
        Some(s) if !s.is_empty() => Ok(s),
        Some(_) => Err(format!("`{key}` must not be empty")),
        None => Err(format!("{} `{what}` step needs `{key}`", a(what))),
    }
}

fn require_expr(t: &toml::Table, key: &str, what: &str) -> Result<Expr, String> {
    let v = t
        .get(key)
        .ok_or_else(|| format!("{} `{what}` check needs `{key}`", a(what)))?;
    parse_expr(v).map_err(|e| format!("`{key}`: {e}"))
}

impl Step {
    /// Parses one step from its inline table.
    fn parse(t: &toml::Table) -> Result<Step, String> {
        let kinds: Vec<&str> = STEP_KINDS
            .iter()
            .copied()
            .filter(|k| t.contains_key(*k))
            .collect();
        let kind = match kinds.as_slice() {
            [k] => *k,
            [] => {
                return Err(format!(
                    "a step needs exactly one of `{}`; this one has {}",
                    STEP_KINDS.join("`, `"),
                    if t.is_empty() {
                        String::from("no keys")
                    } else {
                        format!(
                            "only `{}`",
                            t.keys()
                                .map(String::as_str)
                                .collect::<Vec<_>>()
                                .join("`, `")
                        )
                    }
                ))
            }
            [a, b, ..] => {
                return Err(format!(
                    "a step has both `{a}` and `{b}`: a step does one thing, so split it in two"
                ))
            }
        };
        let allowed: &[&str] = match kind {
            "require" => &["require", "type", "reason"],
            "read" => &["read", "key", "as"],
            "check" => &["check", "left", "right", "value", "list", "reason"],
            "delete" => &["delete", "key"],
            _ => &[kind, "row"],
        };
        if let Some(bad) = t.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(format!(
                "unknown key `{bad}` in {} `{kind}` step (it takes `{}`)",
                a(kind),
                allowed.join("`, `")
            ));
        }
        let kind = match kind {
            "require" => Step::parse_require(t)?,
            "read" => Step::parse_read(t)?,
            "check" => Step::parse_check(t)?,
            _ => Step::parse_write(t, kind)?,
        };
        Ok(Step { kind })
    }

    fn parse_require(t: &toml::Table) -> Result<StepKind, String> {
        let text = require_str(t, "require", "require")?;
        let path = parse_arg_path(text.strip_prefix('$').unwrap_or(text)).map_err(|e| {
            format!("`require`: {e}; `require` names an argument such as \"args.id\"")
        })?;
        let types = match t.get("type") {
            None => Vec::new(),
            Some(toml::Value::String(s)) => vec![ArgType::parse(s)?],
            Some(toml::Value::Array(items)) if !items.is_empty() => items
                .iter()
                .map(|i| match i {
                    toml::Value::String(s) => ArgType::parse(s),
                    other => Err(format!(
                        "`type` lists type names, got {}",
                        describe_toml(other)
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => {
                return Err(format!(
                    "`type` must be a type name or a non-empty list of them ({}), got {}",
                    ArgType::NAMES,
                    describe_toml(other)
                ))
            }
        };
        let reason = get_str(t, "reason")?.map(str::to_string);
        Ok(StepKind::Require {
            path,
            types,
            reason,
        })
    }

    fn parse_read(t: &toml::Table) -> Result<StepKind, String> {
        let table = require_str(t, "read", "read")?.to_string();
        let key = t
            .get("key")
            .ok_or_else(|| String::from("a `read` step needs `key` (the primary-key columns)"))?;
        let key = parse_cells(key, "key")?;
        let alias = match get_str(t, "as")? {
            Some(a) => a.to_string(),
            None if is_ident(&table) => table.clone(),
            None => {
                return Err(format!(
                    "table {table:?} is not a valid alias: name the row with `as = \"…\"`"
                ))
            }
        };
        if !is_ident(&alias) || ["args", "user", "null"].contains(&alias.as_str()) {
            return Err(format!(
                "`as = {alias:?}` is not a usable alias: use letters, digits and `_` (not \
                 starting with a digit), and not `args`, `user` or `null`"
            ));
        }
        Ok(StepKind::Read { table, key, alias })
    }

    fn parse_check(t: &toml::Table) -> Result<StepKind, String> {
        let name = require_str(t, "check", "check")?;
        let reason = match get_str(t, "reason")? {
            Some(r) if !r.is_empty() => r.to_string(),
            _ => {
                return Err(format!(
                    "{} `{name}` check needs a non-empty `reason`: the message the client \
                     gets when the check fails",
                    a(name)
                ))
            }
        };
        let operands: &[&str] = match name {
            "eq" | "ne" | "lt" | "le" | "gt" | "ge" => &["left", "right"],
            "is_null" | "not_null" | "present" | "absent" => &["value"],
            "in" => &["value", "list"],
            other => {
                return Err(format!(
                    "`check = {other:?}` is not a check; use one of {CHECK_NAMES}"
                ))
            }
        };
        for key in ["left", "right", "value", "list"] {
            if t.contains_key(key) && !operands.contains(&key) {
                return Err(format!(
                    "{} `{name}` check takes `{}`, not `{key}`",
                    a(name),
                    operands.join("` and `")
                ));
            }
        }
        let compare = |op| -> Result<Check, String> {
            Ok(Check::Compare {
                op,
                left: require_expr(t, "left", name)?,
                right: require_expr(t, "right", name)?,
            })
        };
        let check = match name {
            "eq" => compare(CompareOp::Eq)?,
            "ne" => compare(CompareOp::Ne)?,
            "lt" => compare(CompareOp::Lt)?,
            "le" => compare(CompareOp::Le)?,
            "gt" => compare(CompareOp::Gt)?,
            "ge" => compare(CompareOp::Ge)?,
            "is_null" | "not_null" => Check::Null {
                want_null: name == "is_null",
                value: require_expr(t, "value", name)?,
            },
            "present" | "absent" => {
                let value = require_expr(t, "value", name)?;
                if !matches!(
                    value,
                    Expr::Row {
                        column: None,
                        optional: false,
                        ..
                    }
                ) {
                    return Err(format!(
                        "a `{name}` check tests a row read earlier: `value` must be \"$<alias>\" \
                         (the `as` of a `read` step), got `{value}`"
                    ));
                }
                Check::Row {
                    want_present: name == "present",
                    value,
                }
            }
            _ => Check::In {
                value: require_expr(t, "value", name)?,
                list: require_expr(t, "list", name)?,
            },
        };
        Ok(StepKind::Check { check, reason })
    }

    fn parse_write(t: &toml::Table, kind: &str) -> Result<StepKind, String> {
        let op = match kind {
            "insert" => WriteOp::Insert,
            "update" => WriteOp::Update,
            "upsert" => WriteOp::Upsert,
            _ => WriteOp::Delete,
        };
        let table = require_str(t, kind, kind)?.to_string();
        let key = op.cells_key();
        let cells = t.get(key).ok_or_else(|| {
            if op == WriteOp::Delete {
                String::from("a `delete` step needs `key` (the primary-key columns)")
            } else {
                format!("an `{kind}` step needs `row` (column = value)")
            }
        })?;
        let cells = parse_cells(cells, key)?;
        Ok(StepKind::Write { op, table, cells })
    }
}

// ---------------------------------------------------------------------------------------
// Compiling and validating
// ---------------------------------------------------------------------------------------

/// A compiled declarative mutator, ready to register.
#[derive(Clone, Debug)]
pub struct DeclarativeMutator {
    name: String,
    steps: Vec<Step>,
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
pub fn compile(name: &str, spec: &MutatorSpec) -> Result<DeclarativeMutator, String> {
    if name.is_empty() {
        return Err(String::from("a mutator name must not be empty"));
    }
    let mut bound: Vec<&str> = Vec::new();
    for (i, step) in spec.steps.iter().enumerate() {
        let mut err = None;
        step_exprs(step, &mut |e| {
            row_refs(e, &mut |alias, _| {
                if err.is_none() && !bound.contains(&alias) {
                    err = Some(format!(
                        "steps[{i}]: `${alias}` is not a row read by an earlier step; bind one \
                         with {{ read = \"<table>\", key = {{ … }}, as = \"{alias}\" }} before \
                         this step (or write `$args.…`, `$user`, `$null`, or `$$` for a \
                         literal `$`)"
                    ));
                }
            })
        });
        if let Some(e) = err {
            return Err(e);
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

fn find_table<'t>(tables: &'t [TableSchema], name: &str) -> Result<&'t TableSchema, String> {
    tables.iter().find(|t| &*t.name == name).ok_or_else(|| {
        format!(
            "the room has no table {name:?} (its tables: {})",
            tables
                .iter()
                .map(|t| format!("{:?}", &*t.name))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

fn column_list(t: &TableSchema) -> String {
    t.columns
        .iter()
        .map(|c| format!("{:?}", &**c))
        .collect::<Vec<_>>()
        .join(", ")
}

fn pk_names(t: &TableSchema) -> Vec<&str> {
    t.primary_key.iter().map(|&i| &*t.columns[i]).collect()
}

/// Checks a spec against the room's tables (the upstream hello's): every table exists,
/// every column named in a `key`, a `row` or a `$alias.column` exists, keys name exactly
/// the primary key, `insert` / `upsert` rows name every column, `update` rows name the
/// primary key. Rows given as a whole (`row = "$args"`) are checked when they run.
pub fn validate(spec: &MutatorSpec, tables: &[TableSchema]) -> Result<(), String> {
    compile("validate", spec)?;
    let mut aliases: Vec<(&str, &TableSchema)> = Vec::new();
    for (i, step) in spec.steps.iter().enumerate() {
        let at = |e: String| format!("steps[{i}] ({}): {e}", step.kind());
        let mut err = None;
        step_exprs(step, &mut |e| {
            row_refs(e, &mut |alias, column| {
                let Some(column) = column else { return };
                let Some((_, t)) = aliases.iter().rev().find(|(a, _)| *a == alias) else {
                    return;
                };
                if err.is_none() && t.column(column).is_none() {
                    err = Some(format!(
                        "`${alias}.{column}`: table {:?} has no column {column:?} (its columns: {})",
                        &*t.name,
                        column_list(t)
                    ));
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

fn check_cells(t: &TableSchema, cells: &Cells, what: &str, cov: Coverage) -> Result<(), String> {
    let Cells::Columns(cols) = cells else {
        return Ok(());
    };
    let pk = pk_names(t);
    for (c, _) in cols {
        if t.column(c).is_none() {
            return Err(format!(
                "`{what}.{c}`: table {:?} has no column {c:?} (its columns: {})",
                &*t.name,
                column_list(t)
            ));
        }
        if cov == Coverage::ExactlyPk && !pk.contains(&c.as_str()) {
            return Err(format!(
                "`{what}.{c}`: a key names only the primary-key columns of {:?} ({})",
                &*t.name,
                pk.join(", ")
            ));
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
        let why = match cov {
            Coverage::Every => "a full row names every column",
            Coverage::Pk | Coverage::ExactlyPk => "it must name the whole primary key",
        };
        return Err(format!(
            "`{what}` of {:?} lacks column(s) {}: {why}",
            &*t.name,
            missing
                .iter()
                .map(|m| format!("{m:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------------------

/// A JSON value as a wire cell: objects and arrays become their JSON text (protocol.md
/// §6.2, "json columns … objects are stringified").
pub(crate) fn json_to_cell(v: &Json) -> Cell {
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

/// Compiles every spec of a `[mutators]` map (errors name the mutator).
pub fn compile_all(
    specs: &BTreeMap<String, MutatorSpec>,
) -> Result<Vec<DeclarativeMutator>, String> {
    specs
        .iter()
        .map(|(name, spec)| compile(name, spec).map_err(|e| format!("mutators.{name}: {e}")))
        .collect()
}

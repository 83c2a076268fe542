//! Parsing a spec from TOML: which kind each step is, which keys it takes, and its
//! operands (value expressions are parsed in `values.rs`).

use super::a;
use super::error::{Malformed, SpecError};
use super::spec::{ArgType, Check, CompareOp, Expr, MutatorSpec, RawSpec, Step, StepKind, WriteOp};
use super::values::{describe_toml, is_ident, parse_arg_path, parse_cells, parse_expr};

/// The step kinds, by the key that selects them.
const STEP_KINDS: [&str; 7] = [
    "require", "read", "check", "insert", "update", "upsert", "delete",
];

const CHECK_NAMES: &str = "eq, ne, lt, le, gt, ge, in, is_null, not_null, present, absent";

impl TryFrom<RawSpec> for MutatorSpec {
    type Error = SpecError;

    fn try_from(raw: RawSpec) -> Result<MutatorSpec, SpecError> {
        let steps = raw
            .steps
            .iter()
            .enumerate()
            .map(|(step, t)| {
                Step::parse(t).map_err(|Malformed(message)| SpecError::Step { step, message })
            })
            .collect::<Result<Vec<Step>, SpecError>>()?;
        Ok(MutatorSpec { steps })
    }
}

impl MutatorSpec {
    /// Parses one spec from TOML text holding its table's body (`steps = [...]`).
    pub fn from_toml_str(text: &str) -> Result<MutatorSpec, SpecError> {
        let raw: RawSpec = toml::from_str(text).map_err(|e| SpecError::Toml {
            message: e.message().to_string(),
        })?;
        MutatorSpec::try_from(raw)
    }
}

fn get_str<'t>(t: &'t toml::Table, key: &str) -> Result<Option<&'t str>, Malformed> {
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Malformed(format!(
            "`{key}` must be a string, got {}",
            describe_toml(other)
        ))),
    }
}

fn require_str<'t>(t: &'t toml::Table, key: &str, what: &str) -> Result<&'t str, Malformed> {
    match get_str(t, key)? {
        Some(s) if !s.is_empty() => Ok(s),
        Some(_) => Err(Malformed(format!("`{key}` must not be empty"))),
        None => Err(Malformed(format!(
            "{} `{what}` step needs `{key}`",
            a(what)
        ))),
    }
}

fn require_expr(t: &toml::Table, key: &str, what: &str) -> Result<Expr, Malformed> {
    let v = t
        .get(key)
        .ok_or_else(|| Malformed(format!("{} `{what}` check needs `{key}`", a(what))))?;
    parse_expr(v).map_err(|e| Malformed(format!("`{key}`: {e}")))
}

impl Step {
    /// Parses one step from its inline table.
    fn parse(t: &toml::Table) -> Result<Step, Malformed> {
        let kinds: Vec<&str> = STEP_KINDS
            .iter()
            .copied()
            .filter(|k| t.contains_key(*k))
            .collect();
        let kind = match kinds.as_slice() {
            [k] => *k,
            [] => {
                return Err(Malformed(format!(
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
                )))
            }
            [a, b, ..] => {
                return Err(Malformed(format!(
                    "a step has both `{a}` and `{b}`: a step does one thing, so split it in two"
                )))
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
            return Err(Malformed(format!(
                "unknown key `{bad}` in {} `{kind}` step (it takes `{}`)",
                a(kind),
                allowed.join("`, `")
            )));
        }
        let kind = match kind {
            "require" => Step::parse_require(t)?,
            "read" => Step::parse_read(t)?,
            "check" => Step::parse_check(t)?,
            _ => Step::parse_write(t, kind)?,
        };
        Ok(Step { kind })
    }

    fn parse_require(t: &toml::Table) -> Result<StepKind, Malformed> {
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
                    other => Err(Malformed(format!(
                        "`type` lists type names, got {}",
                        describe_toml(other)
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => {
                return Err(Malformed(format!(
                    "`type` must be a type name or a non-empty list of them ({}), got {}",
                    ArgType::NAMES,
                    describe_toml(other)
                )))
            }
        };
        let reason = get_str(t, "reason")?.map(str::to_string);
        Ok(StepKind::Require {
            path,
            types,
            reason,
        })
    }

    fn parse_read(t: &toml::Table) -> Result<StepKind, Malformed> {
        let table = require_str(t, "read", "read")?.to_string();
        let key = t.get("key").ok_or_else(|| {
            Malformed(String::from(
                "a `read` step needs `key` (the primary-key columns)",
            ))
        })?;
        let key = parse_cells(key, "key")?;
        let alias = match get_str(t, "as")? {
            Some(a) => a.to_string(),
            None if is_ident(&table) => table.clone(),
            None => {
                return Err(Malformed(format!(
                    "table {table:?} is not a valid alias: name the row with `as = \"…\"`"
                )))
            }
        };
        if !is_ident(&alias) || ["args", "user", "null"].contains(&alias.as_str()) {
            return Err(Malformed(format!(
                "`as = {alias:?}` is not a usable alias: use letters, digits and `_` (not \
                 starting with a digit), and not `args`, `user` or `null`"
            )));
        }
        Ok(StepKind::Read { table, key, alias })
    }

    fn parse_check(t: &toml::Table) -> Result<StepKind, Malformed> {
        let name = require_str(t, "check", "check")?;
        let reason = match get_str(t, "reason")? {
            Some(r) if !r.is_empty() => r.to_string(),
            _ => {
                return Err(Malformed(format!(
                    "{} `{name}` check needs a non-empty `reason`: the message the client \
                     gets when the check fails",
                    a(name)
                )))
            }
        };
        let operands: &[&str] = match name {
            "eq" | "ne" | "lt" | "le" | "gt" | "ge" => &["left", "right"],
            "is_null" | "not_null" | "present" | "absent" => &["value"],
            "in" => &["value", "list"],
            other => {
                return Err(Malformed(format!(
                    "`check = {other:?}` is not a check; use one of {CHECK_NAMES}"
                )))
            }
        };
        for key in ["left", "right", "value", "list"] {
            if t.contains_key(key) && !operands.contains(&key) {
                return Err(Malformed(format!(
                    "{} `{name}` check takes `{}`, not `{key}`",
                    a(name),
                    operands.join("` and `")
                )));
            }
        }
        let compare = |op| -> Result<Check, Malformed> {
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
                    return Err(Malformed(format!(
                        "a `{name}` check tests a row read earlier: `value` must be \"$<alias>\" \
                         (the `as` of a `read` step), got `{value}`"
                    )));
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

    fn parse_write(t: &toml::Table, kind: &str) -> Result<StepKind, Malformed> {
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

//! Parsing value expressions: a string starting with `$` is a reference (`$args…`,
//! `$user`, `$null`, `$<alias>[.<column>]`, with a trailing `?` for optional); other
//! values are literals, arrays and inline tables hold values.

use serde_json::{Map, Number, Value as Json};

use super::error::Malformed;
use super::spec::{ArgPath, Cells, Expr, Seg};
use super::MAX_SAFE_INTEGER;

pub(super) fn describe_toml(v: &toml::Value) -> &'static str {
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

pub(super) fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses an args path written `args…` (the `$` already stripped).
pub(super) fn parse_arg_path(text: &str) -> Result<ArgPath, Malformed> {
    let Some(mut rest) = text.strip_prefix("args") else {
        return Err(Malformed(format!(
            "{text:?} is not an args path (write `args.<name>`)"
        )));
    };
    let mut segs = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = &r[..end];
            if name.is_empty() {
                return Err(Malformed(format!("`${text}` has an empty path segment")));
            }
            segs.push(Seg::Name(name.to_string()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return Err(Malformed(format!("`${text}` has an unclosed `[`")));
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
            return Err(Malformed(format!(
                "`${text}` is not a reference: after `$args` write `.name` or `[index]`"
            )));
        }
    }
    Ok(ArgPath { segs })
}

/// Parses a string value: a reference when it starts with `$`, else a literal.
pub(super) fn parse_str_expr(s: &str) -> Result<Expr, Malformed> {
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
        return Err(Malformed(format!("{s:?} is not a valid reference; {hint}")));
    }
    if column == Some("") {
        return Err(Malformed(format!("{s:?} has an empty column name; {hint}")));
    }
    Ok(Expr::Row {
        alias: alias.to_string(),
        column: column.map(str::to_string),
        optional,
    })
}

/// Parses a value: strings may be references; arrays and tables hold values.
pub(super) fn parse_expr(v: &toml::Value) -> Result<Expr, Malformed> {
    match v {
        toml::Value::String(s) => parse_str_expr(s),
        toml::Value::Integer(i) => {
            if i.unsigned_abs() > MAX_SAFE_INTEGER as u64 {
                Err(Malformed(format!(
                    "the integer {i} does not fit a wire number exactly (at most ±2^53 − 1); \
                     write it as a string"
                )))
            } else {
                Ok(Expr::Lit(Json::from(*i)))
            }
        }
        toml::Value::Float(f) => Number::from_f64(*f)
            .map(|n| Expr::Lit(Json::Number(n)))
            .ok_or_else(|| Malformed(format!("{f} is not a wire number (no NaN or infinity)"))),
        toml::Value::Boolean(b) => Ok(Expr::Lit(Json::Bool(*b))),
        toml::Value::Datetime(d) => Err(Malformed(format!(
            "the TOML datetime {d} is not a wire value; quote it to store it as a string"
        ))),
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
pub(super) fn parse_cells(v: &toml::Value, what: &str) -> Result<Cells, Malformed> {
    match v {
        toml::Value::Table(t) => {
            if t.is_empty() {
                return Err(Malformed(format!("`{what}` names no columns")));
            }
            let cols = t
                .iter()
                .map(|(k, v)| {
                    parse_expr(v)
                        .map(|e| (k.clone(), e))
                        .map_err(|e| Malformed(format!("`{what}.{k}`: {e}")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Cells::Columns(cols))
        }
        toml::Value::String(s) => match parse_str_expr(s)? {
            e @ (Expr::Args { .. } | Expr::Row { .. }) => Ok(Cells::Whole(e)),
            _ => Err(Malformed(format!(
                "`{what}` must be an inline table of column = value, or a reference to an \
                 object such as \"$args\"; got the string {s:?}"
            ))),
        },
        other => Err(Malformed(format!(
            "`{what}` must be an inline table of column = value, or a reference to an object \
             such as \"$args\"; got {}",
            describe_toml(other)
        ))),
    }
}

//! JSON written inside the TOML file (the upstream footprint AST, the write plane's
//! scope specs): as JSON text or as inline TOML, converted to JSON and shape-checked.

use std::fmt;

use serde_json::Value as Json;

use super::{invalid, ConfigError, UpstreamConfig, WritesConfig};
use crate::mutators::declarative;

impl UpstreamConfig {
    /// `footprint_ast` as JSON: JSON text is parsed, an inline table converted.
    pub fn footprint_ast_json(&self) -> Result<Json, ConfigError> {
        let option = "upstream.footprint_ast";
        let ast = toml_or_json(&self.footprint_ast, option, "a wire AST object")?;
        let table_ok = ast
            .get("table")
            .and_then(Json::as_str)
            .is_some_and(|t| !t.is_empty());
        if !ast.is_object() || !table_ok {
            return Err(invalid(
                option,
                format!(
                    "`{option}` must be a wire AST object with a non-empty \"table\", such as \
                     '{{\"table\": \"note\"}}'; got {}",
                    declarative::describe_json(&ast)
                ),
            ));
        }
        Ok(ast)
    }
}

impl WritesConfig {
    /// `scopes` as JSON (`None` when unset): JSON text is parsed, an array of inline
    /// tables converted. The result is an array of objects with a `"table"`.
    pub fn scopes_json(&self) -> Result<Option<Json>, ConfigError> {
        let Some(scopes) = &self.scopes else {
            return Ok(None);
        };
        let option = "writes.scopes";
        let json = toml_or_json(scopes, option, "a JSON array of scope specs")?;
        let Some(items) = json.as_array() else {
            return Err(invalid(
                option,
                format!(
                    "`{option}` must be an array of scope specs such as \
                     '[{{\"table\": \"note\", \"writable\": …}}]'; got {}",
                    declarative::describe_json(&json)
                ),
            ));
        };
        for (i, item) in items.iter().enumerate() {
            if item
                .get("table")
                .and_then(Json::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(invalid(
                    option,
                    format!("`{option}`[{i}] must be an object with a non-empty \"table\""),
                ));
            }
        }
        Ok(Some(json))
    }
}

/// A TOML value holding JSON text (a string) or inline TOML, as JSON.
fn toml_or_json(v: &toml::Value, option: &str, what: &str) -> Result<Json, ConfigError> {
    match v {
        toml::Value::String(text) => serde_json::from_str(text).map_err(|e| {
            invalid(
                option,
                format!(
                    "`{option}` is not valid JSON ({e}): write {what} as JSON text (a '''…''' \
                     string) or as inline TOML"
                ),
            )
        }),
        toml::Value::Table(_) | toml::Value::Array(_) => {
            toml_to_json(v).map_err(|e| invalid(option, format!("`{option}`: {e}")))
        }
        other => Err(invalid(
            option,
            format!(
                "`{option}` must be {what}, as JSON text or inline TOML; got a {}",
                other.type_str()
            ),
        )),
    }
}

/// Converts TOML to JSON (TOML has no null: write JSON text when a null is needed).
fn toml_to_json(v: &toml::Value) -> Result<Json, NoJsonForm> {
    Ok(match v {
        toml::Value::String(s) => Json::String(s.clone()),
        toml::Value::Integer(i) => Json::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Json::Number)
            .ok_or(NoJsonForm::Float(*f))?,
        toml::Value::Boolean(b) => Json::Bool(*b),
        toml::Value::Datetime(d) => return Err(NoJsonForm::Datetime(*d)),
        toml::Value::Array(items) => Json::Array(
            items
                .iter()
                .map(toml_to_json)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        toml::Value::Table(t) => Json::Object(
            t.iter()
                .map(|(k, v)| toml_to_json(v).map(|v| (k.clone(), v)))
                .collect::<Result<serde_json::Map<_, _>, _>>()?,
        ),
    })
}

/// A TOML value JSON cannot hold.
#[derive(Debug)]
enum NoJsonForm {
    /// A float with no JSON number (NaN, ±infinity).
    Float(f64),
    /// A datetime (JSON has none; quoting it makes a string).
    Datetime(toml::value::Datetime),
}

impl fmt::Display for NoJsonForm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoJsonForm::Float(x) => write!(f, "{x} has no JSON form"),
            NoJsonForm::Datetime(d) => {
                write!(f, "the TOML datetime {d} has no JSON form; quote it")
            }
        }
    }
}

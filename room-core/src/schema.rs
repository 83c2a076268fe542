//! Table schemas and the upstream hello (docs/protocol.md, the upstream hello).

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::error::{Error, ErrorCode};
use crate::fingerprint::{normalized_fp, FpTable};
use crate::json::write::{write_key, write_str, write_str_array};
use crate::value::row::MAX_ROW_CELLS;
use crate::value::COMPARATOR_VERSION;

/// One table as the hello describes it: rows are positional against `columns`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSchema {
    /// The table's name.
    pub name: Arc<str>,
    /// Column names in wire order.
    pub columns: Box<[Arc<str>]>,
    /// Primary-key column indices, in key order.
    pub primary_key: Box<[usize]>,
}

impl FpTable for TableSchema {
    fn fp_name(&self) -> &str {
        &self.name
    }

    fn fp_columns(&self) -> &[Arc<str>] {
        &self.columns
    }

    fn fp_primary_key(&self) -> &[usize] {
        &self.primary_key
    }
}

impl TableSchema {
    /// Builds a schema (no validation; see [`TableSchema::validate`]).
    pub fn new(name: &str, columns: &[&str], primary_key: &[usize]) -> TableSchema {
        TableSchema {
            name: Arc::from(name),
            columns: columns.iter().map(|c| Arc::from(*c)).collect(),
            primary_key: primary_key.into(),
        }
    }

    /// The index of a column by name.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| &**c == name)
    }

    /// Checks the hello's table rules: a non-empty name, non-empty unique column names, and a
    /// non-empty primary key of valid, distinct indices.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |why: String| Err(Error::new(ErrorCode::InvalidHello, why));
        if self.name.is_empty() {
            return bad(String::from("invalid hello: a table has an empty name"));
        }
        if self.columns.len() > MAX_ROW_CELLS {
            return bad(format!(
                "invalid hello: table {:?} has {} columns; a row holds at most {MAX_ROW_CELLS}",
                self.name,
                self.columns.len()
            ));
        }
        for (i, c) in self.columns.iter().enumerate() {
            if c.is_empty() {
                return bad(format!(
                    "invalid hello: table {:?} has an empty column name",
                    self.name
                ));
            }
            if self.columns[..i].contains(c) {
                return bad(format!(
                    "invalid hello: table {:?} names column {:?} twice",
                    self.name, c
                ));
            }
        }
        if self.primary_key.is_empty() {
            return bad(format!(
                "invalid hello: table {:?} has an empty primaryKey",
                self.name
            ));
        }
        for (i, &k) in self.primary_key.iter().enumerate() {
            if k >= self.columns.len() {
                return bad(format!(
                    "invalid hello: table {:?} primaryKey index {} is out of range (it has {} columns)",
                    self.name,
                    k,
                    self.columns.len()
                ));
            }
            if self.primary_key[..i].contains(&k) {
                return bad(format!(
                    "invalid hello: table {:?} lists primaryKey index {} twice",
                    self.name, k
                ));
            }
        }
        Ok(())
    }

    /// Appends `{"name":…,"columns":[…],"primaryKey":[…]}`.
    pub fn write_json(&self, out: &mut String) {
        out.push('{');
        write_key(out, "name");
        write_str(out, &self.name);
        out.push(',');
        write_key(out, "columns");
        write_str_array(out, &self.columns);
        out.push(',');
        write_key(out, "primaryKey");
        out.push('[');
        for (i, k) in self.primary_key.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(itoa(*k).as_str());
        }
        out.push(']');
        out.push('}');
    }
}

fn itoa(n: usize) -> String {
    format!("{n}")
}

/// The upstream `nhello.hello` object the room opens its store from.
#[derive(Clone, Debug)]
pub struct Hello {
    /// The upstream subscription epoch.
    pub epoch: u64,
    /// Must be [`COMPARATOR_VERSION`].
    pub comparator_version: u32,
    /// The tables the room follows, in wire order.
    pub tables: Vec<TableSchema>,
    /// The fingerprint sent with the tables; must equal the recomputation.
    pub normalized_fp: String,
}

/// Reads a JSON number as a non-negative integer no larger than 2^53 − 1.
pub(crate) fn safe_uint(n: &serde_json::Number) -> Option<u64> {
    const MAX: u64 = (1 << 53) - 1;
    if let Some(u) = n.as_u64() {
        return (u <= MAX).then_some(u);
    }
    let f = n.as_f64()?;
    (f >= 0.0 && crate::value::is_integral(f) && f <= MAX as f64).then_some(f as u64)
}

impl Hello {
    /// Parses and validates a hello from JSON text. Nothing is constructed from a
    /// hello that fails any rule; the error names the offending field.
    pub fn from_json(text: &str) -> Result<Hello, Error> {
        let json: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            Error::new(
                ErrorCode::InvalidHello,
                format!("invalid hello: not JSON ({e})"),
            )
        })?;
        Hello::from_value(&json)
    }

    /// Parses and validates a hello from a parsed JSON value.
    pub fn from_value(json: &serde_json::Value) -> Result<Hello, Error> {
        use serde_json::Value as Json;
        let bad =
            |why: String| Error::new(ErrorCode::InvalidHello, format!("invalid hello: {why}"));
        let o = json
            .as_object()
            .ok_or_else(|| bad(String::from("must be a JSON object")))?;
        let uint = |key: &str| -> Result<u64, Error> {
            match o.get(key) {
                Some(Json::Number(n)) => safe_uint(n)
                    .ok_or_else(|| bad(format!("`{key}` must be a non-negative integer, got {n}"))),
                Some(other) => Err(bad(format!("`{key}` must be a number, got {other}"))),
                None => Err(bad(format!("`{key}` is missing"))),
            }
        };
        let epoch = uint("epoch")?;
        let cv = uint("comparatorVersion")?;
        if cv != COMPARATOR_VERSION as u64 {
            return Err(bad(format!(
                "comparatorVersion {cv} is not supported (expected {COMPARATOR_VERSION})"
            )));
        }
        let normalized_fp = match o.get("normalizedFp") {
            Some(Json::String(s)) => s.clone(),
            Some(other) => {
                return Err(bad(format!("`normalizedFp` must be a string, got {other}")))
            }
            None => return Err(bad(String::from("`normalizedFp` is missing"))),
        };
        let wire_tables = match o.get("tables") {
            Some(Json::Array(t)) => t,
            Some(other) => return Err(bad(format!("`tables` must be an array, got {other}"))),
            None => return Err(bad(String::from("`tables` is missing"))),
        };
        let mut tables = Vec::with_capacity(wire_tables.len());
        for (i, t) in wire_tables.iter().enumerate() {
            let t = t
                .as_object()
                .ok_or_else(|| bad(format!("tables[{i}] must be an object")))?;
            let name = t
                .get("name")
                .and_then(Json::as_str)
                .ok_or_else(|| bad(format!("tables[{i}].name must be a string")))?;
            let columns = t
                .get("columns")
                .and_then(Json::as_array)
                .ok_or_else(|| bad(format!("table {name:?}: `columns` must be an array")))?
                .iter()
                .map(|c| {
                    c.as_str().map(Arc::from).ok_or_else(|| {
                        bad(format!(
                            "table {name:?}: column names must be strings, got {c}"
                        ))
                    })
                })
                .collect::<Result<Box<[Arc<str>]>, Error>>()?;
            let primary_key = t
                .get("primaryKey")
                .and_then(Json::as_array)
                .ok_or_else(|| bad(format!("table {name:?}: `primaryKey` must be an array")))?
                .iter()
                .map(|k| match k {
                    Json::Number(n) => safe_uint(n)
                        .map(|u| usize::try_from(u).unwrap_or(usize::MAX))
                        .ok_or_else(|| bad(format!("table {name:?}: primaryKey index {n} is not a non-negative integer"))),
                    other => Err(bad(format!("table {name:?}: primaryKey indices must be numbers, got {other}"))),
                })
                .collect::<Result<Box<[usize]>, Error>>()?;
            tables.push(TableSchema {
                name: Arc::from(name),
                columns,
                primary_key,
            });
        }
        let hello = Hello {
            epoch,
            comparator_version: COMPARATOR_VERSION,
            tables,
            normalized_fp,
        };
        hello.validate()?;
        Ok(hello)
    }

    /// Checks every rule of `open` on an already-typed hello (docs/design/decisions.md,
    /// "Upstream hello and batches").
    pub fn validate(&self) -> Result<(), Error> {
        if self.comparator_version != COMPARATOR_VERSION {
            return Err(Error::new(
                ErrorCode::InvalidHello,
                format!(
                    "invalid hello: comparatorVersion {} is not supported (expected {})",
                    self.comparator_version, COMPARATOR_VERSION
                ),
            ));
        }
        for (i, t) in self.tables.iter().enumerate() {
            t.validate()?;
            if self.tables[..i].iter().any(|o| o.name == t.name) {
                return Err(Error::new(
                    ErrorCode::InvalidHello,
                    format!("invalid hello: table {:?} appears twice", t.name),
                ));
            }
            // The daemon lists tables sorted by name; the published room refuses any
            // other order, and so does this one.
            if let Some(prev) = i.checked_sub(1).map(|p| &self.tables[p]) {
                if prev.name.as_bytes() > t.name.as_bytes() {
                    return Err(Error::new(
                        ErrorCode::InvalidHello,
                        format!(
                            "invalid hello: tables must be sorted by name (byte order), but {:?} comes before {:?}",
                            prev.name, t.name
                        ),
                    ));
                }
            }
        }
        let fp = normalized_fp(self.tables.iter());
        if fp != self.normalized_fp {
            return Err(Error::new(
                ErrorCode::FingerprintMismatch,
                format!(
                    "invalid hello: normalizedFp {:?} does not match the tables (computed {fp})",
                    self.normalized_fp
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOTE: &str = r#"{"epoch":1,"comparatorVersion":2,"tables":[{"name":"note","columns":["id","body"],"primaryKey":[0]}],"normalizedFp":"d0ffe1b66912a02b"}"#;

    #[test]
    fn accepts_a_valid_hello() {
        let h = Hello::from_json(NOTE).unwrap();
        assert_eq!(h.epoch, 1);
        assert_eq!(h.tables[0].column("body"), Some(1));
    }

    #[test]
    fn refuses_each_bad_shape() {
        let cases = [
            (
                NOTE.replace("\"comparatorVersion\":2", "\"comparatorVersion\":1"),
                "comparatorVersion",
            ),
            (
                NOTE.replace("d0ffe1b66912a02b", "0000000000000000"),
                "normalizedFp",
            ),
            (NOTE.replace("[0]", "[2]"), "out of range"),
            (NOTE.replace("[0]", "[]"), "empty primaryKey"),
            (NOTE.replace("\"body\"", "\"id\""), "twice"),
            (NOTE.replace("\"note\"", "\"\""), "empty name"),
            (NOTE.replace("\"epoch\":1", "\"epoch\":-1"), "epoch"),
            (String::from("{"), "invalid hello"),
            (String::from("[]"), "invalid hello"),
        ];
        for (text, want) in cases {
            let err = Hello::from_json(&text).unwrap_err();
            assert!(err.message().contains(want), "{text}: {}", err.message());
        }
    }
}

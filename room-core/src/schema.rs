//! Table schemas and the upstream hello (DECISIONS D3).

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use serde::Deserialize;

use crate::error::{Error, ErrorCode};
use crate::fingerprint::normalized_fp;
use crate::json::write::{write_key, write_str, write_str_array};
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

    /// Checks the D3 rules: a non-empty name, non-empty unique column names, and a
    /// non-empty primary key of valid, distinct indices.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |why: String| Err(Error::new(ErrorCode::InvalidHello, why));
        if self.name.is_empty() {
            return bad(String::from("invalid hello: a table has an empty name"));
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

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireHello {
    epoch: serde_json::Number,
    comparator_version: serde_json::Number,
    tables: Vec<WireTable>,
    normalized_fp: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireTable {
    name: String,
    columns: Vec<String>,
    primary_key: Vec<serde_json::Number>,
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
    /// Parses and validates a hello from JSON text (D3). Nothing is constructed from a
    /// hello that fails any rule.
    pub fn from_json(text: &str) -> Result<Hello, Error> {
        let wire: WireHello = serde_json::from_str(text)
            .map_err(|e| Error::new(ErrorCode::InvalidHello, format!("invalid hello: {e}")))?;
        let epoch = safe_uint(&wire.epoch).ok_or_else(|| {
            Error::new(
                ErrorCode::InvalidHello,
                "invalid hello: epoch must be a non-negative integer",
            )
        })?;
        let comparator_version = match safe_uint(&wire.comparator_version) {
            Some(v) if v == COMPARATOR_VERSION as u64 => COMPARATOR_VERSION,
            _ => {
                return Err(Error::new(
                    ErrorCode::InvalidHello,
                    format!(
                        "invalid hello: comparatorVersion {} is not supported (expected {})",
                        wire.comparator_version, COMPARATOR_VERSION
                    ),
                ))
            }
        };
        let mut tables = Vec::with_capacity(wire.tables.len());
        for t in wire.tables {
            let mut pk = Vec::with_capacity(t.primary_key.len());
            for k in &t.primary_key {
                let idx = safe_uint(k).ok_or_else(|| {
                    Error::new(
                        ErrorCode::InvalidHello,
                        format!(
                            "invalid hello: table {:?} has a non-integer primaryKey index",
                            t.name
                        ),
                    )
                })?;
                pk.push(usize::try_from(idx).unwrap_or(usize::MAX));
            }
            tables.push(TableSchema {
                name: Arc::from(t.name.as_str()),
                columns: t.columns.iter().map(|c| Arc::from(c.as_str())).collect(),
                primary_key: pk.into(),
            });
        }
        let hello = Hello {
            epoch,
            comparator_version,
            tables,
            normalized_fp: wire.normalized_fp,
        };
        hello.validate()?;
        Ok(hello)
    }

    /// Checks every D3 rule on an already-typed hello.
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

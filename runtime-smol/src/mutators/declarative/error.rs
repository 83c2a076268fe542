//! [`SpecError`]: why a declarative mutator spec was refused, at whichever stage found
//! it (parsing, compiling, or checking against the room's schema).

use std::fmt;

/// Why a declarative mutator spec was refused. Every variant that concerns one step
/// carries its index in `steps` (0-based); [`fmt::Display`] names it as `steps[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpecError {
    /// The text is not a spec table (`steps = [...]` and nothing else).
    Toml {
        /// The TOML parser's message.
        message: String,
    },
    /// A step is malformed: no kind or two, an unknown or missing key, a bad value or
    /// reference.
    Step {
        /// The step's index.
        step: usize,
        /// What is wrong with it and how to fix it.
        message: String,
    },
    /// The mutator's name is empty.
    EmptyName,
    /// A `$alias` names no row read by an earlier step.
    UnboundAlias {
        /// The step's index.
        step: usize,
        /// The alias, without its `$`.
        alias: String,
    },
    /// A step does not fit the room's tables.
    Schema {
        /// The step's index.
        step: usize,
        /// The step's kind (`read`, `insert`, …).
        step_kind: &'static str,
        /// What does not fit.
        mismatch: SchemaMismatch,
    },
}

/// How a step does not fit the room's tables (see [`SpecError::Schema`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaMismatch {
    /// The room has no such table.
    UnknownTable {
        /// The table the step names.
        table: String,
        /// The room's tables.
        tables: Vec<String>,
    },
    /// The table has no such column.
    UnknownColumn {
        /// Where the column is named (`row.body`, `$existing.body`).
        place: String,
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// The table's columns.
        columns: Vec<String>,
    },
    /// A key names a column outside the primary key.
    NotInPrimaryKey {
        /// Where the column is named (`key.body`).
        place: String,
        /// The table.
        table: String,
        /// The table's primary-key columns.
        primary_key: Vec<String>,
    },
    /// A key or row leaves out columns it must name.
    MissingColumns {
        /// `key` or `row`.
        place: &'static str,
        /// The table.
        table: String,
        /// The columns left out.
        missing: Vec<String>,
        /// Whether a full row (every column) was needed, rather than the primary key.
        full_row: bool,
    },
}

/// `"a", "b"`: names quoted as Rust debug strings, comma-separated.
fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::Toml { message } => f.write_str(message),
            SpecError::Step { step, message } => write!(f, "steps[{step}]: {message}"),
            SpecError::EmptyName => f.write_str("a mutator name must not be empty"),
            SpecError::UnboundAlias { step, alias } => write!(
                f,
                "steps[{step}]: `${alias}` is not a row read by an earlier step; bind one \
                 with {{ read = \"<table>\", key = {{ … }}, as = \"{alias}\" }} before \
                 this step (or write `$args.…`, `$user`, `$null`, or `$$` for a \
                 literal `$`)"
            ),
            SpecError::Schema {
                step,
                step_kind,
                mismatch,
            } => write!(f, "steps[{step}] ({step_kind}): {mismatch}"),
        }
    }
}

impl fmt::Display for SchemaMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaMismatch::UnknownTable { table, tables } => write!(
                f,
                "the room has no table {table:?} (its tables: {})",
                quoted(tables)
            ),
            SchemaMismatch::UnknownColumn {
                place,
                table,
                column,
                columns,
            } => write!(
                f,
                "`{place}`: table {table:?} has no column {column:?} (its columns: {})",
                quoted(columns)
            ),
            SchemaMismatch::NotInPrimaryKey {
                place,
                table,
                primary_key,
            } => write!(
                f,
                "`{place}`: a key names only the primary-key columns of {table:?} ({})",
                primary_key.join(", ")
            ),
            SchemaMismatch::MissingColumns {
                place,
                table,
                missing,
                full_row,
            } => {
                let why = if *full_row {
                    "a full row names every column"
                } else {
                    "it must name the whole primary key"
                };
                write!(
                    f,
                    "`{place}` of {table:?} lacks column(s) {}: {why}",
                    quoted(missing)
                )
            }
        }
    }
}

impl std::error::Error for SpecError {}

impl std::error::Error for SchemaMismatch {}

/// What is wrong with one step, in words (wrapped into [`SpecError::Step`] with the
/// step's index once it is known).
#[derive(Debug)]
pub(super) struct Malformed(pub(super) String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for Malformed {
    fn from(message: String) -> Malformed {
        Malformed(message)
    }
}

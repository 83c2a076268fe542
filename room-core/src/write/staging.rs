//! The open mutation transaction and what beginning and committing one report: plain
//! data, kept apart from the room's transaction methods (`tx.rs`) so the write plane's
//! state does not depend on the room.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use crate::keys::Key;
use crate::value::{Row, Value};

/// One staged key: its head image at first touch and its staged image.
#[derive(Clone, Debug)]
pub(crate) struct Staged {
    pub before: Option<Row>,
    pub after: Option<Row>,
}

/// The open transaction.
#[derive(Debug)]
pub(crate) struct Tx {
    pub client: String,
    pub mid: u64,
    pub name: Option<String>,
    pub args: Option<String>,
    pub staged: BTreeMap<(usize, Key), Staged>,
    /// Keys in first-touch order.
    pub order: Vec<(usize, Key)>,
    /// Every staged write in call order: `(table, key, image before it, image after)`
    /// (the gate's order: it judges each write, as the published room does).
    pub ops: Vec<(usize, Key, Option<Row>, Option<Row>)>,
    /// Reads that found no row: `(table, pk cells)`.
    pub absent_reads: Vec<(usize, Vec<Value>)>,
}

/// What `begin_mutation` decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Begin {
    /// A transaction is open: run the mutator, then commit or reject.
    Tx,
    /// An absorbed redelivery (mid at or below the applied watermark): send nothing.
    Dedup,
}

/// A commit-gate violation.
#[derive(Clone, Debug, PartialEq)]
pub struct Deopt {
    /// `writeOutOfScope`, `joinKeyChanged` or `absentReadUnproven`.
    pub reason: &'static str,
    /// The table.
    pub table: String,
    /// The key's pk cells.
    pub pk: Vec<Value>,
    /// For `writeOutOfScope`: `add`, `remove` or `edit`.
    pub op: Option<&'static str>,
    /// For `joinKeyChanged`: the column.
    pub column: Option<String>,
}

/// What `commit_mutation` did.
#[derive(Clone, Debug, PartialEq)]
pub enum Commit {
    /// Applied as one local commit; the head's cv after it.
    Applied {
        /// `headCv` after the commit.
        head_cv: u64,
    },
    /// The gate refused: nothing applied, the mid is consumed.
    Deopt(Deopt),
}

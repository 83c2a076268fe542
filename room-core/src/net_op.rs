//! The normalized op: one row entering, leaving or changing in a footprint — what a
//! downstream batch carries and what an upstream batch applies.

use alloc::sync::Arc;

use crate::value::Row;

/// One normalized op (docs/design/wire.md, "The normalized protocol").
#[derive(Clone, Debug, PartialEq)]
pub enum NetOp {
    /// The key entered the footprint with this image.
    Add {
        /// The table.
        table: Arc<str>,
        /// The new image.
        row: Row,
    },
    /// The key left the footprint; `row` is its last image.
    Remove {
        /// The table.
        table: Arc<str>,
        /// The old image.
        row: Row,
    },
    /// The key stayed and its image changed.
    Edit {
        /// The table.
        table: Arc<str>,
        /// The image the subscriber holds.
        old: Row,
        /// The new image.
        new: Row,
    },
}

impl NetOp {
    /// The op's table.
    pub fn table(&self) -> &Arc<str> {
        match self {
            NetOp::Add { table, .. } | NetOp::Remove { table, .. } | NetOp::Edit { table, .. } => {
                table
            }
        }
    }

    /// The image before the op (`None` for an add).
    pub fn before(&self) -> Option<&Row> {
        match self {
            NetOp::Add { .. } => None,
            NetOp::Remove { row, .. } => Some(row),
            NetOp::Edit { old, .. } => Some(old),
        }
    }

    /// The image after the op (`None` for a remove).
    pub fn after(&self) -> Option<&Row> {
        match self {
            NetOp::Add { row, .. } => Some(row),
            NetOp::Remove { .. } => None,
            NetOp::Edit { new, .. } => Some(new),
        }
    }

    /// Either image (both carry the key).
    pub(crate) fn image(&self) -> &Row {
        match self {
            NetOp::Add { row, .. } | NetOp::Remove { row, .. } => row,
            NetOp::Edit { new, .. } => new,
        }
    }

    /// The op taking `before` to `after`, if they differ.
    pub fn between(table: &Arc<str>, before: Option<Row>, after: Option<Row>) -> Option<NetOp> {
        let table = table.clone();
        match (before, after) {
            (None, None) => None,
            (None, Some(row)) => Some(NetOp::Add { table, row }),
            (Some(row), None) => Some(NetOp::Remove { table, row }),
            (Some(old), Some(new)) => {
                if old == new {
                    None
                } else {
                    Some(NetOp::Edit { table, old, new })
                }
            }
        }
    }
}

//! Generated CRUD mutators: `<table>.insert`, `<table>.update`, `<table>.upsert` and
//! `<table>.delete` for a table, each taking the row (or its primary key) as the args
//! object, column name → value.
//!
//! | Mutator | Args | Effect (the keyed [`MutationTx`] method) |
//! |---|---|---|
//! | `<table>.insert` | every column | adds the row; an existing key rejects |
//! | `<table>.update` | the primary key and the columns to change | changes those columns; a missing row is a no-op |
//! | `<table>.upsert` | every column | replaces the row, or adds it |
//! | `<table>.delete` | the primary key (a whole row is accepted) | removes the row; a missing row is a no-op |
//!
//! Object and array values are stored as their JSON text (json columns). An unknown
//! column, a missing column or args that are not an object reject the mutation.
//!
//! These mutators check no permissions: anyone who may push mutations to the room may
//! write any row of the table (within the v2 scopes, when they are configured). Enable
//! them (`writes.crud = true`) only where that is acceptable, e.g. a demo or a room whose
//! every client is trusted.

use rindle_room_core::{MutationTx, TableSchema};
use serde_json::Value as Json;

use super::declarative::object_to_row;
use super::{Mutator, MutatorCtx, MutatorError, Registry};

/// Which of the four operations a CRUD mutator performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrudOp {
    /// `<table>.insert`: a full row; an existing key rejects.
    Insert,
    /// `<table>.update`: the primary key plus the columns to change.
    Update,
    /// `<table>.upsert`: a full row, replacing or adding.
    Upsert,
    /// `<table>.delete`: the primary key.
    Delete,
}

impl CrudOp {
    /// The four operations, in registration order.
    pub const ALL: [CrudOp; 4] = [
        CrudOp::Insert,
        CrudOp::Update,
        CrudOp::Upsert,
        CrudOp::Delete,
    ];

    /// The name suffix: `insert`, `update`, `upsert` or `delete`.
    pub fn as_str(self) -> &'static str {
        match self {
            CrudOp::Insert => "insert",
            CrudOp::Update => "update",
            CrudOp::Upsert => "upsert",
            CrudOp::Delete => "delete",
        }
    }
}

/// The mutator name of `op` on `table`: `<table>.<op>`.
pub fn name(table: &str, op: CrudOp) -> String {
    format!("{table}.{}", op.as_str())
}

/// The four names [`register`] adds for `table`.
pub fn names(table: &str) -> [String; 4] {
    CrudOp::ALL.map(|op| name(table, op))
}

/// One generated CRUD mutator.
#[derive(Clone, Debug)]
pub struct CrudMutator {
    table: String,
    op: CrudOp,
}

impl CrudMutator {
    /// The mutator for `op` on the table called `table`.
    pub fn new(table: &str, op: CrudOp) -> CrudMutator {
        CrudMutator {
            table: table.to_string(),
            op,
        }
    }

    /// The table it writes.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The operation it performs.
    pub fn op(&self) -> CrudOp {
        self.op
    }
}

impl Mutator for CrudMutator {
    fn run(
        &self,
        tx: &mut MutationTx<'_>,
        args: &Json,
        _ctx: &MutatorCtx,
    ) -> Result<(), MutatorError> {
        let row = object_to_row(args, || {
            format!("the args of `{}`", name(&self.table, self.op))
        })?;
        match self.op {
            CrudOp::Insert => tx.insert(&self.table, &row)?,
            CrudOp::Update => tx.update(&self.table, &row)?,
            CrudOp::Upsert => tx.upsert(&self.table, &row)?,
            CrudOp::Delete => tx.delete(&self.table, &row)?,
        }
        Ok(())
    }
}

/// Registers `<table>.insert`, `<table>.update`, `<table>.upsert` and `<table>.delete`
/// (replacing any mutator already registered under those names).
pub fn register(registry: &mut Registry, table: &TableSchema) {
    for op in CrudOp::ALL {
        registry.register(name(&table.name, op), CrudMutator::new(&table.name, op));
    }
}

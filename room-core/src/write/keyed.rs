//! The keyed write layer (the published room's `MutationTx`) over the open transaction: what room
//! mutators written in Rust (the server's, a C host's) call.
//!
//! Keyed methods name columns; positional methods take cells in column order (pk cells
//! in primary-key order). `update` and `delete` of a missing row are no-ops, so a
//! mutator's effect may legitimately vanish on replay against a moved base.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::error::{Error, ErrorCode};
use crate::room::Room;
use crate::schema::TableSchema;
use crate::store::Row;
use crate::value::Value;

/// A row keyed by column name.
pub type KeyedRow = Vec<(String, Value)>;

/// The write handle a mutator runs against. Borrowed from a [`Room`] with an open
/// transaction ([`Room::begin_mutation`] returned `Begin::Tx`).
#[derive(Debug)]
pub struct MutationTx<'r> {
    room: &'r mut Room,
}

fn refuse(msg: String) -> Error {
    Error::new(ErrorCode::WriteRefused, msg)
}

impl Room {
    /// The keyed handle over the open transaction.
    pub fn mutation_tx(&mut self) -> Result<MutationTx<'_>, Error> {
        if self.writes_ref()?.tx.is_none() {
            return Err(Error::new(
                ErrorCode::WrongState,
                "no mutation transaction is open",
            ));
        }
        Ok(MutationTx { room: self })
    }
}

impl MutationTx<'_> {
    fn schema(&self, table: &str) -> Result<TableSchema, Error> {
        let t = self.room.tx_table(table, false, "read")?;
        Ok(self.room.store.table(t).schema.clone())
    }

    /// The pk cells named by a keyed row (every pk column required).
    fn pk_cells(
        schema: &TableSchema,
        keyed: &[(String, Value)],
        what: &str,
    ) -> Result<Vec<Value>, Error> {
        schema
            .primary_key
            .iter()
            .map(|&c| {
                let name = &schema.columns[c];
                keyed
                    .iter()
                    .rev()
                    .find(|(k, _)| k.as_str() == &**name)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| {
                        refuse(format!(
                            "{what}: {:?} needs primary-key column {name:?}",
                            schema.name
                        ))
                    })
            })
            .collect()
    }

    fn check_known(
        schema: &TableSchema,
        keyed: &[(String, Value)],
        what: &str,
    ) -> Result<(), Error> {
        for (k, _) in keyed {
            if schema.column(k).is_none() {
                return Err(refuse(format!(
                    "{what}: {:?} has no column {k:?}",
                    schema.name
                )));
            }
        }
        Ok(())
    }

    fn full_row(schema: &TableSchema, keyed: &[(String, Value)], what: &str) -> Result<Row, Error> {
        Self::check_known(schema, keyed, what)?;
        let cells: Result<Vec<Value>, Error> = schema
            .columns
            .iter()
            .map(|c| {
                keyed
                    .iter()
                    .rev()
                    .find(|(k, _)| k.as_str() == &**c)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| {
                        refuse(format!(
                            "{what}: a full {:?} row must name column {c:?}",
                            schema.name
                        ))
                    })
            })
            .collect();
        Ok(Row::from(cells?))
    }

    fn keyed(schema: &TableSchema, row: &Row) -> KeyedRow {
        schema
            .columns
            .iter()
            .zip(row.iter())
            .map(|(c, v)| (String::from(&**c), v.to_value()))
            .collect()
    }

    /// `row(table, pk)`: reads one row by primary key (read-your-writes).
    pub fn row(&mut self, table: &str, pk: &[(String, Value)]) -> Result<Option<KeyedRow>, Error> {
        let schema = self.schema(table)?;
        Self::check_known(&schema, pk, "row")?;
        let cells = Self::pk_cells(&schema, pk, "row")?;
        Ok(self
            .room
            .tx_get(table, &cells)?
            .map(|r| Self::keyed(&schema, &r)))
    }

    /// `insert(table, row)`: a full row, every column named; an existing key is refused.
    pub fn insert(&mut self, table: &str, row: &[(String, Value)]) -> Result<(), Error> {
        let schema = self.schema(table)?;
        let full = Self::full_row(&schema, row, "insert")?;
        self.room.tx_add(table, full)
    }

    /// `update(table, row)`: pk columns required; only the named non-pk columns change;
    /// a missing row is a no-op.
    pub fn update(&mut self, table: &str, row: &[(String, Value)]) -> Result<(), Error> {
        let schema = self.schema(table)?;
        Self::check_known(&schema, row, "update")?;
        let pk = Self::pk_cells(&schema, row, "update")?;
        let Some(current) = self.room.tx_get(table, &pk)? else {
            return Ok(());
        };
        let mut cells: Vec<Value> = current.to_vec();
        for (k, v) in row {
            if let Some(c) = schema.column(k) {
                cells[c] = v.clone();
            }
        }
        self.room.tx_edit(table, Row::from(cells))
    }

    /// `upsert(table, row)`: a full row; replaces the existing row or inserts.
    pub fn upsert(&mut self, table: &str, row: &[(String, Value)]) -> Result<(), Error> {
        let schema = self.schema(table)?;
        let full = Self::full_row(&schema, row, "upsert")?;
        let pk: Vec<Value> = schema
            .primary_key
            .iter()
            .map(|&c| full.get(c).to_value())
            .collect();
        if self.room.tx_get(table, &pk)?.is_some() {
            self.room.tx_edit(table, full)
        } else {
            self.room.tx_add(table, full)
        }
    }

    /// `delete(table, pk)`: removes the row; a missing row is a no-op.
    pub fn delete(&mut self, table: &str, pk: &[(String, Value)]) -> Result<(), Error> {
        let schema = self.schema(table)?;
        Self::check_known(&schema, pk, "delete")?;
        let cells = Self::pk_cells(&schema, pk, "delete")?;
        if self.room.tx_get(table, &cells)?.is_some() {
            self.room.tx_remove(table, &cells)?;
        }
        Ok(())
    }

    /// `query(...)`: not available in room mutators. Always an
    /// [`ErrorCode::Environment`] error, which hosts classify as an `environment` deopt.
    pub fn query(&mut self) -> Result<(), Error> {
        Err(Error::new(
            ErrorCode::Environment,
            "tx.query is not available in room mutators (environment shortfall)",
        ))
    }

    /// `get(table, pk cells)`: positional read.
    pub fn get(&mut self, table: &str, pk: &[Value]) -> Result<Option<Row>, Error> {
        self.room.tx_get(table, pk)
    }

    /// `add(table, cells)`: a raw add of a full positional row.
    pub fn add(&mut self, table: &str, cells: Row) -> Result<(), Error> {
        self.room.tx_add(table, cells)
    }

    /// `remove(table, cells)`: a raw remove; `cells` is a full row or the pk cells.
    pub fn remove(&mut self, table: &str, cells: &[Value]) -> Result<(), Error> {
        let schema = self.schema(table)?;
        let pk: Vec<Value> = if cells.len() == schema.columns.len() {
            schema
                .primary_key
                .iter()
                .map(|&c| cells[c].clone())
                .collect()
        } else {
            cells.to_vec()
        };
        self.room.tx_remove(table, &pk)
    }

    /// `edit(table, old, new)`: a raw edit; a `None` cell in `new` keeps the current
    /// value. The primary key must not change and the row must exist.
    pub fn edit(&mut self, table: &str, old: &[Value], new: &[Option<Value>]) -> Result<(), Error> {
        let schema = self.schema(table)?;
        if old.len() != schema.columns.len() || new.len() != schema.columns.len() {
            return Err(refuse(format!(
                "edit: {:?} rows have {} columns",
                schema.name,
                schema.columns.len()
            )));
        }
        let pk: Vec<Value> = schema.primary_key.iter().map(|&c| old[c].clone()).collect();
        let Some(current) = self.room.tx_get(table, &pk)? else {
            return Err(refuse(format!(
                "edit: no {:?} row with that primary key",
                schema.name
            )));
        };
        let mut cells: Vec<Value> = current.to_vec();
        for (i, cell) in new.iter().enumerate() {
            if let Some(v) = cell {
                if schema.primary_key.contains(&i) && v.cell() != current.get(i) {
                    return Err(refuse(format!(
                        "edit: the primary key of a {:?} row cannot change",
                        schema.name
                    )));
                }
                cells[i] = v.clone();
            }
        }
        self.room.tx_edit(table, Row::from(cells))
    }
}

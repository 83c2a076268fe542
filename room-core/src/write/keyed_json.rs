//! The keyed transaction with its rows as JSON text, for mutators written across a
//! language boundary (the Node addon's JavaScript mutators, a C host's callback): one
//! conversion and one set of messages for every face.
//!
//! Keyed rows are JSON objects of column values (`{"id":"a","n":1}`); positional rows
//! and primary keys are JSON arrays of cells. Objects and arrays nested in a cell travel
//! as their JSON text (a JSON column's value). In [`MutationTx::edit_json`]'s `new`
//! cells, the marker object `{"$keep":true}` keeps the current value (JavaScript's
//! `undefined`).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::Value as Json;

use super::keyed::{KeyedRow, MutationTx};
use crate::contract::render_cell;
use crate::error::{Error, ErrorCode};
use crate::json::write::{write_row, write_str};
use crate::value::Value;

fn refused(message: String) -> Error {
    Error::new(ErrorCode::WriteRefused, message)
}

/// A JSON value as a cell: objects and arrays become their JSON text.
fn cell(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => Value::num(n.as_f64().unwrap_or(f64::NAN)),
        Json::String(s) => Value::str(s),
        other => Value::string(other.to_string()),
    }
}

/// A keyed row (JSON object) for method `what` on `table`.
fn keyed(json: &str, what: &str, table: &str) -> Result<KeyedRow, Error> {
    let v: Json = serde_json::from_str(json)
        .map_err(|e| refused(format!("{what}: the {table:?} row is not JSON: {e}")))?;
    let Json::Object(map) = v else {
        return Err(refused(format!(
            "{what}: the {table:?} row must be an object of column values"
        )));
    };
    Ok(map.iter().map(|(k, v)| (k.clone(), cell(v))).collect())
}

/// The items of a JSON array of cells.
fn items(json: &str, what: &str) -> Result<Vec<Json>, Error> {
    let v: Json = serde_json::from_str(json)
        .map_err(|e| refused(format!("{what}: the cells are not JSON: {e}")))?;
    match v {
        Json::Array(items) => Ok(items),
        _ => Err(refused(format!("{what}: the cells must be an array"))),
    }
}

fn cells(json: &str, what: &str) -> Result<Vec<Value>, Error> {
    Ok(items(json, what)?.iter().map(cell).collect())
}

/// A keyed row as a JSON object, columns in schema order.
fn keyed_text(row: &[(String, Value)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in row.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        write_str(&mut s, k);
        s.push(':');
        s.push_str(&render_cell(v));
    }
    s.push('}');
    s
}

impl MutationTx<'_> {
    /// [`MutationTx::row`] with the pk as a JSON object; the row as a JSON object.
    pub fn row_json(&mut self, table: &str, pk_json: &str) -> Result<Option<String>, Error> {
        let pk = keyed(pk_json, "row", table)?;
        Ok(self.row(table, &pk)?.map(|r| keyed_text(&r)))
    }

    /// [`MutationTx::insert`] with the row as a JSON object.
    pub fn insert_json(&mut self, table: &str, row_json: &str) -> Result<(), Error> {
        let row = keyed(row_json, "insert", table)?;
        self.insert(table, &row)
    }

    /// [`MutationTx::update`] with the row as a JSON object.
    pub fn update_json(&mut self, table: &str, row_json: &str) -> Result<(), Error> {
        let row = keyed(row_json, "update", table)?;
        self.update(table, &row)
    }

    /// [`MutationTx::upsert`] with the row as a JSON object.
    pub fn upsert_json(&mut self, table: &str, row_json: &str) -> Result<(), Error> {
        let row = keyed(row_json, "upsert", table)?;
        self.upsert(table, &row)
    }

    /// [`MutationTx::delete`] with the pk as a JSON object.
    pub fn delete_json(&mut self, table: &str, pk_json: &str) -> Result<(), Error> {
        let pk = keyed(pk_json, "delete", table)?;
        self.delete(table, &pk)
    }

    /// [`MutationTx::get`] with the pk cells as a JSON array; the row as a JSON array.
    pub fn get_json(&mut self, table: &str, pk_json: &str) -> Result<Option<String>, Error> {
        let pk = cells(pk_json, "get")?;
        Ok(self.get(table, &pk)?.map(|r| {
            let mut s = String::new();
            write_row(&mut s, &r);
            s
        }))
    }

    /// [`MutationTx::add`] with the cells as a JSON array.
    pub fn add_json(&mut self, table: &str, cells_json: &str) -> Result<(), Error> {
        let row = cells(cells_json, "add")?;
        self.add(table, row.into())
    }

    /// [`MutationTx::remove`] with the cells as a JSON array.
    pub fn remove_json(&mut self, table: &str, cells_json: &str) -> Result<(), Error> {
        let row = cells(cells_json, "remove")?;
        self.remove(table, &row)
    }

    /// [`MutationTx::edit`] with both rows as JSON arrays; a `{"$keep":true}` cell in
    /// `new_json` keeps the current value.
    pub fn edit_json(&mut self, table: &str, old_json: &str, new_json: &str) -> Result<(), Error> {
        let old = cells(old_json, "edit")?;
        let new: Vec<Option<Value>> = items(new_json, "edit")?
            .iter()
            .map(|v| match v.get("$keep") {
                Some(_) => None,
                None => Some(cell(v)),
            })
            .collect();
        self.edit(table, &old, &new)
    }
}

#[cfg(test)]
mod tests {
    use crate::room::Room;

    /// The write tests' room (deck / slide / member) with mutation 1 of `c` open.
    fn room() -> Room {
        let mut r = super::super::tests::room();
        r.enable_writes(&["deck", "slide"]).unwrap();
        r.begin_mutation("c", 1, Some("m"), None).unwrap();
        r
    }

    #[test]
    fn keyed_rows_round_trip_as_json_objects() {
        let mut r = room();
        let mut tx = r.mutation_tx().unwrap();
        assert_eq!(
            tx.row_json("deck", r#"{"id":"d1"}"#).unwrap().as_deref(),
            Some(r#"{"id":"d1","title":"Deck"}"#)
        );
        tx.insert_json("deck", r#"{"id":"d2","title":{"x":[1]}}"#)
            .unwrap();
        assert_eq!(
            tx.get_json("deck", r#"["d2"]"#).unwrap().as_deref(),
            Some(r#"["d2","{\"x\":[1]}"]"#)
        );
        tx.edit_json(
            "slide",
            r#"["s1","d1",1]"#,
            r#"[{"$keep":true},{"$keep":true},7]"#,
        )
        .unwrap();
        assert_eq!(
            tx.row_json("slide", r#"{"id":"s1"}"#).unwrap().as_deref(),
            Some(r#"{"id":"s1","deckId":"d1","pos":7}"#)
        );
        tx.delete_json("slide", r#"{"id":"s2"}"#).unwrap();
        assert_eq!(tx.row_json("slide", r#"{"id":"s2"}"#).unwrap(), None);
    }

    #[test]
    fn malformed_rows_are_write_refusals_that_say_what() {
        let mut r = room();
        let mut tx = r.mutation_tx().unwrap();
        let e = tx.insert_json("deck", "[1]").unwrap_err();
        assert_eq!(e.code().name(), "WRITE_REFUSED");
        assert_eq!(
            e.message(),
            "insert: the \"deck\" row must be an object of column values"
        );
        let e = tx.add_json("deck", "{").unwrap_err();
        assert!(
            e.message().starts_with("add: the cells are not JSON"),
            "{e:?}"
        );
        let e = tx.remove_json("deck", "{}").unwrap_err();
        assert_eq!(e.message(), "remove: the cells must be an array");
    }
}

//! JSON input: wire cells and rows straight from serde, with no intermediate tree.

use alloc::vec::Vec;
use core::fmt;

use serde::de::{self, Deserialize, Deserializer, SeqAccess, Visitor};

use crate::value::row::MAX_ROW_CELLS;
use crate::value::{Row, Value};

/// A wire cell as it arrives in JSON: `null | boolean | number | string`. Objects and
/// arrays are malformed input (a wire cell is null, a boolean, a number or a string).
#[derive(Debug)]
pub(crate) struct Cell(pub Value);

struct CellVisitor;

impl<'de> Visitor<'de> for CellVisitor {
    type Value = Cell;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a cell (null, boolean, number or string)")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Cell, E> {
        Ok(Cell(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Cell, E> {
        Ok(Cell(Value::Null))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Cell, E> {
        Ok(Cell(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Cell, E> {
        Ok(Cell(Value::num(v as f64)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Cell, E> {
        Ok(Cell(Value::num(v as f64)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Cell, E> {
        if !v.is_finite() {
            return Err(E::custom("a number cell must be finite"));
        }
        Ok(Cell(Value::num(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Cell, E> {
        Ok(Cell(Value::str(v)))
    }

    fn visit_string<E: de::Error>(self, v: alloc::string::String) -> Result<Cell, E> {
        Ok(Cell(Value::string(v)))
    }
}

impl<'de> Deserialize<'de> for Cell {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Cell, D::Error> {
        d.deserialize_any(CellVisitor)
    }
}

/// A positional row: a JSON array of cells.
#[derive(Debug)]
pub(crate) struct WireRow(pub Row);

struct RowVisitor;

impl<'de> Visitor<'de> for RowVisitor {
    type Value = WireRow;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a row (an array of cells)")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<WireRow, A::Error> {
        // Rows are short: gather on the stack and allocate once, for the shared image.
        const INLINE: usize = 16;
        let mut inline: [Value; INLINE] = core::array::from_fn(|_| Value::Null);
        let mut n = 0;
        while n < INLINE {
            match seq.next_element::<Cell>()? {
                Some(Cell(v)) => {
                    inline[n] = v;
                    n += 1;
                }
                None => return Ok(WireRow(Row::new(&inline[..n]))),
            }
        }
        let mut cells: Vec<Value> = inline.into_iter().collect();
        while let Some(Cell(v)) = seq.next_element::<Cell>()? {
            if cells.len() == MAX_ROW_CELLS {
                return Err(de::Error::custom(format_args!(
                    "a row of more than {MAX_ROW_CELLS} cells"
                )));
            }
            cells.push(v);
        }
        Ok(WireRow(Row::from(cells)))
    }
}

impl<'de> Deserialize<'de> for WireRow {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<WireRow, D::Error> {
        d.deserialize_seq(RowVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse_and_refuse_nested_values() {
        // 1e400 overflows a double: serde_json refuses it.
        assert!(serde_json::from_str::<WireRow>(r#"[1, 1e400]"#).is_err());
        let r: WireRow = serde_json::from_str(r#"[1, "a", null, true, -0]"#).unwrap();
        assert_eq!(r.0.len(), 5);
        assert!(matches!(r.0.get(4), crate::value::CellRef::Num(f) if f.is_sign_positive()));
        assert!(serde_json::from_str::<WireRow>(r#"[[1]]"#).is_err());
        assert!(serde_json::from_str::<WireRow>(r#"[{"a":1}]"#).is_err());
        assert!(serde_json::from_str::<WireRow>(r#"{"a":1}"#).is_err());
    }
}

//! A row holds at most `MAX_ROW_CELLS` cells: a hello with a wider table and an upstream
//! row with more cells are refused with an error that says so — never a panic.

use rindle_room_core::contract::JsonRoom;
use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::value::row::MAX_ROW_CELLS;
use rindle_room_core::TableSchema;
use serde_json::json;

fn hello(columns: usize) -> (String, String) {
    let names: Vec<String> = (0..columns).map(|i| format!("c{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let t = TableSchema::new("wide", &refs, &[0]);
    let fp = normalized_fp([t].iter());
    let text = json!({
        "epoch": 1, "comparatorVersion": 2, "normalizedFp": fp,
        "tables": [{"name": "wide", "columns": names, "primaryKey": [0]}],
    });
    (text.to_string(), fp)
}

#[test]
fn a_hello_with_a_table_wider_than_a_row_is_refused() {
    let (text, _) = hello(MAX_ROW_CELLS + 1);
    let e = JsonRoom::open(&text, 1000.0).expect_err("too wide");
    let msg = e.to_string();
    assert!(
        msg.contains("has 16384 columns; a row holds at most 16383"),
        "{msg}"
    );
}

#[test]
fn the_widest_table_opens_and_its_rows_round_trip() {
    let (text, fp) = hello(MAX_ROW_CELLS);
    let mut room = JsonRoom::open(&text, 1000.0).expect("as wide as a row");
    let mut row: Vec<serde_json::Value> = vec![json!(null); MAX_ROW_CELLS];
    row[0] = json!(1);
    row[MAX_ROW_CELLS - 1] = json!("last");
    let batch = json!({"epoch": 1, "seq": 0, "normalizedFp": fp, "cv": 1,
        "ops": [{"table": "wide", "op": "add", "row": row}]});
    let applied = room.apply(&batch.to_string()).expect("applied");
    assert_eq!(applied, r#"{"applied":"snapshot","rows":1}"#);
}

#[test]
fn an_upstream_row_wider_than_a_row_is_an_error_not_a_panic() {
    let (text, fp) = hello(3);
    let mut room = JsonRoom::open(&text, 1000.0).expect("opens");
    let row = vec![json!(0); MAX_ROW_CELLS + 1];
    let batch = json!({"epoch": 1, "seq": 0, "normalizedFp": fp, "cv": 1,
        "ops": [{"table": "wide", "op": "add", "row": row}]});
    let e = room.apply(&batch.to_string()).expect_err("refused");
    assert!(
        e.to_string().contains("a row of more than 16383 cells"),
        "{e}"
    );
}

//! Boots a room from a JSON file of tables and rows, subscribes a query and prints every
//! frame a downstream client would receive.
//!
//! ```text
//! cargo run -p rindle-room-core --example serve_file [-- path/to/data.json]
//! ```
//!
//! Without a path it uses the embedded demo (`examples/data/issues.json`). The file holds
//! `tables` (`name`, `columns`, `primaryKey`, `rows`), a wire-AST `query`, and `changes`:
//! a list of upstream batches, each a list of normalized ops (`add` / `remove` / `edit`).

use rindle_room_core::contract::JsonRoom;
use rindle_room_core::fingerprint::normalized_fp;
use rindle_room_core::TableSchema;
use serde_json::{json, Value};

const DEMO: &str = include_str!("data/issues.json");

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("serve_file: {msg}");
    std::process::exit(1);
}

fn main() {
    let (name, text) = match std::env::args().nth(1) {
        Some(path) => match std::fs::read_to_string(&path) {
            Ok(t) => (path, t),
            Err(e) => fail(format_args!("cannot read {path}: {e}")),
        },
        None => (String::from("<embedded demo>"), String::from(DEMO)),
    };
    let doc: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| fail(format_args!("{name} is not JSON: {e}")));
    let mut tables: Vec<&Value> = doc["tables"]
        .as_array()
        .unwrap_or_else(|| fail("`tables` must be an array"))
        .iter()
        .collect();
    // The daemon's hello lists tables sorted by name, and a room refuses any other order.
    tables.sort_by(|a, b| {
        let name = |t: &Value| t["name"].as_str().unwrap_or_default().as_bytes().to_vec();
        name(a).cmp(&name(b))
    });

    // The upstream hello: every table, with its fingerprint.
    let schemas: Vec<TableSchema> = tables
        .iter()
        .map(|t| {
            let cols: Vec<&str> = t["columns"]
                .as_array()
                .unwrap_or_else(|| fail("a table needs `columns`"))
                .iter()
                .map(|c| {
                    c.as_str()
                        .unwrap_or_else(|| fail("column names are strings"))
                })
                .collect();
            let pk: Vec<usize> = t["primaryKey"]
                .as_array()
                .unwrap_or_else(|| fail("a table needs `primaryKey`"))
                .iter()
                .map(|k| {
                    k.as_u64()
                        .unwrap_or_else(|| fail("primaryKey holds indices"))
                        as usize
                })
                .collect();
            TableSchema::new(
                t["name"]
                    .as_str()
                    .unwrap_or_else(|| fail("a table needs a name")),
                &cols,
                &pk,
            )
        })
        .collect();
    let fp = normalized_fp(schemas.iter());
    let hello = json!({
        "epoch": 1,
        "comparatorVersion": 2,
        "tables": tables.iter().map(|t| json!({
            "name": t["name"], "columns": t["columns"], "primaryKey": t["primaryKey"]
        })).collect::<Vec<_>>(),
        "normalizedFp": fp,
    });
    let mut room = JsonRoom::open(&hello.to_string(), 30_000.0)
        .unwrap_or_else(|e| fail(format_args!("hello refused: {e}")));

    // The seq-0 snapshot: every row as an add.
    let mut ops = Vec::new();
    for t in tables {
        for row in t["rows"].as_array().into_iter().flatten() {
            ops.push(json!({"table": t["name"], "op": "add", "row": row}));
        }
    }
    let snapshot = json!({"epoch": 1, "seq": 0, "normalizedFp": fp, "ops": ops, "cv": 1});
    let status = room
        .apply(&snapshot.to_string())
        .unwrap_or_else(|e| fail(format_args!("snapshot refused: {e}")));
    eprintln!("# {name}: upstream snapshot {status}");

    let res = room
        .subscribe("demo:1", 1.0, &doc["query"].to_string(), 0.0)
        .unwrap_or_else(|e| fail(format_args!("subscribe refused: {e}")));
    let res: Value = serde_json::from_str(&res).unwrap_or_else(|e| fail(e));
    println!(
        "{}",
        json!({"t": "nhello", "queryId": 1, "hello": res["hello"]})
    );
    println!(
        "{}",
        json!({"t": "nbatch", "queryId": 1, "batch": res["snapshot"]})
    );

    for (i, change) in doc["changes"].as_array().into_iter().flatten().enumerate() {
        let batch =
            json!({"epoch": 1, "seq": i + 1, "normalizedFp": fp, "ops": change, "cv": i + 2});
        let status = room
            .apply(&batch.to_string())
            .unwrap_or_else(|e| fail(format_args!("batch {} refused: {e}", i + 1)));
        eprintln!("# upstream batch {}: {status}", i + 1);
        let frames: Value = serde_json::from_str(&room.commit_all()).unwrap_or_else(|e| fail(e));
        for f in frames.as_array().into_iter().flatten() {
            println!(
                "{}",
                json!({"t": "nbatch", "queryId": 1, "batch": f["batch"]})
            );
        }
    }
}

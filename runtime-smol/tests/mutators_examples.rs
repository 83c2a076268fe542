//! The example configs' mutators, built through `Config::registry` and run against a
//! real room.

mod mutators_support;

use std::path::Path;

use mutators_support::{n, rejected, room_with, row, rows, run_named, s};
use rindle_room_core::{TableSchema, Value};
use rindle_room_smol::config::Config;
use serde_json::{json, Value as Json};

fn load(name: &str) -> Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    let text = std::fs::read_to_string(path).unwrap();
    Config::from_toml_str_with_env(&text, |_| None).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn room_toml_notes() {
    let tables = vec![
        TableSchema::new("note", &["id", "doc", "body", "owner", "tags"], &[0]),
        TableSchema::new("member", &["user", "role"], &[0]),
    ];
    let config = load("room.toml");
    let reg = config.registry(&tables).unwrap();
    let mut room = room_with(tables, &[], &["note"]);

    // addNote
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "addNote",
            json!({"id": "a", "body": "x"}),
            ""
        )),
        "sign in to add notes"
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "addNote",
            json!({"id": "a"}),
            "ann"
        )),
        "a note needs a text body"
    );
    run_named(
        &mut room,
        &reg,
        "addNote",
        json!({"id": "a", "body": "x"}),
        "ann",
    )
    .unwrap();
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "addNote",
            json!({"id": "a", "body": "y"}),
            "ann"
        )),
        "note already exists"
    );
    run_named(
        &mut room,
        &reg,
        "addNote",
        json!({"id": "b", "body": "y", "tags": ["t"]}),
        "bob",
    )
    .unwrap();
    assert_eq!(
        rows(&room, "note"),
        vec![
            vec![s("a"), s("doc-1"), s("x"), s("ann"), Value::Null],
            vec![s("b"), s("doc-1"), s("y"), s("bob"), s(r#"["t"]"#)],
        ]
    );

    // editNote
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "editNote",
            json!({"id": "a", "body": "z"}),
            "bob"
        )),
        "you can only edit your own notes"
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "editNote",
            json!({"id": "q", "body": "z"}),
            "bob"
        )),
        "no such note"
    );
    run_named(
        &mut room,
        &reg,
        "editNote",
        json!({"id": "a", "body": "z"}),
        "ann",
    )
    .unwrap();
    assert_eq!(row(&room, "note", &s("a")).unwrap()[2], s("z"));

    // tagNote
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "tagNote",
            json!({"id": "a", "tags": [], "color": "blue"}),
            "ann"
        )),
        "unknown color"
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "tagNote",
            json!({"id": "a", "tags": "x", "color": null}),
            "ann"
        )),
        "argument `args.tags` must be an array, got a string"
    );
    run_named(
        &mut room,
        &reg,
        "tagNote",
        json!({"id": "a", "tags": ["p", "q"], "color": "red"}),
        "ann",
    )
    .unwrap();
    assert_eq!(
        row(&room, "note", &s("a")),
        Some(vec![
            s("a"),
            s("doc-1"),
            s("z"),
            s("ann"),
            s(r#"{"color":"red","list":["p","q"]}"#)
        ])
    );

    // deleteNote
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "deleteNote",
            json!({"id": "a"}),
            "bob"
        )),
        "you can only delete your own notes"
    );
    run_named(&mut room, &reg, "deleteNote", json!({"id": "a"}), "ann").unwrap();
    assert_eq!(row(&room, "note", &s("a")), None);
    assert_eq!(rows(&room, "note").len(), 1);
}

/// The demo data file's tables and rows (the file `demo.toml` points at).
fn demo_data(config: &Config) -> (Vec<TableSchema>, Vec<(String, Vec<Value>)>) {
    let text = std::fs::read_to_string(&config.demo.as_ref().unwrap().data).unwrap();
    let data: Json = serde_json::from_str(&text).unwrap();
    let mut tables = Vec::new();
    let mut rows = Vec::new();
    for t in data["tables"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        let columns: Vec<&str> = t["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap())
            .collect();
        let pk: Vec<usize> = t["primaryKey"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_u64().unwrap() as usize)
            .collect();
        tables.push(TableSchema::new(name, &columns, &pk));
        for r in t["rows"].as_array().unwrap() {
            let cells = r
                .as_array()
                .unwrap()
                .iter()
                .map(|c| match c {
                    Json::Null => Value::Null,
                    Json::Bool(b) => Value::Bool(*b),
                    Json::Number(x) => Value::num(x.as_f64().unwrap()),
                    Json::String(x) => Value::str(x),
                    other => Value::string(other.to_string()),
                })
                .collect();
            rows.push((name.to_string(), cells));
        }
    }
    (tables, rows)
}

#[test]
fn demo_toml_issues() {
    let config = Config::load(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples")
            .join("demo.toml"),
    )
    .unwrap();
    let (tables, seed) = demo_data(&config);
    let reg = config.registry(&tables).unwrap();
    let seed: Vec<(&str, Vec<Value>)> = seed.iter().map(|(t, r)| (t.as_str(), r.clone())).collect();
    let mut room = room_with(tables, &seed, &["issue", "comment"]);
    let comments = rows(&room, "comment").len();

    let comment =
        |id: u32, issue: u32, body: &str| json!({"id": id, "issueID": issue, "body": body});
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "addComment",
            comment(500, 1, "hi"),
            ""
        )),
        "sign in to comment"
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "addComment",
            comment(500, 99, "hi"),
            "ada"
        )),
        "no such issue"
    );
    // Issue 3 is closed in the demo data.
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "addComment",
            comment(500, 3, "hi"),
            "ada"
        )),
        "the issue is closed"
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "addComment",
            json!({"id": "500", "issueID": 1, "body": "hi"}),
            "ada"
        )),
        "argument `args.id` must be an integer, got a string"
    );
    run_named(&mut room, &reg, "addComment", comment(500, 1, "hi"), "ada").unwrap();
    assert_eq!(
        row(&room, "comment", &n(500.0)),
        Some(vec![n(500.0), n(1.0), s("hi")])
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "addComment",
            comment(500, 1, "again"),
            "ada"
        )),
        "add of an existing primary key in `comment`"
    );

    run_named(&mut room, &reg, "closeIssue", json!({"id": 1}), "ada").unwrap();
    assert_eq!(row(&room, "issue", &n(1.0)).unwrap()[2], Value::Bool(false));
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "closeIssue",
            json!({"id": 1}),
            "ada"
        )),
        "the issue is already closed"
    );
    assert_eq!(
        rejected(run_named(
            &mut room,
            &reg,
            "addComment",
            comment(501, 1, "late"),
            "ada"
        )),
        "the issue is closed"
    );

    // The generated CRUD mutators check nothing; `user` is not owned.
    run_named(
        &mut room,
        &reg,
        "issue.update",
        json!({"id": 1, "open": true}),
        "",
    )
    .unwrap();
    run_named(&mut room, &reg, "comment.delete", json!({"id": 500}), "").unwrap();
    assert_eq!(rows(&room, "comment").len(), comments);
    assert!(reg.get("user.insert").is_none());
}

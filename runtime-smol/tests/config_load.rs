//! Loading the configuration: the example files, defaults, the JSON accessors, path
//! resolution, and the schema-time checks that build the mutator registry.

use std::path::{Path, PathBuf};

use rindle_room_core::TableSchema;
use rindle_room_smol::config::{defaults, Config, JournalConfig, LogFormat};
use serde_json::json;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn no_env(_: &str) -> Option<String> {
    None
}

/// The minimal valid configuration: a demo room with one token key.
const MINIMAL: &str = r#"
[demo]
data = "rows.json"

[downstream]
doc_id = "d"

[downstream.token_keys]
k1 = "secret"
"#;

#[test]
fn the_reference_example_parses_with_every_option() {
    let path = examples().join("room.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let c = Config::from_toml_str_with_env(&text, no_env).unwrap_or_else(|e| panic!("{e}"));

    assert_eq!(c.server.bind, "127.0.0.1");
    assert_eq!(c.server.port, 7700);
    assert_eq!(c.server.log_format, LogFormat::Text);

    let up = c.upstream.as_ref().expect("[upstream]");
    assert!(c.demo.is_none());
    assert_eq!(up.ws_url, "ws://127.0.0.1:7601");
    assert_eq!(up.control_url, "http://127.0.0.1:7600");
    assert_eq!(up.auth_token.as_deref(), Some("change-me"));
    assert_eq!(up.lease_ttl_ms, Some(60_000));
    assert_eq!(up.client_id.as_deref(), Some("room-doc-1"));
    assert_eq!(
        up.footprint_ast_json().unwrap(),
        json!({
            "table": "note",
            "where": {
                "type": "simple",
                "op": "=",
                "left": {"type": "column", "name": "doc"},
                "right": {"type": "literal", "value": "doc-1"}
            }
        })
    );

    let down = &c.downstream;
    assert_eq!(down.doc_id, "doc-1");
    assert_eq!(
        down.token_keys.get("k1").map(String::as_str),
        Some("change-me-too")
    );
    assert_eq!(down.idle_ttl_ms, 30_000);
    assert_eq!(down.sweep_interval_ms, 1_000);
    assert_eq!(down.revocation_window_ms, 1_800_000);
    assert_eq!(down.send_budget_bytes, 4 * 1024 * 1024);

    let control = c.control.as_ref().expect("[control]");
    assert_eq!(control.auth_token, "change-me-three");
    assert_eq!(control.port, 7701);

    let w = c.writes.as_ref().expect("[writes]");
    assert_eq!(w.owned_tables, ["note"]);
    assert_eq!(w.group_commit_ms, 5);
    assert_eq!(w.flush_debounce_ms, 250);
    assert_eq!(w.flush_dirty_max, 512);
    assert!(!w.crud);
    let scopes = w.scopes_json().unwrap().expect("scopes");
    assert_eq!(scopes[0]["table"], "note");
    assert_eq!(scopes[0]["writable"]["joinKeyCols"], json!(["doc"]));
    assert_eq!(scopes[0]["footprintWhere"]["right"]["value"], "doc-1");
    match &w.journal {
        JournalConfig::File { path } => assert_eq!(path, Path::new("room.journal")),
        other => panic!("expected a file journal, got {other:?}"),
    }

    let auth = c.authority.as_ref().expect("[authority]");
    assert!(auth.apply_url.ends_with("/api/rindle/apply-row-change-txn"));
    assert!(auth.claim_url.ends_with("/api/rindle/claim-room-epoch"));
    assert!(auth.lmids_url.ends_with("/api/rindle/room-lmids"));
    assert_eq!(
        auth.headers.get("authorization").map(String::as_str),
        Some("Bearer change-me-four")
    );

    let names: Vec<&str> = c.mutators.keys().map(String::as_str).collect();
    assert_eq!(names, ["addNote", "deleteNote", "editNote", "tagNote"]);
}

#[test]
fn the_demo_example_parses() {
    let c = Config::load(examples().join("demo.toml")).unwrap_or_else(|e| panic!("{e}"));
    assert!(c.upstream.is_none());
    // Relative paths resolve against the file's directory.
    let data = &c.demo.as_ref().unwrap().data;
    assert_eq!(data, &examples().join("../src/server/data/demo.json"));
    assert!(data.is_file(), "the demo data exists: {}", data.display());
    let w = c.writes.as_ref().unwrap();
    assert!(w.crud);
    assert!(matches!(w.journal, JournalConfig::Memory));
    assert!(w.scopes_json().unwrap().is_none());
    assert_eq!(
        c.mutators.keys().map(String::as_str).collect::<Vec<_>>(),
        ["addComment", "closeIssue"]
    );
    assert!(c.control.is_none() && c.authority.is_none());
}

#[test]
fn every_example_loads_from_disk() {
    let mut seen = 0;
    for entry in std::fs::read_dir(examples()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
            seen += 1;
        }
    }
    assert!(seen >= 2, "room.toml and demo.toml at least");
}

#[test]
fn defaults_fill_everything_optional() {
    let c = Config::from_toml_str_with_env(MINIMAL, no_env).unwrap();
    assert_eq!(c.server.bind, "127.0.0.1");
    assert_eq!(c.server.port, 0);
    assert_eq!(c.server.log_format, LogFormat::Text);
    assert_eq!(c.downstream.idle_ttl_ms, defaults::idle_ttl_ms());
    assert_eq!(
        c.downstream.sweep_interval_ms,
        defaults::sweep_interval_ms()
    );
    assert_eq!(
        c.downstream.revocation_window_ms,
        defaults::revocation_window_ms()
    );
    assert_eq!(
        c.downstream.send_budget_bytes,
        defaults::send_budget_bytes()
    );
    assert!(c.control.is_none() && c.writes.is_none() && c.authority.is_none());
    assert!(c.mutators.is_empty());
    // Relative paths stay as written without a file to resolve against.
    assert_eq!(c.demo.unwrap().data, Path::new("rows.json"));

    let writes = format!("{MINIMAL}\n[writes]\nowned_tables = [\"t\"]\n");
    let w = Config::from_toml_str_with_env(&writes, no_env)
        .unwrap()
        .writes
        .unwrap();
    assert_eq!(w.group_commit_ms, defaults::group_commit_ms());
    assert_eq!(w.flush_debounce_ms, defaults::flush_debounce_ms());
    assert_eq!(w.flush_dirty_max, defaults::flush_dirty_max());
    assert!(!w.crud && w.scopes.is_none());
    assert!(matches!(w.journal, JournalConfig::Memory));
}

#[test]
fn json_options_accept_json_text_or_inline_toml() {
    let upstream = |ast: &str| {
        format!(
            "[upstream]\nws_url = \"ws://h:1\"\ncontrol_url = \"http://h:2\"\nfootprint_ast = {ast}\n\
             [downstream]\ndoc_id = \"d\"\ntoken_keys = {{ k = \"s\" }}\n"
        )
    };
    let text = Config::from_toml_str_with_env(
        &upstream(r#"'{"table": "t", "where": null, "limit": 5}'"#),
        no_env,
    )
    .unwrap();
    assert_eq!(
        text.upstream.unwrap().footprint_ast_json().unwrap(),
        json!({"table": "t", "where": null, "limit": 5})
    );
    let inline = Config::from_toml_str_with_env(
        &upstream(r#"{ table = "t", limit = 5, one = true, orderBy = [["id", "asc"]] }"#),
        no_env,
    )
    .unwrap();
    assert_eq!(
        inline.upstream.unwrap().footprint_ast_json().unwrap(),
        json!({"table": "t", "limit": 5, "one": true, "orderBy": [["id", "asc"]]})
    );

    let scopes = |s: &str| format!("{MINIMAL}\n[writes]\nowned_tables = [\"t\"]\nscopes = {s}\n");
    let as_text = Config::from_toml_str_with_env(
        &scopes(r#"'[{"table": "t", "writable": {"kind": "none"}}]'"#),
        no_env,
    )
    .unwrap();
    let as_toml = Config::from_toml_str_with_env(
        &scopes(r#"[{ table = "t", writable = { kind = "none" } }]"#),
        no_env,
    )
    .unwrap();
    let want = json!([{"table": "t", "writable": {"kind": "none"}}]);
    assert_eq!(
        as_text.writes.unwrap().scopes_json().unwrap(),
        Some(want.clone())
    );
    assert_eq!(as_toml.writes.unwrap().scopes_json().unwrap(), Some(want));
}

#[test]
fn load_resolves_relative_paths_and_names_the_file() {
    let dir = std::env::temp_dir().join(format!("rindle-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("room.toml");
    let text = format!(
        "{MINIMAL}\n[writes]\nowned_tables = [\"t\"]\njournal = {{ kind = \"file\", path = \"j/room.journal\" }}\n"
    );
    std::fs::write(&path, text).unwrap();
    let c = Config::load(&path).unwrap();
    assert_eq!(c.demo.unwrap().data, dir.join("rows.json"));
    match c.writes.unwrap().journal {
        JournalConfig::File { path } => assert_eq!(path, dir.join("j/room.journal")),
        other => panic!("{other:?}"),
    }

    // Absolute paths are kept.
    let abs = MINIMAL.replace("\"rows.json\"", "\"/srv/rows.json\"");
    std::fs::write(&path, abs).unwrap();
    assert_eq!(
        Config::load(&path).unwrap().demo.unwrap().data,
        Path::new("/srv/rows.json")
    );

    // Errors name the file (and the line, when parsing).
    std::fs::write(&path, format!("bogus = 1\n{MINIMAL}")).unwrap();
    let err = Config::load(&path).unwrap_err();
    assert_eq!(err.file(), Some(path.as_path()));
    let shown = err.to_string();
    assert!(
        shown.starts_with(&format!("{}:1:1: unknown option `bogus`", path.display())),
        "{shown}"
    );
    std::fs::write(&path, MINIMAL.replace("\"d\"", "\"\"")).unwrap();
    let err = Config::load(&path).unwrap_err();
    assert_eq!(err.option(), Some("downstream.doc_id"));
    assert!(
        err.to_string()
            .starts_with(&format!("{}: `downstream.doc_id` is empty", path.display())),
        "{err}"
    );

    let missing = dir.join("nope.toml");
    let err = Config::load(&missing).unwrap_err();
    assert!(
        err.to_string()
            .contains("cannot read the configuration file"),
        "{err}"
    );
    assert!(std::error::Error::source(&err).is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn note_tables() -> Vec<TableSchema> {
    vec![
        TableSchema::new("note", &["id", "doc", "body", "owner", "tags"], &[0]),
        TableSchema::new("member", &["user", "role"], &[0]),
    ]
}

#[test]
fn schema_checks_and_the_registry() {
    let path = examples().join("room.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let c = Config::from_toml_str_with_env(&text, no_env).unwrap();
    c.check_schema(&note_tables()).unwrap();
    let registry = c.registry(&note_tables()).unwrap();
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["addNote", "deleteNote", "editNote", "tagNote"]
    );

    let renamed = vec![TableSchema::new("notes", &["id"], &[0])];
    let err = c.check_schema(&renamed).unwrap_err();
    assert_eq!(err.option(), Some("writes.owned_tables"));
    assert!(
        err.message()
            .contains("names \"note\", which the room does not have (its tables: \"notes\")"),
        "{err}"
    );

    let narrow = vec![TableSchema::new(
        "note",
        &["id", "doc", "body", "owner"],
        &[0],
    )];
    let err = c.registry(&narrow).unwrap_err();
    assert_eq!(err.option(), Some("mutators.addNote"));
    assert!(
        err.message().contains("mutators.addNote: steps[5] (insert): `row.tags`: table \"note\" has no column \"tags\""),
        "{err}"
    );

    // CRUD mutators join the declarative ones for every owned table.
    let demo = Config::load(examples().join("demo.toml")).unwrap();
    let tables = vec![
        TableSchema::new(
            "issue",
            &["id", "title", "open", "created", "creatorID"],
            &[0],
        ),
        TableSchema::new("user", &["id", "name"], &[0]),
        TableSchema::new("comment", &["id", "issueID", "body"], &[0]),
    ];
    let registry = demo.registry(&tables).unwrap();
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        [
            "addComment",
            "closeIssue",
            "comment.delete",
            "comment.insert",
            "comment.update",
            "comment.upsert",
            "issue.delete",
            "issue.insert",
            "issue.update",
            "issue.upsert",
        ]
    );
}

//! Declarative mutators: parsing, compiling, validating against a schema, and running
//! every step kind and every failure against a real room.

mod mutators_support;

use mutators_support::{n, rejected, room, row, rows, run, s, seeded, tables};
use rindle_room_core::{TableSchema, Value};
use rindle_room_smol::mutators::declarative::{
    compile, validate, DeclarativeMutator, MutatorSpec, SchemaMismatch, SpecError,
};
use serde_json::json;

/// Compiles `steps = [ … ]` (the TOML between the brackets).
fn mutator(steps: &str) -> DeclarativeMutator {
    let spec = MutatorSpec::from_toml_str(&format!("steps = [\n{steps}\n]"))
        .unwrap_or_else(|e| panic!("the spec parses: {e}"));
    compile("m", &spec).unwrap_or_else(|e| panic!("the spec compiles: {e}"))
}

/// The parse error of `steps = [ … ]`.
fn parse_error(steps: &str) -> String {
    MutatorSpec::from_toml_str(&format!("steps = [\n{steps}\n]"))
        .err()
        .unwrap_or_else(|| panic!("expected a parse error for {steps}"))
        .to_string()
}

/// The compile error of `steps = [ … ]`.
fn compile_error(steps: &str) -> String {
    let spec = MutatorSpec::from_toml_str(&format!("steps = [\n{steps}\n]")).expect("parses");
    compile("m", &spec)
        .expect_err("expected a compile error")
        .to_string()
}

/// The schema-validation error of `steps = [ … ]` against [`tables`].
fn validate_error(steps: &str) -> String {
    let spec = MutatorSpec::from_toml_str(&format!("steps = [\n{steps}\n]")).expect("parses");
    validate(&spec, &tables())
        .expect_err("expected a validation error")
        .to_string()
}

const ADD_NOTE: &str = r#"
  { require = "args.id", type = "string" },
  { read = "note", key = { id = "$args.id" }, as = "existing" },
  { check = "absent", value = "$existing", reason = "note already exists" },
  { check = "eq", left = "$args.owner", right = "$user", reason = "you can only add your own notes" },
  { insert = "note", row = { id = "$args.id", body = "$args.body", owner = "$user", tags = "$args.tags?" } },
"#;

#[test]
fn the_issue_example_runs_end_to_end() {
    let mut room = seeded();
    let m = mutator(ADD_NOTE);
    let args = json!({"id": "n2", "body": "hi", "owner": "bob"});
    run(&mut room, &m, args.clone(), "bob").expect("applies");
    assert_eq!(
        row(&room, "note", &s("n2")),
        Some(vec![s("n2"), s("hi"), s("bob"), Value::Null])
    );
    assert_eq!(
        rejected(run(&mut room, &m, args, "bob")),
        "note already exists"
    );
    let other = json!({"id": "n3", "body": "hi", "owner": "bob"});
    assert_eq!(
        rejected(run(&mut room, &m, other, "ann")),
        "you can only add your own notes"
    );
    assert_eq!(row(&room, "note", &s("n3")), None);
}

#[test]
fn require_checks_presence_and_types() {
    let mut room = seeded();
    let m = mutator(r#"{ require = "args.id", type = "string" }"#);
    assert_eq!(
        rejected(run(&mut room, &m, json!({}), "ann")),
        "missing argument `args.id`"
    );
    assert_eq!(
        rejected(run(&mut room, &m, json!({"id": 5}), "ann")),
        "argument `args.id` must be a string, got a number"
    );
    assert_eq!(
        rejected(run(&mut room, &m, json!(null), "ann")),
        "missing argument `args.id`"
    );
    run(&mut room, &m, json!({"id": "x"}), "ann").expect("a string passes");

    // `$` is optional in `require`; no `type` = any value, null included.
    let any = mutator(r#"{ require = "$args.x" }"#);
    run(&mut room, &any, json!({"x": null}), "ann").expect("null is present");
    assert_eq!(
        rejected(run(&mut room, &any, json!({}), "ann")),
        "missing argument `args.x`"
    );

    // A custom reason replaces both messages.
    let custom = mutator(r#"{ require = "args.n", type = "number", reason = "give a count" }"#);
    assert_eq!(
        rejected(run(&mut room, &custom, json!({}), "ann")),
        "give a count"
    );
    assert_eq!(
        rejected(run(&mut room, &custom, json!({"n": "3"}), "ann")),
        "give a count"
    );

    let cases: [(&str, serde_json::Value, bool); 16] = [
        ("number", json!(1.5), true),
        ("number", json!("1"), false),
        ("integer", json!(2), true),
        ("integer", json!(2.0), true),
        ("integer", json!(2.5), false),
        ("string", json!(""), true),
        ("boolean", json!(false), true),
        ("boolean", json!(0), false),
        ("null", json!(null), true),
        ("null", json!(0), false),
        ("object", json!({"a": 1}), true),
        ("object", json!([1]), false),
        ("array", json!([1]), true),
        ("array", json!({}), false),
        ("integer", json!(-7), true),
        ("string", json!(null), false),
    ];
    for (ty, value, ok) in cases {
        let m = mutator(&format!(r#"{{ require = "args.v", type = "{ty}" }}"#));
        let result = run(&mut room, &m, json!({ "v": value }), "ann");
        assert_eq!(result.is_ok(), ok, "{ty} vs {value}: {result:?}");
        if !ok {
            let article = if ty == "integer" || ty == "object" || ty == "array" {
                "an"
            } else {
                "a"
            };
            let msg = rejected(result);
            assert!(
                msg.starts_with(&format!("argument `args.v` must be {article} {ty}, got")),
                "{msg}"
            );
        }
    }

    let either = mutator(r#"{ require = "args.v", type = ["string", "null"] }"#);
    run(&mut room, &either, json!({"v": null}), "ann").expect("null passes");
    run(&mut room, &either, json!({"v": "a"}), "ann").expect("a string passes");
    assert_eq!(
        rejected(run(&mut room, &either, json!({"v": 1}), "ann")),
        "argument `args.v` must be a string or null, got a number"
    );
}

#[test]
fn arg_paths_reach_nested_members_and_array_items() {
    let mut room = seeded();
    let m = mutator(
        r#"
  { insert = "note", row = { id = "$args.note.id", body = "$args.lines[1]", owner = "$args.lines.0", tags = "$args.note.meta.missing?" } },
"#,
    );
    let args = json!({"note": {"id": "n9", "meta": {}}, "lines": ["first", "second"]});
    run(&mut room, &m, args, "ann").expect("applies");
    assert_eq!(
        row(&room, "note", &s("n9")),
        Some(vec![s("n9"), s("second"), s("first"), Value::Null])
    );

    let missing = json!({"note": {"id": "n10"}, "lines": ["only"]});
    assert_eq!(
        rejected(run(&mut room, &m, missing, "ann")),
        "missing argument `args.lines[1]`"
    );
    // A path through a scalar is missing, not an error of another kind.
    let through = json!({"note": "n11", "lines": ["a", "b"]});
    assert_eq!(
        rejected(run(&mut room, &m, through, "ann")),
        "missing argument `args.note.id`"
    );
}

#[test]
fn json_values_are_stringified_into_cells() {
    let mut room = seeded();
    let m = mutator(
        r#"
  { insert = "note", row = { id = "$args.id", body = "$args.body", owner = { nested = ["$user", 1, true] }, tags = "$args.tags" } },
"#,
    );
    let args = json!({"id": "j1", "body": {"b": 2, "a": [1, null]}, "tags": ["x", "y"]});
    run(&mut room, &m, args, "ann").expect("applies");
    assert_eq!(
        row(&room, "note", &s("j1")),
        Some(vec![
            s("j1"),
            s(r#"{"a":[1,null],"b":2}"#),
            s(r#"{"nested":["ann",1,true]}"#),
            s(r#"["x","y"]"#),
        ])
    );
}

#[test]
fn literals_escapes_null_and_user() {
    let mut room = seeded();
    let m = mutator(
        r#"
  { insert = "note", row = { id = "lit", body = "$$5 off", owner = "$user", tags = "$null" } },
  { insert = "pair", row = { a = 10, b = 2.5, v = false } },
"#,
    );
    run(&mut room, &m, json!({}), "").expect("applies");
    assert_eq!(
        row(&room, "note", &s("lit")),
        Some(vec![s("lit"), s("$5 off"), s(""), Value::Null])
    );
    assert_eq!(
        row(&room, "pair", &n(10.0)),
        Some(vec![n(10.0), n(2.5), Value::Bool(false)])
    );
}

#[test]
fn reads_bind_rows_for_checks_and_values() {
    let mut room = seeded();
    let m = mutator(
        r#"
  { read = "note", key = { id = "$args.id" } },
  { check = "present", value = "$note", reason = "no such note" },
  { read = "member", key = { user = "$user" }, as = "me" },
  { check = "eq", left = "$me.role?", right = "admin", reason = "admins only" },
  { insert = "note", row = { id = "$args.copy", body = "$note.body", owner = "$note.owner", tags = "$note" } },
"#,
    );
    run(&mut room, &m, json!({"id": "n1", "copy": "c1"}), "ann").expect("applies");
    assert_eq!(
        row(&room, "note", &s("c1")),
        Some(vec![
            s("c1"),
            s("hello"),
            s("ann"),
            s(r#"{"body":"hello","id":"n1","owner":"ann","tags":null}"#),
        ])
    );
    assert_eq!(
        rejected(run(
            &mut room,
            &m,
            json!({"id": "nope", "copy": "c2"}),
            "ann"
        )),
        "no such note"
    );
    assert_eq!(
        rejected(run(&mut room, &m, json!({"id": "n1", "copy": "c3"}), "bob")),
        "admins only"
    );
    // No member row for carl: `$me.role?` is null, so the check fails with its reason.
    assert_eq!(
        rejected(run(
            &mut room,
            &m,
            json!({"id": "n1", "copy": "c4"}),
            "carl"
        )),
        "admins only"
    );
}

#[test]
fn a_column_of_a_missing_row_rejects_unless_optional() {
    let mut room = seeded();
    let m = mutator(
        r#"
  { read = "note", key = { id = "$args.id" }, as = "old" },
  { update = "note", row = { id = "$args.id", body = "$old.body" } },
"#,
    );
    assert_eq!(
        rejected(run(&mut room, &m, json!({"id": "zz"}), "ann")),
        "`$old.body`: no \"note\" row was found for `old`"
    );
    let whole = mutator(
        r#"
  { read = "note", key = { id = "$args.id" }, as = "old" },
  { check = "is_null", value = "$old?", reason = "unreachable" },
  { check = "ne", left = "$old", right = 1, reason = "unreachable" },
"#,
    );
    assert_eq!(
        rejected(run(&mut room, &whole, json!({"id": "zz"}), "ann")),
        "`$old`: no \"note\" row was found for `old`"
    );
}

#[test]
fn reads_see_the_transactions_own_writes() {
    let mut room = seeded();
    let m = mutator(
        r#"
  { insert = "note", row = { id = "$args.id", body = "v1", owner = "$user", tags = "$null" } },
  { read = "note", key = { id = "$args.id" }, as = "n" },
  { check = "eq", left = "$n.body", right = "v1", reason = "read-your-writes" },
  { update = "note", row = { id = "$args.id", body = "v2" } },
  { read = "note", key = { id = "$args.id" }, as = "n" },
  { check = "eq", left = "$n.body", right = "v2", reason = "the alias rebinds" },
"#,
    );
    run(&mut room, &m, json!({"id": "r1"}), "ann").expect("applies");
    assert_eq!(row(&room, "note", &s("r1")).unwrap()[1], s("v2"));
}

#[test]
fn comparison_checks() {
    let mut room = seeded();
    let check = |op: &str| {
        mutator(&format!(
            r#"{{ check = "{op}", left = "$args.l", right = "$args.r", reason = "no" }}"#
        ))
    };
    let cases = [
        ("eq", json!(1), json!(1.0), true),
        ("eq", json!("a"), json!("a"), true),
        ("eq", json!("1"), json!(1), false),
        ("eq", json!(null), json!(null), true),
        ("eq", json!({"a": 1}), json!(r#"{"a":1}"#), true),
        ("ne", json!(1), json!(2), true),
        ("ne", json!(true), json!(true), false),
        ("lt", json!(1), json!(2), true),
        ("lt", json!(2), json!(2), false),
        ("le", json!(2), json!(2), true),
        ("gt", json!("b"), json!("a"), true),
        ("gt", json!("B"), json!("a"), false),
        ("ge", json!("a"), json!("a"), true),
        ("ge", json!(-1), json!(0), false),
        // Different types, nulls and booleans never order.
        ("lt", json!(1), json!("2"), false),
        ("ge", json!("2"), json!(1), false),
        ("le", json!(null), json!(null), false),
        ("gt", json!(true), json!(false), false),
    ];
    for (op, l, r, holds) in cases {
        let m = check(op);
        let result = run(&mut room, &m, json!({"l": l, "r": r}), "ann");
        assert_eq!(result.is_ok(), holds, "{l} {op} {r}: {result:?}");
        if !holds {
            assert_eq!(rejected(result), "no");
        }
    }
    assert_eq!(
        rejected(run(&mut room, &check("eq"), json!({"l": 1}), "ann")),
        "missing argument `args.r`"
    );
}

#[test]
fn null_checks() {
    let mut room = seeded();
    let is_null = mutator(r#"{ check = "is_null", value = "$args.v?", reason = "must be null" }"#);
    let not_null = mutator(r#"{ check = "not_null", value = "$args.v", reason = "required" }"#);
    run(&mut room, &is_null, json!({"v": null}), "ann").expect("null");
    run(&mut room, &is_null, json!({}), "ann").expect("missing + ? = null");
    assert_eq!(
        rejected(run(&mut room, &is_null, json!({"v": 0}), "ann")),
        "must be null"
    );
    run(&mut room, &not_null, json!({"v": ""}), "ann").expect("not null");
    assert_eq!(
        rejected(run(&mut room, &not_null, json!({"v": null}), "ann")),
        "required"
    );
    assert_eq!(
        rejected(run(&mut room, &not_null, json!({}), "ann")),
        "missing argument `args.v`"
    );
}

#[test]
fn in_checks() {
    let mut room = seeded();
    let literal = mutator(
        r#"{ check = "in", value = "$args.c", list = ["red", 2, "$null", "$user"], reason = "bad color" }"#,
    );
    for ok in [json!("red"), json!(2.0), json!(null), json!("ann")] {
        run(&mut room, &literal, json!({ "c": ok }), "ann").expect("in the list");
    }
    for bad in [json!("blue"), json!("2"), json!(false)] {
        assert_eq!(
            rejected(run(&mut room, &literal, json!({ "c": bad }), "ann")),
            "bad color"
        );
    }
    let from_args =
        mutator(r#"{ check = "in", value = "$args.c", list = "$args.allowed", reason = "nope" }"#);
    run(
        &mut room,
        &from_args,
        json!({"c": "x", "allowed": ["x", "y"]}),
        "ann",
    )
    .expect("in");
    assert_eq!(
        rejected(run(
            &mut room,
            &from_args,
            json!({"c": "z", "allowed": ["x"]}),
            "ann"
        )),
        "nope"
    );
    assert_eq!(
        rejected(run(
            &mut room,
            &from_args,
            json!({"c": "x", "allowed": "x"}),
            "ann"
        )),
        "an `in` check needs a list, but `$args.allowed` is a string"
    );
}

#[test]
fn insert_update_upsert_delete() {
    let mut room = seeded();
    let insert = mutator(
        r#"{ insert = "note", row = { id = "$args.id", body = "$args.body", owner = "$user", tags = "$null" } }"#,
    );
    let update = mutator(r#"{ update = "note", row = { id = "$args.id", body = "$args.body" } }"#);
    let upsert = mutator(
        r#"{ upsert = "note", row = { id = "$args.id", body = "$args.body", owner = "$user", tags = "t" } }"#,
    );
    let delete = mutator(r#"{ delete = "note", key = { id = "$args.id" } }"#);

    run(&mut room, &insert, json!({"id": "a", "body": "1"}), "ann").expect("insert");
    assert_eq!(
        rejected(run(
            &mut room,
            &insert,
            json!({"id": "a", "body": "2"}),
            "ann"
        )),
        "add of an existing primary key in `note`"
    );
    run(&mut room, &update, json!({"id": "a", "body": "2"}), "bob").expect("update");
    assert_eq!(
        row(&room, "note", &s("a")),
        Some(vec![s("a"), s("2"), s("ann"), Value::Null])
    );
    let before = rows(&room, "note");
    run(
        &mut room,
        &update,
        json!({"id": "ghost", "body": "x"}),
        "ann",
    )
    .expect("updating a missing row is a no-op");
    assert_eq!(rows(&room, "note"), before);

    run(&mut room, &upsert, json!({"id": "a", "body": "3"}), "bob").expect("upsert replaces");
    assert_eq!(
        row(&room, "note", &s("a")),
        Some(vec![s("a"), s("3"), s("bob"), s("t")])
    );
    run(&mut room, &upsert, json!({"id": "b", "body": "4"}), "bob").expect("upsert adds");
    assert_eq!(
        row(&room, "note", &s("b")),
        Some(vec![s("b"), s("4"), s("bob"), s("t")])
    );

    run(&mut room, &delete, json!({"id": "a"}), "ann").expect("delete");
    assert_eq!(row(&room, "note", &s("a")), None);
    let before = rows(&room, "note");
    run(&mut room, &delete, json!({"id": "a"}), "ann").expect("deleting a missing row is a no-op");
    assert_eq!(rows(&room, "note"), before);
}

#[test]
fn composite_keys_and_whole_rows_from_args() {
    let mut room = seeded();
    let m = mutator(
        r#"
  { read = "pair", key = "$args.key", as = "p" },
  { check = "present", value = "$p", reason = "no pair" },
  { upsert = "pair", row = "$args.row" },
  { delete = "pair", key = { a = "$p.a", b = "$p.b" } },
"#,
    );
    let args = json!({"key": {"a": 1, "b": 2}, "row": {"a": 3, "b": 4, "v": {"k": 1}}});
    run(&mut room, &m, args, "ann").expect("applies");
    assert_eq!(
        rows(&room, "pair"),
        vec![vec![n(3.0), n(4.0), s(r#"{"k":1}"#)]]
    );
    let not_object = json!({"key": {"a": 3, "b": 4}, "row": [3, 4, 5]});
    assert_eq!(
        rejected(run(&mut room, &m, not_object, "ann")),
        "`row` ($args.row) must be an object of column values, got an array"
    );
}

#[test]
fn refused_writes_reject_with_the_rooms_message() {
    let mut room = seeded();
    let cases = [
        (
            r#"{ insert = "member", row = { user = "z", role = "r" } }"#,
            "table `member` is not owned by this room — mutators write owned tables only",
        ),
        (
            r#"{ insert = "note", row = { id = "z", body = "b", owner = "o" } }"#,
            "insert: a full \"note\" row must name column \"tags\"",
        ),
        (
            r#"{ update = "note", row = { id = "n1", colour = "red" } }"#,
            "update: \"note\" has no column \"colour\"",
        ),
        (
            r#"{ delete = "note", key = { body = "hello" } }"#,
            "delete: \"note\" needs primary-key column \"id\"",
        ),
        (
            r#"{ read = "nope", key = { id = 1 } }"#,
            "unknown table `nope`",
        ),
    ];
    for (steps, want) in cases {
        let m = mutator(steps);
        let msg = rejected(run(&mut room, &m, json!({}), "ann"));
        assert!(msg.contains(want), "{steps}: {msg}");
    }
}

#[test]
fn a_failure_after_writes_applies_nothing() {
    let mut room = seeded();
    let m = mutator(
        r#"
  { insert = "note", row = { id = "x1", body = "b", owner = "$user", tags = "$null" } },
  { delete = "note", key = { id = "n1" } },
  { check = "eq", left = "$args.ok", right = true, reason = "not ok" },
"#,
    );
    let before = rows(&room, "note");
    let head = room.head_cv();
    assert_eq!(
        rejected(run(&mut room, &m, json!({"ok": false}), "ann")),
        "not ok"
    );
    assert_eq!(rows(&room, "note"), before);
    assert_eq!(room.head_cv(), head);
    run(&mut room, &m, json!({"ok": true}), "ann").expect("applies");
    assert!(row(&room, "note", &s("x1")).is_some());
    assert!(row(&room, "note", &s("n1")).is_none());
}

#[test]
fn replays_are_deterministic() {
    let m = mutator(ADD_NOTE);
    let args = [
        json!({"id": "a", "body": "x", "owner": "ann", "tags": {"z": 1, "a": 2}}),
        json!({"id": "a", "body": "y", "owner": "ann"}),
        json!({"id": "b", "body": "z", "owner": "bob"}),
    ];
    let replay = || {
        let mut room = seeded();
        let outcomes: Vec<_> = args
            .iter()
            .map(|a| run(&mut room, &m, a.clone(), "ann"))
            .collect();
        (outcomes, rows(&room, "note"))
    };
    assert_eq!(replay(), replay());
}

#[test]
fn parse_errors_say_what_to_fix() {
    let cases = [
        (r#"{ as = "x" }"#, "steps[0]: a step needs exactly one of `require`, `read`, `check`, `insert`, `update`, `upsert`, `delete`; this one has only `as`"),
        (r#"{ }"#, "this one has no keys"),
        (r#"{ read = "note", insert = "note" }"#, "a step has both `read` and `insert`"),
        (r#"{ read = "note", kee = { id = 1 } }"#, "unknown key `kee` in a `read` step (it takes `read`, `key`, `as`)"),
        (r#"{ delete = "note", row = { id = 1 } }"#, "unknown key `row` in a `delete` step"),
        (r#"{ read = "note" }"#, "a `read` step needs `key`"),
        (r#"{ insert = "note" }"#, "an `insert` step needs `row`"),
        (r#"{ delete = "note" }"#, "a `delete` step needs `key`"),
        (r#"{ insert = "", row = { id = 1 } }"#, "`insert` must not be empty"),
        (r#"{ insert = 5, row = { id = 1 } }"#, "`insert` must be a string, got an integer"),
        (r#"{ insert = "note", row = 5 }"#, "`row` must be an inline table of column = value"),
        (r#"{ insert = "note", row = "body" }"#, "got the string \"body\""),
        (r#"{ insert = "note", row = {} }"#, "`row` names no columns"),
        (r#"{ read = "note", key = { id = 1 }, as = "user" }"#, "not a usable alias"),
        (r#"{ read = "note-x", key = { id = 1 } }"#, "is not a valid alias: name the row with `as"),
        (r#"{ check = "eq", left = 1, right = 1 }"#, "an `eq` check needs a non-empty `reason`"),
        (r#"{ check = "same", left = 1, right = 1, reason = "r" }"#, "`check = \"same\"` is not a check; use one of eq, ne"),
        (r#"{ check = "eq", value = 1, reason = "r" }"#, "an `eq` check takes `left` and `right`, not `value`"),
        (r#"{ check = "eq", left = 1, reason = "r" }"#, "an `eq` check needs `right`"),
        (r#"{ check = "in", value = 1, reason = "r" }"#, "an `in` check needs `list`"),
        (r#"{ check = "present", value = "$args.x", reason = "r" }"#, "`value` must be \"$<alias>\""),
        (r#"{ check = "absent", value = "$row.col", reason = "r" }"#, "`value` must be \"$<alias>\""),
        (r#"{ require = "args.x", type = "text" }"#, "`type` \"text\" is not a type; use one of number, integer"),
        (r#"{ require = "args.x", type = [] }"#, "`type` must be a type name or a non-empty list"),
        (r#"{ require = "user" }"#, "`require` names an argument such as \"args.id\""),
        (r#"{ insert = "note", row = { id = "$args..x" } }"#, "`row.id`: `$args..x` has an empty path segment"),
        (r#"{ insert = "note", row = { id = "$args[x]" } }"#, "`[x]` is not an array index"),
        (r#"{ insert = "note", row = { id = "$args[0" } }"#, "has an unclosed `[`"),
        (r#"{ require = "argsx" }"#, "`$argsx` is not a reference: after `$args` write `.name` or `[index]`"),
        (r#"{ insert = "note", row = { id = "$9lives" } }"#, "\"$9lives\" is not a valid reference; references are"),
        (r#"{ insert = "note", row = { id = "$" } }"#, "is not a valid reference"),
        (r#"{ insert = "note", row = { id = "$x." } }"#, "has an empty column name"),
        (r#"{ insert = "note", row = { id = 1979-05-27 } }"#, "the TOML datetime 1979-05-27 is not a wire value"),
        (r#"{ insert = "note", row = { id = 9007199254740992 } }"#, "does not fit a wire number exactly"),
        (r#"{ insert = "note", row = { id = nan } }"#, "is not a wire number"),
        (r#"{ check = "eq", left = [ "$args.x", 1979-05-27 ], right = 1, reason = "r" }"#, "`left`: the TOML datetime"),
    ];
    for (steps, want) in cases {
        let err = parse_error(steps);
        assert!(err.contains(want), "{steps}:\n  got  {err}\n  want {want}");
    }
    let unknown = MutatorSpec::from_toml_str("stepz = []")
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("unknown field `stepz`"), "{unknown}");
    let missing = MutatorSpec::from_toml_str("").unwrap_err().to_string();
    assert!(missing.contains("missing field `steps`"), "{missing}");
    let second = parse_error(
        r#"{ require = "args.x" },
           { require = "args.y", type = "text" }"#,
    );
    assert!(second.starts_with("steps[1]: "), "{second}");
}

#[test]
fn compile_checks_every_alias_is_read_first() {
    let err = compile_error(r#"{ check = "present", value = "$existing", reason = "r" }"#);
    assert!(
        err.starts_with("steps[0]: `$existing` is not a row read by an earlier step"),
        "{err}"
    );
    let later = compile_error(
        r#"
  { insert = "note", row = { id = 1, body = "$n.body", owner = "o", tags = "t" } },
  { read = "note", key = { id = 1 }, as = "n" },
"#,
    );
    assert!(later.starts_with("steps[0]: `$n`"), "{later}");
    let nested = compile_error(
        r#"
  { read = "note", key = { id = 1 }, as = "n" },
  { check = "in", value = 1, list = [1, "$m.x"], reason = "r" },
"#,
    );
    assert!(nested.starts_with("steps[1]: `$m`"), "{nested}");
    // A misspelt `$args` reads as an alias, which no step bound.
    let typo = compile_error(r#"{ delete = "note", key = { id = "$argz.id" } }"#);
    assert!(
        typo.starts_with("steps[0]: `$argz` is not a row read"),
        "{typo}"
    );
    let spec = MutatorSpec::from_toml_str("steps = []").unwrap();
    let unnamed = compile("", &spec).unwrap_err();
    assert_eq!(unnamed, SpecError::EmptyName);
    assert_eq!(unnamed.to_string(), "a mutator name must not be empty");
    assert_eq!(compile("noop", &spec).unwrap().name(), "noop");
}

#[test]
fn validate_checks_tables_and_columns() {
    let ok = MutatorSpec::from_toml_str(&format!("steps = [{ADD_NOTE}]")).unwrap();
    validate(&ok, &tables()).expect("the example validates");
    let cases = [
        (
            r#"{ read = "notes", key = { id = 1 } }"#,
            "steps[0] (read): the room has no table \"notes\" (its tables: \"note\", \"member\", \"pair\")",
        ),
        (
            r#"{ read = "note", key = { id = 1, body = "x" } }"#,
            "`key.body`: a key names only the primary-key columns of \"note\" (id)",
        ),
        (
            r#"{ read = "pair", key = { a = 1 } }"#,
            "`key` of \"pair\" lacks column(s) \"b\": it must name the whole primary key",
        ),
        (
            r#"{ insert = "note", row = { id = 1, body = "b" } }"#,
            "steps[0] (insert): `row` of \"note\" lacks column(s) \"owner\", \"tags\": a full row names every column",
        ),
        (
            r#"{ upsert = "note", row = { id = 1, body = "b", owner = "o", tags = "t", x = 1 } }"#,
            "`row.x`: table \"note\" has no column \"x\" (its columns: \"id\", \"body\", \"owner\", \"tags\")",
        ),
        (
            r#"{ update = "note", row = { body = "b" } }"#,
            "steps[0] (update): `row` of \"note\" lacks column(s) \"id\"",
        ),
        (
            r#"{ delete = "pair", key = { a = 1, b = 2, v = 3 } }"#,
            "`key.v`: a key names only the primary-key columns of \"pair\" (a, b)",
        ),
        (
            r#"{ read = "note", key = { id = 1 }, as = "n" },
               { check = "eq", left = "$n.colour", right = 1, reason = "r" }"#,
            "steps[1] (check): `$n.colour`: table \"note\" has no column \"colour\"",
        ),
        (
            r#"{ delete = "nope", key = "$args" }"#,
            "the room has no table \"nope\"",
        ),
    ];
    for (steps, want) in cases {
        let err = validate_error(steps);
        assert!(err.contains(want), "{steps}:\n  got  {err}\n  want {want}");
    }
    // Whole rows are checked when they run; compile errors surface from validate too.
    let whole =
        MutatorSpec::from_toml_str(r#"steps = [{ upsert = "note", row = "$args" }]"#).unwrap();
    validate(&whole, &tables()).expect("whole rows are not checked statically");
    let unbound = validate_error(r#"{ check = "present", value = "$x", reason = "r" }"#);
    assert!(unbound.contains("`$x` is not a row read"), "{unbound}");
    let empty: [TableSchema; 0] = [];
    assert!(validate(&whole, &empty).is_err());
    // The error says which step and which table, for a caller to act on.
    let spec =
        MutatorSpec::from_toml_str(r#"steps = [{ delete = "nope", key = { id = 1 } }]"#).unwrap();
    match validate(&spec, &tables()).unwrap_err() {
        SpecError::Schema {
            step: 0,
            step_kind: "delete",
            mismatch: SchemaMismatch::UnknownTable { table, .. },
        } => assert_eq!(table, "nope"),
        other => panic!("expected an unknown table, got {other:?}"),
    }
}

#[test]
fn spec_introspection() {
    let spec = MutatorSpec::from_toml_str(&format!(
        "steps = [{ADD_NOTE} {{ read = \"member\", key = {{ user = 1 }} }}, {{ delete = \"pair\", key = {{ a = 1, b = 2 }} }}]"
    ))
    .unwrap();
    assert_eq!(spec.written_tables(), ["note", "pair"]);
    assert_eq!(spec.read_tables(), ["note", "member"]);
    let kinds: Vec<&str> = spec.steps.iter().map(|s| s.kind()).collect();
    assert_eq!(
        kinds,
        ["require", "read", "check", "check", "insert", "read", "delete"]
    );
    // An unauthenticated user is the empty string.
    let mut room = room(&[], &["note"]);
    let m = mutator(r#"{ check = "ne", left = "$user", right = "", reason = "sign in first" }"#);
    assert_eq!(rejected(run(&mut room, &m, json!({}), "")), "sign in first");
    run(&mut room, &m, json!({}), "ann").expect("signed in");
}

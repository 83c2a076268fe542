//! Every refusal names the option at fault and says how to fix it.

use rindle_room_smol::config::{Config, ConfigError};

/// A valid demo room; cases append to it or edit it.
const MINIMAL: &str = "[demo]
data = \"rows.json\"

[downstream]
doc_id = \"d\"

[downstream.token_keys]
k1 = \"secret\"
";

/// A valid `[upstream]` section (replace `[demo]` with it).
const UPSTREAM: &str = "[upstream]
ws_url = \"ws://127.0.0.1:7601\"
control_url = \"http://127.0.0.1:7600\"
footprint_ast = '{\"table\": \"note\"}'
";

fn upstream() -> String {
    MINIMAL.replace("[demo]\ndata = \"rows.json\"\n", UPSTREAM)
}

fn writes(extra: &str) -> String {
    format!("{MINIMAL}\n[writes]\nowned_tables = [\"note\"]\n{extra}")
}

fn error(text: &str) -> ConfigError {
    match Config::from_toml_str_with_env(text, |_| None) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

/// Asserts the error's option and that its message contains every `parts`.
fn check(text: &str, option: &str, parts: &[&str]) {
    let e = error(text);
    assert_eq!(e.option(), Some(option), "{e}\n--- for:\n{text}");
    for part in parts {
        assert!(
            e.message().contains(part),
            "{e}\n--- lacks {part:?}; for:\n{text}"
        );
    }
}

#[test]
fn the_base_cases_are_valid() {
    for text in [MINIMAL.to_string(), upstream(), writes("")] {
        Config::from_toml_str_with_env(&text, |_| None).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn unknown_options() {
    check(
        &format!("colour = 1\n{MINIMAL}"),
        "colour",
        &[
            "unknown option `colour` at the top level",
            "expected one of `server`, `upstream`",
            "remove it or fix its spelling",
        ],
    );
    check(
        &format!("[server]\nprot = 1\n{MINIMAL}"),
        "server.prot",
        &["unknown option `server.prot` under [server] (expected one of `bind`, `port`, `log_format`, `max_frame_bytes`, `max_inbound_bytes`, `max_unsent_bytes`, `max_connections`, `handshake_timeout_ms`, `startup_timeout_ms`)"],
    );
    check(
        &format!("[serverr]\nport = 1\n{MINIMAL}"),
        "serverr",
        &["unknown section `serverr` at the top level"],
    );
    check(
        &format!("{MINIMAL}doc = 1\n"),
        "downstream.token_keys.doc",
        &["invalid type"],
    );
    check(
        &MINIMAL.replace("doc_id = \"d\"", "doc_id = \"d\"\nidle_ttl = 5"),
        "downstream.idle_ttl",
        &[
            "unknown option `downstream.idle_ttl` under [downstream]",
            "`idle_ttl_ms`",
        ],
    );
    check(
        &writes("journal = { kind = \"file\", pth = \"j\" }\n"),
        "writes.journal.pth",
        &["unknown option `writes.journal.pth` under [writes.journal] (expected `path`)"],
    );
    check(
        &writes("[writes.journal]\nkind = \"memory\"\npath = \"j\"\n"),
        "writes.journal.path",
        &[
            "a memory journal takes only `kind`",
            "set `kind = \"file\"`",
        ],
    );
    check(
        &upstream().replace("[upstream]", "[upstream]\nws = \"x\""),
        "upstream.ws",
        &["unknown option `upstream.ws`"],
    );
    check(
        &format!("{MINIMAL}\n[control]\nauth_token = \"t\"\nhost = \"0.0.0.0\"\n"),
        "control.host",
        &["unknown option `control.host` under [control]"],
    );
    check(
        &format!("{}\n[authority]\napply_url = \"http://a/x\"\nclaim_url = \"http://a/y\"\nlmids_url = \"http://a/z\"\nretry = 3\n", writes("")),
        "authority.retry",
        &["unknown option `authority.retry` under [authority]"],
    );
    check(
        &writes("[mutators.add]\nsteps = []\ndescription = \"x\"\n"),
        "mutators.add.description",
        &["unknown option `mutators.add.description` under [mutators.add] (expected `steps`)"],
    );
    check(
        &writes(
            "[mutators.add]\nsteps = [ { read = \"note\", key = { id = 1 }, alias = \"n\" } ]\n",
        ),
        "mutators.add",
        &["steps[0]: unknown key `alias` in a `read` step (it takes `read`, `key`, `as`)"],
    );
}

#[test]
fn missing_required_options() {
    check(
        "[demo]\ndata = \"x\"\n",
        "downstream",
        &["missing required section [downstream]", "`doc_id`"],
    );
    check(
        &MINIMAL.replace("doc_id = \"d\"\n", ""),
        "downstream.doc_id",
        &["`downstream.doc_id` is empty or missing: set `doc_id = …` under [downstream]"],
    );
    check(
        &upstream().replace("ws_url = \"ws://127.0.0.1:7601\"\n", ""),
        "upstream.ws_url",
        &["missing required option `upstream.ws_url`"],
    );
    check(
        &upstream().replace("footprint_ast = '{\"table\": \"note\"}'\n", ""),
        "upstream.footprint_ast",
        &["missing required option `upstream.footprint_ast`"],
    );
    check(
        &MINIMAL.replace("data = \"rows.json\"", ""),
        "demo.data",
        &["missing required option `demo.data`"],
    );
    check(
        &format!("{MINIMAL}\n[writes]\ncrud = true\n"),
        "writes.owned_tables",
        &["missing required option `writes.owned_tables`"],
    );
    check(
        &writes("[writes.journal]\nkind = \"file\"\n"),
        "writes.journal.path",
        &["missing required option `writes.journal.path`"],
    );
    check(
        &writes("journal = { path = \"j\" }\n"),
        "writes.journal.kind",
        &["add `kind = \"file\"` (with `path`) or `kind = \"memory\"`"],
    );
    check(
        &format!("{}\n[authority]\napply_url = \"http://a/x\"\n", writes("")),
        "authority.claim_url",
        &["missing required option `authority.claim_url`"],
    );
    check(
        &writes("[mutators.add]\n"),
        "mutators.add.steps",
        &["missing required option `mutators.add.steps`"],
    );
}

#[test]
fn exactly_one_source_of_rows() {
    check(
        &format!("{UPSTREAM}{MINIMAL}"),
        "upstream",
        &[
            "both [upstream] and [demo] are set",
            "keep [upstream]",
            "or [demo]",
        ],
    );
    check(
        &MINIMAL.replace("[demo]\ndata = \"rows.json\"\n", ""),
        "upstream",
        &[
            "neither [upstream] nor [demo] is set",
            "add [upstream]",
            "or [demo]",
        ],
    );
}

#[test]
fn bad_journal_kind() {
    for text in [
        writes("[writes.journal]\nkind = \"sqlite\"\n"),
        writes("journal = { kind = \"sqlite\" }\n"),
    ] {
        check(
            &text,
            "writes.journal.kind",
            &["`writes.journal.kind` = \"sqlite\" is not a journal kind: use \"file\" (with `path`)", "\"memory\""],
        );
    }
    check(
        &writes("journal = { kind = \"file\", path = \"\" }\n"),
        "writes.journal.path",
        &["`writes.journal.path` is empty"],
    );
}

#[test]
fn bad_json_options() {
    check(
        &writes("scopes = '[{\"table\": }]'\n"),
        "writes.scopes",
        &[
            "`writes.scopes` is not valid JSON (expected value at line 1 column 12)",
            "'''…'''",
        ],
    );
    check(
        &writes("scopes = '{\"table\": \"note\"}'\n"),
        "writes.scopes",
        &["must be an array of scope specs", "got an object"],
    );
    check(
        &writes("scopes = [{ writable = { kind = \"none\" } }]\n"),
        "writes.scopes",
        &["`writes.scopes`[0] must be an object with a non-empty \"table\""],
    );
    check(
        &writes("scopes = 5\n"),
        "writes.scopes",
        &["must be a JSON array of scope specs, as JSON text or inline TOML; got a integer"],
    );
    check(
        &writes("scopes = [{ table = \"note\", at = 1979-05-27 }]\n"),
        "writes.scopes",
        &["the TOML datetime 1979-05-27 has no JSON form"],
    );
    check(
        &upstream().replace("'{\"table\": \"note\"}'", "'{table: note}'"),
        "upstream.footprint_ast",
        &["`upstream.footprint_ast` is not valid JSON"],
    );
    check(
        &upstream().replace("'{\"table\": \"note\"}'", "'[\"note\"]'"),
        "upstream.footprint_ast",
        &[
            "must be a wire AST object with a non-empty \"table\"",
            "got an array",
        ],
    );
    check(
        &upstream().replace("'{\"table\": \"note\"}'", "{ where = 1 }"),
        "upstream.footprint_ast",
        &["non-empty \"table\""],
    );
}

#[test]
fn bad_values() {
    check(
        &format!("[server]\nport = 70000\n{MINIMAL}"),
        "server.port",
        &["`server.port`: invalid value: integer `70000`, expected u16"],
    );
    check(
        &format!("[server]\nport = \"80\"\n{MINIMAL}"),
        "server.port",
        &["invalid type: string \"80\", expected u16"],
    );
    check(
        &format!("[server]\nlog_format = \"xml\"\n{MINIMAL}"),
        "server.log_format",
        &["`server.log_format` = \"xml\" is not allowed (expected `text` or `json`)"],
    );
    check(
        &format!("[server]\nbind = \"\"\n{MINIMAL}"),
        "server.bind",
        &["is not an address"],
    );
    check(
        &upstream().replace("ws://127.0.0.1:7601", "http://127.0.0.1:7601"),
        "upstream.ws_url",
        &["it must be a ws:// URL", "e.g. \"ws://127.0.0.1:7601\""],
    );
    check(
        &upstream().replace("ws://127.0.0.1:7601", "wss://127.0.0.1:7601"),
        "upstream.ws_url",
        &["wss:// is not supported"],
    );
    check(
        &upstream().replace("http://127.0.0.1:7600", "https://127.0.0.1:7600"),
        "upstream.control_url",
        &["https is not supported", "rindled's control plane"],
    );
    check(
        &upstream().replace("[upstream]", "[upstream]\nauth_token = \"\""),
        "upstream.auth_token",
        &[
            "`upstream.auth_token` is empty",
            "RINDLE_UPSTREAM_AUTH_TOKEN",
        ],
    );
    check(
        &upstream().replace("[upstream]", "[upstream]\nlease_ttl_ms = 0"),
        "upstream.lease_ttl_ms",
        &["give a positive TTL"],
    );
    check(
        &upstream().replace("[upstream]", "[upstream]\nmax_frame_bytes = 0"),
        "upstream.max_frame_bytes",
        &["must be at least 1", "0 would refuse every snapshot"],
    );
    check(
        &upstream().replace("[upstream]", "[upstream]\nclient_id = \"\""),
        "upstream.client_id",
        &["`upstream.client_id` is empty"],
    );
    check(
        &MINIMAL.replace("\"rows.json\"", "\"\""),
        "demo.data",
        &["`demo.data` is empty"],
    );
    check(
        &MINIMAL.replace("doc_id = \"d\"", "doc_id = \"\""),
        "downstream.doc_id",
        &["`downstream.doc_id` is empty"],
    );
    check(
        &MINIMAL.replace("k1 = \"secret\"\n", ""),
        "downstream.token_keys",
        &[
            "`downstream.token_keys` is empty",
            "RINDLE_TOKEN_KEYS=k1=<secret>",
        ],
    );
    check(
        &MINIMAL.replace("k1 = \"secret\"", "k1 = \"\""),
        "downstream.token_keys.k1",
        &["the secret of key \"k1\" is empty"],
    );
    check(
        &MINIMAL.replace("k1 = \"secret\"", "\"\" = \"s\""),
        "downstream.token_keys",
        &["an empty key id"],
    );
    check(
        &MINIMAL.replace("doc_id = \"d\"", "doc_id = \"d\"\nsweep_interval_ms = 0"),
        "downstream.sweep_interval_ms",
        &["must be at least 1"],
    );
    check(
        &MINIMAL.replace("doc_id = \"d\"", "doc_id = \"d\"\nsend_budget_bytes = 0"),
        "downstream.send_budget_bytes",
        &["must be at least 1"],
    );
    check(
        &MINIMAL.replace("doc_id = \"d\"", "doc_id = \"d\"\nidle_ttl_ms = -1"),
        "downstream.idle_ttl_ms",
        &["invalid value: integer `-1`"],
    );
}

#[test]
fn control_plane() {
    check(
        &format!("{MINIMAL}\n[control]\nport = 9\n"),
        "control.auth_token",
        &["`control.auth_token` is empty", "RINDLE_CONTROL_AUTH_TOKEN"],
    );
    check(
        &format!("[server]\nport = 9\n{MINIMAL}\n[control]\nauth_token = \"t\"\nport = 9\n"),
        "control.port",
        &["is also `server.port`"],
    );
    Config::from_toml_str_with_env(
        &format!("{MINIMAL}\n[control]\nauth_token = \"t\"\n"),
        |_| None,
    )
    .expect("two ephemeral ports are fine");
}

#[test]
fn writes_and_authority() {
    check(
        &writes("").replace("[\"note\"]", "[]"),
        "writes.owned_tables",
        &[
            "`writes.owned_tables` is empty",
            "remove [writes] to run read-only",
        ],
    );
    check(
        &writes("").replace("[\"note\"]", "[\"note\", \"note\"]"),
        "writes.owned_tables",
        &["names \"note\" twice"],
    );
    check(
        &writes("").replace("[\"note\"]", "[\"_rindle_client_mutations\"]"),
        "writes.owned_tables",
        &["`_rindle_*` tables belong to the room"],
    );
    check(
        &writes("").replace("[\"note\"]", "[\"\"]"),
        "writes.owned_tables",
        &["an empty name"],
    );
    check(
        &writes("flush_dirty_max = 0\n"),
        "writes.flush_dirty_max",
        &["must be at least 1"],
    );
    let authority = "\n[authority]\napply_url = \"http://a:1/apply\"\nclaim_url = \"http://a:1/claim\"\nlmids_url = \"http://a:1/lmids\"\n";
    Config::from_toml_str_with_env(&format!("{}{authority}", writes("")), |_| None).expect("valid");
    check(
        &format!("{MINIMAL}{authority}"),
        "authority",
        &[
            "[authority] is set but [writes] is not",
            "add [writes] or remove [authority]",
        ],
    );
    check(
        &format!(
            "{}{}",
            writes(""),
            authority.replace("http://a:1/claim", "https://a/claim")
        ),
        "authority.claim_url",
        &["authority.claim_url: invalid URL", "https is not supported"],
    );
    check(
        &format!(
            "{}{authority}[authority.headers]\n\"bad name\" = \"v\"\n",
            writes("")
        ),
        "authority.headers",
        &["invalid header name \"bad name\""],
    );
    check(
        &format!(
            "{}{authority}[authority.headers]\ncontent-type = \"text/plain\"\n",
            writes("")
        ),
        "authority.headers",
        &["is set by the authority client"],
    );
}

#[test]
fn mutators() {
    let add = "[mutators.add]\nsteps = [ { insert = \"note\", row = { id = \"$args.id\" } } ]\n";
    check(
        &format!("{MINIMAL}\n{add}"),
        "mutators.add",
        &["[mutators.*] is set but [writes] is not", "add [writes]"],
    );
    check(
        &writes(&add.replace("insert = \"note\"", "insert = \"tag\"")),
        "mutators.add",
        &["mutators.add: writes table \"tag\", which is not in `writes.owned_tables`; add it there"],
    );
    check(
        &writes("crud = true\n[mutators.\"note.insert\"]\nsteps = []\n"),
        "mutators.note.insert",
        &[
            "the name is also a generated CRUD mutator",
            "rename the mutator or set `writes.crud = false`",
        ],
    );
    Config::from_toml_str_with_env(&writes("[mutators.\"note.insert\"]\nsteps = []\n"), |_| {
        None
    })
    .expect("no collision without crud");
    check(
        &writes("[mutators.add]\nsteps = [ { check = \"present\", value = \"$row\", reason = \"r\" } ]\n"),
        "mutators.add",
        &["mutators.add: steps[0]: `$row` is not a row read by an earlier step"],
    );
    check(
        &writes("[mutators.add]\nsteps = [\n  { require = \"args.id\" },\n  { check = \"same\", left = 1, right = 1, reason = \"r\" },\n]\n"),
        "mutators.add",
        &["`mutators.add`: steps[1]: `check = \"same\"` is not a check"],
    );
    check(
        &writes("[mutators]\nadd = { steps = [ { read = \"note\" } ] }\n"),
        "mutators.add",
        &["steps[0]: a `read` step needs `key`"],
    );
    check(
        &writes("[mutators.add]\nsteps = 5\n"),
        "mutators.add.steps",
        &["invalid type: integer `5`, expected a sequence"],
    );
}

#[test]
fn parse_errors_carry_the_line_and_a_snippet() {
    let text = format!("{MINIMAL}\n[server]\nport = 'eighty'\n");
    let e = error(&text);
    assert_eq!(e.location(), Some((11, 8)));
    assert_eq!(
        e.to_string(),
        "line 11, column 8: `server.port`: invalid type: string \"eighty\", expected u16\n   |\n11 | port = 'eighty'\n   |        ^^^^^^^^"
    );
    // Validation errors have no line; the message alone.
    let e = error(&MINIMAL.replace("doc_id = \"d\"", "doc_id = \"\""));
    assert_eq!(e.location(), None);
    assert!(
        e.to_string().starts_with("`downstream.doc_id` is empty"),
        "{e}"
    );
    // Not TOML at all.
    let e = error("[server\nport = 1\n");
    assert_eq!(e.location().map(|l| l.0), Some(1));
    let e = error("[server]\nport = \n");
    assert!(e.to_string().contains("`server.port`"), "{e}");
    let e = error(&format!(
        "{MINIMAL}\n[writes]\nowned_tables = [\"t\"]\n\n[writes]\ncrud = true\n"
    ));
    assert!(e.message().contains("`writes` is defined twice"), "{e}");
}

#[test]
fn an_unsent_cap_below_a_mebibyte_is_refused() {
    check(
        &format!("[server]\nmax_unsent_bytes = 1000\n{MINIMAL}"),
        "server.max_unsent_bytes",
        &["must be at least 1048576", "256 MiB"],
    );
}

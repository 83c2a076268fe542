//! Environment overrides of the secrets.

use std::collections::BTreeMap;

use rindle_room_smol::config::{
    Config, ENV_AUTHORITY_HEADERS, ENV_CONTROL_AUTH_TOKEN, ENV_TOKEN_KEYS, ENV_UPSTREAM_AUTH_TOKEN,
};

/// Every section with a secret, with the secrets in the file.
const FULL: &str = r#"
[upstream]
ws_url = "ws://127.0.0.1:7601"
control_url = "http://127.0.0.1:7600"
auth_token = "file-upstream"
footprint_ast = { table = "note" }

[downstream]
doc_id = "d"

[downstream.token_keys]
k1 = "file-k1"
k2 = "file-k2"

[control]
auth_token = "file-control"

[writes]
owned_tables = ["note"]

[authority]
apply_url = "http://a:1/apply"
claim_url = "http://a:1/claim"
lmids_url = "http://a:1/lmids"

[authority.headers]
authorization = "Bearer file"
x-room = "r1"
"#;

/// The same sections with every secret left to the environment.
const NO_SECRETS: &str = r#"
[upstream]
ws_url = "ws://127.0.0.1:7601"
control_url = "http://127.0.0.1:7600"
footprint_ast = { table = "note" }

[downstream]
doc_id = "d"

[control]

[writes]
owned_tables = ["note"]

[authority]
apply_url = "http://a:1/apply"
claim_url = "http://a:1/claim"
lmids_url = "http://a:1/lmids"
"#;

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: BTreeMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| vars.get(name).cloned()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn without_variables_the_file_wins() {
    let c = Config::from_toml_str_with_env(FULL, env(&[])).unwrap();
    assert_eq!(
        c.upstream.unwrap().auth_token.as_deref(),
        Some("file-upstream")
    );
    assert_eq!(
        c.downstream.token_keys,
        map(&[("k1", "file-k1"), ("k2", "file-k2")])
    );
    assert_eq!(c.control.unwrap().auth_token, "file-control");
}

#[test]
fn variables_override_and_merge() {
    let c = Config::from_toml_str_with_env(
        FULL,
        env(&[
            (ENV_UPSTREAM_AUTH_TOKEN, "env-upstream"),
            (ENV_TOKEN_KEYS, " k2 = env-k2 , k3=env-k3,"),
            (ENV_CONTROL_AUTH_TOKEN, "env-control"),
            (ENV_AUTHORITY_HEADERS, "authorization=Bearer env,x-extra=1"),
        ]),
    )
    .unwrap();
    assert_eq!(
        c.upstream.unwrap().auth_token.as_deref(),
        Some("env-upstream")
    );
    assert_eq!(
        c.downstream.token_keys,
        map(&[("k1", "file-k1"), ("k2", "env-k2"), ("k3", "env-k3")])
    );
    assert_eq!(c.control.unwrap().auth_token, "env-control");
    assert_eq!(
        c.authority.unwrap().headers,
        map(&[
            ("authorization", "Bearer env"),
            ("x-extra", "1"),
            ("x-room", "r1")
        ])
    );
}

#[test]
fn secrets_can_live_only_in_the_environment() {
    let err = Config::from_toml_str_with_env(NO_SECRETS, env(&[])).unwrap_err();
    assert_eq!(err.option(), Some("downstream.token_keys"));
    let c = Config::from_toml_str_with_env(
        NO_SECRETS,
        env(&[
            (ENV_TOKEN_KEYS, "k1=s1"),
            (ENV_CONTROL_AUTH_TOKEN, "c"),
            (ENV_UPSTREAM_AUTH_TOKEN, "u"),
            (ENV_AUTHORITY_HEADERS, "authorization=Bearer x=y"),
        ]),
    )
    .unwrap();
    assert_eq!(c.downstream.token_keys, map(&[("k1", "s1")]));
    assert_eq!(c.control.unwrap().auth_token, "c");
    assert_eq!(c.upstream.unwrap().auth_token.as_deref(), Some("u"));
    // Only the first `=` splits: values may contain `=`.
    assert_eq!(
        c.authority.unwrap().headers,
        map(&[("authorization", "Bearer x=y")])
    );
    // The control token is required once [control] is present.
    let err =
        Config::from_toml_str_with_env(NO_SECRETS, env(&[(ENV_TOKEN_KEYS, "k1=s1")])).unwrap_err();
    assert_eq!(err.option(), Some("control.auth_token"));
    assert!(err.message().contains(ENV_CONTROL_AUTH_TOKEN), "{err}");
}

#[test]
fn empty_variables_change_nothing() {
    let c = Config::from_toml_str_with_env(
        FULL,
        env(&[
            (ENV_UPSTREAM_AUTH_TOKEN, ""),
            (ENV_TOKEN_KEYS, ""),
            (ENV_CONTROL_AUTH_TOKEN, ""),
            (ENV_AUTHORITY_HEADERS, ""),
        ]),
    )
    .unwrap();
    assert_eq!(
        c.upstream.unwrap().auth_token.as_deref(),
        Some("file-upstream")
    );
    assert_eq!(c.downstream.token_keys.len(), 2);
    assert_eq!(c.control.unwrap().auth_token, "file-control");
    assert_eq!(c.authority.unwrap().headers.len(), 2);
}

#[test]
fn variables_for_absent_sections_are_ignored() {
    let demo = "[demo]\ndata = \"rows.json\"\n[downstream]\ndoc_id = \"d\"\n";
    let c = Config::from_toml_str_with_env(
        demo,
        env(&[
            (ENV_TOKEN_KEYS, "k=s"),
            (ENV_UPSTREAM_AUTH_TOKEN, "u"),
            (ENV_CONTROL_AUTH_TOKEN, "c"),
            (ENV_AUTHORITY_HEADERS, "a=b"),
        ]),
    )
    .unwrap();
    assert!(c.upstream.is_none() && c.control.is_none() && c.authority.is_none());
    assert_eq!(c.downstream.token_keys, map(&[("k", "s")]));
}

#[test]
fn malformed_variables_are_refused_without_echoing_secrets() {
    let cases = [
        (
            ENV_TOKEN_KEYS,
            "k1=a,topsecret",
            "RINDLE_TOKEN_KEYS: entry 2 has no `=` (expected kid=secret,kid2=secret2)",
        ),
        (
            ENV_TOKEN_KEYS,
            "=topsecret",
            "RINDLE_TOKEN_KEYS: entry 1 has an empty name (expected kid=secret,kid2=secret2)",
        ),
        (
            ENV_TOKEN_KEYS,
            "k1=",
            "RINDLE_TOKEN_KEYS: the value for \"k1\" is empty (expected kid=secret,kid2=secret2)",
        ),
        (
            ENV_AUTHORITY_HEADERS,
            "topsecret",
            "RINDLE_AUTHORITY_HEADERS: entry 1 has no `=` (expected name=value,…)",
        ),
    ];
    for (var, value, want) in cases {
        let err = Config::from_toml_str_with_env(FULL, env(&[(var, value)])).unwrap_err();
        assert_eq!(err.option(), Some(var));
        assert_eq!(err.message(), want);
        assert!(!err.to_string().contains("topsecret"), "{err}");
    }
    // Header values from the environment are validated like the file's.
    let err = Config::from_toml_str_with_env(FULL, env(&[(ENV_AUTHORITY_HEADERS, "bad name=x")]))
        .unwrap_err();
    assert_eq!(err.option(), Some("authority.headers"));
}

#[test]
fn from_toml_str_and_load_read_the_process_environment() {
    // The only test in this binary that touches the process environment.
    std::env::set_var(ENV_CONTROL_AUTH_TOKEN, "from-process");
    let c = Config::from_toml_str(FULL).unwrap();
    assert_eq!(c.control.unwrap().auth_token, "from-process");

    let path = std::env::temp_dir().join(format!("rindle-config-env-{}.toml", std::process::id()));
    std::fs::write(&path, FULL).unwrap();
    let c = Config::load(&path).unwrap();
    assert_eq!(c.control.unwrap().auth_token, "from-process");
    std::fs::remove_file(&path).unwrap();
    std::env::remove_var(ENV_CONTROL_AUTH_TOKEN);

    let mut c = Config::parse(FULL).unwrap();
    c.apply_env_with(|name| (name == ENV_CONTROL_AUTH_TOKEN).then(|| String::from("x")))
        .unwrap();
    assert_eq!(c.control.as_ref().unwrap().auth_token, "x");
    c.validate().unwrap();
}

//! `[fleet]`: what a fleet configuration must and must not hold, and its environment
//! override.

use rindle_room_smol::config::{AckMode, Config, ConfigError, ENV_SHELL_SECRET};

/// A valid fleet; cases edit it.
const FLEET: &str = "[fleet]
api_url = \"http://127.0.0.1:3000\"
shell_secret = \"s\"

[downstream.token_keys]
k1 = \"secret\"
";

fn load(text: &str) -> Result<Config, ConfigError> {
    Config::from_toml_str_with_env(text, |_| None)
}

fn check(text: &str, option: &str, parts: &[&str]) {
    let e = load(text)
        .err()
        .unwrap_or_else(|| panic!("expected an error for:\n{text}"));
    assert_eq!(e.option(), Some(option), "{e}\n--- for:\n{text}");
    for part in parts {
        assert!(e.message().contains(part), "{e}\n--- lacks {part:?}");
    }
}

#[test]
fn a_minimal_fleet_takes_the_documented_defaults() {
    let c = load(FLEET).unwrap_or_else(|e| panic!("{e}"));
    let f = c.fleet.expect("fleet mode");
    assert_eq!(f.boot_url(), "http://127.0.0.1:3000/api/rindle/room-boot");
    assert_eq!(
        (f.boot_timeout_ms, f.idle_evict_ms, f.max_rooms),
        (10_000, 60_000, 10_000)
    );
    assert_eq!(f.ack, AckMode::Journaled);
    assert!(f.data_dir.is_none());
    assert!(f
        .instance_id()
        .ends_with(&format!("-{}", std::process::id())));
    let flushed = FLEET.replace("shell_secret", "ack = \"flushed\"\nshell_secret");
    let c = Config::from_toml_str_with_env(&flushed, |_| None).unwrap();
    assert_eq!(c.fleet.unwrap().ack, AckMode::Flushed);
    check(
        &FLEET.replace("shell_secret", "ack = \"confirmed\"\nshell_secret"),
        "fleet.ack",
        &["journaled", "flushed"],
    );
}

#[test]
fn the_shell_secret_may_come_from_the_environment() {
    let text = FLEET.replace("shell_secret = \"s\"\n", "");
    check(&text, "fleet.shell_secret", &[ENV_SHELL_SECRET]);
    let c = Config::from_toml_str_with_env(&text, |name| {
        (name == ENV_SHELL_SECRET).then(|| String::from("from-env"))
    })
    .unwrap();
    assert_eq!(c.fleet.unwrap().shell_secret, "from-env");
}

#[test]
fn single_room_sections_are_refused_beside_fleet() {
    check(
        &format!("{FLEET}\n[demo]\ndata = \"x.json\"\n"),
        "demo",
        &["[demo] is set together with [fleet]"],
    );
    check(
        &FLEET.replace(
            "[downstream.token_keys]",
            "[downstream]\ndoc_id = \"d\"\n\n[downstream.token_keys]",
        ),
        "downstream.doc_id",
        &["room-boot"],
    );
    check(
        &FLEET.replace(
            "[downstream.token_keys]",
            "[downstream]\nmax_room_bytes = 1000000\n\n[downstream.token_keys]",
        ),
        "downstream.max_room_bytes",
        &["fleet.max_room_bytes"],
    );
    check(
        &format!(
            "{FLEET}\n[authority]\napply_url = \"http://a/x\"\nclaim_url = \"http://a/y\"\n\
             lmids_url = \"http://a/z\"\n"
        ),
        "authority",
        &["flush endpoints come from"],
    );
    check(
        &format!(
            "{FLEET}\n[writes]\nowned_tables = [\"note\"]\n\n[writes.journal]\nkind = \"file\"\n\
             path = \"j\"\n"
        ),
        "writes.journal",
        &["fleet.data_dir"],
    );
    load(&format!("{FLEET}\n[writes]\nowned_tables = [\"note\"]\n")).unwrap();
}

#[test]
fn bad_fleet_values_name_the_option() {
    check(
        &FLEET.replace("http://127.0.0.1:3000", "127.0.0.1:3000"),
        "fleet.api_url",
        &["http://"],
    );
    check(
        &FLEET.replace("shell_secret", "boot_path = \"api/boot\"\nshell_secret"),
        "fleet.boot_path",
        &["root-relative"],
    );
    check(
        &FLEET.replace(
            "shell_secret",
            "upstream_ws_url = \"http://x\"\nshell_secret",
        ),
        "fleet.upstream_ws_url",
        &["ws://"],
    );
    check(
        &FLEET.replace("shell_secret", "max_rooms = 0\nshell_secret"),
        "fleet.max_rooms",
        &["at least 1"],
    );
    check(
        &FLEET.replace("shell_secret", "ack = \"never\"\nshell_secret"),
        "fleet.ack",
        &[],
    );
}

#[test]
fn the_control_plane_binds_loopback_unless_told_otherwise() {
    let with_control = format!("{FLEET}\n[control]\nauth_token = \"t\"\n");
    let c = load(&with_control).unwrap();
    assert_eq!(c.control.unwrap().bind, "127.0.0.1");
    let c = load(&format!("{with_control}bind = \"0.0.0.0\"\n")).unwrap();
    assert_eq!(c.control.unwrap().bind, "0.0.0.0");
    check(
        &format!("{with_control}bind = \"\"\n"),
        "control.bind",
        &["not an address"],
    );
}

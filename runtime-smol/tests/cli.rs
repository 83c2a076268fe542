//! The `rindle-room` command line, on the real binary: help for every command (with the
//! environment and exit codes), `--opt=value`, usage errors (exit 2), `token` minting a
//! lease token from a config's key ring, and the demo starting from an empty journal
//! unless `--keep`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::bin::Room;
use common::*;
use rindle_room_smol::journal::file::FileJournal;
use rindle_room_smol::journal::{salvage, Journal, JournalEntry, Outcome};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rindle-room"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    common::fresh_dir(&format!("cli-{name}"))
}

#[test]
fn help_lists_every_command_the_environment_and_the_exit_codes() {
    let o = run(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    for needle in [
        "rindle-room --config",
        "rindle-room demo --fleet",
        "rindle-room token --config",
        "rindle-room journal check",
        "rindle-room journal salvage",
        "--opt=value",
        "RINDLE_LOG",
        "RINDLE_TOKEN_KEYS",
        "RINDLE_CONTROL_AUTH_TOKEN",
        "exit codes:",
        "3  the authority fenced the room",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from\n{text}");
    }
    for (args, needle) in [
        (&["demo", "--help"][..], "--keep"),
        (&["demo", "--fleet", "--help"], "--fleet"),
        (&["token", "--help"], "--ttl-ms"),
        (&["journal", "--help"], "salvage"),
        (&["journal", "check", "--help"], "check"),
        (&["help", "demo"], "--journal"),
        (&["-h"], "rindle-room --config"),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(
            text.contains(needle),
            "{args:?}: {needle:?} missing from\n{text}"
        );
        assert!(text.contains("exit code"), "{args:?} names its exit codes");
    }
}

#[test]
fn usage_errors_exit_2_with_the_commands_help() {
    for (args, needle) in [
        (&[][..], "nothing to do"),
        (&["frobnicate"], "unknown command"),
        (&["demo", "--port", "http"], "not a port number"),
        (&["demo", "--port"], "missing argument"),
        (&["demo", "--nope"], "unknown demo option --nope"),
        (&["--config", "a.toml", "b.toml"], "exactly one file"),
        (&["token", "--config", "r.toml"], "token needs --sub"),
        (&["journal", "check"], "journal takes"),
    ] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.contains(needle),
            "{args:?}: {needle:?} missing from\n{err}"
        );
        assert!(err.contains("usage:"), "{args:?} shows its usage");
    }
}

#[test]
fn config_takes_its_value_after_an_equals_sign() {
    let dir = scratch("equals");
    let missing = dir.join("missing.toml");
    let o = run(&[&format!("--config={}", missing.display())]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("missing.toml"), "{}", stderr(&o));

    // A real room, started with `--config=FILE`.
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server/data/demo.json");
    let config = dir.join("room.toml");
    std::fs::write(
        &config,
        format!(
            "[demo]\ndata = {}\n[downstream]\ndoc_id = \"d\"\n[downstream.token_keys]\nk1 = \"s\"\n",
            toml::Value::String(data.display().to_string())
        ),
    )
    .unwrap();
    smol::block_on(async {
        let mut cmd = bin();
        cmd.arg(format!("--config={}", config.display()));
        let mut room = Room::spawn(cmd).await;
        room.child.kill().unwrap();
        let _ = room.child.wait();
    });
}

fn token_config(dir: &Path, keys: &str) -> PathBuf {
    let config = dir.join("room.toml");
    std::fs::write(
        &config,
        format!(
            "[demo]\ndata = \"unused.json\"\n[downstream]\ndoc_id = \"{DOC}\"\n\
             [downstream.token_keys]\n{keys}"
        ),
    )
    .unwrap();
    config
}

fn verify(token: &str, doc: &str, keys: &[(&str, &str)]) -> rindle_room_core::token::TokenPayload {
    let ring: Vec<(String, String)> = keys
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as f64;
    rindle_room_core::token::verify(token, doc, &ring, now)
        .unwrap_or_else(|e| panic!("{token}: {e}"))
}

#[test]
fn token_mints_a_lease_token_from_the_configs_key_ring() {
    let dir = scratch("token");
    let config = token_config(&dir, "k1 = \"secret\"\n");
    let o = run(&[
        "token",
        &format!("--config={}", config.display()),
        "--sub",
        "u1",
        "--query",
        r#"{"table":"note"}"#,
        "--ttl-ms=60000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let token = stdout(&o).trim().to_string();
    let payload = verify(&token, DOC, &[("k1", "secret")]);
    assert_eq!(payload.sub, "u1");
    assert_eq!(payload.ast.to_js_string(), r#"{"table":"note"}"#);
    assert_eq!(payload.exp - payload.iat, 60_000.0);

    // Another doc, and the environment's keys merged into the ring.
    let o = bin()
        .args(["token", "--config"])
        .arg(&config)
        .args([
            "--doc",
            "other/doc",
            "--sub",
            "u2",
            "--query",
            r#"{"table":"x"}"#,
        ])
        .args(["--kid", "k9"])
        .env("RINDLE_TOKEN_KEYS", "k9=from-env")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    verify(stdout(&o).trim(), "other/doc", &[("k9", "from-env")]);

    // Two keys and no --kid; a key that is not there; a query that is not an AST.
    let two = token_config(&dir, "k1 = \"a\"\nk2 = \"b\"\n");
    let base = ["token", "--config", two.to_str().unwrap(), "--sub", "u1"];
    let o = run(&[&base[..], &["--query", r#"{"table":"note"}"#]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("2 keys (k1, k2): choose one with --kid"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        &base[..],
        &["--query", r#"{"table":"note"}"#, "--kid", "k3"],
    ]
    .concat());
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no key \"k3\""), "{}", stderr(&o));
    let o = run(&[&base[..], &["--query", "[1]", "--kid", "k2"]].concat());
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("wire AST object"), "{}", stderr(&o));
}

fn journal_with_one_record(path: &Path) {
    let j = FileJournal::open(path).unwrap();
    j.append(&[JournalEntry {
        client_id: "c1".into(),
        mid: 1,
        name: "issue.update".into(),
        args: "{}".into(),
        sub: "demo-user".into(),
        outcome: Outcome::Rejected,
    }])
    .unwrap();
}

fn records(path: &Path) -> u64 {
    match salvage::check(path) {
        Ok(report) => report.intact(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

async fn demo(journal: &Path, keep: bool) -> Room {
    let mut cmd = bin();
    cmd.args(["demo", "--port", "0", "--journal"]).arg(journal);
    if keep {
        cmd.arg("--keep");
    }
    Room::spawn(cmd).await
}

#[test]
fn the_demo_starts_from_an_empty_journal_unless_keep() {
    let dir = scratch("demo-journal");
    let journal = dir.join("journal");
    journal_with_one_record(&journal);
    smol::block_on(async {
        let mut room = demo(&journal, true).await;
        assert_eq!(
            records(&journal),
            1,
            "--keep keeps the earlier run's journal"
        );
        room.child.kill().unwrap();
        let _ = room.child.wait();

        let mut room = demo(&journal, false).await;
        assert_eq!(
            records(&journal),
            0,
            "without --keep the journal starts empty"
        );
        room.child.kill().unwrap();
        let _ = room.child.wait();
    });
    // A file that is not a journal is never removed.
    let precious = dir.join("precious.txt");
    std::fs::write(&precious, "not a journal").unwrap();
    let o = run(&["demo", "--journal", precious.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("is not a rindle-room journal"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "not a journal");
}

/// `journal check` on what is not a journal (random bytes, a FIFO) exits 1, says so,
/// and never blocks or writes; on a journal it exits 0.
#[test]
fn journal_check_refuses_what_is_not_a_journal() {
    let dir = scratch("check-foreign");
    let random = dir.join("random");
    let bytes: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    std::fs::write(&random, &bytes).unwrap();
    let o = run(&["journal", "check", random.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a rindle-room journal"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(&random).unwrap(), bytes, "untouched");
    let fifo = dir.join("fifo");
    if Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        let o = run(&["journal", "check", fifo.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("not a regular file"), "{}", stderr(&o));
        let out = dir.join("out");
        let o = run(&[
            "journal",
            "salvage",
            fifo.to_str().unwrap(),
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(1));
        assert!(!out.exists());
    }
    let journal = dir.join("journal");
    journal_with_one_record(&journal);
    let o = run(&["journal", "check", journal.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

//! Helpers for the journal tests (included by path, without the rest of `common`).

use std::fs;
use std::path::PathBuf;

use rindle_room_smol::journal::{JournalEntry, Outcome};

/// A fresh directory `<suite>-<pid>-<test>` under the target's temporary directory.
pub fn fresh_dir(suite: &str, test: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{suite}-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// An applied entry of mutator `name` with args `{"id": mid}`.
pub fn applied(client: &str, mid: u64, name: &str) -> JournalEntry {
    JournalEntry {
        client_id: client.to_string(),
        mid,
        name: name.to_string(),
        args: format!(r#"{{"id":{mid}}}"#),
        sub: "u1".to_string(),
        outcome: Outcome::Applied,
    }
}

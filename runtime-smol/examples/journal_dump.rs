//! Prints a journal file as JSON lines, one per intact record:
//! `{"offset":…,"kind":"entry"|"flush"|"confirm"|"snapshot","record":<payload>}`, then
//! a note on stderr if the file ends in a torn tail. Read-only: nothing is truncated.
//!
//! `cargo run -p rindle-room-smol --example journal_dump -- path/to/room.journal | jq .`

use std::io::{self, Write};
use std::process::ExitCode;

use rindle_room_smol::journal::file::read_records;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: journal_dump <journal-file>");
        return ExitCode::from(2);
    };
    let inspection = match read_records(&path) {
        Ok(inspection) => inspection,
        Err(e) => {
            eprintln!("journal_dump: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut out = io::stdout().lock();
    for record in &inspection.records {
        let line = writeln!(
            out,
            r#"{{"offset":{},"kind":"{}","record":{}}}"#,
            record.offset, record.kind, record.payload
        );
        if line.is_err() {
            return ExitCode::FAILURE; // e.g. a closed pipe
        }
    }
    if inspection.valid_len < inspection.file_len {
        eprintln!(
            "journal_dump: torn tail: {} bytes after offset {} (open would truncate them)",
            inspection.file_len - inspection.valid_len,
            inspection.valid_len
        );
    }
    ExitCode::SUCCESS
}

//! Replays JSON-contract calls from stdin, one per line:
//!
//! ```text
//! {"call": "open", "args": [{"epoch":1,"comparatorVersion":2,"tables":[...],"normalizedFp":"..."}, 30000]}
//! {"call": "apply", "args": [{"epoch":1,"seq":0,"normalizedFp":"...","ops":[...]}]}
//! {"call": "subscribe", "args": ["c1:1", 1, {"table":"note"}, 0]}
//! {"call": "commitAll", "args": []}
//! ```
//!
//! and writes one reply line per call: `{"ok": <result>}` or `{"err": "<message>"}`.
//! JSON-text arguments are given as JSON values; `open` creates the room.
//!
//! Run: `cargo run -p rindle-room-core --example replay < calls.jsonl`

use std::io::{BufRead, Write};

use rindle_room_core::calls::replay_line;

fn main() {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut room = None;
    for line in stdin.lock().lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("replay: cannot read stdin: {e}");
                std::process::exit(1);
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let reply = replay_line(&mut room, &line);
        if writeln!(out, "{reply}").is_err() {
            std::process::exit(1);
        }
    }
    let _ = out.flush();
}

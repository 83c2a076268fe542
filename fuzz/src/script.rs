//! The fuzz script interpreter: turns arbitrary bytes into a run of JSON-contract calls on
//! one room, so the fuzzer can reach live rooms with subscribers instead of stopping at the
//! hello parser.
//!
//! Shared by the libFuzzer target (`fuzz_targets/contract.rs`) and the CI smoke test
//! (`tests/tests/fuzz_smoke.rs`), which both include this file by path. It uses only
//! `rindle-room-core` and `serde_json`.
//!
//! # Script format
//!
//! Lines are split on `\n`. The first line is the upstream hello JSON; when it is not UTF-8
//! or the room refuses it, the room opens from [`FALLBACK_HELLO`] instead. Every later line
//! is one step: its first byte picks the verb and the rest of the line (lossily decoded as
//! UTF-8, one leading space dropped so seeds read `s c1:1 {…}`) is the argument.
//!
//! | byte | step                                                                   |
//! |------|------------------------------------------------------------------------|
//! | `a`  | `apply(rest)`                                                          |
//! | `s`  | `subscribe(sub, epoch(), ast, clock)` where rest is `<sub> <ast>`        |
//! | `e`  | `subscribe(sub, epoch, ast, clock)` where rest is `<epoch> <sub> <ast>`  |
//! | `u`  | `unsubscribe(rest, clock)`                                             |
//! | `w`  | `sweep(clock)`                                                         |
//! | `t`  | set the clock to `rest` read as an `f64` (`NaN`, `-1`, `inf` included)   |
//! | `c`  | `commitAll()`                                                          |
//! | `o`  | `open(rest, 1000)`; on success the new room replaces the old one        |
//! | `r`  | `replay_line(rest)`: one `{"call": …, "args": […]}` through `calls`      |
//! | `#`  | nothing (a comment)                                                    |
//!
//! Any other byte picks a verb by its value modulo the verb count, so every mutation of the
//! first byte still does something. Empty lines are skipped; at most [`MAX_STEPS`] steps run.
//!
//! # What a run checks (bad input never panics: docs/security.md)
//!
//! Nothing panics. Every error has a message. Every JSON text the room returns parses as
//! JSON. After every failed step the room still answers `commitAll` and its getters, and a
//! drain right after a drain ships nothing.

use rindle_room_core::calls::replay_line;
use rindle_room_core::contract::JsonRoom;
use rindle_room_core::Error;

/// A valid hello with three tables (`comment`, `issue`, `label`, sorted by name); the seeds use it too.
pub const FALLBACK_HELLO: &str = concat!(
    r#"{"epoch":1,"comparatorVersion":2,"tables":["#,
    r#"{"name":"comment","columns":["id","issueID","body","votes"],"primaryKey":[0]},"#,
    r#"{"name":"issue","columns":["id","title","open","rank"],"primaryKey":[0]},"#,
    r#"{"name":"label","columns":["issueID","name"],"primaryKey":[0,1]}],"#,
    r#""normalizedFp":"c4942c89204f7951"}"#
);

/// The `normalizedFp` of [`FALLBACK_HELLO`], which every upstream batch must carry.
pub const FALLBACK_FP: &str = "c4942c89204f7951";

/// The idle TTL every room opens with, short enough for `t` + `w` steps to reclaim queries.
const IDLE_TTL_MS: f64 = 1_000.0;

/// At most this many steps run, so one input cannot take unbounded time.
pub const MAX_STEPS: usize = 1_024;

/// How far a run got, for checking that seeds still reach deep states.
#[derive(Clone, Debug, Default)]
pub struct Reached {
    /// Steps run (comments and empty lines excluded).
    pub steps: usize,
    /// Steps that returned an error.
    pub errors: usize,
    /// Whether the room was live after some step.
    pub live: bool,
    /// Subscribes that succeeded.
    pub subscribed: usize,
    /// Frames shipped by all drains.
    pub frames: usize,
    /// One line per step when traced, empty otherwise.
    pub trace: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verb {
    Apply,
    Subscribe,
    SubscribeAt,
    Unsubscribe,
    Sweep,
    Clock,
    CommitAll,
    Reopen,
    Replay,
    Comment,
}

/// The verbs a byte without its own letter maps onto.
const VERBS: [Verb; 9] = [
    Verb::Apply,
    Verb::Subscribe,
    Verb::SubscribeAt,
    Verb::Unsubscribe,
    Verb::Sweep,
    Verb::Clock,
    Verb::CommitAll,
    Verb::Reopen,
    Verb::Replay,
];

fn verb(byte: u8) -> Verb {
    match byte {
        b'a' => Verb::Apply,
        b's' => Verb::Subscribe,
        b'e' => Verb::SubscribeAt,
        b'u' => Verb::Unsubscribe,
        b'w' => Verb::Sweep,
        b't' => Verb::Clock,
        b'c' => Verb::CommitAll,
        b'o' => Verb::Reopen,
        b'r' => Verb::Replay,
        b'#' => Verb::Comment,
        other => VERBS[usize::from(other) % VERBS.len()],
    }
}

/// Runs a script and reports how far it got. Panics only on a broken check.
pub fn run_script(data: &[u8]) -> Reached {
    Runner::new(data, false).run(data)
}

/// Like [`run_script`], and records one trace line per step in [`Reached::trace`].
pub fn trace_script(data: &[u8]) -> Reached {
    Runner::new(data, true).run(data)
}

struct Runner {
    room: Option<JsonRoom>,
    clock: f64,
    traced: bool,
    reached: Reached,
}

/// What one step returned: JSON text to check, other text, or an error message.
enum Answer {
    Json(String),
    Text(String),
    Failed(String),
}

impl From<Result<String, Error>> for Answer {
    fn from(r: Result<String, Error>) -> Answer {
        match r {
            Ok(json) => Answer::Json(json),
            Err(e) => Answer::Failed(String::from(e.message())),
        }
    }
}

impl Runner {
    fn new(data: &[u8], traced: bool) -> Runner {
        let first = data.split(|&b| b == b'\n').next().unwrap_or_default();
        let opened = core::str::from_utf8(first)
            .ok()
            .and_then(|hello| JsonRoom::open(hello, IDLE_TTL_MS).ok());
        let room = match opened {
            Some(room) => room,
            None => match JsonRoom::open(FALLBACK_HELLO, IDLE_TTL_MS) {
                Ok(room) => room,
                Err(e) => panic!("FALLBACK_HELLO no longer opens: {}", e.message()),
            },
        };
        Runner {
            room: Some(room),
            clock: 0.0,
            traced,
            reached: Reached::default(),
        }
    }

    fn run(mut self, data: &[u8]) -> Reached {
        let lines = data.split(|&b| b == b'\n').skip(1);
        for line in lines.filter(|l| !l.is_empty()).take(MAX_STEPS) {
            let verb = verb(line[0]);
            if verb == Verb::Comment {
                continue;
            }
            let rest = String::from_utf8_lossy(&line[1..]);
            let rest = rest.strip_prefix(' ').unwrap_or(&rest);
            let answer = self.step(verb, rest);
            self.reached.steps += 1;
            self.check(verb, &answer);
            if self.traced {
                self.record(verb, &answer);
            }
        }
        self.reached
    }

    fn step(&mut self, verb: Verb, rest: &str) -> Answer {
        let clock = self.clock;
        if verb == Verb::Replay {
            let reply = replay_line(&mut self.room, rest);
            return if reply.starts_with("{\"err\":") {
                let _ = check_json(&reply);
                Answer::Failed(reply)
            } else {
                Answer::Json(reply)
            };
        }
        if verb == Verb::Clock {
            self.clock = rest.trim().parse().unwrap_or(clock + 1_000.0);
            return Answer::Text(format!("clock {}", self.clock));
        }
        if verb == Verb::Reopen {
            return match JsonRoom::open(rest, IDLE_TTL_MS) {
                Ok(room) => {
                    self.room = Some(room);
                    Answer::Text(String::from("reopened"))
                }
                Err(e) => Answer::Failed(String::from(e.message())),
            };
        }
        // A replayed `open` that fails leaves the room in place, so it is always there.
        let Some(room) = self.room.as_mut() else {
            unreachable!("the runner always holds a room");
        };
        match verb {
            Verb::Apply => room.apply(rest).into(),
            Verb::Subscribe => {
                let (sub, ast) = rest.split_once(' ').unwrap_or((rest, ""));
                room.subscribe(sub, room.epoch() as f64, ast, clock).into()
            }
            Verb::SubscribeAt => {
                let (epoch, rest) = rest.split_once(' ').unwrap_or((rest, ""));
                let (sub, ast) = rest.split_once(' ').unwrap_or((rest, ""));
                let epoch = epoch.parse().unwrap_or(room.epoch() as f64 + 1.0);
                room.subscribe(sub, epoch, ast, clock).into()
            }
            Verb::Unsubscribe => match room.unsubscribe(rest, clock) {
                Ok(was) => Answer::Text(format!("unsubscribed: {was}")),
                Err(e) => Answer::Failed(String::from(e.message())),
            },
            Verb::Sweep => match room.sweep(clock) {
                Ok(n) => Answer::Text(format!("swept {n}")),
                Err(e) => Answer::Failed(String::from(e.message())),
            },
            Verb::CommitAll => Answer::Json(room.commit_all()),
            Verb::Replay | Verb::Clock | Verb::Reopen | Verb::Comment => {
                unreachable!("handled above")
            }
        }
    }

    fn check(&mut self, verb: Verb, answer: &Answer) {
        match answer {
            Answer::Json(json) => {
                let value = check_json(json);
                if verb == Verb::Subscribe || verb == Verb::SubscribeAt {
                    self.reached.subscribed += 1;
                }
                if verb == Verb::CommitAll {
                    self.reached.frames += frame_count(&value);
                }
            }
            Answer::Text(_) => {}
            Answer::Failed(message) => {
                assert!(!message.is_empty(), "{verb:?} failed without a message");
                self.reached.errors += 1;
            }
        }
        let Some(room) = self.room.as_mut() else {
            unreachable!("the runner always holds a room");
        };
        // The getters answer whatever happened.
        let _ = (room.cv(), room.head_cv(), room.epoch(), room.is_poisoned());
        let _ = (room.materialization_count(), room.subscriber_count());
        self.reached.live |= room.is_live();
        let failed = matches!(answer, Answer::Failed(_));
        if failed {
            // After an error the room still drains.
            let drain = check_json(&room.commit_all());
            self.reached.frames += frame_count(&drain);
        }
        if failed || verb == Verb::CommitAll {
            let again = room.commit_all();
            assert_eq!(again, "[]", "a drain right after a drain shipped frames");
        }
    }

    fn record(&mut self, verb: Verb, answer: &Answer) {
        let (kind, text) = match answer {
            Answer::Json(t) => ("ok", t),
            Answer::Text(t) => ("ok", t),
            Answer::Failed(t) => ("err", t),
        };
        let mut text: String = text.chars().take(160).collect();
        if text.len() < answer_len(answer) {
            text.push('…');
        }
        let n = self.reached.steps;
        self.reached
            .trace
            .push(format!("{n:>3} {verb:?} {kind}: {text}"));
    }
}

fn answer_len(answer: &Answer) -> usize {
    match answer {
        Answer::Json(t) | Answer::Text(t) | Answer::Failed(t) => t.len(),
    }
}

/// Parses `text`, panicking unless it is one JSON value.
fn check_json(text: &str) -> serde_json::Value {
    match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => {
            let head: String = text.chars().take(200).collect();
            panic!("the room returned text that is not JSON ({e}): {head}");
        }
    }
}

/// How many frames a `commitAll` answer holds.
fn frame_count(drain: &serde_json::Value) -> usize {
    match drain {
        serde_json::Value::Array(frames) => frames.len(),
        _ => panic!("commitAll did not return a JSON array: {drain}"),
    }
}
